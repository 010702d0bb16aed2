#!/usr/bin/env bash
# kiln's developer entry point: the README's two commands.
#
#   scripts/dev.sh demo   install what is missing, build, run the main example
#   scripts/dev.sh test   install what is missing, build every configuration and run the
#                         whole suite: unit tests (default and ASan+UBSan builds), stress
#                         programs (ThreadSanitizer build), the benchmarks' quick pass,
#                         the install/pkg-config and subproject consumer checks, misuse
#                         that must be reported (tests/expect/), alloc/'s unit tests under
#                         Valgrind's memcheck, the fuzz targets (KILN_FUZZ_SECONDS each)
#                         and the frame clock's SPIN model.
#                         Ends with "N passed, N failed"; exits non-zero if anything failed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# Debian packages kiln needs to build and test; peers are for the benchmarks only.
# libclang-rt-14-dev holds clang's sanitizer runtimes and libFuzzer; valgrind brings
# memcheck and <valgrind/memcheck.h> (the debug layer's memory-pool annotations); spin
# checks the frame clock's model (runtime/frame_clock.pml). python3, lua5.4, perl and git
# are the programs run on libkiln-malloc.so (tests/malloc/); liblua5.4-dev and
# libimgui-dev the libraries of the examples that put Lua and Dear ImGui on kiln's heap.
build_packages=(gcc g++ pkg-config meson ninja-build libck-dev)
test_packages=(libcriterion-dev clang libclang-rt-14-dev valgrind spin
               libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev libtbb-dev
               python3 lua5.4 liblua5.4-dev libimgui-dev perl git)

install_missing() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "== installing: ${missing[*]}"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# setup DIR [meson options...]: configure once, reconfigure when options change.
setup() {
    local dir=$1; shift
    if [ -f "$dir/build.ninja" ]; then
        meson setup --reconfigure "$dir" "$@" >/dev/null
    else
        meson setup "$dir" "$@" >/dev/null
    fi
    ninja -C "$dir" >/dev/null
}

# kiln-demo (examples/demo/): plays a small game on kiln and on malloc, prints the report
# and writes kiln-demo.svg and kiln-demo-trace.json here; arguments go to it (--help).
demo() {
    install_missing "${build_packages[@]}"
    setup build -Dtests=false -Dstress=false -Dbench=false
    build/examples/kiln-demo "$@"
}

case "${1:-}" in
    demo) shift; demo "$@" ;;
    test) shift
          install_missing "${build_packages[@]}" "${test_packages[@]}"
          exec "$root/scripts/test-all.sh" "$@" ;;
    *) echo "usage: scripts/dev.sh demo [kiln-demo options, see --help] | scripts/dev.sh test" >&2; exit 2 ;;
esac
