/* base/fault.h — the countdown behind kiln's fault injection (alloc/os.c for mappings,
 * base/sys_alloc.c for heap allocations): a test arms it with "the nth call from now fails",
 * and exactly that call fails, whichever thread makes it. Never installed. */
#ifndef KILN_BASE_FAULT_H
#define KILN_BASE_FAULT_H

#include <stdbool.h>

#include "atomics.h"

/* All relaxed: it orders nothing; a test arms it before the work and reads the counts
 * after joining that work. */
typedef struct kiln_fault {
    _Atomic unsigned long countdown;   /* 0: off; n: the nth call from now fails */
    _Atomic unsigned long fired;       /* calls failed by injection so far */
} kiln_fault;

/* Whether this call is the one to fail (then counted in fired). Any thread. */
static inline bool kiln_fault_fires(kiln_fault *fault) {
    unsigned long left = kiln_load_relaxed(&fault->countdown);
    while (left != 0) {
        if (kiln_cas_weak_relaxed(&fault->countdown, &left, left - 1)) {
            if (left != 1) return false;
            kiln_add_relaxed(&fault->fired, 1);
            return true;
        }
    }
    return false;
}

#endif /* KILN_BASE_FAULT_H */
