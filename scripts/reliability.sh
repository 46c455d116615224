#!/usr/bin/env bash
# Reruns the Patroni scenarios (tests/patroni), the PgBouncer suite (tests/pgbouncer: restart and
# PAUSE/RESUME under load, durability through the pooler) and the fault-injection suite
# (tests/faults), and writes the Patroni and fault figures into docs/reliability.md: the blocks between the `section:figures` and
# `section:patroni` markers are replaced, the rest of the page is kept.
# `scripts/reliability.sh patroni` reruns the Patroni scenarios alone.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$(repo_root)"
ensure_postgres
export SQLX_OFFLINE=true
out=$(mktemp -d /tmp/seqvend-reliability.XXXXXX)
chmod 755 "$out"
trap 'rm -rf "$out"' EXIT

# Patroni: etcd and three nodes from Debian packages (scripts/patroni.sh), ~5 minutes.
ensure_patroni
SEQVEND_RELIABILITY_DIR="$out" cargo test --release --locked --test patroni
python3 scripts/patroni/report.py "$out" release
[ "${1:-}" = patroni ] && exit 0

# PgBouncer 1.18 in transaction mode in front of the vend and registry pools, ~1 minute.
ensure_pgbouncer
cargo test --release --locked --test pgbouncer

ensure_schemathesis
# The client processes of the caching scenarios are the client crate's examples, found beside
# the test binary.
cargo build --release --locked -p seqvend-client --examples
SEQVEND_RELIABILITY_DIR="$out" cargo test --release --locked --test faults
python3 - "$out" <<'PY'
import datetime, json, os, pathlib, re, subprocess, sys
# In scenario order: 1, 2, …, 10, 11 (the number before the first dash), not as strings sort.
files = sorted(pathlib.Path(sys.argv[1]).glob("*.json"), key=lambda p: (int(p.name.split("-")[0].rstrip("ab") or 0), p.name))
rows = [json.loads(p.read_text()) for p in files]
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
lines = [
    f"- Date: {datetime.date.today().isoformat()}; commit {commit}; {os.cpu_count()} cores ({cpu})",
    "- Rerun with `scripts/reliability.sh` (the same suite runs in CI as `cargo test --test faults`).",
    "- Every scenario runs real `seqvend serve` processes against a real PostgreSQL 15 started by the",
    "  harness, under load from 24–30 clients mixing single vends and batches of 2–40; one client in four",
    "  gives up after 1–5 ms, cancelling its request mid-flight. Clients record every value they are given.",
    "- *Gaps* are values drawn from the ranges that no client received: drawn for a request whose client",
    "  had given up, or drawn by a statement in flight when seqvend or PostgreSQL died. They are never",
    "  vended again; they are the price of never vending twice.",
    "- Scenarios 10 and 11 are about cached sequences: their clients are patient (a request given up",
    "  on after its values left an instance's memory would be a gap no cache size bounds), and in 11",
    "  two more processes use the thick client (`seqvend-client`), their values recorded with the time",
    "  each was handed out.",
    "- Scenario 12 is about Snowflake ids, which come from no range: nothing is counted as vended or",
    "  as a gap; its notes say how many ids came from where, all checked unique and increasing per holder.",
    "- Scenario 13 is about counter families: values are checked per key (two counters hand out the same",
    "  values, one never twice), and its gaps are values a counter's `drawn` covers that no client received.",
    "- Scenario 4 (cancellation) runs inside 1, 2, 3 and 6: the impatient clients, and in 2 a range lock",
    "  held past seqvend's statement timeout. Property tests of name parsing and identifier quoting",
    "  (proptest, 4,000 cases each) run with the unit tests.",
    "",
    "| scenario | faults injected | values vended | duplicates | outside range | gaps | requests ok / 503 / given up | notes |",
    "|---|---|---|---|---|---|---|---|",
]
for r in rows:
    if "vended" not in r:
        lines.append(f"| {r['scenario']} | {r['faults']} | — | — | — | — | — | {r['notes']} |")
        continue
    lines.append(
        f"| {r['scenario']} | {r['faults']} | {r['vended']:,} | {r['duplicates']} | {r['out_of_range']} | "
        f"{int(r['gaps']):,} | {r['requests_ok']:,} / {r['requests_unavailable']:,} / {r['requests_cancelled']:,} | {r['notes']} |"
    )
sys.path.insert(0, "scripts")
from doc_section import write_section
write_section("docs/reliability.md", "figures", lines)
PY
