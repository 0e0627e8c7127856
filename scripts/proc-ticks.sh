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

# Sourced by scripts/bench.sh and scripts/ab-replay.sh: CPU time from /proc, in clock ticks
# (`getconf CLK_TCK` per second).

# cpu_ticks: three numbers for both cores together: all ticks, idle + iowait ticks, and the
# ticks the hypervisor gave to other guests (steal).
cpu_ticks() { awk '/^cpu / { print $2+$3+$4+$5+$6+$7+$8+$9, $5+$6, $9 }' /proc/stat; }

# process_ticks PID: the user + system ticks of PID and its threads, exited ones included.
process_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
