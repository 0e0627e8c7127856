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

# scripts/with-tmpdir.sh COMMAND...: runs COMMAND with TMPDIR set to a fresh directory that is
# removed afterwards, so that the stores, configs, unit files and sockets the test suite creates
# (about 25 MB per run) do not pile up in /tmp. The directory is world-writable and sticky like
# /tmp itself: one test runs ipnd as an unprivileged user. Exits with COMMAND's status.
set -uo pipefail

dir=$(mktemp -d "${TMPDIR:-/tmp}/ipnd-tests.XXXXXX") || exit 1
chmod 1777 "$dir"
TMPDIR="$dir" "$@"
status=$?
if ! rm -rf "$dir" 2>/dev/null; then
    echo "with-tmpdir: could not remove all of $dir (did a test leave a mount behind?)" >&2
fi
exit $status
