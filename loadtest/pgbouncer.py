#!/usr/bin/env python3
"""Strict vends and counter draws through PgBouncer in transaction mode against straight to
PostgreSQL, in the same run: writes the "pgbouncer" section of docs/performance.md. Started by
loadtest/pgbouncer.sh.

Three seqvend instances on one private cluster, each loaded alone in its turn:
  direct     DATABASE_URL is PostgreSQL: session settings as startup options, the vend
             statement prepared once per connection (the baseline);
  pooled     the same URL with SEQVEND_DATABASE_POOLER=pgbouncer: each vend statement unnamed,
             in a pipelined BEGIN (seqvend's settings) ... COMMIT, each registry statement
             unnamed in a transaction; what the pooled route costs by itself;
  pgbouncer  DATABASE_URL is a PgBouncer 1.18 in transaction mode in front of the cluster
             (scripts/pgbouncer.sh), SEQVEND_DIRECT_DATABASE_URL the cluster.
Routes: POST next on one strict sequence, POST next on one counter key, GET one sequence (a
registry read, through the registry pool). wrk -t1 -c64,
WRK_ROUNDS interleaved rounds of WRK_SECONDS s, medians; the spread of the per-round ratios
says how noisy the shared machine was. PgBouncer's own CPU time is read from /proc.
"""

import datetime
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from run import (ADMIN_TOKEN, PORT, ROOT, Seqvend, api, cluster_url, commit, cpu_seconds, log, machine, wrk,
                 write_section, WRK_ROUNDS, WRK_SECONDS)

INSTANCES = ("direct", "pooled", "pgbouncer")
# The registry pool of each instance: the registry route's 64 connections share it.
ADMIN_POOL = "8"
# (key, label, path, wrk script, token: None for the vend token)
ROUTES = (
    ("strict", "POST next on a strict sequence", "/sequences/bench/next", "vend.lua", None),
    ("counter", "POST next on one counter key", "/families/orders/counters/k1/next", "vend.lua", None),
    # One registry read per request (the registry pool, sqlx): unnamed in a transaction of its
    # own behind a pooler, a cached prepared statement straight to PostgreSQL.
    ("registry", "GET one sequence (a registry read)", "/sequences/bench", "registry_get.lua", ADMIN_TOKEN),
)


def start_pgbouncer(work, url):
    """A PgBouncer in front of `url`; returns (its URL to the same database, its pid file)."""
    out = subprocess.run([str(ROOT / "scripts" / "pgbouncer.sh"), "start", str(work / "pgbouncer"), url],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"PgBouncer did not start:\n{out.stderr}")
    port = out.stdout.strip().splitlines()[-1]
    user = url.split("@", 1)[0]
    return f"{user}@127.0.0.1:{port}/seqvend", work / "pgbouncer" / "pgbouncer.pid"


def setup():
    for body, path in (({"name": "bench", "min": 1, "max": 10**15}, "/sequences"),
                       ({"name": "orders"}, "/families")):
        status, reply = api("POST", path, body)
        if status not in (201, 409):
            sys.exit(f"could not create {body['name']}: {status} {reply}")


def measure(servers, pid_file):
    """{(instance, route): [(req/s, p99 ms), ...]} over interleaved rounds, and PgBouncer's
    CPU seconds and requests during its runs."""
    runs = {(i, r[0]): [] for i in INSTANCES for r in ROUTES}
    bouncer_cpu, bouncer_requests = 0.0, 0
    for round_ in range(WRK_ROUNDS):
        log(f"round {round_ + 1} of {WRK_ROUNDS}")
        for key, _, path, script, token in ROUTES:
            for instance in INSTANCES:
                before = cpu_seconds(pid_file.read_text().strip())
                rate, failures, p99 = wrk(path, script, token=token, base=servers[instance].base)
                if failures and key != "registry":
                    sys.exit(f"wrk {instance} {path}: {failures} responses were not 2xx")
                if failures:
                    # 64 connections on a registry pool of ADMIN_POOL: some wait past the
                    # pool's acquire timeout on a loaded machine and answer 503; counted.
                    log(f"wrk {instance} {path}: {failures} responses were 503")
                if instance == "pgbouncer":
                    bouncer_cpu += cpu_seconds(pid_file.read_text().strip()) - before
                    bouncer_requests += rate * WRK_SECONDS
                runs[(instance, key)].append((rate, p99))
    return runs, bouncer_cpu, bouncer_requests


def ratios(runs, instance, key):
    """The per-round ratios of `instance` to direct on route `key`."""
    return [a[0] / b[0] for a, b in zip(runs[(instance, key)], runs[("direct", key)])]


def render(runs, bouncer_cpu, bouncer_requests):
    median = lambda values: statistics.median(values)
    rows = []
    for key, label, *_ in ROUTES:
        rate = {i: median([r for r, _ in runs[(i, key)]]) for i in INSTANCES}
        p99 = {i: median([p for _, p in runs[(i, key)] if p is not None]) for i in INSTANCES}
        spread = {i: ratios(runs, i, key) for i in ("pooled", "pgbouncer")}
        rows.append(
            f"| {label} | {rate['direct']:,.0f} | {rate['pooled']:,.0f} | {rate['pgbouncer']:,.0f} "
            f"| {median(spread['pooled']):.2f} ({min(spread['pooled']):.2f}–{max(spread['pooled']):.2f}) "
            f"| {median(spread['pgbouncer']):.2f} ({min(spread['pgbouncer']):.2f}–{max(spread['pgbouncer']):.2f}) "
            f"| {p99['direct']:.2f} / {p99['pooled']:.2f} / {p99['pgbouncer']:.2f} |")
    cpu_per_k = bouncer_cpu / bouncer_requests * 1000 * 1000 if bouncer_requests else 0
    today = datetime.date.today().isoformat()
    return f"""
## Through PgBouncer in transaction mode

`loadtest/pgbouncer.sh` — {machine()}, {today}, commit {commit()}. Three seqvend instances on one
PostgreSQL, each loaded alone in its turn (wrk -t1 -c64, {WRK_ROUNDS} interleaved rounds of
{WRK_SECONDS} s, medians; in brackets the lowest and highest per-round ratio, for how noisy the
shared machine was): **direct** (the baseline: startup options, the vend statement prepared once
per connection), **pooled statements** (the same URL with `SEQVEND_DATABASE_POOLER=pgbouncer`: each
vend statement unnamed in a pipelined `BEGIN` … `COMMIT`, each registry statement unnamed in a
transaction of its own, what that costs by itself) and **PgBouncer** (PgBouncer 1.18,
`pool_mode = transaction`, between seqvend's vend and registry pools and the same PostgreSQL).
Each instance's registry pool has {ADMIN_POOL} connections (`SEQVEND_ADMIN_POOL_SIZE`); a registry
request that waited past the pool's acquire timeout on the loaded machine answers 503 (wrk
counts it in the rate; the script logs how many).

| route | direct req/s | pooled statements req/s | PgBouncer req/s | pooled statements × direct | PgBouncer × direct | p99 ms (direct / pooled / PgBouncer) |
|---|---:|---:|---:|---:|---:|---:|
{chr(10).join(rows)}

PgBouncer itself used {cpu_per_k:.1f} ms of CPU per 1,000 requests during its runs (it shares the
two cores with PostgreSQL, seqvend and wrk). What seqvend changes behind a pooler and why:
[pgbouncer.md](pgbouncer.md).
"""


def ports_free():
    """Refuses ports something already answers on: its /readyz would pass for ours."""
    for port in range(PORT, PORT + len(INSTANCES)):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                sys.exit(f"port {port} is taken; set LOADTEST_PORT to a free one (three in a row)")


def main():
    ports_free()
    work = Path(tempfile.mkdtemp(prefix="seqvend-pgbouncer-load-"))
    os.chmod(work, 0o755)
    data_dir = work / "pg"
    log(f"starting the direct instance, data in {data_dir}")
    admin_pool = {"SEQVEND_ADMIN_POOL_SIZE": ADMIN_POOL}
    servers = {"direct": Seqvend(data_dir, label="direct", env_extra=admin_pool)}
    try:
        url = cluster_url(data_dir)
        bouncer_url, pid_file = start_pgbouncer(work, url)
        servers["pooled"] = Seqvend(data_dir, port=PORT + 1, label="pooled", env_extra={
            "DATABASE_URL": url, "SEQVEND_DATABASE_POOLER": "pgbouncer", **admin_pool})
        servers["pgbouncer"] = Seqvend(data_dir, port=PORT + 2, label="pgbouncer", env_extra={
            "DATABASE_URL": bouncer_url, "SEQVEND_DIRECT_DATABASE_URL": url, **admin_pool})
        setup()
        runs, bouncer_cpu, bouncer_requests = measure(servers, pid_file)
    finally:
        for server in reversed(list(servers.values())):
            server.stop()
        subprocess.run([str(ROOT / "scripts" / "pgbouncer.sh"), "stop", str(work / "pgbouncer")])
    text = render(runs, bouncer_cpu, bouncer_requests)
    write_section("pgbouncer", text)
    print(text)


if __name__ == "__main__":
    main()
