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

# Checks and unit-tests ipnd's Prometheus rules (deploy/prometheus) with promtool: `promtool check
# rules` on the rules, then `promtool test rules` on each test file beside them. Used by make test
# and make test-alert-rules.
#
# promtool comes with Debian's prometheus package, installed here when missing, as the other
# test packages are (scripts/install-system-packages.sh). It is a test tool only: the package
# enables its Prometheus server and, on a machine that runs systemd, starts it; when this script
# is what installed it, it disables the server again (and stops it): nothing is left running,
# nor set to start at the next boot.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v promtool >/dev/null; then
    scripts/install-system-packages.sh prometheus
    if command -v systemctl >/dev/null && systemctl is-enabled --quiet prometheus.service 2>/dev/null; then
        sudo=()
        [ "$(id -u)" -eq 0 ] || sudo=(sudo)
        now=()
        [ -d /run/systemd/system ] && now=(--now)   # systemd runs: stop it too
        "${sudo[@]}" systemctl disable "${now[@]}" --quiet prometheus.service >&2
        echo "test-alert-rules: disabled the Prometheus server the prometheus package enables (promtool is all the tests use)" >&2
    fi
fi

promtool check rules deploy/prometheus/ipnd.rules.yml
cd deploy/prometheus
promtool test rules ipnd.rules.test.yml ipnd-audit.rules.test.yml
