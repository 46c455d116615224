#!/usr/bin/env python3
"""Where a request's CPU goes: seqvend, the floor server (examples/floor.rs), PostgreSQL and wrk,
route by route. Started by loadtest/decompose.sh; prints a table, writes nothing.

One seqvend with its private PostgreSQL, and the floor server on that PostgreSQL. Each round
runs wrk -t1 -c64 over four routes in turn: seqvend's no-op route and strict `POST next` on one
sequence, the floor server's no-op and `POST /floor`. Over each run the CPU every process used is
read from /proc and divided by the requests served, and the vend statements' batch size is read
from seqvend's metrics. Figures are medians over the rounds.

This is how docs/performance.md splits the gap between strict `next` and the floor. Row 1 of the
speed table is a ratio of two routes that share seqvend's HTTP stack: only what strict `next`
costs beyond the no-op route moves it.
"""

import os
import statistics
import sys
import tempfile
import urllib.request
from pathlib import Path

import run
from run import (ADMIN_TOKEN, Seqvend, cluster_cpu_seconds, cpu_seconds, create_sequence, log,
                 metric_sum_count, wrk)
from speed import FLOOR, start_floor

ROUNDS = int(os.environ.get("DECOMPOSE_ROUNDS", "3"))
SECONDS = int(os.environ.get("DECOMPOSE_SECONDS", "8"))
PORT = int(os.environ.get("LOADTEST_PORT", "18080"))


def batches(base):
    """(requests, statements) of seqvend's vend statements so far."""
    request = urllib.request.Request(f"{base}/metrics",
                                     headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    text = urllib.request.urlopen(request).read().decode()
    return metric_sum_count(text, "seqvend_vend_batch_requests")


def children_cpu(times):
    """CPU of this script's finished children (wrk) so far."""
    return times.children_user + times.children_system


def one_run(server, floor, pgdata, base, path, script):
    """wrk on one route; µs of CPU per request in each process, and the batch size."""
    def sample():
        return (cpu_seconds(server.process.pid), cpu_seconds(floor.pid),
                cluster_cpu_seconds(pgdata), batches(server.base), os.times())

    before = sample()
    req_s, failures, _ = wrk(path, script, seconds=SECONDS, base=base)
    after = sample()
    if failures:
        sys.exit(f"{base}{path}: {failures} responses were not 2xx")
    requests = req_s * SECONDS

    def per_request(i):
        return (after[i] - before[i]) / requests * 1e6

    asked = after[3][0] - before[3][0]
    statements = after[3][1] - before[3][1]
    return {
        "req/s": req_s,
        "seqvend µs": per_request(0),
        "floor µs": per_request(1),
        "PostgreSQL µs": per_request(2),
        "wrk µs": (children_cpu(after[4]) - children_cpu(before[4])) / requests * 1e6,
        "batch": asked / statements if statements else 0.0,
    }


def main():
    run.WORK = Path(tempfile.mkdtemp(prefix="seqvend-decompose-"))
    os.chmod(run.WORK, 0o755)  # the private cluster runs as another user
    data_dir = run.WORK / "pg"
    server = Seqvend(data_dir, port=PORT, label="decompose")
    floor_base = f"http://127.0.0.1:{PORT + 10}"
    floor = start_floor(floor_base, data_dir)
    try:
        create_sequence("bench", 1, 9_000_000_000_000_000_000, base=server.base)
        routes = [("no-op", server.base, "/healthz", "get.lua"),
                  ("strict", server.base, "/sequences/bench/next", "vend.lua"),
                  ("floor no-op", floor_base, "/noop", "get.lua"),
                  ("floor", floor_base, "/floor", "vend.lua")]
        figures = {route[0]: [] for route in routes}
        for round_ in range(ROUNDS):
            for name, base, path, script in routes:
                log(f"round {round_ + 1} of {ROUNDS}: {name}")
                figures[name].append(one_run(server, floor, data_dir / "pgdata", base, path, script))
    finally:
        floor.terminate()
        floor.wait()
        server.stop()
    columns = list(figures["no-op"][0])
    print(f"wrk -t1 -c64, {ROUNDS} rounds of {SECONDS} s, medians; CPU per request in µs")
    print("| route | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for name, rounds in figures.items():
        cells = [f"{statistics.median(r[c] for r in rounds):,.1f}" for c in columns]
        print(f"| {name} | " + " | ".join(cells) + " |")
    log(f"logs in {run.WORK}")


if __name__ == "__main__":
    if not FLOOR.exists():
        sys.exit("build the floor server first: cargo build --release --example floor")
    main()
