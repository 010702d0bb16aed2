#!/usr/bin/env bash
# Model-checks the frame clock protocol (runtime/frame_clock.pml) with SPIN, exhaustively,
# and proves the checks can fail: every mutation of the protocol (MUTATION_Mx in the
# model) must be caught by the property it breaks.
#
#   scripts/check-frame-model.sh        needs spin and a C compiler (cc, or $CC)
#
# Prints one line per check and the total wall time; exits non-zero if a check of the
# correct model fails or a mutation is not caught. A failed check of the correct model
# also prints the end of its counterexample. Checks run two at a time (KILN_MODEL_JOBS
# to change it). KILN_MODEL_KEEP=1 keeps the work directory: each check's pan output
# and trail (replay one there with the -D flags in its "cmd": spin <flags> -t -p m.pml).
#
# Configurations (the model's knobs; see "Bounds" in the model). The model with every
# actor at once is too large to search in seconds, so each property is checked where
# its races live; S1 and deadlock freedom are checked in every safety run.
#   s1     frame memory: 3 frame ends (parity 1 serves epochs 1 and 3), the driver's job
#          and its child, 2 top-level submissions by the outside thread, every thread
#          running and nesting frame jobs
#   s2out  the outside thread's pointers: its gets, quiescent points and frees, the
#          background job it runs; frame jobs' gets and the enter_job_frame fence
#   s2bg   a worker's background nesting: B1 -> frame job -> B2, gets in all three
#   l1     liveness: the outside thread submits frame jobs for ever (weak fairness);
#          also with the driver's job pinned to the worker (PINNED), which then must
#          take the oldest epoch first (OLDEST_FIRST): M10 shows that it must
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 2
model=runtime/frame_clock.pml
# shellcheck source=scripts/model-tools.sh
source "$root/scripts/model-tools.sh"
require_model_tools check-frame-model

work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-frame-model.XXXXXX") || exit 2
cleanup() {
    local pids
    mapfile -t pids < <(jobs -p)
    [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
    if [ "${KILN_MODEL_KEEP:-0}" = 1 ]; then
        echo "work directory kept: $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
jobs=${KILN_MODEL_JOBS:-2}

# The configurations, every knob spelled out (the model's defaults are not relied on);
# run_check reaches them by name.
# shellcheck disable=SC2034
cfg_s1=(-DNFRAMES=3 -DOJ_MAX=2 -DBG=0 -DHANDLES=0 -DDRVJOB=1 -DCHILD=1 -DOUTRUN=3)
# shellcheck disable=SC2034
cfg_s2out=(-DNFRAMES=2 -DOJ_MAX=1 -DBG=1 -DHANDLES=1 -DDRVJOB=1 -DCHILD=0 -DOUTRUN=1)
# shellcheck disable=SC2034
cfg_s2bg=(-DNFRAMES=2 -DOJ_MAX=1 -DBG=2 -DHANDLES=1 -DDRVJOB=0 -DCHILD=0 -DOUTRUN=0)
# shellcheck disable=SC2034
cfg_l1=(-DNFRAMES=2 -DOJ_MAX=255 -DBG=0 -DHANDLES=0 -DDRVJOB=1 -DCHILD=1 -DOUTRUN=3)

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# run_check ID KIND EXPECT CFG LABEL [SPINFLAGS...]
#   KIND    safety (assertions, invalid end states) or liveness (ltl L1, weak fairness)
#   EXPECT  pass, or the property that must be violated (S1, S2, L1)
#   CFG     s1, s2out, s2bg or l1
#   LABEL   what is checked; for a mutation "Mx: what it changes"
# Writes ID.result: "ok|FAIL<TAB>line".
run_check() {
    local id=$1 kind=$2 expect=$3 cfg=$4 label=$5
    shift 5
    local -n knobs="cfg_$cfg"
    set -- "${knobs[@]}" "$@"
    # Counters (see "Counters" in the model): wrapping is ruled out (CHECK_SMALL), except
    # in the liveness mutations, where it cannot make a false cycle.
    if [ "$kind" = liveness ] && [ "$expect" != pass ]; then
        set -- "$@" -DCMOD=8
    else
        set -- "$@" -DCHECK_SMALL
    fi
    local dir="$work/$id" t0 rc
    mkdir -p "$dir"
    cp "$model" "$dir/m.pml"
    echo "$*" > "$dir/cmd"
    t0=$(now)
    (
        cd "$dir" || exit 3
        spin "$@" -a m.pml > spin.out 2>&1 || exit 3
        local cflags panflags
        if [ "$kind" = safety ]; then
            cflags=(-DSAFETY -DNOCLAIM); panflags=(-m200000)
        else
            cflags=(-DNFAIR=3); panflags=(-m200000 -a -f)
        fi
        # The hash table: sized for the searches of the correct model (pan grows it if
        # need be); a mutation's search is short.
        if [ "$expect" = pass ]; then panflags+=(-w22); else panflags+=(-w18); fi
        # -O0: every check compiles its own verifier, and at these sizes an optimised
        # build costs more time than it saves.
        "$cc" -O0 -w "${cflags[@]}" -DMEMLIM=4096 -o pan pan.c > cc.out 2>&1 || exit 4
        ./pan "${panflags[@]}" > pan.out 2>&1
        exit 0
    )
    rc=$?
    local took out="$dir/pan.out" status line states violation="" incomplete=""
    took=$(secs "$t0" "$(now)")
    if [ $rc -ne 0 ]; then
        status=FAIL
        line="$label: could not build the verifier ($cfg; KILN_MODEL_KEEP=1 keeps its output)"
    else
        states=$(awk '/states, stored/ { print $1; exit }' "$out")
        # pan's first error line: "pan:1: <what> (at depth N)"
        local err
        err=$(grep -m1 -E '^pan:[0-9]+: ' "$out")
        case $err in
            "") ;;
            *"acceptance cycle"*) violation=L1 ;;
            *"assertion violated"*"S1&&"*) violation=S1 ;;
            *"assertion violated"*"S2&&"*) violation=S2 ;;
            *"invalid end state"*) violation="deadlock (invalid end state)" ;;
            *) violation=$(echo "$err" | cut -c1-100) ;;
        esac
        [ -z "$violation" ] && grep -qE "errors: [1-9]" "$out" && violation="error"
        grep -q "max search depth too small" "$out" && incomplete=" (search depth too small)"
        grep -q "out of memory" "$out" && incomplete=" (out of memory)"
        if [ "$expect" = pass ]; then
            if [ -z "$violation" ] && [ -z "$incomplete" ] && grep -q "errors: 0" "$out"; then
                local search
                search=$(awk '/elapsed time/ { print $4; exit }' "$out")
                status=ok
                line="$label ($cfg: $states states, search $search s, $took s in all)"
            else
                status=FAIL
                line="$label: ${violation:-no verdict}$incomplete ($cfg, $took s)"
            fi
        else
            local name=${label%%:*} what=${label#*: }
            if [ "$violation" = "$expect" ] && [ -z "$incomplete" ]; then
                status=ok
                line="$name caught: $expect violated ($what; $cfg, $took s)"
            else
                status=FAIL
                line="$name NOT caught as $expect: ${violation:-no violation}$incomplete"
                line+=" ($what; $cfg, $took s)"
            fi
        fi
    fi
    printf '%s\t%s\n' "$status" "$line" > "$dir.result"
    # A failed check of the correct model: its counterexample, for the reader.
    if [ "$status" = FAIL ] && [ "$expect" = pass ] && [ -f "$dir/m.pml.trail" ]; then
        (cd "$dir" && spin "$@" -t -p m.pml 2>&1 | grep -E '^ *[0-9]+:|CYCLE|violated' \
            | sed -E 's/ *m\.pml:[0-9]+ \(state [0-9]+\)//' > trail.txt)
    fi
}

ids=()
launch() {
    ids+=("$1")
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    run_check "$@" &
}

start=$(now)
echo "== frame clock model ($model), SPIN: $(spin -V 2>&1 | head -1)"

# The correct model; the long searches first, so that two run side by side.
launch s2bg  safety   pass s2bg  "S2 safety, worker background nesting (also S1, no deadlock)"
launch s2out safety   pass s2out "S2 safety, outside thread and fences (also S1, no deadlock)"
launch s1    safety   pass s1    "S1 safety, frame memory (no deadlock)"
launch l1    liveness pass l1    "L1 liveness, frame end returns (weak fairness)"
launch l1pin liveness pass l1    "L1 liveness, DJ pinned to a worker that takes the oldest epoch" \
    -DPINNED=1 -DOLDEST_FIRST=1

# The mutations: each must be caught.
launch m1  safety   S1 s1    "M1: the outside submitter skips the re-check of J" -DMUTATION_M1
launch m2  safety   S1 s1    "M2: the drain reads submitted counts before completed" -DMUTATION_M2
launch m3l liveness L1 l1    "M3: the close comes after the drain" -DMUTATION_M3
launch m3s safety   S1 s1    "M3: the close comes after the drain" -DMUTATION_M3
launch m4  safety   S2 s2bg  "M4: background nesting not tracked" -DMUTATION_M4
launch m5  safety   S2 s2out "M5: an outside thread's background job stamps its epoch" -DMUTATION_M5
launch m6  liveness L1 l1    "M6: the drain waits for global quiet" -DMUTATION_M6
launch m7  safety   S2 s2out "M7: enter_job_frame never fences" -DMUTATION_M7
launch m8  liveness L1 l1    "M8: the drain runs any queued job before looking at quiet" \
    -DMUTATION_M8
launch m9  safety   S1 s1    "M9: a nested frame job's return keeps the inner arena" -DMUTATION_M9
launch m10 liveness L1 l1    "M10: DJ pinned to the worker, which takes jobs in any order" \
    -DPINNED=1
wait

failed=0
for id in "${ids[@]}"; do
    if [ ! -f "$work/$id.result" ]; then
        echo "FAIL  $id: no result"
        failed=$((failed + 1))
        continue
    fi
    IFS=$'\t' read -r status line < "$work/$id.result"
    if [ "$status" = ok ]; then
        echo "ok    $line"
    else
        echo "FAIL  $line"
        failed=$((failed + 1))
        if [ -f "$work/$id/trail.txt" ]; then
            echo "      counterexample, its last 40 steps (KILN_MODEL_KEEP=1 keeps all of it):"
            tail -40 "$work/$id/trail.txt" | sed 's/^/        /'
        fi
    fi
done
# CPU time of everything the checks ran: the second line of `times` (the children).
times > "$work/times"
cpu=$(awk 'NR == 2 { printf "%s user + %s sys", $1, $2 }' "$work/times")
echo "total wall time: $(secs "$start" "$(now)") s ($cpu CPU), ${#ids[@]} checks, $failed failed"
[ $failed -eq 0 ]
