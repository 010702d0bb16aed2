/* alloc/address_map.h — which addresses are kiln blocks: a two-level bitmap over the
 * 47-bit user address space, one bit per block. It lets a free find out, in O(1) and
 * without touching the pointer's memory, whether a pointer lies in one of the block
 * pool's reservations before anything reads the block header it would mask to (a
 * pointer from malloc or the stack must never make kiln read unmapped memory).
 *
 * Contract: kiln_address_map_add is called under the block pool's grow lock (one
 * writer); kiln_address_map_has may be called by any thread at any time, wait-free.
 * Bits are only ever set: a reservation stays mapped while the pool lives. */
#ifndef KILN_ALLOC_ADDRESS_MAP_H
#define KILN_ALLOC_ADDRESS_MAP_H

#include <stdbool.h>

#include "../base/atomics.h"
#include "../base/common.h"

#define KILN_ADDRESS_BITS   47   /* x86_64 and aarch64 user space */
#define KILN_ADDRESS_REGION 32   /* each leaf covers 4 GiB */

typedef struct kiln_address_map {
    /* Leaves are published with a release store after they are zeroed and read with an
     * acquire load, so a reader never sees a leaf before its memory. */
    _Atomic(_Atomic uint64_t *) *leaves;   /* 2^(47-32) entries, calloc'd (untouched pages cost nothing) */
    unsigned                    block_shift;
    /* Writer only: the range of leaf indices that may be allocated, so fini visits those
     * and not all 32768 entries (a teardown that read every one was slow). */
    size_t                      leaf_lo, leaf_hi;
} kiln_address_map;

/* false when the top level cannot be allocated. */
KILN_INTERNAL bool kiln_address_map_init(kiln_address_map *map, unsigned block_shift);
KILN_INTERNAL void kiln_address_map_fini(kiln_address_map *map);

/* Marks [base, base + size) (block aligned) as blocks. false when a leaf cannot be
 * allocated (the caller refuses the reservation). Writer only. */
KILN_INTERNAL bool kiln_address_map_add(kiln_address_map *map, const void *base, size_t size);

/* Whether p lies in a block of the pool. Any thread, wait-free. */
static inline bool kiln_address_map_has(const kiln_address_map *map, const void *p) {
    uintptr_t addr = (uintptr_t)p;
    if (addr >> KILN_ADDRESS_BITS) return false;
    _Atomic uint64_t *leaf = kiln_load_acquire(&map->leaves[addr >> KILN_ADDRESS_REGION]);
    if (!leaf) return false;
    uintptr_t bit = (addr & (((uintptr_t)1 << KILN_ADDRESS_REGION) - 1)) >> map->block_shift;
    return (kiln_load_relaxed(&leaf[bit / 64]) >> (bit % 64)) & 1;
}

#endif /* KILN_ALLOC_ADDRESS_MAP_H */
