# scripts/model-tools.sh — sourced by the model checks (check-*-model.sh): what they
# all need before they start. Defines cc (the C compiler: $CC, or cc) and exits 2 when
# spin or the compiler is missing.
#   require_model_tools NAME   NAME: the calling script, for the message
require_model_tools() {
    cc=${CC:-cc}
    local tool
    for tool in spin "$cc"; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "$1: '$tool' not found (SPIN: apt-get install spin)" >&2
            exit 2
        fi
    done
}

# model_work_dir NAME: sets work to a new directory for the checks' builds, removed at
# exit (KILN_MODEL_KEEP=1 keeps it and says where); exits 2 when none can be made.
model_work_dir() {
    work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-$1.XXXXXX") || exit 2
    if [ "${KILN_MODEL_KEEP:-0}" = 1 ]; then
        trap 'echo "work directory kept: $work"' EXIT
    else
        trap 'rm -rf "$work"' EXIT
    fi
}

# model_check WORK MODEL PASS_TEXT NAME EXPECT [SPINFLAGS...]: builds MODEL's verifier
# with the flags in WORK/NAME and runs it exhaustively (safety). EXPECT is pass (no
# violation: prints PASS_TEXT) or the text of the violation that must be found (a
# mutation caught). Prints one line; sets model_failed=1 on a failure.
model_failed=0
model_check() {
    local work=$1 model=$2 pass_text=$3 name=$4 expect=$5
    shift 5
    local dir="$work/$name"
    mkdir -p "$dir"
    cp "$model" "$dir/m.pml"
    if ! (cd "$dir" && spin "$@" -a m.pml >spin.out 2>&1 && "$cc" -O0 -w -DSAFETY -o pan pan.c >cc.out 2>&1 \
          && ./pan -m100000 >pan.out 2>&1); then
        echo "FAIL $name: could not build or run the verifier ($dir)"
        model_failed=1
        return
    fi
    local out="$dir/pan.out" err states
    err=$(grep -m1 -E '^pan:[0-9]+: ' "$out")
    states=$(awk '/states, stored/ { print $1; exit }' "$out")
    if [ "$expect" = pass ]; then
        if [ -z "$err" ] && grep -q "errors: 0" "$out" && ! grep -q "max search depth too small" "$out"; then
            echo "ok   $name: $pass_text ($states states)"
        else
            echo "FAIL $name: ${err:-no verdict}"
            model_failed=1
        fi
    elif [[ "$err" == *"$expect"* ]]; then
        echo "ok   $name caught: $expect"
    else
        echo "FAIL $name NOT caught: ${err:-no violation}"
        model_failed=1
    fi
}
