#!/usr/bin/env bash
# A Patroni cluster on loopback for seqvend: one etcd member and three PostgreSQL nodes managed
# by Patroni (deploy/patroni/node.yml.template), run as a non-root user, on free high ports —
# the Debian packages' own services may hold the default ones. The tests (tests/patroni) and
# people use the same commands:
#
#   scripts/patroni.sh start DIR        install what is missing, start, wait for a leader and a
#                                       synchronous standby, create the database `seqvend`
#   scripts/patroni.sh stop DIR         stop everything started in DIR and remove DIR
#   scripts/patroni.sh status DIR       the cluster as Patroni's REST API reports it (/cluster)
#   scripts/patroni.sh wait DIR         wait until the cluster is whole again (a leader, every
#                                       node running or streaming, a synchronous standby)
#   scripts/patroni.sh node-start DIR NAME    start Patroni on a node again (after a kill)
#   scripts/patroni.sh etcd-stop DIR / etcd-start DIR    stop (SIGKILL) or start etcd again
#
# DIR holds the data, logs, pids and `cluster.env` (ports, URLs, passwords generated at start).
# It must not be inside a directory the non-root user cannot traverse.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/patroni/lib.sh"

main() {
    local command=${1:-} dir=${2:-}
    [ -n "$command" ] && [ -n "$dir" ] || usage
    case "$command" in
        start) start_cluster "$dir" ;;
        stop) stop_cluster "$dir" ;;
        status) load_env "$dir"; cluster_json ;;
        wait) load_env "$dir"; wait_whole 60 ;;
        node-start) load_env "$dir"; start_node "${3:?node name}" ;;
        etcd-stop) load_env "$dir"; stop_pids KILL "$dir/etcd.pid" ;;
        etcd-start) load_env "$dir"; start_etcd ;;
        *) usage ;;
    esac
}

usage() {
    sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

start_cluster() {
    local dir=$1
    ensure_patroni
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    write_env "$dir"
    load_env "$dir"
    for node in $NODES; do write_node_config "$node"; done
    give_to_runner "$dir"
    start_etcd
    for node in $NODES; do start_node "$node"; done
    wait_whole 90
    create_database
    log "Patroni cluster $SCOPE ready: $DATABASE_URL (details in $dir/cluster.env)"
}

stop_cluster() {
    local dir=$1
    [ -f "$dir/cluster.env" ] || { rm -rf "$dir"; return 0; }
    load_env "$dir"
    # Patroni stops its PostgreSQL on SIGTERM; a postmaster left without one (its Patroni was
    # killed) is stopped by its pid file.
    # All at once: one by one, each leader's shutdown would wait for the next failover.
    local node patronis=() postmasters=()
    for node in $NODES; do patronis+=("$dir/$node/patroni.pid"); done
    stop_pids TERM "${patronis[@]}"
    for node in $NODES; do
        kill -CONT $(node_pg_pids "$node") 2>/dev/null || true
        postmasters+=("$dir/$node/data/postmaster.pid")
    done
    stop_pids QUIT "${postmasters[@]}"
    # etcd keeps nothing worth a clean stop: its data goes with DIR.
    stop_pids KILL "$dir/etcd.pid"
    rm -rf "$dir"
}

main "$@"
