#!/usr/bin/env python3
"""Row 8 of the speed table taken apart: what a draw at random among 10,000 sequences costs
seqvend, beside what it costs the floor (examples/floor.rs) drawing from the same sequences, and
where PostgreSQL's share goes. Started by loadtest/many_sequences.sh, which builds both; writes
the "many-sequences" section of docs/performance.md.

One seqvend and its floor server on one private PostgreSQL holding SEQUENCES sequences created
through the API (as the speed run makes them). Then:

- wrk -t1 -c64 on seqvend's no-op route, strict `next` on one sequence, `next` at random, the
  floor on one sequence and the floor at random, ROUNDS rounds, routes taking turns, each with
  the CPU a request cost the server that answered it and PostgreSQL (from /proc);
- pgbench (prepared, one connection, each statement committed, in the vend pool's session
  settings) on a lane's batch of 17 requests (as under wrk -c64 with two lanes), on 17
  sequences at random and all on one sequence, ROUNDS rounds, statements taking turns: the
  names alone, the floor's draw, the floor's draw with the marks' UPDATE, a draw that reads
  nothing of the registry (Batch.prototype: timed, not built), the same draw reading its
  ranges' rows rather than writing them, as one owner a range would (Batch.owner_draw: timed,
  not built), and what seqvend sends.

The database is a benchmark's: the floor's draws are gaps in its ranges, and the prototype
gives its marks a column seqvend does not have.
"""

import datetime
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

import run
from run import (ROOT, cluster_cpu_seconds, cluster_url, commit, cpu_seconds, log, machine,
                 pg_bindir, pgbench_latency, spread, write_section)
from speed import SECONDS as WRK_SECONDS
from speed import SEQUENCES, Build, rate, sequences

ROUNDS = int(os.environ.get("MANY_ROUNDS", "5"))
SECONDS = int(os.environ.get("MANY_SECONDS", "4"))  # pgbench, per statement and round
REQUESTS = 17

# The vend pool's session settings (src/db/mod.rs: session_settings, VEND_PLANNER_SETTINGS).
SESSION = ("-c enable_seqscan=off -c jit=off -c search_path=seqvend -c synchronous_commit=on "
           "-c lock_timeout=200")

# What the instance would keep in memory for the prototype, in a table here: each name's
# sequence and range ids, its PostgreSQL sequence and bounds, numbered by name (batch, bench,
# cached, lease, then r00000, r00001, …). Looking a row up costs an index probe per request, as
# the floor's statements pay too.
SETUP = """
ALTER TABLE seqvend.range_marks ADD COLUMN IF NOT EXISTS drawable boolean NOT NULL DEFAULT true;
DROP TABLE IF EXISTS public.bench_ranges;
CREATE TABLE public.bench_ranges AS
SELECT (row_number() OVER (ORDER BY s.name) - 1)::int AS i, s.name, s.id AS sequence_id,
       r.id AS range_id, r.pg_sequence, r.min_value, r.max_value
  FROM seqvend.sequences s JOIN seqvend.ranges r ON r.sequence_id = s.id AND r.status = 'active';
CREATE UNIQUE INDEX ON public.bench_ranges (i);
ANALYZE public.bench_ranges;
"""
FIRST_RANDOM = 4  # bench_ranges.i of r00000
BENCH = 1  # bench_ranges.i of bench, the sequence strict `next` draws from


class Batch:
    """A lane's batch of REQUESTS requests, as the statements below name it: `picks`, the
    rows of bench_ranges, one per request; `names`, names drawn the same way, for vend();
    `one`, whether they are all one sequence's (the statement seqvend sends is then `vend_one_sequence()`)."""

    def __init__(self, one):
        self.one = one
        if one:
            self.picks = f"array_fill({BENCH}, ARRAY[{REQUESTS}])"
            self.names = f"array_fill('bench'::text, ARRAY[{REQUESTS}])"
        else:
            self.picks = (f"ARRAY(SELECT {FIRST_RANDOM} + floor(random() * {SEQUENCES})::int "
                          f"FROM generate_series(1, {REQUESTS}))")
            self.names = (f"ARRAY(SELECT 'r' || lpad(floor(random() * {SEQUENCES})::int::text, "
                          f"5, '0') FROM generate_series(1, {REQUESTS}))")

    def asked(self):
        """bench_ranges' row for each request."""
        return f"unnest({self.picks}) AS p(i) JOIN public.bench_ranges b ON b.i = p.i"

    def names_only(self):
        return f"SELECT cardinality({self.names})"

    def floor(self):
        """The floor's draw: nextval per request, a commit that writes WAL and waits for its
        flush (the transaction id and the logical message, as examples/floor.rs)."""
        return f"""
SELECT array_agg(nextval(b.pg_sequence)), pg_current_xact_id()::text,
       pg_logical_emit_message(true, 'seqvend_floor', '')
  FROM {self.asked()}"""

    def floor_marks(self):
        """The same, and each range's mark written (to itself: the UPDATE's cost, nothing
        moved)."""
        return f"""
WITH b AS MATERIALIZED (SELECT b.* FROM {self.asked()}),
     drawn AS MATERIALIZED (SELECT array_agg(nextval(b.pg_sequence)) AS vals FROM b),
     marked AS (UPDATE seqvend.range_marks m SET high_water = m.high_water
                  FROM (SELECT DISTINCT range_id FROM b) AS r
                 WHERE m.range_id = r.range_id RETURNING 1)
SELECT (SELECT vals FROM drawn), (SELECT count(*) FROM marked), pg_current_xact_id()::text"""

    def checked_draw(self):
        """The CTEs that lock, draw and check without reading the registry: the advisory locks
        taken by ids the instance would keep, the values drawn and checked against the bounds
        it would keep (inside, no two alike). Increasing sequences only, as all of the
        benchmark's are."""
        return f"""
WITH ask AS MATERIALIZED (SELECT b.* FROM {self.asked()}),
     locked AS MATERIALIZED (
       SELECT pg_advisory_xact_lock_shared(1398166353, a.sequence_id),
              pg_advisory_xact_lock(1398166087, a.range_id)
         FROM (SELECT DISTINCT name, sequence_id, range_id FROM ask) AS a ORDER BY a.name),
     drawn AS MATERIALIZED (
       SELECT a.range_id, a.min_value, a.max_value, array_agg(nextval(a.pg_sequence)) AS vals
         FROM (SELECT count(*) FROM locked) AS l, ask a
        GROUP BY a.range_id, a.min_value, a.max_value),
     checked AS MATERIALIZED (
       SELECT d.range_id, d.vals, d.vals[1] AS first, d.vals[cardinality(d.vals)] AS last
         FROM drawn d
        WHERE (SELECT bool_and(v BETWEEN d.min_value AND d.max_value)
                      AND count(DISTINCT v) = count(*) FROM unnest(d.vals) AS v))"""

    def prototype(self):
        """A draw that reads nothing of the registry per sequence (`checked_draw`), its marks
        written by an UPDATE whose condition is the check the registry read makes now (the
        range still drawable, the mark below the first value drawn): at read committed an
        UPDATE tests the newest committed row, whatever its snapshot."""
        return f"""{self.checked_draw()},
     marked AS (
       UPDATE seqvend.range_marks m SET high_water = c.last FROM checked c
        WHERE m.range_id = c.range_id AND m.drawable
          AND (m.high_water IS NULL OR m.high_water < c.first)
       RETURNING m.range_id)
SELECT array_agg(c.range_id), sum(cardinality(c.vals)), pg_current_xact_id()::text
  FROM checked c JOIN marked USING (range_id)"""

    def owner_draw(self):
        """The same draw by the one instance that owns each range (docs/design.md, "Rewinds
        caught without a write per draw"): each range's row read under the locks, not written
        (whether it may still be drawn from, and by this instance, within what it reserved;
        the mark's row and test stand in for those columns). The commit still writes WAL and
        waits for its flush: the transaction id and the logical message, as the floor's."""
        return f"""{self.checked_draw()},
     owned AS (
       SELECT c.range_id FROM checked c JOIN seqvend.range_marks m USING (range_id)
        WHERE m.drawable AND (m.high_water IS NULL OR m.high_water < c.first))
SELECT array_agg(c.range_id), sum(cardinality(c.vals)), pg_current_xact_id()::text,
       pg_logical_emit_message(true, 'seqvend_floor', '')
  FROM checked c JOIN owned USING (range_id)"""

    def seqvend(self):
        """What seqvend's lane sends for the batch (its common case)."""
        counts = f"array_fill(1, ARRAY[{REQUESTS}])"
        if self.one:
            return f"SELECT seqvend.vend_one_sequence('bench', {counts})"
        return f"SELECT * FROM seqvend.vend({self.names}, {counts})"


STATEMENTS = [
    ("the names drawn, nothing else", Batch.names_only),
    ("the floor: each request's row found by an index, `nextval`, a durable commit", Batch.floor),
    ("the floor, and the marks' `UPDATE`", Batch.floor_marks),
    ("a draw reading nothing of the registry (timed, not built)", Batch.prototype),
    ("the same, each range's row read rather than written: one owner a range (timed, not built)",
     Batch.owner_draw),
    ("what seqvend sends: `vend()` (`vend_batch`) at random, `vend_one_sequence()` on one",
     Batch.seqvend),
]
BATCHES = [("random", Batch(one=False)), ("one", Batch(one=True))]

ROUTES = [
    ("noop", "/healthz", "get.lua", False),
    ("strict", "/sequences/bench/next", "vend.lua", False),
    ("random", "/sequences/r00000/next", "vend_random.lua", False),
    ("floor", "/floor", "vend.lua", True),
    ("floor_random", "/floor/random", "vend.lua", True),
]


def measured(build, path, script, on_floor):
    """wrk's req/s on one route, and what a request cost in CPU (µs): the server answering
    (seqvend or the floor) and PostgreSQL (every process of the cluster)."""
    server = build.floor if on_floor else build.server.process
    before = cpu_seconds(server.pid), cluster_cpu_seconds(build.pgdata)
    req_s = rate(build, path, script, base=build.floor_base if on_floor else None,
                 env={"SEQUENCES": str(SEQUENCES)})
    after = cpu_seconds(server.pid), cluster_cpu_seconds(build.pgdata)
    per_request = 1e6 / (req_s * WRK_SECONDS)
    return req_s, (after[0] - before[0]) * per_request, (after[1] - before[1]) * per_request


def routes_table(runs):
    lines = ["| route | req/s | ratio | CPU a request, µs: server, PostgreSQL |",
             "|---|---|---|---|"]
    ratios = {"strict": ("noop", "the no-op route"), "random": ("strict", "strict `next`"),
              "floor_random": ("floor", "the floor")}
    labels = {"noop": "seqvend's no-op", "strict": "strict `next`, one sequence",
              "random": f"`next` at random among {SEQUENCES:,}",
              "floor": "the floor, one sequence",
              "floor_random": f"the floor at random among the same {SEQUENCES:,}"}
    for key, *_ in ROUTES:
        rates = [r for r, _, _ in runs[key]]
        ratio = "—"
        if key in ratios:
            other, name = ratios[key]
            per_round = [a / b for a, (b, _, _) in zip(rates, runs[other])]
            ratio = f"{spread(per_round, '×')} {name}"
        server = statistics.median(s for _, s, _ in runs[key])
        postgres = statistics.median(p for _, _, p in runs[key])
        lines.append(f"| {labels[key]} | {statistics.median(rates) / 1000:,.1f}k | {ratio} | "
                     f"{server:,.1f}, {postgres:,.1f} |")
    return "\n".join(lines)


def statements_table(times):
    lines = [f"| statement, {REQUESTS} requests | on {REQUESTS} sequences at random, ms | "
             "all on one sequence, ms |", "|---|---|---|"]
    lines += [f"| {label} | {spread(times[label, 'random'])} | {spread(times[label, 'one'])} |"
              for label, _ in STATEMENTS]
    return "\n".join(lines)


def main():
    run.WORK = Path(tempfile.mkdtemp(prefix="seqvend-many-"))
    os.chmod(run.WORK, 0o755)  # the private cluster may run as another user
    build = Build("many", commit(), run.BINARY, None, int(os.environ.get("LOADTEST_PORT", "18080")))
    started = datetime.datetime.now(datetime.timezone.utc)
    build.start()
    try:
        sequences(build)
        runs = {key: [] for key, *_ in ROUTES}
        for round_ in range(ROUNDS):
            log(f"wrk, round {round_ + 1} of {ROUNDS}")
            for key, path, script, on_floor in ROUTES:
                runs[key].append(measured(build, path, script, on_floor))
        url = cluster_url(build.data_dir)
        subprocess.run([str(pg_bindir() / "psql"), "-q", "-v", "ON_ERROR_STOP=1", "-c", SETUP, url],
                       check=True)
        times = {(label, kind): [] for label, _ in STATEMENTS for kind, _ in BATCHES}
        for round_ in range(ROUNDS + 1):  # the first round only warms every statement up
            log(f"pgbench, round {round_} of {ROUNDS}" if round_ else "pgbench, warming up")
            for kind, batch in BATCHES:
                for label, statement in STATEMENTS:
                    latency = pgbench_latency([url], statement(batch).strip() + ";",
                                              SECONDS, SESSION)
                    if round_:
                        times[label, kind].append(latency)
    finally:
        build.stop()
        shutil.rmtree(build.data_dir, ignore_errors=True)  # a benchmark's database: thrown away
    text = "\n".join([
        f"- Date: {started:%Y-%m-%d}; commit {build.commit}; {machine()}; PostgreSQL 15",
        "- Rerun with `loadtest/many_sequences.sh`. One seqvend and its floor server on one "
        f"private PostgreSQL holding {SEQUENCES:,} sequences made through the API. wrk -t1 -c64 "
        f"for {WRK_SECONDS} s a route, {ROUNDS} rounds with the routes taking turns; pgbench "
        f"prepared, one connection, in the vend pool's session settings, {SECONDS} s a "
        f"statement, {ROUNDS} rounds with the statements taking turns, each statement "
        "committed. Each figure the median of the rounds (min–max in brackets; a ratio taken "
        "within each round). A request's CPU: the user and system time of the server that "
        "answered it (seqvend or the floor) and of every PostgreSQL process over a route's "
        "run, divided by the requests wrk counted; wrk's own is the rest of the two cores.",
        "",
        routes_table(runs),
        "",
        statements_table(times),
    ])
    write_section("many-sequences", text, results=ROOT / "docs" / "performance.md")
    print(text)


if __name__ == "__main__":
    main()
