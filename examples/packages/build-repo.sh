#!/bin/sh
# Builds the example's package, toque-hello 1.0, and a local APT repository
# holding it, with nothing but dpkg (dpkg-deb) and coreutils — no
# dpkg-dev, no network. Usage: build-repo.sh [DIR] (default
# /var/tmp/toque-example-repo, or $TOQUE_EXAMPLE_REPO).
set -eu
repo=${1:-${TOQUE_EXAMPLE_REPO:-/var/tmp/toque-example-repo}}
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT

mkdir -p "$tree/DEBIAN" "$tree/usr/share/toque-hello"
cat > "$tree/DEBIAN/control" <<CONTROL
Package: toque-hello
Version: 1.0
Architecture: all
Maintainer: toque example <example@example.invalid>
Description: toque's example package
 Installs /usr/share/toque-hello/hello.txt, and nothing else.
CONTROL
echo "Hello from a package toque installed." > "$tree/usr/share/toque-hello/hello.txt"

mkdir -p "$repo"
chmod 0755 "$repo"
dpkg-deb --build --root-owner-group "$tree" "$repo/toque-hello_1.0_all.deb" >/dev/null

# The index apt reads (what dpkg-scanpackages would write): the control
# fields, then where the file is, its size and its sha256.
cd "$repo"
{
  cat "$tree/DEBIAN/control" | sed '/^Description/,$d'
  echo "Filename: ./toque-hello_1.0_all.deb"
  echo "Size: $(stat -c %s toque-hello_1.0_all.deb)"
  echo "SHA256: $(sha256sum toque-hello_1.0_all.deb | cut -d' ' -f1)"
  sed -n '/^Description/,$p' "$tree/DEBIAN/control"
  echo
} > Packages
gzip -kf Packages
chmod 0644 Packages Packages.gz toque-hello_1.0_all.deb
echo "Built $repo: toque-hello 1.0, and its index."
