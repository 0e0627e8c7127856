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

# make bench: the load benchmark of issue 6, on this machine, load generator included.
#
# Builds release, starts ipnd on a fresh store, pre-generates COUNT unique signed notifications
# across all five providers, measures the /healthz ceiling, replays the notifications with wrk
# (unique pass), replays already-seen ones (duplicate pass), measures the /healthz ceiling again,
# then checks the store: one applied notification per unique request, no dedup key applied twice,
# integrity_check ok. Each pass also reports ipnd's and wrk's CPU per request, how much of the
# machine stayed idle and how much of it the hypervisor gave to other guests (steal: a pass that
# lost CPU that way measured a slower machine than the others, which skews the ratios to the
# /healthz ceiling).
#
# The host's speed also drifts without any steal (ipnd's CPU per /healthz request has moved from
# 20 to 30 us between passes minutes apart), so the ceiling is measured before and after the
# notification passes and the ratios are taken against the higher of the two: a slow ceiling
# pass alone cannot lift a ratio.
#
# Before each pass it waits, up to QUIET_WAIT seconds, for a 3 s window in which the host steals
# under 3 % of the CPU, and the summary flags any pass that lost more than 5 % anyway.
#
# Then the delivery passes (scripts/bench-deliveries.sh): the unique pass again with one delivery
# target, and a backlog drained once its target comes back; then reconciliation's
# (scripts/bench-reconcile.sh): finding due orders among 1,000,000, and the unique pass with
# reconciliation off and on, asking 100 inquiries/s of a provider that answers in 200 ms.
#
# Knobs (environment): COUNT=500000 DURATION=10 CONNECTIONS=64 THREADS=2 PORT=18180 MAX_BATCH=256
#                      LOG_LEVEL=info QUIET_WAIT=120 (0: do not wait) KEEP=1 (keep the work directory)
#                      DELIVERIES=0 (skip the delivery passes) BACKLOG_EVENTS=100000 (the drained backlog)
#                      RECONCILE=0 (skip the reconciliation passes) RECONCILE_ROUNDS=2 RECONCILE_COUNT=200000
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/proc-ticks.sh
. scripts/proc-ticks.sh

# Enough for 10 s at 50,000/s: a unique pass that runs out of notifications re-sends them and fails.
COUNT=${COUNT:-500000}
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
PORT=${PORT:-18180}
OPS_PORT=$((PORT + 1))
MAX_BATCH=${MAX_BATCH:-256}
LOG_LEVEL=${LOG_LEVEL:-info}
QUIET_WAIT=${QUIET_WAIT:-120}

scripts/install-system-packages.sh libssl-dev libsqlite3-dev pkg-config wrk sqlite3 curl
# The same build as `make release`, the one deploy/README.md installs.
BIN=$(scripts/build-release.sh ipnd ipnd-bench)

WORK=$(mktemp -d /tmp/ipnd-bench.XXXXXX)
STORE="$WORK/ipnd.sqlite"
cleanup() {
    if [ -n "${PID:-}" ] && kill -0 "$PID" 2>/dev/null; then kill -TERM "$PID"; wait "$PID" 2>/dev/null || true; fi
    [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

chmod 600 config/ipnd.dev.yaml
export IPND_SERVER_PORT=$PORT IPND_OPS_PORT=$OPS_PORT IPND_STORE_PATH=$STORE IPND_STORE_MAX_BATCH=$MAX_BATCH
export IPND_LOG_LEVEL=$LOG_LEVEL

echo "== generating $COUNT signed notifications"
"$BIN/ipnd-bench" generate --config config/ipnd.dev.yaml --count "$COUNT" --output "$WORK/requests.bin" --prefix "B$(date +%s)"

echo "== starting ipnd (release) on 127.0.0.1:$PORT, store $STORE, max_batch $MAX_BATCH, log level $LOG_LEVEL"
"$BIN/ipnd" serve --config config/ipnd.dev.yaml 2>"$WORK/ipnd.log" &
PID=$!
scripts/wait-ready.sh "$PORT" 10
sleep 1
IDLE_RSS_KB=$(awk '/VmRSS/ {print $2}' "/proc/$PID/status")

# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

echo "== /healthz ceiling: wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s"
HEALTH=$(pass -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -s bench/healthz.lua "http://127.0.0.1:$PORT/healthz")
echo "$HEALTH"

echo "== unique notifications: wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s"
UNIQUE=$(pass -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -s bench/replay.lua "http://127.0.0.1:$PORT" \
    -- "$WORK/requests.bin" "$THREADS")
echo "$UNIQUE"
PEAK_UNIQUE_KB=$(awk '/VmHWM/ {print $2}' "/proc/$PID/status")

# Replay only what every thread surely got answered in the unique pass: all duplicates.
LIMIT=$(( $(field min_issued_per_thread "$UNIQUE") - CONNECTIONS ))
[ "$LIMIT" -gt 0 ] || LIMIT=1
echo "== duplicate notifications (first $LIMIT per thread, replayed): wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s"
DUPLICATE=$(pass -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -s bench/replay.lua "http://127.0.0.1:$PORT" \
    -- "$WORK/requests.bin" "$THREADS" "$LIMIT")
echo "$DUPLICATE"
PEAK_KB=$(awk '/VmHWM/ {print $2}' "/proc/$PID/status")

echo "== /healthz ceiling again: wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s"
HEALTH_AFTER=$(pass -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -s bench/healthz.lua "http://127.0.0.1:$PORT/healthz")
echo "$HEALTH_AFTER"
# The faster ceiling pass, and how far apart the two are (per cent of the faster).
read -r CEILING DRIFT < <(awk -v a="$(field rps "$HEALTH")" -v b="$(field rps "$HEALTH_AFTER")" 'BEGIN {
    hi = a > b ? a : b; lo = a > b ? b : a; printf "%s %.0f\n", hi, (hi > 0 ? 100 * (hi - lo) / hi : 0) }')

kill -TERM "$PID"
wait "$PID" || { echo "ipnd exited with $?"; exit 1; }
PID=

echo "== checking the store"
read -r APPLIED DISTINCT DOUBLES DUPLICATES OTHER <<<"$(sqlite3 -separator ' ' "$STORE" "
    SELECT (SELECT COUNT(*) FROM notifications WHERE verdict = 'applied'),
           (SELECT COUNT(DISTINCT provider || '|' || account || '|' || dedup_key) FROM notifications WHERE verdict = 'applied'),
           (SELECT COUNT(*) FROM (SELECT 1 FROM notifications WHERE verdict = 'applied'
                                  GROUP BY provider, account, dedup_key HAVING COUNT(*) > 1)),
           (SELECT COUNT(*) FROM notifications WHERE verdict = 'duplicate'),
           (SELECT COUNT(*) FROM notifications WHERE verdict NOT IN ('applied', 'duplicate'));")"
INTEGRITY=$(sqlite3 "$STORE" "PRAGMA integrity_check;")
UNIQUE_COMPLETED=$(field requests "$UNIQUE")
UNIQUE_ISSUED=$(field issued "$UNIQUE")
echo "applied=$APPLIED distinct_applied_keys=$DISTINCT keys_applied_twice=$DOUBLES duplicates=$DUPLICATES other_verdicts=$OTHER integrity=$INTEGRITY"

STATUS=ok
if [ "$DOUBLES" != 0 ] || [ "$APPLIED" != "$DISTINCT" ] || [ "$OTHER" != 0 ] || [ "$INTEGRITY" != ok ] \
   || [ "$APPLIED" -lt "$UNIQUE_COMPLETED" ] || [ "$APPLIED" -gt "$UNIQUE_ISSUED" ]; then
    STATUS="FAILED (the store does not hold one applied notification per unique request sent, or integrity failed)"
fi
if [ "$(field wrapped "$UNIQUE")" != 0 ]; then
    STATUS="FAILED (the unique pass used up all $COUNT notifications and sent some twice: run with a larger COUNT)"
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f%%", (b > 0 ? 100 * a / b : 0) }'; }
cpu() { echo "$(field ipnd_cpu_us "$1") / $(field wrk_cpu_us "$1") us, $(field idle_pct "$1") / $(field stolen_pct "$1") %"; }
socket_errors() { echo $(( $(field connect_errors "$1") + $(field read_errors "$1") + $(field write_errors "$1") + $(field timeouts "$1") )); }
errors() { echo $(( $(field non2xx "$1") + $(socket_errors "$1") )); }
row() { printf '%12s %8s %8s %9s %8s %7s' "$(field rps "$1")" "$(field p50_ms "$1")" "$(field p99_ms "$1")" "$(field p999_ms "$1")" "$(field non2xx "$1")" "$(socket_errors "$1")"; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f MB", k / 1024 }'; }
cat <<EOF

== ipnd benchmark ($(nproc) cores, wrk on the same machine, $THREADS threads, $CONNECTIONS connections, ${DURATION}s per pass)
                       requests/s   p50 ms   p99 ms  p99.9 ms  non-2xx  errors
/healthz ceiling     $(row "$HEALTH")
unique notifications $(row "$UNIQUE")
duplicate pass       $(row "$DUPLICATE")
/healthz again       $(row "$HEALTH_AFTER")
CPU per request      ipnd / wrk, then cores idle / stolen by the host: /healthz $(cpu "$HEALTH"); unique $(cpu "$UNIQUE"); duplicate $(cpu "$DUPLICATE"); /healthz again $(cpu "$HEALTH_AFTER")
unique / ceiling     $(ratio "$(field rps "$UNIQUE")" "$CEILING") (of the higher /healthz pass, $CEILING/s; of the first $(ratio "$(field rps "$UNIQUE")" "$(field rps "$HEALTH")"), of the second $(ratio "$(field rps "$UNIQUE")" "$(field rps "$HEALTH_AFTER")"))
duplicate / ceiling  $(ratio "$(field rps "$DUPLICATE")" "$CEILING")
RSS                  idle $(mb "$IDLE_RSS_KB"), peak after unique pass $(mb "$PEAK_UNIQUE_KB"), peak $(mb "$PEAK_KB")
store                $APPLIED applied ($UNIQUE_COMPLETED answered, $UNIQUE_ISSUED sent), $DOUBLES keys applied twice, $DUPLICATES duplicates, integrity $INTEGRITY
result               $STATUS
EOF
# The issue's targets, each met or missed (reported, not a failure: the store checks above are).
target() { printf '%-20s %-40s %-7s %s\n' "$1" "$2" "$(awk "BEGIN { print ($3) ? \"met\" : \"missed\" }")" "$4"; }
UNIQUE_RPS=$(field rps "$UNIQUE")
DUPLICATE_RPS=$(field rps "$DUPLICATE")
UNIQUE_P99=$(field p99_ms "$UNIQUE")
UNIQUE_ERRORS=$(errors "$UNIQUE")
SHARE=$(awk -v a="$UNIQUE_RPS" -v b="$CEILING" 'BEGIN { printf "%.1f", (b > 0 ? 100 * a / b : 0) }')
target "targets" "unique >= 20,000/s at $CONNECTIONS connections" "$UNIQUE_RPS >= 20000" "$UNIQUE_RPS/s"
target "" "unique p99 < 25 ms, no errors" "$UNIQUE_P99 < 25 && $UNIQUE_ERRORS == 0" "$UNIQUE_P99 ms, $UNIQUE_ERRORS"
target "" "duplicates >= 30,000/s" "$DUPLICATE_RPS >= 30000" "$DUPLICATE_RPS/s"
target "" "unique >= 35% of the /healthz ceiling" "$SHARE >= 35" "$SHARE% (of the higher /healthz pass)"
target "" "peak RSS < 150 MB, idle RSS < 40 MB" "$PEAK_KB < 150 * 1024 && $IDLE_RSS_KB < 40 * 1024" "$(mb "$PEAK_KB"), $(mb "$IDLE_RSS_KB")"
for pass_name in "/healthz:$HEALTH" "unique:$UNIQUE" "duplicate:$DUPLICATE" "second /healthz:$HEALTH_AFTER"; do
    stolen=$(field stolen_pct "${pass_name#*:}")
    if awk -v s="$stolen" 'BEGIN { exit !(s > 5) }'; then
        echo "note                 the host took $stolen % of the CPU during the ${pass_name%%:*} pass: its figures measured a slower machine and are not comparable with steal-free runs"
    fi
done
if [ "$DRIFT" -gt 10 ]; then
    echo "note                 the two /healthz passes differ by $DRIFT %: the host's speed moved during this run, and the ratios are taken against the faster pass"
fi
[ "$STATUS" = ok ]
if [ "${DELIVERIES:-1}" != 0 ]; then
    # shellcheck source=scripts/bench-deliveries.sh
    . scripts/bench-deliveries.sh
fi

# Reconciliation (issue 37): finding due orders, and receiving while asking; RECONCILE=0 skips it.
if [ "${RECONCILE:-1}" != 0 ]; then
    # shellcheck source=scripts/bench-reconcile.sh
    . scripts/bench-reconcile.sh
fi

# The ops console's pages on 1,000,000 notifications and 200,000 orders (issue 32); CONSOLE=0 skips it.
if [ "${CONSOLE:-1}" != 0 ]; then
    echo
    echo "== console pages (scripts/bench-console.sh)"
    scripts/bench-console.sh
fi
