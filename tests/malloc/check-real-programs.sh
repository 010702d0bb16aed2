#!/usr/bin/env bash
# tests/malloc/check-real-programs.sh BUILD_DIR — programs nobody here wrote, on kiln's
# heap: each runs on glibc's malloc, then with LD_PRELOAD=libkiln-malloc.so and
# KILN_OPTIONS=debug=checks (kiln's log to a file), and must print the same output and
# exit with the same status, with no kiln warning or error logged and kiln's heap
# having served it (its stats=exit report counts the allocations). One line per
# program with both times.
set -uo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
lib="$build/malloc/libkiln-malloc.so"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

# same NAME CMD...: runs CMD both ways (in $work/run, from the repository's root).
same() {
    local name=$1; shift
    local t0 t1 t2 rc_glibc rc_kiln
    t0=$(date +%s.%N)
    (cd "$root" && "$@") >"$work/$name.glibc" 2>"$work/$name.glibc.err"
    rc_glibc=$?
    t1=$(date +%s.%N)
    rm -f "$work/$name.kiln.log"
    (cd "$root" && LD_PRELOAD="$lib" KILN_OPTIONS="debug=checks,stats=exit,log_file=$work/$name.kiln.log" "$@") \
        >"$work/$name.kiln" 2>"$work/$name.kiln.err"
    rc_kiln=$?
    t2=$(date +%s.%N)
    local why=""
    [ "$rc_glibc" -eq "$rc_kiln" ] || why="exit status $rc_kiln on kiln, $rc_glibc on glibc"
    cmp -s "$work/$name.glibc" "$work/$name.kiln" || why="${why:+$why; }output differs: $(diff "$work/$name.glibc" "$work/$name.kiln" | head -3 | tr '\n' ' ')"
    if grep -qE '^kiln (warn|error)' "$work/$name.kiln.log" 2>/dev/null; then
        why="${why:+$why; }kiln logged: $(grep -E '^kiln (warn|error)' "$work/$name.kiln.log" | head -3 | tr '\n' ' ')"
    fi
    local allocs
    # The heap's allocs, summed over every process of the run (gcc's and git's children
    # report too, into the same log).
    allocs=$(grep -A4 'STATS_REPORT: == heap ==' "$work/$name.kiln.log" 2>/dev/null |
             sed -n 's/.*STATS_REPORT: *allocs *\([0-9]*\)$/\1/p' | awk '{ s += $1 } END { print s + 0 }')
    [ "${allocs:-0}" -gt 1000 ] || why="${why:+$why; }kiln's heap served ${allocs:-no} allocations: was it preloaded?"
    printf '  %-8s glibc %6.2f s, kiln %6.2f s, %s allocations on kiln%s\n' "$name" \
        "$(awk "BEGIN { print $t1 - $t0 }")" "$(awk "BEGIN { print $t2 - $t1 }")" "${allocs:-0}" \
        "${why:+: FAILED: $why}"
    [ -z "$why" ] || failed=1
}

# PYTHONMALLOC=malloc: every object through malloc, not only what pymalloc passes on.
same python3 env PYTHONMALLOC=malloc /usr/bin/python3 tests/malloc/workload.py
same lua5.4  lua5.4 tests/malloc/workload.lua
same perl    perl tests/malloc/workload.pl
same gcc     sh -c "gcc -std=c11 -O2 -Iinclude -I. -DKILN_NO_INLINE -c alloc/heap.c -o '$work/heap.o' && sha256sum < '$work/heap.o'"
same git     sh -c 'git log --stat -n 300 --format="%H %s" | sha256sum && git rev-list --count HEAD && git ls-files | wc -l && git grep -c kiln_heap_alloc -- include | sort'
exit "$failed"
