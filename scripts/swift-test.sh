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

# scripts/swift-test.sh [SWIFT TEST ARGS...]: runs `swift test` and, when it fails, repeats every
# failed test and recorded issue at the end of the output. The suite runs in parallel, so a
# failure is printed hundreds of lines before the last one; CI often keeps only the tail of a log,
# and the tail must say what failed and where. Exits with swift test's status.
set -uo pipefail

log=$(mktemp "${TMPDIR:-/tmp}/swift-test.XXXXXX.log") || exit 1
trap 'rm -f "$log"' EXIT

# A hung suite (a deadlock in a test) must end the run with a message, well inside CI's 90
# minutes, rather than use them up. timeout signals its whole process group: swift test and
# the test process it starts.
#
# The output goes to the log file and is followed from there, not through a pipe: if the test
# process crashes, the daemons and receivers it started live on, holding whatever descriptor
# it gave them; a pipe they hold would never end, and the run would wait for them. Afterwards
# any such orphan (its command line names this run's TMPDIR) is killed.
limit=${IPND_TEST_TIME_LIMIT:-1500}
timeout -k 15 "$limit" "${SWIFT:-swift}" test "$@" >"$log" 2>&1 </dev/null &
runner=$!
tail -n +1 --pid="$runner" -f "$log"
wait "$runner"
status=$?
if [ -n "${TMPDIR:-}" ] && [ "${TMPDIR:-}" != /tmp ]; then
    pkill -KILL -f -- "$TMPDIR/" 2>/dev/null || true
fi
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo
    echo "== swift test did not finish within ${limit} s (IPND_TEST_TIME_LIMIT): a test hangs =="
    # Swift Testing prints `◇ Test NAME started.` and, when it ends, `✔ Test NAME passed` or
    # `✘ Test NAME failed`: the tests that started and never ended are the ones that hung.
    echo "== tests that started and did not end: =="
    awk '
        /^◇ Test .* started\.$/ { name = $0; sub(/^◇ Test /, "", name); sub(/ started\.$/, "", name); open[name] = 1; next }
        /^(✔|✘) Test / {
            for (n in open) if (index($0, "Test " n " passed") || index($0, "Test " n " failed") || index($0, "Test " n " with ")) delete open[n]
        }
        END { for (n in open) print "  " n }
    ' "$log" | grep -v '^  case passing' | head -n 40
fi

if [ "$status" -ne 0 ]; then
    echo
    echo "== swift test failed (exit $status); what failed, repeated from above: =="
    # Swift Testing marks a failed test and each recorded issue with ✘ and the comment
    # lines with ↳; XCTest writes "error:" lines; a crashed test process leaves "Fatal error" or
    # "signal". Lines are cut at 600 characters so that one long message cannot fill the tail.
    grep -E '✘|↳|error:|Fatal error|[Ss]ignal [0-9]|Exited with' "$log" \
        | grep -v -E '^✘ Test run with|^✘ Suite |^↳ (Testing Library Version|Target Platform)' \
        | cut -c1-600 | head -n 30
fi
exit "$status"
