/* alloc/os.c — mmap, munmap, madvise and mprotect, the only OS memory calls in kiln,
 * and the switch that makes the nth map fail for tests. */
#define _GNU_SOURCE   /* mremap */
#include "os.h"

#include <sys/mman.h>
#include <unistd.h>

#include "../base/atomics.h"
#include "../base/fault.h"

static kiln_fault map_fault;   /* the nth map call fails */

size_t kiln_os_page_size(void) {
    static _Atomic size_t cached;   /* racing first readers compute the same value */
    size_t page = kiln_load_relaxed(&cached);
    if (page == 0) {
        long value = sysconf(_SC_PAGESIZE);
        page = value > 0 ? (size_t)value : 4096;
        kiln_store_relaxed(&cached, page);
    }
    return page;
}

void kiln_os_fail_nth_map(unsigned nth) { kiln_store_relaxed(&map_fault.countdown, nth); }

unsigned long kiln_os_injected_failures(void) { return kiln_load_relaxed(&map_fault.fired); }

void *kiln_os_map_aligned(size_t size, size_t align, bool reserve) {
    if (kiln_fault_fires(&map_fault)) return NULL;
    size_t page = kiln_os_page_size();
    if (align < page) align = page;
    size_t slack = align - page;            /* mmap is page-aligned already */
    if (size > SIZE_MAX - slack) return NULL;
    char *raw = mmap(NULL, size + slack, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | (reserve ? MAP_NORESERVE : 0), -1, 0);
    if (raw == MAP_FAILED) return NULL;
    char *aligned = (char *)kiln_align_up((uintptr_t)raw, align);
    size_t head = (size_t)(aligned - raw);
    size_t tail = slack - head;
    if (head) munmap(raw, head);
    if (tail) munmap(aligned + size, tail);
    return aligned;
}

void *kiln_os_remap(void *ptr, size_t old_size, size_t new_size) {
    if (kiln_fault_fires(&map_fault)) return NULL;
    void *p = mremap(ptr, old_size, new_size, MREMAP_MAYMOVE);
    return p == MAP_FAILED ? NULL : p;
}

void kiln_os_unmap(void *ptr, size_t size) {
    if (ptr) munmap(ptr, size);
}

void kiln_os_touch_pages(void *from, size_t bytes, bool keep) {
    if (bytes == 0) return;
    size_t page = kiln_os_page_size();
    volatile char *p = from;
    uintptr_t start = (uintptr_t)from, end = start + bytes;
    for (uintptr_t at = start; at < end; at = (at & ~(uintptr_t)(page - 1)) + page) {
        volatile char *byte = p + (at - start);
        *byte = keep ? *byte : 0;
    }
}

bool kiln_os_decommit(void *ptr, size_t size) {
    return madvise(ptr, size, MADV_DONTNEED) == 0;
}

bool kiln_os_protect(void *ptr, size_t size, bool accessible) {
    return mprotect(ptr, size, accessible ? PROT_READ | PROT_WRITE : PROT_NONE) == 0;
}
