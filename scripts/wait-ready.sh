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

# scripts/wait-ready.sh PORT SECONDS: waits until ipnd on 127.0.0.1:PORT answers /readyz (its
# store accepts a durable write), polling every 0.1 s for at most SECONDS; exits 1, saying so,
# when it never does. Used by make bench and make profile after starting `ipnd serve`.
set -euo pipefail
port=$1
seconds=$2
for _ in $(seq 1 $((seconds * 10))); do
    curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && exit 0
    sleep 0.1
done
echo "ipnd on port $port was not ready after ${seconds}s" >&2
exit 1
