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

# make profile: instructions per request under valgrind's callgrind, for A/B comparisons that
# this machine's wall clock cannot settle (its speed drifts 20-30 % with its neighbours;
# instruction counts repeat within about 1 %).
#
# Builds the release binary (as `make release`), copies it without debug info (valgrind cannot
# read the Swift toolchain's DWARF 5, the symbol table is enough), runs `ipnd serve` under
# callgrind on a fresh store, and for each pass zeroes the counters after warm-up, drives wrk
# for a fixed time and divides the instructions executed by the requests answered:
#   1. unique notifications across all five providers (generated like make bench);
#   2. /healthz, the HTTP stack alone;
#   3. duplicates: notifications the store already holds, replayed (after an uncounted warm-up).
# Prints the three figures, the ratio of the first two, each stage's inclusive count per notification (verification,
# RSA, stored headers, the writer, SQLite, the log line, HTTP parsing) and the functions
# (ipnd's and its libraries') with the most instructions of their own. callgrind serialises
# threads, so group-commit batches are small and wall-clock figures under it mean nothing; the
# counts do.
#
# Knobs (environment): DURATION=15 CONNECTIONS=16 PORT=18190 TOP=40 BINARY=<ipnd to profile>
#                      KEEP=1 (keep the work directory with the callgrind files)
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-15}
CONNECTIONS=${CONNECTIONS:-16}
PORT=${PORT:-18190}
OPS_PORT=$((PORT + 1))
TOP=${TOP:-40}

scripts/install-system-packages.sh libssl-dev libsqlite3-dev pkg-config wrk sqlite3 valgrind
BIN=$(scripts/build-release.sh ipnd ipnd-bench)

WORK=$(mktemp -d /tmp/ipnd-profile.XXXXXX)
cleanup() {
    if [ -n "${PID:-}" ] && kill -0 "$PID" 2>/dev/null; then kill -TERM "$PID"; wait "$PID" 2>/dev/null || true; fi
    [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

strip --strip-debug -o "$WORK/ipnd" "${BINARY:-$BIN/ipnd}"
chmod 600 config/ipnd.dev.yaml
export IPND_SERVER_PORT=$PORT IPND_OPS_PORT=$OPS_PORT IPND_LOG_LEVEL=info
"$BIN/ipnd-bench" generate --config config/ipnd.dev.yaml --count 20000 --output "$WORK/requests.bin" \
    --prefix "P$(date +%s)" >/dev/null

# profile_pass NAME WRK_ARGS...: instructions per answered request of one wrk run. With WARM_UP
# set (a count), that many notifications are first sent uncounted, so the counted run replays
# notifications the store already holds: the duplicate path.
profile_pass() {
    local name=$1
    shift
    export IPND_STORE_PATH="$WORK/$name.sqlite"
    valgrind --tool=callgrind --callgrind-out-file="$WORK/$name.%p" --dump-instr=no \
        "$WORK/ipnd" serve --config config/ipnd.dev.yaml 2>"$WORK/$name.log" &
    PID=$!
    scripts/wait-ready.sh "$PORT" 60  # valgrind starts ipnd ~50x slower
    if [ -n "${WARM_UP:-}" ]; then
        wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -s bench/replay.lua "http://127.0.0.1:$PORT" \
            -- "$WORK/requests.bin" 1 "$WARM_UP" >/dev/null
    fi
    callgrind_control -z "$PID" >/dev/null
    local result
    result=$(wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" "$@" | sed -n 's/.*requests=\([0-9]*\).*/\1/p; s/^ *\([0-9]*\) requests in.*/\1/p' | head -1)
    callgrind_control -d "$PID" >/dev/null
    kill -TERM "$PID"
    wait "$PID" 2>/dev/null || true
    PID=
    local file total
    file=$(ls "$WORK/$name".*.1)
    total=$(callgrind_annotate "$file" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
    echo "$name $result $total $file"
}

echo "== profiling ipnd under callgrind: ${DURATION}s per pass, $CONNECTIONS connections (slow: valgrind runs it ~50x slower)"
read -r _ UNIQUE_N UNIQUE_I UNIQUE_FILE < <(profile_pass unique -s bench/replay.lua "http://127.0.0.1:$PORT" -- "$WORK/requests.bin" 1)
read -r _ HEALTH_N HEALTH_I _ < <(profile_pass healthz "http://127.0.0.1:$PORT/healthz")
# Under valgrind a pass answers a few thousand requests: the first 2,000 are sent once uncounted,
# then the first 1,500 of them are replayed, round and round.
read -r _ DUP_N DUP_I _ < <(WARM_UP=2000 profile_pass duplicate -s bench/replay.lua "http://127.0.0.1:$PORT" \
    -- "$WORK/requests.bin" 1 1500)

PER_NOTIFICATION=$((UNIQUE_I / UNIQUE_N))
PER_HEALTHZ=$((HEALTH_I / HEALTH_N))
echo
echo "== instructions per request (callgrind, user space; the kernel's share is not counted)"
printf '%-28s %12s %10s\n' "" "per request" "requests"
printf '%-28s %12d %10d\n' "unique notification" "$PER_NOTIFICATION" "$UNIQUE_N"
printf '%-28s %12d %10d\n' "duplicate notification" "$((DUP_I / DUP_N))" "$DUP_N"
printf '%-28s %12d %10d\n' "/healthz" "$PER_HEALTHZ" "$HEALTH_N"
echo "healthz / notification       $(awk -v a="$PER_HEALTHZ" -v b="$PER_NOTIFICATION" 'BEGIN {printf "%.1f %%", 100 * a / b}')"
echo
# stage NAME PATTERN: the largest inclusive count of a function matching PATTERN, per notification.
callgrind_annotate --inclusive=yes --threshold=100 "$UNIQUE_FILE" 2>/dev/null | swift demangle --simplified > "$WORK/inclusive.txt"
callgrind_annotate --inclusive=no --threshold=100 "$UNIQUE_FILE" 2>/dev/null | swift demangle --simplified > "$WORK/self.txt"
stage() {
    awk -v n="$UNIQUE_N" -v name="$1" -v pattern="$2" 'index($0, pattern) {gsub(",", "", $1); if ($1 + 0 > best) best = $1 + 0}
        END {printf "%9d  %s\n", best / n, name}' "$WORK/inclusive.txt"
}
echo "== where a notification's instructions go (inclusive, per notification)"
stage "verification (parsing, signature, amounts)" ":NotificationProvider.verifyRequest(_:)"
stage "  of which RSA-SHA256 (Alipay, 1 in 5)" ":EVP_DigestVerifyFinal "
stage "stored headers JSON" "StoredHeaders.json(_:)"
stage "the writer: SQLite statements and commits" ":GroupCommitWriter.run(_:)"
stage "  of which sqlite3_step" ":sqlite3_step "
stage "the log line" "LogfmtLogHandler.log(event:)"
stage "HTTP/1 parsing (llhttp)" "c_nio_llhttp__internal_execute"
echo
echo "== most instructions by function, self (top $TOP, per notification; unnamed ones are in stripped libraries)"
awk '/PROGRAM TOTALS/ {go = 1; next} go && /\(.*%\)/ {print}' "$WORK/self.txt" \
    | grep -v -E "clone|start_thread|ThreadOpsPosix|NIOThread|setupThreadAndEventLoop" \
    | awk -v n="$UNIQUE_N" -v top="$TOP" 'NR <= top {
        gsub(",", "", $1); count = $1; $1 = ""; sub(/^[^)]*\) +/, "")
        library = $0; sub(/.*\[/, "", library); sub(/\]$/, "", library); sub(/.*\//, "", library)
        sub(/ \[[^]]*\]$/, ""); sub(/^\?\?\?:/, ""); sub(/^\.\/[^:]*:/, "")
        printf "%9d  %-18s %s\n", count / n, substr(library, 1, 18), substr($0, 1, 100)}'
