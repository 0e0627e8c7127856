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

# The whole test suite under ThreadSanitizer, then AddressSanitizer (with LeakSanitizer), each
# in its own scratch path (.build-tsan, .build-asan) so the normal build is left alone.
#
#   scripts/test-sanitizers.sh [thread|address]...    (default: thread address)
#
# Reports from every process (the test runner and each ipnd it starts) go to files under
# .build-SAN/reports; the run fails if a test fails or if any report was written.
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
sanitizers=("$@")
[ ${#sanitizers[@]} -eq 0 ] && sanitizers=(thread address)
status=0

for sanitizer in "${sanitizers[@]}"; do
    case "$sanitizer" in
        thread) scratch=.build-tsan; variable=TSAN_OPTIONS ;;
        address) scratch=.build-asan; variable=ASAN_OPTIONS ;;
        *) echo "unknown sanitizer $sanitizer (thread or address)" >&2; exit 64 ;;
    esac
    reports="$PWD/$scratch/reports"
    rm -rf "$reports"
    mkdir -p "$reports"
    chmod 1777 "$reports"  # ipnd also runs as an unprivileged user in one test
    echo "== $sanitizer sanitizer: building into $scratch" >&2
    mkdir -p "$scratch"
    if ! "$SWIFT" build --build-tests --sanitize="$sanitizer" --scratch-path "$scratch" >"$scratch/build.log" 2>&1; then
        grep -E "error" "$scratch/build.log" | head -20 >&2 || true
        echo "$sanitizer build failed, log in $scratch/build.log" >&2
        exit 1
    fi
    options="log_path=$reports/$sanitizer"
    if [ "$sanitizer" = address ]; then
        options="$options:detect_leaks=1"
        export LSAN_OPTIONS="suppressions=$PWD/scripts/sanitizers/lsan.supp:print_suppressions=0"
    else
        options="$options:halt_on_error=0:suppressions=$PWD/scripts/sanitizers/tsan.supp"
    fi
    echo "== $sanitizer sanitizer: swift test ($variable=$options)" >&2
    test_status=0
    env "$variable=$options" scripts/with-tmpdir.sh "$SWIFT" test --skip-build --sanitize="$sanitizer" --scratch-path "$scratch" \
        >"$scratch/test.log" 2>&1 || test_status=$?
    grep -E "^(✔|✘) Test run|recorded an issue|error:" "$scratch/test.log" | tail -20 >&2 || true
    report_files=$(find "$reports" -type f | sort)
    if [ "$test_status" -ne 0 ]; then
        echo "== $sanitizer sanitizer: tests FAILED (exit $test_status), log in $scratch/test.log" >&2
        status=1
    fi
    if [ -n "$report_files" ]; then
        echo "== $sanitizer sanitizer: $(echo "$report_files" | wc -l) report file(s):" >&2
        for file in $report_files; do
            echo "-- $file" >&2
            grep -E "WARNING: ThreadSanitizer|ERROR: (Address|Leak)Sanitizer|SUMMARY" "$file" | head -5 >&2
        done
        status=1
    else
        echo "== $sanitizer sanitizer: no reports" >&2
    fi
done
exit $status
