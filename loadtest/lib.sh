# Shared by the load-test scripts (sourced after scripts/common.sh, from the repository root).

# build_baseline <commit> [cargo build arguments...]: builds a baseline commit from its own
# checkout (target/baseline-src, a detached git worktree), with a target directory of its own
# (target/baseline-target, where the outputs are). Both are kept for the next run: a new
# checkout would give every file a new time and make cargo build seqvend's own crates again.
# Build the same packages each time: another selection resolves other features and rebuilds
# dependencies.
build_baseline() {
    local commit=$1 source_dir=target/baseline-src
    shift
    if [ "$(git -C "$source_dir" rev-parse HEAD 2>/dev/null)" != "$(git rev-parse "$commit^{commit}")" ]; then
        rm -rf "$source_dir"
        git worktree prune
        git worktree add --quiet --detach "$source_dir" "$commit"
    fi
    (cd "$source_dir" && SQLX_OFFLINE=true CARGO_TARGET_DIR=../baseline-target \
        cargo build --release --quiet "$@")
}

# What the wrk and k6 load tests need: PostgreSQL's server (for seqvend's private cluster),
# wrk and k6.
ensure_load_tools() {
    ensure_postgres
    command -v wrk >/dev/null || apt_install wrk
    ensure_k6
}
