#!/usr/bin/env bash
# Runs kiln's whole test suite and sums it up honestly: every Criterion test (counted one
# by one from its TAP output) in the default and the ASan+UBSan builds, every stress
# program under ThreadSanitizer, the example, the benchmarks' quick pass and the
# install and subproject consumer checks. Called by `scripts/dev.sh test`, which first
# installs what is missing. The last line is "N passed, N failed".
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
logs="$root/build-logs"
rm -rf "$logs"
mkdir -p "$logs"
passed=0
failed=0
failures=()

pass() { passed=$((passed + 1)); echo "  ok      $1"; }
fail() { failed=$((failed + 1)); failures+=("$1"); echo "  FAILED  $1 (log: ${2:-none})"; }

# check NAME CMD...: one test that passes when CMD exits 0; output kept in a log.
check() {
    local name=$1; shift
    local log="$logs/$(echo "$name" | tr -c 'A-Za-z0-9_.-' '_').log"
    if "$@" >"$log" 2>&1; then pass "$name"; else fail "$name" "$log"; fi
}

# criterion LABEL BINARY: every test of a Criterion binary, counted from its TAP output.
criterion() {
    local label=$1 bin=$2
    local name; name=$(basename "$bin")
    local tap="$logs/$label-$name.tap" log="$logs/$label-$name.log"
    "$bin" -j1 --tap="$tap" >"$log" 2>&1
    local rc=$?
    local ok bad
    ok=$(grep -c '^ok ' "$tap" 2>/dev/null || true)
    bad=$(grep -c '^not ok ' "$tap" 2>/dev/null || true)
    passed=$((passed + ok))
    failed=$((failed + bad))
    echo "  $label $name: $ok passed, $bad failed"
    if [ "$bad" -gt 0 ]; then
        failures+=("$label $name: $(grep '^not ok ' "$tap" | head -5 | tr '\n' ';')")
    fi
    if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then fail "$label $name exited with $rc" "$log"; fi
    if [ "$ok" -eq 0 ] && [ "$bad" -eq 0 ]; then fail "$label $name ran no test" "$log"; fi
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

echo "== default build (unit tests, example, benchmarks --quick, consumers)"
if build build-test; then
    for t in build-test/tests/test-*; do [ -f "$t" ] && [ -x "$t" ] && criterion default "$t"; done
    for t in build-test/tests/check-*; do [ -f "$t" ] && [ -x "$t" ] && check "default $(basename "$t")" "$t"; done
    check "example frame-loop" build-test/examples/frame-loop 120 20000
    check "demo check-demo" tests/demo/check-demo.sh build-test
    check "bench --quick" bench/run-all.sh build-test --quick
    check "install + pkg-config consumer" tests/consumer/check-install.sh build-test
    check "meson subproject consumer" tests/consumer/check-subproject.sh
fi

echo "== ASan+UBSan build (unit tests)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
if build build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbench=false -Dstress=false; then
    for t in build-asan/tests/test-*; do [ -f "$t" ] && [ -x "$t" ] && criterion asan "$t"; done
fi

echo "== ThreadSanitizer build (stress programs; Criterion cannot run under TSan)"
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
if build build-tsan -Db_sanitize=thread -Db_lundef=false -Dtests=false -Dbench=false; then
    while read -r name args; do
        [ -z "$name" ] || [ "${name:0:1}" = "#" ] && continue
        # shellcheck disable=SC2086
        check "tsan $name $args" "build-tsan/stress/$name" $args
    done < stress/tsan-runs.txt
fi

echo
if [ "$failed" -gt 0 ]; then
    echo "failures:"
    printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
