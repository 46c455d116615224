#!/usr/bin/env python3
"""The database's work per 1,000 values/s: writes the "db-load" section of docs/scaling.md.
Started by loadtest/db_load.sh, which starts a private PostgreSQL with pg_stat_statements
(DB_LOAD_URL, DB_LOAD_PGDATA, DB_LOAD_PSQL, DB_LOAD_WORK).

Modes, each at a fixed rate of DB_LOAD_RATE (1,000) values/s for DB_LOAD_SECONDS (20):
- strict: k6 constant-arrival `POST /sequences/strict/next` (one value a request);
- cached: the same on a sequence with a server lease cache of DB_LOAD_CACHE (1,000) values;
- client: the client_bench example (seqvend-client's thick cache, its default lease policy)
  paced at the same rate;
- idle: seqvend running with no load, the background every figure is compared with.
Rounds (DB_LOAD_ROUNDS, 3) run every mode once in the same order; the medians are reported.
Read before and after each run: pg_stat_database (xact_commit, all databases),
pg_stat_wal (wal_records, wal_fpi, wal_bytes), pg_stat_statements (calls, reset before each
run, so its top statements are the run's), and PostgreSQL's CPU seconds from /proc: the
postmaster, its live children, and children that exited meanwhile (the postmaster's
cutime/cstime). Each load's figures are scaled to 1,000 values/s, the background included
(subtracting an idle run as noisy as the machine gave negative WAL figures): the idle row is
printed beside them. The machine's other load (its busy cores outside PostgreSQL, seqvend and the load
generator are not told apart) is reported beside them.
"""

import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from doc_section import write_section  # noqa: E402
from run import (BASE, LOADTEST, ROOT, TICK, VEND_TOKEN, Seqvend, api,  # noqa: E402
                 cluster_cpu_seconds, commit, log, machine)

URL = os.environ["DB_LOAD_URL"]
PGDATA = Path(os.environ["DB_LOAD_PGDATA"])
PSQL = os.environ["DB_LOAD_PSQL"]
WORK = Path(os.environ["DB_LOAD_WORK"])
RATE = int(os.environ.get("DB_LOAD_RATE", "1000"))
SECONDS = int(os.environ.get("DB_LOAD_SECONDS", "20"))
ROUNDS = int(os.environ.get("DB_LOAD_ROUNDS", "3"))
CACHE = int(os.environ.get("DB_LOAD_CACHE", "1000"))
K6 = LOADTEST / ".venv" / "bin" / "k6"
CLIENT_BENCH = ROOT / "target" / "release" / "examples" / "client_bench"
MODES = ("strict", "cached", "client", "idle")
LOADS = MODES[:-1]
FIGURES = ("commits", "statements", "wal_records", "wal_kb", "wal_fpi", "cpu_ms")
SNAPSHOT = """SELECT (SELECT sum(xact_commit) FROM pg_stat_database),
    (SELECT coalesce(sum(calls), 0) FROM pg_stat_statements), wal_records, wal_bytes, wal_fpi
FROM pg_stat_wal"""
TOP = """SELECT calls, regexp_replace(left(query, 70), '\\s+', ' ', 'g') FROM pg_stat_statements
WHERE query NOT LIKE '%pg_stat_%' ORDER BY calls DESC LIMIT 3"""


def psql(sql):
    out = subprocess.run([PSQL, "-X", "-At", "-F", "\t", URL, "-c", sql], check=True,
                         capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def machine_busy_seconds():
    """CPU seconds the whole machine spent busy (all cores), from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / TICK


def snapshot():
    commits, statements, records, wal_bytes, fpi = (float(v) for v in psql(SNAPSHOT)[0])
    return {"commits": commits, "statements": statements, "wal_records": records,
            "wal_kb": wal_bytes / 1024, "wal_fpi": fpi, "cpu_ms": cluster_cpu_seconds(PGDATA) * 1000,
            "busy": machine_busy_seconds(), "at": time.monotonic()}


def generate(mode):
    """Runs the load of `mode` for SECONDS; the values it was answered."""
    if mode == "idle":
        time.sleep(SECONDS)
        return 0
    if mode == "client":
        env = dict(os.environ, SEQVEND_URL=BASE, SEQVEND_TOKEN=VEND_TOKEN, SEQUENCE="client",
                   THREADS="1", SECONDS=str(SECONDS), RATE=str(RATE))
        out = subprocess.run([str(CLIENT_BENCH)], env=env, capture_output=True, text=True)
        found = re.search(r"ids=(\d+) .* duplicates=(\d+)", out.stdout.strip().splitlines()[-1])
        if out.returncode or not found or found.group(2) != "0":
            sys.exit(f"client_bench failed:\n{out.stdout}\n{out.stderr}")
        return int(found.group(1))
    summary = WORK / f"k6-{mode}.json"
    env = dict(os.environ, SEQVEND_URL=BASE, SEQVEND_TOKEN=VEND_TOKEN, SEQUENCE=mode,
               RATE=str(RATE), DURATION=f"{SECONDS}s", GOGC="400")
    command = [str(K6), "run", "--quiet", "--no-color", "--summary-export", str(summary),
               str(LOADTEST / "k6" / "g_fixed_rate.js")]
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"k6 on {mode} failed:\n{result.stdout}\n{result.stderr}")
    return int(json.loads(summary.read_text())["metrics"]["http_reqs"]["count"])


def run_once(mode):
    """One run of `mode`: per-second rates of every figure, the values/s, its top statements."""
    psql("SELECT pg_stat_statements_reset()")
    before = snapshot()
    values = generate(mode)
    after = snapshot()
    elapsed = after["at"] - before["at"]
    rates = {k: (after[k] - before[k]) / elapsed for k in FIGURES}
    rates["values"] = values / elapsed
    # Busy cores outside PostgreSQL (seqvend, the load generator, and everyone else's work).
    rates["others"] = (after["busy"] - before["busy"]) / elapsed - rates["cpu_ms"] / 1000
    return rates, psql(TOP)


def measure():
    runs = {mode: [] for mode in MODES}
    tops = {}
    for round_ in range(ROUNDS):
        log(f"round {round_ + 1} of {ROUNDS}: {', '.join(MODES)}, {SECONDS} s each")
        for mode in MODES:
            rates, tops[mode] = run_once(mode)
            runs[mode].append(rates)
    return runs, tops


def median(runs, key):
    return statistics.median(r[key] for r in runs)


def table(runs):
    """Each load's figures scaled to 1,000 values/s (as measured: the background included),
    and the idle run's per second, the background to read them against."""
    head = ("| mode | values/s reached | commits | statements | WAL records | WAL kB | "
            "full-page images | PostgreSQL CPU (ms/s) | other busy cores |")
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for mode in MODES:
        reached = median(runs[mode], "values")
        scale = 1000 / reached if reached else 1
        cells = [f"{median(runs[mode], k) * scale:,.1f}" for k in FIGURES]
        name = mode if reached else "idle (per second, not scaled)"
        lines.append(f"| {name} | {reached:,.0f} | " + " | ".join(cells)
                     + f" | {median(runs[mode], 'others'):.2f} |")
    return lines


def report(runs, tops, load_before, load_after):
    tops_lines = []
    for mode in LOADS:
        shown = "; ".join(f"`{query.strip()}` ×{int(calls):,}" for calls, query in tops[mode])
        tops_lines.append(f"- {mode}: {shown or 'none'}")
    lines = [
        f"- Date: {datetime.date.today().isoformat()}; commit {commit()}; {machine()}; release build;"
        f" PostgreSQL 15 with settings as shipped (pg_stat_statements loaded)",
        f"- {RATE:,} values/s asked for {SECONDS} s per run, {ROUNDS} rounds interleaved, medians;"
        f" cached sequence: `\"cache\": {{\"size\": {CACHE}}}`; client: seqvend-client's default"
        " lease policy, one thread. Rerun with `loadtest/db_load.sh`.",
        f"- Noise: load average {load_before:.1f} before and {load_after:.1f} after (2 cores shared"
        " with other builds and tests); *other busy cores* counts everything but PostgreSQL.",
        "- Figures **per second at 1,000 values/s**, as measured (the background included: read",
        "  them against the idle row, seqvend running with no load): commits",
        "  (`pg_stat_database.xact_commit`), statements (`pg_stat_statements` calls), WAL",
        "  (`pg_stat_wal`), PostgreSQL's CPU (its processes in `/proc`).",
        "",
    ] + table(runs) + ["", "Most frequent statements in the last round:", ""] + tops_lines
    write_section(ROOT / "docs" / "scaling.md", "db-load", lines)


def create(name, cache=None):
    body = {"name": name, "min": 1, "max": 9_000_000_000_000_000_000}
    if cache:
        body["cache"] = {"size": cache}
    status, reply = api("POST", "/sequences", body)
    if status not in (201, 409):
        sys.exit(f"could not create {name}: {status} {reply}")


def main():
    data_dir = WORK / "seqvend"
    data_dir.mkdir()
    server = Seqvend(data_dir, env_extra={"DATABASE_URL": URL}, label="db-load")
    try:
        create("strict")
        create("cached", CACHE)
        create("client")
        load_before = os.getloadavg()[0]
        runs, tops = measure()
        report(runs, tops, load_before, os.getloadavg()[0])
    finally:
        server.stop()


main()
