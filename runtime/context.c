/* runtime/context.c — thread contexts: attach and detach, the workers' contexts and
 * threads, and the memory contexts keep for reuse. */
#define _GNU_SOURCE   /* pthread_setname_np, gettid */
#include "context.h"
#include "arenas.h"
#include "check.h"
#include "handles.h"
#include "heap.h"
#include "thread_ctx.h"
#include "pools.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../base/fault_signals.h"
#include "../base/sys_alloc.h"

/* Under registry_lock: a kept context to reuse (*reused set), or a new zeroed one. */
static kiln_ctx *context_memory(kiln_runtime *rt, bool *reused) {
    kiln_ctx *ctx = rt->detached;
    *reused = ctx != NULL;
    if (ctx) {
        rt->detached = ctx->next;
        return ctx;
    }
    return kiln_sys_zeroed(KILN_CACHE_LINE, sizeof *ctx);
}

/* Under registry_lock: keeps ctx for reuse. */
static void context_keep(kiln_runtime *rt, kiln_ctx *ctx) {
    ctx->prev = NULL;
    ctx->next = rt->detached;
    rt->detached = ctx;
}

kiln_ctx *kiln_context_new(kiln_runtime *rt, bool is_worker) {
    bool reused;
    pthread_mutex_lock(&rt->registry_lock);
    kiln_ctx *ctx = context_memory(rt, &reused);
    uint32_t id = rt->next_ctx_id++;
    pthread_mutex_unlock(&rt->registry_lock);
    if (!ctx) {
        kiln_log(&rt->log, KILN_LOGITEM_CONTEXT_OUT_OF_MEMORY, "%s: no memory for %s "
                 "context (%zu bytes)", is_worker ? "kiln_create" : "kiln_attach",
                 is_worker ? "a worker's" : "a", sizeof *ctx);
        return NULL;
    }
    for (int i = 0; i <= KILN_MAX_POOLS; i++) kiln_pool_cache_unbind(&ctx->pool_caches[i]);
    kiln_handle_caches_init(ctx->handle_caches, KILN_MAX_HANDLE_TABLES);
    /* Attaching is a quiescent point: the new thread holds no pointer from a get. */
    kiln_store_seq_cst(&ctx->quiescent_epoch, kiln_load_seq_cst(&rt->handle_epoch));
    /* A pin may read a reused context's id, runtime and kind while this attach sets it up
     * (it then names the new context; jobs.h): the id is atomic, and the runtime and the
     * kind, the same for a reused context, are not written again. */
    kiln_store_relaxed(&ctx->id, id);
    if (!reused) ctx->rt = rt;
    if (ctx->is_worker != is_worker) ctx->is_worker = is_worker;
    ctx->debug_checks = (rt->desc.debug & KILN_DEBUG_CHECKS) != 0;
    ctx->tag_current = 0;   /* a reused context's last thread's tag is not this one's */
    kiln_store_relaxed(&ctx->by_malloc, false);
    kiln_ctx_heap_attach(ctx);
    char name[48];
    snprintf(name, sizeof name, is_worker ? "frame worker ctx %u" : "frame ctx %u", id);
    ctx->frame_arena = kiln_runtime_arena_new(rt, name, ctx);   /* the pool logs a refusal */
    ctx->frame_now = ctx->frame_arena;
    if (!ctx->frame_arena || !kiln_job_queue_init(&rt->jobs, &ctx->queue, ctx, id, is_worker)) {
        if (ctx->frame_arena) kiln_runtime_arena_delete(rt, ctx->frame_arena);
        ctx->frame_arena = ctx->frame_now = NULL;
        if (reused) {   /* thieves may have seen it in an earlier life: keep it */
            pthread_mutex_lock(&rt->registry_lock);
            context_keep(rt, ctx);
            pthread_mutex_unlock(&rt->registry_lock);
        } else {        /* never published: nobody can be looking at it */
            kiln_job_queue_fini(&ctx->queue);
            kiln_sys_zeroed_free(ctx, sizeof *ctx);
        }
        return NULL;
    }
    /* A reused context's job arenas are this thread's from now on (KILN_DEBUG_OWNERSHIP). */
    for (int p = 0; p < 2; p++) {
        kiln_arena *job_arena = kiln_load_relaxed(&ctx->job_arenas[p]);
        if (job_arena) kiln_arena_debug_claim(job_arena);
    }
    /* KILN_DEBUG_CHECKS judges every frame allocation (a background job's is refused):
     * the inline bump stays closed. */
    ctx->frame_head = ctx->debug_checks ? (kiln_arena_head *)&kiln_arena_closed_head
                                        : (kiln_arena_head *)(void *)ctx->frame_arena;
    ctx->pool_cache_head = (kiln_pool_cache_head *)(void *)ctx->pool_caches;
    ctx->handle_cache_head = kiln_handle_cache_head_of(ctx->handle_caches);
    ctx->heap_head = &rt->heap.head;
    ctx->heap_cache_head = (kiln_heap_cache_head *)(void *)&ctx->heap_cache;
    ctx->magic = KILN_CTX_MAGIC;
    pthread_mutex_lock(&rt->registry_lock);
    ctx->prev = NULL;
    ctx->next = rt->contexts;
    if (rt->contexts) rt->contexts->prev = ctx;
    rt->contexts = ctx;
    rt->context_count++;
    pthread_mutex_unlock(&rt->registry_lock);
    return ctx;
}

kiln_ctx *kiln_attach(kiln_runtime *rt) {
    if (!kiln_runtime_check(rt, "kiln_attach")) return NULL;
    if (!kiln_outside_log_callback(&rt->log, "kiln_attach")) return NULL;
    kiln_ctx *ctx = kiln_context_new(rt, false);
    if (ctx) {
        ctx->thread = pthread_self();
        kiln_store_relaxed(&ctx->tid, (int32_t)gettid());   /* the crash report's */
        kiln_thread_ctx_attached(ctx);   /* kiln_ctx_current */
    }
    return ctx;
}

kiln_ctx *kiln_attach_layout(kiln_runtime *rt, uint32_t layout) {
    if (kiln_likely(layout == KILN_HEAD_LAYOUT)) return kiln_attach(rt);
    if (!kiln_runtime_check(rt, "kiln_attach")) return NULL;
    kiln_log_misuse(&rt->log, KILN_LOGITEM_HEAD_LAYOUT_MISMATCH,
                    "kiln_attach: the caller was compiled against kiln headers of inline layout "
                    "%u, and this library's layout is %u: its inline fast paths would misread "
                    "kiln's objects; refused (rebuild it against this library's headers, or "
                    "with KILN_NO_INLINE)", layout, KILN_HEAD_LAYOUT);
    return NULL;
}

void kiln_contexts_frame_end(kiln_runtime *rt, uint64_t epoch) {
    unsigned parity = (unsigned)(epoch & 1);
    pthread_mutex_lock(&rt->registry_lock);
    for (kiln_ctx *ctx = rt->contexts; ctx; ctx = ctx->next) {
        /* acquire: pairs with the release that published a job arena made meanwhile */
        kiln_arena *arena = kiln_load_acquire(&ctx->job_arenas[parity]);
        if (arena) kiln_arena_reset_all(arena);
    }
    for (kiln_ctx *ctx = rt->detached; ctx; ctx = ctx->next) kiln_job_arena_free(ctx, parity);
    pthread_mutex_unlock(&rt->registry_lock);
}

void kiln_contexts_free(kiln_runtime *rt) {
    for (kiln_ctx *ctx = rt->detached, *next; ctx; ctx = next) {
        next = ctx->next;
        for (unsigned p = 0; p < 2; p++) kiln_job_arena_free(ctx, p);
        kiln_job_queue_fini(&ctx->queue);
        kiln_sys_zeroed_free(ctx, sizeof *ctx);
    }
    rt->detached = NULL;
}

/* Detaches ctx on its own thread (or, for workers, after their thread has ended). */
static void context_release(kiln_ctx *ctx) {
    kiln_runtime *rt = ctx->rt;
    /* A detaching driver closes the frame it may have left open, then hands the clock
     * back. Only this thread ever stores ctx into driver, so the relaxed load is exact;
     * the release store pairs with the acquire of the next driver's claim (is_driver),
     * which therefore sees frame_open false. */
    if (kiln_load_relaxed(&rt->driver) == ctx) {
        kiln_store_relaxed(&rt->frame_open, false);
        ctx->queue.drives_clock = false;   /* a later driver writes the epoch */
        kiln_store_release(&rt->driver, NULL);
    }
    kiln_job_queue_retire(&rt->jobs, &ctx->queue);   /* runs what it still holds */
    kiln_ctx_flush_pools(ctx);   /* cached objects go back to the depots, not lost */
    kiln_ctx_flush_heap(ctx);    /* and the heap's, with the credit drawn from tags */
    kiln_ctx_flush_handles(ctx); /* and cached slots to their tables */
    /* Off the context list before its frame arena goes: kiln_stats_contexts reads the
     * frame arena of every listed context (under registry_lock). */
    pthread_mutex_lock(&rt->registry_lock);
    if (ctx->prev) ctx->prev->next = ctx->next;
    else rt->contexts = ctx->next;
    if (ctx->next) ctx->next->prev = ctx->prev;
    rt->context_count--;
    pthread_mutex_unlock(&rt->registry_lock);
    ctx->frame_head = (kiln_arena_head *)&kiln_arena_closed_head;   /* later calls: checked */
    kiln_runtime_arena_delete(rt, ctx->frame_arena);
    ctx->frame_arena = ctx->frame_now = NULL;   /* its job arenas stay: jobs of a frame not
                                                   yet ended may have left memory there */
    ctx->magic = KILN_CTX_DETACHED_MAGIC;   /* a later use is told apart, through rt's log */
    kiln_thread_ctx_released(ctx);   /* this thread's kiln_ctx_current no more */
    pthread_mutex_lock(&rt->registry_lock);
    context_keep(rt, ctx);
    pthread_mutex_unlock(&rt->registry_lock);
}

void kiln_detach(kiln_ctx *ctx) {
    if (!ctx) return;
    if (!kiln_ctx_check(ctx, "kiln_detach")) return;
    if (!kiln_outside_log_callback(&ctx->rt->log, "kiln_detach")) return;
    if (ctx->is_worker) {
        kiln_log_misuse(&ctx->rt->log, KILN_LOGITEM_CONTEXT_IS_WORKER,
                        "kiln_detach: context %u belongs to a worker; kiln_destroy detaches it",
                        ctx->id);
        return;
    }
    if (ctx->queue.job_depth > 0) {   /* its frame arena and queue are in use below us */
        kiln_log_misuse(&ctx->rt->log, KILN_LOGITEM_CONTEXT_INSIDE_JOB,
                        "kiln_detach: context %u is running a job; detach between jobs", ctx->id);
        return;
    }
    context_release(ctx);
}

static void *worker_main(void *arg) {
    kiln_ctx *ctx = arg;
    kiln_take_fault_signals();   /* a fault in a job reaches the crash report */
    uint32_t index = 0;   /* rt->workers[index] was set before this thread started */
    while (ctx->rt->workers[index] != ctx) index++;
    char name[16];        /* the most a thread name holds, its NUL included */
    snprintf(name, sizeof name, "kiln-worker-%u", index + 1);
    pthread_setname_np(pthread_self(), name);   /* debuggers, profilers, the crash report */
    kiln_store_relaxed(&ctx->tid, (int32_t)gettid());   /* named: kiln_workers_start goes on */
    kiln_arena_debug_claim(ctx->frame_arena);   /* its frame arena is this thread's */
    kiln_thread_ctx_attached(ctx);   /* kiln_ctx_current, and the malloc shape's */
    kiln_jobs_worker_loop(&ctx->rt->jobs, &ctx->queue);
    return NULL;
}

bool kiln_workers_start(kiln_runtime *rt) {
    uint32_t n = rt->desc.worker_count;
    if (n == 0) return true;
    rt->workers = kiln_sys_calloc(n, sizeof *rt->workers);
    if (!rt->workers) {
        kiln_log(&rt->log, KILN_LOGITEM_RUNTIME_OUT_OF_MEMORY,
                 "kiln_create: no memory for the table of %u workers (%zu bytes)", n,
                 (size_t)n * sizeof *rt->workers);
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        kiln_ctx *ctx = kiln_context_new(rt, true);
        if (!ctx) return false;
        rt->workers[i] = ctx;
        if (pthread_create(&ctx->thread, NULL, worker_main, ctx) != 0) {
            kiln_log(&rt->log, KILN_LOGITEM_WORKER_START_FAILED,
                     "kiln_create: worker %u of %u could not start", i + 1, n);
            context_release(ctx);
            rt->workers[i] = NULL;
            return false;
        }
        rt->workers_started = i + 1;
    }
    /* Each worker is running, its thread id and name set, before create returns: a crash
     * report from then on names every worker's thread. */
    for (uint32_t i = 0; i < n; i++)
        while (kiln_load_relaxed(&rt->workers[i]->tid) == 0) sched_yield();
    return true;
}

void kiln_workers_stop(kiln_runtime *rt) {
    kiln_jobs_shutdown(&rt->jobs);
    for (uint32_t i = 0; i < rt->workers_started; i++) pthread_join(rt->workers[i]->thread, NULL);
    /* The threads are gone: this thread now owns their contexts (the joins ordered it). */
    for (uint32_t i = 0; i < rt->workers_started; i++) context_release(rt->workers[i]);
    kiln_sys_free(rt->workers);
    rt->workers = NULL;
    rt->workers_started = 0;
}

kiln_runtime *kiln_ctx_runtime(const kiln_ctx *ctx) {
    if (!kiln_ctx_check(ctx, "kiln_ctx_runtime")) return NULL;
    return ctx->rt;
}
