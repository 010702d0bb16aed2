#!/usr/bin/env bash
# Runs kiln's whole test suite and sums it up honestly: every Criterion test (counted one
# by one from its TAP output) in the default and the ASan+UBSan builds, every stress
# program under ThreadSanitizer, the example, the benchmarks' quick pass and the
# install and subproject consumer checks, the programs that misuse kiln on purpose
# (tests/expect/: each misuse must be reported), alloc/'s unit tests and a stress run
# under Valgrind's memcheck (on the default build), the fuzz targets (fuzz/) for
# KILN_FUZZ_SECONDS each (default 25) and the SPIN models of the frame clock, of a
# sleeping wait and of the frees signal handlers defer. Called by
# `scripts/dev.sh test`, which first installs what is missing.
# Sized for two cores: Criterion binaries run two at a time, and memcheck (one core)
# runs beside the fuzzers and the model (one core each, one after the other). Each
# binary's and each stage's time is printed; the stages' again at the end.
# The last line is "N passed, N failed"; skipped tests are counted apart, not as passed.
set -uo pipefail
# The tests set their own options: one from the caller's environment would change them.
unset KILN_OPTIONS

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
logs="$root/build-logs"
rm -rf "$logs"
mkdir -p "$logs"
passed=0
failed=0
skipped=0
failures=()

# stage TITLE: starts a stage; the time each stage took is printed when the next starts,
# and all of them again at the end (where the test command's time goes).
stage_name=""
stage_start=$SECONDS
stage_times=()
stage() {
    if [ -n "$stage_name" ]; then
        local took=$((SECONDS - stage_start))
        stage_times+=("$(printf '%5ds  %s' "$took" "$stage_name")")
        echo "   ($took s)"
    fi
    stage_name=$1
    stage_start=$SECONDS
    [ -z "$1" ] || echo "== $1"
}

pass() { passed=$((passed + 1)); echo "  ok      $1"; }
fail() { failed=$((failed + 1)); failures+=("$1"); echo "  FAILED  $1 (log: ${2:-none})"; }

# log_for NAME: the log file of a test with this name.
log_for() { echo "$logs/$(echo "$1" | tr -c 'A-Za-z0-9_.-' '_').log"; }

# check NAME CMD...: one test that passes when CMD exits 0; output kept in a log.
check() {
    local name=$1; shift
    local log; log=$(log_for "$name")
    if "$@" >"$log" 2>&1; then pass "$name"; else fail "$name" "$log"; fi
}

# criterion LABEL BINARY [ARGS...]: every test of a Criterion binary, counted from its TAP
# output; ARGS go to the binary. A stage that runs the binary under a tool puts the
# tool's command line in the array `runner` first. criterion_run and criterion_tally
# are its halves: the run may go on in the background (criteria) while another runs.
runner=()
criterion_run() {
    local label=$1 bin=$2; shift 2
    local name; name=$(basename "$bin")
    local start=$SECONDS
    "${runner[@]}" "$bin" -j1 --tap="$logs/$label-$name.tap" "$@" >"$logs/$label-$name.log" 2>&1
    echo "$? $((SECONDS - start))" >"$logs/$label-$name.rc"
}
criterion_tally() {
    local label=$1 bin=$2
    local name; name=$(basename "$bin")
    local tap="$logs/$label-$name.tap" log="$logs/$label-$name.log" rc took
    read -r rc took <"$logs/$label-$name.rc"
    local ok bad skip
    ok=$(grep -c '^ok ' "$tap" 2>/dev/null || true)
    bad=$(grep -c '^not ok ' "$tap" 2>/dev/null || true)
    skip=$(grep -c '^ok .*# SKIP' "$tap" 2>/dev/null || true)
    ok=$((ok - skip))
    passed=$((passed + ok))
    failed=$((failed + bad))
    skipped=$((skipped + skip))
    local note=""
    [ "$skip" -eq 0 ] || note=", $skip skipped"
    echo "  $label $name: $ok passed, $bad failed$note  ($took s)"
    if [ "$bad" -gt 0 ]; then
        failures+=("$label $name: $(grep '^not ok ' "$tap" | head -5 | tr '\n' ';')")
    fi
    if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then fail "$label $name exited with $rc" "$log"; fi
    if [ "$ok" -eq 0 ] && [ "$bad" -eq 0 ]; then fail "$label $name ran no test" "$log"; fi
}
criterion() {
    criterion_run "$@"
    criterion_tally "$1" "$2"
}

# criteria LABEL BINARY...: every Criterion binary given, two at a time (the machine this
# command is sized for has two cores, and each binary runs its tests one by one), the
# longest first as listed; tallied in the order given once all have run. The tests are
# written to pass on a loaded machine, so running beside each other is no licence for
# a flaky one.
criteria() {
    local label=$1; shift
    local bin running=0
    for bin in "$@"; do
        if [ "$running" -ge 2 ]; then wait -n; running=$((running - 1)); fi
        criterion_run "$label" "$bin" &
        running=$((running + 1))
    done
    wait
    for bin in "$@"; do criterion_tally "$label" "$bin"; done
}

# test_binaries DIR: the Criterion binaries of a build, test-misuse (the longest) first.
test_binaries() {
    local t
    for t in "$1"/tests/test-misuse "$1"/tests/test-*; do
        [ -f "$t" ] && [ -x "$t" ] && echo "$t"
    done | awk '!seen[$0]++'
}

# expect_report NAME STATUS PATTERN... -- CMD...: one test for a program that misuses
# kiln on purpose: it passes when CMD exits with STATUS ("fail": any non-zero status)
# and its output has a line matching each PATTERN (grep -E).
expect_report() {
    local name=$1 want=$2; shift 2
    local patterns=()
    while [ "$1" != "--" ]; do patterns+=("$1"); shift; done
    shift
    local log; log=$(log_for "$name")
    "$@" >"$log" 2>&1
    local rc=$? why=""
    if [ "$want" = fail ]; then
        [ "$rc" -ne 0 ] || why="exited 0"
    elif [ "$rc" -ne "$want" ]; then
        why="exited $rc, not $want"
    fi
    for pattern in "${patterns[@]}"; do
        grep -qE -- "$pattern" "$log" || why="${why:+$why; }no line matches '$pattern'"
    done
    if [ -z "$why" ]; then pass "$name"; else fail "$name: $why" "$log"; fi
}

# build DIR OPTIONS...: configure (or reconfigure) and compile; counts as one test.
build() {
    local dir=$1; shift
    local log="$logs/build-$dir.log"
    if { [ -f "$dir/build.ninja" ] && meson setup --reconfigure "$dir" "$@" || meson setup "$dir" "$@"; } >"$log" 2>&1 \
        && ninja -C "$dir" >>"$log" 2>&1; then
        pass "build $dir"
        return 0
    fi
    fail "build $dir" "$log"
    return 1
}

# expect_guards LABEL DIR: a byte written past a pool object and past an arena
# allocation, with KILN_DEBUG_GUARDS: kiln's own log must name each, as an error, on
# free and on reset.
expect_guards() {
    expect_report "$1 expect-guards: POOL_GUARD_DAMAGED and ARENA_GUARD_DAMAGED logged" 0 \
        "^error POOL_GUARD_DAMAGED: pool 'bullets': .*offset 24" \
        "^error ARENA_GUARD_DAMAGED: arena 'level': .*offset 40" -- "$2/tests/expect-guards"
}

stage "default build (unit tests, example, benchmarks --quick, consumers, expected reports)"
# The layering check (scripts/check-layers.py): its self-test on the fixture trees of
# tests/layers/ (each bad one must fail, naming what is wrong; the clean one must pass),
# then kiln's own includes here and, once built, its library's calls.
expect_report "layers self-test: lower layers including higher ones fail" 1 \
    'LAYER alloc/x\.h:3: includes "\.\./runtime/y\.h" .*alloc is below runtime' \
    'LAYER jobs/q\.h:2: .*alloc and jobs never include each other' \
    'LAYER include/kiln/api\.h:2: .*a public header includes only public headers' \
    'LAYER base/common\.h:2: includes "missing\.h", which is no file of the tree' \
    -- python3 scripts/check-layers.py --root tests/layers/bad-include
expect_report "layers self-test: an undocumented include circle fails" 1 \
    'CIRCLE \(include\) of 2 files: runtime/a, runtime/b' \
    'CIRCLE \(include\) of 2 files: runtime/c, runtime/d' \
    'MARKER runtime/c\.c:2: .*no file of runtime/d declares it back' \
    -- python3 scripts/check-layers.py --root tests/layers/circle
expect_report "layers self-test: a call circle behind one shared header fails (--objects)" 1 \
    'include circles: 0' 'CIRCLE \(call\) of 2 files: runtime/a, runtime/b' \
    -- tests/layers/objects.sh tests/layers/call-circle
check "layers self-test: a clean tree with a documented pair passes" \
    python3 scripts/check-layers.py --root tests/layers/clean
check "layers self-test: the clean tree's calls pass (--objects)" tests/layers/objects.sh tests/layers/clean
check "layers: kiln's includes" python3 scripts/check-layers.py
if build build-test; then
    check "layers: kiln's includes and its library's calls (--objects build-test/libkiln.a)" \
        python3 scripts/check-layers.py --objects build-test/libkiln.a
    mapfile -t binaries < <(test_binaries build-test)
    criteria default "${binaries[@]}"
    for t in build-test/tests/check-*; do [ -f "$t" ] && [ -x "$t" ] && check "default $(basename "$t")" "$t"; done
    check "example frame-loop" build-test/examples/frame-loop 120 20000
    check "example frame-loop-cpp" build-test/examples/frame-loop-cpp 120 2000
    check "demo check-demo" tests/demo/check-demo.sh build-test
    check "bench --quick" bench/run-all.sh build-test --quick
    check "install + pkg-config consumer" tests/consumer/check-install.sh build-test
    # libkiln-malloc.so preloaded: a test per line of what it must survive, C++'s new
    # and delete, and the examples that put Lua and Dear ImGui on kiln's heap, tagged.
    preload=(env LD_PRELOAD="$root/build-test/malloc/libkiln-malloc.so" KILN_OPTIONS=debug=checks)
    for scenario in early tls fork threads glibc dlclose signal; do
        check "preload survive $scenario" "${preload[@]}" build-test/tests/survive "$scenario" build-test/tests
    done
    expect_report "preload survive foreign: free of glibc's pointer ignored, counted, logged" 0 \
        'HEAP_FOREIGN_POINTER: free: 0x' 'HEAP_FOREIGN_POINTER: realloc: 0x' 'survive foreign: ok' \
        -- "${preload[@]}" build-test/tests/survive foreign
    check "preload survive-new (operator new and delete)" "${preload[@]}" build-test/tests/survive-new
    expect_report "preload survive crash: KILN_OPTIONS=crash_file= gets the process runtime's report" 0 \
        '^==== kiln crash report' '^signal: SIGSEGV' '^  debug = checks \(env\)' \
        -- sh -c 'f=$(mktemp) && env LD_PRELOAD="$1" KILN_OPTIONS="debug=checks,crash_file=$f" \
                  build-test/tests/survive crash; cat "$f"; rm -f "$f"' sh "$root/build-test/malloc/libkiln-malloc.so"
    expect_report "preload survive destroy: the program's runtime kept while libc holds its memory" 0 \
        '^kiln warn: PROCESS_RUNTIME_IN_USE: ' 'printed after the destroy' 'survive destroy: ok' \
        -- "${preload[@]}" build-test/tests/survive destroy
    # The first malloc inside setlocale, whose lock the C library holds meanwhile, and
    # the process runtime's making logs there (a log_file that cannot be opened).
    expect_report "preload survive-locale: the runtime made inside setlocale logs and goes on" 0 \
        '^kiln error: LOG_FILE_FAILED: .*No such file or directory' 'survive-locale: ok' \
        -- env LANG=C.UTF-8 LD_PRELOAD="$root/build-test/malloc/libkiln-malloc.so" \
        KILN_OPTIONS=debug=checks,log_file=/nonexistent/kiln.log timeout 60 build-test/tests/survive-locale
    check "example malloc-lua (lua_Alloc on a tag)" build-test/examples/malloc-lua
    check "example malloc-imgui (ImGui's allocator on a tag)" build-test/examples/malloc-imgui
    check "meson subproject consumer" tests/consumer/check-subproject.sh
    expect_guards default build-test
fi

stage "ASan+UBSan build (unit tests, expected reports)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
if build build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbench=false -Dstress=false; then
    mapfile -t binaries < <(test_binaries build-asan)
    criteria asan "${binaries[@]}"
    # Frame memory read after its frame ended, with KILN_DEBUG_POISON: ASan must stop it.
    expect_report "asan expect-frame-poison: ASan reports use-after-poison" fail \
        'ERROR: AddressSanitizer: use-after-poison' 'in main .*frame_poison\.c' \
        -- build-asan/tests/expect-frame-poison
    expect_guards asan build-asan
    # kiln's process runtime lives until exit: LeakSanitizer must find what it holds.
    expect_report "asan sanitized-client: the malloc shape ends with no leak report" 0 \
        'sanitized-client: ok' -- build-asan/tests/sanitized-client
fi

stage "ThreadSanitizer build (stress programs; Criterion cannot run under TSan)"
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
if build build-tsan -Db_sanitize=thread -Db_lundef=false -Dtests=false -Dbench=false; then
    while read -r name args; do
        [ -z "$name" ] || [ "${name:0:1}" = "#" ] && continue
        # shellcheck disable=SC2086
        check "tsan $name $args" "build-tsan/stress/$name" $args
    done < stress/tsan-runs.txt
fi

stage "libFuzzer build and fuzz targets; the SPIN models (frame clock, sleeping wait, deferred frees); memcheck of alloc/'s unit tests beside them"
# Criterion runs each test in a child process: memcheck follows the children, and a
# child stops at its first error, so that test fails in the TAP. Errors memcheck finds
# only at a process's exit (leaks) come after its test reported success, so every
# process writes a log of its own and one more test per binary needs all of them clean.
vg=(valgrind --error-exitcode=99 --leak-check=full --suppressions=tests/criterion.supp)
# Tests memcheck cannot run, by name:
#   debug/guard_page_makes_*  expect the SIGSEGV of a PROT_NONE guard page; memcheck
#                             reports the access as an error first and ends the test.
memcheck_skip='debug/guard_page_makes_*'

# memcheck_clean NAME DIR: one test that passes when the memcheck logs in DIR (one per
# process, at least one) report no error; a failure names the tests whose stacks the
# bad logs show (Criterion's test functions end in _impl).
memcheck_clean() {
    local name=$1 dir=$2 bad tests
    bad=$(grep -lE 'ERROR SUMMARY: [1-9]|Exit program on first error' "$dir"/*.log 2>/dev/null)
    tests=$(cat $bad /dev/null | grep -oE '[A-Za-z0-9_]+_impl \(' | sort -u | sed 's/_impl (//' | tr '\n' ' ')
    if ! ls "$dir"/*.log >/dev/null 2>&1; then fail "$name: no process ran" "$dir"
    elif [ -n "$bad" ]; then fail "$name: errors in ${tests:-a process}" "$(echo "$bad" | head -1)"
    else pass "$name"; fi
}

# memcheck_module MODULE [FILTER]: one module's unit tests under memcheck (each test a
# process of its own: about a second of Valgrind's start each, so a module's count of
# tests is its time); FILTER (a Criterion pattern) picks some of them.
memcheck_module() {
    local module=$1 filter=${2:-"!($memcheck_skip)"}
    dir="$logs/memcheck-test-$module"
    mkdir -p "$dir"
    runner=("${vg[@]}" --exit-on-first-error=yes --trace-children=yes --log-file="$dir/%p.log")
    criterion memcheck "build-test/tests/test-$module" --filter "$filter"
    runner=()
    memcheck_clean "memcheck test-$module: every process clean" "$dir"
}

# The heap's tests under memcheck: those that reach its every path (classes, large
# mappings, realloc, foreign pointers, trims, the memory's sum on 3 threads, debug fill);
# the rest repeat those paths (ASan runs every one of them).
memcheck_heap='heap/@(every_size*|foreign_pointers*|interior_and_double*|realloc_keeps_contents*|trim_gives*|the_memory_adds_up*|every_usable_byte*|calloc_zeroes*)'

memcheck_stage() {
    for module in arena block-pool pool os; do memcheck_module "$module"; done
    memcheck_module heap "$memcheck_heap"
    check "memcheck stress-pools --threads 2 --iterations 20000" \
        "${vg[@]}" build-test/stress/stress-pools --threads 2 --iterations 20000 --seed 1
    # The same stale frame read as in the ASan build: memcheck knows frame memory as a
    # memory pool (KILN_DEBUG_POISON), so the read, and only it, is an error.
    expect_report "memcheck expect-frame-poison: exactly one invalid read" 99 \
        'Invalid read of size 1' 'main \(frame_poison\.c' 'ERROR SUMMARY: 1 errors from 1 contexts' \
        -- "${vg[@]}" build-test/tests/expect-frame-poison
}

# Each target runs KILN_FUZZ_SECONDS (default 25; 0: only its corpus) from a copy of its
# committed corpus, so the committed one never grows; every file in it, the regression
# inputs included, is run first. A fixed seed; crash inputs land in build-logs/. Long
# runs that keep what they find: scripts/fuzz-long.sh.
fuzz_seconds=${KILN_FUZZ_SECONDS:-25}

# fuzz TARGET: one test: the target finds nothing (and the corpus replays clean).
fuzz() {
    local target=$1 work
    local log; log=$(log_for "fuzz $target")
    work=$(mktemp -d)
    cp fuzz/corpus/"$target"/* "$work"/
    local budget=(-max_total_time="$fuzz_seconds")
    [ "$fuzz_seconds" -gt 0 ] || budget=(-runs=0)
    "build-fuzz/fuzz/$target" "$work" "${budget[@]}" -seed=1 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$logs/$target-" >"$log" 2>&1
    local rc=$?
    rm -rf "$work"
    local runs cov
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
    if [ "$rc" -eq 0 ]; then pass "fuzz $target ${fuzz_seconds}s: ${runs:-?} runs, ${cov:-no coverage line}"
    else fail "fuzz $target" "$log"; fi
}

# The fuzzers and the model each keep one core busy, and so does memcheck (Valgrind runs
# one thread at a time): they run beside each other, memcheck in the background. Its
# stage's output and tallies come back through files (a background shell cannot add to
# this one's counts) and are printed after the fuzzers and the model.
if CC=clang CXX=clang++ build build-fuzz -Dfuzz=true -Dtests=false -Dstress=false -Dbench=false -Db_lundef=false; then
    fuzz_built=1
else
    fuzz_built=0
fi
( passed=0 failed=0 skipped=0 failures=()
  memcheck_start=$SECONDS
  memcheck_stage
  echo "   (memcheck: $((SECONDS - memcheck_start)) s, beside the fuzzers and the model)"
  echo "$passed $failed $skipped" >"$logs/memcheck-stage.counts"
  printf '%s\n' "${failures[@]}" >"$logs/memcheck-stage.failures" ) >"$logs/memcheck-stage.out" 2>&1 &
memcheck_pid=$!
if [ "$fuzz_built" -eq 1 ]; then
    for target in fuzz-arena fuzz-pool fuzz-handles fuzz-heap; do fuzz "$target"; done
fi
# Programs nobody here wrote, on libkiln-malloc.so with debug=checks, against glibc (one
# core, like the fuzzers): python3, lua5.4, perl, gcc and git.
check "real programs on kiln's malloc: same output as on glibc, no kiln error" \
    tests/malloc/check-real-programs.sh build-test
cat "$(log_for "real programs on kiln's malloc: same output as on glibc, no kiln error")"
check "model: frame clock properties hold and every mutation is caught" scripts/check-frame-model.sh
check "model: a sleeping wait loses no wake-up and every mutation is caught" scripts/check-wait-model.sh
check "model: signal handlers' deferred frees are each done once and every mutation is caught" \
    scripts/check-deferred-model.sh
# The debug layer's tests under memcheck here, after the fuzzers and the models, so that
# this lane and memcheck's background one end at about the same time.
memcheck_module debug
wait "$memcheck_pid"
echo "  -- memcheck (default build: alloc/'s unit tests, a stress run, an expected report)"
cat "$logs/memcheck-stage.out"
if read -r mp mf ms <"$logs/memcheck-stage.counts" 2>/dev/null; then
    passed=$((passed + mp)); failed=$((failed + mf)); skipped=$((skipped + ms))
    while IFS= read -r line; do [ -z "$line" ] || failures+=("$line"); done <"$logs/memcheck-stage.failures"
else
    fail "memcheck stage ended without its tallies" "$logs/memcheck-stage.out"
fi

stage ""
echo
echo "where the time went:"
printf '%s\n' "${stage_times[@]}"
echo "total: $SECONDS s"
echo
if [ "$failed" -gt 0 ]; then
    echo "failures:"
    printf '  %s\n' "${failures[@]}"
fi
[ "$skipped" -eq 0 ] || echo "$skipped skipped (not counted as passed)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
