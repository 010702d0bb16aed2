/* runtime/handles.c — the handle tables of a runtime: the registry of table slots (a
 * destroyed table's record lives until kiln_destroy), the public calls with their
 * argument checks, each context's cache by the table's slot, flushing a context's caches
 * at detach, and the statistics. The table itself: alloc/handle_table.h. */
#include "handles.h"

#include "../alloc/handle_sites.h"
#include "../base/sys_alloc.h"
#include "../base/registry.h"
#include "check.h"
#include "tags.h"

#include <stddef.h>
#include <string.h>

_Static_assert(offsetof(struct kiln_handles, core) == 0,
               "the core first: the fast paths reach it through the table pointer");

/* ---------- create and destroy ---------- */

kiln_handles *kiln_handles_create(kiln_runtime *rt, const kiln_handles_desc *desc) {
    if (!kiln_runtime_check(rt, "kiln_handles_create")) return NULL;
    if (!kiln_outside_log_callback(&rt->log, "kiln_handles_create")) return NULL;
    if (!desc) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_HANDLES_NULL_DESC, "kiln_handles_create: desc is NULL");
        return NULL;
    }
    const char *name = desc->name ? desc->name : "handles";
    if (!kiln_handle_table_desc_ok(desc, name, &rt->log)) return NULL;
    bool tag_ok;
    kiln_tag_account *account = kiln_tag_lookup(rt, desc->tag, "kiln_handles_create", &tag_ok);
    if (!tag_ok) return NULL;
    kiln_handles *table = kiln_sys_aligned(KILN_CACHE_LINE, sizeof *table);
    if (!table) {
        kiln_log(&rt->log, KILN_LOGITEM_HANDLES_OUT_OF_MEMORY,
                 "kiln_handles_create: no memory for table '%s'", name);
        return NULL;
    }
    memset(table, 0, sizeof *table);
    pthread_mutex_lock(&rt->registry_lock);
    int slot;
    KILN_REGISTRY_FREE_SLOT(slot, rt->handle_tables, KILN_MAX_HANDLE_TABLES);
    kiln_handle_table_config config = {
        .blocks = &rt->blocks,
        .desc = *desc,
        .name = name,
        .index = (uint32_t)slot,
        .sites = (rt->desc.debug & KILN_DEBUG_SITES) != 0,
        .warn_percent = rt->desc.warn_percent,
        .log = rt->log,
        .reclaim_epoch = &rt->handle_epoch,
        .safe_epoch = &rt->handle_safe_epoch,
        .account = kiln_tag_or_untagged(rt, account),
    };
    bool made = slot >= 0 && kiln_handle_table_init(&table->core, &config);
    if (made) {
        table->owner = rt;
        rt->handle_tables[slot] = table;
        kiln_store_relaxed(&rt->handle_table_count, kiln_load_relaxed(&rt->handle_table_count) + 1);
    }
    pthread_mutex_unlock(&rt->registry_lock);
    if (slot < 0)
        kiln_log_misuse(&rt->log, KILN_LOGITEM_HANDLES_TOO_MANY, "kiln_handles_create: table '%s': all %d "
                        "table slots are in use", name, KILN_MAX_HANDLE_TABLES);
    if (!made) kiln_sys_free(table);
    return made ? table : NULL;
}

void kiln_handles_destroy(kiln_handles *table) {
    if (!table || kiln_handle_table_refuse_dead(&table->core, "kiln_handles_destroy")) return;
    kiln_runtime *rt = table->owner;
    if (!kiln_outside_log_callback(&rt->log, "kiln_handles_destroy")) return;
    /* relaxed: a walk that matters runs on this thread or in jobs that happen-before
     * this call (runtime/handle_walk.c); one on another thread at once breaks the
     * contract above. */
    if (kiln_load_relaxed(&table->walks) != 0) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_HANDLES_WALK_ACTIVE,
                        "kiln_handles_destroy: table '%s' is being walked (kiln_handles_foreach or "
                        "_parallel_for); not destroyed", table->core.name);
        return;
    }
    pthread_mutex_lock(&rt->registry_lock);
    kiln_handle_tally tally;
    kiln_handles_tally(table, &tally);
    if (tally.allocs != tally.frees)
        kiln_log(&rt->log, KILN_LOGITEM_HANDLES_ITEMS_LIVE,
                 "kiln_handles_destroy: table '%s' still has %llu live items; their memory is "
                 "returned now", table->core.name,
                 (unsigned long long)(tally.allocs - tally.frees));
    kiln_handle_sites_report(&table->core);   /* KILN_DEBUG_SITES: by allocation site */
    /* No thread may use the table now (the contract): every cache can be unbound, and
     * the slots returned. */
    for (kiln_ctx *ctx = rt->contexts; ctx; ctx = ctx->next)
        kiln_handle_cache_retire(&table->core, &ctx->handle_caches[table->core.index]);
    kiln_handle_table_fini(&table->core, &tally);
    rt->handle_tables[table->core.index] = NULL;
    kiln_store_relaxed(&rt->handle_table_count, kiln_load_relaxed(&rt->handle_table_count) - 1);
    KILN_DEAD_LIST_PUSH(rt->dead_handle_tables, table, dead_next);
    pthread_mutex_unlock(&rt->registry_lock);
}

void kiln_runtime_handles_fini(kiln_runtime *rt) {
    for (int i = 0; i < KILN_MAX_HANDLE_TABLES; i++) {
        kiln_handles *table = rt->handle_tables[i];
        if (!table) continue;
        kiln_log(&rt->log, KILN_LOGITEM_HANDLES_STILL_ALIVE,
                 "kiln_destroy: handle table '%s' is still alive; destroying it", table->core.name);
        kiln_handles_destroy(table);
    }
}

void kiln_runtime_handles_free(kiln_runtime *rt) {
    KILN_DEAD_LIST_FREE(kiln_handles, rt->dead_handle_tables, dead_next);
}

void kiln_handles_set_generation_limit(kiln_handles *table, uint32_t max_generation) {
    kiln_handle_table_set_generation_limit(&table->core, max_generation);
}

/* ---------- get ---------- */

static KILN_COLD void *get_null(void) {
    kiln_log_misuse(NULL, KILN_LOGITEM_HANDLES_NULL, "kiln_handle_get: the table is NULL");
    return NULL;
}

void *kiln_handle_get(kiln_handles *table, kiln_handle h) {
    if (kiln_unlikely(!table)) return get_null();
    return kiln_handle_table_get(&table->core, h);
}

void *kiln_handle_get_missed(kiln_handles *table, kiln_handle h) {
    if (kiln_unlikely(!table)) return get_null();
    return kiln_handle_table_get_miss(&table->core, h);
}

/* ---------- the context's cache ---------- */

/* Checks the arguments of a slow path (NULLs, a destroyed table, a context that is not
 * attached — a detached one's cache would strand the slots it takes — or one of another
 * runtime) and binds the cache when it is not bound yet; NULL when refused (logged). A
 * detached context's caches were unbound at its detach, so its every call comes here. */
static kiln_handle_cache *cache_for(kiln_ctx *ctx, kiln_handles *table, const char *function) {
    if (!ctx || !table) {
        kiln_log_misuse(table ? &table->core.log : kiln_ctx_log(ctx),
                        ctx ? KILN_LOGITEM_HANDLES_NULL : KILN_LOGITEM_CONTEXT_NULL, "%s: the %s is NULL", function,
                        ctx ? "table" : "context");
        return NULL;
    }
    if (kiln_handle_table_refuse_dead(&table->core, function)) return NULL;
    if (!kiln_ctx_may_use(ctx, table->owner, &table->core.log, KILN_LOGITEM_HANDLES_WRONG_RUNTIME, function,
                          "table", table->core.name))
        return NULL;
    kiln_handle_cache *cache = &ctx->handle_caches[table->core.index];
    if (!kiln_handle_cache_bound(&table->core, cache)) {
        pthread_mutex_lock(&ctx->rt->registry_lock);   /* stats readers sum bound caches */
        kiln_handle_cache_bind(&table->core, cache);
        pthread_mutex_unlock(&ctx->rt->registry_lock);
    }
    return cache;
}

void kiln_ctx_flush_handles(kiln_ctx *ctx) {
    kiln_runtime *rt = ctx->rt;
    pthread_mutex_lock(&rt->registry_lock);
    for (int i = 0; i < KILN_MAX_HANDLE_TABLES; i++) {
        kiln_handles *table = rt->handle_tables[i];
        if (table) kiln_handle_cache_flush(&table->core, &ctx->handle_caches[i]);
    }
    pthread_mutex_unlock(&rt->registry_lock);
}

/* ---------- alloc ---------- */

/* The cache is empty, unbound, or the arguments are bad. */
static KILN_COLD kiln_handle alloc_slow(kiln_ctx *ctx, kiln_handles *table, void **item) {
    if (item) *item = NULL;
    kiln_handle_cache *cache = cache_for(ctx, table, "kiln_handle_alloc");
    if (!cache) return (kiln_handle){ 0 };
    return kiln_handle_table_alloc_slow(&table->core, cache, item);
}

kiln_handle kiln_handle_alloc(kiln_ctx *ctx, kiln_handles *table, void **item) {
    if (kiln_unlikely(!kiln_ctx_attached(ctx) || !table)) return alloc_slow(ctx, table, item);
    kiln_handle_cache *cache = &ctx->handle_caches[table->core.index];
    uint32_t n = kiln_load_relaxed(&cache->ready_count);
    if (kiln_unlikely(!kiln_handle_cache_bound(&table->core, cache) || n == 0))
        return alloc_slow(ctx, table, item);
    return kiln_handle_cache_pop(&table->core, cache, n, item);
}

kiln_handle kiln_handle_alloc_at(kiln_ctx *ctx, kiln_handles *table, void **item,
                                 const char *file, int line) {
    kiln_handle h = kiln_handle_alloc(ctx, table, item);
    if (h.bits) kiln_handle_sites_record(&table->core, h, file, line);
    return h;
}

/* ---------- free ---------- */

/* Bad arguments, an unbound cache or a full freed list: checked, bound, drained. */
static KILN_COLD bool free_slow(kiln_ctx *ctx, kiln_handles *table, kiln_handle h) {
    kiln_handle_cache *cache = cache_for(ctx, table, "kiln_handle_free");
    if (!cache) return false;
    if (!kiln_handle_shape_ok(&table->core, h))
        return kiln_handle_table_refuse_free(&table->core, h, 0, false);
    if (kiln_load_relaxed(&cache->freed_count) == KILN_HANDLES_BATCH)
        kiln_handle_cache_drain(&table->core, cache);
    return kiln_handle_cache_push(&table->core, cache, h);
}

bool kiln_handle_free(kiln_ctx *ctx, kiln_handles *table, kiln_handle h) {
    if (kiln_unlikely(!kiln_ctx_attached(ctx) || !table)) return free_slow(ctx, table, h);
    kiln_handle_cache *cache = &ctx->handle_caches[table->core.index];
    if (kiln_unlikely(kiln_handle_index(h) >= table->core.capacity ||
                      !kiln_handle_cache_bound(&table->core, cache) ||
                      kiln_load_relaxed(&cache->freed_count) == KILN_HANDLES_BATCH))
        return free_slow(ctx, table, h);
    return kiln_handle_cache_push(&table->core, cache, h);
}

/* ---------- statistics ---------- */

void kiln_handles_tally(kiln_handles *table, kiln_handle_tally *tally) {
    if (!kiln_handle_tally_begin(&table->core, tally)) return;
    for (kiln_ctx *ctx = table->owner->contexts; ctx; ctx = ctx->next)
        kiln_handle_tally_cache(&table->core, &ctx->handle_caches[table->core.index], tally);
}

/* Under registry_lock (the tally walks the contexts). */
static void stats_read(kiln_handles *table, kiln_handles_stats *out) {
    kiln_handle_tally tally;
    kiln_handles_tally(table, &tally);
    kiln_handle_table_stats(&table->core, &tally, out);
}

size_t kiln_stats_handles(kiln_runtime *rt, kiln_handles_stats *out, size_t cap) {
    if (!kiln_stats_list_args_ok(rt, out, cap, "kiln_stats_handles")) return 0;
    size_t count = 0;
    pthread_mutex_lock(&rt->registry_lock);
    for (int i = 0; i < KILN_MAX_HANDLE_TABLES; i++) {
        kiln_handles *table = rt->handle_tables[i];
        if (!table) continue;
        if (count < cap) stats_read(table, &out[count]);
        count++;
    }
    pthread_mutex_unlock(&rt->registry_lock);
    return count;
}

bool kiln_handles_stats_get(kiln_handles *table, kiln_handles_stats *out) {
    if (!kiln_stats_args_ok(table ? &table->core.log : NULL, table, KILN_LOGITEM_HANDLES_NULL, "the table",
                            out, sizeof *out, "kiln_handles_stats_get"))
        return false;
    kiln_runtime *rt = table->owner;
    pthread_mutex_lock(&rt->registry_lock);
    stats_read(table, out);
    pthread_mutex_unlock(&rt->registry_lock);
    return true;
}
