"""Outage survival: seqvend stopped for 30 s under a steady rate; no call waits while the
cache lasts, and refills resume when it is back."""

from __future__ import annotations

import time

import seqvend

RATE = 200  # ids/s
OUTAGE_S = 30


def paced(client, name, seconds: float, out: list) -> float:
    """Takes RATE ids/s for `seconds` (the pause paces the load; it synchronises nothing);
    the slowest call's duration."""
    slowest = 0.0
    start = time.monotonic()
    taken = 0
    while time.monotonic() - start < seconds:
        called = time.perf_counter()
        out.append(client.next(name))
        slowest = max(slowest, time.perf_counter() - called)
        taken += 1
        ahead = taken / RATE - (time.monotonic() - start)
        if ahead > 0:
            time.sleep(ahead)
    return slowest


def test_thirty_seconds_without_seqvend_under_a_steady_rate_cause_no_wait(server):
    client = seqvend.Client(server.url, server.token)
    name = server.sequence()
    values: list = []
    paced(client, name, 2, values)  # the refill rule sees the rate
    client.prefetch(name, RATE * (OUTAGE_S + 10))
    waits = client.metrics().waits

    server.stop()
    try:
        slowest = paced(client, name, OUTAGE_S, values)
        during = client.metrics()
    finally:
        server.start()

    assert during.waits == waits, "a call waited while the cache lasted"
    # A call that waited would take a refill's round trip, or the 2 s timeout; this bound
    # only leaves room for a busy machine's scheduling.
    assert slowest < 0.5, f"the slowest call took {slowest * 1000:.1f} ms"
    assert values == sorted(set(values)), "increasing, never repeated"
    # Back: the same client leases again (a new sequence has nothing cached).
    assert client.next(server.sequence()) == 1
    assert client.metrics().refills > during.refills
    assert client.next(name) > values[-1]
