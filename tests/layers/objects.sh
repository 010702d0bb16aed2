#!/usr/bin/env bash
# tests/layers/objects.sh FIXTURE: the call-graph half of scripts/check-layers.py's self-test.
# Compiles each .c of a fixture tree into a scratch folder, naming the objects as meson
# does (the source path with '/' as '_', then .o), and runs the check with --root FIXTURE
# --objects on them; its exit status is the check's.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fixture=$(cd "$1" && pwd)
objects=$(mktemp -d)
trap 'rm -rf "$objects"' EXIT
cd "$fixture"
for src in $(find base alloc jobs runtime -name '*.c' 2>/dev/null | sort); do
    "${CC:-cc}" -std=c11 -c -I include "$src" -o "$objects/$(echo "$src" | tr / _).o"
done
python3 "$here/../../scripts/check-layers.py" --root "$fixture" --objects "$objects"
