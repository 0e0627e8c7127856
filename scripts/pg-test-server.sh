#!/usr/bin/env bash
##===----------------------------------------------------------------------===##
##
## This source file is part of the ipnd open source project
##
## Copyright (c) the ipnd authors
## Licensed under Apache License v2.0
##
## See LICENSE for license information
##
## SPDX-License-Identifier: Apache-2.0
##
##===----------------------------------------------------------------------===##

# scripts/pg-test-server.sh: a throwaway PostgreSQL server for the tests and benchmarks.
#
#   start DIR [--tcp]     a fresh cluster in DIR/data, listening on a unix socket in DIR; with
#                         --tcp also on 127.0.0.1 (a free port chosen here), with TLS on (a CA
#                         made here: DIR/tls/ca.crt). A server left running in DIR is stopped
#                         and its data thrown away first.
#   stop DIR              fast shutdown; does nothing when no server runs there (safe twice)
#   restart-immediate DIR [DOWN]
#                         pg_ctl restart -m immediate (a crash: no checkpoint, WAL replayed on
#                         start), then waits until it accepts connections again; with DOWN, the
#                         server stays down DOWN seconds before it starts again
#   env DIR               prints the shell lines exporting IPND_TEST_PG_* (eval "$(... env DIR)")
#   run COMMAND...        starts a server (--tcp) in a fresh /tmp/ipndpg.XXXXXX, runs COMMAND
#                         with IPND_TEST_PG_* exported, then stops it and removes the directory,
#                         also when COMMAND fails or is interrupted; exits with COMMAND's status
#
# The cluster: superuser ipnd_test, database ipnd_test, trust authentication over the socket
# and from 127.0.0.1 (a throwaway server on a test machine; nothing else reaches it), durability
# kept (fsync, synchronous_commit, full_page_writes all on), max_connections 300.
#
# Debian's postgresql package is installed when missing. initdb and the server refuse to run as
# root: as root, they run as the `postgres` system user, which then owns DIR; otherwise as the
# current user. A unix socket's path is limited to ~107 bytes, so keep DIR short
# (mktemp -d /tmp/ipndpg.XXXXXX).
set -euo pipefail

ROLE=ipnd_test
DATABASE=ipnd_test
READY_SECONDS=${IPND_TEST_PG_READY_SECONDS:-60}
SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

die() { echo "pg-test-server: $*" >&2; exit 1; }

usage() { sed -n '2,16p' "${BASH_SOURCE[0]}" >&2; exit 64; }

# bin_dir [DATA]: the server binaries; those of the cluster's own version when DATA holds one,
# else the newest installed.
bin_dir() {
    local data=${1:-} version
    if [ -n "$data" ] && [ -r "$data/PG_VERSION" ]; then
        version=$(cat "$data/PG_VERSION")
        if [ -x "/usr/lib/postgresql/$version/bin/pg_ctl" ]; then
            echo "/usr/lib/postgresql/$version/bin"
            return
        fi
    fi
    local newest
    newest=$(find /usr/lib/postgresql -mindepth 3 -maxdepth 3 -path '*/bin/initdb' 2>/dev/null | sort -V | tail -1)
    [ -n "$newest" ] || return 1
    dirname "$newest"
}

# The user the server runs as: postgres when we are root, else ourselves.
server_user() {
    if [ "$(id -u)" -eq 0 ]; then echo postgres; else id -un; fi
}

# close_inherited_fds: closes every descriptor above 2 in this (sub)shell. The server that
# pg_ctl starts outlives the script and would keep whatever it inherited open: a pipe a caller
# reads to its end (make's, CI's log) would never end, and Foundation's Process, which learns
# that a child exited when a socket the child inherited is closed, would wait for the server to
# exit rather than for the script.
close_inherited_fds() {
    local fd
    for fd in /proc/"$BASHPID"/fd/*; do
        fd=${fd##*/}
        if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
}

# as_server_user COMMAND...: runs COMMAND as the server's user, from DIR (root's working
# directory may be closed to postgres, and initdb complains about that), with no descriptor
# but 0, 1 and 2.
as_server_user() {
    (
        close_inherited_fds
        cd "$DIR"
        if [ "$(id -u)" -eq 0 ]; then
            exec runuser -u postgres -- "$@"
        else
            exec "$@"
        fi
    )
}

log_tail() {
    if [ -f "$DIR/server.log" ]; then
        echo "---- last lines of $DIR/server.log ----" >&2
        tail -n 40 "$DIR/server.log" >&2
        echo "----" >&2
    fi
}

# running: whether the postmaster named in DATA/postmaster.pid is alive (a killed one that its
# parent has not reaped yet counts as gone).
running() {
    [ -f "$DATA/postmaster.pid" ] || return 1
    local pid state
    pid=$(head -n 1 "$DATA/postmaster.pid")
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    state=$(awk '/^State:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || return 1
    [ -n "$state" ] && [ "$state" != Z ]
}

# wait_ready: until the server accepts connections on its socket, at most READY_SECONDS.
wait_ready() {
    local bin=$1 port=$2 deadline=$((SECONDS + READY_SECONDS))
    while [ "$SECONDS" -lt "$deadline" ]; do
        if "$bin/pg_isready" -q -h "$DIR" -p "$port" -U "$ROLE" -d postgres -t 2; then return 0; fi
        sleep 0.2
    done
    log_tail
    die "the server in $DIR did not accept connections within ${READY_SECONDS}s"
}

# free_port: a loopback TCP port nothing answers on (postgres still may lose a race for it:
# start retries with another).
free_port() {
    local port
    for _ in $(seq 1 100); do
        port=$((20000 + RANDOM % 30000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    die "found no free loopback port"
}

# make_tls: a CA and a server certificate for localhost and 127.0.0.1, signed by it; the key
# goes into the data directory, owned by the server's user, as postgres requires.
make_tls() {
    local tls=$DIR/tls
    mkdir -p "$tls"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
        -subj "/CN=ipnd test CA" -keyout "$tls/ca.key" -out "$tls/ca.crt" 2>/dev/null
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -subj "/CN=localhost" -keyout "$DATA/server.key" -out "$tls/server.csr" 2>/dev/null
    printf 'subjectAltName = DNS:localhost, IP:127.0.0.1\nextendedKeyUsage = serverAuth\n' >"$tls/server.ext"
    openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial \
        -days 30 -extfile "$tls/server.ext" -out "$DATA/server.crt" 2>/dev/null
    chmod 600 "$DATA/server.key"
    chmod 644 "$tls/ca.crt"
    if [ "$(id -u)" -eq 0 ]; then chown postgres:postgres "$DATA/server.key" "$DATA/server.crt"; fi
}

# write_settings PORT TCP: the settings this script owns, in DATA/ipnd_test.conf.
write_settings() {
    local port=$1 tcp=$2 listen='' ssl=off
    if [ "$tcp" = 1 ]; then listen=127.0.0.1; ssl=on; fi
    cat >"$DATA/ipnd_test.conf" <<EOF
# Written by scripts/pg-test-server.sh: a throwaway server for ipnd's tests.
listen_addresses = '$listen'
port = $port
unix_socket_directories = '$DIR'
max_connections = 300
shared_buffers = 128MB
# Durability as in production: a crash test must lose nothing that was committed.
fsync = on
synchronous_commit = on
full_page_writes = on
ssl = $ssl
ssl_cert_file = 'server.crt'
ssl_key_file = 'server.key'
huge_pages = off
jit = off
timezone = 'UTC'
lc_messages = 'C'
logging_collector = off
# After a crash (restart-immediate), one syncfs of the file system rather than an fsync of
# each of the cluster's ~1,000 files, which takes 4 s here: the data is flushed all the same.
recovery_init_sync_method = syncfs
EOF
    chmod 644 "$DATA/ipnd_test.conf"
}

stop_server() {
    running || return 0
    local bin
    bin=$(bin_dir "$DATA")
    if ! as_server_user "$bin/pg_ctl" stop -D "$DATA" -m fast -w -t "$READY_SECONDS" >/dev/null; then
        echo "pg-test-server: fast shutdown failed, stopping immediately" >&2
        as_server_user "$bin/pg_ctl" stop -D "$DATA" -m immediate -w -t "$READY_SECONDS" >/dev/null || true
    fi
    if running; then
        log_tail
        die "could not stop the server in $DIR (postmaster $(head -n 1 "$DATA/postmaster.pid"))"
    fi
}

# prepare_dir: DIR exists, is ours (not a symlink or someone else's directory in /tmp), and is
# writable by the server's user.
prepare_dir() {
    if [ -L "$DIR" ]; then die "$DIR is a symbolic link; give a real directory"; fi
    mkdir -p "$DIR"
    local owner
    owner=$(stat -c %U "$DIR")
    if [ "$owner" != "$(id -un)" ] && [ "$owner" != "$(server_user)" ]; then
        die "$DIR belongs to $owner; give a directory of your own"
    fi
    if [ "$(id -u)" -eq 0 ]; then
        chown postgres:postgres "$DIR"
        runuser -u postgres -- test -w "$DIR" -a -x "$DIR" \
            || die "the postgres user cannot reach $DIR (a parent directory is closed to it); use one under /tmp"
    fi
    chmod 755 "$DIR"
}

start_server() {
    local tcp=0
    case "${1:-}" in
        --tcp) tcp=1 ;;
        "") ;;
        *) usage ;;
    esac
    # Debian's postgresql brings the server and its clients (psql, pg_isready); openssl makes
    # the TLS certificates.
    "$SCRIPTS/install-system-packages.sh" postgresql openssl
    local bin
    bin=$(bin_dir) || die "no PostgreSQL server under /usr/lib/postgresql/*/bin even after installing postgresql"

    prepare_dir
    DIR=$(cd "$DIR" && pwd)
    DATA=$DIR/data
    # The socket is DIR/.s.PGSQL.PORT, and sun_path holds 107 bytes and a NUL.
    [ $((${#DIR} + 15)) -le 107 ] || die "$DIR is too long for a unix socket path (keep it under 90 bytes)"
    if [ -d "$DATA" ]; then
        stop_server
        rm -rf "$DATA"
    fi
    rm -rf "$DIR/tls" "$DIR/server.log" "$DIR/server.env"

    # --no-sync: a throwaway cluster need not be flushed to disk before its first start (the
    # server itself keeps fsync on).
    if ! as_server_user "$bin/initdb" -D "$DATA" -U "$ROLE" --auth=trust --encoding=UTF8 --locale=C \
        --no-sync >"$DIR/initdb.log" 2>&1; then
        cat "$DIR/initdb.log" >&2
        die "initdb failed in $DATA"
    fi
    echo "include_if_exists = 'ipnd_test.conf'" >>"$DATA/postgresql.conf"
    cat >"$DATA/pg_hba.conf" <<EOF
# Written by scripts/pg-test-server.sh: a throwaway test server, no passwords.
local all all trust
host  all all 127.0.0.1/32 trust
EOF
    if [ "$tcp" = 1 ]; then make_tls; fi

    local port started=0
    for _ in 1 2 3 4 5; do
        port=$(free_port)
        write_settings "$port" "$tcp"
        : >"$DIR/server.log"
        if [ "$(id -u)" -eq 0 ]; then chown postgres:postgres "$DIR/server.log"; fi
        if as_server_user "$bin/pg_ctl" start -D "$DATA" -l "$DIR/server.log" -w -t "$READY_SECONDS" >/dev/null; then
            started=1
            break
        fi
        # Another process took the port between free_port and the bind: try another one.
        grep -q -E 'could not bind|Address already in use' "$DIR/server.log" || break
    done
    if [ "$started" != 1 ]; then
        log_tail
        die "the server in $DIR did not start"
    fi
    wait_ready "$bin" "$port"
    "$bin/psql" -X -q -h "$DIR" -p "$port" -U "$ROLE" -d postgres -v ON_ERROR_STOP=1 \
        -c "CREATE DATABASE $DATABASE" >/dev/null || { log_tail; die "could not create database $DATABASE"; }

    {
        printf 'export IPND_TEST_PG_SOCKET_DIR=%q\n' "$DIR"
        printf 'export IPND_TEST_PG_PORT=%q\n' "$port"
        printf 'export IPND_TEST_PG_USER=%q\n' "$ROLE"
        printf 'export IPND_TEST_PG_DATABASE=%q\n' "$DATABASE"
        printf 'export IPND_TEST_PG_BIN=%q\n' "$bin"
        printf 'export IPND_TEST_PG_DATA=%q\n' "$DATA"
        if [ "$tcp" = 1 ]; then
            printf 'export IPND_TEST_PG_HOST=%q\n' 127.0.0.1
            printf 'export IPND_TEST_PG_CA_FILE=%q\n' "$DIR/tls/ca.crt"
        fi
    } >"$DIR/server.env"
    if [ "$tcp" = 1 ]; then
        echo "pg-test-server: PostgreSQL running in $DIR (socket, and 127.0.0.1:$port with TLS)" >&2
    else
        echo "pg-test-server: PostgreSQL running in $DIR (socket only, port $port)" >&2
    fi
}

restart_immediate() {
    [ -f "$DIR/server.env" ] || die "no server was started in $DIR"
    local bin port down=${1:-0}
    bin=$(bin_dir "$DATA")
    port=$(sed -n 's/^port = //p' "$DATA/ipnd_test.conf")
    if [ "$down" != 0 ]; then
        # A crash, then an outage of DOWN seconds before the server comes back.
        as_server_user "$bin/pg_ctl" stop -D "$DATA" -m immediate -w -t "$READY_SECONDS" >/dev/null || true
        sleep "$down"
        if ! as_server_user "$bin/pg_ctl" start -D "$DATA" -l "$DIR/server.log" -w -t "$READY_SECONDS" >/dev/null; then
            log_tail
            die "the server in $DIR did not come back after an immediate stop"
        fi
    elif ! as_server_user "$bin/pg_ctl" restart -D "$DATA" -m immediate -l "$DIR/server.log" -w \
        -t "$READY_SECONDS" >/dev/null; then
        log_tail
        die "the server in $DIR did not come back after an immediate restart"
    fi
    wait_ready "$bin" "$port"
}

# run COMMAND...: see the header.
run_with_server() {
    [ $# -gt 0 ] || usage
    DIR=$(mktemp -d /tmp/ipndpg.XXXXXX)
    DATA=$DIR/data
    # In a subshell: a failing stop (which exits) must not skip the removal. (Run by the trap.)
    # shellcheck disable=SC2317
    cleanup() {
        (stop_server) || true
        rm -rf "$DIR"
    }
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    start_server --tcp
    # shellcheck disable=SC1091
    . "$DIR/server.env"
    # COMMAND runs in the background so that a SIGINT or SIGTERM sent to this script alone is
    # passed on to it at once (bash runs a trap only once its foreground child has exited);
    # the server is stopped when COMMAND has ended. bash starts a background command with
    # SIGINT and SIGQUIT ignored, which the tests' own children would inherit: env restores them.
    # Its standard input is /dev/null, as for any background command.
    env --default-signal=INT,QUIT -- "$@" &
    local child=$!
    trap 'kill -TERM "$child" 2>/dev/null || true' INT TERM
    local status
    while :; do
        # wait returns early, above 128, when a trapped signal arrives: wait again while the
        # child runs.
        status=0
        wait "$child" || status=$?
        kill -0 "$child" 2>/dev/null || break
    done
    return "$status"
}

[ $# -ge 1 ] || usage
command=$1
shift
if [ "$command" = run ]; then
    run_with_server "$@"
    exit $?
fi
[ $# -ge 1 ] || usage
DIR=$1
shift
# Absolute: the socket directory handed to clients must start with a slash.
if [ -d "$DIR" ]; then DIR=$(cd "$DIR" && pwd); fi
DATA=$DIR/data
case "$command" in
    start) start_server "$@" ;;
    stop) [ $# -eq 0 ] || usage; [ -d "$DIR" ] || exit 0; stop_server ;;
    restart-immediate) [ $# -le 1 ] || usage; restart_immediate "${1:-0}" ;;
    env) [ $# -eq 0 ] || usage; [ -f "$DIR/server.env" ] || die "no server was started in $DIR"; cat "$DIR/server.env" ;;
    *) usage ;;
esac
