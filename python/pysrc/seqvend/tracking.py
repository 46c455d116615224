"""Carrier tracking numbers, offline, with the rules seqvend's server uses (one Rust
implementation, shared).

>>> from seqvend import tracking
>>> tracking.validate("1Z5R89390357567127")
True
>>> tracking.recognise("1z5r8939 0357567127").kind
'ups_1z'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from . import _native
from .errors import InvalidRequest

__all__ = ["Recognition", "recognise", "validate", "render"]


@dataclass(frozen=True)
class Recognition:
    """What a number is. ``carrier``, ``kind`` and ``serial`` are ``None`` when no known
    layout matches; ``valid`` is true when one matches and its check digit is right."""

    number: str
    """The number normalised: spaces removed, letters upper-cased."""
    valid: bool
    carrier: Optional[str]
    kind: Optional[str]
    serial: Optional[str]


def recognise(number: str) -> Recognition:
    """Recognises any carrier's number (as ``GET /tracking-numbers/{number}`` does, without
    the ``issued`` part). Raises :class:`~seqvend.errors.InvalidRequest` for input that is not
    a number at all (characters other than letters, digits and spaces; over 64)."""
    return Recognition(*_native.recognise(number))


def validate(number: str) -> bool:
    """Whether ``number`` is a valid tracking number of a known layout (false for any
    malformed input, never an exception)."""
    try:
        return recognise(number).valid
    except InvalidRequest:
        return False


def render(format: Mapping[str, Any], serial: int) -> str:
    """The carrier number a sequence with this ``format`` (as given at its creation, e.g.
    ``{"kind": "ups_1z", "account": "5R8939", "service": "03"}``) vends for ``serial``."""
    return _native.render(json.dumps(dict(format)), serial)
