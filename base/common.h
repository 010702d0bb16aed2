/* base/common.h — the few macros every internal file uses: symbol visibility,
 * branch hints, cold paths, rounding. Never installed. */
#ifndef KILN_BASE_COMMON_H
#define KILN_BASE_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Internal functions shared between files: hidden from the shared library. */
#define KILN_INTERNAL __attribute__((visibility("hidden")))
#define KILN_COLD     __attribute__((cold, noinline))
#define KILN_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))

#define kiln_likely(x)   __builtin_expect(!!(x), 1)
#define kiln_unlikely(x) __builtin_expect(!!(x), 0)

#define KILN_CACHE_LINE 64

static inline int kiln_is_pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

/* x rounded up to a multiple of align (a power of two); the caller rules out overflow. */
static inline uintptr_t kiln_align_up(uintptr_t x, size_t align) {
    return (x + (align - 1)) & ~(uintptr_t)(align - 1);
}

#endif /* KILN_BASE_COMMON_H */
