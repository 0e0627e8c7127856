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

# scripts/build-deb.sh BINARY [OUTDIR]: the Debian package of BINARY, an ipnd with the Swift
# runtime linked in (scripts/build-release.sh for `make deb`; scripts/link-static-debug.sh for
# the tests), written as OUTDIR/ipnd_<version>_<arch>.deb (OUTDIR: the repository by default)
# and checked by lintian, which fails the build on any error. The last line printed is the
# package's path.
#
# Nothing in the package is written by hand for it: the version is the binary's own
# (`ipnd --version`, BuildInfo.version); Depends is what dpkg-shlibdeps finds the binary links;
# the units are deploy/'s with the package's paths; the config is deploy/ipnd.yaml; the shell
# completions and the man page ipnd(1) are generated from the binary's command tree (the man
# page by swift-argument-parser's generate-manual, the tool its GenerateManual plugin runs:
# the plugin itself would build every product again in its own configuration). The maintainer
# scripts are deploy/deb/'s. DEB_MAINTAINER names the Maintainer (default below).
set -euo pipefail
cd "$(dirname "$0")/.."
repository=$PWD

fail() {
    echo "build-deb: $*" >&2
    exit 1
}

[ $# -ge 1 ] && [ $# -le 2 ] || fail "usage: scripts/build-deb.sh BINARY [OUTDIR]"
[ -x "$1" ] || fail "$1 is not an executable (build one with scripts/build-release.sh ipnd)"
binary=$(realpath "$1")
output=$(realpath "${2:-.}")
maintainer=${DEB_MAINTAINER:-ipnd maintainers <ipnd@example.com>}
for tool in dpkg-deb dpkg-shlibdeps lintian strip readelf gzip; do
    command -v "$tool" >/dev/null || fail "$tool is missing (make deb installs dpkg-dev, lintian and binutils)"
done

# A binary that loads the Swift runtime from the toolchain would not start on a server.
if readelf -d "$binary" | grep -Eq 'NEEDED.*\[lib(swift|Foundation|dispatch|BlocksRuntime)'; then
    fail "$binary loads the Swift runtime as shared libraries; package a build with the runtime linked in (scripts/build-release.sh ipnd)"
fi
version=$("$binary" --version)
[[ $version =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || fail "\"$version\" (ipnd --version) is not a Debian version"
arch=$(dpkg --print-architecture)

# The time of the commit built, so two builds of one commit are the same package.
if commit_time=$(git log -1 --format=%ct 2>/dev/null); then
    export SOURCE_DATE_EPOCH=$commit_time
    built_from="Built from commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources Package.swift deploy 2>/dev/null || echo ' with local changes')."
else
    export SOURCE_DATE_EPOCH=$(date +%s)
    built_from="Built outside a git checkout."
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ipnd-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
# dpkg-shlibdeps reads debian/control and expects the package's files under debian/PACKAGE.
root=$work/debian/ipnd
mkdir -p "$work/debian"
printf 'Source: ipnd\n\nPackage: ipnd\nArchitecture: any\n' > "$work/debian/control"

install -d -m 0755 "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system" "$root/etc/ipnd" \
    "$root/usr/share/man/man1" "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/fish/vendor_completions.d" "$root/usr/share/doc/ipnd/examples" "$root/usr/share/lintian/overrides"
install -d -m 0700 "$root/etc/ipnd/credentials"

# The binary, stripped as dh_strip strips an executable.
install -m 0755 "$binary" "$root/usr/bin/ipnd"
strip --remove-section=.comment --remove-section=.note "$root/usr/bin/ipnd"
ipnd=$root/usr/bin/ipnd
[ "$("$ipnd" --version)" = "$version" ] || fail "the stripped binary does not run"

# The units: deploy/'s, same hardening, with the package's paths.
for unit in ipnd.service ipnd-backup.service ipnd-backup.timer; do
    sed -e 's|/usr/local/bin/ipnd|/usr/bin/ipnd|g' \
        -e 's|^Documentation=file:///usr/local/share/doc/ipnd/README.md$|Documentation=man:ipnd(1) file:///usr/share/doc/ipnd/README.md|' \
        -e 's|^# ipnd as a hardened systemd service. Install: see deploy/README.md.$|# ipnd as a hardened systemd service, from the ipnd package. Change it with `systemctl edit ipnd` (/usr/share/doc/ipnd/deploy.md).|' \
        "deploy/$unit" > "$root/lib/systemd/system/$unit"
    chmod 0644 "$root/lib/systemd/system/$unit"
    if grep -q /usr/local "$root/lib/systemd/system/$unit"; then
        fail "deploy/$unit names /usr/local in a way this script does not rewrite: $(grep -n /usr/local "$root/lib/systemd/system/$unit")"
    fi
done

# The config: the commented template, no secret in it; a conffile, so an edited one is kept.
install -m 0644 deploy/ipnd.yaml "$root/etc/ipnd/ipnd.yaml"
echo /etc/ipnd/ipnd.yaml > "$root/DEBIAN/conffiles"

# Completions and the man page, from the command tree.
# bash-completion sources its scripts: the generated one's #!/bin/bash line has no use there.
"$ipnd" --generate-completion-script bash | sed '1{/^#!/d}' > "$root/usr/share/bash-completion/completions/ipnd"
"$ipnd" --generate-completion-script zsh > "$root/usr/share/zsh/vendor-completions/_ipnd"
"$ipnd" --generate-completion-script fish > "$root/usr/share/fish/vendor_completions.d/ipnd.fish"
argument_parser=.build/checkouts/swift-argument-parser
[ -f "$argument_parser/Tools/generate-manual/GenerateManual.swift" ] ||
    fail "$argument_parser/Tools/generate-manual is missing: build ipnd first (swift build), which checks out swift-argument-parser"
echo "== building swift-argument-parser's generate-manual" >&2
swift build --package-path "$argument_parser" --scratch-path .build/argument-parser-tools --product generate-manual >&2
generate_manual=$(swift build --package-path "$argument_parser" --scratch-path .build/argument-parser-tools --show-bin-path)/generate-manual
"$generate_manual" "$ipnd" --date "$(date -u -d "@$SOURCE_DATE_EPOCH" +%F)" --output-directory "$work"
gzip -9n < "$work/ipnd.1" > "$root/usr/share/man/man1/ipnd.1.gz"

# Documentation, the changelog Debian requires, and the copyright file.
install -m 0644 README.md "$root/usr/share/doc/ipnd/README.md"
install -m 0644 deploy/README.md "$root/usr/share/doc/ipnd/deploy.md"
for example in nginx-ipnd.conf nginx-ipnd-cluster.conf ipnd-cluster.yaml ipnd-cluster.conf; do
    install -m 0644 "deploy/$example" "$root/usr/share/doc/ipnd/examples/$example"
done
{
    printf 'ipnd (%s) unstable; urgency=medium\n\n  * %s\n\n -- %s  %s\n' \
        "$version" "$built_from" "$maintainer" "$(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n > "$root/usr/share/doc/ipnd/changelog.gz"
scripts/deb-copyright.sh > "$root/usr/share/doc/ipnd/copyright"
install -m 0644 deploy/deb/lintian-overrides "$root/usr/share/lintian/overrides/ipnd"

# Maintainer scripts, the control file with Depends computed from what the binary links.
for script in postinst prerm postrm; do
    install -m 0755 "deploy/deb/$script" "$root/DEBIAN/$script"
done
depends=$(cd "$work" && dpkg-shlibdeps -O -e debian/ipnd/usr/bin/ipnd 2>"$work/shlibdeps.log") ||
    fail "dpkg-shlibdeps: $(cat "$work/shlibdeps.log")"
depends=${depends#shlibs:Depends=}
[ -n "$depends" ] || fail "dpkg-shlibdeps found no dependency: $(cat "$work/shlibdeps.log")"
installed_size=$(du -s -k --exclude=DEBIAN "$root" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@MAINTAINER@|$maintainer|" \
    -e "s|@INSTALLED_SIZE@|$installed_size|" -e "s|@DEPENDS@|$depends|" deploy/deb/control > "$root/DEBIAN/control"
(cd "$root" && find . -type f ! -path './DEBIAN/*' ! -path './etc/*' -printf '%P\0' | sort -z | xargs -0 md5sum) \
    > "$root/DEBIAN/md5sums"
find "$root" -newermt "@$SOURCE_DATE_EPOCH" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

mkdir -p "$output"
package=$output/ipnd_${version}_${arch}.deb
dpkg-deb --root-owner-group --build "$root" "$package" >&2

echo "== lintian $package" >&2
lintian --fail-on error "$package" >&2 || fail "lintian found errors in $package (above)"
echo "$package"
