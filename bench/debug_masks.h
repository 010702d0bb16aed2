/* bench/debug_masks.h — the --debug option alloc_bench and pool_bench share: a list of
 * KILN_DEBUG_* masks, each one more kiln row in a table (its runtime created with
 * desc.debug set to the mask), so that the debug layer's cost per bit is measured in the
 * same rounds as kiln with the layer off. */
#ifndef KILN_BENCH_DEBUG_MASKS_H
#define KILN_BENCH_DEBUG_MASKS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define MAX_DEBUG_ROWS 9

static uint32_t debug_masks[MAX_DEBUG_ROWS];
static int      debug_mask_count;

/* Parses "2,4,0x7f" (at most MAX_DEBUG_ROWS masks) into debug_masks; false when bad. */
static inline bool parse_debug_masks(const char *list) {
    for (char *end; *list && debug_mask_count < MAX_DEBUG_ROWS; list = end + (*end == ',')) {
        debug_masks[debug_mask_count++] = (uint32_t)strtoul(list, &end, 0);
        if (end == list || (*end && *end != ',')) return false;
    }
    return *list == '\0';
}

#endif /* KILN_BENCH_DEBUG_MASKS_H */
