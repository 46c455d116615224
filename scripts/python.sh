#!/usr/bin/env bash
# The Python package: builds the abi3 wheel with maturin, installs it into a fresh virtualenv
# (as a user would: no Rust needed there), and runs python/tests with pytest against a real
# seqvend with its own PostgreSQL (the debug server binary, started by the tests' fixture).
#   scripts/python.sh [pytest arguments...]
# The wheel is left in target/wheels/.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$(repo_root)"

ensure_postgres
ensure_python_tools
export SQLX_OFFLINE=true

log "building the server the tests start"
cargo build --locked --bin seqvend

log "building the wheel (maturin, release)"
rm -f target/wheels/seqvend-*.whl
target/python-tools/bin/maturin build --locked --release --quiet \
    --manifest-path python/Cargo.toml --out target/wheels
wheel=$(ls target/wheels/seqvend-*.whl)

log "installing $(basename "$wheel") into a fresh virtualenv"
venv=target/python-test
python3 -m venv --clear "$venv"
# Django for the example's test (the newest release this Python supports).
"$venv/bin/pip" install --quiet "$wheel" pytest==9.2.0 "django>=4.2,<6"

log "pytest python/tests"
# Run from python/tests, so `import seqvend` finds the installed wheel, not the sources.
# The root is taken first: repo_root finds it from this script's path, relative once we move.
root=$PWD
cd python/tests
SEQVEND_BIN="$root/target/debug/seqvend" exec "$root/$venv/bin/pytest" -q "$@"
