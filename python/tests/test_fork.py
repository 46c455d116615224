"""Fork safety: a forked child (a gunicorn or celery worker) never hands out its parent's
cached values, and never stamps Snowflake ids with its parent's worker id."""

from __future__ import annotations

import json
import os
import signal

import seqvend


def in_child(work) -> dict:
    """Runs `work()` in a forked child; its JSON-able result, read from a pipe."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without running the parent's clean-ups
        signal.alarm(60)  # a child that hangs dies, and the test fails instead of hanging
        try:
            os.close(read)
            outcome = {"ok": work()}
        except BaseException as error:  # noqa: BLE001 - reported to the parent
            outcome = {"error": repr(error)}
        os.write(write, json.dumps(outcome).encode())
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"the child ended with {status}"
    outcome = json.loads(b"".join(chunks))
    assert "error" not in outcome, outcome.get("error")
    return outcome["ok"]


def test_a_forked_child_never_hands_out_its_parents_cached_values(server):
    client = seqvend.Client(server.url, server.token)
    name = server.sequence()
    client.prefetch(name, 5000)
    before = [client.next(name) for _ in range(100)]
    cached_from = before[-1] + 1  # the parent's next cached value

    child = in_child(lambda: [client.next(name) for _ in range(100)])
    after = [client.next(name) for _ in range(100)]

    assert after[0] == cached_from, "the parent goes on from its cache, untouched"
    parents = set(before) | set(after)
    assert not parents & set(child), "the child handed out values of its parent's cache"
    assert client.metrics().waits == 0


def test_a_forked_child_never_hands_out_the_block_a_warm_sequence_handle_holds(server):
    client = seqvend.Client(server.url, server.token)
    name = server.sequence()
    client.prefetch(name, 5000)
    orders = client.sequence(name)
    before = [next(orders) for _ in range(100)]  # the handle's fast path holds the block now

    child = in_child(lambda: [next(orders) for _ in range(100)] + [orders.try_next()])
    after = [next(orders) for _ in range(100)]

    assert after[0] == before[-1] + 1, "the parent's handle goes on from its block"
    assert not (set(before) | set(after)) & set(child), "the child took from its parent's block"
    assert client.metrics().waits == 0


def test_a_forked_child_leases_its_own_worker_id_and_its_ids_never_collide(server):
    client = seqvend.Client(server.url, server.token)
    parent_ids = client.snowflake_n(100)
    parent_worker = client.worker_id

    child = in_child(lambda: {"worker": (client.snowflake(), client.worker_id)[1], "ids": client.snowflake_n(100)})

    assert child["worker"] != parent_worker
    assert not set(child["ids"]) & set(parent_ids + client.snowflake_n(100))


def test_a_client_made_after_a_fork_and_an_async_client_work_in_the_child(server):
    name = server.sequence()
    parent = seqvend.Client(server.url, server.token)
    parent.next(name)

    def child_work():
        import asyncio

        fresh = seqvend.Client(server.url, server.token)

        async def run():
            return await seqvend.AsyncClient(server.url, server.token).next(name)

        return [fresh.next(name), parent.next(name), asyncio.run(run())]

    values = in_child(child_work)
    assert len(set(values)) == 3
