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

# make bench STORE=postgres: the load benchmark on the PostgreSQL store (issue 31), on this
# machine, the database and the load generator included.
#
# Starts a private PostgreSQL server (scripts/pg-test-server.sh: fsync and synchronous_commit on),
# the release ipnd on it, and replays pre-generated unique signed notifications with wrk at
# CONNECTIONS connections (one node), then already-seen ones (duplicates); then a second node on
# the same database, each node driven by its own wrk with half the connections and its own
# notifications (two nodes). Checks the database: one applied notification per unique request,
# none twice, events gap-free.
#
# Knobs (environment): COUNT=300000 DURATION=10 CONNECTIONS=64 THREADS=2 PORT=18280 MAX_BATCH=256
#                      POOL_SIZE=16 LOG_LEVEL=warning QUIET_WAIT=120 KEEP=1
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/proc-ticks.sh
. scripts/proc-ticks.sh

COUNT=${COUNT:-300000}
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
PORT=${PORT:-18280}
OPS_PORT=$((PORT + 1))
MAX_BATCH=${MAX_BATCH:-256}
POOL_SIZE=${POOL_SIZE:-16}
LOG_LEVEL=${LOG_LEVEL:-warning}
QUIET_WAIT=${QUIET_WAIT:-120}

scripts/install-system-packages.sh libssl-dev libsqlite3-dev pkg-config wrk postgresql
BIN=$(scripts/build-release.sh ipnd ipnd-bench)

WORK=$(mktemp -d /tmp/ipnd-bench-pg.XXXXXX)
PGDIR=$(mktemp -d /tmp/ipndbpg.XXXXXX)
chmod 755 "$PGDIR"
PID=
PID2=
cleanup() {
    for pid in $PID $PID2; do
        if kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; fi
    done
    scripts/pg-test-server.sh stop "$PGDIR" >/dev/null 2>&1 || true
    rm -rf "$PGDIR"
    [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

scripts/pg-test-server.sh start "$PGDIR" >/dev/null
eval "$(scripts/pg-test-server.sh env "$PGDIR")"
psql() { "$IPND_TEST_PG_BIN/psql" --no-psqlrc --quiet --no-align --tuples-only --host="$IPND_TEST_PG_SOCKET_DIR" \
    --port="$IPND_TEST_PG_PORT" --username="$IPND_TEST_PG_USER" "$@"; }
psql --dbname="$IPND_TEST_PG_DATABASE" -c "CREATE DATABASE ipnd_bench" >/dev/null

KEY="$(pwd)/config/dev-keys/alipay-test.pem"
# The dev config on the database: its SQLite path replaced by store.postgres.
sed -e "s#dev-keys/alipay-test.pem#$KEY#" \
    -e "s#^  path: .*#  postgres:\n    host: $IPND_TEST_PG_SOCKET_DIR\n    port: $IPND_TEST_PG_PORT\n    database: ipnd_bench\n    user: $IPND_TEST_PG_USER\n    tls: disable\n    pool_size: $POOL_SIZE#" \
    config/ipnd.dev.yaml > "$WORK/ipnd.yaml"
chmod 600 "$WORK/ipnd.yaml"
export IPND_STORE_MAX_BATCH=$MAX_BATCH IPND_LOG_LEVEL=$LOG_LEVEL

echo "== generating signed notifications: $COUNT for one node, $((COUNT / 2)) for each of two"
STAMP=$(date +%s)
"$BIN/ipnd-bench" generate --config "$WORK/ipnd.yaml" --count "$COUNT" --output "$WORK/one.bin" --prefix "P1$STAMP" >/dev/null
"$BIN/ipnd-bench" generate --config "$WORK/ipnd.yaml" --count "$((COUNT / 2))" --output "$WORK/two-a.bin" --prefix "P2$STAMP" >/dev/null
"$BIN/ipnd-bench" generate --config "$WORK/ipnd.yaml" --count "$((COUNT / 2))" --output "$WORK/two-b.bin" --prefix "P3$STAMP" >/dev/null

start_node() { # PORT LOG: prints the pid
    # Its stdout not the $(...) pipe: the caller's substitution would wait for the node to exit.
    IPND_SERVER_PORT=$1 IPND_OPS_PORT=$(($1 + 1)) "$BIN/ipnd" serve --config "$WORK/ipnd.yaml" >/dev/null 2>"$2" &
    echo $!
}
PID=$(start_node "$PORT" "$WORK/node1.log")
scripts/wait-ready.sh "$PORT" 30
sleep 1

# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

echo "== one node, unique notifications: wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s"
UNIQUE=$(pass -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -s bench/replay.lua "http://127.0.0.1:$PORT" -- "$WORK/one.bin" "$THREADS")
echo "$UNIQUE"
LIMIT=$(( $(field min_issued_per_thread "$UNIQUE") - CONNECTIONS ))
[ "$LIMIT" -gt 0 ] || LIMIT=1
echo "== one node, duplicate notifications: wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s"
DUPLICATE=$(pass -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -s bench/replay.lua "http://127.0.0.1:$PORT" \
    -- "$WORK/one.bin" "$THREADS" "$LIMIT")
echo "$DUPLICATE"

PORT2=$((PORT + 10))
PID2=$(start_node "$PORT2" "$WORK/node2.log")
scripts/wait-ready.sh "$PORT2" 30
sleep 1
HALF=$((CONNECTIONS / 2))
echo "== two nodes, unique notifications: two wrk -t1 -c$HALF -d${DURATION}s, one per node"
wait_for_quiet
# Each node its own fresh notifications.
wrk -t1 -c"$HALF" -d"${DURATION}s" -s bench/replay.lua "http://127.0.0.1:$PORT" -- "$WORK/two-a.bin" 1 >"$WORK/wrk1.out" &
WRK1=$!
wrk -t1 -c"$HALF" -d"${DURATION}s" -s bench/replay.lua "http://127.0.0.1:$PORT2" -- "$WORK/two-b.bin" 1 >"$WORK/wrk2.out" &
WRK2=$!
wait "$WRK1" || true
wait "$WRK2" || true
kill -TERM "$PID" "$PID2"
# Started in $(start_node ...), the nodes are not this shell's children: wait until both are gone.
while kill -0 "$PID" 2>/dev/null || kill -0 "$PID2" 2>/dev/null; do sleep 0.1; done
PID=
PID2=

echo "== checking the database"
read -r APPLIED DISTINCT DOUBLES OTHER <<<"$(psql --dbname=ipnd_bench --field-separator=' ' -c "
    SELECT (SELECT count(*) FROM notifications WHERE verdict = 'applied'),
           (SELECT count(DISTINCT (provider, account, dedup_key)) FROM notifications WHERE verdict = 'applied'),
           (SELECT count(*) FROM (SELECT 1 FROM notifications WHERE verdict = 'applied'
                                  GROUP BY provider, account, dedup_key HAVING count(*) > 1) AS twice),
           (SELECT count(*) FROM notifications WHERE verdict NOT IN ('applied', 'duplicate'))")"
read -r EVENTS TRANSITIONS <<<"$(psql --dbname=ipnd_bench --field-separator=' ' -c "
    SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM transitions)")"
STATUS=ok
if [ "$DOUBLES" != 0 ] || [ "$APPLIED" != "$DISTINCT" ] || [ "$OTHER" != 0 ] || [ "$EVENTS" != "$TRANSITIONS" ]; then
    STATUS="FAILED (a key applied twice, another verdict, or events and transitions differ)"
fi

socket_errors() { echo $(( $(field connect_errors "$1") + $(field read_errors "$1") + $(field write_errors "$1") + $(field timeouts "$1") )); }
row() { printf '%12s %8s %8s %9s %8s %7s' "$(field rps "$1")" "$(field p50_ms "$1")" "$(field p99_ms "$1")" "$(field p999_ms "$1")" "$(field non2xx "$1")" "$(socket_errors "$1")"; }
TWO_A=$(grep '^RESULT' "$WORK/wrk1.out" || true)
TWO_B=$(grep '^RESULT' "$WORK/wrk2.out" || true)
TWO_TOTAL=$(awk -v a="$(field rps "$TWO_A")" -v b="$(field rps "$TWO_B")" 'BEGIN { printf "%.0f", a + b }')
cat <<EOF

== ipnd on PostgreSQL ($(nproc) cores: ipnd, PostgreSQL and wrk on the same machine; pool_size $POOL_SIZE, max_batch $MAX_BATCH, ${DURATION}s per pass)
                        requests/s   p50 ms   p99 ms  p99.9 ms  non-2xx  errors
one node, unique      $(row "$UNIQUE")
one node, duplicate   $(row "$DUPLICATE")
two nodes, node 1     $(row "$TWO_A")
two nodes, node 2     $(row "$TWO_B")
two nodes, total      $TWO_TOTAL/s
CPU per request       ipnd / wrk us, cores idle / stolen %: unique $(field ipnd_cpu_us "$UNIQUE") / $(field wrk_cpu_us "$UNIQUE"), $(field idle_pct "$UNIQUE") / $(field stolen_pct "$UNIQUE")
database              $APPLIED applied, $DOUBLES keys applied twice, $OTHER other verdicts, $EVENTS events for $TRANSITIONS transitions
result                $STATUS
EOF
target() { printf '%-20s %-44s %-7s %s\n' "$1" "$2" "$(awk "BEGIN { print ($3) ? \"met\" : \"missed\" }")" "$4"; }
UNIQUE_ERRORS=$(( $(field non2xx "$UNIQUE") + $(socket_errors "$UNIQUE") ))
target "targets" "one node >= 5,000/s at $CONNECTIONS connections" "$(field rps "$UNIQUE") >= 5000" "$(field rps "$UNIQUE")/s"
target "" "p99 < 50 ms, no errors" "$(field p99_ms "$UNIQUE") < 50 && $UNIQUE_ERRORS == 0" "$(field p99_ms "$UNIQUE") ms, $UNIQUE_ERRORS"
[ "$STATUS" = ok ]
