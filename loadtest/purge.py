#!/usr/bin/env python3
"""The purge of stored idempotency answers, measured in the database: writes the "purge" section
of docs/performance.md. Started by loadtest/purge.sh.

The same private cluster and the same two databases as loadtest/blocks.py (`before`, migrated as
the baseline commit left the schema, and `after`, migrated from this checkout), each given the
same stored answers: ANSWERS keyed answers of one token in rows of 64 (one vend statement's
keyed requests each), and 1,000 of a second token. By default, what a token keeps under the
default bound plus a minute of keyed vends at full speed. Then the purge seqvend runs every
minute, `seqvend.purge_answers(bound)` (expired answers, then crowded ones), each in a
transaction rolled back so that every run finds the same answers: with a bound nobody is over,
with the first token a slow minute's worth over it, with half its answers beyond it, and with
the default bound. pgbench, one connection, before and after interleaved, each figure the
median of the rounds' averages.
"""

import datetime
import os
import statistics
import subprocess
import sys

from blocks import BIN, before_and_after, publish, run_line, short_commit, spread, table_lines
from run import log

ROUNDS = int(os.environ.get("PURGE_ROUNDS", "3"))
RUNS = int(os.environ.get("PURGE_RUNS", "3"))  # purges per round
# SEQVEND_IDEMPOTENCY_KEYS_PER_TOKEN's default.
DEFAULT_BOUND = 1_000_000
# A minute of keyed vends on one token: at about 330 a second, and at full speed (about 25,600
# a second on a 2-core machine: `loadtest/speed.sh`, row 3).
SLOW_MINUTE = 20_000
FULL_MINUTE = 1_536_000
ANSWERS = int(os.environ.get("PURGE_ANSWERS", str(DEFAULT_BOUND + FULL_MINUTE)))
PER_ROW = 64

# Rows as a vend statement stores them (created a millisecond apart, oldest first).
STORE = f"""
INSERT INTO seqvend.vend_answers (created_at, expires_at, owners, keys, requests, firsts, lasts, vals)
SELECT now() - interval '1 hour' + r * interval '1 ms', now() + interval '1 day',
       array_fill('bootstrap:loaded'::text, ARRAY[{PER_ROW}]),
       ARRAY(SELECT 'order-' || (r * {PER_ROW} + i) FROM generate_series(1, {PER_ROW}) AS i),
       array_fill('next:big:one'::text, ARRAY[{PER_ROW}]),
       ARRAY(SELECT generate_series(1, {PER_ROW})), ARRAY(SELECT generate_series(1, {PER_ROW})),
       ARRAY(SELECT (r * {PER_ROW} + i)::bigint FROM generate_series(1, {PER_ROW}) AS i)
  FROM generate_series(0, {ANSWERS // PER_ROW - 1}) AS r;
INSERT INTO seqvend.vend_answers (created_at, expires_at, owners, keys, requests, firsts, lasts, vals)
SELECT now() - interval '30 minutes' + r * interval '1 ms', now() + interval '1 day',
       '{{bootstrap:calm}}', ARRAY['calm-' || r], '{{next:big:one}}', '{{1}}', '{{1}}', ARRAY[r]
  FROM generate_series(1, 1000) AS r;
VACUUM ANALYZE seqvend.vend_answers;
"""


def cases():
    stored = ANSWERS // PER_ROW * PER_ROW
    slow = min(SLOW_MINUTE, stored // 10)  # a smaller store (a quick try) gets a tenth
    out = [
        (f"{stored + 1_000:,}: nobody over it", stored + 1_000),
        (f"{stored - slow:,}: one token {slow:,} over" +
         (" (a slow minute of keyed vends)" if slow == SLOW_MINUTE else ""), stored - slow),
        (f"{stored // 2:,}: one token {stored - stored // 2:,} over", stored // 2),
    ]
    if stored > DEFAULT_BOUND:
        out.append((f"{DEFAULT_BOUND:,}, the default: one token {stored - DEFAULT_BOUND:,} over",
                    DEFAULT_BOUND))
    return out


def purge_ms(cluster, db, bound):
    """Average time (ms) of the purge with `bound`, rolled back, over RUNS runs."""
    script = cluster.root / "purge.sql"
    script.write_text(f"BEGIN;\nSELECT seqvend.purge_answers({bound});\nROLLBACK;\n")
    done = subprocess.run([str(BIN / "pgbench"), "-n", "-c", "1", "-t", str(RUNS), "-f",
                           str(script)] + cluster.args(db)[:-2] + [db],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"pgbench failed on {db}: {done.stderr}")
    return float(done.stdout.split("latency average = ")[1].split()[0])


def rows(cluster):
    out = []
    for label, bound in cases():
        runs = {"before": [], "after": []}
        for _ in range(ROUNDS):
            for db in ("before", "after"):
                runs[db].append(purge_ms(cluster, db, bound))
        ratio = [b / a for b, a in zip(runs["before"], runs["after"])]
        row = [label, spread(runs["before"]), spread(runs["after"]),
               f"{statistics.median(ratio):,.1f}×"]
        out.append(row)
        log(f"{label}: {row}")
    return out


def main():
    baseline = short_commit(sys.argv[1])
    started = datetime.datetime.now(datetime.timezone.utc)
    table = before_and_after(baseline, STORE, rows)
    lines = [
        run_line(started, baseline),
        f"- Rerun with `loadtest/purge.sh {baseline}`. `seqvend.purge_answers(bound)` rolled "
        f"back, pgbench, one connection, {RUNS} purges per round, {ROUNDS} rounds with before "
        "and after interleaved; each figure the median of the rounds' average (min–max in "
        f"brackets). Stored: {ANSWERS // PER_ROW * PER_ROW:,} answers of one token in rows of "
        f"{PER_ROW}, and 1,000 of another.",
        "",
        "| bound | before, ms | after, ms | before / after |",
        "|---|---|---|---|",
    ]
    publish("purge", lines + table_lines(table))


if __name__ == "__main__":
    main()
