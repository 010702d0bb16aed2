/* runtime/trace.c — recording: the job hook the scheduler calls when tracing is on,
 * the frame events and counter samples of the driver, each context's ring (the
 * protocol is in trace.h), kiln_trace_enable and the tracer's figures. Writing the
 * rings out as JSON is runtime/trace_write.c. */
#include "trace.h"
#include "check.h"

#include <string.h>

#include "../base/clock.h"
#include "../base/sys_alloc.h"
#include "../base/seqlock.h"

_Static_assert((KILN_TRACE_RING_EVENTS & (KILN_TRACE_RING_EVENTS - 1)) == 0, "the ring index is a mask");

void kiln_trace_init(kiln_trace *trace) {
    pthread_mutex_init(&trace->lock, NULL);
}

void kiln_trace_fini(kiln_trace *trace) {
    for (kiln_trace_ring *ring = trace->rings, *next; ring; ring = next) {
        next = ring->next;
        kiln_sys_free(ring);
    }
    trace->rings = NULL;
    pthread_mutex_destroy(&trace->lock);
}

/* The context's thread, the first time it records: 2 MiB of zeroed pages (the heap maps
 * them fresh, so untouched parts cost no memory). NULL, counted and logged once, when
 * there is no memory. */
static KILN_COLD kiln_trace_ring *ring_new(kiln_ctx *ctx) {
    kiln_trace *trace = &ctx->rt->trace;
    kiln_trace_ring *ring = kiln_sys_calloc(1, sizeof *ring);
    if (!ring) {
        kiln_add_relaxed(&trace->lost, 1);
        if (!kiln_exchange_relaxed(&trace->lost_logged, true))
            kiln_log(&ctx->rt->log, KILN_LOGITEM_TRACE_OUT_OF_MEMORY,
                     "context %u: no memory for its trace ring (%zu bytes); its events are "
                     "counted as dropped", ctx->id, sizeof *ring);
        return NULL;
    }
    pthread_mutex_lock(&trace->lock);   /* publishes the zeroed ring to writers */
    ring->next = trace->rings;
    trace->rings = ring;
    trace->ring_count++;
    pthread_mutex_unlock(&trace->lock);
    ctx->trace_ring = ring;
    return ring;
}

/* Appends one event to the ring of ctx. The context's own thread only. */
static void record(kiln_ctx *ctx, uint32_t kind, uint32_t flags, uint64_t ts, uint64_t value,
                   uint64_t what) {
    kiln_trace_ring *ring = ctx->trace_ring;
    if (kiln_unlikely(!ring) && !(ring = ring_new(ctx))) return;
    uint64_t n = kiln_load_relaxed(&ring->head);   /* this thread's own store */
    kiln_seq_claim(&ring->claimed, n + 1);   /* a reader that sees a new word sees the claim */
    kiln_trace_slot *slot = &ring->slots[n & (KILN_TRACE_RING_EVENTS - 1)];
    uint64_t tag = kind | (flags & 0xffu) << 8 | (ctx->is_worker ? KILN_TRACE_WORKER : 0u) << 16 |
                   (uint64_t)ctx->id << 32;
    kiln_store_relaxed(&slot->ts, ts);
    kiln_store_relaxed(&slot->value, value);
    kiln_store_relaxed(&slot->what, what);
    kiln_store_relaxed(&slot->tag, tag);
    kiln_seq_publish(&ring->head, n + 1);
}

/* The scheduler's hook: the begin time goes out as the token and comes back at the end,
 * so a job is one complete event, written when it ends (nested jobs that kiln_wait runs
 * inside it end first). */
static uint64_t trace_job(kiln_job_queue *q, kiln_job_phase phase, const kiln_task *task,
                          uint64_t token) {
    if (phase == KILN_JOB_BEGIN) return kiln_now_ns();
    uint64_t end = kiln_now_ns();
    record(q->owner, KILN_TRACE_JOB, (uint32_t)task->flags, token, end - token,
           (uint64_t)(uintptr_t)task->fn.job);
    return 0;
}

void kiln_trace_frame_begin(kiln_ctx *driver, uint64_t frame, uint64_t begin_ns) {
    record(driver, KILN_TRACE_FRAME_BEGIN, 0, begin_ns, frame, 0);
}

/* Live objects of every live pool: the pools are listed under registry_lock, then read
 * one by one (kiln_pool_stats_get locks for each; a pool destroyed meanwhile keeps its
 * bookkeeping, and its figures, until kiln_destroy). */
static void record_pools(kiln_ctx *driver, uint64_t ts) {
    kiln_runtime *rt = driver->rt;
    kiln_pool *pools[KILN_MAX_POOLS];
    size_t count = 0;
    pthread_mutex_lock(&rt->registry_lock);
    for (int i = 0; i < KILN_MAX_POOLS; i++)
        if (rt->pools[i]) pools[count++] = rt->pools[i];
    pthread_mutex_unlock(&rt->registry_lock);
    for (size_t i = 0; i < count; i++) {
        kiln_pool_stats stats;
        if (kiln_pool_stats_get(pools[i], &stats))
            record(driver, KILN_TRACE_COUNTER_POOL_LIVE, 0, ts, stats.live,
                   (uint64_t)(uintptr_t)pools[i]);
    }
}

void kiln_trace_frame_end(kiln_ctx *driver, const kiln_frame_record *r) {
    uint64_t end = r->begin_ns + r->duration_ns;
    record(driver, KILN_TRACE_FRAME, 0, r->begin_ns, r->duration_ns, r->frame);
    for (uint32_t i = 0; i < r->contexts; i++)
        record(driver, KILN_TRACE_COUNTER_FRAME_BYTES, 0, end, r->ctx_frame_bytes[i], r->ctx_ids[i]);
    record(driver, KILN_TRACE_COUNTER_JOBS, 0, end, r->jobs_run, 0);
    record_pools(driver, end);
}

void kiln_trace_enable(kiln_runtime *rt, bool on) {
    if (!kiln_runtime_check(rt, "kiln_trace_enable")) return;
    kiln_store_relaxed(&rt->trace.on, on);
    kiln_jobs_set_hook(&rt->jobs, on ? trace_job : NULL);
}

bool kiln_trace_stats_get(kiln_runtime *rt, kiln_trace_stats *out) {
    if (!out) {
        kiln_log_misuse(kiln_runtime_log(rt), KILN_LOGITEM_STATS_NULL_OUT, "kiln_trace_stats_get: out is NULL");
        return false;
    }
    memset(out, 0, sizeof *out);
    if (!kiln_runtime_check(rt, "kiln_trace_stats_get")) return false;
    kiln_trace *trace = &rt->trace;
    pthread_mutex_lock(&trace->lock);
    kiln_trace_ring *rings = trace->rings;
    out->rings = trace->ring_count;
    pthread_mutex_unlock(&trace->lock);
    out->enabled = kiln_tracing(trace);
    out->ring_events = KILN_TRACE_RING_EVENTS;
    out->dropped = kiln_load_relaxed(&trace->lost);
    out->recorded = out->dropped;
    for (kiln_trace_ring *ring = rings; ring; ring = ring->next) {   /* listed rings never go */
        uint64_t head = kiln_load_relaxed(&ring->head);
        out->recorded += head;
        if (head > KILN_TRACE_RING_EVENTS) out->dropped += head - KILN_TRACE_RING_EVENTS;
    }
    return true;
}
