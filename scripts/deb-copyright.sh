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

# scripts/deb-copyright.sh: prints the package's /usr/share/doc/ipnd/copyright. The binary links
# in the Swift runtime and every Swift package ipnd depends on, so the file names each of them
# with its license, from the checkouts the build resolved (.build/checkouts): Apache-2.0 by
# reference to Debian's copy (with the package's NOTICE, which the license asks to pass on),
# any other license in full.
set -euo pipefail
cd "$(dirname "$0")/.."

swift_license=$(dirname "$(dirname "$(command -v swift)")")/share/swift/LICENSE.txt

cat <<'EOF'
ipnd: receives, verifies and records payment providers' notifications.

Copyright: the ipnd authors.
License: no license has been published for ipnd itself; its authors reserve all rights.

The ipnd binary has the Swift runtime and the Swift packages listed below linked into it.
Their licenses follow. On Debian systems the Apache License 2.0 is in
/usr/share/common-licenses/Apache-2.0.

== Swift runtime, Foundation and Dispatch (https://swift.org)
Copyright: Apple Inc. and the Swift project authors.
License: Apache-2.0 with the Runtime Library Exception:
EOF
if [ -f "$swift_license" ]; then
    sed -n '/Runtime Library Exception/,$p' "$swift_license" | sed 's/^/  /'
else
    echo "  (the exception text is in LICENSE.txt of the Swift toolchain)"
fi

# The packages the build resolved, with where they came from and their versions.
[ -f .build/workspace-state.json ] || { echo "deb-copyright: .build/workspace-state.json is missing: build ipnd first" >&2; exit 1; }
python3 -c '
import json
for dependency in sorted(json.load(open(".build/workspace-state.json"))["object"]["dependencies"], key=lambda d: d["subpath"].lower()):
    state = dependency["state"].get("checkoutState") or {}
    print(dependency["subpath"], dependency["packageRef"]["location"], state.get("version") or state.get("revision", "")[:12], sep="\t")
' | while IFS=$'\t' read -r name url version; do
    checkout=.build/checkouts/$name
    license=$(find "$checkout" -maxdepth 1 -type f \( -iname 'licen[cs]e*' -o -iname 'copying*' \) | sort | head -n 1)
    notice=$(find "$checkout" -maxdepth 1 -type f -iname 'notice*' | sort | head -n 1)
    printf '\n== %s %s (%s)\n' "$name" "$version" "$url"
    if [ -z "$license" ]; then
        echo "License: see $url"
    elif grep -q 'Apache License' "$license" && grep -q 'Version 2.0' "$license"; then
        echo "License: Apache-2.0 (/usr/share/common-licenses/Apache-2.0)"
        if [ -n "$notice" ]; then
            echo "NOTICE:"
            sed 's/^/  /' "$notice"
        fi
    else
        echo "License:"
        sed 's/^/  /' "$license"
    fi
done
