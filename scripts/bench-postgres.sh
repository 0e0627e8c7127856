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

# make bench STORE=postgres: the load benchmark on the PostgreSQL store (issues 31 and 44), on
# this machine, the database and the load generator included.
#
# Starts a private PostgreSQL server (scripts/pg-test-server.sh: fsync and synchronous_commit on,
# pg_stat_statements loaded) and, on a fresh database per scenario, the release ipnd:
#   1. one node: unique pre-generated signed notifications replayed by wrk at CONNECTIONS
#      connections, then already-seen ones (duplicates);
#   2. two nodes on one database, each driven by its own wrk with half the connections and its
#      own notifications;
#   3. and 4. the same two once a second PostgreSQL server on this machine streams the primary's
#      WAL and the primary waits for it (synchronous_standby_names, as deploy/README.md
#      recommends); STANDBY=0 skips them.
# For each pass it prints requests/s and latency, ipnd's CPU per notification, PostgreSQL's CPU per
# notification (its processes' ticks from /proc: the primary, and the standby), the top-level
# statements, the nested ones (foreign key checks, one per referencing row) and the top-level
# execution time per notification (pg_stat_statements), and the time backends spent
# waiting, by wait event, sampled every SAMPLE_MS (pg_stat_activity; `Lock:*` are lock waits,
# `IPC:SyncRep` the standby's acknowledgement), per notification. Then it checks each database:
# one applied notification per unique request, none twice, one event per transition, every
# committed event numbered into the feed, seqs unique.
#
# Knobs (environment): COUNT=300000 DURATION=10 CONNECTIONS=64 THREADS=2 PORT=18280 MAX_BATCH=256
#                      POOL_SIZE=16 LOG_LEVEL=warning QUIET_WAIT=120 STANDBY=1 SAMPLE_MS=100 KEEP=1
#                      PASSES="one two sync_one sync_two" (the passes run; "sync_one sync_two" for the standby's)
#                      PERF=1 (a perf profile of the nodes in each pass: $WORK/NAME.perf.data, with KEEP=1)
#                      BIN_DIR=<directory with prebuilt ipnd and ipnd-bench: skips the build>
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/proc-ticks.sh
. scripts/proc-ticks.sh

COUNT=${COUNT:-300000}
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
PORT=${PORT:-18280}
MAX_BATCH=${MAX_BATCH:-256}
POOL_SIZE=${POOL_SIZE:-16}
LOG_LEVEL=${LOG_LEVEL:-warning}
QUIET_WAIT=${QUIET_WAIT:-120}
STANDBY=${STANDBY:-1}
SAMPLE_MS=${SAMPLE_MS:-100}
PASSES=${PASSES:-one two sync_one sync_two}
wanted() { [[ " $PASSES " == *" $1 "* ]]; }

scripts/install-system-packages.sh libssl-dev libsqlite3-dev pkg-config wrk postgresql
if [ -n "${BIN_DIR:-}" ]; then BIN=$BIN_DIR; else BIN=$(scripts/build-release.sh ipnd ipnd-bench); fi

WORK=$(mktemp -d /tmp/ipnd-bench-pg.XXXXXX)
PGDIR=$(mktemp -d /tmp/ipndbpg.XXXXXX)
STANDBY_DIR=$(mktemp -d /tmp/ipndbsb.XXXXXX)
chmod 755 "$PGDIR" "$STANDBY_DIR"
NODES=()
SAMPLER=
cleanup() {
    for pid in "${NODES[@]}" $SAMPLER; do
        if kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; fi
    done
    scripts/pg-test-server.sh stop "$STANDBY_DIR" >/dev/null 2>&1 || true
    scripts/pg-test-server.sh stop "$PGDIR" >/dev/null 2>&1 || true
    rm -rf "$PGDIR" "$STANDBY_DIR"
    [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

scripts/pg-test-server.sh start "$PGDIR" >/dev/null
eval "$(scripts/pg-test-server.sh env "$PGDIR")"
PRIMARY_BIN=$IPND_TEST_PG_BIN
as_postgres() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
psql() { "$IPND_TEST_PG_BIN/psql" --no-psqlrc --quiet --no-align --tuples-only --host="$IPND_TEST_PG_SOCKET_DIR" \
    --port="$IPND_TEST_PG_PORT" --username="$IPND_TEST_PG_USER" "$@"; }
# pg_stat_statements, and what a standby needs of its primary: a replication connection over the
# socket for the test role.
cat >>"$IPND_TEST_PG_DATA/ipnd_test.conf" <<EOF
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
wal_level = replica
max_wal_senders = 4
EOF
echo "local replication $IPND_TEST_PG_USER trust" >>"$IPND_TEST_PG_DATA/pg_hba.conf"
as_postgres "$PRIMARY_BIN/pg_ctl" restart -D "$IPND_TEST_PG_DATA" -m fast -w >/dev/null
psql --dbname="$IPND_TEST_PG_DATABASE" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
psql --dbname="$IPND_TEST_PG_DATABASE" -c "ALTER ROLE $IPND_TEST_PG_USER REPLICATION" >/dev/null 2>&1 || true
psql --dbname="$IPND_TEST_PG_DATABASE" -c "CREATE TABLE bench_waits (pass TEXT, wait TEXT, n INT)" >/dev/null

KEY="$(pwd)/config/dev-keys/alipay-test.pem"
# The dev config on database $1: its SQLite path replaced by store.postgres.
config_for() {
    sed -e "s#dev-keys/alipay-test.pem#$KEY#" \
        -e "s#^  path: .*#  postgres:\n    host: $IPND_TEST_PG_SOCKET_DIR\n    port: $IPND_TEST_PG_PORT\n    database: $1\n    user: $IPND_TEST_PG_USER\n    tls: disable\n    pool_size: $POOL_SIZE#" \
        config/ipnd.dev.yaml >"$WORK/$1.yaml"
    chmod 600 "$WORK/$1.yaml"
}
export IPND_STORE_MAX_BATCH=$MAX_BATCH IPND_LOG_LEVEL=$LOG_LEVEL
config_for ipnd_gen

echo "== generating signed notifications: $COUNT for one node, $((COUNT / 2)) for each of two, twice"
STAMP=$(date +%s)
for set in one two-a two-b sync-one sync-a sync-b; do
    case $set in one) pass=one ;; two-*) pass=two ;; sync-one) pass=sync_one ;; *) pass=sync_two ;; esac
    wanted "$pass" || continue
    case $set in one | sync-one) n=$COUNT ;; *) n=$((COUNT / 2)) ;; esac
    "$BIN/ipnd-bench" generate --config "$WORK/ipnd_gen.yaml" --count "$n" --output "$WORK/$set.bin" --prefix "P$set$STAMP" >/dev/null
done

start_node() { # DATABASE PORT LOG: prints the pid
    # Its stdout not the $(...) pipe: the caller's substitution would wait for the node to exit.
    IPND_SERVER_PORT=$2 IPND_OPS_PORT=$(($2 + 1)) "$BIN/ipnd" serve --config "$WORK/$1.yaml" >/dev/null 2>"$3" &
    echo $!
}
stop_nodes() {
    for pid in "${NODES[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    # Started in $(start_node ...), the nodes are not this shell's children: wait until all are gone.
    for pid in "${NODES[@]}"; do while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done; done
    NODES=()
}

# postgres_ticks DATADIR: user + system ticks of a server's processes, exited backends included.
postgres_ticks() {
    local postmaster total=0 pid
    postmaster=$(head -n 1 "$1/postmaster.pid")
    total=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$postmaster/stat")
    for pid in $(pgrep -P "$postmaster"); do
        total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0)))
    done
    echo "$total"
}

# The sampler: one session of its own counting, every SAMPLE_MS, the active backends of
# database $1 by wait event, into bench_waits (pass $2), until stopped.
start_sampler() {
    psql --dbname="$IPND_TEST_PG_DATABASE" -c "
        DO \$\$ BEGIN LOOP
            INSERT INTO bench_waits SELECT '$2', coalesce(wait_event_type || ':' || wait_event, 'CPU'), count(*)
            FROM pg_stat_activity WHERE datname = '$1' AND state = 'active' AND backend_type = 'client backend'
            GROUP BY 2;
            COMMIT;
            PERFORM pg_sleep($SAMPLE_MS / 1000.0);
        END LOOP; END \$\$" >/dev/null 2>&1 &
    SAMPLER=$!
}
stop_sampler() {
    psql --dbname="$IPND_TEST_PG_DATABASE" -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity
        WHERE query LIKE '%DO \$\$ BEGIN LOOP%' AND pid <> pg_backend_pid()" >/dev/null
    wait "$SAMPLER" 2>/dev/null || true
    SAMPLER=
}

# process_snapshot: "PID TICKS PPID" (ticks: user + system, threads included) of every process on
# the machine.
process_snapshot() {
    awk '{ s = $0; sub(/^.*\) /, "", s); split(s, f, " "); split(FILENAME, p, "/"); print p[3], f[12] + f[13], f[2] }' \
        /proc/[0-9]*/stat 2>/dev/null | LC_ALL=C sort || true
}
# process_label PID PPID: what a process is, for the CPU breakdown: ipnd, wrk, or a PostgreSQL
# process named by its server and role (a client backend by its connection's application_name,
# the sequencer's apart).
process_label() {
    local pid=$1 parent=$2 node title comm server role
    for node in "${NODES[@]}"; do [ "$node" = "$pid" ] && { echo ipnd; return; }; done
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 0
    [ "$comm" = wrk ] && { echo wrk; return; }
    [ "$comm" = postgres ] || return 0
    if [ "$parent" = "$(head -n 1 "$IPND_TEST_PG_DATA/postmaster.pid")" ]; then server=primary
    elif [ "$STANDBY_UP" = 1 ] && [ "$parent" = "$(head -n 1 "$STANDBY_DIR/data/postmaster.pid")" ]; then server=standby
    else return 0; fi
    title=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | sed 's/^postgres: //')
    case $title in
        checkpointer* | "background writer"* | walwriter* | "autovacuum launcher"* | "autovacuum worker"* | walsender* | \
            walreceiver* | startup* | "logical replication launcher"* | archiver*)
            role=$(awk '{ if ($1 == "background" || $1 == "autovacuum" || $1 == "logical") print $1 " " $2; else print $1 }' <<<"$title") ;;
        *) role=$(grep -q "^$pid " "$WORK/sequencers" 2>/dev/null && echo "sequencer backend" || echo "client backends") ;;
    esac
    echo "$server $role"
}
# cpu_breakdown BEFORE AFTER REQUESTS: CPU µs per notification by process label, largest first.
cpu_breakdown() {
    local hz pid before after parent label
    hz=$(getconf CLK_TCK)
    psql --dbname="$IPND_TEST_PG_DATABASE" -c "SELECT pid || ' ' FROM pg_stat_activity WHERE application_name LIKE 'ipnd sequencer%'" \
        >"$WORK/sequencers"
    LC_ALL=C join -a 2 -e 0 -o 2.1,1.2,2.2,2.3 "$1" "$2" | while read -r pid before after parent; do
        label=$(process_label "$pid" "$parent")
        if [ -n "$label" ]; then echo "$((after - before))|$label"; fi
    done | awk -F'|' -v n="$3" -v hz="$hz" '{ t[$2] += $1 } END {
        for (l in t) printf "%8.0f µs/n  %s\n", (n ? t[l] / hz / n * 1e6 : 0), l }' | sort -rn
}

# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

# measure NAME DATABASE NODES SET...: NODES nodes on DATABASE, each driven by its own wrk with
# CONNECTIONS/NODES connections replaying its SET (one node: THREADS wrk threads; two: one each);
# prints the pass's RESULT line with PostgreSQL's figures appended, and keeps it in
# $WORK/NAME.result.
measure() {
    local name=$1 database=$2 nodes=$3
    shift 3
    local sets=("$@") index pid commits0 commits1 primary0 primary1 standby0=0 standby1=0 port ipnd0=0 ipnd1=0
    # Every pass starts from a checkpoint, so none is due within it (timed every 5 minutes, or
    # after max_wal_size of WAL) and the passes compare, whichever ran before.
    psql --dbname="$database" -c "CHECKPOINT" >/dev/null
    wait_for_quiet
    for pid in "${NODES[@]}"; do ipnd0=$((ipnd0 + $(process_ticks "$pid"))); done
    psql --dbname="$database" -c "SELECT pg_stat_statements_reset()" >/dev/null
    primary0=$(postgres_ticks "$IPND_TEST_PG_DATA")
    [ "$STANDBY_UP" = 1 ] && standby0=$(postgres_ticks "$STANDBY_DIR/data")
    process_snapshot >"$WORK/$name.procs0"
    commits0=$(psql --dbname="$database" -c "SELECT xact_commit FROM pg_stat_database WHERE datname = '$database'")
    start_sampler "$database" "$name"
    local threads=1 profiler=
    [ "$nodes" = 1 ] && threads=$THREADS
    if [ -n "${PERF:-}" ]; then
        perf record -e cpu-clock -F 499 -g -o "$WORK/$name.perf.data" -p "$(IFS=,; echo "${NODES[*]}")" -- sleep "$DURATION" \
            >/dev/null 2>&1 &
        profiler=$!
    fi
    for index in $(seq 0 $((nodes - 1))); do
        port=$((PORT + 10 * index))
        wrk -t"$threads" -c"$((CONNECTIONS / nodes))" -d"${DURATION}s" -s bench/replay.lua "http://127.0.0.1:$port" \
            -- "$WORK/${sets[$index]}.bin" "$threads" >"$WORK/$name-$index.out" &
        pid=$!
        eval "WRK_$index=$pid"
    done
    for index in $(seq 0 $((nodes - 1))); do eval "wait \$WRK_$index" || true; done
    [ -z "$profiler" ] || wait "$profiler" || true
    process_snapshot >"$WORK/$name.procs1"
    stop_sampler
    for pid in "${NODES[@]}"; do ipnd1=$((ipnd1 + $(process_ticks "$pid"))); done
    primary1=$(postgres_ticks "$IPND_TEST_PG_DATA")
    [ "$STANDBY_UP" = 1 ] && standby1=$(postgres_ticks "$STANDBY_DIR/data")
    local requests=0 rps=0 p50=0 p99=0 p999=0 non2xx=0 errors=0 result
    for index in $(seq 0 $((nodes - 1))); do
        result=$(grep '^RESULT' "$WORK/$name-$index.out" || echo "RESULT requests=0")
        requests=$((requests + $(field requests "$result")))
        rps=$(awk -v a="$rps" -v b="$(field rps "$result")" 'BEGIN { printf "%.0f", a + b }')
        p50=$(awk -v a="$p50" -v b="$(field p50_ms "$result")" 'BEGIN { print (b > a ? b : a) }')
        p99=$(awk -v a="$p99" -v b="$(field p99_ms "$result")" 'BEGIN { print (b > a ? b : a) }')
        p999=$(awk -v a="$p999" -v b="$(field p999_ms "$result")" 'BEGIN { print (b > a ? b : a) }')
        non2xx=$((non2xx + $(field non2xx "$result")))
        errors=$((errors + $(field connect_errors "$result") + $(field read_errors "$result") + $(field write_errors "$result") \
            + $(field timeouts "$result")))
    done
    local statements waits
    # Top-level statements (the nested ones are mostly the foreign keys' checks, one per row),
    # and the execution time of all.
    statements=$(psql --dbname="$database" --field-separator=' ' -c "
        SELECT coalesce(sum(calls) FILTER (WHERE toplevel), 0), coalesce(sum(calls) FILTER (WHERE NOT toplevel), 0),
               coalesce(sum(total_exec_time) FILTER (WHERE toplevel), 0) FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$database')")
    local top nested exec
    read -r top nested exec <<<"$statements"
    # Where PostgreSQL's time went: the statements with the most execution time, per notification.
    psql --dbname="$database" --field-separator=' | ' -c "
        SELECT lpad(round(total_exec_time * 1000 / greatest($requests, 1))::text, 6) || ' us/n', lpad(calls::text, 8) || ' calls',
               lpad(round(total_exec_time * 1000 / greatest(calls, 1))::text, 6) || ' us/call', CASE WHEN toplevel THEN 'top' ELSE 'nested' END,
               left(regexp_replace(query, '\s+', ' ', 'g'), 90)
        FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$database')
        ORDER BY total_exec_time DESC LIMIT 12" >"$WORK/$name.statements"
    sed 's/^/   /' "$WORK/$name.statements" >&2
    # Backend-seconds per wait event over the pass, as microseconds per notification.
    waits=$(psql --dbname="$IPND_TEST_PG_DATABASE" --field-separator=' ' -c "
        SELECT string_agg(wait || '=' || round(sum * $SAMPLE_MS * 1000.0 / greatest($requests, 1))::text, ' ' ORDER BY sum DESC)
        FROM (SELECT wait, sum(n) AS sum FROM bench_waits WHERE pass = '$name' GROUP BY wait) AS w")
    # Transactions committed in the database (every node's batches, the sequencer's rounds, its
    # probes), per notification: the statistics reach pg_stat_database within a second.
    sleep 1
    commits1=$(psql --dbname="$database" -c "SELECT xact_commit FROM pg_stat_database WHERE datname = '$database'")
    # Where the machine's CPU went, by process (the processes of the pass's whole span; a process
    # that ended within it, such as an autovacuum worker, is not counted).
    cpu_breakdown "$WORK/$name.procs0" "$WORK/$name.procs1" "$requests" >"$WORK/$name.cpu"
    sed 's/^/   cpu /' "$WORK/$name.cpu" >&2
    local hz
    hz=$(getconf CLK_TCK)
    echo "RESULT name=$name requests=$requests rps=$rps p50_ms=$p50 p99_ms=$p99 p999_ms=$p999 non2xx=$non2xx errors=$errors" \
        "ipnd_cpu_us=$(awk -v t=$((ipnd1 - ipnd0)) -v n="$requests" -v hz="$hz" 'BEGIN { printf "%.0f", n ? t / hz / n * 1e6 : 0 }')" \
        "pg_cpu_us=$(awk -v t=$((primary1 - primary0)) -v n="$requests" -v hz="$hz" 'BEGIN { printf "%.0f", n ? t / hz / n * 1e6 : 0 }')" \
        "standby_cpu_us=$(awk -v t=$((standby1 - standby0)) -v n="$requests" -v hz="$hz" 'BEGIN { printf "%.0f", n ? t / hz / n * 1e6 : 0 }')" \
        "commits=$(awk -v c=$((commits1 - commits0)) -v n="$requests" 'BEGIN { printf "%.3f", n ? c / n : 0 }')" \
        "statements=$(awk -v c="$top" -v n="$requests" 'BEGIN { printf "%.2f", n ? c / n : 0 }')" \
        "nested=$(awk -v c="$nested" -v n="$requests" 'BEGIN { printf "%.2f", n ? c / n : 0 }')" \
        "exec_us=$(awk -v t="$exec" -v n="$requests" 'BEGIN { printf "%.0f", n ? t * 1000 / n : 0 }')" \
        "waits_us=[${waits// /,}]" | tee "$WORK/$name.result"
}

# scenario NAME NODES SET...: a fresh database, NODES nodes on it, one measured pass.
scenario() {
    local name=$1 nodes=$2 index
    shift 2
    psql --dbname="$IPND_TEST_PG_DATABASE" -c "CREATE DATABASE ipnd_$name" >/dev/null
    psql --dbname="ipnd_$name" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
    config_for "ipnd_$name"
    for index in $(seq 0 $((nodes - 1))); do
        NODES+=("$(start_node "ipnd_$name" $((PORT + 10 * index)) "$WORK/$name-node$index.log")")
        scripts/wait-ready.sh $((PORT + 10 * index)) 30
    done
    sleep 1
    echo "== $name: $nodes node(s), $CONNECTIONS connections in all, ${DURATION}s"
    measure "$name" "ipnd_$name" "$nodes" "$@"
}

STANDBY_UP=0
DUPLICATE=RESULT
if wanted one; then
    scenario one 1 one
    # Duplicates on the same node: the first notifications each thread surely had answered, again.
    LIMIT=$(( $(field min_issued_per_thread "$(grep '^RESULT' "$WORK/one-0.out")") - CONNECTIONS ))
    [ "$LIMIT" -gt 0 ] || LIMIT=1
    echo "== one node, duplicate notifications: wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s"
    PID=${NODES[0]}
    DUPLICATE=$(pass -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -s bench/replay.lua "http://127.0.0.1:$PORT" \
        -- "$WORK/one.bin" "$THREADS" "$LIMIT")
    echo "$DUPLICATE"
    stop_nodes
fi
if wanted two; then
    scenario two 2 two-a two-b
    stop_nodes
fi

if [ "$STANDBY" = 1 ] && { wanted sync_one || wanted sync_two; }; then
    echo "== a synchronous standby: a second server streaming the primary's WAL"
    mkdir -p "$STANDBY_DIR/data"
    chmod 700 "$STANDBY_DIR/data"
    [ "$(id -u)" -eq 0 ] && chown -R postgres:postgres "$STANDBY_DIR"
    as_postgres "$PRIMARY_BIN/pg_basebackup" --host="$IPND_TEST_PG_SOCKET_DIR" --port="$IPND_TEST_PG_PORT" \
        --username="$IPND_TEST_PG_USER" --pgdata="$STANDBY_DIR/data" --write-recovery-conf --checkpoint=fast \
        --wal-method=stream >/dev/null
    STANDBY_PORT=$((IPND_TEST_PG_PORT + 1))
    cat >>"$STANDBY_DIR/data/ipnd_test.conf" <<EOF
port = $STANDBY_PORT
unix_socket_directories = '$STANDBY_DIR'
listen_addresses = ''
ssl = off
hot_standby = on
EOF
    as_postgres "$PRIMARY_BIN/pg_ctl" start -D "$STANDBY_DIR/data" -l "$STANDBY_DIR/server.log" -w >/dev/null
    psql --dbname="$IPND_TEST_PG_DATABASE" -c "ALTER SYSTEM SET synchronous_standby_names = '*'" >/dev/null
    psql --dbname="$IPND_TEST_PG_DATABASE" -c "SELECT pg_reload_conf()" >/dev/null
    for _ in $(seq 1 100); do
        [ "$(psql --dbname="$IPND_TEST_PG_DATABASE" -c "SELECT sync_state FROM pg_stat_replication LIMIT 1")" = sync ] && break
        sleep 0.2
    done
    SYNC=$(psql --dbname="$IPND_TEST_PG_DATABASE" -c "SELECT sync_state FROM pg_stat_replication LIMIT 1")
    echo "   standby on port $STANDBY_PORT, replication $SYNC"
    [ "$SYNC" = sync ] || { echo "the standby is not synchronous" >&2; exit 1; }
    STANDBY_UP=1
    if wanted sync_one; then
        scenario sync_one 1 sync-one
        stop_nodes
    fi
    if wanted sync_two; then
        scenario sync_two 2 sync-a sync-b
        stop_nodes
    fi
fi

echo "== checking the databases"
STATUS=ok
CHECKS=""
for database in $(psql --dbname="$IPND_TEST_PG_DATABASE" -c "SELECT datname FROM pg_database WHERE datname LIKE 'ipnd\_%' AND datname <> 'ipnd_test' ORDER BY oid"); do
    queued=0
    if [ "$(psql --dbname="$database" -c "SELECT to_regclass('events_unsequenced') IS NOT NULL")" = t ]; then
        queued=$(psql --dbname="$database" -c "SELECT count(*) FROM events_unsequenced")
    fi
    read -r APPLIED DISTINCT DOUBLES OTHER EVENTS TRANSITIONS SEQS <<<"$(psql --dbname="$database" --field-separator=' ' -c "
        SELECT (SELECT count(*) FROM notifications WHERE verdict = 'applied'),
               (SELECT count(DISTINCT (provider, account, dedup_key)) FROM notifications WHERE verdict = 'applied'),
               (SELECT count(*) FROM (SELECT 1 FROM notifications WHERE verdict = 'applied'
                                      GROUP BY provider, account, dedup_key HAVING count(*) > 1) AS twice),
               (SELECT count(*) FROM notifications WHERE verdict NOT IN ('applied', 'duplicate')),
               (SELECT count(*) FROM events), (SELECT count(*) FROM transitions), (SELECT count(DISTINCT seq) FROM events)")"
    CHECKS+="$(printf '%-14s %s applied, %s keys applied twice, %s other verdicts, %s events for %s transitions, %s left unnumbered' \
        "$database" "$APPLIED" "$DOUBLES" "$OTHER" "$EVENTS" "$TRANSITIONS" "$queued")"$'\n'
    if [ "$DOUBLES" != 0 ] || [ "$APPLIED" != "$DISTINCT" ] || [ "$OTHER" != 0 ] || [ "$EVENTS" != "$TRANSITIONS" ] \
        || [ "$queued" != 0 ] || [ "$SEQS" != "$EVENTS" ]; then
        STATUS="FAILED ($database: a key applied twice, another verdict, events and transitions differ, or events left unnumbered)"
    fi
done

result_of() { cat "$WORK/$1.result"; }
row() { # NAME LABEL: the pass's line, if it ran
    [ -f "$WORK/$1.result" ] || return 0
    local r
    r=$(result_of "$1")
    printf '%-24s %10s %7s %7s %8s %6s %7s %7s %7s %7s %7s %7s %7s  %s\n' "$2" "$(field rps "$r")" "$(field p50_ms "$r")" "$(field p99_ms "$r")" \
        "$(field p999_ms "$r")" "$(($(field non2xx "$r") + $(field errors "$r")))" "$(field ipnd_cpu_us "$r")" "$(field pg_cpu_us "$r")" "$(field standby_cpu_us "$r")" \
        "$(field commits "$r")" "$(field statements "$r")" "$(field nested "$r")" "$(field exec_us "$r")" "$(field waits_us "$r")"
}
cat <<EOF

== ipnd on PostgreSQL ($(nproc) cores: ipnd, PostgreSQL and wrk on the same machine; pool_size $POOL_SIZE, max_batch $MAX_BATCH, ${DURATION}s per pass)
                         requests/s  p50 ms  p99 ms p99.9 ms errors ipnd µs/n pg µs/n stby µs/n commits/n stmts/n nested/n exec µs/n  waits (backend-µs per notification)
$(row one "one node")
$(row two "two nodes")
$(row sync_one "one node, sync standby")
$(row sync_two "two nodes, sync standby")
EOF
if wanted one; then
    echo "one node, duplicates   $(field rps "$DUPLICATE")/s, p99 $(field p99_ms "$DUPLICATE") ms"
    echo "CPU per request        ipnd / wrk µs, cores idle / stolen %: one node $(field ipnd_cpu_us "$DUPLICATE") / $(field wrk_cpu_us "$DUPLICATE") (duplicates), $(field idle_pct "$DUPLICATE") / $(field stolen_pct "$DUPLICATE")"
fi
printf '%s\nresult                 %s\n' "$CHECKS" "$STATUS"
target() { printf '%-20s %-52s %-7s %s\n' "$1" "$2" "$(awk "BEGIN { print ($3) ? \"met\" : \"missed\" }")" "$4"; }
if [ -f "$WORK/one.result" ]; then
    ONE=$(result_of one)
    target "targets" "one node >= 4,000/s at $CONNECTIONS connections" "$(field rps "$ONE") >= 4000" "$(field rps "$ONE")/s"
    target "" "one node p99 < 50 ms, no errors" "$(field p99_ms "$ONE") < 50 && $(field non2xx "$ONE") + $(field errors "$ONE") == 0" \
        "$(field p99_ms "$ONE") ms"
    if [ -f "$WORK/two.result" ]; then
        TWO=$(result_of two)
        target "" "two nodes >= one node" "$(field rps "$TWO") >= $(field rps "$ONE")" "$(field rps "$TWO")/s"
    fi
fi
if [ -f "$WORK/sync_one.result" ] && [ -f "$WORK/sync_two.result" ]; then
    SONE=$(result_of sync_one)
    STWO=$(result_of sync_two)
    target "" "sync standby: two nodes >= 1.5 x one node" "$(field rps "$STWO") >= 1.5 * $(field rps "$SONE")" \
        "$(field rps "$STWO")/s against $(field rps "$SONE")/s"
fi
[ "$STATUS" = ok ]
