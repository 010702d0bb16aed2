#!/usr/bin/env bash
# Installs a built kiln into a scratch root, then builds and runs a consumer against it
# through pkg-config, once linked shared and once static, and a C++ one over kiln/kiln.hpp.
# Usage: check-install.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$1
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --quiet
pc=$(find "$dest" -name kiln.pc | head -1)
[ -n "$pc" ] || { echo "kiln.pc was not installed"; exit 1; }
grep -q '^Requires:.*ck' "$pc" || { echo "kiln.pc does not require ck"; cat "$pc"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
# The .pc names the real prefix; point it into the scratch root.
pkgconf() { pkg-config --define-variable=prefix="$dest$(pkg-config --variable=prefix kiln)" "$@"; }
libdir=$(pkgconf --variable=libdir kiln)
echo "pkg-config: $(pkgconf --cflags --libs kiln)"
cc -std=c11 -Wall -Wextra -Werror -pedantic "$here/consumer.c" -o "$dest/consumer-shared" \
   $(pkgconf --cflags --libs kiln)
LD_LIBRARY_PATH="$libdir" "$dest/consumer-shared"
cc -std=c11 -Wall -Wextra -Werror -pedantic "$here/consumer.c" -o "$dest/consumer-static" \
   $(pkgconf --cflags kiln) "$libdir/libkiln.a" \
   $(pkgconf --static --libs-only-other --libs-only-l kiln | sed 's/-lkiln//')
"$dest/consumer-static"
# The C++ layer (kiln/kiln.hpp) is installed too and found through the same pkg-config.
c++ -std=c++17 -Wall -Wextra -Werror -pedantic "$here/../headers_hpp.cpp" -o "$dest/consumer-cpp" \
    $(pkgconf --cflags --libs kiln)
LD_LIBRARY_PATH="$libdir" "$dest/consumer-cpp"
# libkiln-malloc, linked instead of preloaded: pkg-config kiln-malloc gives the flags.
pkgconf --exists kiln-malloc || { echo "kiln-malloc.pc was not installed"; exit 1; }
echo "pkg-config kiln-malloc: $(pkgconf --libs kiln-malloc)"
cc -std=c11 -Wall -Wextra -Werror -pedantic "$here/consumer_malloc.c" -o "$dest/consumer-malloc" \
   $(pkgconf --cflags --libs kiln-malloc)
LD_LIBRARY_PATH="$libdir" "$dest/consumer-malloc"
