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

# scripts/build-release.sh PRODUCT...: the release build of `make release`, `make bench` and
# `make profile`, in one place: optimised, the Swift runtime and Foundation linked in
# (--static-swift-stdlib), each product on its own (a whole-package build would also link GRDB's
# optional dynamic library, which cannot take the static runtime). The compiler's output is
# shown only when a build fails; the last line printed is the directory of the binaries.
set -euo pipefail
cd "$(dirname "$0")/.."

FLAGS=(-c release --static-swift-stdlib)
LOG=$(mktemp /tmp/ipnd-release-build.XXXXXX)
trap 'rm -f "$LOG"' EXIT
for product in "$@"; do
    echo "== release build of $product" >&2
    if ! swift build "${FLAGS[@]}" --product "$product" >"$LOG" 2>&1; then
        cat "$LOG" >&2
        echo "the release build of $product failed" >&2
        exit 1
    fi
done
swift build "${FLAGS[@]}" --show-bin-path
