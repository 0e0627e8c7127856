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

# Installs the Python packages the tests use as independent checkers (tools/requirements-test.txt)
# when python3 lacks any of them. From PyPI, into the python3 on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
requirements=tools/requirements-test.txt
if python3 - "$requirements" <<'PY' 2>/dev/null; then exit 0; fi
import sys
from importlib import metadata
for line in open(sys.argv[1]):
    name = line.split("#", 1)[0].strip()
    if not name:
        continue
    metadata.version(name.split("==")[0].split(">=")[0].strip())
PY
echo "installing the tests' Python packages: $requirements" >&2
python3 -m pip install --quiet --disable-pip-version-check -r "$requirements" \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages -r "$requirements"
