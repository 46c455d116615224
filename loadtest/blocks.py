#!/usr/bin/env python3
"""Blocks in constant time, measured in the database: writes the "blocks" section of
docs/performance.md. Started by loadtest/blocks.sh.

One private PostgreSQL cluster, two databases: `before`, migrated as the baseline commit left
the schema (its migrations, read with git), and `after`, migrated from this checkout. The same
statements run on both with pgbench, rounds interleaved, each figure the median of the rounds'
averages (min–max beside it): a lease of 100,000 values and of 1,000, a vend of 1,000 values on
one connection and on 16 at once, and the WAL each writes. Then the ways of drawing a block that
were weighed (docs/design.md, "Blocks in constant time"), on bare sequences: time, WAL, catalog
rows written and whether the sequence got a new file.
"""

import datetime
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from run import commit, log, machine, pg_bindir, spread, write_section

ROUNDS = int(os.environ.get("BLOCKS_ROUNDS", "5"))
SECONDS = int(os.environ.get("BLOCKS_SECONDS", "5"))
BIN = pg_bindir()

REGISTRY = """
CREATE SCHEMA IF NOT EXISTS seqvend_ranges;
INSERT INTO seqvend.sequences (name, namespace, increment) VALUES ('big', 'big', 1);
CREATE SEQUENCE seqvend_ranges.r1 AS bigint INCREMENT 1 MINVALUE 1
    MAXVALUE 9000000000000000000 START 1 CACHE 1 NO CYCLE;
INSERT INTO seqvend.ranges (id, sequence_id, namespace, min_value, max_value, start_value,
                            status, pg_sequence)
SELECT 1, id, 'big', 1, 9000000000000000000, 1, 'active', 'seqvend_ranges.r1'
  FROM seqvend.sequences WHERE name = 'big';
"""

# What seqvend sends in each: the same statements before and after (lease() answers runs
# after, every value before).
LEASE = "SELECT * FROM seqvend.lease('big', {n}, 'client', 'load', interval '1 min');"
VEND = "SELECT * FROM seqvend.vend('{big}', '{1000}');"
STATEMENTS = [
    ("lease of 100,000 values", 1, LEASE.format(n=100000)),
    ("lease of 1,000 values", 1, LEASE.format(n=1000)),
    ("vend of 1,000 values", 1, VEND),
    ("vend of 1,000 values, 16 connections", 16, VEND),
    # What seqvend sends for 16 concurrent requests of 1,000: its lane coalesces them.
    ("vend of 16 × 1,000 values in one statement", 1,
     "SELECT * FROM seqvend.vend(array_fill('big'::text, ARRAY[16]), array_fill(1000, ARRAY[16]));"),
]

# The ways of drawing a block of n values from sequence s that were weighed, each with the
# mark update and commit a vend pays.
ALTERNATIVES_SQL = """
CREATE FUNCTION per_value(s regclass, n int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v bigint[];
BEGIN v := ARRAY(SELECT nextval(s) FROM generate_series(1, n)); RETURN v[n]; END $$;
CREATE FUNCTION increment_by(s regclass, n int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v bigint;
BEGIN
    EXECUTE format('ALTER SEQUENCE %s INCREMENT BY %s', s, n);
    v := nextval(s);
    EXECUTE format('ALTER SEQUENCE %s INCREMENT BY 1', s);
    RETURN v;
END $$;
CREATE FUNCTION owner_to_lock_setval(s regclass, n int) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER SEQUENCE %s OWNER TO %s', s,
                   (SELECT relowner::regrole::text FROM pg_class WHERE oid = s));
    RETURN setval(s, pg_sequence_last_value(s) + n);
END $$;
CREATE FUNCTION owned_by_lock_setval(s regclass, n int) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER SEQUENCE %s OWNED BY NONE', s);
    RETURN setval(s, pg_sequence_last_value(s) + n);
END $$;
CREATE FUNCTION no_cycle_lock_setval(s regclass, n int) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER SEQUENCE %s NO CYCLE', s);
    RETURN setval(s, pg_sequence_last_value(s) + n);
END $$;
CREATE TABLE marks (id int PRIMARY KEY, m bigint);
INSERT INTO marks VALUES (1, 0);
"""
ALTERNATIVES = ["per_value", "increment_by", "owner_to_lock_setval", "owned_by_lock_setval",
                "no_cycle_lock_setval"]
# Catalog rows written: the catalogs an ALTER SEQUENCE may touch.
CATALOG_WRITES = """
SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_sys_tables
 WHERE relname IN ('pg_class', 'pg_sequence', 'pg_depend', 'pg_shdepend')
"""

class Cluster:
    def __init__(self, root):
        self.root = root
        self.data = root / "data"
        as_pg = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        self.as_pg = as_pg
        if os.getuid() == 0:
            subprocess.run(["chown", "postgres", str(root)], check=True)
        subprocess.run(as_pg + [str(BIN / "initdb"), "-D", str(self.data), "-U", "seqvend",
                                "--auth=trust", "--no-locale", "-E", "UTF8"],
                       check=True, capture_output=True)
        self.port = str(40000 + os.getpid() % 20000)
        started = subprocess.run(as_pg + [str(BIN / "pg_ctl"), "-D", str(self.data), "-l",
                                          str(root / "log"), "-w", "-o",
                                          f"-c listen_addresses= -c unix_socket_directories={root} "
                                          f"-c port={self.port} -c shared_buffers=256MB", "start"],
                                 capture_output=True, text=True)
        if started.returncode != 0:
            sys.exit(f"PostgreSQL did not start: {started.stdout} {started.stderr}")

    def args(self, db):
        return ["-h", str(self.root), "-p", self.port, "-U", "seqvend", "-d", db]

    def psql(self, db, sql):
        done = subprocess.run([str(BIN / "psql"), "-X", "-qAt", "-v", "ON_ERROR_STOP=1"]
                              + self.args(db), input=sql, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"psql failed on {db}: {done.stderr}")
        return done.stdout.strip()

    def pgbench(self, db, sql, clients, seconds):
        """Average latency (ms), transactions per second and WAL bytes per transaction."""
        script = self.root / "statement.sql"
        script.write_text(sql + "\n")
        before = self.psql(db, "SELECT pg_current_wal_insert_lsn()")
        done = subprocess.run([str(BIN / "pgbench"), "-n", "-c", str(clients), "-j", "1",
                               "-T", str(seconds), "-f", str(script)] + self.args(db)[:-2]
                              + [db], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"pgbench failed on {db}: {done.stderr}")
        out = done.stdout
        latency = float(out.split("latency average = ")[1].split()[0])
        tps = float(out.split("tps = ")[1].split()[0])
        count = int(out.split("number of transactions actually processed: ")[1].split()[0])
        wal = self.psql(db, f"SELECT pg_current_wal_insert_lsn() - '{before}'::pg_lsn")
        return latency, tps, float(wal) / max(count, 1)

    def stop(self):
        subprocess.run(self.as_pg + [str(BIN / "pg_ctl"), "-D", str(self.data), "-m",
                                     "immediate", "stop"], capture_output=True)


def migrate(cluster, db, migrations):
    cluster.psql("postgres", f"CREATE DATABASE {db}")
    cluster.psql(db, "CREATE SCHEMA seqvend")
    # Each in a transaction of its own, as seqvend's migrator runs them.
    for name, text in migrations:
        cluster.psql(db, "BEGIN;\nSET LOCAL search_path = seqvend;\n" + text + "\nCOMMIT;")
    cluster.psql(db, REGISTRY)


def baseline_migrations(baseline):
    names = subprocess.run(["git", "ls-tree", "--name-only", f"{baseline}:migrations"],
                           capture_output=True, text=True, check=True).stdout.split()
    return [(n, subprocess.run(["git", "show", f"{baseline}:migrations/{n}"], capture_output=True,
                               text=True, check=True).stdout) for n in sorted(names)]


def current_migrations():
    return [(p.name, p.read_text()) for p in sorted(Path("migrations").glob("*.sql"))]


def short_commit(ref):
    return subprocess.run(["git", "rev-parse", "--short", ref], capture_output=True, text=True,
                          check=True).stdout.strip()


def before_and_after(baseline, prepare_sql, measure):
    """`measure(cluster)` on a private cluster whose databases `before` (migrated as `baseline`
    left the schema) and `after` (migrated from this checkout) were each given `prepare_sql`;
    returns what it returns. The cluster is removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix=f"seqvend-{Path(sys.argv[0]).stem}-"))
    os.chmod(root, 0o755)
    cluster = Cluster(root)
    try:
        for db, migrations in (("before", baseline_migrations(baseline)),
                               ("after", current_migrations())):
            migrate(cluster, db, migrations)
            if prepare_sql:
                cluster.psql(db, prepare_sql)
        return measure(cluster)
    finally:
        cluster.stop()
        subprocess.run(["rm", "-rf", str(root)])


def run_line(started, baseline):
    """The first line of a section: when, which commits, on what."""
    return (f"- Date: {started:%Y-%m-%d}; commit {commit()} against {baseline}; {machine()}; "
            f"PostgreSQL {BIN.parent.name}")


def publish(section, lines):
    """Writes `lines` as the section `section` of docs/performance.md, and prints them."""
    text = "\n".join(lines)
    write_section(section, text)
    print(text)


def table_lines(rows):
    return ["| " + " | ".join(r) + " |" for r in rows]


def statement_rows(cluster):
    rows = []
    for label, clients, sql in STATEMENTS:
        runs = {"before": [], "after": []}
        for _ in range(ROUNDS):
            for db in ("before", "after"):
                runs[db].append(cluster.pgbench(db, sql, clients, SECONDS))
        row = [label]
        for db in ("before", "after"):
            row.append(spread([r[0] for r in runs[db]]))
        ratio = [b[0] / a[0] for b, a in zip(runs["before"], runs["after"])]
        row.append(f"{statistics.median(ratio):,.1f}×")
        row.extend(f"{statistics.median([r[2] for r in runs[db]]):,.0f}" for db in ("before", "after"))
        if "vend" in label:
            per_statement = 16000 if "16 ×" in label else 1000
            values = {db: statistics.median([r[1] * per_statement for r in runs[db]]) / 1e6
                      for db in ("before", "after")}
            row[0] += (f" ({values['before']:,.2f} → {values['after']:,.2f} M values/s)")
        rows.append(row)
        log(f"{label}: {row}")
    return rows


def catalog_effects(cluster, way):
    """Catalog rows written per draw, and whether the sequence got a new file, over 20 draws."""
    seq = f"c_{way}"
    cluster.psql("weighed", f"CREATE SEQUENCE {seq}; SELECT nextval('{seq}');")
    node = f"SELECT relfilenode FROM pg_class WHERE relname = '{seq}'"
    before_node = cluster.psql("weighed", node)
    before = int(cluster.psql("weighed", CATALOG_WRITES))
    # One session, one draw per transaction; its statistics are flushed when it ends.
    cluster.psql("weighed", "".join(f"SELECT {way}('{seq}', 1000);\n" for _ in range(20)))
    after = int(cluster.psql("weighed", "SELECT pg_sleep(1.1);" + CATALOG_WRITES))
    return (after - before) / 20, cluster.psql("weighed", node) != before_node


def alternative_rows(cluster):
    cluster.psql("postgres", "CREATE DATABASE weighed")
    cluster.psql("weighed", ALTERNATIVES_SQL)
    for way in ALTERNATIVES:
        cluster.psql("weighed", f"CREATE SEQUENCE s_{way}; SELECT nextval('s_{way}');")
    effects = {way: catalog_effects(cluster, way) for way in ALTERNATIVES}
    rows = []
    for n in (1000, 100000):
        runs = {way: [] for way in ALTERNATIVES}
        for _ in range(ROUNDS):
            for way in ALTERNATIVES:
                sql = (f"BEGIN;\nSELECT {way}('s_{way}', {n});\n"
                       "UPDATE marks SET m = m + 1 WHERE id = 1;\nCOMMIT;")
                runs[way].append(cluster.pgbench("weighed", sql, 1, max(2, SECONDS // 2)))
        for way in ALTERNATIVES:
            writes, new_file = effects[way]
            rows.append([f"`{way}`", f"{n:,}", spread([r[0] for r in runs[way]]),
                         f"{statistics.median([r[2] for r in runs[way]]):,.0f}",
                         f"{writes:g}", "yes" if new_file else "no"])
    return rows


def main():
    baseline = short_commit(sys.argv[1])
    started = datetime.datetime.now(datetime.timezone.utc)
    rows, weighed = before_and_after(
        baseline, None, lambda cluster: (statement_rows(cluster), alternative_rows(cluster)))
    lines = [
        run_line(started, baseline),
        f"- Rerun with `loadtest/blocks.sh {baseline}`. pgbench, {SECONDS} s per run, {ROUNDS} "
        "rounds with before and after interleaved; each figure the median of the rounds' "
        "average latency (min–max of the rounds in brackets), commit included "
        "(synchronous_commit on); WAL is bytes written per statement.",
        "",
        "| statement | before, ms | after, ms | before / after | WAL before | WAL after |",
        "|---|---|---|---|---|---|",
    ]
    lines += table_lines(rows)
    lines += [
        "",
        "The ways of drawing a block that were weighed, on bare sequences (the function, a mark "
        "update and the commit; see docs/design.md, \"Blocks in constant time\"):",
        "",
        "| way | block | ms | WAL bytes | catalog rows written per draw | new file |",
        "|---|---|---|---|---|---|",
    ]
    lines += table_lines(weighed)
    publish("blocks", lines)


if __name__ == "__main__":
    main()
