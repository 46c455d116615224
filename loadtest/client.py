#!/usr/bin/env python3
"""seqvend-client from a cold start: writes the "client-cold" section of docs/performance.md.
Started by loadtest/client.sh.

Each run is the client_bench example on a sequence created for it (strict, the default
policy: nothing leased before the first `next`), for CLIENT_SECONDS (10) after that first
value, with 1 and 2 threads, each under the adaptive growth (the default) and the fixed rule
of earlier versions, each at full speed and paced at CLIENT_PACED ids/s per thread
(10,000,000). Rounds are interleaved (each round runs every case once, in the same order),
CLIENT_ROUNDS (3) of them, and the medians are reported with the spread of the rounds: the
machine is shared, and the ratios within a round matter more than the absolute figures.

Every case runs three times: against seqvend, and against the lease_stub example, a stand-in
that answers each lease in a fixed CLIENT_STUB_MS (2) milliseconds whatever its size, as a
lease drawn in constant time would be, once allowing leases up to seqvend's limit
(10,000,000) and once only up to 100,000, as services did before leases were drawn in
constant time (the client falls back to 100,000 at its first refusal). The client runs with
its defaults throughout. The first shows what the service allows; the others what the client
does when the service is not the limit.
"""

import contextlib
import datetime
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from run import (BASE, ROOT, VEND_TOKEN, Seqvend, commit, create_sequence, log, machine,
                 write_section)

CLIENT_BENCH = ROOT / "target" / "release" / "examples" / "client_bench"
LEASE_STUB = ROOT / "target" / "release" / "examples" / "lease_stub"
STUB_MS = int(os.environ.get("CLIENT_STUB_MS", "2"))
SECONDS = float(os.environ.get("CLIENT_SECONDS", "10"))
ROUNDS = int(os.environ.get("CLIENT_ROUNDS", "3"))
PACED = int(os.environ.get("CLIENT_PACED", "10000000"))
THREADS = (1, 2)
GROWTHS = ("fixed", "adaptive")
MODES = ("full", "paced")


SERVICE_LIMIT = 10_000_000
OLDER_LIMIT = 100_000


def bench(target, name, threads, growth, mode):
    """One cold run: its last line as a dict, with waits per second added."""
    url, client_env = target
    rate = PACED * threads if mode == "paced" else 0
    if url == BASE:
        create_sequence(name, 1, 9_000_000_000_000_000_000)
    return cold_run(CLIENT_BENCH, url, name, threads, rate, dict(client_env, GROWTH=growth))


def cold_run(binary, url, name, threads, rate, client_env=None, seconds=SECONDS):
    """client_bench (`binary`) from a cold start on the sequence `name` at `url`, RATE `rate`
    (0: full speed): its last line as a dict, with waits and leases per second added."""
    env = dict(os.environ, **(client_env or {}), SEQVEND_URL=url, SEQVEND_TOKEN=VEND_TOKEN,
               SEQUENCE=name, THREADS=str(threads), SECONDS=str(seconds), RATE=str(rate), WARM="0")
    out = subprocess.run([str(binary)], env=env, capture_output=True, text=True,
                         check=True).stdout
    lines = out.strip().splitlines()
    figures = dict(pair.split("=", 1) for pair in lines[-1].split())
    seconds = next(float(p.split("=")[1]) for p in " ".join(lines).split() if p.startswith("seconds="))
    figures["waits_per_second"] = int(figures["waits"]) / seconds
    figures["leases_per_second"] = int(figures["service_calls"]) / seconds
    return figures


def cases():
    return [(threads, growth, mode) for mode in MODES for threads in THREADS for growth in GROWTHS]


def run_rounds(targets):
    results = {(label, case): [] for label in targets for case in cases()}
    for round_number in range(1, ROUNDS + 1):
        for label, target in targets.items():
            for case in cases():
                threads, growth, mode = case
                name = f"cold-{round_number}-{threads}-{growth}-{mode}"
                log(f"round {round_number}, {label}: {threads} thread(s), {growth}, {mode}")
                results[(label, case)].append(bench(target, name, threads, growth, mode))
    return results


def start_stub(max_count):
    env = dict(os.environ, LEASE_MS=str(STUB_MS), MAX_COUNT=str(max_count))
    stub = subprocess.Popen([str(LEASE_STUB)], env=env, stdout=subprocess.PIPE, text=True)
    return stub, "http://" + stub.stdout.readline().strip()


def median_and_spread(runs, key):
    values = [float(run[key]) for run in runs]
    return statistics.median(values), min(values), max(values)


def row(case, runs):
    threads, growth, mode = case
    ids, ids_low, ids_high = median_and_spread(runs, "ids_per_second_per_thread")
    waits, waits_low, waits_high = median_and_spread(runs, "waits_per_second")
    leases = statistics.median(float(run["leases_per_second"]) for run in runs)
    duplicates = max(int(run["duplicates"]) for run in runs)
    target = "full speed" if mode == "full" else f"{PACED / 1e6:.0f} M/s per thread"
    return (f"| {target} | {threads} | {growth} | **{ids / 1e6:.2f} M** ({ids_low / 1e6:.2f}–{ids_high / 1e6:.2f}) "
            f"| **{waits:.1f}** ({waits_low:.1f}–{waits_high:.1f}) | {leases:.1f} | {duplicates} |")


def ratios(results):
    lines = []
    for mode in MODES:
        for threads in THREADS:
            def med(growth):
                return statistics.median(float(r["ids_per_second_per_thread"])
                                         for r in results[(threads, growth, mode)])
            lines.append(f"- {mode}, {threads} thread(s): adaptive / fixed ids/s = "
                         f"{med('adaptive') / med('fixed'):.2f}")
    return lines


def table(results):
    lines = [
        "| target | threads | growth | ids/s per thread | waits/s | leases/s | duplicates |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [row(case, runs) for case, runs in results.items()]
    return lines + ["", *ratios(results)]


def write(results, load_before, load_after):
    lines = [
        "## Thick client from a cold start (`loadtest/client.sh`)",
        "",
        f"- Date: {datetime.date.today().isoformat()}",
        f"- Machine: {machine()}",
        f"- Commit: {commit()}",
        "- Setup: seqvend release build (default settings) and its private PostgreSQL on the same"
        " machine as the client; each run on a new strict sequence (the client's default policy),"
        f" timed for {SECONDS:.0f} s from its first value; {ROUNDS} interleaved rounds, medians"
        " (spread of the rounds in brackets).",
        f"- Load average (1 min) before the runs: {load_before:.1f}, after: {load_after:.1f}"
        " (the machine is shared with other builds and tests).",
        "",
        "Goal, default policy, cold start: ≥ 10 M ids/s per thread sustained over the 10 s, waits"
        " ≤ 1 per second. Paced runs ask for 10 M ids/s per thread; full-speed runs take as fast as"
        " the client gives (a warm cache gives tens of millions per thread: the leases set the pace).",
    ]
    lines += ["", "### Against seqvend", ""]
    lines += table({case: results[("seqvend", case)] for case in cases()})
    lines += ["", f"### Against a stand-in answering every lease in {STUB_MS} ms (`lease_stub`)", "",
              "No database, no durability: what the client does when leases come back in constant"
              f" time, up to seqvend's limit of {SERVICE_LIMIT:,} values each (the fixed rule"
              " still asks for 100,000 at most).", ""]
    lines += table({case: results[("stub", case)] for case in cases()})
    lines += ["", f"### The same stand-in allowing only {OLDER_LIMIT:,} values a lease", "",
              "As services did before leases were drawn in constant time: the client's first"
              f" larger lease is refused, and it asks for {OLDER_LIMIT:,} at most from then on.", ""]
    lines += table({case: results[("older", case)] for case in cases()})
    lines += ["", "Rerun with `loadtest/client.sh`."]
    section = ["#" + line if line.startswith("#") else line for line in lines]
    write_section("client-cold", "\n".join(section))
    print("\n".join(lines))


def main():
    load_before = os.getloadavg()[0]
    with contextlib.ExitStack() as cleanup:
        scratch = Path(tempfile.mkdtemp(prefix="seqvend-client-load-"))
        cleanup.callback(shutil.rmtree, scratch, ignore_errors=True)
        # The private cluster may run as another user (postgres, when started as root).
        os.chmod(scratch, 0o755)
        stub, stub_url = start_stub(SERVICE_LIMIT)
        cleanup.callback(stub.terminate)
        older, older_url = start_stub(OLDER_LIMIT)
        cleanup.callback(older.terminate)
        seqvend = Seqvend(scratch / "pg")
        cleanup.callback(seqvend.stop)
        targets = {"seqvend": (BASE, {}), "stub": (stub_url, {}), "older": (older_url, {})}
        results = run_rounds(targets)
    write(results, load_before, os.getloadavg()[0])


if __name__ == "__main__":
    main()
