#!/usr/bin/env bash
# Mutation testing with cargo-mutants: changes the code one small way at a time (see
# .cargo/mutants.toml for where) and checks that some test fails each time. Not part of CI:
# each mutant is a build and a test run. Arguments go to cargo-mutants, e.g.
#   scripts/mutants.sh                        # everything configured
#   scripts/mutants.sh --file src/domain/bounds.rs
# Results: mutants.out/ (caught.txt, missed.txt, timeout.txt, unviable.txt).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$(repo_root)"
ensure_postgres
CARGO_MUTANTS_VERSION=27.0.0
if ! cargo mutants --version 2>/dev/null | grep -q " $CARGO_MUTANTS_VERSION"; then
    log "installing cargo-mutants $CARGO_MUTANTS_VERSION"
    cargo install cargo-mutants --version "$CARGO_MUTANTS_VERSION" --locked --quiet
fi
export SQLX_OFFLINE=true
exec cargo mutants --jobs 1 "$@"
