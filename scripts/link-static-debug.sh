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

# scripts/link-static-debug.sh OUTPUT: the debug build's ipnd linked a second time, into OUTPUT,
# with the Swift runtime and Foundation linked in as `make release` links them, so that make test
# can build and install the package (scripts/test-deb.sh) without a release build, which takes
# 10 minutes and more on two cores.
#
# It links the objects of the last `swift build` with SwiftPM's own link command for ipnd (read
# from .build/debug.yaml), plus -static-stdlib and one object that imports Foundation compiled
# with it, which brings the static Foundation's libraries in. `swift build --static-swift-stdlib`
# would also compile with that flag, and the compiler's incremental build does not compile every
# module back without it: a plain `swift build` afterwards failed to link ("unable to find library
# -lCoreFoundation"). A scratch path of its own would compile everything again.
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -eq 1 ] || { echo "usage: scripts/link-static-debug.sh OUTPUT" >&2; exit 64; }
output=$(realpath -m "$1")
bin=$(swift build --show-bin-path)
[ -x "$bin/ipnd" ] && [ -f .build/debug.yaml ] || { echo "link-static-debug: build ipnd first (swift build)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/ipnd-link.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo 'import Foundation' > "$work/StaticRuntime.swift"
swiftc -static-stdlib -parse-as-library -module-name IPNDStaticRuntime -c "$work/StaticRuntime.swift" -o "$work/StaticRuntime.o"

mkdir -p "$(dirname "$output")"
python3 - .build/debug.yaml "$bin/ipnd" "$output" "$work/StaticRuntime.o" <<'EOF'
import json, subprocess, sys

manifest, binary, output, runtime_object = sys.argv[1:]
# The manifest's commands are blocks of "key: value" lines; lists are JSON arrays of strings.
command, found = {}, None
for line in open(manifest):
    stripped = line.strip()
    if line.startswith("  ") and not line.startswith("    ") and stripped.endswith(":"):
        if command.get("outputs") == [binary] and "args" in command:
            found = command
            break
        command = {}
    elif ": [" in stripped:
        key, value = stripped.split(": ", 1)
        try:
            command[key] = json.loads(value)
        except ValueError:
            pass
if found is None and command.get("outputs") == [binary] and "args" in command:
    found = command
if found is None:
    sys.exit(f"link-static-debug: no link command for {binary} in {manifest}")

args = found["args"]
linked = []
index = 0
while index < len(args):
    if args[index] == "-o":
        linked += ["-o", output]
        index += 2
        continue
    # The rpath to the toolchain's runtime libraries, which the binary no longer loads.
    if args[index] == "-Xlinker" and index + 1 < len(args) and args[index + 1].startswith("-rpath="):
        index += 2
        continue
    linked.append(args[index])
    index += 1
subprocess.run(linked + ["-static-stdlib", runtime_object], check=True)
EOF
if readelf -d "$output" | grep -Eq 'NEEDED.*\[lib(swift|Foundation|dispatch|BlocksRuntime)'; then
    echo "link-static-debug: $output still loads the Swift runtime as shared libraries" >&2
    exit 1
fi
"$output" --version >/dev/null
echo "$output"
