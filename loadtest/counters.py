#!/usr/bin/env python3
"""Counter families under load: writes the "counters" section of docs/performance.md. Started
by loadtest/counters.sh.

1. COUNTER_KEYS (1,000,000) keys created by their first draw: wrk -t1 -c128, a new key on
   every request (order-0000001 ...), in runs of at most 10 s until that many exist.
2. Draws at random over those keys against draws on one key, with the no-op GET /healthz
   beside them: wrk -t1 -c64, rounds interleaved, medians.
3. Disk per key (heap, primary key, total) after each, with the share of HOT updates; and
   seqvend's resident memory after a warm-up on one key, after the keys, after the draws.
"""

import datetime
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

from run import (BASE, LOADTEST, VEND_TOKEN, Seqvend, api, cluster_url, commit, interleaved_rounds,
                 log, machine, metric_sum_count, pg_bindir, write_section, WRK_ROUNDS,
                 WRK_SECONDS)

FAMILY = "orders"
KEYS = int(os.environ.get("COUNTER_KEYS", "1000000"))


def psql(data_dir, sql):
    """One value read from seqvend's private cluster."""
    bindir = pg_bindir()
    url = cluster_url(data_dir)
    out = subprocess.run([f"{bindir}/psql", "-X", "-q", "-A", "-t", url, "-c", sql],
                         capture_output=True, text=True, check=True).stdout
    return out.strip()


def disk(data_dir):
    """Rows, and bytes per row: heap, primary key, all (TOAST and maps included)."""
    row = psql(data_dir, "SELECT count(*), pg_relation_size('seqvend.counters'), "
                         "pg_indexes_size('seqvend.counters'), "
                         "pg_total_relation_size('seqvend.counters') FROM seqvend.counters")
    keys, heap, index, total = (int(v) for v in row.split("|"))
    return {"keys": keys, "heap": heap / keys, "index": index / keys, "total": total / keys}


def hot_share(data_dir):
    row = psql(data_dir, "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
                         "WHERE relid = 'seqvend.counters'::regclass")
    updates, hot = (int(v) for v in row.split("|"))
    return updates, hot


def scrape():
    with urllib.request.urlopen(f"{BASE}/metrics", timeout=10) as response:
        return response.read().decode()


def statement_means(before, after):
    """Mean statement time (ms) and requests per statement between two scrapes."""
    s0, n0 = metric_sum_count(before, "seqvend_counter_statement_duration_seconds")
    s1, n1 = metric_sum_count(after, "seqvend_counter_statement_duration_seconds")
    b0, _ = metric_sum_count(before, "seqvend_counter_batch_requests")
    b1, _ = metric_sum_count(after, "seqvend_counter_batch_requests")
    statements = n1 - n0
    if statements <= 0:
        return None, None
    return (s1 - s0) / statements * 1000, (b1 - b0) / statements


def count_keys(data_dir, family=FAMILY):
    return int(psql(data_dir, "SELECT count(*) FROM seqvend.counters c "
                              "JOIN seqvend.families f ON f.id = c.family_id "
                              f"WHERE f.name = '{family}'"))


def draw_new_keys(data_dir, seconds, base=BASE, script="counter_new.lua", family=FAMILY):
    """One wrk run (-t1 -c128) of `seconds`, every request on a key never drawn before (the
    script's START-th onwards, after the keys that exist); returns (keys now, seconds of wrk,
    requests, non-2xx)."""
    env = dict(os.environ, SEQVEND_TOKEN=VEND_TOKEN, FAMILY=family,
               START=str(count_keys(data_dir, family) + 1))
    command = ["wrk", "-t1", "-c128", f"-d{seconds}s", "-s", str(LOADTEST / "wrk" / script),
               f"{base}/healthz"]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    done = re.search(r"(\d+) requests in ([\d.]+)(ms|s|m)", out)
    elapsed = float(done.group(2)) * {"ms": 0.001, "s": 1, "m": 60}[done.group(3)]
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return count_keys(data_dir, family), elapsed, int(done.group(1)), int(bad.group(1)) if bad else 0


def create_keys(data_dir, keys_wanted=KEYS, **draw):
    """wrk in runs of at most 10 s, each on keys never drawn before, until `keys_wanted`
    (COUNTER_KEYS) exist; returns (keys, seconds of wrk, requests, non-2xx). `draw` goes to
    draw_new_keys."""
    keys, seconds, requests, failures = 0, 0.0, 0, 0
    rate = 20_000
    while keys < keys_wanted:
        run = max(1, min(10, math.ceil((keys_wanted - keys) / rate)))
        keys, elapsed, done, bad = draw_new_keys(data_dir, run, **draw)
        seconds += elapsed
        requests += done
        failures += bad
        rate = max(keys / seconds, 1)
    return keys, seconds, requests, failures


def main():
    started = datetime.datetime.now(datetime.timezone.utc)
    scratch = Path(tempfile.mkdtemp(prefix="seqvend-counters-load-"))
    # The private cluster runs as another user (postgres, when started as root).
    os.chmod(scratch, 0o755)
    data_dir = scratch / "data"
    seqvend = Seqvend(data_dir)
    try:
        for family in (FAMILY, "warm-up"):
            status, reply = api("POST", "/families", {"name": family})
            if status != 201:
                sys.exit(f"could not create the family {family}: {status} {reply}")
        # Memory is compared after the same load on one key, so that what the connections
        # and buffers of a loaded server take is in the baseline too.
        env = dict(os.environ, SEQVEND_TOKEN=VEND_TOKEN)
        subprocess.run(["wrk", "-t1", "-c128", "-d3s", "-s", str(LOADTEST / "wrk" / "vend.lua"),
                        f"{BASE}/families/warm-up/counters/k/next"],
                       env=env, capture_output=True, check=True)
        rss = {"start": seqvend.rss_kb("VmRSS:")}

        log(f"creating {KEYS:,} counters by their first draw")
        before = scrape()
        keys, seconds, requests, failures = create_keys(data_dir)
        creation_ms, creation_batch = statement_means(before, scrape())
        if failures:
            sys.exit(f"{failures} of {requests} draws were not 2xx")
        created = disk(data_dir)
        rss["keys"] = seqvend.rss_kb("VmRSS:")
        updates_before, hot_before = hot_share(data_dir)

        one_key = f"/families/{FAMILY}/counters/order-0000001/next"
        routes = [
            ("noop", "/healthz", "get.lua"),
            ("one", one_key, "vend.lua"),
            ("random", f"/families/{FAMILY}/counters/any/next", "counter_random.lua"),
        ]
        os.environ.update(FAMILY=FAMILY, COUNTER_KEYS=str(KEYS))
        before = scrape()
        runs = interleaved_rounds(routes)
        draw_ms, draw_batch = statement_means(before, scrape())
        drawn = disk(data_dir)
        updates, hot = hot_share(data_dir)
        rss["draws"] = seqvend.rss_kb("VmRSS:")
    finally:
        seqvend.stop()

    median = {key: statistics.median(r for r, _ in rs) for key, rs in runs.items()}
    p99 = {key: statistics.median(p for _, p in rs if p is not None) for key, rs in runs.items()}
    rate = keys / seconds
    updates -= updates_before
    hot -= hot_before
    rows = "\n".join(
        f"| {label} | {median[key]:,.0f} | {median[key] / median['one']:.2f} | "
        f"{median[key] / median['noop']:.2f} | {p99[key]:.2f} |"
        for key, label in [
            ("noop", "GET /healthz (no-op)"),
            ("one", "POST next on one key"),
            ("random", f"POST next on a key at random among {KEYS:,}"),
        ]
    )
    mb = lambda kb: f"{kb / 1024:.1f} MB"
    text = f"""## Counter families

`loadtest/counters.sh` — {machine()}, {started:%Y-%m-%d}, commit {commit()}. Keys
`order-0000001` … (13 bytes), one family with PostgreSQL's default parameters.

**{keys:,} keys created by their first draw**: {rate:,.0f} new keys/s ({keys:,} in
{seconds:.1f} s of wrk -t1 -c128, a new key on every request, none refused). Statements
averaged {creation_ms:.2f} ms for {creation_batch:.1f} requests each.

**Draws at random over {KEYS:,} keys against one key** (wrk -t1 -c64, {WRK_ROUNDS} interleaved
rounds of {WRK_SECONDS} s, medians):

| route | req/s | × one key | × no-op | p99 ms |
|---|---:|---:|---:|---:|
{rows}

Statements during the draws averaged {draw_ms:.2f} ms for {draw_batch:.1f} requests each.

**Disk per key** (`seqvend.counters`, fillfactor 85):

| when | heap | primary key | in all |
|---|---:|---:|---:|
| after {created['keys']:,} keys were created | {created['heap']:.0f} B | {created['index']:.0f} B | {created['total']:.0f} B |
| after the draws | {drawn['heap']:.0f} B | {drawn['index']:.0f} B | {drawn['total']:.0f} B |

Of the {updates:,} draws of an existing key, {hot:,} ({hot / max(updates, 1):.1%}) were HOT
updates: the row's new version went on its own page, and no index entry was written.

**seqvend's resident memory**: {mb(rss['start'])} after 3 s of draws on one key (wrk -c128),
{mb(rss['keys'])} after {keys:,} keys, {mb(rss['draws'])} after the draws: seqvend keeps
nothing per key.
"""
    write_section("counters", text)
    print(text)


if __name__ == "__main__":
    main()
