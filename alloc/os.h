/* alloc/os.h — every call kiln makes to the operating system for memory. One file,
 * so a test can make any of them fail (fault injection) and a port touches one place. */
#ifndef KILN_ALLOC_OS_H
#define KILN_ALLOC_OS_H

#include <stdbool.h>
#include <stddef.h>

#include "../base/common.h"

/* The page size, read once. Concurrency: any thread. */
KILN_INTERNAL size_t kiln_os_page_size(void);

/* Maps size bytes of zeroed read-write memory aligned to align (a power of two; at
 * least the page size). NULL when the OS refuses or an injected failure fires. reserve:
 * address space the caller fills over time (the block pool's reservations), mapped
 * without the kernel's commit accounting; else memory wanted now, which the kernel's
 * overcommit heuristic refuses as it refuses glibc's malloc (more than memory and swap).
 * Concurrency: any thread. */
KILN_INTERNAL void *kiln_os_map_aligned(size_t size, size_t align, bool reserve);

/* Unmaps what kiln_os_map_aligned returned (same size). Concurrency: any thread. */
KILN_INTERNAL void kiln_os_unmap(void *ptr, size_t size);

/* A mapping of old_size bytes at ptr (whole pages) resized to new_size (whole pages), in
 * place or moved to a page-aligned address with its pages (mremap); NULL when the OS
 * refuses or the nth-map fault fires (ptr untouched). */
KILN_INTERNAL void *kiln_os_remap(void *ptr, size_t old_size, size_t new_size);

/* Gives the pages back to the OS; the range stays mapped and reads as zero when next
 * touched. Page-aligned range. Concurrency: any thread. */
KILN_INTERNAL bool kiln_os_decommit(void *ptr, size_t size);

/* Page-faults [from, from + bytes) now (reserved memory must not fault in the frame that
 * first uses it): one write in every page the range overlaps, at from and then at each
 * page start. keep: each write puts back the byte it finds (the range may hold guard or
 * fill bytes); else it writes 0 (memory just mapped or just taken, whose bytes mean
 * nothing yet: no read fault first). Volatile, so the writes are made. Concurrency: the
 * range's owner. */
KILN_INTERNAL void kiln_os_touch_pages(void *from, size_t bytes, bool keep);

/* Makes a page-aligned range inaccessible (PROT_NONE: any access faults) or
 * read-write again. false when the OS refuses (for instance at its limit of mapping
 * entries). Concurrency: any thread. */
KILN_INTERNAL bool kiln_os_protect(void *ptr, size_t size, bool accessible);

/* Fault injection for tests: the nth map call from now (1 = the next one) fails,
 * and only that one. 0 switches injection off. Concurrency: any thread. */
KILN_INTERNAL void kiln_os_fail_nth_map(unsigned nth);

/* How many map calls failed by injection since start (tests check it fired). */
KILN_INTERNAL unsigned long kiln_os_injected_failures(void);

#endif /* KILN_ALLOC_OS_H */
