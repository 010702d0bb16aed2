#!/usr/bin/env bash
# Fuzzes kiln's targets for a long time and keeps what they find, beside the test
# command's short runs (scripts/test-all.sh: 60 s each from the committed corpus, which
# it never grows).
#
#   scripts/fuzz-long.sh [SECONDS_PER_TARGET] [TARGET...]
#     SECONDS_PER_TARGET  default 3600; targets run one after the other
#     TARGET              fuzz-arena, fuzz-pool, fuzz-handles (default: all)
#
# Builds build-fuzz (clang, libFuzzer) when needed. Each target's working corpus lives in
# build-fuzz-corpus/TARGET (seeded from fuzz/corpus/TARGET on the first run, kept across
# runs), crash inputs in build-fuzz-corpus/crashes/. At the end each working corpus is
# minimised into build-fuzz-corpus/TARGET.min, ready to review and copy into
# fuzz/corpus/TARGET. Exit status 1 when a target found a crash.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
seconds=${1:-3600}
shift || true
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(fuzz-arena fuzz-pool fuzz-handles)

if [ ! -f build-fuzz/build.ninja ]; then
    CC=clang CXX=clang++ meson setup build-fuzz -Dfuzz=true -Dtests=false -Dstress=false \
        -Dbench=false -Db_lundef=false || exit 1
fi
ninja -C build-fuzz || exit 1

keep=build-fuzz-corpus
mkdir -p "$keep/crashes"
status=0
for target in "${targets[@]}"; do
    corpus="$keep/$target"
    if [ ! -d "$corpus" ]; then
        mkdir -p "$corpus"
        cp fuzz/corpus/"$target"/* "$corpus"/
    fi
    echo "== $target: ${seconds}s, corpus $corpus ($(ls "$corpus" | wc -l) inputs)"
    if ! "build-fuzz/fuzz/$target" "$corpus" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$keep/crashes/$target-"; then
        echo "   $target found a crash: $keep/crashes/"
        status=1
    fi
    rm -rf "$corpus.min"
    mkdir -p "$corpus.min"
    "build-fuzz/fuzz/$target" -merge=1 "$corpus.min" "$corpus" >/dev/null 2>&1
    echo "   $(ls "$corpus" | wc -l) inputs kept, $(ls "$corpus.min" | wc -l) after minimising ($corpus.min)"
done
exit "$status"
