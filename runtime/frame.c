/* runtime/frame.c — the frame clock: which context drives it, begin and end, and the
 * resets that frame end performs. */
#include "runtime_internal.h"

/* Claims the clock for ctx if nobody drives it; whether ctx is the driver now. A claim
 * acquires what the previous driver released when it detached (frame_open). */
static bool is_driver(kiln_runtime *rt, kiln_ctx *ctx) {
    kiln_ctx *driver = kiln_load_relaxed(&rt->driver);
    if (driver == NULL && kiln_cas_strong_acquire(&rt->driver, &driver, ctx))
        return true;
    return driver == ctx;
}

uint64_t kiln_frame_begin(kiln_ctx *ctx) {
    if (!kiln_ctx_check(ctx, "kiln_frame_begin")) return 0;
    kiln_runtime *rt = ctx->rt;
    uint64_t frame = kiln_load_relaxed(&rt->frame);
    if (!is_driver(rt, ctx)) {
        kiln_log_misuse(&rt->log, "FRAME_NOT_DRIVER",
                        "kiln_frame_begin: context %u does not drive the frame clock "
                        "(another context does); ignored", ctx->id);
        return frame;
    }
    if (rt->frame_open) {
        kiln_log_misuse(&rt->log, "FRAME_ALREADY_OPEN",
                        "kiln_frame_begin: frame %llu is still open (no kiln_frame_end); ignored",
                        (unsigned long long)frame);
        return frame;
    }
    rt->frame_open = true;
    ctx->queue.steals = true;   /* frame end resets this arena after every frame job */
    kiln_store_relaxed(&rt->frame, frame + 1);
    kiln_history_frame_begin(rt);
    if (kiln_unlikely(kiln_tracing(&rt->trace)))
        kiln_trace_frame_begin(ctx, frame + 1, rt->history.begin_ns);
    return frame + 1;
}

void kiln_frame_end(kiln_ctx *ctx) {
    if (!kiln_ctx_check(ctx, "kiln_frame_end")) return;
    kiln_runtime *rt = ctx->rt;
    /* No claim here: only kiln_frame_begin makes a context the driver. */
    kiln_ctx *driver = kiln_load_relaxed(&rt->driver);
    if (driver != NULL && driver != ctx) {
        kiln_log_misuse(&rt->log, "FRAME_NOT_DRIVER",
                        "kiln_frame_end: context %u does not drive the frame clock "
                        "(another context does); ignored", ctx->id);
        return;
    }
    if (driver == NULL || !rt->frame_open) {
        kiln_log_misuse(&rt->log, "FRAME_END_WITHOUT_BEGIN",
                        "kiln_frame_end: context %u has no open frame; ignored", ctx->id);
        return;
    }
    /* Every frame job, from any thread, with or without a counter, finishes first (the
     * driver runs jobs meanwhile, its pinned ones included). The completion counts are
     * read with acquire, so every frame allocation of a job happens before the resets:
     * a worker touches its frame arena only inside a job. */
    kiln_jobs_drain_frame(&rt->jobs, &ctx->queue);
    kiln_runtime_audit(rt);   /* KILN_DEBUG_GUARDS: live pool objects and owned arenas */
    for (uint32_t i = 0; i < rt->workers_started; i++)
        kiln_arena_reset_all(rt->workers[i]->frame_arena);
    kiln_arena_reset_all(ctx->frame_arena);
    kiln_handles_frame_end(rt, ctx);   /* slots freed before now may be reused */
    kiln_frame_record record;   /* the frame's figures: to the history, then the tracer */
    kiln_history_frame_end(rt, ctx, &record);
    if (kiln_unlikely(kiln_tracing(&rt->trace))) kiln_trace_frame_end(ctx, &record);
    rt->frame_open = false;
}
