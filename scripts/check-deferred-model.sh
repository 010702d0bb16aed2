#!/usr/bin/env bash
# Model-checks the frees signal handlers defer while their thread is inside a malloc
# call (runtime/deferred_free.pml: a thread's calls, three handlers nested at any step)
# with SPIN, exhaustively, and proves the check can fail: each mutation of the protocol
# (MUTATION_Fx in the model) must break one of its assertions (a pointer freed twice or
# never, a free done inside another heap operation, a free left deferred).
#
#   scripts/check-deferred-model.sh     needs spin and a C compiler (cc, or $CC)
#
# Prints one line per check; exits non-zero if the correct model fails or a mutation
# is not caught. KILN_MODEL_KEEP=1 keeps the work directory (pan's output and trails).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 2
model=runtime/deferred_free.pml
# shellcheck source=scripts/model-tools.sh
source "$root/scripts/model-tools.sh"
require_model_tools check-deferred-model
model_work_dir deferred-model

check() { model_check "$work" "$model" "each free done once, none inside another, none left" "$@"; }

check "deferred frees model" pass
check "F1M (the drain sets no draining)" "assertion violated" -DMUTATION_F1
check "F2M (the look before depth is 0)" "assertion violated" -DMUTATION_F2
check "F3M (a slot taken without compare-and-swap)" "assertion violated" -DMUTATION_F3
check "F4M (the drain at depth 0)" "assertion violated" -DMUTATION_F4
exit "$model_failed"
