"""Benchmarks of the seqvend Python package against a real seqvend (started here, with its
own PostgreSQL, by the tests' harness), each figure beside its baseline from the same run:

1. ids/s from a warm cache with 1, 2 and 8 Python threads: `next(handle)` on a sequence
   handle and `client.next(name)` beside `next(itertools.count())` (the floor of any Python
   call that hands out an int) and `uuid.uuid4()`; rounds interleaved, medians reported.
   The cache is topped up (`prefetch`) before every sample, outside its window, so a sample
   measures takes from the cache, never a wait for a refill (the metrics' `waits` say so).
2. Latency of a strict vend over HTTP: `client.vend(name)` beside a plain `requests` and a
   plain `httpx` POST of the same request (sessions kept alive), interleaved, medians and p99.

    SEQVEND_BIN=target/release/seqvend python loadtest/python_bench.py
Env: ROUNDS (5), SECONDS (1.0, per round and threads), VENDS (500, per round and client),
TOP_UP (6,000,000 values cached before each sample).
"""

from __future__ import annotations

import itertools
import os
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python/tests"))

import httpx  # noqa: E402
import requests  # noqa: E402
import seqvend  # noqa: E402
from conftest import Server  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "5"))
SECONDS = float(os.environ.get("SECONDS", "1.0"))
VENDS = int(os.environ.get("VENDS", "500"))


def rate(make_call, threads: int) -> float:
    """Calls per second over all `threads`, each calling as fast as it can for SECONDS."""
    counts = [0] * threads
    stop = threading.Event()
    barrier = threading.Barrier(threads + 1)

    def run(slot: int) -> None:
        call = make_call()
        barrier.wait()
        n = 0
        while not stop.is_set():
            for _ in range(1000):
                call()
            n += 1000
        counts[slot] = n

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    barrier.wait()
    started = time.perf_counter()
    time.sleep(SECONDS)  # the measuring window, not a synchronisation
    stop.set()
    for worker in workers:
        worker.join()
    return sum(counts) / (time.perf_counter() - started)


# Values cached before every sample: more than the fastest row takes in one window.
TOP_UP = int(os.environ.get("TOP_UP", "6000000"))


def cache_rates(client: seqvend.Client, name: str) -> None:
    shared_count = itertools.count()
    kinds = {
        "next(client.sequence(name))": lambda: (lambda handle=client.sequence(name): next(handle)),
        "client.next": lambda: (lambda: client.next(name)),
        "next(itertools.count())": lambda: (lambda: next(shared_count)),
        "uuid.uuid4()": lambda: (lambda: uuid.uuid4()),
    }
    print("| threads | call | ids/s (all threads, median) | per thread | vs itertools.count |")
    print("|---|---|---|---|---|")
    for threads in (1, 2, 8):
        samples = {kind: [] for kind in kinds}
        for _ in range(ROUNDS):
            for kind, make in kinds.items():
                client.prefetch(name, TOP_UP)
                samples[kind].append(rate(make, threads))
        base = statistics.median(samples["next(itertools.count())"])
        for kind, got in samples.items():
            median = statistics.median(got)
            print(
                f"| {threads} | `{kind}` | {median:,.0f} | {median / threads:,.0f} | {median / base:.2f} |"
            )
    print(f"\nclient metrics after: {client.metrics()} (waits: calls that found the cache empty)")


def latency(call) -> list:
    took = []
    for _ in range(VENDS):
        started = time.perf_counter()
        call()
        took.append(time.perf_counter() - started)
    return took


def vend_latency(server: Server, client: seqvend.Client, name: str) -> None:
    url = f"{server.url}/sequences/{name}/next"
    headers = {"Authorization": f"Bearer {server.token}"}
    session = requests.Session()
    plain = httpx.Client()

    def with_requests():
        answer = session.post(url, params={"count": 1}, headers=headers)
        answer.raise_for_status()
        return answer.json()["values"]

    def with_httpx():
        answer = plain.post(url, params={"count": 1}, headers=headers)
        answer.raise_for_status()
        return answer.json()["values"]

    callers = {
        "client.vend(name)": lambda: client.vend(name),
        "requests POST": with_requests,
        "httpx POST": with_httpx,
    }
    samples = {kind: [] for kind in callers}
    for _ in range(ROUNDS):
        for kind, call in callers.items():
            samples[kind].extend(latency(call))
    base = statistics.median(samples["requests POST"])
    print("| call | median ms | p99 ms | median vs requests |")
    print("|---|---|---|---|")
    for kind, took in samples.items():
        took.sort()
        median = statistics.median(took)
        p99 = took[int(len(took) * 0.99) - 1]
        print(f"| `{kind}` | {median * 1000:.3f} | {p99 * 1000:.3f} | {median / base:.2f} |")


def main() -> None:
    server = Server()
    try:
        client = seqvend.Client(server.url, server.token, max_cached=2 * TOP_UP)
        cached = server.sequence()
        print(f"## Warm cache, {ROUNDS} rounds of {SECONDS} s each, interleaved\n")
        cache_rates(client, cached)
        print(f"\n## Strict vend over HTTP, {ROUNDS} rounds of {VENDS} sequential calls each\n")
        vend_latency(server, client, server.sequence())
    finally:
        server.close()


if __name__ == "__main__":
    main()
