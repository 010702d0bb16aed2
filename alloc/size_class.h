/* alloc/size_class.h — the general heap's size classes (kiln/heap.h; the heap itself is
 * still to come): 64 classes from 16 bytes to 16 KiB, each a multiple of 16 (the natural
 * alignment), 16 bytes apart up to 256 and 8 to each doubling above (144, 160, ... 256,
 * 288, 320, ...). A request's waste, beyond its rounding up to 16, is under 12.5 % of
 * its class above 64 bytes (10.9 % at worst), and each class is the smallest that holds
 * the request. Header only: the heap's inline fast path maps a size with it. Never
 * installed. */
#ifndef KILN_ALLOC_SIZE_CLASS_H
#define KILN_ALLOC_SIZE_CLASS_H

#include <stddef.h>
#include <stdint.h>

#define KILN_SIZE_CLASSES   64
#define KILN_SIZE_CLASS_MAX 16384u   /* the largest class; larger requests are mapped */

/* The class of a request of size bytes, 1 to KILN_SIZE_CLASS_MAX (0 counts as 1). Up to
 * 128 bytes: one class per 16 bytes; above, with 2^k < size <= 2^(k+1), eight classes
 * 2^(k-3) apart. Any thread: a pure function. */
static inline uint32_t kiln_size_class(size_t size) {
    if (size <= 128) return size == 0 ? 0 : (uint32_t)((size + 15) / 16 - 1);
    unsigned k = 63u - (unsigned)__builtin_clzll((unsigned long long)(size - 1));   /* 7.. */
    size_t step = (size_t)1 << (k - 3);
    return 8u + (k - 7u) * 8u + (uint32_t)((size - ((size_t)1 << k) + step - 1) / step) - 1u;
}

/* The bytes of a class's objects. Any thread: a pure function. */
static inline size_t kiln_size_class_bytes(uint32_t size_class) {
    if (size_class < 8) return ((size_t)size_class + 1) * 16;
    uint32_t j = size_class - 8, k = 7 + j / 8;
    return ((size_t)1 << k) + (size_t)(j % 8 + 1) * ((size_t)1 << (k - 3));
}

#endif /* KILN_ALLOC_SIZE_CLASS_H */
