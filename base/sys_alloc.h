/* base/sys_alloc.h — every system-heap allocation kiln makes for itself (worker tables,
 * job deques and inboxes, the address map, registries, trace buffers) goes through
 * here, as every OS mapping goes through alloc/os.h: one place where a test can make the
 * nth allocation fail and check that the failure is logged and survived. Never
 * installed. */
#ifndef KILN_BASE_SYS_ALLOC_H
#define KILN_BASE_SYS_ALLOC_H

#include <stddef.h>

#include "common.h"

/* malloc, calloc, realloc, aligned_alloc (size rounded up to a multiple of align) and
 * free, with injected failures (kiln_sys_*: the public heap, kiln/heap.h, owns the
 * kiln_heap_* names). NULL when the system heap refuses, an overflow (calloc's count *
 * size, aligned's rounding) or an injected failure. Concurrency: any thread. */
KILN_INTERNAL void *kiln_sys_alloc(size_t size);
KILN_INTERNAL void *kiln_sys_calloc(size_t count, size_t size);
KILN_INTERNAL void *kiln_sys_realloc(void *ptr, size_t size);
KILN_INTERNAL void *kiln_sys_aligned(size_t align, size_t size);
KILN_INTERNAL void  kiln_sys_free(void *ptr);

/* size zeroed bytes aligned to align (a power of two up to the page size), or NULL as
 * kiln_sys_aligned; kiln_sys_zeroed_free(ptr, size) gives them back (NULL: no-op). From
 * 64 KiB on they are a mapping of their own, whose pages are touched only as they are
 * used (a runtime's and a context's records are large and mostly idle); in sanitizer
 * builds they stay on the heap, where LeakSanitizer looks for pointers. Concurrency:
 * any thread. */
KILN_INTERNAL void *kiln_sys_zeroed(size_t align, size_t size);
KILN_INTERNAL void  kiln_sys_zeroed_free(void *ptr, size_t size);

/* Fault injection for tests: the nth heap allocation from now (1 = the next one)
 * fails, and only that one. 0 switches injection off. Concurrency: any thread. */
KILN_INTERNAL void kiln_sys_fail_nth(unsigned long nth);

/* Heap allocations made (attempted) since start, and how many failed by injection:
 * a test counts the sites of a piece of work, then fails each in turn. */
KILN_INTERNAL unsigned long kiln_sys_allocations(void);
KILN_INTERNAL unsigned long kiln_sys_injected_failures(void);

#endif /* KILN_BASE_SYS_ALLOC_H */
