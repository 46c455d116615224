#!/usr/bin/env python3
"""Strict and keyed POST next, this build against a baseline build, in the same run: writes
a "before and after" section of docs/performance.md, one per baseline. Started by
loadtest/before_after.sh, which builds both release binaries.

Each round starts each binary in turn (the order alternates from round to round) with its
own private PostgreSQL, and runs wrk (-t1 -c64) over GET /healthz (the no-op route), strict
POST next on one sequence, and POST next with a new Idempotency-Key on every request. The
figures that compare are each binary's ratio to its own no-op route, medians over rounds:
the machine is shared and noisy, absolute rates move between runs.
"""

import datetime
import os
import statistics
import sys
import tempfile
from pathlib import Path

import run
from run import commit, create_sequence, log, machine, write_section, wrk, WRK_ROUNDS, WRK_SECONDS

ROUTES = [
    ("noop", "/healthz", "get.lua"),
    ("strict", "/sequences/labels/next", "vend.lua"),
    ("keyed", "/sequences/labels/next", "vend_keyed.lua"),
]


def measure(binary, data_dir):
    """One round of every route against one binary; {route: (req/s, p99 ms)}."""
    run.BINARY = binary
    server = run.Seqvend(data_dir)
    try:
        create_sequence("labels", 1, 9_000_000_000_000_000_000)
        figures = {}
        for key, path, script in ROUTES:
            rate, failures, p99 = wrk(path, script)
            if failures:
                sys.exit(f"{binary}: wrk {path}: {failures} responses were not 2xx")
            figures[key] = (rate, p99)
        return figures
    finally:
        server.stop()


def main():
    baseline, baseline_label = Path(sys.argv[1]), sys.argv[2]
    started = datetime.datetime.now(datetime.timezone.utc)
    scratch = Path(tempfile.mkdtemp(prefix="seqvend-before-after-"))
    os.chmod(scratch, 0o755)
    builds = {"before": baseline, "after": run.BINARY}
    runs = {build: {key: [] for key, *_ in ROUTES} for build in builds}
    for round_ in range(WRK_ROUNDS):
        order = list(builds) if round_ % 2 == 0 else list(reversed(builds))
        for build in order:
            log(f"round {round_ + 1} of {WRK_ROUNDS}: {build}")
            (scratch / build).mkdir(exist_ok=True)
            for key, figure in measure(builds[build], scratch / build / "data").items():
                runs[build][key].append(figure)
    median = {b: {k: statistics.median(r for r, _ in rs) for k, rs in by.items()} for b, by in runs.items()}
    p99 = {b: {k: statistics.median(p for _, p in rs if p is not None) for k, rs in by.items()}
           for b, by in runs.items()}
    rows = "\n".join(
        f"| {label} | {build} | {median[build][key]:,.0f} | {median[build][key] / median[build]['noop']:.2f} "
        f"| {p99[build][key]:.2f} |"
        for key, label in [("noop", "GET /healthz (no-op)"), ("strict", "POST next, strict"),
                           ("keyed", "POST next, new Idempotency-Key each")]
        for build in builds
    )
    ratio = lambda key: (median["after"][key] / median["after"]["noop"]) / (median["before"][key] / median["before"]["noop"])
    text = f"""## Before and after: strict and keyed vends against a baseline build

`loadtest/before_after.sh {baseline_label}` — {machine()}, {started:%Y-%m-%d}, commit {commit()}
against {baseline_label}. wrk -t1 -c64, {WRK_ROUNDS} rounds of {WRK_SECONDS} s per route and
build, the builds' order alternating between rounds, medians. Each build runs with its own
private PostgreSQL.

| route | build | req/s | × its no-op | p99 ms |
|---|---|---:|---:|---:|
{rows}

After ÷ before, each as a ratio to its own no-op route: strict {ratio('strict'):.2f}, keyed
{ratio('keyed'):.2f}.
"""
    # One section per baseline: each structural or allocator change keeps its own comparison.
    write_section(f"before-after-{baseline_label}", text)
    print(text)


if __name__ == "__main__":
    main()
