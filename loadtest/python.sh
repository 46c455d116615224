#!/usr/bin/env bash
# Benchmarks of the Python package (loadtest/python_bench.py): ids/s from a warm cache with
# 1, 2 and 8 threads beside itertools.count and uuid4, and strict-vend latency beside plain
# requests/httpx POSTs, against a release seqvend with its own PostgreSQL. Prints Markdown.
#   loadtest/python.sh        (ROUNDS, SECONDS, VENDS as in python_bench.py)
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$(repo_root)"

ensure_postgres
ensure_python_tools
export SQLX_OFFLINE=true

cargo build --locked --release --quiet --bin seqvend
rm -f target/wheels/seqvend-*.whl
target/python-tools/bin/maturin build --locked --release --quiet \
    --manifest-path python/Cargo.toml --out target/wheels
venv=target/python-bench
python3 -m venv --clear "$venv"
"$venv/bin/pip" install --quiet target/wheels/seqvend-*.whl pytest==9.2.0 requests==2.34.2 httpx==0.28.1

echo "machine: $(nproc) cores, $(python3 --version), commit $(git rev-parse --short HEAD), $(date -u +%F)"
# Others' work on the machine skews every rate: the load before and after says how much.
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
SEQVEND_BIN=target/release/seqvend "$venv/bin/python" loadtest/python_bench.py
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
