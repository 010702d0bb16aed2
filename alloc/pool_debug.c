/* alloc/pool_debug.c — the pools' debug layer, above the core (pool.c): each object
 * block's table of slot entries (live or free, allocation site), guard bytes around
 * objects, fill patterns and poisoning, the guard check on free, the sampled frame-end
 * audit and the leak list by site. It runs only for a pool with the internal
 * KILN_POOL_DEBUG_HOOKS flag, which the fast paths' flag word (tested anyway) sends out
 * of line: to the hooks it installs at kiln_pool_init, and on free to pool_check.c. */
#include "pool.h"

#include <stdio.h>
#include <string.h>

/* A slot's entry in its block's table. state says whether the object is out: written by
 * whoever allocates or frees it, read by the frame-end audit on the driving thread, all
 * relaxed: the audit acts on nothing but guard bytes, read atomically too. */
struct kiln_pool_slot_info {
    _Atomic uint32_t      state;   /* one of the values below; anything else: damaged */
    _Atomic int           line;
    _Atomic(const char *) file;    /* NULL: allocated without a site */
};
typedef struct kiln_pool_slot_info kiln_pool_slot_info;
_Static_assert(sizeof(kiln_pool_slot_info) == KILN_POOL_SLOT_INFO, "pool.h sizes the table");

enum {
    SLOT_FREE     = 0x45455246u,   /* "FREE" */
    SLOT_LIVE     = 0x4556494cu,   /* "LIVE" */
    SLOT_REPORTED = 0x474d4144u    /* "DAMG": live, its damaged guard already reported */
};

static kiln_pool_block *block_of(const kiln_pool *pool, const void *obj) {
    return kiln_block_of(pool->blocks, obj);
}

static size_t slot_index(const kiln_pool *pool, const kiln_pool_block *block, const void *obj) {
    return ((uintptr_t)obj - block->first) / pool->slot;
}

static kiln_pool_slot_info *slot_info(const kiln_pool *pool, kiln_pool_block *block, size_t slot) {
    return (kiln_pool_slot_info *)((char *)block + pool->info_offset) + slot;
}

static kiln_guarded guarded(const kiln_pool *pool, void *obj) {
    size_t back = pool->slot - pool->debug_front - pool->size;
    return (kiln_guarded){ obj, pool->size, pool->debug_front, pool->debug_front ? back : 0 };
}

static kiln_debug_site site_of(const kiln_pool_slot_info *info) {
    kiln_pool_slot_info *i = (kiln_pool_slot_info *)info;   /* atomics are read, never written */
    return (kiln_debug_site){ kiln_load_relaxed(&i->file), kiln_load_relaxed(&i->line) };
}

/* The block hook (kiln_pool_hooks in pool.h). */
static void debug_block(kiln_pool *pool, kiln_pool_block *block) {
    for (size_t slot = 0; slot < pool->slots_per_block; slot++) {
        char *obj = (char *)block->first + slot * pool->slot;
        if (pool->debug & KILN_POOL_HEADER_BITS) {
            kiln_pool_slot_info *info = slot_info(pool, block, slot);
            kiln_store_relaxed(&info->state, SLOT_FREE);
            kiln_store_relaxed(&info->line, 0);
            kiln_store_relaxed(&info->file, NULL);
        }
        if (pool->debug_front) {
            kiln_guarded g = guarded(pool, obj);
            kiln_debug_guards_write(&g);
        }
        if (pool->debug & KILN_DEBUG_POISON) kiln_debug_poison(obj, pool->size);
    }
}

/* The alloc hook. */
static void debug_alloc(kiln_pool *pool, void *obj) {
    if (pool->debug & KILN_DEBUG_POISON) kiln_debug_object_taken(pool, obj, pool->size);
    if (pool->debug & KILN_POOL_HEADER_BITS) {
        kiln_pool_block *block = block_of(pool, obj);
        kiln_pool_slot_info *info = slot_info(pool, block, slot_index(pool, block, obj));
        kiln_store_relaxed(&info->file, NULL);
        kiln_store_relaxed(&info->line, 0);
        kiln_store_relaxed(&info->state, SLOT_LIVE);
    }
    /* Counted without a site; kiln_pool_debug_site moves it to its own. */
    if (pool->debug & KILN_DEBUG_SITES)
        kiln_sites_alloc(pool->blocks->sites, (kiln_debug_site){ NULL, 0 }, pool->size, true);
    if (pool->debug & KILN_DEBUG_FILL) memset(obj, KILN_FILL_FRESH, pool->size);
}

kiln_debug_site kiln_pool_debug_site_of(kiln_pool *pool, const void *obj) {
    kiln_pool_block *block = kiln_block_of(pool->blocks, obj);
    return site_of(slot_info(pool, block, slot_index(pool, block, obj)));
}

void kiln_pool_debug_site(kiln_pool *pool, void *obj, kiln_debug_site site) {
    kiln_pool_block *block = block_of(pool, obj);
    kiln_pool_slot_info *info = slot_info(pool, block, slot_index(pool, block, obj));
    kiln_store_relaxed(&info->file, site.file);
    kiln_store_relaxed(&info->line, site.line);
    kiln_sites_move(pool->blocks->sites, site, pool->size);
}

static void report_damage(kiln_pool *pool, const kiln_guarded *g, ptrdiff_t bad,
                          const kiln_pool_slot_info *info, const char *when) {
    kiln_add_relaxed(&pool->guard_errors, 1);
    kiln_debug_report_guard(&pool->log, KILN_LOGITEM_POOL_GUARD_DAMAGED, "pool", pool->name, g, bad,
                            site_of(info), when);
}

/* The slot-entry checks of a free: false for a double free (left to the caller to
 * report). The guards are checked unless the audit reported them already, then mended
 * for the slot's next use. */
static bool free_slot(kiln_pool *pool, void *obj) {
    kiln_pool_block *block = block_of(pool, obj);
    kiln_pool_slot_info *info = slot_info(pool, block, slot_index(pool, block, obj));
    /* One exchange decides between two racing frees of the same object. */
    uint32_t was = kiln_exchange_relaxed(&info->state, SLOT_FREE);
    if (was == SLOT_FREE) return false;
    if (pool->debug & KILN_DEBUG_SITES) kiln_sites_freed(pool->blocks->sites, site_of(info));
    if (pool->debug_front) {
        kiln_guarded g = guarded(pool, obj);
        ptrdiff_t bad = 0;
        bool intact = was != SLOT_REPORTED && kiln_debug_guards_intact(&g, &bad);
        if (!intact && was == SLOT_LIVE) report_damage(pool, &g, bad, info, "on free");
        if (!intact) kiln_debug_guards_write(&g);
    }
    return true;
}

bool kiln_pool_debug_free(kiln_pool *pool, void *obj) {
    if ((pool->debug & KILN_POOL_HEADER_BITS) && !free_slot(pool, obj)) return false;
    /* CLEAR_ON_FREE is the pool's contract: zero, not the freed pattern, and before the
     * object is poisoned; its guards (checked above) are not the object's bytes. */
    if (pool->flags & KILN_POOL_CLEAR_ON_FREE) memset(obj, 0, pool->size);
    else if (pool->debug & KILN_DEBUG_FILL) memset(obj, KILN_FILL_FREED, pool->size);
    if (pool->debug & KILN_DEBUG_POISON) kiln_debug_object_freed(pool, obj, pool->size);
    return true;
}

/* Under carve_lock: the object block after block on the pool's list, round to the newest
 * one after the oldest; NULL when the pool has none. */
static kiln_pool_block *next_object_block(kiln_pool *pool, kiln_pool_block *block) {
    for (size_t steps = 0; steps <= kiln_load_relaxed(&pool->blocks_held); steps++) {
        block = block && block->next ? block->next : pool->block_list;
        if (block && block->magic == KILN_POOL_BLOCK_MAGIC) return block;
    }
    return NULL;
}

void kiln_pool_audit(kiln_pool *pool) {
    if (!(pool->debug & KILN_DEBUG_GUARDS)) return;
    kiln_pool_carve_lock(pool);
    kiln_pool_block *block = pool->audit_block;
    size_t slot = pool->audit_slot;
    if (!block) block = next_object_block(pool, NULL);
    /* At most one pass over the carved slots, and at most 16 slots looked at per live
     * object checked: a big pool with few live objects costs a bounded time per frame. */
    uint64_t budget = 16 * (uint64_t)pool->audit_sample, carved = kiln_load_relaxed(&pool->carved);
    uint64_t left = budget < carved ? budget : carved;
    for (uint32_t checked = 0; block && left > 0 && checked < pool->audit_sample; left--, slot++) {
        /* Past the block's slots, or at the first slot not carved yet: the next block. */
        if (slot >= pool->slots_per_block || block->first + slot * pool->slot == pool->carve_next) {
            block = next_object_block(pool, block);
            slot = 0;
        }
        kiln_pool_slot_info *info = slot_info(pool, block, slot);
        if (kiln_load_relaxed(&info->state) != SLOT_LIVE) continue;
        checked++;
        void *obj = (char *)block->first + slot * pool->slot;
        kiln_guarded g = guarded(pool, obj);
        ptrdiff_t bad;
        uint32_t live = SLOT_LIVE;
        /* Reported once: by whoever moves the entry off LIVE first, this audit or a free
         * (which then mends the guard). If the object was freed, mended and handed out
         * again meanwhile, its guard reads intact now: the entry goes back to LIVE. */
        if (kiln_debug_guards_intact(&g, &bad) ||
            !kiln_cas_strong_acquire(&info->state, &live, SLOT_REPORTED))
            continue;
        uint32_t reported = SLOT_REPORTED;
        if (kiln_debug_guards_intact(&g, &bad))
            kiln_cas_strong_acquire(&info->state, &reported, SLOT_LIVE);
        else
            report_damage(pool, &g, bad, info, "by the frame-end audit");
    }
    pool->audit_block = block;
    pool->audit_slot = (uint32_t)slot;
    kiln_pool_carve_unlock(pool);
}

void kiln_pool_report_leaks(kiln_pool *pool) {
    if (!(pool->debug & KILN_DEBUG_SITES)) return;
    kiln_site_table table = { 0 };
    for (kiln_pool_block *block = pool->block_list; block; block = block->next) {
        if (block->magic != KILN_POOL_BLOCK_MAGIC) continue;
        for (size_t slot = 0; slot < pool->slots_per_block; slot++) {
            kiln_pool_slot_info *info = slot_info(pool, block, slot);
            uint32_t state = kiln_load_relaxed(&info->state);
            if (state == SLOT_LIVE || state == SLOT_REPORTED)
                kiln_site_table_add(&table, site_of(info));
        }
    }
    char what[80];
    snprintf(what, sizeof what, "pool '%s'", pool->name);
    kiln_site_table_report(&table, &pool->log, KILN_LOGITEM_POOL_LEAK_SITE, KILN_LOGITEM_POOL_LEAK_SUMMARY, what,
                           "objects");
}

/* ---- set-up: the core's, and this layer's hooks when a debug bit needs them ---- */

static const kiln_pool_hooks debug_hooks = {
    .block = debug_block,
    .alloc = debug_alloc,
};

bool kiln_pool_init(kiln_pool *pool, const kiln_pool_config *config) {
    if (!kiln_pool_init_core(pool, config)) return false;
    if (pool->flags & KILN_POOL_DEBUG_HOOKS) pool->hooks = &debug_hooks;
    return true;
}
