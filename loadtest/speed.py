#!/usr/bin/env python3
"""Every row of the speed table, this build beside a baseline build in the same run: writes the
"speed" section of loadtest/RESULTS.md. Started by loadtest/speed.sh, which builds both.

Both builds run at once, each with its own private PostgreSQL on its own port; while one is
measured, the other's seqvend and floor server are paused (SIGSTOP), so that its background work
(a usage round reads every sequence every 10 s: about a tenth of a core with 10,000 sequences)
does not fall on the build being measured. The goals are set for a quiet machine; the measured
build's own background work stays in its figures. Every measurement runs ROUNDS (3) times per
build, the builds taking turns (A B, B A, A B), and each row is the median over the rounds of a
figure taken beside its own baseline in the same round (strict vends ÷ the no-op route measured
just before them, on the same build): the machine may be shared, so the spread of the rounds,
the load average and the share of the cores that other processes used (and the hypervisor
stole) are written beside the table, and the run is called quiet or noisy, with the reason. A
measurement a build cannot run (an endpoint it lacks) is reported as such, and the others go
on.

Beside each build runs the floor of strict vends (examples/floor.rs, built from this checkout)
on the build's own PostgreSQL: its routes are measured in the same rounds as the build's (wrk
and k6), so rows 1, 7 and 8 can be read against what any server of seqvend's design pays here.

Row 7 is measured first, on a database that holds only its one sequence, as the issue's table
states it. It is measured again at 2,000 req/s after rows 1-6 and 8, as a row without a goal:
by then 10,000 sequences have been drawn from and keyed answers stored, and the checkpoints and
usage rounds that follow are background work that moves the tail (docs/performance.md).

A noisy run (see `Load.noise`) writes its table to target/loadtest/speed-<commit>.md and leaves
RESULTS.md's table of record as it is, unless SPEED_RECORD=1.

SPEED_QUICK=1: short runs and smaller setups (2,000 sequences, 200,000 counter keys), for
trying the script out; their figures go to target/loadtest/speed-quick.md, not to RESULTS.md.
"""

import contextlib
import datetime
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import run
from client import cold_run
from counters import count_keys, create_keys, draw_new_keys
from run import (PORT, ROOT, VEND_TOKEN, Seqvend, analyze, api, cluster_cpu_seconds, commit,
                 cpu_seconds, create_sequence, k6, log, machine, metric, pg_bindir, wrk,
                 write_section)

QUICK = os.environ.get("SPEED_QUICK") == "1"
ROUNDS = int(os.environ.get("SPEED_ROUNDS", "3"))
SECONDS = int(os.environ.get("WRK_SECONDS", "3" if QUICK else "10"))
K6_SECONDS = 3 if QUICK else 10
CLIENT_SECONDS = 3 if QUICK else 10  # the goal is sustained over 10 s
LEASES = 5 if QUICK else 20  # per round and build
SEQUENCES = 2_000 if QUICK else 10_000
COUNTER_KEYS = 200_000 if QUICK else 1_000_000
NEW_KEY_SECONDS = 2 if QUICK else 5  # 3 rounds stay well under COUNTER_KEYS new keys (~20k a second)
RATES = (2_000, 5_000)
FAMILY = "orders"
BIG = 9_000_000_000_000_000_000
# The floor of strict next (examples/floor.rs), built by speed.sh from this checkout and run
# beside each build, on the build's own PostgreSQL, FLOOR_PORT_OFFSET ports above it.
FLOOR = ROOT / "target" / "release" / "examples" / "floor"
FLOOR_PORT_OFFSET = 10


class Failed(Exception):
    """A measurement that did not complete: its reason goes into the table."""


@dataclass
class Build:
    """One seqvend build under test: its binaries, its server and the figures of its rounds."""

    label: str
    commit: str
    binary: Path
    client_bench: Path
    port: int
    server: Seqvend = None
    floor: subprocess.Popen = None
    rounds: dict = field(default_factory=dict)  # measurement -> [{figure: value}, ...]
    failed: dict = field(default_factory=dict)  # measurement -> reason

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def data_dir(self):
        return run.WORK / self.label / "pg"

    @property
    def pgdata(self):
        """The private cluster's data directory, inside `data_dir`."""
        return self.data_dir / "pgdata"

    @property
    def floor_base(self):
        return f"http://127.0.0.1:{self.port + FLOOR_PORT_OFFSET}"

    def start(self):
        run.BINARY = self.binary
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        self.server = Seqvend(self.data_dir, port=self.port, label=self.label)
        if FLOOR.exists():
            self.floor = start_floor(self.floor_base, self.data_dir)

    def processes(self):
        return [p for p in (self.server and self.server.process, self.floor) if p]

    def stop(self):
        if self.floor:
            self.floor.terminate()
            self.floor.wait()
        if self.server:
            self.server.stop()


def start_floor(base, data_dir):
    """examples/floor.rs on `base`, drawing from the PostgreSQL seqvend keeps in `data_dir`."""
    url = run.cluster_url(data_dir)
    with open(data_dir.parent / "floor.log", "a") as log_file:
        process = subprocess.Popen([str(FLOOR), base.removeprefix("http://"), url],
                                   stdout=log_file, stderr=log_file)
    deadline = time.time() + 30
    while time.time() < deadline:
        if process.poll() is not None:
            sys.exit(f"the floor server exited at start; see {log_file.name}")
        try:
            with urllib.request.urlopen(f"{base}/noop", timeout=1):
                return process
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    sys.exit("the floor server did not answer")


def rate(build, path, script, base=None, **options):
    """wrk's req/s on one route of `build` (or of the server on `base`); every response must
    be a 2xx."""
    req_s, failures, _ = wrk(path, script, seconds=SECONDS, base=base or build.base, **options)
    if failures:
        raise Failed(f"{path}: {failures} responses were not 2xx")
    return req_s


# Each setup runs once per build before its measurement's rounds, each measurement once per
# round: one small function per row (or per rows sharing a baseline).

def sequences(build):
    """One strict, one cached, one for batches and one for leases; SEQUENCES more at random."""
    for name, cache in (("bench", None), ("cached", {"size": 100_000}), ("batch", None),
                        ("lease", None)):
        create_sequence(name, 1, BIG, base=build.base, cache=cache)
    ok, _ = k6("setup_sequences.js", f"setup-{build.label}", base=build.base, SEQUENCES=SEQUENCES)
    if not ok:
        raise Failed(f"creating {SEQUENCES:,} sequences failed")
    analyze(build.data_dir)


def vend_routes(build):
    """Rows 1, 2, 3 and 8: the no-op route, strict, cached and keyed next, next at random; and
    the floor server's four routes, where it runs (its draw at random from the same range
    sequences row 8 draws from)."""
    routes = [("noop", "/healthz", "get.lua"), ("strict", "/sequences/bench/next", "vend.lua"),
              ("cached", "/sequences/cached/next", "vend.lua"),
              ("keyed", "/sequences/bench/next", "vend_keyed.lua"),
              ("random", "/sequences/r00000/next", "vend_random.lua")]
    figures = {key: rate(build, path, script, env={"SEQUENCES": str(SEQUENCES)})
               for key, path, script in routes}
    if build.floor:
        for key, path, script in (("floor_noop", "/noop", "get.lua"),
                                  ("floor_hop", "/hop", "vend.lua"),
                                  ("floor", "/floor", "vend.lua"),
                                  ("floor_random", "/floor/random", "vend.lua")):
            figures[key] = rate(build, path, script, base=build.floor_base)
    return figures


def batches(build):
    """Row 4: POST next?count=1000 with 16 connections."""
    return {"values": 1000 * rate(build, "/sequences/batch/next?count=1000", "vend.lua",
                                  connections=16)}


def lease(build):
    """Row 5: leases of 100,000 values, one after another; the round's median."""
    times = []
    for _ in range(LEASES):
        started = time.perf_counter()
        status, reply = api("POST", "/sequences/lease/leases?count=100000", token=VEND_TOKEN,
                            base=build.base)
        times.append((time.perf_counter() - started) * 1000)
        if status != 200:
            raise Failed(f"lease: {status} {reply}")
    return {"ms": statistics.median(times)}


def client(build):
    """Row 6: seqvend-client from a cold start on a new strict sequence, one thread, default
    policy, at full speed."""
    if not build.client_bench.exists():
        raise Failed(f"no client_bench ({build.client_bench.name})")
    name = f"cold-{len(build.rounds.get('client', []))}"
    create_sequence(name, 1, BIG, base=build.base)
    figures = cold_run(build.client_bench, build.base, name, 1, 0, seconds=CLIENT_SECONDS)
    return {"ids": float(figures["ids_per_second_per_thread"]), "waits": figures["waits_per_second"]}


def one_sequence(build):
    """The strict sequence row 7 draws from, alone in a new database."""
    create_sequence("bench", 1, BIG, base=build.base)


def latency(build, measurement="latency", rates=RATES):
    """Row 7: k6 at a constant arrival rate, the no-op route then strict next, at each rate;
    then the floor server's `POST /floor`, where it runs."""
    figures = {}
    for req_s in rates:
        for target in ("noop", "strict") + (("floor",) if build.floor else ()):
            name = f"{build.label}-{measurement}-{target}-{req_s}-{len(build.rounds.get(measurement, []))}"
            _, summary = k6("a_constant_5000.js", name, base=build.base, RATE=req_s,
                            DURATION=f"{K6_SECONDS}s", TARGET=target, FLOOR_URL=build.floor_base)
            figures[f"{target}_{req_s}"] = metric(summary, "http_req_duration", "p(99)")
            figures[f"{target}_{req_s}_failed"] = metric(summary, "http_req_failed", "value")
    return figures


def latency_after_many(build):
    """Row 7 again, at 2,000 req/s, once rows 1–6 and 8 have run: SEQUENCES sequences drawn
    from at random, keyed answers stored, the checkpoint and usage rounds that follow them."""
    return latency(build, "latency_after_many", rates=RATES[:1])


def family(build):
    status, reply = api("POST", "/families", {"name": FAMILY}, base=build.base)
    if status not in (201, 409):
        raise Failed(f"families: {status} {reply}")


def first_use(build):
    """Row 9, first part: counters drawn for the first time, keys in a scrambled order."""
    before = count_keys(build.data_dir, FAMILY)
    keys, seconds, _, failures = draw_new_keys(build.data_dir, NEW_KEY_SECONDS, base=build.base,
                                               script="counter_new_scrambled.lua", family=FAMILY)
    if failures:
        raise Failed(f"new keys: {failures} responses were not 2xx")
    return {"keys_per_s": (keys - before) / seconds}


def all_keys(build):
    """Draws the rest of the COUNTER_KEYS keys for the first time (not timed)."""
    create_keys(build.data_dir, COUNTER_KEYS, base=build.base, script="counter_new_scrambled.lua",
                family=FAMILY)


def draws(build):
    """Row 9, second part: draws on one key, and on a key at random among COUNTER_KEYS."""
    return {"one": rate(build, f"/families/{FAMILY}/counters/order-0000001/next", "vend.lua"),
            "random": rate(build, f"/families/{FAMILY}/counters/any/next", "counter_random.lua")}


# (measurement, its setup or None), in the order they run. Row 7 runs first, on a database
# holding only the sequence it draws from, as the goal was set ("one sequence"); it runs again
# after row 8 has drawn from SEQUENCES sequences, where the background work that follows many
# sequences in use falls in its tail (docs/performance.md, "Background work and the tail").
MEASUREMENTS = [
    ("latency", one_sequence, latency),
    ("vend", sequences, vend_routes),
    ("batches", None, batches),
    ("lease", None, lease),
    ("client", None, client),
    ("latency_after_many", None, latency_after_many),
    ("first_use", family, first_use),
    ("draws", all_keys, draws),
]


class Load:
    """How busy the machine was with other work: the 1-minute load average before, during (at
    every measurement) and after the run, which counts the run's own processes too; and, from
    /proc, the share of the cores that processes other than the run's used, and the share the
    hypervisor stole, between `start` and `finish`."""

    QUIET_SHARE = 0.05  # of the cores, for others and for steal alike
    QUIET_SPREAD = 0.15  # the widest spread of a ratio row's rounds

    def __init__(self):
        self.before = os.getloadavg()[0]
        self.during = []
        self.started = datetime.datetime.now(datetime.timezone.utc)
        # (when, the machine's busy time, steal, the run's own CPU), in seconds
        self.first = self.last = None

    def sample(self):
        self.during.append(os.getloadavg()[0])

    def start(self, builds):
        self.first = (time.monotonic(), *self.cpu(builds))

    def finish(self, builds):
        self.last = (time.monotonic(), *self.cpu(builds))

    @staticmethod
    def cpu(builds):
        """CPU seconds so far: the machine's busy time, the time stolen from it, and the run's
        own processes' (each build's seqvend, floor server and PostgreSQL; this script and what
        it ran and waited for: wrk, k6, pgbench, client_bench). The busy time counts interrupts
        too: where the kernel accounts CPU by ticks (no CONFIG_IRQ_TIME_ACCOUNTING), the time
        a process spends in them, the loopback network's mostly, is also its system time."""
        user, nice, system, _, _, irq, softirq, steal = (
            int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:9])
        own = sum(cpu_seconds(p.pid) for b in builds for p in b.processes())
        own += sum(cluster_cpu_seconds(b.pgdata) for b in builds)
        times = os.times()
        own += times.user + times.system + times.children_user + times.children_system
        return (user + nice + system + irq + softirq) / run.TICK, steal / run.TICK, own

    def shares(self):
        """(others, stolen) as shares of the cores over the run, or None if not measured."""
        if not (self.first and self.last):
            return None
        seconds, busy, steal, own = (b - a for a, b in zip(self.first, self.last))
        capacity = seconds * os.cpu_count()
        return max(busy - own, 0) / capacity, steal / capacity

    def noise(self, widest):
        """What made the run noisy; none for a quiet one: other processes and the hypervisor
        each took under QUIET_SHARE of the cores, and no ratio row's rounds spread by more than
        QUIET_SPREAD. `widest` is (spread, row label) over the ratio rows."""
        reasons = []
        shares = self.shares()
        if shares is None:
            reasons.append("the CPU of other processes was not measured")
        else:
            others, stolen = shares
            if others >= self.QUIET_SHARE:
                reasons.append(f"other processes took {others:.0%} of the cores")
            if stolen >= self.QUIET_SHARE:
                reasons.append(f"the hypervisor stole {stolen:.0%} of them")
        if ROUNDS < 2:
            reasons.append("too few rounds to tell")
        elif widest[0] > self.QUIET_SPREAD:
            label = widest[1] if len(widest[1]) <= 60 else widest[1][:59] + "…"
            reasons.append(f"the rounds of row \"{label}\" spread by {widest[0]:.0%}")
        return reasons

    def verdict(self, widest):
        reasons = self.noise(widest)
        if reasons:
            return f"a noisy run ({'; '.join(reasons)}): read the ratios, not the absolute rates"
        return "a quiet run"

    def text(self):
        during = self.during or [self.before]
        shares = self.shares()
        cpu = "" if shares is None else (
            f"; other processes than the run's used {shares[0]:.1%} of the cores, and the "
            f"hypervisor stole {shares[1]:.1%}")
        return (f"{self.before:.1f} before, {min(during):.1f}–{max(during):.1f} during (median "
                f"{statistics.median(during):.1f}), {os.getloadavg()[0]:.1f} after, on "
                f"{os.cpu_count()} cores, the run's own processes included{cpu}")


def try_step(build, name, step):
    """Runs one setup or measurement; a failure is kept as the reason `build` lacks `name`."""
    try:
        return step(build)
    except Exception as error:  # any failure: the table says why, the other rows go on
        reason = str(error).strip()[:200]
        build.failed[name] = reason if isinstance(error, Failed) else f"{type(error).__name__}: {reason}"
        log(f"{build.label}: {name} failed\n{traceback.format_exc()}")
        return None


@contextlib.contextmanager
def alone(build, builds):
    """`build` the only one running: every other build's seqvend and floor server paused."""
    paused = [p for other in builds if other is not build for p in other.processes()]
    for process in paused:
        process.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        for process in paused:
            process.send_signal(signal.SIGCONT)


def measure(builds, load):
    """Each measurement's setup on every build, then its ROUNDS rounds, the builds taking
    turns (A B, B A, ...)."""
    for name, setup, step in MEASUREMENTS:
        for build in builds:
            if setup and name not in build.failed:
                log(f"{build.label}: setting up {name}")
                try_step(build, name, setup)
        for round_ in range(ROUNDS):
            for build in builds if round_ % 2 == 0 else builds[::-1]:
                if name in build.failed:
                    continue
                log(f"{name}, round {round_ + 1} of {ROUNDS}: {build.label} "
                    f"({minutes(load.started):.1f} min in)")
                with alone(build, builds):
                    load.sample()
                    figures = try_step(build, name, step)
                if figures is not None:
                    build.rounds.setdefault(name, []).append(figures)
                    log(f"  {figures}")


@dataclass
class Row:
    """One row of the table: a figure taken from each round of one measurement."""

    label: str
    measurement: str
    value: object  # one round's figures -> the row's figure
    unit: object  # a figure -> its text
    goal: str
    met: object  # (this build's figure, the baseline's or None) -> bool, or None: no goal
    detail: object = None  # medians of the round's figures -> the figures behind the row


def times(x):
    return f"{x:.2f}×"


def thousands(x):
    return f"{x / 1000:,.1f}k"


def millions(x):
    return f"{x / 1e6:,.2f} M"


def ms(x):
    return f"{x:,.1f} ms"


def per(a, b, unit="req/s"):
    return lambda m: f"{thousands(m[a])} ÷ {thousands(m[b])} {unit}"


def p99_beside_noop(req_s):
    return lambda m: (f"no-op route {ms(m[f'noop_{req_s}'])}; failed "
                      f"{m[f'strict_{req_s}_failed']:.2%}")


def no_worse(this, baseline):
    return None if baseline is None else this >= 0.9 * baseline


NO_WORSE = "≥ 0.9× the baseline build's (no regression)"

ROWS = [
    Row("1. strict `POST next` ÷ no-op `GET /healthz` (wrk -t1 -c64)", "vend",
        lambda f: f["strict"] / f["noop"], times, "≥ 0.55×", lambda v, b: v >= 0.55,
        per("strict", "noop")),
    Row("1. … the floor: `POST /floor` of `examples/floor.rs` (one hop to a lane, one "
        "`nextval` statement per batch, a commit that flushes WAL, nothing checked) ÷ no-op",
        "vend", lambda f: f["floor"] / f["noop"] if "floor" in f else None, times,
        "— (0.55× is 0.95 of the 0.58× measured when the goal was set)", lambda v, b: None,
        per("floor", "noop")),
    Row("1. … strict ÷ that floor", "vend",
        lambda f: f["strict"] / f["floor"] if "floor" in f else None, times, "≥ 0.95×",
        lambda v, b: v >= 0.95, per("strict", "floor")),
    Row("1. … the floor server's own routes ÷ no-op: its bare no-op, its one hop", "vend",
        lambda f: f["floor_noop"] / f["noop"] if "floor_noop" in f else None, times, "—",
        lambda v, b: None,
        lambda m: f"one hop {m['floor_hop'] / m['noop']:.2f}×; {thousands(m['floor_noop'])}, "
                  f"{thousands(m['floor_hop'])} ÷ {thousands(m['noop'])} req/s"),
    Row("2. cached `POST next` ÷ no-op", "vend", lambda f: f["cached"] / f["noop"], times,
        "≥ 0.85×", lambda v, b: v >= 0.85, per("cached", "noop")),
    Row("3. keyed `POST next` (a new `Idempotency-Key` each) ÷ unkeyed strict", "vend",
        lambda f: f["keyed"] / f["strict"], times, "≥ 0.5×", lambda v, b: v >= 0.5,
        per("keyed", "strict")),
    Row("4. `count=1000` batches (wrk -c16), values/s", "batches", lambda f: f["values"],
        millions, "≥ 2 M", lambda v, b: v >= 2e6),
    Row(f"5. lease of 100,000 values (`POST …/leases`), median of {LEASES}", "lease",
        lambda f: f["ms"], ms, "≤ 10 ms", lambda v, b: v <= 10),
    Row(f"6. `seqvend-client`, cold, default policy, full speed: ids/s per thread over "
        f"{CLIENT_SECONDS} s", "client", lambda f: f["ids"], millions, "≥ 10 M",
        lambda v, b: v >= 10e6),
    Row("6. … its waits per second", "client", lambda f: f["waits"], lambda x: f"{x:.1f}",
        "≤ 1", lambda v, b: v <= 1),
    Row("7. k6 constant arrival, strict `next` p99 at 2,000 req/s, one sequence in the "
        "database (measured first)", "latency",
        lambda f: f["strict_2000"], ms, "≤ 5 ms", lambda v, b: v <= 5, p99_beside_noop(2000)),
    Row("7. … at 5,000 req/s", "latency", lambda f: f["strict_5000"], ms,
        "— (beside the no-op route)", lambda v, b: None, p99_beside_noop(5000)),
    Row("7. … the floor's `POST /floor` p99 at 2,000 req/s (5,000 in brackets)", "latency",
        lambda f: f.get("floor_2000"), ms, "—", lambda v, b: None,
        lambda m: f"at 5,000 req/s {ms(m['floor_5000'])}; failed {m['floor_2000_failed']:.2%}"),
    Row(f"7. … strict `next` p99 at 2,000 req/s again after rows 1–6 and 8 ({SEQUENCES:,} "
        "sequences just drawn from, keyed answers stored)", "latency_after_many",
        lambda f: f["strict_2000"], ms, "— (the background work of many sequences in use)",
        lambda v, b: None,
        lambda m: (f"no-op route {ms(m['noop_2000'])}"
                   + (f"; the floor {ms(m['floor_2000'])}" if "floor_2000" in m else "")
                   + f"; failed {m['strict_2000_failed']:.2%}")),
    Row(f"8. `POST next` on a random one of {SEQUENCES:,} sequences ÷ one sequence", "vend",
        lambda f: f["random"] / f["strict"], times, "≥ 0.7×", lambda v, b: v >= 0.7,
        per("random", "strict")),
    Row(f"8. … the floor at random: `POST /floor/random` (one `nextval` on a random one of the same "
        f"{SEQUENCES:,} sequences per request, two lanes, the floor's durable commit) ÷ `POST /floor`",
        "vend", lambda f: f["floor_random"] / f["floor"] if "floor_random" in f else None, times,
        "— (what any server that draws each range from its own sequence keeps)",
        lambda v, b: None, per("floor_random", "floor")),
    Row("9. counters: first use of new keys in a scrambled order (wrk -c128), keys/s",
        "first_use", lambda f: f["keys_per_s"], thousands, NO_WORSE, no_worse),
    Row(f"9. counters: draws at random over {COUNTER_KEYS:,} keys ÷ one key", "draws",
        lambda f: f["random"] / f["one"], times, NO_WORSE, no_worse, per("random", "one")),
]


def row_figure(row, build):
    """(median, min, max) of the row's figure over the build's rounds, or None."""
    values = [row.value(f) for f in build.rounds.get(row.measurement, [])]
    values = [v for v in values if v is not None]
    return (statistics.median(values), min(values), max(values)) if values else None


def cell(row, build):
    figure = row_figure(row, build)
    if figure is None:
        return f"could not run: {build.failed.get(row.measurement, 'no rounds')}"
    median, low, high = figure
    rounds = build.rounds[row.measurement]
    values = {k: [f[k] for f in rounds if f.get(k) is not None] for k in rounds[0]}
    medians = {k: statistics.median(v) for k, v in values.items() if v}
    detail = f"; {row.detail(medians)}" if row.detail and medians.keys() >= values.keys() else ""
    return f"**{row.unit(median)}** (rounds {row.unit(low)}–{row.unit(high)}{detail})"


def verdict(row, this, baseline):
    figure = row_figure(row, this)
    if figure is None:
        return "—"
    base = row_figure(row, baseline) if baseline else None
    met = row.met(figure[0], base[0] if base else None)
    return "—" if met is None else ("yes" if met else "**no**")


def spread(builds):
    """The rounds' spread, (max − min) ÷ median, over every row and build: (largest, median);
    and the widest over the rows that are ratios (a rate beside its same-run baseline, what
    the goals judge; not row 7's tail latencies nor the client's few waits, which spread by
    nature) as (spread, row label)."""
    spreads = [((f[2] - f[1]) / abs(f[0]), row) for row in ROWS for b in builds
               if (f := row_figure(row, b)) and f[0]]
    if not spreads:
        return 0, 0, (0, "")
    ratios = [(x, row.label) for x, row in spreads if row.unit is times]
    return (max(x for x, _ in spreads), statistics.median(x for x, _ in spreads),
            max(ratios, default=(0, "")))


def table(builds):
    this, baseline = builds[-1], (builds[0] if len(builds) > 1 else None)
    head = (f"| row | goal | baseline ({baseline.commit if baseline else 'none'}) | "
            f"this build ({this.commit}) | goal met? |")
    lines = [head, "|---|---|---|---|---|"]
    for row in ROWS:
        before = cell(row, baseline) if baseline else "— (no baseline given)"
        lines.append(f"| {row.label} | {row.goal} | {before} | {cell(row, this)} | "
                     f"{verdict(row, this, baseline)} |")
    return lines


def section(builds, load, started):
    this, baseline = builds[-1], (builds[0] if len(builds) > 1 else None)
    largest, typical, widest = spread(builds)
    against = f"against `{baseline.commit}`" if baseline else "without a baseline build"
    unsupported = [f"- {b.label}: {name} — {reason}" for b in builds for name, reason in b.failed.items()]
    lines = [
        "## Speed, row by row: this build against a baseline build",
        "",
        f"Rerun with `loadtest/speed.sh{' ' + baseline.commit if baseline else ''}`.",
        "",
        f"- Date: {started:%Y-%m-%d %H:%M} UTC; machine: {machine()}; PostgreSQL "
        f"{pg_bindir().parent.name}; the whole run took {minutes(started):.0f} minutes",
        f"- This build: commit {this.commit}, {against}",
        f"- Load average (1 min): {load.text()}. The rounds' spread ((max − min) ÷ median of a "
        f"row's figure) was {typical:.0%} typically and {largest:.0%} at most: "
        f"{load.verdict(widest)}.",
        f"- Method: both builds run at once, each with its own private PostgreSQL; while one is "
        f"measured the other's seqvend and floor server are paused (SIGSTOP); {ROUNDS} round(s) of every measurement, the builds taking turns "
        f"(A B, B A, …); each figure the median over the rounds (a ratio, where the row is one, "
        f"taken within one round and one build; min–max of the rounds in brackets). wrk -t1 -c64 for {SECONDS} s "
        f"unless the row says otherwise; k6 runs of {K6_SECONDS} s.",
        "",
        *table(builds),
    ]
    if unsupported:
        lines += ["", "What a build could not run:", "", *unsupported]
    return "\n".join(lines)


def minutes(started):
    return (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds() / 60


def stride(keys):
    """A step near 0.618 × keys and coprime to it: the scrambled order of first uses."""
    step = int(keys * 0.618) | 1
    while math.gcd(step, keys) != 1:
        step += 2
    return step


def builds_from(args):
    """This build, and the baseline named by speed.sh's arguments (its seqvend, its
    client_bench and its commit), baseline first."""
    port = int(os.environ.get("LOADTEST_PORT", PORT))
    this = Build("this-build", commit(), run.BINARY, ROOT / "target" / "release" / "examples" /
                 "client_bench", port)
    if not args:
        return [this]
    binary, client_bench, label = args
    return [Build("baseline", label, Path(binary), Path(client_bench), port + 1), this]


def main():
    run.WORK = Path(tempfile.mkdtemp(prefix="seqvend-speed-"))
    os.chmod(run.WORK, 0o755)  # the private clusters may run as another user
    os.environ.update(FAMILY=FAMILY, COUNTER_KEYS=str(COUNTER_KEYS), STRIDE=str(stride(COUNTER_KEYS)))
    builds = builds_from(sys.argv[1:])
    started = datetime.datetime.now(datetime.timezone.utc)
    load = Load()
    try:
        for build in builds:
            build.start()
        load.start(builds)
        measure(builds, load)
        load.finish(builds)
    finally:
        for build in builds:
            build.stop()
    text = section(builds, load, started)
    out = ROOT / "target" / "loadtest"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"speed-{builds[-1].commit.split()[0]}.json").write_text(json.dumps(
        {b.label: {"commit": b.commit, "rounds": b.rounds, "failed": b.failed} for b in builds},
        indent=1))
    noisy = load.noise(spread(builds)[2])
    if QUICK:
        text = "**A trial (`SPEED_QUICK=1`): short runs, small setups; not figures to quote.**\n\n" + text
        write_section("speed", text, results=out / "speed-quick.md")
    elif noisy and os.environ.get("SPEED_RECORD") != "1":
        # The goals are set for a quiet machine: a noisy run does not replace the table of
        # record on its own. Whoever ran it reads it and may record it (or describe it).
        kept = out / f"speed-{builds[-1].commit.split()[0]}.md"
        write_section("speed", text, results=kept)
        log(f"a noisy run ({'; '.join(noisy)}): loadtest/RESULTS.md keeps its table; this "
            f"run's is in {kept.relative_to(ROOT)}. SPEED_RECORD=1 records a noisy run.")
    else:
        write_section("speed", text, results=ROOT / "loadtest" / "RESULTS.md")
    print(text)
    log(f"logs in {run.WORK}")
    for build in builds:
        shutil.rmtree(build.data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
