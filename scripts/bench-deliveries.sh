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

# The delivery passes of make bench (issue 30), sourced by scripts/bench.sh after its own passes:
# it uses BIN, WORK, PORT, THREADS, CONNECTIONS, DURATION and UNIQUE_RPS (the same run's unique
# figure without a target), and the pass() and field() helpers.
#
# 1. Unique notifications with one delivery target: `ipnd-bench receive`, a local receiver
#    answering 204, at max_in_flight 16 (the default). Prints notifications/s beside the same
#    run's figure without a target, the events delivered per second under that load, and how long
#    the backlog left when the load stops takes to drain.
# 2. A backlog with the target down: the unique pass with the receiver stopped, long enough at
#    the rate without a target to owe at least BACKLOG_EVENTS events (100,000: issue 30's
#    figure), then the receiver started: how long the backlog takes to drain, and at what rate.
RECEIVER_PORT=$((PORT + 7))
SECRET="whsec_$(head -c 32 /dev/urandom | base64 -w0)"
KEY="$(pwd)/config/dev-keys/alipay-test.pem"
# The dev config with the target, its relative key path made absolute (the config lives in WORK).
sed "s#dev-keys/alipay-test.pem#$KEY#" config/ipnd.dev.yaml > "$WORK/deliveries.yaml"
cat >> "$WORK/deliveries.yaml" <<EOF
deliveries:
  - name: bench
    url: http://127.0.0.1:$RECEIVER_PORT/hooks
    secret: "$SECRET"
EOF
chmod 600 "$WORK/deliveries.yaml"

received() { curl -s "http://127.0.0.1:$RECEIVER_PORT/count" | awk '{ print $2 }'; }
start_receiver() {
    "$BIN/ipnd-bench" receive --port "$RECEIVER_PORT" >"$WORK/receiver.log" 2>&1 &
    RECEIVER=$!
    for _ in $(seq 50); do curl -s "http://127.0.0.1:$RECEIVER_PORT/count" >/dev/null && return 0; sleep 0.1; done
    echo "the receiver did not start" >&2
    return 1
}
stop_receiver() { kill "$RECEIVER" 2>/dev/null || true; wait "$RECEIVER" 2>/dev/null || true; RECEIVER=; }
start_ipnd() {
    IPND_STORE_PATH="$1" "$BIN/ipnd" serve --config "$WORK/deliveries.yaml" 2>"$WORK/ipnd-deliveries.log" &
    PID=$!
    scripts/wait-ready.sh "$PORT" 10
    sleep 1
}
stop_ipnd() { kill -TERM "$PID"; wait "$PID" || true; PID=; }
events_in() { sqlite3 "$1" "SELECT COUNT(*) FROM events"; }
now() { date +%s.%N; }
# wait_drained STORE TIMEOUT: until the receiver has every event of STORE; prints the seconds.
wait_drained() {
    local total started
    total=$(events_in "$1")
    started=$(now)
    while [ "$(received)" -lt "$total" ]; do
        if awk -v s="$started" -v t="$(now)" -v limit="$2" 'BEGIN { exit !(t - s > limit) }'; then
            echo "timeout"
            return 0
        fi
        sleep 0.05
    done
    awk -v s="$started" -v t="$(now)" 'BEGIN { printf "%.1f", t - s }'
}

echo "== unique notifications with one delivery target (receiver answering 204): wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s"
start_receiver
start_ipnd "$WORK/deliveries.sqlite"
WITH=$(pass -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -s bench/replay.lua "http://127.0.0.1:$PORT" -- "$WORK/requests.bin" "$THREADS")
DELIVERED_UNDER_LOAD=$(received)
echo "$WITH"
DRAIN_AFTER_LOAD=$(wait_drained "$WORK/deliveries.sqlite" 300)
EVENTS_WITH=$(events_in "$WORK/deliveries.sqlite")
stop_ipnd
stop_receiver

BACKLOG_EVENTS=${BACKLOG_EVENTS:-100000}
BACKLOG_SECONDS=$(awk -v n="$BACKLOG_EVENTS" -v r="$UNIQUE_RPS" -v d="$DURATION" 'BEGIN { s = (r > 0 ? int(1.2 * n / r) + 1 : d); print (s > d ? s : d) }')
echo "== a backlog with the target down (${BACKLOG_SECONDS}s of unique notifications), then the receiver started"
start_ipnd "$WORK/backlog.sqlite"
BACKLOG_PASS=$(pass -t"$THREADS" -c"$CONNECTIONS" -d"${BACKLOG_SECONDS}s" -s bench/replay.lua "http://127.0.0.1:$PORT" -- "$WORK/requests.bin" "$THREADS")
echo "$BACKLOG_PASS"
BACKLOG=$(events_in "$WORK/backlog.sqlite")
# Leave the retry schedule's first waits behind: the attempts made while it was down are retried
# at 5 s, 30 s, ... A drain measures what the service does once they are due, so the receiver
# starts and the deliveries are made due at once, as `ipnd deliveries retry` would.
start_receiver
IPND_STORE_PATH="$WORK/backlog.sqlite" "$BIN/ipnd" deliveries retry --config "$WORK/deliveries.yaml" --target bench --state pending >/dev/null
DRAIN_BACKLOG=$(wait_drained "$WORK/backlog.sqlite" 600)
stop_ipnd
stop_receiver

SHARE=$(awk -v a="$(field rps "$WITH")" -v b="$UNIQUE_RPS" 'BEGIN { printf "%.1f", (b > 0 ? 100 * a / b : 0) }')
UNDER_LOAD_RATE=$(awk -v n="$DELIVERED_UNDER_LOAD" -v d="$DURATION" 'BEGIN { printf "%.0f", n / d }')
DRAIN_RATE=$(awk -v n="$BACKLOG" -v t="$DRAIN_BACKLOG" 'BEGIN { printf "%.0f", (t + 0 > 0 ? n / t : 0) }')
cat <<EOF

== delivery passes (one target, a local receiver answering 204, max_in_flight 16)
unique without target  $UNIQUE_RPS/s (the pass above)
unique with target     $(field rps "$WITH")/s, p99 $(field p99_ms "$WITH") ms, $(field non2xx "$WITH") non-2xx: $SHARE % of the figure without
delivered under load   $DELIVERED_UNDER_LOAD of $EVENTS_WITH events during the ${DURATION}s pass: $UNDER_LOAD_RATE/s; the rest drained in $DRAIN_AFTER_LOAD s after the load stopped
backlog drain          $BACKLOG events owed while the target was down, drained in $DRAIN_BACKLOG s once it was back: $DRAIN_RATE/s
EOF
target() { printf '%-20s %-48s %-7s %s\n' "$1" "$2" "$(awk "BEGIN { print ($3) ? \"met\" : \"missed\" }")" "$4"; }
target "delivery targets" "unique with a target >= 90% of without" "$SHARE >= 90" "$SHARE %"
target "" "events delivered >= 5,000/s (backlog drain)" "$DRAIN_RATE >= 5000" "$DRAIN_RATE/s ($BACKLOG events)"
