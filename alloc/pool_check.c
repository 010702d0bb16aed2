/* alloc/pool_check.c — the checks of a pool free, above the core (pool.c) and the debug
 * layer (pool_debug.c): the diagnosis of a pointer that kiln_pool_owns refused (foreign,
 * interior, or a destroyed pool), and the checked free that KILN_POOL_CHECKED and the
 * debug hooks put in front of the cache (interior pointers, double frees). The proof
 * that a pointer belongs to the pool stays in the fast path (kiln_pool_owns); only its
 * failures, and pools with those flags, come here, as does the zeroing of
 * KILN_POOL_CLEAR_ON_FREE, after the checks. */
#include "pool.h"

#include <string.h>

/* Logs and counts a double free of obj (POOL_DOUBLE_FREE). */
static KILN_COLD void reject_double_free(kiln_pool *pool, const void *obj) {
    kiln_add_relaxed(&pool->double_frees, 1);
    kiln_log_misuse(&pool->log, KILN_LOGITEM_POOL_DOUBLE_FREE,
                    "pool '%s': object %p is not live (freed twice?); ignored", pool->name, obj);
}

/* Where obj lies from the start of the block's slots: slot 0's front guard with
 * KILN_DEBUG_GUARDS, its object without. A pointer into the header wraps round to more
 * than the slots' span, as does one into the tail past the last whole slot. */
static size_t slots_offset(const kiln_pool *pool, const kiln_pool_block *block, const void *obj) {
    return (uintptr_t)obj - (block->first - pool->debug_front);
}

/* Whether obj lies in one of the block's slots, its object or its guards. */
static bool in_slots(const kiln_pool *pool, const kiln_pool_block *block, const void *obj) {
    return slots_offset(pool, block, obj) < (size_t)pool->slots_per_block * pool->slot;
}

/* false (logged, counted) when obj, in one of the slots of an object block of the pool
 * (in_slots), is not at the start of its slot's object. */
static bool check_interior(kiln_pool *pool, const kiln_pool_block *block, const void *obj) {
    size_t at = slots_offset(pool, block, obj) % pool->slot;   /* from the slot's start */
    if (at == pool->debug_front) return true;
    kiln_add_relaxed(&pool->bad_frees, 1);
    if (at < pool->debug_front)
        kiln_log_misuse(&pool->log, KILN_LOGITEM_POOL_INTERIOR_POINTER,
                        "pool '%s': %p points %zu bytes before an object, into its front "
                        "guard; ignored", pool->name, obj, pool->debug_front - at);
    else
        kiln_log_misuse(&pool->log, KILN_LOGITEM_POOL_INTERIOR_POINTER,
                        "pool '%s': %p points %zu bytes into an object, not at its start; "
                        "ignored", pool->name, obj, at - pool->debug_front);
    return false;
}

/* KILN_POOL_CHECKED: clears the object's in-use bit; false (logged, counted) when it
 * was clear already, a double free. obj is at the start of a slot. */
static bool clear_in_use(kiln_pool *pool, kiln_pool_block *block, const void *obj) {
    size_t slot = ((uintptr_t)obj - block->first) / pool->slot;
    uint64_t bit = (uint64_t)1 << (slot % 64);
    uint64_t before = kiln_and_relaxed(&block->in_use[slot / 64], ~bit);
    if (before & bit) return true;
    reject_double_free(pool, obj);
    return false;
}

void kiln_pool_reject_free(kiln_pool *pool, void *obj) {
    if (kiln_load_relaxed(&pool->serial) == 0) {
        kiln_add_relaxed(&pool->bad_frees, 1);
        kiln_log_misuse(&pool->log, KILN_LOGITEM_POOL_DESTROYED, "kiln_pool_free: pool '%s' has been "
                        "destroyed; %p ignored", pool->name, obj);
        return;
    }
    const char *owner = "no pool";
    if (kiln_address_map_has(&pool->blocks->map, obj)) {
        const kiln_pool_block *block = kiln_block_of(pool->blocks, obj);
        bool object_block = block->magic == KILN_POOL_BLOCK_MAGIC;
        /* Inside a slot of one of this pool's blocks, yet refused by kiln_pool_owns
         * (which accepts from slot 0's object to the last slot's): past where the last
         * slot's object starts, or in slot 0's front guard. An interior pointer, refused
         * in every build because an object handed out there would run past the slots.
         * Outside every slot (the header, the tail): no object of the pool. */
        if (object_block && block->pool == pool &&
            block->serial == kiln_load_relaxed(&pool->serial) && in_slots(pool, block, obj) &&
            !check_interior(pool, block, obj))   /* logged and counted it */
            return;
        owner = object_block && block->pool != pool ? block->pool->name
                                                    : "kiln memory that is no object of this pool";
    }
    kiln_add_relaxed(&pool->bad_frees, 1);
    kiln_log_misuse(&pool->log, KILN_LOGITEM_POOL_FOREIGN_POINTER,
                    "pool '%s': %p is not an object of this pool (it belongs to %s); ignored",
                    pool->name, obj, owner);
}

void kiln_pool_free_checked(kiln_pool *pool, kiln_pool_cache *cache, void *obj) {
    kiln_pool_block *block = kiln_block_of(pool->blocks, obj);
    bool checked = (pool->flags & KILN_POOL_CHECKED) != 0;
    /* An interior pointer would clear another object's bit, or free its slot entry. */
    if ((checked || (pool->debug & KILN_POOL_HEADER_BITS)) && !check_interior(pool, block, obj))
        return;
    if (checked && !clear_in_use(pool, block, obj)) return;
    if (pool->flags & KILN_POOL_DEBUG_HOOKS) {
        if (!kiln_pool_debug_free(pool, obj)) {   /* it clears a CLEAR_ON_FREE object */
            reject_double_free(pool, obj);
            return;
        }
    } else if (pool->flags & KILN_POOL_CLEAR_ON_FREE) {
        memset(obj, 0, pool->size);
    }
    kiln_pool_cache_free(pool, cache, obj);
}
