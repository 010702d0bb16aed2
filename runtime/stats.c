/* runtime/stats.c — the stats calls: runtime-wide figures and every arena's. */
#include "runtime_internal.h"

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
    kiln_block_pool_stats_get(&rt->pool, &out->blocks);
    return true;
}

size_t kiln_stats_arenas(kiln_runtime *rt, kiln_arena_stats *out, size_t cap) {
    if (!kiln_stats_list_args_ok(rt, out, cap, "kiln_stats_arenas")) return 0;
    pthread_mutex_lock(&rt->registry_lock);
    size_t count = 0;
    for (kiln_arena *a = rt->arenas; a; a = a->registry_next, count++)
        if (count < cap) kiln_arena_stats_read(a, &out[count]);
    pthread_mutex_unlock(&rt->registry_lock);
    return count;
}

bool kiln_stats_list_args_ok(const kiln_runtime *rt, const void *out, size_t cap,
                             const char *function) {
    if (!kiln_runtime_check(rt, function)) return false;
    if (out || cap == 0) return true;
    kiln_log_misuse(&((kiln_runtime *)rt)->log, KILN_LOGITEM_STATS_NULL_OUT,
                    "%s: out is NULL with cap %zu; nothing copied", function, cap);
    return false;
}

bool kiln_stats_args_ok(const kiln_log_sink *log, const void *object, kiln_log_item null_item,
                        const char *noun, void *out, size_t out_size, const char *function) {
    if (object && out) return true;
    if (out) memset(out, 0, out_size);
    kiln_log_misuse(log, object ? KILN_LOGITEM_STATS_NULL_OUT : null_item, "%s: %s is NULL", function,
                    object ? "out" : noun);
    return false;
}

bool kiln_arena_stats_get(const kiln_arena *arena, kiln_arena_stats *out) {
    if (!kiln_stats_args_ok(arena ? &arena->log : NULL, arena, KILN_LOGITEM_ARENA_NULL, "the arena", out, sizeof *out, "kiln_arena_stats_get"))
        return false;
    return kiln_arena_stats_read(arena, out);   /* false, logged, for a destroyed arena */
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
