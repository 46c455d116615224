"""seqvend for Python: the Rust thick client, time ids and carrier numbers.

>>> import seqvend
>>> client = seqvend.Client("http://127.0.0.1:8080", token)
>>> order_id = client.next("orders")              # from the local cache: no round trip
>>> label = client.vend("fedex-4471", idempotency_key="order-77-label")
>>> print(label.values[0], label.formatted[0])

``Client`` is thread-safe and fork-safe; ``AsyncClient`` is its asyncio twin. See the
package's README for the guarantees, and ``seqvend.errors`` for what can go wrong.
"""

from __future__ import annotations

import os
import uuid
from datetime import datetime, timedelta, timezone
from typing import NamedTuple, Optional

from . import errors, tracking
from ._native import Client, Metrics, Sequence, Vended
from ._native import decode_snowflake as _decode_snowflake
from ._native import forked as _forked
from ._native import uuid7_bytes as _uuid7_bytes
from .aio import AsyncClient
from .errors import (
    ConfigurationError,
    Forbidden,
    IdempotencyKeyInFlight,
    IdempotencyKeyReused,
    InvalidRequest,
    NotFound,
    ProtocolError,
    SeqvendError,
    SequenceExhausted,
    SequenceFailed,
    SequenceRetired,
    SnowflakeUnavailable,
    Timeout,
    Unauthorized,
    Unavailable,
)

__all__ = [
    "Client",
    "AsyncClient",
    "Metrics",
    "Sequence",
    "Vended",
    "Snowflake",
    "uuid7",
    "decode_snowflake",
    "tracking",
    "errors",
    *errors.__all__,
]

# A forked child (gunicorn, celery or multiprocessing workers) must never hand out its
# parent's cached values or stamp its parent's worker id: every client rebuilds its cache,
# runtime and worker lease in the child, on first use. The parent's are left untouched.
os.register_at_fork(after_in_child=_forked)


def uuid7() -> uuid.UUID:
    """A UUIDv7 (RFC 9562), above every one made before in this process."""
    return uuid.UUID(bytes=_uuid7_bytes())


class Snowflake(NamedTuple):
    """The parts of a Snowflake id."""

    timestamp_ms: int
    worker_id: int
    sequence: int

    @property
    def timestamp(self) -> datetime:
        """The id's millisecond, as an aware UTC datetime."""
        return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=self.timestamp_ms)


def decode_snowflake(
    id: int, *, bits: Optional[str] = None, epoch_ms: Optional[int] = None
) -> Snowflake:
    """The millisecond, worker id and sequence of a Snowflake id, under seqvend's default
    layout (41/10/12 bits from 2020-01-01) or the one given (``bits="41/10/12"``, the epoch
    in milliseconds since 1970). Raises :class:`InvalidRequest` for an id outside it."""
    return Snowflake(*_decode_snowflake(id, bits=bits, epoch_ms=epoch_ms))
