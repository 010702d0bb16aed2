/* base/sys_alloc.c — kiln's own system-heap allocations, with the fault injection of sys_alloc.h. */
#define _DEFAULT_SOURCE   /* MAP_ANONYMOUS */
#include "sys_alloc.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "atomics.h"
#include "fault.h"

/* kiln's own memory comes from glibc's heap by its internal names, not through the
 * malloc symbol: with libkiln-malloc.so (runtime/malloc.c) malloc is kiln's heap, which
 * must not be asked for memory while it is being made or holds a lock. Sanitizer builds
 * keep malloc (their interceptors check it); other C libraries too. */
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#  define KILN_SYS_LIBC 1
#  if defined(__has_feature)
#    if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
        __has_feature(memory_sanitizer)
#      undef KILN_SYS_LIBC
#    endif
#  endif
#endif
#ifdef KILN_SYS_LIBC
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *ptr, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void  __libc_free(void *ptr);
#  define sys_malloc(n)           __libc_malloc(n)
#  define sys_calloc(c, n)        __libc_calloc((c), (n))
#  define sys_realloc(p, n)       __libc_realloc((p), (n))
#  define sys_aligned_alloc(a, n) __libc_memalign((a), (n))
#  define sys_free(p)             __libc_free(p)
#else
#  define sys_malloc(n)           malloc(n)
#  define sys_calloc(c, n)        calloc((c), (n))
#  define sys_realloc(p, n)       realloc((p), (n))
#  define sys_aligned_alloc(a, n) aligned_alloc((a), (n))
#  define sys_free(p)             free(p)
#endif

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
    return sys_malloc(size ? size : 1);
}

void *kiln_sys_calloc(size_t count, size_t size) {
    if (injected_failure_fires()) return NULL;
    if (size != 0 && count > SIZE_MAX / size) return NULL;
    return sys_calloc(count ? count : 1, size ? size : 1);
}

void *kiln_sys_realloc(void *ptr, size_t size) {
    if (injected_failure_fires()) return NULL;
    return sys_realloc(ptr, size ? size : 1);
}

void *kiln_sys_aligned(size_t align, size_t size) {
    if (injected_failure_fires()) return NULL;
    if (size > SIZE_MAX - align) return NULL;
    return sys_aligned_alloc(align, kiln_align_up(size ? size : 1, align));
}

void kiln_sys_free(void *ptr) { sys_free(ptr); }

/* From here on a zeroed record is a mapping: untouched pages cost no memory. Not in
 * sanitizer builds: LeakSanitizer scans the heap for pointers, not mappings, and would
 * call what a never-destroyed record (the process runtime's) points to leaked. */
#ifdef KILN_SYS_LIBC
#  define ZEROED_MAPPED (64u * 1024u)
#else
#  define ZEROED_MAPPED SIZE_MAX
#endif

void *kiln_sys_zeroed(size_t align, size_t size) {
    if (size < ZEROED_MAPPED) {
        void *p = kiln_sys_aligned(align, size);
        if (p) memset(p, 0, size);
        return p;
    }
    if (injected_failure_fires()) return NULL;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;   /* page-aligned, zero */
}

void kiln_sys_zeroed_free(void *ptr, size_t size) {
    if (!ptr) return;
    if (size < ZEROED_MAPPED) kiln_sys_free(ptr);
    else munmap(ptr, size);
}
