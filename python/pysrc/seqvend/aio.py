"""``AsyncClient``: the thick client for asyncio. Values in the cache are returned at once;
a wait for a refill, a vend or a lease runs on the extension's own runtime and settles an
asyncio future from there, so the event loop never blocks."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, List, Optional

from . import _native
from ._native import Client, Metrics, Vended

__all__ = ["AsyncClient"]


def _settle(future: "asyncio.Future[Any]", ok: bool, value: Any) -> None:
    if future.done():  # cancelled meanwhile: the values are dropped (gaps, never repeats)
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


def _pending(start: Callable[..., None], *args: Any) -> "asyncio.Future[Any]":
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def done(ok: bool, value: Any) -> None:  # called from the runtime's thread
        try:
            loop.call_soon_threadsafe(_settle, future, ok, value)
        except RuntimeError:  # the loop was closed: nobody is waiting any more
            pass

    start(*args, done)
    return future


class AsyncClient:
    """The asyncio twin of :class:`seqvend.Client`, with the same cache and guarantees.

    ``await client.next("orders")`` returns at once from the cache; only when it is empty
    does it wait (without blocking the loop) for a refill, up to ``timeout``."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        max_cached: int = 1_000_000,
        timeout: float = 2.0,
        request_timeout: float = 10.0,
        retries: int = 3,
    ) -> None:
        self._client = Client(
            url,
            token,
            max_cached=max_cached,
            timeout=timeout,
            request_timeout=request_timeout,
            retries=retries,
        )

    @property
    def sync(self) -> Client:
        """The blocking client sharing this one's cache (for code outside the loop)."""
        return self._client

    async def next(self, name: str) -> int:
        """The next value of ``name``; see :meth:`seqvend.Client.next`."""
        value = _native.take_cached(self._client, name)
        if value is not None:
            return value
        return await _pending(_native.spawn_next, self._client, name)

    async def next_n(self, name: str, count: int) -> List[int]:
        """``count`` values of ``name`` in vend order; see :meth:`seqvend.Client.next_n`."""
        return await _pending(_native.spawn_next_n, self._client, name, count)

    def try_next(self, name: str) -> Optional[int]:
        """A cached value, or ``None``; never waits (so not a coroutine)."""
        return self._client.try_next(name)

    async def prefetch(self, name: str, values: int = 1) -> None:
        """Leases until at least ``values`` of ``name`` are cached."""
        await _pending(_native.spawn_prefetch, self._client, name, values)

    async def vend(
        self, name: str, count: int = 1, *, idempotency_key: Optional[str] = None
    ) -> Vended:
        """A strict vend over HTTP; see :meth:`seqvend.Client.vend`."""
        return await _pending(_native.spawn_vend, self._client, name, count, idempotency_key)

    async def snowflake(self) -> int:
        """A Snowflake id; the first call leases a worker id (in a thread, off the loop)."""
        if self._client.worker_id is None:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(None, self._client.snowflake)
        return self._client.snowflake()

    def metrics(self) -> Metrics:
        return self._client.metrics()

    def __repr__(self) -> str:
        return f"seqvend.AsyncClient({self._client.url!r})"
