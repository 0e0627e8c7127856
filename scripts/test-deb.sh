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

# scripts/test-deb.sh: the Debian package as an operator meets it (issue 39); make test runs it.
#
# The package is built by scripts/build-deb.sh, as `make deb` builds it, lintian included, from
# the debug build linked with the Swift runtime (scripts/link-static-debug.sh): a release build
# would add 10 minutes and more to make test. Then:
#   1. dpkg-deb --info/--contents: the name, the version (the binary's own), Depends as computed,
#      every file with its mode; the unit's hardening is deploy/ipnd.service's; the config is the
#      template; the man page and the completions work;
#   2. the maintainer scripts' systemd decisions, run with systemctl and deb-systemd-* replaced by
#      recorders, in a mount namespace of their own where systemd seems to run: enabled and not
#      started on a first installation, restarted after an upgrade only if running, stopped on
#      removal;
#   3. a throwaway root (dpkg --root; the maintainer scripts run with DPKG_ROOT set): install,
#      `systemd-analyze verify` of the installed units, an upgrade over an edited config, removal
#      (the config and the store stay) and purge (both go).
# Nothing is installed on this machine: part 3 works in its own directory, and verify sees the
# installed units through an overlay in a private mount namespace. Parts 2 and 3 need root.
# Prints one line per check; exits 1 if any failed.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d "${TMPDIR:-/tmp}/ipnd-deb-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
pass() { echo "ok    $1"; }
fail() {
    echo "FAIL  $1"
    [ $# -lt 2 ] || printf '%s\n' "$2" | sed 's/^/      /' | head -n 20
    failures=$((failures + 1))
}
# check DESCRIPTION COMMAND...: passes when COMMAND succeeds; its output is shown when it fails.
check() {
    local description=$1 output
    shift
    if output=$("$@" 2>&1); then pass "$description"; else fail "$description" "$output"; fi
}
contains() { [[ $1 == *"$2"* ]] || { echo "not in: $1"; return 1; }; }
lacks() { [[ $1 != *"$2"* ]] || { echo "found \"$2\" in: $1"; return 1; }; }
same() { [ "$1" = "$2" ] || { echo "\"$1\" is not \"$2\""; return 1; }; }
mode_of() { stat -c '%a %U:%G' "$1"; }

echo "== the package, from the debug build"
binary=$(scripts/link-static-debug.sh "$work/ipnd")
package=$(scripts/build-deb.sh "$binary" "$work/out" | tail -n 1)
version=$("$binary" --version)
arch=$(dpkg --print-architecture)
echo "== 1. what it holds: $package"
check "named after the binary's version: ipnd_${version}_$arch.deb" same "$(basename "$package")" "ipnd_${version}_$arch.deb"
info=$(dpkg-deb --info "$package")
check "dpkg-deb --info: package ipnd, version $version" contains "$info" " Package: ipnd
 Version: $version"
depends=$(dpkg-deb --field "$package" Depends)
for library in "libc6 (>=" "libssl3 (>=" "libsqlite3-0 (>=" "libstdc++6 (>="; do
    check "Depends, computed from what the binary links, has $library" contains "$depends" "$library"
done
check "Depends has no Swift runtime (it is linked in)" lacks "$depends" swift
check "the conffile is /etc/ipnd/ipnd.yaml" same "$(dpkg-deb --ctrl-tarfile "$package" | tar -xO ./conffiles)" /etc/ipnd/ipnd.yaml
contents=$(dpkg-deb --contents "$package" | awk '{ print $1, $2, $6 }')
for entry in "-rwxr-xr-x ./usr/bin/ipnd" "-rw-r--r-- ./lib/systemd/system/ipnd.service" \
    "-rw-r--r-- ./lib/systemd/system/ipnd-backup.service" "-rw-r--r-- ./lib/systemd/system/ipnd-backup.timer" \
    "-rw-r--r-- ./etc/ipnd/ipnd.yaml" "drwx------ ./etc/ipnd/credentials/" "-rw-r--r-- ./usr/share/man/man1/ipnd.1.gz" \
    "-rw-r--r-- ./usr/share/bash-completion/completions/ipnd" "-rw-r--r-- ./usr/share/zsh/vendor-completions/_ipnd" \
    "-rw-r--r-- ./usr/share/fish/vendor_completions.d/ipnd.fish" "-rw-r--r-- ./usr/share/doc/ipnd/copyright" \
    "-rw-r--r-- ./usr/share/doc/ipnd/changelog.gz"; do
    mode=${entry%% *}
    path=${entry#* }
    check "dpkg-deb --contents: $path, $mode root:root" contains "$contents" "$mode root/root $path"
done
check "no store in the package (systemd makes /var/lib/ipnd)" lacks "$contents" ./var/

extracted=$work/extracted
dpkg-deb -x "$package" "$extracted"
check "the config is deploy/ipnd.yaml, the commented template with no secret" cmp deploy/ipnd.yaml "$extracted/etc/ipnd/ipnd.yaml"
# Every directive but the binary's path and the documentation link is deploy/'s.
directives() { grep -E '^[A-Za-z]' "$1" | grep -v '^Documentation=' | sed -e 's|/usr/local/bin/ipnd|IPND|g' -e 's|/usr/bin/ipnd|IPND|g'; }
for unit in ipnd.service ipnd-backup.service ipnd-backup.timer; do
    check "$unit: deploy/$unit's directives (hardening, credentials), run from /usr/bin/ipnd" \
        diff <(directives "deploy/$unit") <(directives "$extracted/lib/systemd/system/$unit")
done
check "the unit documents itself with man:ipnd(1)" grep -qx 'Documentation=man:ipnd(1) file:///usr/share/doc/ipnd/README.md' \
    "$extracted/lib/systemd/system/ipnd.service"
packaged=$extracted/usr/bin/ipnd
check "the packaged binary prints its version" same "$("$packaged" --version)" "$version"
check "the packaged binary loads nothing from the Swift toolchain" lacks "$(ldd "$packaged")" /opt/swift
check "the changelog names version $version" contains "$(zcat "$extracted/usr/share/doc/ipnd/changelog.gz")" "ipnd ($version)"
manual=$(MANWIDTH=100 man --warnings -l "$extracted/usr/share/man/man1/ipnd.1.gz" 2>"$work/man-warnings")
check "man ipnd renders without a warning" same "$(cat "$work/man-warnings")" ""
for command in serve check-config orders notifications events deliveries simulate backup store; do
    check "man ipnd describes ipnd $command" grep -q -E "^ +$command( |\$)" <<<"$manual"
done
check "bash completion loads and completes ipnd" bash -c "source '$extracted/usr/share/bash-completion/completions/ipnd' && complete -p ipnd"
check "zsh completion defines _ipnd" grep -q '^#compdef ipnd' "$extracted/usr/share/zsh/vendor-completions/_ipnd"
check "fish completion completes ipnd's subcommands" grep -q "complete -c 'ipnd'.* -fa 'simulate'" \
    "$extracted/usr/share/fish/vendor_completions.d/ipnd.fish"
for shell in zsh fish; do
    if command -v "$shell" >/dev/null; then
        file=$extracted/usr/share/zsh/vendor-completions/_ipnd
        [ "$shell" = fish ] && file=$extracted/usr/share/fish/vendor_completions.d/ipnd.fish
        check "$shell parses its completion" "$shell" -n "$file"
    fi
done
credentials=$work/credentials
mkdir -m 0700 "$credentials"
for name in $(sed -n 's/^LoadCredential=\([^:]*\):.*/\1/p' "$extracted/lib/systemd/system/ipnd.service"); do
    printf 'secret-%s' "$name" > "$credentials/$name"
    chmod 0600 "$credentials/$name"
done
check "the packaged config validates once the unit's credentials exist" \
    env CREDENTIALS_DIRECTORY="$credentials" "$packaged" check-config --config "$extracted/etc/ipnd/ipnd.yaml"

if [ "$(id -u)" -ne 0 ]; then
    echo "== 2 and 3 skipped: installing into a throwaway root and mount namespaces need root"
    [ "$failures" -eq 0 ] || { echo "== $failures check(s) of the package failed"; exit 1; }
    exit 0
fi

echo "== 2. the maintainer scripts' systemd decisions"
recorders=$work/recorders
mkdir "$recorders"
for command in systemctl deb-systemd-invoke deb-systemd-helper; do
    cat > "$recorders/$command" <<'EOF'
#!/bin/sh
echo "${0##*/} $*" >> "$IPND_TRACE"
# was-enabled: true unless the test says the administrator disabled the unit; debian-installed:
# no state recorded yet.
case "$*" in
*was-enabled*) exit "${IPND_WAS_DISABLED:-0}" ;;
*debian-installed*) exit 1 ;;
esac
exit 0
EOF
    chmod 0755 "$recorders/$command"
done
# run SCRIPT ARGS...: the calls the maintainer script makes, with systemd seemingly running
# (/run/systemd/system exists in a tmpfs of the namespace's own).
run() {
    local script=$1
    shift
    : > "$work/trace"
    IPND_TRACE=$work/trace PATH="$recorders:$PATH" unshare --mount --propagation private \
        sh -c 'mount -t tmpfs ipnd-run /run && mkdir -p /run/systemd/system && exec sh "$@"' sh "deploy/deb/$script" "$@" >/dev/null
    cat "$work/trace"
}
trace=$(run postinst configure)
check "first installation: the service is enabled" contains "$trace" "deb-systemd-helper enable ipnd.service"
check "first installation: nothing is started (the secrets come first)" lacks "$trace" "deb-systemd-invoke"
check "first installation: the backup timer is left disabled" lacks "$trace" "enable ipnd-backup.timer"
check "first installation: systemd reloads its units" contains "$trace" "systemctl --system daemon-reload"
trace=$(run postinst configure 0.0.1)
check "upgrade: the service is restarted if it was running (try-restart), never started" \
    same "$(grep deb-systemd-invoke <<<"$trace")" "deb-systemd-invoke try-restart ipnd.service"
trace=$(IPND_WAS_DISABLED=1 run postinst configure 0.0.1)
check "upgrade: a service the administrator disabled stays disabled" lacks "$trace" "enable ipnd.service"
check "upgrade: the prerm leaves the service running" same "$(run prerm upgrade 0.1.1)" ""
check "removal: the service and the backup timer are stopped" \
    same "$(run prerm remove)" "deb-systemd-invoke stop ipnd.service ipnd-backup.timer ipnd-backup.service"
trace=$(run postrm remove)
check "removal: systemd reloads its units, nothing is purged" same "$trace" "systemctl --system daemon-reload"
trace=$(DPKG_ROOT=$work/elsewhere run postinst configure)
check "under dpkg --root (DPKG_ROOT): no systemctl, no start" same "$(grep -v '^deb-systemd-helper' <<<"$trace")" ""

echo "== 3. install, upgrade, remove and purge in a throwaway root"
root=$work/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
# The root has no libc6 and no libssl3 to satisfy Depends: --force-depends. The maintainer
# scripts run on this machine with DPKG_ROOT naming the root (--force-script-chrootless).
dpkg_root() { dpkg --root="$root" --force-script-chrootless --force-depends "$@" </dev/null >"$work/dpkg.log" 2>&1 || cat "$work/dpkg.log"; }
status() { dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Status} ${Version}' ipnd 2>/dev/null || echo "not known"; }
host_before=$(dpkg-query -W -f='${Status}' ipnd 2>/dev/null || echo "not installed")

dpkg_root -i "$package"
check "installed: dpkg says install ok installed $version" same "$(status)" "install ok installed $version"
check "/usr/bin/ipnd 0755 root:root" same "$(mode_of "$root/usr/bin/ipnd")" "755 root:root"
check "/etc/ipnd/credentials 0700 root:root" same "$(mode_of "$root/etc/ipnd/credentials")" "700 root:root"
check "/etc/ipnd/ipnd.yaml 0644 root:root" same "$(mode_of "$root/etc/ipnd/ipnd.yaml")" "644 root:root"
check "/lib/systemd/system/ipnd.service 0644 root:root" same "$(mode_of "$root/lib/systemd/system/ipnd.service")" "644 root:root"
check "dpkg keeps /etc/ipnd/ipnd.yaml as a conffile" contains \
    "$(dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Conffiles}' ipnd)" "/etc/ipnd/ipnd.yaml $(md5sum < deploy/ipnd.yaml | cut -d' ' -f1)"
check "enabled: multi-user.target wants ipnd.service" same \
    "$(readlink "$root/etc/systemd/system/multi-user.target.wants/ipnd.service")" /lib/systemd/system/ipnd.service
check "the backup timer is not enabled" test ! -e "$root/etc/systemd/system/timers.target.wants/ipnd-backup.timer"

# systemd-analyze verify sees the installed files where they would be on this machine, through
# an overlay that lives only in a private mount namespace.
verify_installed() {
    unshare --mount --propagation private sh -c '
        mount -t overlay ipnd-usr -o "lowerdir=$1/usr:/usr" /usr &&
            mount -t overlay ipnd-units -o "lowerdir=$1/lib/systemd/system:/lib/systemd/system" /lib/systemd/system || exit 90
        exec systemd-analyze verify ipnd.service ipnd-backup.service ipnd-backup.timer' sh "$root"
}
verify_output=$(verify_installed 2>&1) && verify_status=0 || verify_status=$?
if [ "$verify_status" -eq 0 ]; then
    pass "systemd-analyze verify accepts the installed units (man:ipnd(1) included)"
elif [ "$verify_status" -eq 90 ]; then
    echo "note  overlayfs is not available here: verifying copies of the units run from the root instead"
    mkdir "$work/units"
    for unit in ipnd.service ipnd-backup.service ipnd-backup.timer; do
        sed "s|/usr/bin/ipnd|$root/usr/bin/ipnd|g" "$root/lib/systemd/system/$unit" > "$work/units/$unit"
    done
    check "systemd-analyze verify accepts the installed units" \
        systemd-analyze verify --man=no "$work/units/ipnd.service" "$work/units/ipnd-backup.service" "$work/units/ipnd-backup.timer"
else
    fail "systemd-analyze verify accepts the installed units" "$verify_output"
fi

# The operator configures it and it runs for a while.
echo "# edited by the operator" >> "$root/etc/ipnd/ipnd.yaml"
printf 'secret' > "$root/etc/ipnd/credentials/unlimint-callback-secret"
mkdir -p "$root/var/lib/private/ipnd"
ln -s private/ipnd "$root/var/lib/ipnd"
echo "notifications" > "$root/var/lib/private/ipnd/ipnd.sqlite"

dpkg_root -i "$package"
check "upgraded over itself: install ok installed $version" same "$(status)" "install ok installed $version"
check "upgrade: the operator's edit of the conffile is kept, without a question" \
    same "$(tail -n 1 "$root/etc/ipnd/ipnd.yaml")" "# edited by the operator"
check "upgrade: still enabled" test -L "$root/etc/systemd/system/multi-user.target.wants/ipnd.service"

dpkg_root -r ipnd
check "removed: dpkg keeps only its config files" same "$(status)" "deinstall ok config-files $version"
check "removed: /usr/bin/ipnd is gone" test ! -e "$root/usr/bin/ipnd"
check "removed: the units are gone" test ! -e "$root/lib/systemd/system/ipnd.service"
check "removed: the edited config stays" same "$(tail -n 1 "$root/etc/ipnd/ipnd.yaml")" "# edited by the operator"
check "removed: the credentials stay" test -f "$root/etc/ipnd/credentials/unlimint-callback-secret"
check "removed: the store in /var/lib/ipnd stays" same "$(cat "$root/var/lib/ipnd/ipnd.sqlite")" notifications

dpkg_root -P ipnd
not_installed() { case $1 in "not known" | *" not-installed"*) ;; *) echo "dpkg: $1"; return 1 ;; esac; }
check "purged: dpkg no longer has ipnd" not_installed "$(status)"
check "purged: the store is deleted (/var/lib/ipnd and /var/lib/private/ipnd)" \
    test ! -e "$root/var/lib/ipnd" -a ! -e "$root/var/lib/private/ipnd"
check "purged: /etc/ipnd is deleted, secrets included" test ! -e "$root/etc/ipnd"
check "purged: the enablement is forgotten" test ! -e "$root/etc/systemd/system/multi-user.target.wants/ipnd.service"
check "this machine's own dpkg database is untouched" same "$(dpkg-query -W -f='${Status}' ipnd 2>/dev/null || echo "not installed")" \
    "$host_before"

if [ "$failures" -ne 0 ]; then
    echo "== $failures check(s) of the package failed"
    exit 1
fi
echo "== the package passed every check"
