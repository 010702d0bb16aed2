/* runtime/types.h — every struct runtime/ files share, in one place: the runtime, its
 * contexts, the arena and pool records, the per-frame history and the tracer, with who writes
 * each field and under which lock. Functions live in the header of the file that
 * defines them (the protocols of the history and the tracer too); the only code here
 * is one inline cast. Never installed. */
#ifndef KILN_RUNTIME_TYPES_H
#define KILN_RUNTIME_TYPES_H

#include <kiln/kiln.h>
#include <kiln/trace.h>
#include <pthread.h>

#include "../alloc/arena.h"
#include "../alloc/block_pool.h"
#include "../alloc/pool.h"
#include "../alloc/heap.h"
#include "../base/atomics.h"
#include "../base/log.h"
#include "../base/log_fold.h"
#include "../base/log_recent.h"
#include "../jobs/scheduler.h"
#include "../alloc/handle_table.h"
#include "../alloc/tag_account.h"
#include "memory_snapshot.h"
#include "options.h"

#define KILN_RUNTIME_MAGIC 0x6b696c6e52554e54ull   /* "kilnRUNT" */
#define KILN_CTX_MAGIC     0x6b696c6e43545854ull   /* "kilnCTXT" */
#define KILN_CTX_DETACHED_MAGIC 0x6b696c6e44455443ull   /* "kilnDETC": detached, memory kept */

/* ---- the per-frame history (runtime/history.h has the protocol) ---- */
#define KILN_HISTORY_WORDS (sizeof(kiln_frame_record) / sizeof(uint64_t))
_Static_assert(sizeof(kiln_frame_record) % sizeof(uint64_t) == 0 &&
               _Alignof(kiln_frame_record) == _Alignof(uint64_t),
               "a frame record is copied as whole 64-bit words");

typedef struct kiln_history_slot {
    _Atomic uint64_t seq;                        /* odd while written; else 2 x writes */
    _Atomic uint64_t words[KILN_HISTORY_WORDS];  /* the record */
} kiln_history_slot;

/* A context's job and allocation counts at the last frame end, by job queue slot (unique
 * among live contexts); id tells a context attached since then (its counts started at
 * zero). */
typedef struct kiln_history_seen {
    uint32_t id;
    uint64_t jobs_run, jobs_stolen;
    uint64_t allocs;   /* frame, pool and handle allocations (runtime/history.c) */
} kiln_history_seen;

typedef struct kiln_history {
    _Atomic uint64_t  written;                      /* records so far (release) */
    /* The driver's alone. */
    uint64_t          begin_ns;                     /* of the open frame */
    kiln_history_seen seen[KILN_MAX_QUEUES];
    kiln_history_slot slots[KILN_HISTORY_FRAMES];
} kiln_history;

/* ---- the tracer (runtime/trace.h has the protocol) ---- */
typedef struct kiln_trace_slot {
    _Atomic uint64_t ts;         /* CLOCK_MONOTONIC ns */
    _Atomic uint64_t value;
    _Atomic uint64_t what;
    _Atomic uint64_t tag;
} kiln_trace_slot;

typedef struct kiln_trace_ring {
    _Atomic uint64_t        head;      /* events written (release) */
    _Atomic uint64_t        claimed;   /* head, or head + 1 while an event is written */
    struct kiln_trace_ring *next;      /* the tracer's list; immutable once listed */
    kiln_trace_slot         slots[KILN_TRACE_RING_EVENTS];
} kiln_trace_ring;

typedef struct kiln_trace {
    _Atomic bool      on;         /* read by the driver at every frame (relaxed) */
    _Atomic uint64_t  lost;       /* events not recorded: no memory for a ring */
    pthread_mutex_t   lock;       /* rings, ring_count */
    kiln_trace_ring  *rings;      /* newest first; freed by kiln_trace_fini */
    uint32_t          ring_count;
    _Atomic bool      lost_logged;
} kiln_trace;

/* ---- contexts and the runtime ---- */
/* Pools live in a fixed table of slots, and every context has one cache per slot, so
 * the fast path finds its cache by the pool's index with no lookup. 256 slots cost a
 * context 16 KiB of caches. */
#define KILN_MAX_POOLS 256

/* Handle tables live in a fixed table of slots too, one cache per slot in every
 * context. */
#define KILN_MAX_HANDLE_TABLES 64

struct kiln_handles {
    kiln_handle_table    core;        /* first: the fast paths read it through the table
                                         pointer; core.index is the table's slot */
    struct kiln_runtime *owner;       /* read-only while the table lives */
    struct kiln_handles *dead_next;   /* the runtime's list of destroyed tables */
    _Atomic uint32_t     walks;       /* walks in progress (runtime/handle_walk.c);
                                         destroy refuses while not 0 */
};

/* A context's memory is kept until kiln_destroy, even after kiln_detach (it is reused
 * by the next attach): a thief may still be looking at its job deques. */
struct kiln_ctx {
    _Atomic uint64_t magic;        /* KILN_CTX_MAGIC while attached, then
                                      KILN_CTX_DETACHED_MAGIC until kiln_destroy; atomic
                                      (seq_cst by plain use): a pin reads another's. First,
                                      so that checking a pointer that is some other kiln
                                      object reads inside that object */
    /* The public head's words (kiln_ctx_head, kiln/core.h), this context's thread's:
     * the inline fast paths of its own thread read them. */
    kiln_arena_head      *frame_head;        /* &frame_arena's head; kiln_arena_closed_head
                                                while detached or with KILN_DEBUG_CHECKS */
    kiln_pool_cache_head *pool_cache_head;   /* pool_caches, as the public head type */
    kiln_handle_cache_head *handle_cache_head;   /* handle_caches, as the public head type */
    const kiln_heap_head *heap_head;   /* rt->heap's head (read-only once set) */
    kiln_heap_cache_head *heap_cache_head;   /* heap_cache, as the public head type */
    kiln_job_queue   queue;        /* cache-line aligned fields */
    kiln_runtime    *rt;
    kiln_arena      *frame_arena;  /* the thread's own frame memory, outside jobs; owned by
                                      this context's thread, listed with the arenas */
    kiln_arena      *frame_now;    /* the frame memory its allocations take now: frame_arena,
                                      or inside a frame job the job arena of that job's epoch
                                      (jobs/scheduler.h); this thread's */
    _Atomic(kiln_arena *) job_arenas[2];  /* the frame memory of the jobs this context
                                      runs, by epoch parity, made at the first such job (NULL
                                      before; published with release for the driver): used
                                      only by this thread inside jobs of that epoch, reset by
                                      the driver at that epoch's frame end once every job of
                                      it has finished. Unlisted; a detached context's are
                                      reset, then freed, by the next frame end of their
                                      parity (under registry_lock) */
    _Atomic uint32_t id;           /* 1, 2, ... in attach order (atomic: a pin reads another's) */
    bool             is_worker;
    _Atomic bool     by_malloc;    /* attached by the malloc shape for its thread (runtime/
                                      malloc.c), not by the program: kiln_destroy detaches
                                      it without a word (relaxed: read by the destroying
                                      thread, written once by its own) */
    bool             debug_checks; /* rt->desc.debug & KILN_DEBUG_CHECKS, at hand */
    bool             frame_none_logged;  /* JOB_FRAME_MEMORY_NONE said, no job arena made
                                            since; this thread's */
    struct kiln_ctx *prev;         /* the runtime's context list (or the reuse list) */
    _Atomic(struct kiln_ctx *) next;   /* changed under registry_lock, read there, and read
                                      without it by the crash report (seq_cst by plain
                                      use: attach and detach only) */
    pthread_t        thread;       /* the thread running it (a worker's, or the one that
                                      attached it) */
    _Atomic int32_t  tid;          /* that thread's id (gettid), stored by it (relaxed: a
                                      number for the crash report, nothing published) */
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

    uint32_t          tag_current; /* kiln_tag_push's tag id (0: untagged); this thread's */
    kiln_heap_cache   heap_cache;  /* the general heap's caches and tag credit (alloc/heap.h);
                                      this thread's, counters read by stats */
};

/* An arena of a runtime: the allocator (alloc/arena.h) first, so that the public
 * kiln_arena pointer is the record's own, then what the runtime keeps about it. The
 * record outlives the arena (runtime/arenas.c says until when). */
typedef struct kiln_arena_record {
    kiln_arena                arena;       /* first: see kiln_arena_record_of */
    struct kiln_arena_record *prev, *next; /* rt->arenas, under registry_lock; once destroyed,
                                              next links dead_arenas or spare_frame_arenas */
    kiln_runtime             *rt;          /* read-only while the arena lives */
    kiln_ctx                 *frame_owner; /* a frame arena's context; NULL for user arenas */
    bool                      is_job;      /* one of frame_owner's job arenas (unlisted) */
} kiln_arena_record;

/* The record of an arena of a runtime (every kiln_arena a caller holds is one). */
static inline kiln_arena_record *kiln_arena_record_of(const kiln_arena *arena) {
    return (kiln_arena_record *)arena;
}

/* A pool of a runtime: the pool (alloc/pool.h) first, so that the public kiln_pool
 * pointer is the record's own, then its runtime. Never reused: a destroyed pool's record
 * waits on rt->dead_pools until kiln_destroy. */
typedef struct kiln_pool_record {
    kiln_pool                pool;       /* first: see kiln_pool_record_of */
    kiln_runtime            *rt;         /* read-only while the record lives */
    struct kiln_pool_record *dead_next;  /* rt->dead_pools once destroyed; registry_lock */
} kiln_pool_record;

/* The record of a pool of a runtime (every kiln_pool a caller holds is one). */
static inline kiln_pool_record *kiln_pool_record_of(const kiln_pool *pool) {
    return (kiln_pool_record *)pool;
}

_Static_assert(KILN_CTX_MAGIC == KILN_CTX_HEAD_MAGIC && KILN_CTX_DETACHED_MAGIC != KILN_CTX_HEAD_MAGIC,
               "the inline paths test the magic");
_Static_assert(offsetof(struct kiln_ctx, frame_head) == offsetof(kiln_ctx_head, frame) &&
               offsetof(struct kiln_ctx, pool_cache_head) == offsetof(kiln_ctx_head, pool_caches) &&
               offsetof(struct kiln_ctx, handle_cache_head) == offsetof(kiln_ctx_head, handle_caches) &&
               offsetof(struct kiln_ctx, heap_head) == offsetof(kiln_ctx_head, heap) &&
               offsetof(struct kiln_ctx, heap_cache_head) == offsetof(kiln_ctx_head, heap_cache),
               "kiln_ctx_head (KILN_HEAD_LAYOUT) is the context's first words");
_Static_assert(offsetof(struct kiln_ctx, magic) == 0,
               "a context's magic is its first word (kiln_ctx_word reads it so)");

struct kiln_runtime {
    kiln_block_pool  blocks;        /* the global block pool every allocator takes from;
                                       first: cache-line aligned */
    uint64_t         magic;         /* KILN_RUNTIME_MAGIC while alive */
    struct kiln_runtime *live_next; /* the process's list of live runtimes (runtime/check.c),
                                       under that list's lock */
    kiln_desc        desc;          /* every default filled in; read-only */
    kiln_option_sources option_sources;   /* each desc field's layer; read-only */
    kiln_log_sink    log;
    kiln_log_state   log_state;     /* the threshold and desc.log_file (base/log.h) */
    kiln_log_fold    log_fold;      /* repeats folded, by frame (base/log_fold.h) */
    kiln_log_recent  log_recent;    /* the newest delivered lines (base/log_recent.h) */
    int              crash_fd;      /* desc.crash_file's descriptor, or -1 (runtime/crash.c) */
    pid_t            pid;           /* the process that made it (a forked child is another) */
    char             crash_config[4096];   /* the effective options, rendered at create */
    _Atomic uint64_t api_errors;    /* calls refused for misuse, any thread (relaxed) */

    /* The frame clock. frame is written by the driver and read by anyone (relaxed:
     * a number for logs and stats, nothing is published through it). */
    _Atomic uint64_t frame;
    _Atomic(kiln_ctx *) driver;     /* the context that drives the clock; set by CAS */
    _Atomic bool     frame_open;    /* written by the driver thread only, read by it and
                                       by the crash report (relaxed: a flag for a report,
                                       nothing published through it) */

    /* Registry of contexts and arenas, for stats, frame end and destroy. */
    pthread_mutex_t  registry_lock;
    _Atomic(kiln_ctx *) contexts;   /* newest first; as kiln_ctx.next */
    uint32_t         context_count;
    uint32_t         next_ctx_id;
    kiln_arena_record *arenas;      /* newest first, frame arenas included */
    kiln_arena_record *dead_arenas;   /* records of destroyed user arenas (a stale pointer is
                                       refused through them); kept until kiln_destroy */
    kiln_arena_record *spare_frame_arenas;  /* frame-arena records free for the next attach */
    uint32_t         arena_count;
    kiln_ctx        *detached;      /* contexts kept for reuse; under registry_lock */
    kiln_ctx       **workers;       /* desc.worker_count of them */
    uint32_t         workers_started;
    kiln_job_system  jobs;
    kiln_pool       *pools[KILN_MAX_POOLS];  /* live pools by slot */
    kiln_pool_record *dead_pools;   /* destroyed pools, kept (figures, refusals) until destroy */
    uint32_t         pool_count;    /* live pools */
    uint64_t         pool_serial;   /* last serial handed out; never reused */

    /* Handle tables (runtime/handles.c). The epochs: see runtime/handle_reclaim.h. */
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
    /* Tags (runtime/tags.h): published once each, freed at kiln_destroy. */
    _Atomic(kiln_tag_account *) tags[KILN_MAX_TAGS];
    /* The accounts of what no tag holds: untagged allocators and heap allocations, and
     * frame memory (frame and job arenas). Never budgeted, never listed as tags; with
     * the tags' roots, the heap's free memory and the block pool's free blocks they add
     * up to what kiln reserved (kiln_stats_memory). */
    kiln_tag_account untagged_account, frame_account;
    uint32_t         tag_count;     /* tags made; under registry_lock */
    uint32_t         tag_salt;      /* the high half of this runtime's tag ids, unique among
                                       live runtimes (runtime/check.c); read-only */
    /* The general heap (runtime/heap.h). heap_open: set at create, cleared under the
     * process's live-runtime lock before the heap goes, so that a lookup of a bare
     * pointer (kiln_heap_usable_size), which holds that lock, never meets a heap being
     * torn down. */
    kiln_heap        heap;
    bool             heap_open;
    /* The heap's shared cache: a thread with no context of this runtime (the malloc
     * shape's, runtime/malloc.c) allocates and frees through it under orphan_lock, and
     * flushes it before letting go, so no figure waits in it. */
    pthread_mutex_t  orphan_lock;
    kiln_heap_cache  orphan_cache;
    kiln_heap_tag_sums tag_sums;    /* scratch of the tags' figures, under registry_lock */
    kiln_memory_snapshot memory_snapshot;   /* each allocator at the last frame end
                                       (runtime/memory_snapshot.h): driver-written */
    kiln_site_registry sites;       /* KILN_DEBUG_SITES: the site counts (alloc/debug.h),
                                       blocks.sites points here; entries NULL without it */
};

#endif /* KILN_RUNTIME_TYPES_H */
