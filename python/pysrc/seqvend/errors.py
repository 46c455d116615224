"""Exceptions raised by seqvend, each carrying the API's stable error code.

Every exception is a :class:`SeqvendError` with ``.code`` (seqvend's stable code, such as
``"sequence_exhausted"``, or one of this package's: ``"transport"``, ``"timeout"``,
``"empty"``, ``"protocol"``), ``.status`` (the HTTP status, ``None`` when seqvend did not
answer) and ``.retry_after`` (seconds, when seqvend said). ``.transient`` says whether
asking again soon may succeed.
"""

from __future__ import annotations

from typing import Optional

__all__ = [
    "SeqvendError",
    "InvalidRequest",
    "ConfigurationError",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "SequenceExhausted",
    "SequenceRetired",
    "SequenceFailed",
    "IdempotencyKeyReused",
    "IdempotencyKeyInFlight",
    "Unavailable",
    "Timeout",
    "SnowflakeUnavailable",
    "ProtocolError",
]


class SeqvendError(Exception):
    """Base class of every error this package raises."""

    transient: bool = False

    def __init__(
        self,
        message: str,
        code: str = "error",
        status: Optional[int] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.retry_after = retry_after

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={self.code!r}, status={self.status!r})"


class InvalidRequest(SeqvendError, ValueError):
    """400 ``invalid_*``, or refused before sending: a bad name, count, key or number."""


class ConfigurationError(SeqvendError, ValueError):
    """The client was given something unusable (a URL that is not http(s), a bad timeout)."""


class Unauthorized(SeqvendError):
    """401 ``unauthorized``: the token was refused."""


class Forbidden(SeqvendError):
    """403 ``forbidden``: the token lacks the scope (the message names it)."""


class NotFound(SeqvendError, LookupError):
    """404 ``not_found``: no such sequence."""


class SequenceExhausted(SeqvendError):
    """409 ``sequence_exhausted``: nothing is left to vend (and nothing is cached)."""


class SequenceRetired(SeqvendError):
    """410 ``sequence_retired``: the sequence was retired and vends nothing."""


class SequenceFailed(SeqvendError):
    """500 ``sequence_failed``: its PostgreSQL sequence was dropped or altered by hand."""


class IdempotencyKeyReused(SeqvendError):
    """422 ``idempotency_key_reused``: the key was first sent with another request."""


class IdempotencyKeyInFlight(SeqvendError):
    """409 ``idempotency_key_in_flight``: the first request with this key is still served."""

    transient = True


class Unavailable(SeqvendError):
    """503 ``unavailable``, or seqvend could not be reached (``code == "transport"``)."""

    transient = True


class Timeout(Unavailable, TimeoutError):
    """Nothing was cached and no refill arrived within the client's ``timeout``."""


class SnowflakeUnavailable(Unavailable):
    """No Snowflake id now: no worker id held, its lease lapsed, or the clock moved."""


class ProtocolError(SeqvendError):
    """seqvend answered something this package cannot read (a version mismatch?)."""
