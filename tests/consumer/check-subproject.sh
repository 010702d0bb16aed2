#!/usr/bin/env bash
# Builds and runs a consumer project that takes kiln as a meson subproject, both through
# the declared kiln_dep and through dependency('kiln') (meson.override_dependency).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/subprojects"
ln -s "$root" "$work/subprojects/kiln"
cp "$here/consumer.c" "$work/"
cat > "$work/meson.build" <<'MESON'
project('kiln-consumer', 'c', default_options : ['c_std=c11'])
kiln_proj = subproject('kiln', default_options : ['tests=false', 'stress=false', 'bench=false'])
executable('by-variable', 'consumer.c', dependencies : kiln_proj.get_variable('kiln_dep'))
executable('by-name', 'consumer.c', dependencies : dependency('kiln'))
MESON
meson setup "$work/build" "$work" >/dev/null
ninja -C "$work/build" >/dev/null
"$work/build/by-variable"
"$work/build/by-name"
