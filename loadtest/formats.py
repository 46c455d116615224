#!/usr/bin/env python3
"""What printing carrier numbers costs the vend path: POST next on a formatted sequence beside
a plain one, in the same run (single values: wrk's 64 connections asking for batches wait
past the vend deadline on two cores). Prints both and the ratio.

Started by loadtest/formats.sh (which builds the release binary). Reuses run.py's process
and wrk helpers; rounds alternate plain and formatted so drift on a shared machine hits both.
"""

import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (the load-test helpers beside this file)

# A 26-digit IMpb label: 11-digit serials, room for every round.
FORMAT = {"kind": "usps_impb", "service_type": "001", "mailer_id": "912345678", "length": 26}


def create(name, fmt=None):
    body = {"name": name, "min": 1, "max": 10**11 - 1}
    if fmt:
        body["format"] = fmt
    status, reply = run.api("POST", "/sequences", body)
    if status != 201:
        sys.exit(f"could not create {name}: {status} {reply}")


def main():
    work = Path(tempfile.mkdtemp(prefix="seqvend-formats-"))
    work.chmod(0o755)
    server = run.Seqvend(work / "pg")
    try:
        create("plain")
        create("label", FORMAT)
        status, reply = run.api("POST", "/sequences/label/next", token=run.VEND_TOKEN)
        if status != 200 or "formatted" not in reply:
            sys.exit(f"the formatted sequence did not print: {status} {reply}")
        results = {}
        for query in ("",):
            rates = {"plain": [], "label": []}
            for _ in range(run.WRK_ROUNDS):
                for name in ("plain", "label"):
                    rate, failures, _ = run.wrk(f"/sequences/{name}/next{query}", "vend.lua")
                    if failures:
                        sys.exit(f"{name}{query}: {failures} responses were not 2xx")
                    rates[name].append(rate)
            results[query] = (statistics.median(rates["plain"]), statistics.median(rates["label"]))
    finally:
        server.stop()
    print(f"machine: {run.machine()}; commit {run.commit()}")
    print(f"wrk -t1 -c64, {run.WRK_SECONDS} s per run, median of {run.WRK_ROUNDS} rounds")
    for query, (plain, label) in results.items():
        what = f"POST next{query or ' (one value)'}"
        print(f"{what}: plain {plain:,.0f} req/s, formatted {label:,.0f} req/s, ratio {label / plain:.3f}")


if __name__ == "__main__":
    main()
