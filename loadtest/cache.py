#!/usr/bin/env python3
"""Cached sequences under load: writes the "cache" section of docs/performance.md. Started by
loadtest/cache.sh.

Server tier: wrk (-t1 -c64) measures POST next on a cached sequence beside POST next on a
strict one and the no-op GET /healthz, rounds interleaved, medians reported (the machine is
shared and noisy: ratios within one run matter more than absolute numbers). Values per
database statement come from seqvend's own counters over the cached runs. Memory: resident
set before and after 10,000 cached sequences each hold a block.

Client tier: the client_bench example against the same seqvend (see client/README.md).
"""

import concurrent.futures
import datetime
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from run import (BASE, ROOT, VEND_TOKEN, WRK_ROUNDS, WRK_SECONDS, Seqvend, api, commit, log,
                 interleaved_rounds, machine, write_section)

QUICK = os.environ.get("CACHE_QUICK") == "1"
CACHE_SIZE = 100_000
MANY = 1_000 if QUICK else 10_000
CLIENT_BENCH = ROOT / "target" / "release" / "examples" / "client_bench"


def counter(scrape, series):
    for line in scrape.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return 0.0


def scrape():
    with urllib.request.urlopen(f"{BASE}/metrics", timeout=10) as response:
        return response.read().decode()


def create(name, cache=None):
    body = {"name": name, "min": 1, "max": 9_000_000_000_000_000_000}
    if cache:
        body["cache"] = cache
    status, reply = api("POST", "/sequences", body)
    if status not in (201, 409):
        sys.exit(f"could not create {name}: {status} {reply}")


def server_tier():
    routes = [
        ("noop", "/healthz", "get.lua"),
        ("cached", "/sequences/cached/next", "vend.lua"),
        ("strict", "/sequences/strict/next", "vend.lua"),
    ]
    create("cached", {"size": CACHE_SIZE})
    create("strict")
    before = scrape()
    runs = interleaved_rounds(routes)
    after = scrape()
    handed = counter(after, 'seqvend_values_vended_total{sequence="cached"}') - counter(
        before, 'seqvend_values_vended_total{sequence="cached"}')
    statements = counter(after, 'seqvend_leases_granted_total{kind="instance"}') - counter(
        before, 'seqvend_leases_granted_total{kind="instance"}')
    waits = counter(after, "seqvend_cache_waits_total") - counter(before, "seqvend_cache_waits_total")
    hits = counter(after, "seqvend_cache_hits_total") - counter(before, "seqvend_cache_hits_total")
    median = {key: statistics.median(r for r, _ in rs) for key, rs in runs.items()}
    p99 = {key: statistics.median(p for _, p in rs if p is not None) for key, rs in runs.items()}
    return median, p99, handed, statements, hits, waits


def many_sequences(seqvend):
    """Resident memory before and after MANY cached sequences each hold a block of 1,000."""
    rss_before = seqvend.rss_kb("VmRSS:")
    names = [f"many-{i}" for i in range(MANY)]

    def one(name):
        create(name, {"size": 1000})
        status, reply = api("POST", f"/sequences/{name}/next", token=VEND_TOKEN)
        if status != 200:
            sys.exit(f"next {name}: {status} {reply}")

    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(one, names))
    return rss_before, seqvend.rss_kb("VmRSS:")


def client_bench(**env):
    """Runs client_bench; returns its last line as a dict."""
    run_env = dict(os.environ, SEQVEND_URL=BASE, SEQVEND_TOKEN=VEND_TOKEN, SEQUENCE="client",
                   **{k: str(v) for k, v in env.items()})
    out = subprocess.run([str(CLIENT_BENCH)], env=run_env, capture_output=True, text=True, check=True).stdout
    last = out.strip().splitlines()[-1]
    figures = dict(pair.split("=", 1) for pair in last.split())
    latency = re.search(r"latency_ns_per_id p50=(\d+) p99=(\d+)", out)
    figures["p99_ns"] = latency.group(2) if latency else "—"
    return figures


def client_tier(seqvend):
    create("client", {"size": CACHE_SIZE})
    seconds = 3 if QUICK else 10
    # Leased before the clock starts, so the runs measure the cache, not the service.
    warm_values = 5_000_000 if QUICK else 20_000_000
    warm = {threads: client_bench(THREADS=threads, SECONDS=seconds, RATE=0, WARM=warm_values)
            for threads in (1, 2, 8)}
    steady = client_bench(THREADS=1, SECONDS=seconds * 3, RATE=10_000)
    return warm, steady


def outage(seqvend_factory):
    """client_bench at 1k ids/s while seqvend is stopped for 60 s (PostgreSQL stays up)."""
    outage_seconds = 10 if QUICK else 60
    run_env = dict(os.environ, SEQVEND_URL=BASE, SEQVEND_TOKEN=VEND_TOKEN, SEQUENCE="outage",
                   THREADS="1", SECONDS=str(outage_seconds + 30), RATE="1000")
    create("outage")
    bench = subprocess.Popen([str(CLIENT_BENCH)], env=run_env, stdout=subprocess.PIPE, text=True)
    time.sleep(10)
    seqvend = seqvend_factory.pop()
    log(f"stopping seqvend for {outage_seconds} s under the client")
    seqvend.stop()
    time.sleep(outage_seconds)
    seqvend_factory.append(Seqvend(seqvend.data_dir))
    out, _ = bench.communicate(timeout=outage_seconds + 120)
    last = out.strip().splitlines()[-1]
    return outage_seconds, dict(pair.split("=", 1) for pair in last.split())


def main():
    load_before = os.getloadavg()[0]
    scratch = Path(tempfile.mkdtemp(prefix="seqvend-cache-load-"))
    os.chmod(scratch, 0o755)
    have_client = CLIENT_BENCH.exists()
    try:
        seqvend = Seqvend(scratch / "pg")
        seqvend.data_dir = scratch / "pg"
        running = [seqvend]
        try:
            median, p99, handed, statements, hits, waits = server_tier()
            warm = steady = None
            if have_client:
                warm, steady = client_tier(running[-1])
                outage_seconds, outage_result = outage(running)
            rss_before, rss_after = many_sequences(running[-1])
        finally:
            running[-1].stop()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    noop = median["noop"]
    lines = [
        "# Cached sequences under load",
        "",
        f"- Date: {datetime.date.today().isoformat()}",
        f"- Machine: {machine()}",
        f"- Commit: {commit()}",
        "- Setup: seqvend release build (default settings, `RUST_LOG=warn`) and its private",
        "  PostgreSQL on the same machine; wrk and the client on the same cores.",
        f"- wrk: `-t1 -c64`, {WRK_SECONDS} s per run, median of {WRK_ROUNDS} runs, rounds interleaved.",
        f"- Cached sequence: `\"cache\": {{\"size\": {CACHE_SIZE}}}` (defaults: buffer 30 s, min {CACHE_SIZE // 5}).",
        f"- Load average (1 min) before the run: {load_before:.1f}, after: {os.getloadavg()[0]:.1f}"
        " (other work on the machine competes for the same cores).",
        "",
        "Rerun with `loadtest/cache.sh`.",
        "",
        "## Server tier (HTTP)",
        "",
        "| route | req/s | vs no-op | vs strict | p99 ms | goal |",
        "|---|---|---|---|---|---|",
        f"| no-op `GET /healthz` | {noop:,.0f} | 1.00 | — | {p99['noop']:.2f} | |",
        f"| `POST next`, cached | {median['cached']:,.0f} | {median['cached'] / noop:.2f} | "
        f"{median['cached'] / median['strict']:.2f} | {p99['cached']:.2f} | ≥ 0.85 × no-op: "
        f"{'met' if median['cached'] / noop >= 0.85 else '**not met**'} |",
        f"| `POST next`, strict | {median['strict']:,.0f} | {median['strict'] / noop:.2f} | 1.00 | {p99['strict']:.2f} | |",
        "",
        f"Over the cached runs: {handed:,.0f} values handed out by {statements:,.0f} lease statements, "
        f"**{handed / max(statements, 1):,.0f} values per database statement** (goal ≥ 1,000); "
        f"{hits:,.0f} requests answered from memory at once, {waits:,.0f} waited for a refill.",
        "",
        "## Memory",
        "",
        f"Resident set before {MANY:,} cached sequences: {rss_before / 1024:.1f} MB; after each held a "
        f"block of 1,000: {rss_after / 1024:.1f} MB ({(rss_after - rss_before) / MANY:.2f} kB per sequence).",
    ]
    if have_client:
        lines += [
            "",
            "## Client tier (`seqvend-client`, `client_bench`)",
            "",
            "| threads | ids | ids/s per thread (goal ≥ 50 M) | p99 ns per id (timer included) | hit rate | waits | service calls | duplicates |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for threads, r in warm.items():
            lines.append(
                f"| {threads} | {int(r['ids']):,} | {float(r['ids_per_second_per_thread']):,.0f} | {r['p99_ns']} | "
                f"{float(r['hit_rate']):.4f} | {r['waits']} | {r['service_calls']} | {r['duplicates']} |"
            )
        lines += [
            "",
            f"Steady 10,000 ids/s, 1 thread: hit rate **{float(steady['hit_rate']):.4f}** (goal ≥ 0.99), "
            f"waits {steady['waits']}, service calls {steady['service_calls']}, duplicates {steady['duplicates']}.",
            "",
            f"seqvend stopped for {outage_seconds} s under a client at 1,000 ids/s with default settings: "
            f"**{outage_result['waits']} calls waited** (goal 0), hit rate {float(outage_result['hit_rate']):.4f}, "
            f"duplicates {outage_result['duplicates']}.",
        ]
    # In docs/performance.md, one level down, beside the other load tests' figures.
    section = ["#" + line if line.startswith("#") else line for line in lines]
    write_section("cache", "\n".join(section))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
