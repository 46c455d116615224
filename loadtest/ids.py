#!/usr/bin/env python3
"""Time-ordered ids under load: writes loadtest/IDS.md. Started by loadtest/ids.sh.

wrk (-t1 -c64) measures POST /ids/snowflake?count=1000 and POST /ids/uuidv7?count=1000 beside
the no-op GET /healthz, rounds interleaved, medians reported: the machine is shared and noisy,
so the ratio to the no-op route in the same run matters more than absolute numbers.
"""

import datetime
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from run import K6, ROOT, WRK_ROUNDS, WRK_SECONDS, Seqvend, api, commit, interleaved_rounds, k6, log, machine

# Written by loadtest/ids_client.sh's run by hand (a client process, not this script): kept
# when this script rewrites the file.
CLIENT_SECTION = "## seqvend-client's own ids"

ROUTES = [
    ("noop", "/healthz", "get.lua"),
    ("snowflake", "/ids/snowflake?count=1000", "ids.lua"),
    ("uuidv7", "/ids/uuidv7?count=1000", "ids.lua"),
]


def main():
    load_before = os.getloadavg()[0]
    scratch = Path(tempfile.mkdtemp(prefix="seqvend-ids-load-"))
    # The private cluster may run as another user (postgres, when started as root).
    os.chmod(scratch, 0o755)
    try:
        seqvend = Seqvend(scratch / "pg")
        try:
            status, reply = api("POST", "/ids/snowflake?count=1000")
            if status != 200 or len(reply["ids"]) != 1000:
                sys.exit(f"POST /ids/snowflake does not answer: {status} {reply}")
            runs = interleaved_rounds(ROUTES)
            k6_line = None
            if K6.exists():
                log("k6 (f): POST /ids/snowflake and /ids/uuidv7, 100 ids a request")
                passed, summary = k6("f_ids.js", "f_ids", DURATION=f"{WRK_SECONDS}s")
                metrics = summary["metrics"]
                k6_line = (
                    f"k6 `loadtest/k6/f_ids.js` (2,000 req/s of 100 ids, half Snowflake, half UUIDv7, "
                    f"{WRK_SECONDS} s): p99 {metrics['http_req_duration']['p(99)']:.2f} ms, "
                    f"{metrics['http_reqs']['count']:,} requests, thresholds {'met' if passed else 'MISSED'}."
                )
        finally:
            seqvend.stop()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    median = {key: statistics.median(r for r, _ in rs) for key, rs in runs.items()}
    p99 = {key: statistics.median(p for _, p in rs if p is not None) for key, rs in runs.items()}
    noop = median["noop"]
    lines = [
        "# Time-ordered ids under load",
        "",
        f"- Date: {datetime.date.today().isoformat()}",
        f"- Machine: {machine()}",
        f"- Commit: {commit()}",
        "- Setup: seqvend release build (default settings, `RUST_LOG=warn`) and its private",
        "  PostgreSQL on the same machine; wrk on the same cores.",
        f"- wrk: `-t1 -c64`, {WRK_SECONDS} s per run, median of {WRK_ROUNDS} runs, rounds interleaved.",
        f"- Load average (1 min) before the run: {load_before:.1f}, after: {os.getloadavg()[0]:.1f}"
        " (other work on the machine competes for the same cores).",
        "",
        "Rerun with `loadtest/ids.sh`.",
        "",
        "| route | req/s | ids/s | vs no-op (req/s) | p99 ms |",
        "|---|---|---|---|---|",
        f"| no-op `GET /healthz` | {noop:,.0f} | — | 1.00 | {p99['noop']:.2f} |",
    ]
    for key, path, _ in ROUTES[1:]:
        lines.append(
            f"| `POST {path}` | {median[key]:,.0f} | {median[key] * 1000:,.0f} | "
            f"{median[key] / noop:.2f} | {p99[key]:.2f} |"
        )
    lines += [
        "",
        "One instance's ceiling is 4,096 Snowflake ids per millisecond (12 sequence bits), 4.1 M/s;",
        "a batch that fills a millisecond waits for the next, on tokio's 1 ms timer, which rounds",
        "up: some of the worker id's milliseconds go unused. UUIDv7s have no such ceiling, so their",
        "figure beside Snowflake's shows what the HTTP and JSON path itself costs: a Snowflake",
        "answer of 1,000 ids is about 40 KB (each id twice, as a number and as a string).",
    ]
    if k6_line:
        lines += ["", k6_line]
    path = ROOT / "loadtest" / "IDS.md"
    kept = path.read_text().split(CLIENT_SECTION, 1) if path.exists() else []
    if len(kept) == 2:
        lines += ["", CLIENT_SECTION + kept[1].rstrip("\n")]
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
