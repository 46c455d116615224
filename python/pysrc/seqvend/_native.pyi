"""Type stubs of the extension module under the `seqvend` package."""

from typing import Any, Callable, List, Optional, Tuple

class Metrics:
    """Counts since the client was made, in this process."""

    @property
    def hits(self) -> int:
        """Values handed out without waiting for a refill."""
    @property
    def refills(self) -> int:
        """Leases that brought values."""
    @property
    def waits(self) -> int:
        """Calls that found nothing cached and waited for a refill."""
    @property
    def discarded(self) -> int:
        """Values leased but never handed out (their lease ran out first): gaps."""
    @property
    def service_calls(self) -> int:
        """Lease requests sent."""
    @property
    def failed_calls(self) -> int:
        """Lease requests that failed."""

class Vended:
    """A strict vend's answer."""

    @property
    def sequence(self) -> str: ...
    @property
    def values(self) -> List[int]:
        """The values, in the order vended."""
    @property
    def formatted(self) -> Optional[List[str]]:
        """A formatted sequence's carrier numbers, one per value; None for a plain one."""
    @property
    def exhausted(self) -> bool:
        """The sequence ran out: fewer values than asked for were left."""
    @property
    def replayed(self) -> bool:
        """A replay of an earlier request with the same idempotency key."""
    def __len__(self) -> int: ...

class Sequence:
    """One sequence of a Client, for hot loops: an iterator, `next(handle)` being the
    cheapest way to take a value (no argument parsing, no name lookup)."""

    def __iter__(self) -> "Sequence": ...
    def __next__(self) -> int: ...
    def next(self) -> int: ...
    def try_next(self) -> Optional[int]: ...
    def next_n(self, count: int) -> List[int]: ...
    def metrics(self) -> Metrics: ...
    @property
    def name(self) -> str: ...

class Client:
    """A seqvend client: values from a local cache of leased blocks, strict vends over
    HTTP, Snowflake ids. Thread-safe; fork-safe (a forked child builds its own cache)."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        max_cached: int = 1_000_000,
        timeout: float = 2.0,
        request_timeout: float = 10.0,
        retries: int = 3,
    ) -> None: ...
    def next(self, name: str) -> int:
        """The next value: from the cache, or after a refill (GIL released), up to timeout."""
    def next_n(self, name: str, count: int) -> List[int]:
        """`count` values in vend order; all or none."""
    def try_next(self, name: str) -> Optional[int]:
        """A cached value, or None at once; raises only what waiting would not change."""
    def sequence(self, name: str) -> Sequence:
        """A handle on one sequence for hot loops (an iterator sharing this cache)."""
    def prefetch(self, name: str, values: int = 1) -> None:
        """Leases until at least `values` are cached."""
    def metrics(self) -> Metrics: ...
    def vend(self, name: str, count: int = 1, *, idempotency_key: Optional[str] = None) -> Vended:
        """A strict vend over HTTP; with a key, retried safely on transient failures."""
    def snowflake(self) -> int:
        """A Snowflake id under a worker id leased on first use, renewed in the background."""
    def snowflake_n(self, count: int) -> List[int]: ...
    @property
    def worker_id(self) -> Optional[int]: ...
    @property
    def url(self) -> str: ...

def forked() -> None: ...
def uuid7_bytes() -> bytes: ...
def decode_snowflake(
    id: int, *, bits: Optional[str] = None, epoch_ms: Optional[int] = None
) -> Tuple[int, int, int]: ...
def recognise(number: str) -> Tuple[str, bool, Optional[str], Optional[str], Optional[str]]: ...
def render(format_json: str, serial: int) -> str: ...
def take_cached(client: Client, name: str) -> Optional[int]: ...
def spawn_next(client: Client, name: str, done: Callable[[bool, Any], None]) -> None: ...
def spawn_next_n(client: Client, name: str, count: int, done: Callable[[bool, Any], None]) -> None: ...
def spawn_prefetch(client: Client, name: str, values: int, done: Callable[[bool, Any], None]) -> None: ...
def spawn_vend(
    client: Client,
    name: str,
    count: int,
    idempotency_key: Optional[str],
    done: Callable[[bool, Any], None],
) -> None: ...
