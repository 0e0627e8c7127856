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

# make bench-console (and the last pass of make bench): the ops console's page timings on a
# large store (issue 32: every page under 100 ms on 1,000,000 notifications and 200,000 orders).
#
# Builds release, lets `ipnd serve` create a store of the current schema, seeds it by direct SQL
# (tools/console_bench.py seed: orders, notifications over DAYS days, transitions, events, one
# delivery target's deliveries, the hourly counts), starts the release daemon on it, signs in
# through the console's form and prints p50 and p99 per page over REQUESTS requests each, on one
# keep-alive connection.
#
# Knobs (environment): ORDERS=200000 NOTIFICATIONS=1000000 DAYS=10 REQUESTS=200 PORT=18190
#                      CONSOLE_STORE=PATH (measure an existing seeded store instead of making one)
#                      KEEP=1 (keep the work directory and its store)
set -euo pipefail
cd "$(dirname "$0")/.."

ORDERS=${ORDERS:-200000}
NOTIFICATIONS=${NOTIFICATIONS:-1000000}
DAYS=${DAYS:-10}
REQUESTS=${REQUESTS:-200}
PORT=${PORT:-18190}
OPS_PORT=$((PORT + 1))
TOKEN=dev-ops-token  # config/ipnd.dev.yaml's ops token

scripts/install-system-packages.sh libssl-dev libsqlite3-dev pkg-config python3 curl
BIN=$(scripts/build-release.sh ipnd)

WORK=$(mktemp -d /tmp/ipnd-bench-console.XXXXXX)
cleanup() {
    if [ -n "${PID:-}" ] && kill -0 "$PID" 2>/dev/null; then kill -TERM "$PID"; wait "$PID" 2>/dev/null || true; fi
    [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

# The dev config, with a second Unlimint account (the seeded store has orders of both; the
# console filters only by configured accounts) and its relative key path made absolute.
CONFIG=$WORK/ipnd.yaml
sed -e "s#simulate_private_key_file: dev-keys/#simulate_private_key_file: $PWD/config/dev-keys/#" \
    -e "/callback_secret: pzQf529Wa0AV/a\\    - account: shop2\\n      callback_secret: bench-shop2-secret" \
    config/ipnd.dev.yaml >"$CONFIG"
chmod 600 "$CONFIG"
export IPND_SERVER_PORT=$PORT IPND_OPS_PORT=$OPS_PORT IPND_LOG_LEVEL=warning

start() {
    "$BIN/ipnd" serve --config "$CONFIG" 2>>"$WORK/ipnd.log" &
    PID=$!
    scripts/wait-ready.sh "$PORT" 60
}
stop() {
    kill -TERM "$PID"
    wait "$PID" || { echo "ipnd exited with $?; its log:"; cat "$WORK/ipnd.log"; exit 1; }
    PID=
}

if [ -n "${CONSOLE_STORE:-}" ]; then
    export IPND_STORE_PATH=$CONSOLE_STORE
else
    export IPND_STORE_PATH=$WORK/ipnd.sqlite
    echo "== creating a store of the current schema: $IPND_STORE_PATH"
    start
    stop
    echo "== seeding $ORDERS orders and $NOTIFICATIONS notifications over $DAYS days (direct SQL)"
    started=$(date +%s)
    python3 tools/console_bench.py seed "$IPND_STORE_PATH" --orders "$ORDERS" --notifications "$NOTIFICATIONS" --days "$DAYS"
    echo "   seeded in $(( $(date +%s) - started )) s; $(du -h "$IPND_STORE_PATH" | cut -f1)"
fi

echo "== ipnd (release) on the seeded store; console on 127.0.0.1:$OPS_PORT"
start
echo "== console pages: $REQUESTS requests each, one keep-alive connection, after 20 unmeasured"
python3 tools/console_bench.py measure "http://127.0.0.1:$OPS_PORT" "$TOKEN" --requests "$REQUESTS" --json "$WORK/console-pages.json"
stop
[ -z "${KEEP:-}" ] || echo "kept: $WORK"
