#!/usr/bin/env bash
# Runs every gate: formatting, clippy with warnings as errors, the offline query data check,
# and all tests (which start their own PostgreSQL clusters). Installs what is missing.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$(repo_root)"

ensure_postgres
# tests/patroni starts etcd and three Patroni nodes (scripts/patroni.sh) as a non-root user.
ensure_patroni
ensure_schemathesis
ensure_promtool
ensure_pgbouncer
ensure_console_test_tools
ensure_rust_tools
export SQLX_OFFLINE=true

log "cargo fmt --check"
cargo fmt --all -- --check

log "cargo clippy -D warnings (every workspace member)"
cargo clippy --locked --workspace --all-targets -- -D warnings

log "cargo sqlx prepare --check (against a scratch PostgreSQL)"
scripts/with-scratch-db.sh cargo sqlx prepare --check

log "schema.sql matches the migrations"
scripts/schema.sh --check

log "every relative link in the Markdown files resolves"
scripts/check-links.py

log "tests (every workspace member)"
# The fault suite runs the client's examples as application processes: built first, as the
# plain binaries `cargo test` does not make of them.
cargo build --locked --workspace --examples
cargo test --locked --workspace --all-targets
cargo test --locked --workspace --doc

log "the Python package: wheel, fresh virtualenv, pytest against a real seqvend"
scripts/python.sh
