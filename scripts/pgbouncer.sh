#!/usr/bin/env bash
# A PgBouncer of its own in transaction mode, in front of a given PostgreSQL, for the tests and
# the benchmark (the configuration: deploy/pgbouncer/pgbouncer.ini). Installs Debian's
# pgbouncer when missing; as root, PgBouncer runs as the user `postgres` (it refuses root).
#
#   scripts/pgbouncer.sh start DIR POSTGRES_URL [PORT]   prints PgBouncer's port once it answers
#   scripts/pgbouncer.sh stop DIR                        stops it (SIGINT: at once)
#   scripts/pgbouncer.sh restart DIR                     stops it and starts it again, same port
#
# POSTGRES_URL is postgres://USER:PASSWORD@HOST:PORT/DATABASE; clients of PgBouncer log in
# with the same user and password, to any database of that server. PGBOUNCER_EXTRA, if set,
# is appended to the configuration (e.g. "ignore_startup_parameters = options").
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# Debian installs it in /usr/sbin, off a plain user's PATH.
PATH=$PATH:/usr/sbin

usage() { sed -n '2,13p' "$0" >&2; exit 2; }

# Fills in the template from the URL's parts.
configure() {
    local dir=$1 url=$2 port=$3 rest user password host pg_port
    rest=${url#*://}
    user=${rest%%:*}; rest=${rest#*:}
    password=${rest%%@*}; rest=${rest#*@}
    host=${rest%%:*}; rest=${rest#*:}
    pg_port=${rest%%/*}
    [ -n "$user" ] && [ -n "$password" ] && [ -n "$host" ] && [ -n "$pg_port" ] \
        || { echo "not a postgres://USER:PASSWORD@HOST:PORT/DATABASE URL" >&2; exit 2; }
    mkdir -p "$dir"
    sed -e "s|@PG_HOST@|$host|" -e "s|@PG_PORT@|$pg_port|" -e "s|@PORT@|$port|" \
        -e "s|@DIR@|$dir|g" -e "s|@PG_USER@|$user|" \
        "$(repo_root)/deploy/pgbouncer/pgbouncer.ini" >"$dir/pgbouncer.ini"
    if [ -n "${PGBOUNCER_EXTRA:-}" ]; then printf '%s\n' "$PGBOUNCER_EXTRA" >>"$dir/pgbouncer.ini"; fi
    if [ "$(id -u)" -eq 0 ]; then
        # PgBouncer drops root for this user itself.
        printf 'user = postgres\n' >>"$dir/pgbouncer.ini"
    fi
    printf '"%s" "%s"\n' "$user" "$password" >"$dir/userlist.txt"
    chmod 600 "$dir/userlist.txt"
    echo "$port" >"$dir/port"
    if [ "$(id -u)" -eq 0 ]; then chown -R postgres "$dir"; fi
}

free_port() {
    python3 "$(repo_root)/scripts/free_ports.py" 1
}

# Starts the configured PgBouncer in DIR and waits (up to 10 s) until its port answers.
launch() {
    local dir=$1 port
    port=$(cat "$dir/port")
    pgbouncer --daemon --quiet "$dir/pgbouncer.ini" \
        || { cat "$dir/pgbouncer.log" >&2 2>/dev/null; exit 1; }
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
        sleep 0.1
    done
    echo "PgBouncer did not answer on port $port:" >&2
    cat "$dir/pgbouncer.log" >&2 2>/dev/null
    exit 1
}

# Stops the PgBouncer in DIR, if it runs, and waits (up to 10 s) until it is gone.
halt() {
    local dir=$1 pid
    pid=$(cat "$dir/pgbouncer.pid" 2>/dev/null) || return 0
    kill -INT "$pid" 2>/dev/null || return 0
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
}

[ $# -ge 2 ] || usage
command=$1 dir=$2
case "$command" in
    start)
        [ $# -ge 3 ] || usage
        ensure_pgbouncer
        configure "$(realpath -m "$dir")" "$3" "${4:-$(free_port)}"
        launch "$(realpath "$dir")"
        ;;
    stop) halt "$dir" ;;
    restart) halt "$dir"; launch "$dir" ;;
    *) usage ;;
esac
