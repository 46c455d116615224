#!/usr/bin/env python3
"""Writes the Patroni scenarios' figures (the JSON rows tests/patroni leaves in DIR/patroni/)
into docs/reliability.md, between the `section:patroni` markers. Usage: report.py DIR PROFILE"""
import datetime, json, os, pathlib, subprocess, sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from doc_section import write_section  # noqa: E402

DESCRIPTIONS = {
    "Switchover": "`POST /switchover` to the synchronous standby (its answer checked, not an exit code)",
    "LeaderKilled": "SIGKILL of the leader's Patroni and PostgreSQL; Patroni restarted, the node rewinds",
    "LeaderPatroniKilled": "SIGKILL of the leader's Patroni only: its PostgreSQL runs on as an orphan primary",
    "LeaderFrozen": "SIGSTOP of the leader's PostgreSQL until another node leads; its Patroni reset, then SIGCONT",
    "SyncStandbyKilled": "SIGKILL of the synchronous standby's Patroni and PostgreSQL (strict mode)",
    "EtcdStopped": "etcd killed until the leader demotes itself, then started again",
    "LeaderRewindFails": "as LeaderFrozen, but the thawed leader commits a write of its own and its pg_rewind fails: cloned again",
}
KINDS = ["strict", "cached", "keyed", "counter", "snowflake"]


def seconds(ms):
    return "—" if ms is None else f"{ms / 1000:.1f} s"


def row(r):
    slowest = max(r["first_value_ms"].values())
    return (
        f"| {r['scenario']} | {DESCRIPTIONS.get(r['scenario'], '')} | {r['values']:,} | {r['duplicates']} | "
        f"{r['outside']} | {r['lost']} | {seconds(r['new_leader_ms'])} | {seconds(r.get('writes_accepted_ms'))} | "
        f"{seconds(r.get('strict_after_writes_ms'))} | "
        f"{seconds(r['strict_outage_ms'])} | {seconds(slowest)} | {r['unavailable']:,} / {r['other_failures']:,} | "
        f"{r['longest_ms'] / 1000:.3f} s ({r.get('longest_what', '?')}) / {seconds(r['deadline_ms'])} | "
        f"{server_lateness(r)} | {lag(r)} |"
    )


def lag(r):
    return "—" if "harness_lag_ms" not in r else f"{r['harness_lag_ms']} ms"


def server_lateness(r):
    """seqvend's own count of answers ready after their deadline, and the bound all were within."""
    if "server_answers" not in r:
        return "—"
    bound = r["server_lateness_bound_ms"]
    within = "> 1 s" if bound is None else ("0 ms" if bound == 0 else f"≤ {bound:g} ms")
    return f"{r['server_late']:,} of {r['server_answers']:,} ({within})"


def main():
    rows = [json.loads(p.read_text()) for p in sorted(pathlib.Path(sys.argv[1], "patroni").glob("*.json"), key=lambda p: int(p.stem))]
    if not rows:
        sys.exit("no Patroni figures were written")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    versions = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}, ", "patroni", "etcd-server"],
                              capture_output=True, text=True).stdout.strip(", ")
    loads = [r["load_average"] for r in rows if r.get("load_average") is not None]
    load = f"; load average {min(loads):.0f}–{max(loads):.0f} as the scenarios ended" if loads else ""
    lines = [
        f"- Date: {datetime.date.today().isoformat()}; commit {commit}; {os.cpu_count()} cores ({cpu}); "
        f"{sys.argv[2]} build; {versions}; PostgreSQL 15{load}",
        "- Rerun with `scripts/reliability.sh` (CI runs the same scenarios as `cargo test --test patroni`).",
        "- One run, one cluster (`scripts/patroni.sh`: etcd + three nodes, `synchronous_mode_strict`),",
        "  two `seqvend serve` processes on the multi-host URL (`target_session_attrs=read-write`), and",
        "  20 clients drawing all the time: strict and cached vends, keyed vends (a failed one retried with",
        "  its key), counters on 8 keys, Snowflake ids. The scenarios run one after another under that load.",
        "- *Duplicates* and *outside* count over the whole run so far; *lost* counts sequences and counters",
        "  whose registry on the surviving leader is not past a value already acknowledged (it would vend",
        "  it again). *New leader*: from the fault to Patroni's `/primary` answering 200 on another node;",
        "  *takes durable writes*: from the fault to the first commit on that node that waited for a",
        "  synchronous standby and came back (the test's own probe: in strict mode the new leader commits",
        "  only once a standby has attached to it); *first strict value after that*: from then to the",
        "  first strict vend seqvend answered (0 when it came back with the probe's); *strict outage*: the",
        "  longest time without a strict answer; *slowest kind*: from the fault to the first value, of the",
        "  kind that came back last, for a request sent after the fault (cached vends and Snowflake ids",
        "  are served from memory and barely stop). *Longest request*: as the clients timed it, from",
        "  before the request was sent to its answer read, with its kind and how it ended; *late at",
        "  seqvend*: answers seqvend itself had ready after their deadline (counted from the request's",
        "  arrival; `seqvend_http_request_lateness_seconds` of both instances), and the bound all were",
        "  within (a bucket bound of that histogram); *clients' own lag*: the longest a timer of the",
        "  clients' runtime woke late in the scenario (their scheduling, included in their timings).",
        "",
        "| scenario | fault | values | duplicates | outside | lost | new leader | takes durable writes | first strict value after that | strict outage | slowest kind | 503 / other failures | longest request / vend deadline | late at seqvend | clients' own lag |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ] + [row(r) for r in rows]
    write_section("docs/reliability.md", "patroni", lines)


main()
