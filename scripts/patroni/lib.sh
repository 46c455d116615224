# The pieces of scripts/patroni.sh: ports, configuration, processes and the REST API checks.
# Sourced after scripts/common.sh, not run.

# Writes DIR/cluster.env: the cluster's name, nodes, free loopback ports, fresh passwords and
# the URL seqvend uses (every node, only a read-write session accepted).
write_env() {
    local dir=$1 ports
    read -r -a ports <<<"$(python3 "$(repo_root)/scripts/free_ports.py" 8)"
    local seqvend_password
    seqvend_password=$(secret)
    cat >"$dir/cluster.env" <<EOF
SCOPE=seqvend-$(secret | cut -c1-8)
NODES="node1 node2 node3"
ETCD_PORT=${ports[0]}
ETCD_PEER_PORT=${ports[1]}
PG_PORT_node1=${ports[2]}
PG_PORT_node2=${ports[3]}
PG_PORT_node3=${ports[4]}
REST_PORT_node1=${ports[5]}
REST_PORT_node2=${ports[6]}
REST_PORT_node3=${ports[7]}
SUPERUSER_PASSWORD=$(secret)
REPLICATION_PASSWORD=$(secret)
REWIND_PASSWORD=$(secret)
SEQVEND_PASSWORD=$seqvend_password
DATABASE_URL=postgres://seqvend:$seqvend_password@127.0.0.1:${ports[2]},127.0.0.1:${ports[3]},127.0.0.1:${ports[4]}/seqvend?target_session_attrs=read-write
EOF
}

secret() { python3 -c 'import secrets; print(secrets.token_hex(12))'; }

load_env() {
    DIR=$(cd "$1" && pwd)
    # shellcheck disable=SC1091
    source "$DIR/cluster.env"
}

pg_port() { local v="PG_PORT_$1"; echo "${!v}"; }
rest_port() { local v="REST_PORT_$1"; echo "${!v}"; }

write_node_config() {
    local node=$1 template
    template="$(repo_root)/deploy/patroni/node.yml.template"
    mkdir -p "$DIR/$node"
    sed -e "s|@SCOPE@|$SCOPE|g" -e "s|@NAME@|$node|g" -e "s|@DIR@|$DIR|g" \
        -e "s|@REST_PORT@|$(rest_port "$node")|g" -e "s|@PG_PORT@|$(pg_port "$node")|g" \
        -e "s|@ETCD_PORT@|$ETCD_PORT|g" -e "s|@BIN_DIR@|$(pg_bindir)|g" \
        -e "s|@SUPERUSER_PASSWORD@|$SUPERUSER_PASSWORD|g" \
        -e "s|@REPLICATION_PASSWORD@|$REPLICATION_PASSWORD|g" \
        -e "s|@REWIND_PASSWORD@|$REWIND_PASSWORD|g" \
        -e "s|@SEQVEND_PASSWORD@|$SEQVEND_PASSWORD|g" \
        "$template" >"$DIR/$node/patroni.yml"
    chmod 600 "$DIR/$node/patroni.yml"
}

# Root hands the directory to the non-root user everything runs as.
give_to_runner() {
    if [ "$(id -u)" -eq 0 ]; then chown -R "$PATRONI_USER:$PATRONI_USER" "$1"; fi
    chmod 700 "$1"
}

# Runs a command in the background as the non-root user (as the caller when not root), in a
# session of its own, logging to $1 and writing its pid to $2.
spawn_as_runner() {
    local logfile=$1 pidfile=$2
    shift 2
    local as=()
    if [ "$(id -u)" -eq 0 ]; then
        as=(setpriv "--reuid=$PATRONI_USER" "--regid=$PATRONI_USER" --init-groups --)
    fi
    HOME=$DIR setsid "${as[@]}" "$@" >>"$logfile" 2>&1 </dev/null &
    echo $! >"$pidfile"
}

start_etcd() {
    local client="http://127.0.0.1:$ETCD_PORT" peer="http://127.0.0.1:$ETCD_PEER_PORT"
    spawn_as_runner "$DIR/etcd.log" "$DIR/etcd.pid" etcd --name etcd0 --data-dir "$DIR/etcd" \
        --listen-client-urls "$client" --advertise-client-urls "$client" \
        --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
        --initial-cluster "etcd0=$peer" --initial-cluster-state new
    poll 30 "etcd answers on $client" etcd_healthy
}

etcd_healthy() { curl -fsS --max-time 1 "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q '"health":"true"'; }

start_node() {
    local node=$1
    spawn_as_runner "$DIR/$node/patroni.log" "$DIR/$node/patroni.pid" patroni "$DIR/$node/patroni.yml"
}

# The JSON of /cluster from the first node whose REST API answers.
cluster_json() {
    local node
    for node in $NODES; do
        curl -fsS --max-time 1 "http://127.0.0.1:$(rest_port "$node")/cluster" 2>/dev/null && return 0
    done
    return 1
}

# Whole: a running leader that /primary confirms, a synchronous standby, every node running
# or streaming.
cluster_whole() {
    local json leader
    json=$(cluster_json) || return 1
    leader=$(python3 -c '
import json, sys
members = json.loads(sys.argv[1]).get("members", [])
leaders = [m for m in members if m["role"] == "leader" and m["state"] == "running"]
syncs = [m for m in members if m["role"] == "sync_standby" and m["state"] in ("running", "streaming")]
whole = len(members) == 3 and all(m["state"] in ("running", "streaming") for m in members)
if leaders and syncs and whole:
    print(leaders[0]["name"])
' "$json") || return 1
    [ -n "$leader" ] && curl -fsS --max-time 1 -o /dev/null "http://127.0.0.1:$(rest_port "$leader")/primary"
}

wait_whole() {
    poll "$1" "the Patroni cluster has a leader, a synchronous standby and three nodes up" cluster_whole
}

# Polls `check` every 0.2 s until it succeeds, for at most `seconds`.
poll() {
    local seconds=$1 what=$2 deadline
    shift 2
    deadline=$(($(date +%s) + seconds))
    until "$@"; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            log "gave up waiting ($seconds s): $what"
            cluster_json >&2 || true
            return 1
        fi
        sleep 0.2
    done
}

leader_port() {
    local node
    for node in $NODES; do
        if curl -fsS --max-time 1 -o /dev/null "http://127.0.0.1:$(rest_port "$node")/primary" 2>/dev/null; then
            pg_port "$node"
            return 0
        fi
    done
    return 1
}

create_database() {
    local port
    port=$(leader_port)
    local psql=(env "PGPASSWORD=$SUPERUSER_PASSWORD" "$(pg_bindir)/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -qtAX)
    if [ -z "$("${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname = 'seqvend'")" ]; then
        "${psql[@]}" -c "CREATE DATABASE seqvend OWNER seqvend"
    fi
}

# The pids of a node's PostgreSQL: the postmaster and its children.
node_pg_pids() {
    local pidfile="$DIR/$1/data/postmaster.pid" pid
    [ -f "$pidfile" ] || return 0
    pid=$(head -n 1 "$pidfile")
    ours "$pid" || return 0
    echo "$pid" $(pgrep -P "$pid" || true)
}

# Sends `signal` to the pid in each pid file, then waits (up to 30 s, then SIGKILL) until each
# is gone. Only a process of this cluster's (its command line names DIR) is signalled: a pid
# file left behind may name a pid since reused.
stop_pids() {
    local signal=$1 pidfile pid pids=()
    shift
    for pidfile in "$@"; do
        [ -f "$pidfile" ] || continue
        pid=$(head -n 1 "$pidfile")
        ours "$pid" && kill "-$signal" "$pid" 2>/dev/null && pids+=("$pid")
    done
    for pid in "${pids[@]}"; do
        poll 30 "pid $pid stops" pid_gone "$pid" || kill -KILL "$pid" 2>/dev/null || true
    done
}

ours() { [ -n "$1" ] && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF "$DIR/"; }

# Gone, or a zombie nobody reaps (the script that started it has exited).
pid_gone() { ! kill -0 "$1" 2>/dev/null || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
