#!/usr/bin/env bash
# Checks and unit-tests ipnd's Prometheus rules (deploy/prometheus) with promtool: `promtool check
# rules` on the rules, then `promtool test rules` on each test file beside them. Used by make test
# and make test-alert-rules.
#
# promtool comes with Debian's prometheus package, installed here when missing, as the other
# test packages are (scripts/install-system-packages.sh). It is a test tool only: installing the
# package on a machine that runs systemd enables and starts a Prometheus server, so when this
# script is what installed it, it stops and disables that server again; nothing is left running.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v promtool >/dev/null; then
    scripts/install-system-packages.sh prometheus
    if [ -d /run/systemd/system ] && systemctl is-enabled --quiet prometheus.service 2>/dev/null; then
        sudo=()
        [ "$(id -u)" -eq 0 ] || sudo=(sudo)
        "${sudo[@]}" systemctl disable --now prometheus.service >&2
        echo "test-alert-rules: stopped and disabled the Prometheus server the prometheus package started (promtool is all the tests use)" >&2
    fi
fi

promtool check rules deploy/prometheus/ipnd.rules.yml
cd deploy/prometheus
promtool test rules ipnd.rules.test.yml ipnd-audit.rules.test.yml
