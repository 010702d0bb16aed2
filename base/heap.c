/* base/heap.c — kiln's heap allocations, with the fault injection of heap.h. */
#include "heap.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "atomics.h"

/* Countdown to the injected failure: 0 means off. Any thread decrements it (relaxed:
 * it orders nothing, a test sets it before the work it fails and reads the counts
 * after joining that work). */
static _Atomic unsigned long fail_countdown;
static _Atomic unsigned long allocations;
static _Atomic unsigned long injected_failures;

void kiln_heap_fail_nth(unsigned long nth) { kiln_store_relaxed(&fail_countdown, nth); }

unsigned long kiln_heap_allocations(void) { return kiln_load_relaxed(&allocations); }

unsigned long kiln_heap_injected_failures(void) { return kiln_load_relaxed(&injected_failures); }

/* Counts the attempt; true when it is the one to fail. */
static bool injected_failure_fires(void) {
    kiln_add_relaxed(&allocations, 1);
    unsigned long left = kiln_load_relaxed(&fail_countdown);
    while (left != 0) {
        if (kiln_cas_weak_relaxed(&fail_countdown, &left, left - 1)) {
            if (left != 1) return false;
            kiln_add_relaxed(&injected_failures, 1);
            return true;
        }
    }
    return false;
}

void *kiln_heap_alloc(size_t size) {
    if (injected_failure_fires()) return NULL;
    return malloc(size ? size : 1);
}

void *kiln_heap_calloc(size_t count, size_t size) {
    if (injected_failure_fires()) return NULL;
    if (size != 0 && count > SIZE_MAX / size) return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *kiln_heap_realloc(void *ptr, size_t size) {
    if (injected_failure_fires()) return NULL;
    return realloc(ptr, size ? size : 1);
}

void *kiln_heap_aligned(size_t align, size_t size) {
    if (injected_failure_fires()) return NULL;
    if (size > SIZE_MAX - align) return NULL;
    return aligned_alloc(align, kiln_align_up(size ? size : 1, align));
}

void kiln_heap_free(void *ptr) { free(ptr); }
