/* runtime/stats.c — the runtime-wide stats calls: the runtime's figures, the lists of
 * every arena and every context, and the allocation sites ranked (KILN_DEBUG_SITES). */
#include "arenas.h"
#include "check.h"

#include <string.h>

#include "../alloc/handle_sites.h"

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
    out->log_dropped = kiln_log_dropped(&rt->log_state);
    pthread_mutex_lock(&rt->registry_lock);
    out->contexts = rt->context_count;
    out->arenas = rt->arena_count;
    out->pools = rt->pool_count;
    out->handle_tables = kiln_load_relaxed(&rt->handle_table_count);
    out->jobs_run_at_detach = kiln_load_relaxed(&rt->jobs.retire_runs);
    pthread_mutex_unlock(&rt->registry_lock);
    kiln_block_pool_stats_get(&rt->blocks, &out->blocks);
    return true;
}

size_t kiln_stats_arenas(kiln_runtime *rt, kiln_arena_stats *out, size_t cap) {
    if (!kiln_stats_list_args_ok(rt, out, cap, "kiln_stats_arenas")) return 0;
    pthread_mutex_lock(&rt->registry_lock);
    size_t count = 0;
    for (kiln_arena_record *a = rt->arenas; a; a = a->next, count++)
        if (count < cap) kiln_runtime_arena_stats(&a->arena, &out[count]);
    pthread_mutex_unlock(&rt->registry_lock);
    return count;
}

size_t kiln_stats_contexts(kiln_runtime *rt, kiln_ctx_stats *out, size_t cap) {
    if (!kiln_stats_list_args_ok(rt, out, cap, "kiln_stats_contexts")) return 0;
    pthread_mutex_lock(&rt->registry_lock);
    size_t count = 0;
    for (kiln_ctx *ctx = rt->contexts; ctx; ctx = ctx->next, count++) {
        if (count >= cap) continue;
        kiln_arena_stats arena;   /* its own frame arena's and its job arenas' */
        kiln_runtime_arena_stats(ctx->frame_arena, &arena);
        kiln_job_queue *q = &ctx->queue;
        out[count] = (kiln_ctx_stats){
            .id = ctx->id,
            .is_worker = ctx->is_worker,
            .jobs_submitted = kiln_jobs_submitted(q),
            .jobs_run = kiln_load_relaxed(&q->jobs_run),
            .jobs_stolen = kiln_load_relaxed(&q->jobs_stolen),
            .steal_misses = kiln_load_relaxed(&q->steal_misses),
            .sleep_ns = kiln_load_relaxed(&q->sleep_ns),
            .frame_bytes_in_use = arena.bytes_in_use,
            .frame_peak_last_frame = arena.peak_last_frame,
            .sleeps = kiln_load_relaxed(&q->sleeps),
            .idle_spin_ns = kiln_load_relaxed(&q->idle_spin_ns),
            .waits_stuck = kiln_load_relaxed(&q->waits_stuck),
        };
    }
    pthread_mutex_unlock(&rt->registry_lock);
    return count;
}

/* ---------- allocation sites (KILN_DEBUG_SITES) ---------- */

/* Whether a ranks before b: more allocations, then more live. */
static bool ranks_before(const kiln_site_stats *a, const kiln_site_stats *b) {
    return a->allocs != b->allocs ? a->allocs > b->allocs : a->live > b->live;
}

/* Puts s into out[0, *n), which stays in rank order and at most cap long. */
static void rank_insert(kiln_site_stats *out, size_t *n, size_t cap, const kiln_site_stats *s) {
    size_t at = *n;
    while (at > 0 && ranks_before(s, &out[at - 1])) at--;
    if (at >= cap) return;
    size_t last = *n < cap ? *n : cap - 1;   /* a full list drops its last entry */
    memmove(&out[at + 1], &out[at], (last - at) * sizeof *out);
    out[at] = *s;
    if (*n < cap) (*n)++;
}

/* The ranked sites, for the handle tables' walk to add their live items to. */
typedef struct site_list { kiln_site_stats *sites; size_t count; } site_list;

static void add_live_item(void *user, kiln_debug_site site) {
    site_list *list = user;
    for (size_t i = 0; i < list->count; i++) {
        kiln_site_stats *s = &list->sites[i];
        if (s->line == site.line &&
            (s->file == site.file || (s->file && site.file && strcmp(s->file, site.file) == 0))) {
            s->live++;
            return;
        }
    }
}

size_t kiln_sites_top(kiln_runtime *rt, kiln_site_stats *out, size_t cap) {
    if (!kiln_stats_list_args_ok(rt, out, cap, "kiln_sites_top")) return 0;
    if (!(rt->desc.debug & KILN_DEBUG_SITES)) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_SITES_OFF,
                        "kiln_sites_top: the runtime was made without KILN_DEBUG_SITES; no "
                        "sites are counted");
        return 0;
    }
    /* Ranked by allocations, which the registry has whole: the handle tables' live items
     * (walked, their free path keeps no counts) change no rank. */
    site_list list = { out, 0 };
    for (size_t i = 0; i < KILN_SITE_REGISTRY_CAP && cap > 0; i++) {
        kiln_site_entry *e = &rt->sites.entries[i];
        const char *file = kiln_load_acquire(&e->file);   /* pairs with the claim's release */
        if (i != 0 && !file) continue;
        kiln_site_stats s = {
            .file = file,
            .line = kiln_load_relaxed(&e->line),
            .allocs = kiln_load_relaxed(&e->allocs),
            .bytes = kiln_load_relaxed(&e->bytes),
            .live = kiln_load_relaxed(&e->live),
        };
        if (s.allocs != 0 || s.live != 0) rank_insert(out, &list.count, cap, &s);
    }
    pthread_mutex_lock(&rt->registry_lock);   /* the tables stay alive while walked */
    for (int i = 0; i < KILN_MAX_HANDLE_TABLES && list.count > 0; i++)
        if (rt->handle_tables[i])
            kiln_handle_sites_live(&rt->handle_tables[i]->core, add_live_item, &list);
    pthread_mutex_unlock(&rt->registry_lock);
    return list.count;
}
