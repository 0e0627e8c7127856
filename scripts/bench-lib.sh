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

# Sourced by scripts/bench.sh and scripts/bench-postgres.sh: one wrk pass with where the CPU went.
# Needs scripts/proc-ticks.sh sourced, WORK, PID (the daemon's) and QUIET_WAIT.

field() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" <<<"$2" | head -1; }

# pass WRK_ARGS...: one wrk run; prints its RESULT line with where the machine's CPU went
# meanwhile appended: ipnd's and wrk's CPU per answered request (user + system), the share of
# both cores left idle (idle + iowait in /proc/stat) and the share the hypervisor gave to other
# guests (steal). Idle CPU while 64 connections wait means the requests are waiting on
# something other than the processor; stolen CPU means the run measured a slower machine.
# wait_for_quiet: until the host steals under 3 % of the CPU over 3 s, at most QUIET_WAIT seconds.
wait_for_quiet() {
    local waited=0 total0 idle0 steal0 total1 idle1 steal1
    while [ "$waited" -lt "$QUIET_WAIT" ]; do
        read -r total0 idle0 steal0 < <(cpu_ticks)
        sleep 3
        read -r total1 idle1 steal1 < <(cpu_ticks)
        [ $(( 100 * (steal1 - steal0) )) -lt $(( 3 * (total1 - total0) )) ] && return 0
        waited=$((waited + 3))
    done
    [ "$QUIET_WAIT" -eq 0 ] || echo "== the host kept stealing 3 % or more of the CPU for ${QUIET_WAIT}s; measuring anyway" >&2
}
pass() {
    local total0 idle0 steal0 total1 idle1 steal1 ipnd0 ipnd1 result
    wait_for_quiet
    read -r total0 idle0 steal0 < <(cpu_ticks)
    ipnd0=$(process_ticks "$PID")
    { TIMEFORMAT='%U %S'; time wrk "$@" >"$WORK/wrk.out"; } 2>"$WORK/wrk.time"
    ipnd1=$(process_ticks "$PID")
    read -r total1 idle1 steal1 < <(cpu_ticks)
    if ! result=$(grep '^RESULT' "$WORK/wrk.out"); then
        echo "wrk gave no result:" >&2
        cat "$WORK/wrk.out" "$WORK/wrk.time" >&2
        return 1
    fi
    echo "$result $(awk -v n="$(field requests "$result")" -v hz="$(getconf CLK_TCK)" -v ipnd=$((ipnd1 - ipnd0)) \
        -v total=$((total1 - total0)) -v idle=$((idle1 - idle0)) -v steal=$((steal1 - steal0)) \
        -v wrk="$(tail -1 "$WORK/wrk.time")" 'BEGIN {
        split(wrk, w, " ")
        printf "ipnd_cpu_us=%.0f wrk_cpu_us=%.0f idle_pct=%.1f stolen_pct=%.1f", (n > 0 ? ipnd / hz / n * 1e6 : 0),
            (n > 0 ? (w[1] + w[2]) / n * 1e6 : 0), (total > 0 ? 100 * idle / total : 0),
            (total > 0 ? 100 * steal / total : 0) }')"
}

