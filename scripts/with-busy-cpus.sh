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

# scripts/with-busy-cpus.sh N COMMAND...: runs COMMAND while N busy processes (tight shell loops at
# normal priority) compete with it for the CPU, as other jobs do on a shared CI runner or a
# laptop; then stops them and prints how long COMMAND took and how much CPU the busy ones got.
# Exits with COMMAND's status. `make test-stress` runs the test suite so (N=2 by default).
set -uo pipefail

busy=${1:?usage: with-busy-cpus.sh N COMMAND...}
shift
pids=()
stop_busy() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_busy EXIT
for _ in $(seq 1 "$busy"); do
    # A loop of shell built-ins: all CPU, no memory, no I/O.
    bash -c 'while :; do :; done' &
    pids+=("$!")
done
ticks_per_second=$(getconf CLK_TCK)
started=$(date +%s)
echo "with-busy-cpus: $busy busy process(es) ($(nproc) cores): ${pids[*]}"
"$@"
status=$?
elapsed=$(( $(date +%s) - started ))
busy_ticks=0
for pid in "${pids[@]}"; do
    if [ -r "/proc/$pid/stat" ]; then
        # utime and stime, fields 14 and 15 (the command name has no spaces here).
        busy_ticks=$(( busy_ticks + $(awk '{ print $14 + $15 }' "/proc/$pid/stat") ))
    fi
done
busy_seconds=$(( busy_ticks / ticks_per_second ))
echo "with-busy-cpus: exit $status after ${elapsed} s; the busy processes took ${busy_seconds} CPU-seconds" \
     "($(( elapsed > 0 ? 100 * busy_seconds / elapsed : 0 )) % of one core)"
exit "$status"
