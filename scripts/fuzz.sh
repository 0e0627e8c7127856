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

# libFuzzer targets for ipnd: one per provider (parse + verify of raw request bytes and
# headers), one for the config loader, one for the amount parser.
#
#   scripts/fuzz.sh build                     build every target into .build-fuzz/bin
#   scripts/fuzz.sh run SECONDS [TARGET...]   build, then fuzz each target for SECONDS
#                                             (JOBS=2 at a time), print a summary table
#   scripts/fuzz.sh replay [TARGET...]        run each target once over its seeds and
#                                             regressions (no fuzzing)
#
# The targets are compiled with `swiftc -sanitize=fuzzer,address` outside SwiftPM: IPNCore,
# Yams (with its C libyaml) and IPNConfig as modules, then each target from its entry point in
# Fuzz/Targets and the harness it shares with the test suite (Tests/*/Fuzzing), so that
# `swift test` replays every crash input kept in Fuzz/regressions/TARGET.
#
# Seeds: Fuzz/seeds/TARGET (small, in git). Working corpora grow in .build-fuzz/corpus/TARGET
# (not in git). A crash, leak or hang writes its input to .build-fuzz/artifacts/TARGET/; copy
# it to Fuzz/regressions/TARGET/ once it is fixed.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_TARGETS=(citcon ipay88 alipay unlimint juspay amount config)
OUT=.build-fuzz
JOBS=${JOBS:-2}
MAX_LEN=${MAX_LEN:-16384}
SWIFTC=${SWIFTC:-swiftc}
CLANG=${CLANG:-$(dirname "$(command -v "$SWIFTC")")/clang}
SWIFT_FLAGS=(-sanitize=fuzzer,address -O -g -swift-version 6 -enable-upcoming-feature ExistentialAny -parse-as-library)

log() { printf 'fuzz: %s\n' "$*" >&2; }

# Runs a compiler command, dropping ld.gold's noise about the sanitizer runtime's local symbols.
compile() {
    local output status=0
    output=$("$@" 2>&1) || status=$?
    printf '%s\n' "$output" | grep -v -e "Cannot export local symbol" -e '^$' >&2 || true
    return $status
}

newer() {  # newer OUTPUT INPUT...: whether OUTPUT is missing or older than any input
    local output=$1; shift
    [ ! -e "$output" ] && return 0
    for input in "$@"; do [ "$input" -nt "$output" ] && return 0; done
    return 1
}

build() {
    mkdir -p "$OUT/modules" "$OUT/obj" "$OUT/bin"
    [ -d .build/checkouts/Yams ] || swift package resolve >/dev/null
    local yams=.build/checkouts/Yams/Sources
    local core=() config=() yams_swift=()
    mapfile -t core < <(find Sources/IPNCore -name '*.swift' | sort)
    mapfile -t config < <(find Sources/IPNConfig -name '*.swift' | sort)
    mapfile -t yams_swift < <(find "$yams/Yams" -name '*.swift' | sort)

    if newer "$OUT/obj/IPNCore.o" "${core[@]}" "$0"; then
        log "compiling IPNCore"
        compile "$SWIFTC" "${SWIFT_FLAGS[@]}" -enable-testing -wmo -c -module-name IPNCore -I Sources/COpenSSL \
            -emit-module-path "$OUT/modules/IPNCore.swiftmodule" -o "$OUT/obj/IPNCore.o" "${core[@]}"
        touch "$OUT/obj/IPNCore.o"  # swiftc keeps an unchanged object's old timestamp
    fi
    if newer "$OUT/obj/Yams.o" "${yams_swift[@]}" "$0"; then
        log "compiling libyaml and Yams"
        for file in "$yams"/CYaml/src/*.c; do
            compile "$CLANG" -c -O1 -g -fsanitize=fuzzer-no-link,address -DYAML_DECLARE_STATIC -I "$yams/CYaml/include" \
                -o "$OUT/obj/cyaml-$(basename "$file" .c).o" "$file"
        done
        compile "$SWIFTC" -sanitize=fuzzer,address -O -g -swift-version 5 -parse-as-library -wmo -c -module-name Yams -DSWIFT_PACKAGE \
            -Xcc -DYAML_DECLARE_STATIC -I "$yams/CYaml/include" \
            -emit-module-path "$OUT/modules/Yams.swiftmodule" -o "$OUT/obj/Yams.o" "${yams_swift[@]}"
        touch "$OUT/obj/Yams.o"
    fi
    if newer "$OUT/obj/IPNConfig.o" "${config[@]}" "$OUT/obj/IPNCore.o" "$OUT/obj/Yams.o"; then
        log "compiling IPNConfig"
        compile "$SWIFTC" "${SWIFT_FLAGS[@]}" -wmo -c -module-name IPNConfig -I "$OUT/modules" -I Sources/COpenSSL \
            -Xcc -DYAML_DECLARE_STATIC -I "$yams/CYaml/include" \
            -emit-module-path "$OUT/modules/IPNConfig.swiftmodule" -o "$OUT/obj/IPNConfig.o" "${config[@]}"
        touch "$OUT/obj/IPNConfig.o"
    fi
    for target in "${ALL_TARGETS[@]}"; do
        local sources=("Fuzz/Targets/$target.swift") objects=("$OUT/obj/IPNCore.o")
        if [ "$target" = config ]; then
            sources+=(Tests/IPNConfigTests/Fuzzing/*.swift)
            objects+=("$OUT/obj/IPNConfig.o" "$OUT/obj/Yams.o" "$OUT"/obj/cyaml-*.o)
        else
            sources+=(Tests/IPNCoreTests/Fuzzing/*.swift)
        fi
        if newer "$OUT/bin/$target" "${sources[@]}" "${objects[@]}"; then
            log "linking $target"
            compile "$SWIFTC" "${SWIFT_FLAGS[@]}" -module-name "Fuzz_$target" -I "$OUT/modules" -I Sources/COpenSSL \
                -Xcc -DYAML_DECLARE_STATIC -I "$yams/CYaml/include" \
                "${sources[@]}" "${objects[@]}" -lcrypto -o "$OUT/bin/$target"
            touch "$OUT/bin/$target"
        fi
    done
}

corpus_dirs() {  # the working corpus first (libFuzzer adds new inputs there), then seeds and regressions
    local target=$1
    mkdir -p "$OUT/corpus/$target"
    printf '%s\n' "$OUT/corpus/$target"
    for dir in "Fuzz/seeds/$target" "Fuzz/regressions/$target"; do
        [ -d "$dir" ] && printf '%s\n' "$dir"
    done
    return 0
}

fuzz_one() {  # fuzz_one TARGET SECONDS: runs one fuzzer, its output in $OUT/logs/TARGET.log
    local target=$1 seconds=$2 dirs=()
    mapfile -t dirs < <(corpus_dirs "$target")
    mkdir -p "$OUT/artifacts/$target" "$OUT/logs"
    local dict=() 
    [ -f "Fuzz/dictionaries/$target.dict" ] && dict=(-dict="Fuzz/dictionaries/$target.dict")
    log "fuzzing $target for ${seconds}s"
    set +e
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
        "$OUT/bin/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$MAX_LEN" \
        -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$target/" "${dict[@]}" "${dirs[@]}" \
        >"$OUT/logs/$target.log" 2>&1
    local status=$?
    set -e
    echo "$status" >"$OUT/logs/$target.status"
}

summary() {
    printf '%-9s %8s %12s %9s %7s %7s %s\n' target seconds executions exec/s cov ft result
    local failed=0
    for target in "$@"; do
        local log="$OUT/logs/$target.log" status
        status=$(cat "$OUT/logs/$target.status" 2>/dev/null || echo "?")
        local runs secs cov ft result
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
        secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
        cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
        ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
        if [ "$status" = 0 ]; then
            result=ok
        else
            failed=1
            result="FAILED (exit $status): $(grep -m1 -E 'ERROR: |fuzz invariant|Fatal error|deadly signal' "$log" | cut -c1-100 || true) $(grep -m1 -o 'Test unit written to .*' "$log" || true)"
        fi
        local rate
        rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
        printf '%-9s %8s %12s %9s %7s %7s %s\n' "$target" "${secs:--}" "${runs:--}" "${rate:--}" "${cov:--}" "${ft:--}" "$result"
    done
    return $failed
}

replay() {
    local failed=0
    for target in "$@"; do
        local dirs=() inputs=()
        mapfile -t dirs < <(corpus_dirs "$target" | tail -n +2)
        [ ${#dirs[@]} -eq 0 ] && continue
        mapfile -t inputs < <(find "${dirs[@]}" -type f | sort)
        [ ${#inputs[@]} -eq 0 ] && continue
        if "$OUT/bin/$target" -runs=1 "${inputs[@]}" >"$OUT/logs/$target.replay.log" 2>&1; then
            log "$target: ${#inputs[@]} seed and regression input(s) ok"
        else
            log "$target: FAILED, see $OUT/logs/$target.replay.log"
            failed=1
        fi
    done
    return $failed
}

command=${1:-}
shift || true
case "$command" in
    build)
        build
        ;;
    run)
        seconds=${1:?usage: scripts/fuzz.sh run SECONDS [TARGET...]}
        shift
        targets=("$@")
        [ ${#targets[@]} -eq 0 ] && targets=("${ALL_TARGETS[@]}")
        build
        mkdir -p "$OUT/logs"
        export -f fuzz_one corpus_dirs log
        export OUT MAX_LEN
        printf '%s\n' "${targets[@]}" | xargs -P "$JOBS" -I{} bash -c 'fuzz_one "$1" "$2"' _ {} "$seconds"
        summary "${targets[@]}"
        ;;
    replay)
        targets=("$@")
        [ ${#targets[@]} -eq 0 ] && targets=("${ALL_TARGETS[@]}")
        build
        mkdir -p "$OUT/logs"
        replay "${targets[@]}"
        ;;
    *)
        sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
        exit 64
        ;;
esac
