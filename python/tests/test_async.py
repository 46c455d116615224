"""AsyncClient: the same cache for asyncio, never blocking the event loop."""

from __future__ import annotations

import asyncio
import time

import pytest
import seqvend


def run(coroutine):
    return asyncio.run(coroutine)


def test_many_tasks_taking_ids_get_each_once_and_the_loop_never_stalls(server):
    """200 tasks take 1,000 ids each, yielding after every one (so the loop's lag measures
    only what the client's calls hold it for), through refills from an empty cache."""
    name = server.sequence()

    async def main():
        client = seqvend.AsyncClient(server.url, server.token)
        lags = []

        async def probe():
            # How late the loop runs a 5 ms timer while the tasks take ids.
            while True:
                before = time.perf_counter()
                await asyncio.sleep(0.005)
                lags.append(time.perf_counter() - before - 0.005)

        async def worker():
            out = []
            for _ in range(1_000):
                out.append(await client.next(name))
                await asyncio.sleep(0)
            return out

        watcher = asyncio.create_task(probe())
        results = await asyncio.gather(*(worker() for _ in range(200)))
        watcher.cancel()
        return results, lags, client.metrics()

    results, lags, metrics = run(main())
    values = [v for out in results for v in out]
    assert len(values) == 200_000 and len(set(values)) == len(values)
    assert all(out == sorted(out) for out in results), "each task's values increase"
    assert metrics.hits > 0 and metrics.refills >= 1
    # A call that blocked the loop would hold it for a lease round trip or the 2 s timeout.
    assert max(lags) < 0.5, f"the loop was held {max(lags) * 1000:.0f} ms"


def test_a_wait_for_a_refill_does_not_block_the_loop(server):
    """The first value of a new sequence waits for a lease: other coroutines run meanwhile."""
    async def main():
        client = seqvend.AsyncClient(server.url, server.token)
        name = server.sequence()
        ticks = 0
        done = asyncio.Event()

        async def ticker():
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        value = await client.next(name)
        done.set()
        await task
        return value, ticks

    value, ticks = run(main())
    assert value == 1 and ticks > 1


def test_async_vend_next_n_prefetch_snowflake_and_errors(server):
    async def main():
        client = seqvend.AsyncClient(server.url, server.token)
        name = server.sequence(min=1, max=50)
        await client.prefetch(name, 10)
        batch = await client.next_n(name, 10)
        other = server.sequence()
        vended = await client.vend(other, 3, idempotency_key="async-" + other)
        again = await client.vend(other, 3, idempotency_key="async-" + other)
        flake = await client.snowflake()
        with pytest.raises(seqvend.NotFound):
            await client.next("py-never-made")
        with pytest.raises(seqvend.SequenceExhausted):
            await client.next_n(name, 100)
        return batch, vended, again, flake

    batch, vended, again, flake = run(main())
    assert batch == list(range(1, 11))
    assert vended.values == [1, 2, 3] and again.replayed and again.values == [1, 2, 3]
    assert seqvend.decode_snowflake(flake).worker_id >= 0


def test_a_cancelled_wait_leaves_no_value_to_be_handed_out_twice(server):
    async def main():
        client = seqvend.AsyncClient(server.url, server.token)
        name = server.sequence()
        task = asyncio.create_task(client.next(name))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return [await client.next(name) for _ in range(100)]

    values = run(main())
    assert len(set(values)) == 100
