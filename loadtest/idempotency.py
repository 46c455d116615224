#!/usr/bin/env python3
"""Idempotency keys and run-time tokens under load: writes the "idempotency" section of
docs/performance.md. Started by loadtest/idempotency.sh.

wrk (-t1 -c64) over POST next of one strict sequence, rounds interleaved, medians reported:
with the bootstrap vend token and no key (the baseline), with a new Idempotency-Key on every
request, and with a token kept in PostgreSQL (scoped to the sequence) instead of the
bootstrap one; the no-op GET /healthz beside them.
"""

import datetime
import os
import statistics
import sys
import tempfile
from pathlib import Path

from run import (ADMIN_TOKEN, Seqvend, api, commit, create_sequence, interleaved_rounds, log,
                 machine, write_section, WRK_ROUNDS, WRK_SECONDS)


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
    rows = "\n".join(
        f"| {label} | {median[key]:,.0f} | {median[key] / median['plain']:.2f} | "
        f"{median[key] / median['noop']:.2f} | {p99[key]:.2f} |"
        for key, label in [
            ("noop", "GET /healthz (no-op)"),
            ("plain", "POST next, bootstrap token, no key"),
            ("keyed", "POST next with a new Idempotency-Key each"),
            ("db_token", "POST next with a token kept in PostgreSQL"),
        ]
    )
    text = f"""## Idempotency keys and run-time tokens

`loadtest/idempotency.sh` — {machine()}, {started:%Y-%m-%d}, commit {commit()}. wrk -t1 -c64,
{WRK_ROUNDS} interleaved rounds of {WRK_SECONDS} s, medians.

| route | req/s | × no key | × no-op | p99 ms |
|---|---:|---:|---:|---:|
{rows}

A keyed request stores its answer in the vend statement's own transaction (one more row
written per key, no extra round trip). A token kept in PostgreSQL is read once and then
checked from memory (a SHA-256 and a constant-time compare per request).
"""
    write_section("idempotency", text)
    print(text)


if __name__ == "__main__":
    main()
