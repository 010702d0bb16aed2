/* runtime/handle_reuse.c — when a freed handle slot may be handed out again: the
 * table's reuse ring (limbo, then reusable, oldest first), the reclaim epoch that the
 * frame end advances, the quiescent points of threads outside the frame clock, and the
 * caches' hand-back at detach. The rule it implements: runtime/handles.h. */
#include "runtime_internal.h"

#include <string.h>

uint64_t kiln_handles_safe_epoch(const kiln_handles *table) {
    return kiln_load_acquire(&table->owner->handle_safe_epoch);
}

/* Under the table's lock: publishes the ring's counts for stats readers. */
static void ring_counts(kiln_handles *table) {
    kiln_store_relaxed(&table->reusable_count, (uint32_t)(table->ring_promoted - table->ring_head));
    kiln_store_relaxed(&table->limbo_count, (uint32_t)(table->ring_tail - table->ring_promoted));
}

/* Under the table's lock: moves the entries the safe epoch makes reusable out of limbo,
 * oldest first; it stops at the first that is not (entries are nearly in epoch order),
 * so the work is the entries moved. */
static void ring_promote(kiln_handles *table, uint64_t safe) {
    while (table->ring_promoted != table->ring_tail &&
           kiln_epoch_reusable(table->ring[table->ring_promoted % table->capacity].epoch, safe))
        table->ring_promoted++;
}

static void ring_append(kiln_handles *table, const kiln_reuse_entry *entries, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) table->ring[(table->ring_tail + i) % table->capacity] = entries[i];
    table->ring_tail += n;
}

void kiln_handles_give_freed(kiln_handles *table, kiln_handle_cache *cache) {
    uint32_t n = kiln_load_relaxed(&cache->freed_count);
    ring_append(table, cache->freed, n);
    ring_promote(table, kiln_handles_safe_epoch(table));   /* its frees of earlier frames */
    ring_counts(table);
    kiln_store_relaxed(&cache->freed_count, 0);
}

void kiln_handles_take_ready(kiln_handles *table, kiln_handle_cache *cache) {
    uint32_t k = 0;
    /* alloc pops from the top: the first taken goes there, so slots come out in order. */
    uint32_t reusable = (uint32_t)(table->ring_promoted - table->ring_head);
    uint32_t from_ring = reusable < KILN_HANDLES_BATCH ? reusable : KILN_HANDLES_BATCH;
    uint32_t fresh = table->capacity - table->fresh;
    uint32_t from_fresh = KILN_HANDLES_BATCH - from_ring < fresh ? KILN_HANDLES_BATCH - from_ring : fresh;
    uint32_t total = from_ring + from_fresh;
    for (; k < from_ring; k++) cache->ready[total - 1 - k] = table->ring[table->ring_head++ % table->capacity].index;
    for (; k < total; k++) cache->ready[total - 1 - k] = table->fresh++;
    ring_counts(table);
    kiln_store_relaxed(&cache->ready_count, total);
}

void kiln_handles_quiescent(kiln_ctx *ctx) {
    if (!kiln_ctx_check(ctx, "kiln_handles_quiescent")) return;
    /* seq_cst store, then a full fence: the epoch read here comes after the frees it
     * covers, and no get of this thread after this point can move before the store. */
    kiln_store_seq_cst(&ctx->quiescent_epoch, kiln_load_seq_cst(&ctx->rt->handle_epoch));
    kiln_fence_seq_cst();
}

void kiln_handles_background(kiln_ctx *ctx, bool running) {
    if (running) {
        /* The quiescent epoch first, then the flag (both seq_cst): a frame end that sees
         * the flag also sees an epoch no older than the job's first get. One that does not
         * see it came before the flag in the total order, and so did every free it covers:
         * the job's gets find those handles stale. */
        kiln_store_seq_cst(&ctx->quiescent_epoch, kiln_load_seq_cst(&ctx->rt->handle_epoch));
        kiln_store_seq_cst(&ctx->in_background, true);
        kiln_fence_seq_cst();
    } else {
        /* release: the job's reads of items happen before a frame end that sees false. */
        kiln_store_release(&ctx->in_background, false);
    }
}

void kiln_ctx_flush_handles(kiln_ctx *ctx) {
    kiln_runtime *rt = ctx->rt;
    pthread_mutex_lock(&rt->registry_lock);
    for (int i = 0; i < KILN_MAX_HANDLE_TABLES; i++) {
        kiln_handles *table = rt->handle_tables[i];
        kiln_handle_cache *cache = &ctx->handle_caches[i];
        if (!table || kiln_load_relaxed(&cache->serial) != table->serial) continue;
        pthread_mutex_lock(&table->lock);
        kiln_handles_give_freed(table, cache);
        /* Ready slots are free and safe: stamped one epoch below the safe one, they are
         * promoted as soon as the entries before them are. */
        uint32_t ready = kiln_load_relaxed(&cache->ready_count);
        uint32_t stamp = (uint32_t)kiln_handles_safe_epoch(table) - 1;
        for (uint32_t r = ready; r-- > 0;)
            ring_append(table, &(kiln_reuse_entry){ cache->ready[r], stamp }, 1);
        ring_promote(table, kiln_handles_safe_epoch(table));
        ring_counts(table);
        pthread_mutex_unlock(&table->lock);
        kiln_add_relaxed(&table->folded_allocs, kiln_load_relaxed(&cache->allocs));
        kiln_add_relaxed(&table->folded_frees, kiln_load_relaxed(&cache->frees));
        kiln_store_relaxed(&cache->ready_count, 0);
        kiln_store_relaxed(&cache->serial, 0);
    }
    pthread_mutex_unlock(&rt->registry_lock);
}

void kiln_handles_tally(kiln_handles *table, uint64_t *allocs, uint64_t *frees, uint64_t *pending) {
    *allocs = kiln_load_relaxed(&table->folded_allocs);
    *frees = kiln_load_relaxed(&table->folded_frees);
    *pending = 0;
    /* Destroyed: everything was folded in, and the caches with serial 0 are unbound ones
     * (of no table, or of a later table in this slot), not this table's. */
    if (table->serial == 0) return;
    uint64_t safe = kiln_handles_safe_epoch(table);
    for (kiln_ctx *ctx = table->owner->contexts; ctx; ctx = ctx->next) {
        kiln_handle_cache *cache = &ctx->handle_caches[table->index];
        if (kiln_load_relaxed(&cache->serial) != table->serial) continue;
        *allocs += kiln_load_relaxed(&cache->allocs);
        *frees += kiln_load_relaxed(&cache->frees);
        /* A cache's freed list is in epoch order: if its newest entry is reusable, all are;
         * otherwise all count as pending (some may be reusable already: a bound). */
        if (!kiln_epoch_reusable(kiln_load_relaxed(&cache->freed_last_epoch), safe))
            *pending += kiln_load_relaxed(&cache->freed_count);
    }
}

/* Under registry_lock: the oldest quiescent epoch of the threads that may hold pointers
 * across this frame end — attached threads outside the frame clock, and workers running
 * a background job — and the context holding it back. */
static uint64_t oldest_quiescent(kiln_runtime *rt, kiln_ctx *driver, uint64_t epoch, kiln_ctx **holder) {
    uint64_t oldest = epoch;
    *holder = NULL;
    for (kiln_ctx *ctx = rt->contexts; ctx; ctx = ctx->next) {
        if (ctx == driver) continue;
        /* seq_cst: pairs with the stores in kiln_handles_background. */
        if (ctx->is_worker && !kiln_load_seq_cst(&ctx->in_background)) continue;
        /* seq_cst: pairs with the store in kiln_handles_quiescent (runtime/handles.h). */
        uint64_t seen = kiln_load_seq_cst(&ctx->quiescent_epoch);
        if (seen < oldest) {
            oldest = seen;
            *holder = ctx;
        }
    }
    return oldest;
}

/* Under registry_lock: for every table, the entries that the new safe epoch makes
 * reusable leave limbo, and the live count is sampled for the peak. */
static void tables_frame_end(kiln_runtime *rt, uint64_t safe) {
    for (int i = 0; i < KILN_MAX_HANDLE_TABLES; i++) {
        kiln_handles *table = rt->handle_tables[i];
        if (!table) continue;
        pthread_mutex_lock(&table->lock);
        ring_promote(table, safe);
        ring_counts(table);
        pthread_mutex_unlock(&table->lock);
        uint64_t allocs, frees, pending;
        kiln_handles_tally(table, &allocs, &frees, &pending);
        kiln_max_relaxed_u64(&table->peak_live, allocs - frees);
    }
}

void kiln_handles_frame_end(kiln_runtime *rt, kiln_ctx *driver, uint64_t epoch) {
    if (kiln_load_relaxed(&rt->handle_table_count) == 0) {
        kiln_store_release(&rt->handle_safe_epoch, epoch);
        return;
    }
    pthread_mutex_lock(&rt->registry_lock);
    kiln_ctx *holder;
    uint64_t safe = oldest_quiescent(rt, driver, epoch, &holder);
    /* Read under the lock: once it is released the holder may detach, and its memory
     * be reused by the next attach. */
    uint32_t holder_id = holder ? holder->id : 0;
    /* The driver is the only writer of the safe epoch: relaxed reads its own store. */
    uint64_t previous_safe = kiln_load_relaxed(&rt->handle_safe_epoch);
    /* release: pairs with kiln_handles_safe_epoch. Everything the drained frame jobs and
     * the quiescent threads did happens before a slot is reused; the entries promoted
     * below are published by the tables' locks. */
    kiln_store_release(&rt->handle_safe_epoch, safe);
    tables_frame_end(rt, safe);
    pthread_mutex_unlock(&rt->registry_lock);
    /* Stalled: the safe epoch has not moved for that many frame ends. An outside thread
     * lags a frame end or two behind in normal use (its quiescent points are not the
     * frame's), so "some thread holds safe below the epoch" alone is no stall. */
    if (!holder || safe > previous_safe) {
        rt->reclaim_stalled_frames = 0;
    } else if (++rt->reclaim_stalled_frames == KILN_HANDLES_STALL_WARN_FRAMES) {
        kiln_log(&rt->log, KILN_LOGITEM_HANDLES_RECLAIM_STALLED,
                 "kiln_frame_end: context %u has passed no quiescent point for %u frames; freed "
                 "handle slots are not reused until it calls kiln_handles_quiescent, resets its "
                 "frame arena, detaches or ends its background job", holder_id,
                 KILN_HANDLES_STALL_WARN_FRAMES);
    }
}
