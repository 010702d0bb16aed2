/* runtime/runtime_internal.h — the runtime and context structs that runtime/ files
 * share. Never installed. */
#ifndef KILN_RUNTIME_INTERNAL_H
#define KILN_RUNTIME_INTERNAL_H

#include <kiln/kiln.h>
#include <pthread.h>

#include "../alloc/arena.h"
#include "../alloc/block_pool.h"
#include "../alloc/pool.h"
#include "../base/atomics.h"
#include "../base/heap.h"     /* every runtime/ file allocates through it */
#include "../base/log.h"
#include "../jobs/scheduler.h"
#include "handles.h"
#include "history.h"
#include "trace.h"

#define KILN_RUNTIME_MAGIC 0x6b696c6e52554e54ull   /* "kilnRUNT" */
#define KILN_CTX_MAGIC     0x6b696c6e43545854ull   /* "kilnCTXT" */
#define KILN_CTX_DETACHED_MAGIC 0x6b696c6e44455443ull   /* "kilnDETC": detached, memory kept */

/* Pools live in a fixed table of slots, and every context has one cache per slot, so
 * the fast path finds its cache by the pool's index with no lookup. 256 slots cost a
 * context 16 KiB of caches. */
#define KILN_MAX_POOLS 256

/* A context's memory is kept until kiln_destroy, even after kiln_detach (it is reused
 * by the next attach): a thief may still be looking at its job deques. */
struct kiln_ctx {
    _Atomic uint64_t magic;        /* KILN_CTX_MAGIC while attached, then
                                      KILN_CTX_DETACHED_MAGIC until kiln_destroy; atomic
                                      (seq_cst by plain use): a pin reads another's. First,
                                      so that checking a pointer that is some other kiln
                                      object reads inside that object */
    kiln_job_queue   queue;        /* cache-line aligned fields */
    kiln_runtime    *rt;
    kiln_arena      *frame_arena;  /* owned by this context's thread */
    _Atomic uint32_t id;           /* 1, 2, ... in attach order (atomic: a pin reads another's) */
    bool             is_worker;
    bool             debug_checks; /* rt->desc.debug & KILN_DEBUG_CHECKS, at hand */
    struct kiln_ctx *prev, *next;  /* the runtime's context list (or the reuse list);
                                      under registry_lock */
    pthread_t        thread;       /* workers: the thread running it */
    kiln_pool_cache  pool_caches[KILN_MAX_POOLS + 1];  /* by pool index; this thread's; the
                                                          last is never bound (destroyed pools) */
    /* Handle tables: this thread's cache of free slots per table, and (for a thread
     * outside the frame clock) the reclaim epoch at its last quiescent point, stored
     * by this thread (seq_cst), read by the driver at frame end. */
    _Atomic uint64_t  quiescent_epoch;
    _Atomic bool      in_background;   /* a worker running a background job (seq_cst) */
    kiln_handle_cache handle_caches[KILN_MAX_HANDLE_TABLES];

    /* Observability (runtime/trace.c): this context's trace ring, made by its own
     * thread when it first records and kept with the context's memory until
     * kiln_destroy. This thread's alone; writers find rings on the tracer's list. */
    kiln_trace_ring *trace_ring;
};

struct kiln_runtime {
    kiln_block_pool  pool;          /* first: cache-line aligned */
    uint64_t         magic;         /* KILN_RUNTIME_MAGIC while alive */
    kiln_desc        desc;          /* every default filled in; read-only */
    kiln_log_sink    log;
    _Atomic uint64_t api_errors;    /* calls refused for misuse, any thread (relaxed) */

    /* The frame clock. frame is written by the driver and read by anyone (relaxed:
     * a number for logs and stats, nothing is published through it). */
    _Atomic uint64_t frame;
    _Atomic(kiln_ctx *) driver;     /* the context that drives the clock; set by CAS */
    bool             frame_open;    /* driver thread only */

    /* Registry of contexts and arenas, for stats, frame end and destroy. */
    pthread_mutex_t  registry_lock;
    kiln_ctx        *contexts;      /* newest first */
    uint32_t         context_count;
    uint32_t         next_ctx_id;
    kiln_arena      *arenas;        /* newest first, frame arenas included */
    kiln_arena      *dead_arenas;   /* records of destroyed user arenas (a stale pointer is
                                       refused through them); kept until kiln_destroy */
    kiln_arena      *spare_frame_arenas;  /* frame-arena records free for the next attach */
    uint32_t         arena_count;
    kiln_ctx        *detached;      /* contexts kept for reuse; under registry_lock */
    kiln_ctx       **workers;       /* desc.worker_count of them */
    uint32_t         workers_started;
    kiln_job_system  jobs;
    kiln_pool       *pools[KILN_MAX_POOLS];  /* live pools by slot */
    kiln_pool       *dead_pools;    /* destroyed pools, kept (figures, refusals) until destroy */
    uint32_t         pool_count;    /* live pools */
    uint64_t         pool_serial;   /* last serial handed out; never reused */

    /* Handle tables (runtime/handles.c). The epochs: see runtime/handles.h. */
    kiln_handles    *handle_tables[KILN_MAX_HANDLE_TABLES];  /* live tables by slot; registry_lock */
    kiln_handles    *dead_handle_tables;   /* destroyed, kept until kiln_destroy */
    _Atomic uint32_t handle_table_count;   /* live tables; changed under registry_lock */
    _Atomic uint64_t handle_epoch;         /* the frame epoch: frame ends so far + 1, bumped by
                                              the driver (seq_cst) once a frame's jobs are done;
                                              workers' frame memory and handle reuse both go by it */
    _Atomic uint64_t handle_safe_epoch;    /* slots freed before this epoch are reusable */
    uint32_t         reclaim_stalled_frames;  /* driver only: frame ends with safe held back */

    /* Observability: the per-frame history (runtime/history.c) and the tracer
     * (runtime/trace.c); their headers say who writes what. */
    kiln_trace       trace;
    kiln_history     history;
};

/* A new context (a worker's when is_worker). NULL on failure, logged. Any thread. */
KILN_INTERNAL kiln_ctx *kiln_context_new(kiln_runtime *rt, bool is_worker);

/* Starts desc.worker_count workers; false (logged) when a thread cannot start. */
KILN_INTERNAL bool kiln_workers_start(kiln_runtime *rt);
/* Stops and joins the workers and detaches their contexts. */
KILN_INTERNAL void kiln_workers_stop(kiln_runtime *rt);
/* kiln_destroy, last: frees the memory of every detached context. */
KILN_INTERNAL void kiln_contexts_free(kiln_runtime *rt);

/* Gives every pool cache of ctx back to its pool's depot. Takes registry_lock. */
KILN_INTERNAL void kiln_ctx_flush_pools(kiln_ctx *ctx);

/* kiln_destroy: destroys the pools still alive (logged) and frees every slot. */
KILN_INTERNAL void kiln_runtime_pools_fini(kiln_runtime *rt);

/* The sampled guard audit (KILN_DEBUG_GUARDS) of every live pool, and of the arenas the
 * calling thread owns. Take registry_lock. */
KILN_INTERNAL void kiln_runtime_audit_pools(kiln_runtime *rt);
KILN_INTERNAL void kiln_runtime_audit_arenas(kiln_runtime *rt);

/* kiln_frame_end, after the frame's jobs: both audits when the bit is on. */
static inline void kiln_runtime_audit(kiln_runtime *rt) {
    if (kiln_likely(!(rt->desc.debug & KILN_DEBUG_GUARDS))) return;
    kiln_runtime_audit_pools(rt);
    kiln_runtime_audit_arenas(rt);
}

/* Makes an arena of this runtime and registers it. NULL when the pool refuses.
 * Concurrency: any thread (takes registry_lock). */
KILN_INTERNAL kiln_arena *kiln_runtime_arena_new(kiln_runtime *rt, const char *name, bool is_frame);

/* Unregisters and frees an arena. Concurrency: any thread (takes registry_lock). */
KILN_INTERNAL void kiln_runtime_arena_delete(kiln_runtime *rt, kiln_arena *arena);

/* kiln_destroy, once every arena of rt is gone: frees rt's arena records (runtime/arenas.c),
 * even when none was ever made. */
KILN_INTERNAL void kiln_runtime_arenas_fini(kiln_runtime *rt);

/* Whether rt looks like a live runtime; logs ITEM_NULL / stale otherwise. */
KILN_INTERNAL bool kiln_runtime_check(const kiln_runtime *rt, const char *function);

/* rt's log when rt is a live runtime, else NULL (the stderr default): a refusal of
 * another argument never reads a dead runtime. Concurrency: any thread. */
KILN_INTERNAL const kiln_log_sink *kiln_runtime_log(const kiln_runtime *rt);

/* The argument check of a list call (kiln_stats_pools and the like, kiln_history_read):
 * a live runtime (else RUNTIME_NULL / RUNTIME_INVALID), and out unless cap is 0 (else
 * STATS_NULL_OUT through rt's log). Any thread. */
KILN_INTERNAL bool kiln_stats_list_args_ok(const kiln_runtime *rt, const void *out, size_t cap,
                                           const char *function);

/* The argument check of a kiln_*_stats_get: true when object and out are both given;
 * otherwise logs through log which is NULL (null_item, or STATS_NULL_OUT), zeroes *out
 * when there is one, and returns false. */
KILN_INTERNAL bool kiln_stats_args_ok(const kiln_log_sink *log, const void *object,
                                      kiln_log_item null_item, const char *noun, void *out,
                                      size_t out_size, const char *function);

/* Whether ctx looks like an attached context; logs otherwise: CONTEXT_DETACHED through
 * its runtime's log (a detached context's memory lives until kiln_destroy), or
 * CONTEXT_NULL / CONTEXT_INVALID on stderr. Concurrency: ctx's own thread. */
KILN_INTERNAL bool kiln_ctx_check(const kiln_ctx *ctx, const char *function);

/* The log of the runtime ctx belongs to, attached or detached; NULL (the stderr
 * default) when ctx is NULL or not a context. For refusing a valid context's other
 * arguments (a NULL pool or table) through its runtime. Concurrency: ctx's own thread. */
KILN_INTERNAL const kiln_log_sink *kiln_ctx_log(const kiln_ctx *ctx);

/* Whether ctx is an attached context: the fast paths' check, one load and a compare of
 * the context's first word (relaxed: a context is its own thread's; another thread's
 * view only matters for misuse, which is then refused on the slow path). */
static inline bool kiln_ctx_attached(const kiln_ctx *ctx) {
    return ctx && kiln_load_relaxed(&ctx->magic) == KILN_CTX_MAGIC;
}

/* Whether a non-NULL ctx may use an object of runtime owner (a pool or a handle table:
 * kind and name say which, for the message): attached, and of that runtime. Otherwise
 * logs through the object's log CONTEXT_DETACHED, CONTEXT_INVALID (not a context at
 * all) or wrong_runtime_item, and returns false. Concurrency: ctx's own thread. */
KILN_INTERNAL bool kiln_ctx_may_use(const kiln_ctx *ctx, const kiln_runtime *owner,
                                    const kiln_log_sink *log, kiln_log_item wrong_runtime_item,
                                    const char *function, const char *kind, const char *name);

#endif /* KILN_RUNTIME_INTERNAL_H */
