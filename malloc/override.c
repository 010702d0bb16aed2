/* malloc/override.c — libkiln-malloc.so: the C library's allocation calls, each served
 * by kiln's malloc shape (kiln/heap.h: kiln_malloc and the rest, on the process
 * runtime). Preload it (LD_PRELOAD) or link it (pkg-config kiln-malloc). */
#include <kiln/heap.h>

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#define KILN_OVERRIDE __attribute__((visibility("default")))

/* The page size, for valloc and pvalloc; sysconf makes no allocation. */
static size_t page_size(void) {
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? (size_t)page : 4096;
}

KILN_OVERRIDE void *malloc(size_t size) { return kiln_malloc(size); }

KILN_OVERRIDE void free(void *ptr) { kiln_free(ptr); }

KILN_OVERRIDE void *calloc(size_t count, size_t size) { return kiln_calloc(count, size); }

KILN_OVERRIDE void *realloc(void *ptr, size_t size) { return kiln_realloc(ptr, size); }

KILN_OVERRIDE void *reallocarray(void *ptr, size_t count, size_t size) {
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return kiln_realloc(ptr, bytes);
}

KILN_OVERRIDE int posix_memalign(void **out, size_t align, size_t size) {
    return kiln_posix_memalign(out, align, size);
}

KILN_OVERRIDE void *aligned_alloc(size_t align, size_t size) { return kiln_aligned_alloc(align, size); }

/* glibc's memalign takes any alignment, rounded up to a power of two (16 at least). */
KILN_OVERRIDE void *memalign(size_t align, size_t size) {
    size_t a = 16;
    while (a < align && a < ((size_t)1 << 63)) a <<= 1;
    if (a < align) {
        errno = EINVAL;
        return NULL;
    }
    return kiln_aligned_alloc(a, size);
}

KILN_OVERRIDE void *valloc(size_t size) { return kiln_aligned_alloc(page_size(), size); }

KILN_OVERRIDE void *pvalloc(size_t size) {
    size_t page = page_size();
    if (size > SIZE_MAX - page) {
        errno = ENOMEM;
        return NULL;
    }
    return kiln_aligned_alloc(page, size ? (size + page - 1) & ~(page - 1) : page);
}

KILN_OVERRIDE size_t malloc_usable_size(void *ptr) { return kiln_malloc_usable_size(ptr); }
