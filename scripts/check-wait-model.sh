#!/usr/bin/env bash
# Model-checks the waits that sleep (jobs/wait_sleep.pml: two waiters on one counter and
# frame end's drain) with SPIN, exhaustively, and proves the check can fail: each
# mutation of the protocol (MUTATION_xxx in the model) must end in an invalid end state
# (a waiter or the drain asleep for ever: a lost wake-up).
#
#   scripts/check-wait-model.sh        needs spin and a C compiler (cc, or $CC)
#
# Prints one line per check; exits non-zero if the correct model fails or a mutation
# is not caught. KILN_MODEL_KEEP=1 keeps the work directory (pan's output and trails).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 2
model=jobs/wait_sleep.pml
# shellcheck source=scripts/model-tools.sh
source "$root/scripts/model-tools.sh"
require_model_tools check-wait-model
model_work_dir wait-model

# check NAME EXPECT [SPINFLAGS...]: EXPECT is pass, or "invalid end state".
check() { model_check "$work" "$model" "no lost wake-up, its assertions hold" "$@"; }

check "wait model, two waiters" pass -DTWO_WAITERS
check "wait model, a waiter and the drain" pass -DWITH_DRAIN
check "W1M1 (the finisher ignores the flag)" "invalid end state" -DTWO_WAITERS -DMUTATION_W1M1
check "W1M2 (the word read after the check)" "invalid end state" -DTWO_WAITERS -DMUTATION_W1M2
check "W1M3 (the submitter wakes no waiter)" "invalid end state" -DTWO_WAITERS -DMUTATION_W1M3
check "W1M4 (announced after the look)" "invalid end state" -DTWO_WAITERS -DMUTATION_W1M4
check "W1M5 (the counter not flagged)" "invalid end state" -DTWO_WAITERS -DMUTATION_W1M5
check "W2M1 (a wake-up wakes one sleeper)" "invalid end state" -DTWO_WAITERS -DMUTATION_W2M1
check "W2M2 (a leaving waiter clears the flag)" "invalid end state" -DTWO_WAITERS -DMUTATION_W2M2
check "W2M1 with the drain (its wake-up wakes the waiter)" "invalid end state" -DWITH_DRAIN -DMUTATION_W2M1
check "D1M1 (the drain skips the membarrier)" "invalid end state" -DWITH_DRAIN -DMUTATION_D1M1
check "D1M2 (drain_asleep set after the check)" "invalid end state" -DWITH_DRAIN -DMUTATION_D1M2
check "D1M3 (the completer ignores drain_asleep)" "invalid end state" -DWITH_DRAIN -DMUTATION_D1M3
exit "$model_failed"
