#!/usr/bin/env python3
"""The vend statement for small batches, measured in the database: writes the "vend-statement"
section of docs/performance.md. Started by loadtest/vend_statement.sh.

The same private cluster and the same two databases as loadtest/blocks.py (`before`, migrated as
the baseline commit left the schema, and `after`, migrated from this checkout), with 32
sequences. pgbench sends what a lane sends under load (one request; 32 requests on one
sequence; 32 requests on 32 sequences), prepared as seqvend prepares it, on one connection,
before and after interleaved, each figure the median of the rounds' averages. A batch on one
sequence is sent as the build of each database sends it: `vend_one_sequence()` asked for
directly where its schema has that function (since migration 20261204100000), `vend()` where
it does not. Run twice: with each transaction committed (what seqvend pays, the WAL flush
included) and rolled back (the statement's own work, without the flush, which is most of the
noise on a shared disk).
"""

import datetime
import os
import re
import statistics
import sys

from blocks import before_and_after, publish, run_line, short_commit, table_lines
from run import ROOT, log, pgbench_latency, spread

ROUNDS = int(os.environ.get("VEND_ROUNDS", "5"))
SECONDS = int(os.environ.get("VEND_SECONDS", "4"))
SEQUENCES = 32

# 32 more sequences beside blocks.py's `big`, each with its range, each drawn once (a sequence
# never drawn from has no last value: its first draw is not the common case).
MORE = f"""
INSERT INTO seqvend.sequences (name, namespace, increment)
SELECT 's' || i, 's' || i, 1 FROM generate_series(1, {SEQUENCES}) AS i;
SELECT format('CREATE SEQUENCE seqvend_ranges.r_%s AS bigint MINVALUE 1 MAXVALUE %s', i,
              9000000000000000000) FROM generate_series(1, {SEQUENCES}) AS i \\gexec
INSERT INTO seqvend.ranges (id, sequence_id, namespace, min_value, max_value, start_value,
                            status, pg_sequence)
SELECT 100 + i, s.id, s.namespace, 1, 9000000000000000000, 1, 'active',
       format('seqvend_ranges.r_%s', i)::regclass
  FROM generate_series(1, {SEQUENCES}) AS i JOIN seqvend.sequences s ON s.name = 's' || i;
SELECT * FROM seqvend.vend(ARRAY(SELECT 's' || i FROM generate_series(1, {SEQUENCES}) AS i),
                           array_fill(1, ARRAY[{SEQUENCES}]));
SELECT * FROM seqvend.vend('{{big}}', '{{1}}');
ANALYZE;
"""


def through_vend(requests):
    """A batch of `requests` on `big` through `vend()`."""
    return (f"SELECT * FROM seqvend.vend(array_fill('big'::text, ARRAY[{requests}]), "
            f"array_fill(1, ARRAY[{requests}]));")


def rust_sql(name):
    """The SQL of the string constant `name` in src/vend/statement.rs, as seqvend sends it
    (its line continuations joined), so that what is timed here is what a lane sends."""
    source = (ROOT / "src" / "vend" / "statement.rs").read_text()
    literal = re.search(rf'const {name}: &str =\s*"(.*?)";', source, re.S)
    if not literal:
        sys.exit(f"{name} not found in src/vend/statement.rs")
    return re.sub(r"\\\n\s*", "", literal.group(1))


def one_sequence(requests):
    """The same batch as seqvend sends it since migration 20261204100000:
    VEND_ONE_SEQUENCE_SQL with its parameters written out."""
    counts = f"array_fill(1, ARRAY[{requests}])::int4[]"
    sql = rust_sql("VEND_ONE_SEQUENCE_SQL")
    return sql.replace("$1::text", "'big'::text").replace("$2::int4[]", counts) + ";"


# A batch on several sequences: `vend()` whatever the schema.
MANY_SEQUENCES = (f"SELECT * FROM seqvend.vend(ARRAY(SELECT 's' || i FROM generate_series(1, "
                  f"{SEQUENCES}) AS i), array_fill(1, ARRAY[{SEQUENCES}]));")

# (label, the statement for a schema without vend_one_sequence(), the statement with it).
STATEMENTS = [
    ("one request", through_vend(1), one_sequence(1)),
    (f"{SEQUENCES} requests on one sequence", through_vend(SEQUENCES), one_sequence(SEQUENCES)),
    (f"{SEQUENCES} requests on {SEQUENCES} sequences", MANY_SEQUENCES, MANY_SEQUENCES),
]

HAS_ONE_SEQUENCE = ("SELECT to_regprocedure('seqvend.vend_one_sequence(text, integer[])') "
                    "IS NOT NULL")


def rows(cluster):
    out = []
    direct = {db: cluster.psql(db, HAS_ONE_SEQUENCE) == "t" for db in ("before", "after")}
    for label, *statements in STATEMENTS:
        for ending in ("COMMIT", "ROLLBACK"):
            runs = {"before": [], "after": []}
            for _ in range(ROUNDS):
                for db in ("before", "after"):
                    sql = statements[direct[db]]
                    # pgbench takes the database as its last argument: its -d is --debug.
                    target = cluster.args(db)[:-2] + [db]
                    script = f"BEGIN;\n{sql}\n{ending};"
                    runs[db].append(pgbench_latency(target, script, SECONDS))
            ratio = [b / a for b, a in zip(runs["before"], runs["after"])]
            row = [label, "committed" if ending == "COMMIT" else "rolled back",
                   spread(runs["before"]), spread(runs["after"]),
                   f"{statistics.median(ratio):,.2f}×"]
            out.append(row)
            log(f"{label}, {ending}: {row}")
    return out


def main():
    baseline = short_commit(sys.argv[1])
    started = datetime.datetime.now(datetime.timezone.utc)
    table = before_and_after(baseline, MORE, rows)
    lines = [
        run_line(started, baseline),
        f"- Rerun with `loadtest/vend_statement.sh {baseline}`. pgbench, prepared, one "
        f"connection, {SECONDS} s per run, {ROUNDS} rounds with before and after interleaved; "
        "each figure the median of the rounds' average latency (min–max in brackets).",
        "",
        "| batch | transaction | before, ms | after, ms | before / after |",
        "|---|---|---|---|---|",
    ]
    publish("vend-statement", lines + table_lines(table))


if __name__ == "__main__":
    main()
