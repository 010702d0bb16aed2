/* runtime/stats.c — the runtime-wide stats calls: the runtime's figures and the
 * lists of every arena and every context. */
#include "check.h"

#include <string.h>

bool kiln_stats_get(kiln_runtime *rt, kiln_stats *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!kiln_runtime_check(rt, "kiln_stats_get")) return false;   /* the runtime first */
    if (!out) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_STATS_NULL_OUT, "kiln_stats_get: out is NULL");
        return false;
    }
    out->frame = kiln_load_relaxed(&rt->frame);
    out->worker_count = rt->desc.worker_count;
    out->api_errors = kiln_load_relaxed(&rt->api_errors);
    pthread_mutex_lock(&rt->registry_lock);
    out->contexts = rt->context_count;
    out->arenas = rt->arena_count;
    out->pools = rt->pool_count;
    out->handle_tables = kiln_load_relaxed(&rt->handle_table_count);
    pthread_mutex_unlock(&rt->registry_lock);
    kiln_block_pool_stats_get(&rt->blocks, &out->blocks);
    return true;
}

size_t kiln_stats_arenas(kiln_runtime *rt, kiln_arena_stats *out, size_t cap) {
    if (!kiln_stats_list_args_ok(rt, out, cap, "kiln_stats_arenas")) return 0;
    pthread_mutex_lock(&rt->registry_lock);
    size_t count = 0;
    for (kiln_arena_record *a = rt->arenas; a; a = a->next, count++)
        if (count < cap) kiln_arena_stats_read(&a->arena, &out[count]);
    pthread_mutex_unlock(&rt->registry_lock);
    return count;
}

size_t kiln_stats_contexts(kiln_runtime *rt, kiln_ctx_stats *out, size_t cap) {
    if (!kiln_stats_list_args_ok(rt, out, cap, "kiln_stats_contexts")) return 0;
    pthread_mutex_lock(&rt->registry_lock);
    size_t count = 0;
    for (kiln_ctx *ctx = rt->contexts; ctx; ctx = ctx->next, count++) {
        if (count >= cap) continue;
        kiln_arena_stats arena;
        kiln_arena_stats_read(ctx->frame_arena, &arena);
        kiln_job_queue *q = &ctx->queue;
        out[count] = (kiln_ctx_stats){
            .id = ctx->id,
            .is_worker = ctx->is_worker,
            .jobs_submitted = kiln_load_relaxed(&q->submitted),
            .jobs_run = kiln_load_relaxed(&q->jobs_run),
            .jobs_stolen = kiln_load_relaxed(&q->jobs_stolen),
            .steal_misses = kiln_load_relaxed(&q->steal_misses),
            .sleep_ns = kiln_load_relaxed(&q->sleep_ns),
            .frame_bytes_in_use = arena.bytes_in_use,
            .frame_peak_last_frame = arena.peak_last_frame,
        };
    }
    pthread_mutex_unlock(&rt->registry_lock);
    return count;
}
