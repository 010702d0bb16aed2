/* base/heap.h — every heap allocation kiln makes (worker tables, job deques and
 * inboxes, the address map, registries, trace buffers) goes through here, as every OS
 * mapping goes through alloc/os.h: one place where a test can make the nth allocation
 * fail and check that the failure is logged and survived. Never installed. */
#ifndef KILN_BASE_HEAP_H
#define KILN_BASE_HEAP_H

#include <stddef.h>

#include "common.h"

/* malloc, calloc, realloc, aligned_alloc (size rounded up to a multiple of align) and
 * free, with injected failures. NULL when the heap refuses, an overflow (calloc's
 * count * size, aligned's rounding) or an injected failure. Concurrency: any thread. */
KILN_INTERNAL void *kiln_heap_alloc(size_t size);
KILN_INTERNAL void *kiln_heap_calloc(size_t count, size_t size);
KILN_INTERNAL void *kiln_heap_realloc(void *ptr, size_t size);
KILN_INTERNAL void *kiln_heap_aligned(size_t align, size_t size);
KILN_INTERNAL void  kiln_heap_free(void *ptr);

/* Fault injection for tests: the nth heap allocation from now (1 = the next one)
 * fails, and only that one. 0 switches injection off. Concurrency: any thread. */
KILN_INTERNAL void kiln_heap_fail_nth(unsigned long nth);

/* Heap allocations made (attempted) since start, and how many failed by injection:
 * a test counts the sites of a piece of work, then fails each in turn. */
KILN_INTERNAL unsigned long kiln_heap_allocations(void);
KILN_INTERNAL unsigned long kiln_heap_injected_failures(void);

#endif /* KILN_BASE_HEAP_H */
