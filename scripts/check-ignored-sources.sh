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

# scripts/check-ignored-sources.sh: fails when a file the build or the tests use is one git
# ignores. Such a file is there on the machine that wrote it and missing from every clean clone
# (CI's included): a fixture named *.sqlite once passed here and crashed CI's run. Outside a git
# checkout (a source tarball) there is nothing to compare, and it passes.
set -euo pipefail
cd "$(dirname "$0")/.."
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || exit 0
ignored=$(git ls-files --others --ignored --exclude-standard -- Sources Tests Fuzz tools deploy bench scripts config docs Package.swift Makefile)
if [ -n "$ignored" ]; then
    echo "these files are used by the build or the tests, but .gitignore keeps them out of git:" >&2
    printf '  %s\n' $ignored >&2
    echo "track them (git add -f, or a ! rule in .gitignore) or move them out of the tree" >&2
    exit 1
fi
