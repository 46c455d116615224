#!/usr/bin/env python3
"""Idempotency keys and run-time tokens under load: writes the "idempotency" section of
docs/performance.md. Started by loadtest/idempotency.sh.

wrk (-t1 -c64) over POST next of one strict sequence, rounds interleaved, medians reported:
with the bootstrap vend token and no key (the baseline), with a new Idempotency-Key on every
request, and with a token kept in PostgreSQL (scoped to the sequence) instead of the
bootstrap one; the no-op GET /healthz beside them.

Each run keeps its medians in target/loadtest/idempotency-<commit>.json. With
IDEMPOTENCY_BASELINE=<such a file> (a run of an earlier commit), the section also shows that
run's figures beside this one's: a before/after comparison, each with its own same-run ratios.
"""

import datetime
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from run import (ADMIN_TOKEN, ROOT, Seqvend, api, commit, create_sequence, interleaved_rounds,
                 log, machine, write_section, WRK_ROUNDS, WRK_SECONDS)

LABELS = [
    ("noop", "GET /healthz (no-op)"),
    ("plain", "POST next, bootstrap token, no key"),
    ("keyed", "POST next with a new Idempotency-Key each"),
    ("db_token", "POST next with a token kept in PostgreSQL"),
]


def keep(figures):
    """Saves this run's figures for a later run to compare against; returns the file."""
    out = ROOT / "target" / "loadtest" / f"idempotency-{figures['commit'].split()[0]}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=1))
    return out


def before_after(figures):
    """The before/after table, when IDEMPOTENCY_BASELINE names an earlier run's figures."""
    path = os.environ.get("IDEMPOTENCY_BASELINE")
    if not path:
        return ""
    before = json.loads(Path(path).read_text())
    rows = []
    for label, key in [("keyed × no key", "keyed"), ("no key × no-op", "plain")]:
        base = "plain" if key == "keyed" else "noop"
        was = before["median"][key] / before["median"][base]
        now = figures["median"][key] / figures["median"][base]
        rows.append(f"| {label} | {was:.2f} ({before['median'][key]:,.0f} req/s) | "
                    f"{now:.2f} ({figures['median'][key]:,.0f} req/s) |")
    return f"""
Before and after storing a statement's answers in one row (each ratio from its own run;
before: commit {before['commit']}, {before['date']}, {before.get('noise', 'same machine')}):

| ratio | before | after |
|---|---:|---:|
""" + "\n".join(rows) + "\n"


def main():
    started = datetime.datetime.now(datetime.timezone.utc)
    scratch = Path(tempfile.mkdtemp(prefix="seqvend-idempotency-load-"))
    os.chmod(scratch, 0o755)
    seqvend = Seqvend(scratch / "data")
    try:
        create_sequence("labels", 1, 9_000_000_000_000_000_000)
        status, token = api("POST", "/tokens", {"name": "load", "scopes": ["vend:labels"]},
                            token=ADMIN_TOKEN)
        if status != 201:
            sys.exit(f"could not create a token: {status} {token}")
        routes = [
            ("noop", "/healthz", "get.lua"),
            ("plain", "/sequences/labels/next", "vend.lua"),
            ("keyed", "/sequences/labels/next", "vend_keyed.lua"),
            ("db_token", "/sequences/labels/next", "vend.lua", token["token"]),
        ]
        runs = interleaved_rounds(routes)
    finally:
        seqvend.stop()
    median = {key: statistics.median(r for r, _ in rs) for key, rs in runs.items()}
    p99 = {key: statistics.median(p for _, p in rs if p is not None) for key, rs in runs.items()}
    figures = {"commit": commit(), "date": f"{started:%Y-%m-%d}", "median": median,
               "rounds": {key: [r for r, _ in rs] for key, rs in runs.items()},
               "noise": f"load average {os.getloadavg()[0]:.1f} at the end"}
    log(f"figures kept in {keep(figures)}")
    rows = "\n".join(
        f"| {label} | {median[key]:,.0f} | {median[key] / median['plain']:.2f} | "
        f"{median[key] / median['noop']:.2f} | {p99[key]:.2f} |"
        for key, label in LABELS
    )
    spread = ", ".join(f"{key} {min(r)/1000:.1f}–{max(r)/1000:.1f}k"
                       for key, r in figures["rounds"].items())
    text = f"""## Idempotency keys and run-time tokens

`loadtest/idempotency.sh` — {machine()}, {started:%Y-%m-%d}, commit {commit()}. wrk -t1 -c64,
{WRK_ROUNDS} interleaved rounds of {WRK_SECONDS} s, medians (rounds' spread: {spread};
{figures['noise']}, on 2 cores).

| route | req/s | × no key | × no-op | p99 ms |
|---|---:|---:|---:|---:|
{rows}
{before_after(figures)}
A keyed request's answer is stored in the vend statement's own transaction, with the answers
of every other keyed request of that statement: one row per statement
(`seqvend.vend_answers`), its keys found through a GIN index, each key held
by an advisory lock until the commit (see [design.md](design.md#idempotency-keys)). A token
kept in PostgreSQL is read once and then checked from memory (a SHA-256 and a constant-time
compare per request).
"""
    write_section("idempotency", text)
    print(text)


if __name__ == "__main__":
    main()
