#!/bin/sh
# bench/run-all.sh — runs every kiln benchmark program and prints one table per workload.
#
#   bench/run-all.sh BUILD_DIR [--quick]     from the source tree (programs in BUILD_DIR/bench)
#   BUILD_DIR/bench/run-all.sh [--quick]     the copy meson puts next to the programs
#
#   (no flag)  the full run (about 3 minutes on 2 cores), then the callgrind
#              instruction counts (callgrind.sh: kiln_frame_alloc, the pool pair, the
#              handle get and pair) when valgrind is installed
#   --quick    every workload and every peer with tiny sizes, in seconds (the test suite)
#
# Exits 0 when every program did; a failing program fails the run.
set -eu

here=$(dirname "$0")
dir=${KILN_BENCH_DIR:-$here}
quick=
for arg in "$@"; do
    case "$arg" in
        --quick) quick=--quick ;;
        -*) echo "usage: run-all.sh [BUILD_DIR] [--quick]" >&2; exit 2 ;;
        *) dir=$arg/bench ;;
    esac
done

start=$(date +%s)
# One program per family.
# (frag_bench's full run, a session of 10^8 operations per allocator, adds about 2-3 minutes.)
for program in alloc_bench pool_bench heap_bench frag_bench jobs_bench graph_bench handles_bench cpp_bench log_bench; do
    if [ ! -x "$dir/$program" ]; then
        echo "run-all: $dir/$program is missing (meson compile -C BUILD_DIR first)" >&2
        exit 1
    fi
    "$dir/$program" $quick
done

if [ -z "$quick" ]; then
    if command -v valgrind >/dev/null 2>&1; then
        KILN_BENCH_DIR=$dir "$here/callgrind.sh"
    else
        echo "note: valgrind not found; the callgrind counts are skipped"
    fi
fi
echo "run-all: done in $(( $(date +%s) - start )) s"
