# Shared by the load-test scripts (sourced after scripts/common.sh, from the repository root).

# build_baseline <commit> [cargo build arguments...]: builds a baseline commit from its own
# checkout (target/baseline-src), with a target directory of its own kept under target/ so
# that a second run builds only seqvend's own crates; the outputs are in
# target/baseline-target/release. The checkout is removed when the calling script exits.
build_baseline() {
    local commit=$1 source_dir=target/baseline-src
    shift
    if [ "$(git -C "$source_dir" rev-parse HEAD 2>/dev/null)" != "$(git rev-parse "$commit^{commit}")" ]; then
        rm -rf "$source_dir"
        git worktree prune
        git worktree add --quiet --detach "$source_dir" "$commit"
    fi
    trap 'git worktree remove --force target/baseline-src' EXIT
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
