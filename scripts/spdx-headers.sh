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

# scripts/spdx-headers.sh [--check]: the licence header every Swift, Python and shell source file
# under Sources/, Tests/, tools/, scripts/ and Fuzz/ starts with, as SwiftNIO and Hummingbird put
# theirs: a short comment block naming the project, the licence and its SPDX identifier.
#
#   scripts/spdx-headers.sh           add the header where it is missing (after a #! line, which
#                                     stays first); files that have one are left as they are, so
#                                     running it again, or after a merge, changes only new files
#   scripts/spdx-headers.sh --check   list the files without one and fail (make test runs this)
#
# The files are those git tracks or would track (`git ls-files --cached --others
# --exclude-standard`): .build/ and other ignored directories play no part. A file counts as
# having the header when one of its first 20 lines holds the SPDX identifier.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=add
case "${1:-}" in
    "") ;;
    --check) mode=check ;;
    *) echo "usage: scripts/spdx-headers.sh [--check]" >&2; exit 64 ;;
esac

# The header's lines, without their comment marker; RULE is the block's first and last line.
header_lines=(
    RULE
    ""
    "This source file is part of the ipnd open source project"
    ""
    "Copyright (c) the ipnd authors"
    "Licensed under Apache License v2.0"
    ""
    "See LICENSE for license information"
    ""
    "SPDX-License-Identifier: Apache-2.0"
    ""
    RULE
)

# The header with comment marker `marker` (// for Swift, ## for Python and shell, as SwiftNIO's
# sources have it), followed by one blank line.
header() {
    local marker=$1 line
    for line in "${header_lines[@]}"; do
        if [ "$line" = RULE ]; then
            printf '%s===----------------------------------------------------------------------===%s\n' "$marker" "$marker"
        elif [ -z "$line" ]; then
            printf '%s\n' "$marker"
        else
            printf '%s %s\n' "$marker" "$line"
        fi
    done
    printf '\n'
}

has_header() {
    head -n 20 "$1" | grep -q 'SPDX-License-Identifier:'
}

# One group, parsed whole before it runs: the script adds its own header too, and bash would
# otherwise read on from where it was in the rewritten file.
{
    missing=()
    while IFS= read -r -d '' file; do
        [ -f "$file" ] || continue # deleted in the work tree
        case "$file" in
            *.swift) marker=// ;;
            *.py | *.sh) marker='##' ;;
            *) continue ;;
        esac
        has_header "$file" && continue
        if [ "$mode" = check ]; then
            missing+=("$file")
            continue
        fi
        # Written in place (cat >), so the file keeps its mode, executable bit included.
        temporary=$(mktemp)
        {
            if head -n 1 "$file" | grep -q '^#!'; then
                head -n 1 "$file"
                header "$marker"
                tail -n +2 "$file"
            else
                header "$marker"
                cat "$file"
            fi
        } >"$temporary"
        cat "$temporary" >"$file"
        rm -f "$temporary"
        echo "spdx-headers: added to $file"
    done < <(git ls-files -z --cached --others --exclude-standard -- Sources Tests tools scripts Fuzz)

    if [ "$mode" = check ] && [ ${#missing[@]} -gt 0 ]; then
        echo "these source files have no SPDX licence header (scripts/spdx-headers.sh adds it):" >&2
        printf '  %s\n' "${missing[@]}" >&2
        exit 1
    fi
    exit 0
}
