/* runtime/pools.c — pools that belong to a runtime: the table of pool slots (each
 * slot's bookkeeping lives until kiln_destroy, so a call on a destroyed pool is caught,
 * not a use after free), the public alloc/free entry points with their argument
 * checks, flushing a context's caches, and pool statistics. */
#include "pools.h"
#include "check.h"
#include "tags.h"

#include "../base/sys_alloc.h"

#include "../base/registry.h"

#include <stdlib.h>
#include <string.h>

kiln_pool *kiln_pool_create(kiln_runtime *rt, const kiln_pool_desc *desc) {
    if (!kiln_runtime_check(rt, "kiln_pool_create")) return NULL;
    if (!kiln_outside_log_callback(&rt->log, "kiln_pool_create")) return NULL;
    if (!desc) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_POOL_NULL_DESC, "kiln_pool_create: desc is NULL");
        return NULL;
    }
    bool tag_ok;
    kiln_tag_account *account = kiln_tag_lookup(rt, desc->tag, "kiln_pool_create", &tag_ok);
    if (!tag_ok) return NULL;
    pthread_mutex_lock(&rt->registry_lock);
    /* Every pool gets bookkeeping of its own, never reused: a handle to a destroyed pool
     * stays a destroyed pool even after its slot serves a new one. */
    int slot;
    KILN_REGISTRY_FREE_SLOT(slot, rt->pools, KILN_MAX_POOLS);
    kiln_pool_record *record = NULL;
    if (slot >= 0) {
        record = kiln_sys_aligned(KILN_CACHE_LINE, sizeof *record);
        if (record) memset(record, 0, sizeof *record);
    }
    kiln_pool *pool = record ? &record->pool : NULL;
    kiln_pool_config config = {
        .blocks = &rt->blocks,
        .desc = *desc,
        .index = (uint32_t)slot,
        .serial = kiln_pool_serial_new(),
        .checked = (rt->desc.debug & KILN_DEBUG_CHECKS) != 0,
        .log = rt->log,
        .debug = rt->desc.debug,
        .audit_sample = rt->desc.audit_sample,
        .warn_percent = rt->desc.warn_percent,
        .account = kiln_tag_or_untagged(rt, account),
    };
    bool made = pool && kiln_pool_init(pool, &config);
    if (made) {
        record->rt = rt;
        rt->pools[slot] = pool;
        rt->pool_count++;
    } else {
        kiln_sys_free(record);
    }
    pthread_mutex_unlock(&rt->registry_lock);
    if (slot < 0)
        kiln_log_misuse(&rt->log, KILN_LOGITEM_POOL_TOO_MANY, "kiln_pool_create: pool '%s': all %d pool "
                        "slots are in use", desc->name ? desc->name : "pool", KILN_MAX_POOLS);
    else if (!pool)
        kiln_log(&rt->log, KILN_LOGITEM_POOL_OUT_OF_MEMORY,
                 "kiln_pool_create: no memory for pool '%s'", desc->name ? desc->name : "pool");
    /* Nobody else has the pool yet: its reserve is carved before anyone allocates. */
    if (made && pool->reserve != 0) kiln_pool_reserve_objects(pool, pool->reserve);
    return made ? pool : NULL;
}

/* Under registry_lock: the caches of every attached context summed for pool. */
static void tally_contexts(kiln_runtime *rt, kiln_pool *pool, kiln_pool_tally *tally) {
    *tally = (kiln_pool_tally){ 0 };
    for (kiln_ctx *ctx = rt->contexts; ctx; ctx = ctx->next)
        kiln_pool_tally_cache(pool, &ctx->pool_caches[pool->index], tally);
}

void kiln_pool_destroy(kiln_pool *pool) {
    if (!pool) return;
    kiln_runtime *rt = kiln_pool_record_of(pool)->rt;
    if (!kiln_outside_log_callback(&rt->log, "kiln_pool_destroy")) return;
    if (kiln_load_relaxed(&pool->serial) == 0) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_POOL_DESTROYED,
                        "kiln_pool_destroy: pool '%s' was destroyed already", pool->name);
        return;
    }
    pthread_mutex_lock(&rt->registry_lock);
    kiln_pool_tally tally;
    tally_contexts(rt, pool, &tally);
    kiln_pool_stats stats;
    kiln_pool_stats_read(pool, &tally, &stats);
    if (stats.live != 0)
        kiln_log(&rt->log, KILN_LOGITEM_POOL_OBJECTS_LIVE,
                 "kiln_pool_destroy: pool '%s' still has %llu live objects; their memory is "
                 "returned now", pool->name, (unsigned long long)stats.live);
    if (stats.live != 0) kiln_pool_report_leaks(pool);   /* KILN_DEBUG_SITES: by site */
    /* No thread may use the pool now (the contract), so its cache in every context is
     * free to reset: the magazines live in the pool's blocks, which go back now. Their
     * counters stay in the pool's totals, for the stats of the destroyed pool. */
    for (kiln_ctx *ctx = rt->contexts; ctx; ctx = ctx->next)
        kiln_pool_cache_retire(pool, &ctx->pool_caches[pool->index]);
    kiln_pool_fini(pool);
    /* The slot is free for a new pool; this one keeps its figures until kiln_destroy and
     * points at the spare cache slot that is never bound, so a call through a stale
     * handle falls into the slow path and is refused. */
    rt->pools[pool->index] = NULL;
    pool->index = KILN_MAX_POOLS;
    KILN_DEAD_LIST_PUSH(rt->dead_pools, kiln_pool_record_of(pool), dead_next);
    rt->pool_count--;
    pthread_mutex_unlock(&rt->registry_lock);
}

/* The checks of a call whose cache is not bound to the pool, before anything binds it
 * (kiln_pool_cache_bound said no: the cache's first use since attach, or a context that
 * may not use the pool). false, logged, for a context that is not attached (a detached
 * one's cache would strand the objects it takes) or one of another runtime (its cache
 * would move objects into that runtime's pool at the same index). */
static KILN_COLD bool ctx_may_bind(const kiln_ctx *ctx, kiln_pool *pool, const char *function) {
    return kiln_ctx_may_use(ctx, kiln_pool_record_of(pool)->rt, &pool->log, KILN_LOGITEM_POOL_WRONG_RUNTIME, function, "pool",
                            pool->name);
}

static KILN_COLD void *alloc_unbound(kiln_ctx *ctx, kiln_pool *pool, kiln_pool_cache *cache) {
    if (!ctx_may_bind(ctx, pool, "kiln_pool_alloc")) return NULL;
    return kiln_pool_alloc_slow(pool, cache);   /* binds the cache, then allocates */
}

/* A NULL argument, or a context that is not attached (detached, or no context at all:
 * its caches are never read); logged. */
static KILN_COLD void refuse_call(const kiln_ctx *ctx, kiln_pool *pool, const char *function,
                                  const void *obj) {
    if (ctx && pool) {
        ctx_may_bind(ctx, pool, function);   /* says which: detached, or no context */
        return;
    }
    const kiln_log_sink *log = pool ? &pool->log : kiln_ctx_log(ctx);
    kiln_log_item item = ctx ? KILN_LOGITEM_POOL_NULL : KILN_LOGITEM_CONTEXT_NULL;
    const char *what = ctx ? "pool" : "context";
    if (obj) kiln_log_misuse(log, item, "%s: the %s is NULL; %p not freed", function, what, obj);
    else kiln_log_misuse(log, item, "%s: the %s is NULL", function, what);
}

void *kiln_pool_alloc(kiln_ctx *ctx, kiln_pool *pool) {
    if (kiln_unlikely(!kiln_ctx_attached(ctx) || !pool)) {
        refuse_call(ctx, pool, "kiln_pool_alloc", NULL);
        return NULL;
    }
    kiln_pool_cache *cache = &ctx->pool_caches[pool->index];
    if (kiln_unlikely(!kiln_pool_cache_bound(pool, cache))) return alloc_unbound(ctx, pool, cache);
    return kiln_pool_cache_alloc(pool, cache);
}

void *kiln_pool_alloc_at(kiln_ctx *ctx, kiln_pool *pool, const char *file, int line) {
    void *obj = kiln_pool_alloc(ctx, pool);
    if (obj && (pool->debug & KILN_DEBUG_SITES))
        kiln_pool_debug_site(pool, obj, (kiln_debug_site){ file, line });
    return obj;
}

/* obj has passed kiln_pool_owns and cache is bound or may be bound: the free hooks
 * (out of line) or the cache. */
static inline void free_to_cache(kiln_pool *pool, kiln_pool_cache *cache, void *obj) {
    if (kiln_unlikely(pool->flags & KILN_POOL_FREE_HOOKS)) kiln_pool_free_checked(pool, cache, obj);
    else kiln_pool_cache_free(pool, cache, obj);
}

/* Reached by a tail call, so that the fast path keeps no register across a call. */
static KILN_COLD void free_unbound(kiln_ctx *ctx, kiln_pool *pool, kiln_pool_cache *cache, void *obj) {
    if (ctx_may_bind(ctx, pool, "kiln_pool_free")) free_to_cache(pool, cache, obj);
}

void kiln_pool_free(kiln_ctx *ctx, kiln_pool *pool, void *obj) {
    if (!obj) return;
    if (kiln_unlikely(!kiln_ctx_attached(ctx) || !pool)) {
        refuse_call(ctx, pool, "kiln_pool_free", obj);
        return;
    }
    if (kiln_unlikely(!kiln_pool_owns(pool, obj))) {
        kiln_pool_reject_free(pool, obj);   /* destroyed, foreign or interior: logged */
        return;
    }
    kiln_pool_cache *cache = &ctx->pool_caches[pool->index];
    if (kiln_unlikely(!kiln_pool_cache_bound(pool, cache))) free_unbound(ctx, pool, cache, obj);
    else free_to_cache(pool, cache, obj);
}

/* NULL (logged, on stderr: no runtime to name) or destroyed (logged): refused. */
static bool pool_usable(kiln_pool *pool, const char *function) {
    if (!pool) {
        kiln_log_misuse(NULL, KILN_LOGITEM_POOL_NULL, "%s: the pool is NULL", function);
        return false;
    }
    if (kiln_load_relaxed(&pool->serial) != 0) return true;
    kiln_log_misuse(&pool->log, KILN_LOGITEM_POOL_DESTROYED, "%s: pool '%s' has been destroyed; refused",
                    function, pool->name);
    return false;
}

size_t kiln_pool_reserve(kiln_pool *pool, size_t count) {
    if (!pool_usable(pool, "kiln_pool_reserve")) return 0;
    return kiln_pool_reserve_objects(pool, count);
}

size_t kiln_pool_trim(kiln_pool *pool) {
    if (!pool_usable(pool, "kiln_pool_trim")) return 0;
    return kiln_pool_trim_blocks(pool);
}

void kiln_pool_flush(kiln_ctx *ctx, kiln_pool *pool) {
    if (!kiln_ctx_attached(ctx) || !pool) {
        refuse_call(ctx, pool, "kiln_pool_flush", NULL);
        return;
    }
    if (!pool_usable(pool, "kiln_pool_flush") || !ctx_may_bind(ctx, pool, "kiln_pool_flush")) return;
    /* As at detach (kiln_ctx_flush_pools): stats readers sum the bound caches under the
     * lock, so the fold and the unbind happen as one step for them. */
    pthread_mutex_lock(&ctx->rt->registry_lock);
    kiln_pool_cache_flush(pool, &ctx->pool_caches[pool->index]);
    pthread_mutex_unlock(&ctx->rt->registry_lock);
}

void kiln_ctx_flush_pools(kiln_ctx *ctx) {
    kiln_runtime *rt = ctx->rt;
    pthread_mutex_lock(&rt->registry_lock);
    for (int i = 0; i < KILN_MAX_POOLS; i++)
        if (rt->pools[i]) kiln_pool_cache_flush(rt->pools[i], &ctx->pool_caches[i]);
    pthread_mutex_unlock(&rt->registry_lock);
}

size_t kiln_stats_pools(kiln_runtime *rt, kiln_pool_stats *out, size_t cap) {
    if (!kiln_stats_list_args_ok(rt, out, cap, "kiln_stats_pools")) return 0;
    size_t count = 0;
    pthread_mutex_lock(&rt->registry_lock);
    for (int i = 0; i < KILN_MAX_POOLS; i++) {
        kiln_pool *pool = rt->pools[i];
        if (!pool || kiln_load_relaxed(&pool->serial) == 0) continue;
        if (count < cap) {
            kiln_pool_tally tally;
            tally_contexts(rt, pool, &tally);
            kiln_pool_stats_read(pool, &tally, &out[count]);
        }
        count++;
    }
    pthread_mutex_unlock(&rt->registry_lock);
    return count;
}

bool kiln_pool_stats_get(kiln_pool *pool, kiln_pool_stats *out) {
    if (!kiln_stats_args_ok(pool ? &pool->log : NULL, pool, KILN_LOGITEM_POOL_NULL, "the pool", out, sizeof *out, "kiln_pool_stats_get"))
        return false;
    kiln_runtime *rt = kiln_pool_record_of(pool)->rt;
    pthread_mutex_lock(&rt->registry_lock);
    kiln_pool_tally tally;
    tally_contexts(rt, pool, &tally);
    kiln_pool_stats_read(pool, &tally, out);
    pthread_mutex_unlock(&rt->registry_lock);
    return true;
}

void kiln_runtime_pools_fini(kiln_runtime *rt) {
    for (int i = 0; i < KILN_MAX_POOLS; i++) {
        kiln_pool *pool = rt->pools[i];
        if (!pool) continue;
        if (kiln_load_relaxed(&pool->serial) != 0) {
            kiln_log(&rt->log, KILN_LOGITEM_POOL_STILL_ALIVE,
                     "kiln_destroy: pool '%s' is still alive; destroying it", pool->name);
            kiln_pool_destroy(pool);   /* moves it to the dead list */
        }
    }
}

void kiln_runtime_pools_free(kiln_runtime *rt) {
    KILN_DEAD_LIST_FREE(kiln_pool_record, rt->dead_pools, dead_next);
}
