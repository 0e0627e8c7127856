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

# Reconciliation's passes of make bench (issue 37), sourced by scripts/bench.sh after its own
# passes: it uses BIN, WORK, PORT, THREADS, CONNECTIONS, DURATION and the pass() and field()
# helpers. RECONCILE=0 skips them.
#
# 1. Finding due orders: a store of 1,000,000 orders, 10,000 of them due (`ipnd-bench
#    due-orders`): the index read alone, and the reconciler's claim (the read, the lease
#    written, the commit), p50 and p99 over 100 batches of 64, with SQLite's query plan.
# 2. Receiving while asking: the unique pass on a store holding 100,000 due iPay88 orders, with
#    reconciliation off, then on (asking `ipnd-bench provider`, which answers every re-query after
#    200 ms, at per_account_per_minute 6000: 100 inquiries/s), alternated RECONCILE_ROUNDS times
#    (2), each pass on a fresh copy of the store with notifications of its own. Prints both
#    figures, the share, and the inquiries/s made during the passes with it on.
RECONCILE_PORT=$((PORT + 9))
RECONCILE_ROUNDS=${RECONCILE_ROUNDS:-2}
RECONCILE_COUNT=${RECONCILE_COUNT:-200000}

echo
echo "== reconciliation: finding a batch of due orders among 1,000,000 (10,000 due)"
# Captured, then printed: `tee /dev/stderr` reopens a log file the output is redirected to and
# writes over it from its start.
DUE_OUTPUT=$("$BIN/ipnd-bench" due-orders --store "$WORK/due.sqlite" --orders 1000000 --due 10000 --measure)
echo "$DUE_OUTPUT"
DUE_RESULT=$(echo "$DUE_OUTPUT" | grep '^RESULT')
rm -f "$WORK/due.sqlite"*

echo "== reconciliation: seeding 200,000 orders, 100,000 of them due iPay88 orders"
"$BIN/ipnd-bench" due-orders --store "$WORK/reconcile-base.sqlite" --orders 200000 --due 100000 --prefix RQ
KEY="$(pwd)/config/dev-keys/alipay-test.pem"
sed "s#dev-keys/alipay-test.pem#$KEY#" config/ipnd.dev.yaml > "$WORK/reconcile-off.yaml"
# The same config with the iPay88 account asked, at 100 inquiries/s.
awk -v url="http://127.0.0.1:$RECONCILE_PORT/epayment/enquiry.asp" '
    { print }
    /signature: auto/ && !done { print "      inquiry:"; print "        url: " url; done = 1 }
    END { print "reconcile:"; print "  schedule: [1h]"; print "  give_up_after: 7d"; print "  max_in_flight: 32";
          print "  per_account_per_minute: 6000"; print "  timeout_seconds: 10" }
' "$WORK/reconcile-off.yaml" > "$WORK/reconcile-on.yaml"
chmod 600 "$WORK/reconcile-off.yaml" "$WORK/reconcile-on.yaml"
"$BIN/ipnd-bench" provider --port "$RECONCILE_PORT" --delay-ms 200 >"$WORK/provider.log" 2>&1 &
PROVIDER=$!
for _ in $(seq 50); do curl -s "http://127.0.0.1:$RECONCILE_PORT/count" >/dev/null && break; sleep 0.1; done
asked_so_far() { curl -s "http://127.0.0.1:$RECONCILE_PORT/count" | awk '{ print $1 }'; }

OFF_RPS=()
ON_RPS=()
ASKED_RATES=()
for round in $(seq "$RECONCILE_ROUNDS"); do
    for mode in off on; do
        "$BIN/ipnd-bench" generate --config "$WORK/reconcile-off.yaml" --count "$RECONCILE_COUNT" \
            --output "$WORK/reconcile-requests.bin" --prefix "Q$round$mode$(date +%s)" >/dev/null
        cp "$WORK/reconcile-base.sqlite" "$WORK/reconcile-$mode.sqlite"
        IPND_STORE_PATH="$WORK/reconcile-$mode.sqlite" "$BIN/ipnd" serve --config "$WORK/reconcile-$mode.yaml" 2>"$WORK/ipnd-reconcile.log" &
        PID=$!
        scripts/wait-ready.sh "$PORT" 10
        sleep 2
        ASKED0=$(asked_so_far)
        ASKED_FROM=$(date +%s.%N)
        echo "== round $round, reconciliation $mode: unique notifications, wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s"
        RESULT=$(pass -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -s bench/replay.lua "http://127.0.0.1:$PORT" \
            -- "$WORK/reconcile-requests.bin" "$THREADS")
        ASKED1=$(asked_so_far)
        # Over the wall time between the two counts (the pass waits for a quiet host first).
        ASKED_SECONDS=$(awk -v a="$ASKED_FROM" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
        echo "$RESULT asked=$((ASKED1 - ASKED0)) asked_seconds=$ASKED_SECONDS"
        kill -TERM "$PID"; wait "$PID" || true; PID=
        rm -f "$WORK/reconcile-$mode.sqlite"*
        if [ "$mode" = off ]; then
            OFF_RPS+=("$(field rps "$RESULT")")
        else
            ON_RPS+=("$(field rps "$RESULT")")
            ASKED_RATES+=("$(awk -v n=$((ASKED1 - ASKED0)) -v d="$ASKED_SECONDS" 'BEGIN { printf "%.0f", n / d }')")
        fi
    done
done
kill "$PROVIDER" 2>/dev/null || true
wait "$PROVIDER" 2>/dev/null || true
rm -f "$WORK/reconcile-base.sqlite"*

mean() { printf '%s\n' "$@" | awk '{ s += $1; n++ } END { printf "%.0f", (n ? s / n : 0) }'; }
OFF_MEAN=$(mean "${OFF_RPS[@]}")
ON_MEAN=$(mean "${ON_RPS[@]}")
ASKED_MEAN=$(mean "${ASKED_RATES[@]}")
RECONCILE_SHARE=$(awk -v a="$ON_MEAN" -v b="$OFF_MEAN" 'BEGIN { printf "%.1f", (b > 0 ? 100 * a / b : 0) }')
cat <<EOF

== reconciliation passes ($RECONCILE_ROUNDS rounds, off then on, a fresh store each pass)
due orders           $(field claim_p50_ms "$DUE_RESULT") / $(field claim_p99_ms "$DUE_RESULT") ms p50 / p99 to claim a batch of 64 (read, lease, commit); the index read alone $(field due_read_p50_ms "$DUE_RESULT") / $(field due_read_p99_ms "$DUE_RESULT") ms
unique, reconcile off ${OFF_RPS[*]} /s (mean $OFF_MEAN)
unique, reconcile on  ${ON_RPS[*]} /s (mean $ON_MEAN), asking ${ASKED_RATES[*]} inquiries/s
EOF
target() { printf '%-20s %-48s %-7s %s\n' "$1" "$2" "$(awk "BEGIN { print ($3) ? \"met\" : \"missed\" }")" "$4"; }
target "reconciliation" "finding a batch of due orders < 10 ms (p99)" "$(field due_read_p99_ms "$DUE_RESULT") < 10" "$(field due_read_p99_ms "$DUE_RESULT") ms (the index read; with the lease's commit $(field claim_p99_ms "$DUE_RESULT") ms)"
target "" "asks at its configured rate (100/s)" "$ASKED_MEAN >= 95 && $ASKED_MEAN <= 101" "$ASKED_MEAN/s"
target "" "unique with reconciliation >= 95% of without" "$RECONCILE_SHARE >= 95" "$RECONCILE_SHARE %"
