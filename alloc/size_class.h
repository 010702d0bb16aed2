/* alloc/size_class.h — the general heap's size classes (kiln/heap.h): 64 classes from
 * 16 bytes to 16 KiB, each a multiple of 16 (the natural alignment), 16 bytes apart up to
 * 128 and 8 to each doubling above (144, 160, ... 256, 288, 320, ...). A request's waste, beyond its rounding up to 16, is under 12.5 % of
 * its class above 64 bytes (10.9 % at worst), and each class is the smallest that holds
 * the request. The functions are kiln/heap.h's (the inline fast path maps a size with
 * them); this header names the constants for alloc/. Never installed. */
#ifndef KILN_ALLOC_SIZE_CLASS_H
#define KILN_ALLOC_SIZE_CLASS_H

#include <kiln/heap.h>

#define KILN_SIZE_CLASSES   64
#define KILN_SIZE_CLASS_MAX 16384u   /* the largest class; larger requests are mapped */

/* The public names (kiln/heap.h), which the heap's inline fast path uses too. */
#define kiln_size_class       kiln_heap_size_class
#define kiln_size_class_bytes kiln_heap_class_bytes

#endif /* KILN_ALLOC_SIZE_CLASS_H */
