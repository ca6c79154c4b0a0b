#!/usr/bin/env bash
# build-deb.sh — builds the Debian package from this repository with Debian's own tooling
# (debian/, dpkg-buildpackage -us -uc -b), then prints lintian's verdict on it.
#
#   scripts/build-deb.sh [OUTDIR]      (default: dist/ in the repository)
#
# Installs the build packages when missing (scripts/deps.sh deb: the build's, plus
# debhelper, dpkg-dev, fakeroot and lintian).  The build runs on a copy of the tree, so neither the
# repository nor its parent gets build files (dpkg-buildpackage writes ../*.deb).  Leaves
# OUTDIR/smqd_VERSION_ARCH.deb (and .buildinfo, .changes); prints its path last.
# Install it with:  apt install ./dist/smqd_*.deb
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)

"$root/scripts/deps.sh" deb

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The tracked and untracked-but-not-ignored files (uncommitted edits included), without build
# trees or earlier packages; a tree that is not a git checkout is copied whole.
mkdir "$work/smqd"
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$root" && git ls-files -co --exclude-standard | grep -v -e '^build' -e '^dist/' |
     while IFS= read -r f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
     xargs -0 cp -P --parents -t "$work/smqd")
else
  tar -C "$root" --exclude='./build*' --exclude=./dist -cf - . | tar -C "$work/smqd" -xf -
fi
(cd "$work/smqd" && dpkg-buildpackage -us -uc -b)

shopt -s nullglob
files=("$work"/smqd_*.deb "$work"/smqd-dbgsym_*.deb "$work"/smqd_*.buildinfo "$work"/smqd_*.changes)
cp "${files[@]}" "$out/"
deb=$(ls "$out"/smqd_*"$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)"_*.deb)

echo "== lintian $(basename "$deb")"
# Every tag down to I: and P: is printed; errors fail the build.  Overrides, each with its
# reason, are in debian/smqd.lintian-overrides.
lintian --info --display-info --pedantic --color never --fail-on error "$deb"
echo "$deb"
