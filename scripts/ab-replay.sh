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

# scripts/ab-replay.sh [-n ROUNDS] SETTING...: alternated unique-notification replays, for A/B
# comparisons that a single `make bench` cannot settle on a machine whose speed drifts.
#
# Each SETTING is either a path to an ipnd binary or a list of environment assignments
# ("IPND_STORE_MAX_BATCH=1"; "BIN=/tmp/ipnd-old IPND_LOG_LEVEL=warning"). For each of ROUNDS
# rounds (default 3) every setting gets a fresh store, a fresh `ipnd serve` on config/ipnd.dev.yaml
# and one wrk replay of unique notifications (bench/replay.lua), one after the other, and a line:
# requests/s, p99, the share of both cores left idle and taken by the host (steal), and ipnd's
# user + system CPU per answered request, all from /proc.
#
# Knobs (environment): DURATION=5 CONNECTIONS=64 THREADS=2 PORT=18280
#                      BIN (default: the release build) REQUESTS (a file from `ipnd-bench generate`)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/proc-ticks.sh
. scripts/proc-ticks.sh

ROUNDS=3
if [ "${1:-}" = "-n" ]; then ROUNDS=$2; shift 2; fi
[ $# -gt 0 ] || { sed -n '2,13p' "$0" >&2; exit 64; }
DURATION=${DURATION:-5}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
PORT=${PORT:-18280}

scripts/install-system-packages.sh libssl-dev libsqlite3-dev pkg-config wrk
RELEASE=$(scripts/build-release.sh ipnd ipnd-bench)
WORK=$(mktemp -d /tmp/ipnd-ab.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
chmod 600 config/ipnd.dev.yaml
REQUESTS=${REQUESTS:-}
if [ -z "$REQUESTS" ]; then
    REQUESTS=$WORK/requests.bin
    # Enough unique notifications for the longest pass at 50,000/s.
    "$RELEASE/ipnd-bench" generate --config config/ipnd.dev.yaml --count $((DURATION * 50000)) \
        --output "$REQUESTS" --prefix "AB$(date +%s)" >/dev/null
fi

run() {
    local setting=$1 binary=${BIN:-$RELEASE/ipnd} store=$WORK/store
    rm -rf "$store"; mkdir -p "$store"
    local -a assignments=()
    if [ -x "$setting" ] && [ -f "$setting" ]; then binary=$setting; else read -r -a assignments <<<"$setting"; fi
    for assignment in "${assignments[@]}"; do
        if [ "${assignment%%=*}" = BIN ]; then binary=${assignment#BIN=}; fi
    done
    env "${assignments[@]}" IPND_SERVER_PORT="$PORT" IPND_OPS_PORT=$((PORT + 1)) IPND_STORE_PATH="$store/ipnd.sqlite" \
        "$binary" serve --config config/ipnd.dev.yaml 2>"$store/ipnd.log" &
    local pid=$!
    scripts/wait-ready.sh "$PORT" 10 >/dev/null
    sleep 0.5
    local total0 idle0 steal0 total1 idle1 steal1 cpu0 cpu1 result
    read -r total0 idle0 steal0 < <(cpu_ticks)
    cpu0=$(process_ticks "$pid")
    result=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -s bench/replay.lua "http://127.0.0.1:$PORT" -- "$REQUESTS" "$THREADS" | grep '^RESULT')
    cpu1=$(process_ticks "$pid")
    read -r total1 idle1 steal1 < <(cpu_ticks)
    kill -TERM "$pid"; wait "$pid" || true
    awk -v setting="$setting" -v r="$result" -v cpu=$((cpu1 - cpu0)) -v hz="$(getconf CLK_TCK)" \
        -v total=$((total1 - total0)) -v idle=$((idle1 - idle0)) -v steal=$((steal1 - steal0)) 'BEGIN {
        n = split(r, f, " "); for (i = 1; i <= n; i++) { split(f[i], kv, "="); v[kv[1]] = kv[2] }
        printf "%-40s %9.0f/s  p99 %6.2f ms  idle %4.1f %%  steal %4.1f %%  ipnd %5.1f us/request%s\n",
            substr(setting, 1, 40), v["rps"], v["p99_ms"], 100 * idle / total, 100 * steal / total,
            cpu / hz / v["requests"] * 1e6, (v["wrapped"] == 1 ? "  (ran out of notifications)" : "") }'
}

for ((round = 1; round <= ROUNDS; round++)); do
    for setting in "$@"; do run "$setting"; done
done
