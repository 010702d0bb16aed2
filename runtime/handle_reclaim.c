/* runtime/handle_reclaim.c — the runtime's side of handle reuse: quiescent points of
 * threads outside the frame clock, the background flag of workers, and the frame end
 * that raises the safe epoch and has every table promote what it allows. The rule it
 * implements: runtime/handle_reclaim.h. */
#include "handle_reclaim.h"

#include "check.h"
#include "handles.h"

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
        /* seq_cst: pairs with the store in kiln_handles_quiescent (runtime/handle_reclaim.h). */
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
        kiln_handle_table_promote(&table->core, safe);
        kiln_handle_tally tally;
        kiln_handles_tally(table, &tally);
        kiln_handle_table_sample_peak(&table->core, &tally);
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
    /* release: pairs with the tables' acquire loads of the safe epoch. Everything the
     * drained frame jobs and the quiescent threads did happens before a slot is reused;
     * the entries promoted below are published by the tables' locks. */
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
