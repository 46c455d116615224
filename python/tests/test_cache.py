"""The thick client's cache from Python: values, order, metrics, and threads."""

from __future__ import annotations

import heapq
import threading
from array import array

import pytest
import seqvend


def test_next_next_n_and_try_next_hand_out_increasing_values_from_the_cache(server, client):
    name = server.sequence()
    first = client.next(name)
    batch = client.next_n(name, 500)
    assert batch == sorted(batch) and batch[0] > first
    value = client.try_next(name)
    assert value is None or value > batch[-1]
    metrics = client.metrics()
    assert metrics.refills >= 1 and metrics.hits >= 1
    assert isinstance(metrics, seqvend.Metrics)


def test_try_next_on_an_unused_sequence_answers_none_at_once_and_starts_a_refill(server, client):
    name = server.sequence()
    assert client.try_next(name) is None
    value = eventually_value(lambda: client.try_next(name))
    assert value >= 1


def eventually_value(take):
    from conftest import eventually

    return eventually(take, 20, "a refill brings a value")


def test_prefetch_fills_the_cache_so_later_calls_do_not_wait(server, client):
    name = server.sequence()
    client.prefetch(name, 5000)
    waits = client.metrics().waits
    values = [client.next(name) for _ in range(4000)]
    assert client.metrics().waits == waits
    assert len(set(values)) == 4000


def test_eight_threads_taking_a_million_ids_each_never_see_a_value_twice(server):
    client = seqvend.Client(server.url, server.token)
    name = server.sequence()
    per_thread = 1_000_000
    taken = [array("q") for _ in range(8)]

    def take(out: array) -> None:
        next_id = client.next
        append = out.append
        for _ in range(per_thread):
            append(next_id(name))

    run_threads(take, [(out,) for out in taken])
    assert_rising_per_thread_and_never_repeated(taken, per_thread)


def run_threads(target, args) -> None:
    """Runs `target(*a)` on one thread per `a` in `args`, all at once; returns when all end."""
    threads = [threading.Thread(target=target, args=a) for a in args]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def assert_rising_per_thread_and_never_repeated(taken, per_thread: int) -> None:
    # Each thread's values increase (per-process monotonic), so one merge finds any repeat.
    for out in taken:
        assert len(out) == per_thread
        assert all(a < b for a, b in zip(out, out[1:])), "a thread saw values fall"
    previous = None
    repeats = 0
    for value in heapq.merge(*taken):
        repeats += value == previous
        previous = value
    assert repeats == 0, "a value was handed out twice"


def test_sequence_handles_shared_and_per_thread_never_repeat_a_value_and_each_thread_sees_them_rise(
    server,
):
    """The handle's fast path (its own view of the active block, under the GIL) beside the
    client's: four threads each with a handle, four sharing one, and `client.next`, at once."""
    client = seqvend.Client(server.url, server.token)
    name = server.sequence()
    per_thread = 200_000
    shared = client.sequence(name)
    takers = [client.sequence(name).__next__ for _ in range(4)] + [shared.__next__] * 4
    takers += [lambda: client.next(name), shared.try_next]
    taken = [array("q") for _ in takers]

    def take(call, out: array) -> None:
        append = out.append
        while len(out) < per_thread:
            value = call()
            if value is not None:  # try_next: None while a refill is under way
                append(value)

    run_threads(take, list(zip(takers, taken)))
    assert_rising_per_thread_and_never_repeated(taken, per_thread)


def test_client_next_by_name_takes_from_that_sequence_for_names_made_anew_and_beyond_those_remembered(
    server, client
):
    """`Client.next(name)` finds its taker by the name object, or an equal one: ten sequences
    (more than a client remembers), each with its own range, named by a fresh `str` on odd
    turns; every value must come from its own sequence's range, rising."""
    ranges = [(i * 10**9 + 1, (i + 1) * 10**9) for i in range(10)]
    names = [server.sequence(min=low, max=high) for low, high in ranges]
    seen = {name: [] for name in names}
    for turn in range(300):
        for name in names:
            passed = "".join(list(name)) if turn % 2 else name
            seen[name].append(client.next(passed))
    for (low, high), name in zip(ranges, names):
        values = seen[name]
        assert all(low <= value <= high for value in values), f"{name} got another's values"
        assert values == sorted(set(values))


@pytest.mark.parametrize("bad", ["", "has space", "x" * 64, "-lead"])
def test_a_bad_name_is_refused_with_invalid_request_and_nothing_vended(client, bad):
    with pytest.raises(seqvend.InvalidRequest) as caught:
        client.vend(bad)
    assert caught.value.code == "invalid_request"


def test_a_sequence_handle_is_an_iterator_sharing_the_clients_cache(server, client):
    name = server.sequence()
    orders = client.sequence(name)
    first = next(orders)
    assert isinstance(orders, seqvend.Sequence) and orders.name == name
    from_client = client.next(name)
    more = [next(orders) for _ in range(100)] + orders.next_n(10) + [orders.next()]
    assert first < from_client < more[0] and more == sorted(set(more))
    assert orders.metrics().hits >= 100
    gone = client.sequence("py-never-made")
    with pytest.raises(seqvend.NotFound):
        next(gone)
