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

# scripts/deb-copyright.sh [MANIFEST]: prints the package's /usr/share/doc/ipnd/copyright in
# Debian's machine-readable format (https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/).
#
# ipnd's own files are Apache-2.0 (LICENSE). The binary has the Swift runtime, Foundation and
# Swift packages linked in, so the file lists each of them, generated, never typed by hand:
#   - the packages: those whose modules the link of ipnd takes, read from SwiftPM's build manifest
#     (MANIFEST, .build/debug.yaml by default; build-deb.sh passes .build/release.yaml for a
#     release binary), with their version and revision from Package.resolved, and their
#     copyright lines, licence and NOTICE from their checkouts (.build/checkouts); a licence file
#     inside a linked module's own directory (swift-nio's llhttp) gets a paragraph of its own;
#   - the Swift runtime, Foundation and Dispatch: the toolchain's LICENSE.txt (Apache-2.0 with the
#     Runtime Library Exception), and the ICU inside Foundation with the notice its headers carry.
# Apache-2.0 refers to Debian's /usr/share/common-licenses/Apache-2.0; any other licence text is
# copied from the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."

manifest=${1:-.build/debug.yaml}
for file in "$manifest" Package.resolved .build/workspace-state.json; do
    [ -f "$file" ] || { echo "deb-copyright: $file is missing: build ipnd first (swift build)" >&2; exit 1; }
done
toolchain=$(dirname "$(dirname "$(command -v swift)")")

python3 - "$manifest" "$toolchain" <<'EOF'
import json, os, re, sys

manifest, toolchain = sys.argv[1:]
checkouts = os.path.abspath(".build/checkouts")


def commands(path):
    """The manifest's commands as dicts of their list-valued keys (inputs, outputs, args)."""
    command = {}
    for line in open(path):
        stripped = line.strip()
        if line.startswith("  ") and not line.startswith("    ") and stripped.endswith(":"):
            if command:
                yield command
            command = {}
        elif ": [" in stripped:
            key, value = stripped.split(": ", 1)
            try:
                command[key] = json.loads(value)
            except ValueError:
                pass
    if command:
        yield command


module_pattern = re.compile(r"/([^/]+)\.build/")
all_commands = list(commands(manifest))
link = next((c for c in all_commands if "args" in c and any(o.endswith("/ipnd") for o in c.get("outputs", []))), None)
if link is None:
    sys.exit(f"deb-copyright: {manifest} has no link command for ipnd")
linked_modules = {m.group(1) for path in link.get("inputs", []) for m in [module_pattern.search(path)] if m}

# The checkout files that the linked modules are built from.
sources = {}  # checkout subpath -> set of source directories
for command in all_commands:
    built = {m.group(1) for path in command.get("outputs", []) for m in [module_pattern.search(path)] if m}
    if not built & linked_modules:
        continue
    for path in command.get("inputs", []):
        if path.startswith(checkouts + "/"):
            subpath = path[len(checkouts) + 1:].split("/", 1)[0]
            sources.setdefault(subpath, set()).add(os.path.dirname(path))

# Versions from Package.resolved; checkout directories from the workspace state.
pins = {pin["identity"]: pin for pin in json.load(open("Package.resolved"))["pins"]}
subpaths = {d["packageRef"]["identity"]: d["subpath"] for d in json.load(open(".build/workspace-state.json"))["object"]["dependencies"]}
packages = []
for identity, pin in sorted(pins.items(), key=lambda item: subpaths.get(item[0], item[0]).lower()):
    subpath = subpaths.get(identity)
    if subpath in sources:
        packages.append((subpath, pin))
unresolved = set(sources) - {subpath for subpath, _ in packages}
if unresolved:
    sys.exit(f"deb-copyright: linked from checkouts Package.resolved does not pin: {', '.join(sorted(unresolved))}")


def licence_files(directory):
    return sorted(os.path.join(directory, name) for name in os.listdir(directory)
                  if re.match(r"(?i)(licen[cs]e|copying)", name) and os.path.isfile(os.path.join(directory, name)))


def notice_file(directory):
    names = sorted(name for name in os.listdir(directory) if re.match(r"(?i)notice", name))
    return os.path.join(directory, names[0]) if names else None


def classify(text):
    """The licence's DEP-5 short name, and whether its text must be copied in."""
    if "Apache License" in text and "Version 2.0" in text:
        return ("Apache-2.0 with Swift exception" if "Runtime Library Exception" in text else "Apache-2.0"), False
    if "Permission is hereby granted, free of charge" in text and 'IS PROVIDED "AS IS"' in text:
        return "Expat", True
    return None, True


def copyright_lines(*texts):
    """Copyright lines of the licence and NOTICE, not the Apache licence's own template lines."""
    found = []
    for text in texts:
        for line in (text or "").splitlines():
            line = line.strip().lstrip("#*/ ").strip()
            if re.match(r"Copyright\b(?!\s*(\[|notice|owner|holder|law|and\b|statement))", line):
                holder = re.sub(r"(?i)^copyright\s*(\(c\)|©)?\s*", "", line)
                if holder not in found:
                    found.append(holder)
    return found


def field(text):
    """Text as a DEP-5 continuation: each line indented one space, empty ones as ' .'."""
    lines = text.rstrip("\n").splitlines()
    return "\n".join(" " + line.rstrip() if line.strip() else " ." for line in lines)


def read(path):
    return open(path, encoding="utf-8", errors="replace").read() if path else None


paragraphs = []


def package_paragraph(files, copyright, licence_path, comment):
    text = read(licence_path) if licence_path else ""
    name, copy_text = classify(text)
    if name is None:
        name = "other"
    body = f"Files: {files}\nCopyright: " + ("\n ".join(copyright) if copyright else "its authors (see the Comment)")
    body += f"\nLicense: {name}"
    if copy_text and text:
        body += "\n" + field(text)
    body += "\nComment: " + comment.lstrip() if comment else ""
    paragraphs.append(body)


for subpath, pin in packages:
    root = os.path.join(checkouts, subpath)
    state = pin.get("state", {})
    version = state.get("version") or state.get("branch") or "unreleased"
    licences = licence_files(root)
    notice = notice_file(root)
    comment = f"{subpath} {version} ({pin['location']}, revision {state.get('revision', 'unknown')}), linked into /usr/bin/ipnd."
    if notice:
        comment += "\n" + field(f"Its {os.path.basename(notice)}:\n\n" + read(notice))
    copyright = copyright_lines(*(read(p) for p in licences), read(notice)) or [f"the {subpath} authors"]
    package_paragraph(f".build/checkouts/{subpath}/*", copyright, licences[0] if licences else None, comment)
    # Licence files of the linked modules' own directories (code a package carries from elsewhere).
    seen = set(licences)
    for directory in sorted(sources[subpath]):
        while directory.startswith(root + "/"):
            for path in licence_files(directory):
                if path in seen:
                    continue
                seen.add(path)
                relative = os.path.relpath(os.path.dirname(path), checkouts)
                package_paragraph(f".build/checkouts/{relative}/*", copyright_lines(read(path)) or [f"the authors of {relative}"],
                                  path, f"Carried by {subpath} and linked into /usr/bin/ipnd.")
            directory = os.path.dirname(directory)

# The Swift runtime, Foundation and Dispatch, and the ICU Foundation carries.
swift_licence = os.path.join(toolchain, "share/swift/LICENSE.txt")
runtime = "Files: swift-toolchain/*\nCopyright: Apple Inc. and the Swift project authors\nLicense: Apache-2.0 with Swift exception\n"
runtime += ("Comment: The Swift standard library and runtime, Foundation and Dispatch of the toolchain ipnd was built with,\n"
            " linked into /usr/bin/ipnd (swift build --static-swift-stdlib); their licence is the toolchain's LICENSE.txt.")
paragraphs.insert(0, runtime)
icu_header = os.path.join(toolchain, "lib/swift_static/_foundation_unicode/icuplug.h")
if os.path.isfile(icu_header):
    notice = [line.strip().lstrip("/* ").strip() for line in read(icu_header).splitlines()[:6] if "Unicode" in line]
    paragraphs.insert(1, "Files: swift-toolchain/usr/lib/swift_static/linux/lib_FoundationICU.a\n"
                      f"Copyright: {notice[0] if notice else 'Unicode, Inc. and others'}\n"
                      "License: Unicode-3.0\n"
                      + field("\n".join(notice[1:]) or "License & terms of use: http://www.unicode.org/copyright.html")
                      + "\nComment: ICU as Foundation carries it (swift-foundation-icu), linked into /usr/bin/ipnd.")

print("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/")
print("Upstream-Name: ipnd")
print("Comment: ipnd receives, verifies and records payment providers' notifications.")
print(" The binary has the Swift runtime, Foundation and the Swift packages below linked into it;")
print(" their paragraphs are generated by scripts/deb-copyright.sh from Package.resolved, SwiftPM's")
print(" build manifest and the packages' checkouts.")
print()
print("Files: *\nCopyright: the ipnd authors\nLicense: Apache-2.0")
for paragraph in paragraphs:
    print()
    print(paragraph)

exception = ""
if os.path.isfile(swift_licence):
    text = read(swift_licence)
    start = text.find("## Runtime Library Exception")
    exception = text[start:] if start >= 0 else ""
print()
print("License: Apache-2.0")
print(" On Debian systems, the complete text of the Apache License, Version 2.0 can be found in")
print(" /usr/share/common-licenses/Apache-2.0.")
print()
print("License: Apache-2.0 with Swift exception")
print(" On Debian systems, the complete text of the Apache License, Version 2.0 can be found in")
print(" /usr/share/common-licenses/Apache-2.0. The Swift project adds this exception to it:")
print(" .")
print(field(exception.replace("#", "").strip() or "(the exception's text is in the toolchain's LICENSE.txt)"))
EOF
