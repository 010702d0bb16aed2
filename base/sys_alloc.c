/* base/sys_alloc.c — kiln's own system-heap allocations, with the fault injection of sys_alloc.h. */
#include "sys_alloc.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "atomics.h"
#include "fault.h"

static kiln_fault heap_fault;            /* the nth heap allocation fails */
static _Atomic unsigned long allocations;   /* attempted, failed ones included (relaxed) */

void kiln_sys_fail_nth(unsigned long nth) { kiln_store_relaxed(&heap_fault.countdown, nth); }

unsigned long kiln_sys_allocations(void) { return kiln_load_relaxed(&allocations); }

unsigned long kiln_sys_injected_failures(void) { return kiln_load_relaxed(&heap_fault.fired); }

/* Counts the attempt; true when it is the one to fail. */
static bool injected_failure_fires(void) {
    kiln_add_relaxed(&allocations, 1);
    return kiln_fault_fires(&heap_fault);
}

void *kiln_sys_alloc(size_t size) {
    if (injected_failure_fires()) return NULL;
    return malloc(size ? size : 1);
}

void *kiln_sys_calloc(size_t count, size_t size) {
    if (injected_failure_fires()) return NULL;
    if (size != 0 && count > SIZE_MAX / size) return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *kiln_sys_realloc(void *ptr, size_t size) {
    if (injected_failure_fires()) return NULL;
    return realloc(ptr, size ? size : 1);
}

void *kiln_sys_aligned(size_t align, size_t size) {
    if (injected_failure_fires()) return NULL;
    if (size > SIZE_MAX - align) return NULL;
    return aligned_alloc(align, kiln_align_up(size ? size : 1, align));
}

void kiln_sys_free(void *ptr) { free(ptr); }
