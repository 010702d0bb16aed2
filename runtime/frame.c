/* runtime/frame.c — the frame clock: which context drives it, begin, and end with its
 * close, drain and resets (the life of one frame: docs/ARCHITECTURE.md). */
#include "audit.h"
#include "check.h"
#include "context.h"
#include "handle_reclaim.h"
#include "history.h"
#include "stats_print.h"
#include "trace.h"

/* Claims the clock for ctx if nobody drives it; whether ctx is the driver now. A claim
 * acquires what the previous driver released when it detached (frame_open). */
static bool is_driver(kiln_runtime *rt, kiln_ctx *ctx) {
    kiln_ctx *driver = kiln_load_relaxed(&rt->driver);
    if (driver == NULL && kiln_cas_strong_acquire(&rt->driver, &driver, ctx))
        return true;
    return driver == ctx;
}

/* Whether ctx may call the frame clock at all: a worker's context (reached from inside
 * a job) never may, and no context from inside a job it runs: frame end would wait for
 * the very job that called it. Logs the refusal. */
static bool clock_call_allowed(const kiln_ctx *ctx, const char *function) {
    kiln_log_item item = ctx->is_worker ? KILN_LOGITEM_FRAME_WORKER_CONTEXT
                         : ctx->queue.job_depth > 0 ? KILN_LOGITEM_FRAME_INSIDE_JOB
                         : KILN_LOGITEM_NONE;
    if (kiln_likely(item == KILN_LOGITEM_NONE)) return true;
    kiln_log_misuse(&ctx->rt->log, item,
                    ctx->is_worker ? "%s: context %u is a worker's; only an attached thread "
                                     "drives the frame clock; ignored"
                                   : "%s: context %u is running a job; the frame clock is "
                                     "driven outside jobs (frame end would wait for this one); "
                                     "ignored",
                    function, ctx->id);
    return false;
}

uint64_t kiln_frame_begin(kiln_ctx *ctx) {
    if (!kiln_ctx_check(ctx, "kiln_frame_begin")) return 0;
    kiln_runtime *rt = ctx->rt;
    uint64_t frame = kiln_load_relaxed(&rt->frame);
    if (!kiln_outside_log_callback(&rt->log, "kiln_frame_begin")) return frame;
    if (!clock_call_allowed(ctx, "kiln_frame_begin")) return frame;
    if (!is_driver(rt, ctx)) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_FRAME_NOT_DRIVER,
                        "kiln_frame_begin: context %u does not drive the frame clock "
                        "(another context does); ignored", ctx->id);
        return frame;
    }
    if (kiln_load_relaxed(&rt->frame_open)) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_FRAME_ALREADY_OPEN,
                        "kiln_frame_begin: frame %llu is still open (no kiln_frame_end); ignored",
                        (unsigned long long)frame);
        return frame;
    }
    kiln_store_relaxed(&rt->frame_open, true);
    ctx->queue.drives_clock = true;   /* it now reads the frame epoch exactly */
    kiln_store_relaxed(&rt->frame, frame + 1);
    kiln_history_frame_begin(rt);
    if (kiln_unlikely(kiln_tracing(&rt->trace)))
        kiln_trace_frame_begin(ctx, frame + 1, rt->history.begin_ns);
    return frame + 1;
}

void kiln_frame_end(kiln_ctx *ctx) {
    if (!kiln_ctx_check(ctx, "kiln_frame_end")) return;
    kiln_runtime *rt = ctx->rt;
    if (!kiln_outside_log_callback(&rt->log, "kiln_frame_end")) return;
    if (!clock_call_allowed(ctx, "kiln_frame_end")) return;
    /* No claim here: only kiln_frame_begin makes a context the driver. */
    kiln_ctx *driver = kiln_load_relaxed(&rt->driver);
    if (driver != NULL && driver != ctx) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_FRAME_NOT_DRIVER,
                        "kiln_frame_end: context %u does not drive the frame clock "
                        "(another context does); ignored", ctx->id);
        return;
    }
    if (driver == NULL || !kiln_load_relaxed(&rt->frame_open)) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_FRAME_END_WITHOUT_BEGIN,
                        "kiln_frame_end: context %u has no open frame; ignored", ctx->id);
        return;
    }
    /* Close: what is submitted from now on outside the frame's own jobs belongs to the
     * next frame (model step "close"). The epoch is the reclaim epoch too: a handle free
     * that reads the old one is ordered before this RMW (seq_cst), so a job of the next
     * frame, submitted after it, fences before its first get and finds it stale
     * (jobs/scheduler.c, enter_job_frame). The fence orders the RMW before every count
     * the drain reads: a submitter that counted under the old epoch and read it again
     * afterwards is seen (model step "submit"). */
    uint64_t epoch = kiln_load_relaxed(&rt->handle_epoch);   /* the driver's own store */
    kiln_add_seq_cst(&rt->handle_epoch, 1);
    kiln_fence_seq_cst();
    /* Every job of the frame, from any thread, with or without a counter, finishes first
     * (the driver runs them meanwhile, its pinned ones included); never a later frame's. */
    kiln_jobs_drain_frame(&rt->jobs, &ctx->queue, epoch);
    if (kiln_unlikely(rt->desc.debug & KILN_DEBUG_GUARDS))
        kiln_runtime_audit(rt);   /* live pool objects and the arenas this thread owns */
    kiln_contexts_frame_end(rt, epoch);   /* model step "reset": the epoch's job memory */
    kiln_arena_reset_all(ctx->frame_arena);   /* and the driver's own */
    kiln_handles_frame_end(rt, ctx, epoch + 1);   /* slots freed before the close may be reused */
    kiln_frame_record record;   /* the frame's figures: to the history, then the tracer */
    kiln_history_frame_end(rt, ctx, &record);
    if (kiln_unlikely(kiln_tracing(&rt->trace))) kiln_trace_frame_end(ctx, &record);
    kiln_store_relaxed(&rt->frame_open, false);
    kiln_log_fold_tell(&rt->log, true);   /* this frame's repeats, told */
    uint32_t every = rt->desc.stats.every_frames;
    if (kiln_unlikely(every != 0) && record.frame % every == 0) kiln_stats_log(rt);
}
