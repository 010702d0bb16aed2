/* runtime/context.c — thread contexts: attach, detach, and the frame arena each
 * context owns. */
#include "runtime_internal.h"

#include <stdio.h>
#include <stdlib.h>

bool kiln_ctx_check(const kiln_ctx *ctx, const char *function) {
    if (kiln_likely(ctx && ctx->magic == KILN_CTX_MAGIC)) return true;
    kiln_log_misuse(NULL, ctx ? "CONTEXT_INVALID" : "CONTEXT_NULL", "%s: the context is %s",
                    function, ctx ? "not an attached context" : "NULL");
    return false;
}

kiln_ctx *kiln_attach(kiln_runtime *rt) {
    if (!kiln_runtime_check(rt, "kiln_attach")) return NULL;
    kiln_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        kiln_log(&rt->log, KILN_LOG_ERROR, "CONTEXT_OUT_OF_MEMORY",
                 "kiln_attach: no memory for a context");
        return NULL;
    }
    for (int i = 0; i < KILN_MAX_POOLS; i++) kiln_pool_cache_unbind(&ctx->pool_caches[i]);
    pthread_mutex_lock(&rt->registry_lock);
    ctx->id = rt->next_ctx_id++;
    pthread_mutex_unlock(&rt->registry_lock);

    char name[48];
    snprintf(name, sizeof name, "frame ctx %u", ctx->id);
    ctx->frame_arena = kiln_runtime_arena_new(rt, name, true);
    if (!ctx->frame_arena) {   /* the pool logged why */
        free(ctx);
        return NULL;
    }
    ctx->rt = rt;
    ctx->magic = KILN_CTX_MAGIC;
    pthread_mutex_lock(&rt->registry_lock);
    ctx->next = rt->contexts;
    if (rt->contexts) rt->contexts->prev = ctx;
    rt->contexts = ctx;
    rt->context_count++;
    pthread_mutex_unlock(&rt->registry_lock);
    return ctx;
}

void kiln_detach(kiln_ctx *ctx) {
    if (!ctx) return;
    if (!kiln_ctx_check(ctx, "kiln_detach")) return;
    kiln_runtime *rt = ctx->rt;
    /* A detaching driver closes the frame it may have left open, then hands the clock
     * back. Only this thread ever stores ctx into driver, so the relaxed load is exact;
     * the release store pairs with the acquire of the next driver's claim (is_driver),
     * which therefore sees frame_open false. */
    if (atomic_load_explicit(&rt->driver, memory_order_relaxed) == ctx) {
        rt->frame_open = false;
        atomic_store_explicit(&rt->driver, NULL, memory_order_release);
    }
    kiln_ctx_flush_pools(ctx);   /* cached objects go back to the depots, not lost */
    pthread_mutex_lock(&rt->registry_lock);
    if (ctx->prev) ctx->prev->next = ctx->next;
    else rt->contexts = ctx->next;
    if (ctx->next) ctx->next->prev = ctx->prev;
    rt->context_count--;
    pthread_mutex_unlock(&rt->registry_lock);
    kiln_runtime_arena_delete(rt, ctx->frame_arena);
    ctx->magic = 0;
    free(ctx);
}

kiln_runtime *kiln_ctx_runtime(const kiln_ctx *ctx) {
    return ctx ? ctx->rt : NULL;
}

kiln_arena *kiln_frame_arena(kiln_ctx *ctx) {
    if (!kiln_ctx_check(ctx, "kiln_frame_arena")) return NULL;
    return ctx->frame_arena;
}

void *kiln_frame_alloc(kiln_ctx *ctx, size_t size, size_t align) {
    if (kiln_unlikely(!ctx)) {
        kiln_log_misuse(NULL, "CONTEXT_NULL", "kiln_frame_alloc: the context is NULL");
        return NULL;
    }
    return kiln_arena_bump(ctx->frame_arena, size, align);
}
