#!/bin/sh
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

# Fails, naming file and line, on any Markdown file a tracked file names that the repository
# does not hold: a contributor or a user of the package must be able to open every document the
# code, the docs and the scripts cite.
#
#   scripts/check-doc-references.sh              check this repository (make test runs it)
#   scripts/check-doc-references.sh -C DIR       check the git repository at DIR
#   scripts/check-doc-references.sh --self-test  show that the check fails on a planted bad
#                                                reference and passes on good ones
#
# Only tracked files are read and only tracked files count as existing (`git grep`, `git ls-files`),
# so .build/, the checkouts and other untracked directories play no part. A reference is a
# relative path ending in `.md` (`docs/providers.md`, `../README.md`, `README.md#layout`); it
# resolves against the repository's root or against the directory of the file naming it.
# Absolute paths and URLs (`/usr/share/doc/ipnd/...`, `https://...`) name files outside the
# repository and are not references.
set -eu

# A relative path ending .md, not the tail of a longer path, URL, variable or glob.
pattern='(?<![\w./$}*~%-])(?:\.{1,2}/)*(?:[\w-][\w.-]*/)*[\w-][\w.-]*\.md\b'

check() {
    tracked=$(mktemp)
    hits=$(mktemp)
    trap 'rm -f "$tracked" "$hits"' EXIT
    git ls-files >"$tracked"
    # file:line:reference, one per reference (git grep exits 1 when there is none).
    git grep -nIoP "$pattern" >"$hits" || [ $? -eq 1 ]
    # Each resolved against the tracked files.
    awk -F: -v tracked="$tracked" '
        BEGIN { while ((getline path < tracked) > 0) known[path] = 1 }
        # "a/./b/../c" -> "a/c"; "" when it climbs out of the repository.
        function normalize(path,    parts, count, out, depth, i) {
            count = split(path, parts, "/")
            depth = 0
            for (i = 1; i <= count; i++) {
                if (parts[i] == "" || parts[i] == ".") continue
                if (parts[i] == "..") { if (depth == 0) return ""; depth--; continue }
                out[++depth] = parts[i]
            }
            path = ""
            for (i = 1; i <= depth; i++) path = path (i > 1 ? "/" : "") out[i]
            return path
        }
        {
            file = $1; line = $2; reference = $0
            sub(/^[^:]*:[^:]*:/, "", reference)
            directory = file; if (!sub(/\/[^\/]*$/, "", directory)) directory = ""
            if (normalize(reference) in known) next
            if (directory != "" && normalize(directory "/" reference) in known) next
            printf "%s:%s: names %s, which is not in the repository\n", file, line, reference
            missing++
        }
        END {
            if (missing) {
                printf "%d reference(s) to Markdown files the repository does not hold: point them at the README section or the docs/ page that says it\n", missing
                exit 1
            }
        }' "$hits" >&2
}

self_test() {
    repository=$(mktemp -d)
    trap 'rm -rf "$repository"' EXIT
    script=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
    # Names spelt apart, so that this script itself names no file the repository lacks.
    absent=absent-guide
    guide=docs/guide
    git -C "$repository" init -q
    mkdir -p "$repository/docs" "$repository/Sources"
    printf '# Guide\nSee ../README.md and %s.md.\n' "$guide" >"$repository/$guide.md"
    printf '# Read me\nSee %s.md#usage, /usr/share/doc/x/other.md and https://example.org/a.md.\n' "$guide" >"$repository/README.md"
    printf '// The contract: %s.md.\n// ipnd keeps it (%s.md section 3).\n' "$guide" "$absent" >"$repository/Sources/main.swift"
    git -C "$repository" add -A
    if output=$("$script" -C "$repository" 2>&1); then
        echo "self-test: the check passed a repository naming $absent.md" >&2
        exit 1
    fi
    expected="Sources/main.swift:2: names $absent.md, which is not in the repository"
    if ! printf '%s\n' "$output" | grep -qxF "$expected"; then
        printf 'self-test: expected the line\n  %s\nbut the check said:\n%s\n' "$expected" "$output" >&2
        exit 1
    fi
    if [ "$(printf '%s\n' "$output" | grep -c 'which is not in the repository')" -ne 1 ]; then
        printf 'self-test: only the planted reference should fail, but the check said:\n%s\n' "$output" >&2
        exit 1
    fi
    # Removed again, the same repository passes.
    printf '// The contract: %s.md.\n' "$guide" >"$repository/Sources/main.swift"
    if ! output=$("$script" -C "$repository" 2>&1); then
        printf 'self-test: the check failed a repository whose references all resolve:\n%s\n' "$output" >&2
        exit 1
    fi
    echo "check-doc-references self-test: a planted missing reference fails naming file and line; good ones pass"
}

case "${1:-}" in
    --self-test) self_test ;;
    -C) cd "$2" && check ;;
    "") cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)" && check ;;
    *) echo "usage: $0 [-C DIR | --self-test]" >&2; exit 64 ;;
esac
