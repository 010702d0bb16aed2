#!/bin/sh
# bench/callgrind.sh — exact instruction counts, stable on noisy machines:
#  - kiln_frame_alloc: the instructions of N calls with A1's sizes in their loop, after
#    one warm-up frame, less those of the same loop without the calls; prints Ir per
#    call (the inline path, and the slow path when a block fills, at A1's rate).
#  - the A2 cache-hit pair (alloc of 64 B, then its free) of kiln and of the in-process
#    peers: the instructions of N pairs, loop included, after an uncounted warm-up burst;
#    prints Ir per pair, and kiln's split by function.
#  - H1 handles: kiln_handle_get of live and of stale handles and the alloc+free pair of
#    kiln, and the same loops over a generational table without thread safety; prints Ir
#    per get and per pair, and kiln's split by function.
# Usage: callgrind.sh [N]   (default 1 000 000; needs valgrind). The programs are looked up
# in $KILN_BENCH_DIR, else next to this script (the copy in BUILD_DIR/bench).
set -eu

dir=${KILN_BENCH_DIR:-$(dirname "$0")}
n=${1:-1000000}
out=$(mktemp "${TMPDIR:-/tmp}/kiln-callgrind.XXXXXX")
trap 'rm -f "$out"' EXIT

# Ir between the client requests of one run: callgrind_count PROGRAM ARGS...
callgrind_count() {
    valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$out" \
        "$@" >/dev/null 2>&1 || return 1
    sed -n 's/^totals: *\([0-9]*\).*/\1/p;s/^summary: *\([0-9]*\).*/\1/p' "$out" | head -n 1
}

echo
echo "== callgrind: kiln_frame_alloc =="
echo "A1 sizes (16-256 B, align 8), $n calls after a warm-up frame; the instructions of the"
echo "allocation loop (the block-switch slow path included), less those of the same loop"
echo "without the allocations: what kiln_frame_alloc adds, inlined"
if ir=$(callgrind_count "$dir/alloc_bench" --callgrind-frame-alloc "$n") &&
   base=$(callgrind_count "$dir/alloc_bench" --callgrind-frame-alloc "$n" loop) &&
   [ -n "$ir" ] && [ -n "$base" ]; then
    awk -v ir="$ir" -v base="$base" -v n="$n" 'BEGIN {
        printf "Ir per call %.2f (loop with allocations %.2f, loop alone %.2f)\n",
               (ir - base) / n, ir / n, base / n }'
else
    echo "  not run (alloc_bench --callgrind-frame-alloc failed)"
fi

echo
echo "== callgrind: A2 cache-hit pair =="
echo "alloc of a 64-byte object immediately followed by its free, $n pairs after a warm-up"
echo "burst; every instruction between the two client requests (the loop's own included)"
for impl in kiln glibc mimalloc freelist; do
    valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$out" \
        "$dir/pool_bench" --callgrind "$impl" "$n" >/dev/null 2>&1 || {
        echo "  $impl: not run (pool_bench --callgrind $impl failed)"; continue; }
    ir=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$out")
    [ -n "$ir" ] || ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out")
    awk -v impl="$impl" -v ir="$ir" -v n="$n" \
        'BEGIN { printf "  %-10s Ir per pair %7.2f\n", impl, ir / n }'
    if [ "$impl" = kiln ] && command -v callgrind_annotate >/dev/null 2>&1; then
        callgrind_annotate --threshold=100 "$out" 2>/dev/null |
            awk -v n="$n" '$1 ~ /^[0-9,]+$/ && /:(kiln_pool|hit_round)/ {
                name = ""; for (i = 2; i <= NF; i++) if ($i ~ /:/) name = $i
                gsub(",", "", $1); sub(/.*:/, "", name); if ($1 / n < 0.01) next
                printf "    %-26s %8.2f per pair\n", name, $1 / n }'
    fi
done

echo
echo "== callgrind: H1 handles =="
echo "kiln_handle_get of 4096 live (and of 4096 stale) handles in a random order, and the"
echo "alloc+free pair with a frame end every 1000 pairs (counted); about $n of each after an"
echo "uncounted pass; every instruction between the two client requests, the loop's own"
echo "included; ref-: the generational table without thread safety (inlined, no call)"
for mode in get stale pair ref-get ref-pair; do
    count=$(valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$out" \
        "$dir/handles_bench" --callgrind "$mode" "$n" 2>/dev/null |
        sed -n 's/^[a-z]* \([0-9]*\) (plus.*/\1/p') || count=
    ir=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$out")
    [ -n "$ir" ] || ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out")
    if [ -z "$count" ] || [ -z "$ir" ]; then
        echo "  $mode: not run (handles_bench --callgrind $mode failed)"
        continue
    fi
    unit=get
    case "$mode" in *pair) unit=pair ;; esac
    awk -v mode="$mode" -v ir="$ir" -v n="$count" -v unit="$unit" \
        'BEGIN { printf "  %-10s Ir per %-4s %7.2f\n", mode, unit, ir / n }'
    if [ "$mode" = get ] || [ "$mode" = pair ] && command -v callgrind_annotate >/dev/null 2>&1; then
        callgrind_annotate --threshold=100 "$out" 2>/dev/null |
            awk -v n="$count" -v unit="$unit" '$1 ~ /^[0-9,]+$/ && /:(kiln_|cache_|get_round|pair_round|__memset)/ {
                name = ""; for (i = 2; i <= NF; i++) if ($i ~ /:/) name = $i
                gsub(",", "", $1); sub(/.*:/, "", name); if ($1 / n < 0.01) next
                printf "    %-26s %8.2f per %s\n", name, $1 / n, unit }'
    fi
done
