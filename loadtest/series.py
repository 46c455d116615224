#!/usr/bin/env python3
"""Per-sequence metric series with 100 and with 10,000 sequences: writes the "series" section
of docs/performance.md. Started by loadtest/series.sh.

Each sequence is created and vended from (so it has a rate and a values_vended count); after
a usage round the scrape's series are counted per family. The per-sequence gauges show the
SEQVEND_METRICS_SEQUENCES (default 100) most urgent sequences and sum the rest under
sequence="_other", so the count should not grow past the first 100 sequences.
"""

import concurrent.futures
import datetime
import os
import re
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

os.environ.setdefault("SEQVEND_WATCH_INTERVAL_S", "2")
from run import BASE, VEND_TOKEN, Seqvend, api, commit, log, machine, write_section  # noqa: E402

MANY = int(os.environ.get("SERIES_SEQUENCES", "10000"))
SERIES = re.compile(r"^(seqvend_[a-z_]+?)(?:_bucket|_count|_sum)?\{")


def scrape():
    with urllib.request.urlopen(f"{BASE}/metrics", timeout=30) as response:
        return response.read().decode()


def families(text):
    """Series per metric family (histograms counted whole)."""
    counts = Counter()
    for line in text.splitlines():
        match = SERIES.match(line)
        if match:
            counts[match.group(1)] += 1
    return counts


def patiently(method, path, body=None, token=None):
    """A request retried on 503, as a client would (the machine is shared and busy)."""
    for attempt in range(20):
        status, reply = api(method, path, body, **({"token": token} if token else {}))
        if status != 503:
            return status, reply
        time.sleep(0.1 * (attempt + 1))
    return status, reply


def create_and_vend(name):
    status, reply = patiently("POST", "/sequences", {"name": name, "min": 1, "max": 1_000_000})
    if status not in (201, 409):
        sys.exit(f"could not create {name}: {status} {reply}")
    for _ in range(2):
        status, reply = patiently("POST", f"/sequences/{name}/next", token=VEND_TOKEN)
        if status != 200:
            sys.exit(f"next {name}: {status} {reply}")


def settle(expected_remaining):
    """Waits for a usage round that saw every sequence: the gauges' remaining values add up."""
    deadline = time.time() + 300
    while time.time() < deadline:
        text = scrape()
        total = sum(float(line.split()[-1]) for line in text.splitlines()
                    if line.startswith("seqvend_sequence_remaining{"))
        if total == expected_remaining:
            return text
        time.sleep(1)
    sys.exit("the gauges never added up to every sequence")


def count_with(count, start):
    names = [f"s{i:05d}" for i in range(start, count)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(create_and_vend, names))
    text = settle(count * (1_000_000 - 2))
    return families(text), len(text.encode())


def main():
    started = datetime.datetime.now(datetime.timezone.utc)
    with tempfile.TemporaryDirectory(prefix="seqvend-series-") as scratch:
        os.chmod(scratch, 0o755)
        data_dir = Path(scratch) / "data"
        seqvend = Seqvend(data_dir)
        try:
            log("100 sequences")
            small, small_bytes = count_with(100, 0)
            log(f"{MANY} sequences")
            large, large_bytes = count_with(MANY, 100)
            rss = seqvend.rss_kb("VmRSS:")
        finally:
            seqvend.stop()
    per_sequence = sorted(name for name in large if name.startswith("seqvend_sequence_")
                          or name == "seqvend_values_vended_total")
    rows = "\n".join(f"| `{name}` | {small[name]} | {large[name]} |" for name in per_sequence)
    text = f"""## Metric series: 100 against {MANY:,} sequences

`loadtest/series.sh` — {machine()}, {started:%Y-%m-%d}, commit {commit()}. Each sequence
created and vended from; series counted after a usage round saw them all.

| family | 100 sequences | {MANY:,} sequences |
|---|---:|---:|
{rows}
| all series | {sum(small.values())} | {sum(large.values())} |
| scrape size | {small_bytes:,} bytes | {large_bytes:,} bytes |

The per-sequence families keep the 100 most urgent sequences and one `sequence="_other"`
series for the rest; resident memory with {MANY:,} sequences: {rss / 1024:.0f} MiB.
"""
    write_section("series", text)
    print(text)


if __name__ == "__main__":
    main()
