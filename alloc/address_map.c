/* alloc/address_map.c — building the block bitmap: leaves allocated on first use. */
#include "address_map.h"

#include "../base/sys_alloc.h"

#define KILN_ADDRESS_LEAVES ((size_t)1 << (KILN_ADDRESS_BITS - KILN_ADDRESS_REGION))

bool kiln_address_map_init(kiln_address_map *map, unsigned block_shift) {
    map->block_shift = block_shift;
    map->leaf_lo = KILN_ADDRESS_LEAVES;
    map->leaf_hi = 0;
    map->leaves = kiln_sys_calloc(KILN_ADDRESS_LEAVES, sizeof *map->leaves);
    return map->leaves != NULL;
}

void kiln_address_map_fini(kiln_address_map *map) {
    if (!map->leaves) return;
    for (size_t i = map->leaf_lo; i < map->leaf_hi; i++)
        kiln_sys_free((void *)kiln_load_relaxed(&map->leaves[i]));
    kiln_sys_free(map->leaves);
    map->leaves = NULL;
}

bool kiln_address_map_add(kiln_address_map *map, const void *base, size_t size) {
    uintptr_t begin = (uintptr_t)base, end = begin + size;
    if (size == 0 || end < begin || ((end - 1) >> KILN_ADDRESS_BITS)) return false;
    size_t leaf_words = (((size_t)1 << (KILN_ADDRESS_REGION - map->block_shift)) + 63) / 64;
    /* First every leaf the range needs, so a failure leaves no bit set. */
    for (uintptr_t region = begin >> KILN_ADDRESS_REGION; region <= (end - 1) >> KILN_ADDRESS_REGION;
         region++) {
        if (kiln_load_relaxed(&map->leaves[region])) continue;   /* the only writer */
        _Atomic uint64_t *leaf = kiln_sys_calloc(leaf_words, sizeof *leaf);
        if (!leaf) return false;
        kiln_store_release(&map->leaves[region], leaf);
        if (region < map->leaf_lo) map->leaf_lo = region;
        if (region + 1 > map->leaf_hi) map->leaf_hi = region + 1;
    }
    for (uintptr_t addr = begin; addr < end; addr += (uintptr_t)1 << map->block_shift) {
        _Atomic uint64_t *leaf = kiln_load_relaxed(&map->leaves[addr >> KILN_ADDRESS_REGION]);
        uintptr_t bit = (addr & (((uintptr_t)1 << KILN_ADDRESS_REGION) - 1)) >> map->block_shift;
        /* Relaxed: readers learn of a block only through the LIFO (acquire) or a handoff
         * that comes after this store. */
        kiln_or_relaxed(&leaf[bit / 64], (uint64_t)1 << (bit % 64));
    }
    return true;
}
