/* runtime/handles.h — the handle table's layout, the per-context cache of free slots,
 * the reuse ring, and what the frame clock calls. Never installed. runtime/handles.c
 * owns the table and the get/alloc/free paths; runtime/handle_reuse.c owns when a freed
 * slot may be handed out again.
 *
 * Who owns what:
 *   slot->gen           any thread: get loads it (acquire); alloc stores it (release,
 *                       after zeroing the item); free moves it odd -> even by CAS.
 *   kiln_handle_cache   one context's cache of one table: written by that context's
 *                       thread only; its counts are atomics so stats readers may sum them.
 *   the reuse ring,     under the table's lock: a batch exchange (once per 32 calls of a
 *   fresh               context) and the frame end, which promotes entries.
 *
 * Slot accounting (all counts summed over contexts):
 *   fresh == live + every cache's ready and freed counts + ring entries + retired
 *   live  == allocs - frees
 *
 * Reuse (the reclaim epoch): rt->handle_epoch counts frame ends. A free records the
 * epoch it read (after its CAS made the handle stale) with the slot. A frame end, after
 * every frame job has finished, bumps the epoch, waits until every worker is idle or
 * runs frame jobs that read the new epoch (kiln_jobs_settle_workers: a frame job that
 * started before the bump, from whatever submitter, has returned), and computes safe =
 * the new epoch, lowered to the quiescent epoch of every attached thread outside the
 * frame clock and of every worker running a background job. A slot freed at epoch F is reusable once
 * safe > F: a frame end and each such thread's quiescent point came after the free, so
 * no pointer from get taken before the free is still in use. */
#ifndef KILN_RUNTIME_HANDLES_H
#define KILN_RUNTIME_HANDLES_H

#include <kiln/handles.h>
#include <pthread.h>

#include "../base/atomics.h"
#include "../base/common.h"
#include "../alloc/debug.h"
#include "../base/log.h"

#define KILN_MAX_HANDLE_TABLES   64
#define KILN_HANDLES_BATCH       32          /* slot indices per cache list */
#define KILN_HANDLE_INDEX_MASK   0xffffffu   /* 24 bits of slot index */
#define KILN_HANDLE_TAG_SHIFT    24          /* then 8 bits of table tag */
#define KILN_HANDLES_MAX_CAPACITY KILN_HANDLE_INDEX_MASK
#define KILN_HANDLES_STALE_STRIPES 8         /* stale-lookup counters, a cache line each */
/* Frame ends with the reclaim held back by one outside thread before it is logged. */
#define KILN_HANDLES_STALL_WARN_FRAMES 120u

/* The header before every item. An item starts header bytes after its slot. */
typedef struct kiln_handle_slot {
    _Atomic uint32_t gen;          /* odd: live; even: free (0: never used, still zero) */
} kiln_handle_slot;

/* A freed slot and the reclaim epoch of its free (truncated: differences count). */
typedef struct kiln_reuse_entry {
    uint32_t index;
    uint32_t epoch;
} kiln_reuse_entry;

typedef struct kiln_handle_stripe {
    _Alignas(KILN_CACHE_LINE) _Atomic uint64_t count;
} kiln_handle_stripe;

/* One context's cache of one table. ready: free slots safe to hand out; freed: slots
 * this context freed, not yet given to the table. */
typedef struct kiln_handle_cache {
    _Atomic uint64_t serial;       /* the table life this cache is bound to; 0: unbound */
    _Atomic uint32_t ready_count;
    _Atomic uint32_t freed_count;
    _Atomic uint32_t freed_last_epoch;  /* epoch of the newest entry of freed[] */
    _Atomic uint64_t allocs;       /* owner-written counters, read by stats */
    _Atomic uint64_t frees;
    uint32_t         ready[KILN_HANDLES_BATCH];   /* popped from the top */
    kiln_reuse_entry freed[KILN_HANDLES_BATCH];   /* in the order of the frees */
} kiln_handle_cache;

struct kiln_handles {
    /* Read by get on every call; written only at create (and capacity = 0 at destroy,
     * when no thread may use the table). */
    char            *slots;
    size_t           stride;          /* bytes per slot: header + item, aligned */
    size_t           header;          /* bytes before the item: the slot rounded up to the align */
    uint32_t         capacity;
    uint32_t         tag_bits;        /* tag << KILN_HANDLE_TAG_SHIFT */
    uint64_t         serial;          /* process-unique, never reused; 0 once destroyed */

    /* Read-only while the table lives. */
    size_t           item_size;
    size_t           map_bytes;
    uint32_t         index;           /* this table's cache slot in every context */
    uint32_t         gen_max;         /* a slot is retired before its generation passes this */
    struct kiln_runtime *owner;
    kiln_log_sink    log;
    char             name[48];
    uint32_t         capacity_asked;  /* kept for the stats of a destroyed table */
    kiln_debug_site *sites;           /* KILN_DEBUG_SITES: the site of each slot's item */

    /* Statistics any thread adds to (relaxed). */
    kiln_handle_stripe stale[KILN_HANDLES_STALE_STRIPES];
    _Alignas(KILN_CACHE_LINE) _Atomic uint64_t foreign;
    _Atomic uint64_t double_frees;
    _Atomic uint64_t retired;
    _Atomic uint64_t failures;
    _Atomic uint64_t peak_live;
    _Atomic int      full_warned;     /* 1 after a full table was logged, 0 after a success */

    /* Batch exchanges: under lock. The reuse ring holds every freed slot not handed out
     * again, oldest first: positions [head, promoted) are reusable, [promoted, tail)
     * wait for the safe epoch (limbo). Positions only grow; position p is ring[p %
     * capacity], and tail - head <= capacity because each slot is in the ring once. */
    pthread_mutex_t  lock;
    uint32_t         fresh;           /* slots [0, fresh) have been handed out at least once */
    kiln_reuse_entry *ring;           /* capacity entries, in the slots' mapping */
    uint64_t         ring_head, ring_promoted, ring_tail;
    _Atomic uint32_t reusable_count;  /* promoted - head, for stats readers */
    _Atomic uint32_t limbo_count;     /* tail - promoted, for stats readers */
    _Atomic uint64_t folded_allocs;   /* counters of caches that were unbound */
    _Atomic uint64_t folded_frees;

    struct kiln_handles *dead_next;   /* the runtime's list of destroyed tables */
};

static inline kiln_handle_slot *kiln_handle_slot_at(const kiln_handles *table, uint32_t index) {
    return (kiln_handle_slot *)(table->slots + (size_t)index * table->stride);
}

/* Whether a slot freed at epoch freed_epoch may be handed out, given the safe epoch. */
static inline bool kiln_epoch_reusable(uint32_t freed_epoch, uint64_t safe) {
    return (int32_t)(freed_epoch - (uint32_t)safe) < 0;
}

/* ---- runtime/handle_reuse.c ---- */

/* The safe epoch. acquire: pairs with the frame end's release, so every read of an item
 * through an old handle happens before a slot judged reusable with it is zeroed. */
KILN_INTERNAL uint64_t kiln_handles_safe_epoch(const kiln_handles *table);

/* Under the table's lock: gives the cache's freed slots to the ring. */
KILN_INTERNAL void kiln_handles_give_freed(kiln_handles *table, kiln_handle_cache *cache);

/* Under the table's lock: fills the (empty) cache's ready list, reusable slots first
 * (the longest-freed first), then never-used ones. */
KILN_INTERNAL void kiln_handles_take_ready(kiln_handles *table, kiln_handle_cache *cache);

/* At attach: every cache unbound. */
KILN_INTERNAL void kiln_handle_caches_init(kiln_handle_cache *caches, size_t count);

/* At detach, on the context's thread: hands the caches' slots back to their tables and
 * folds their counters in. Takes registry_lock. */
KILN_INTERNAL void kiln_ctx_flush_handles(struct kiln_ctx *ctx);

/* Under registry_lock: the live count of a table (allocs - frees over every cache), and
 * the freed slots its caches hold that are not reusable yet. */
KILN_INTERNAL void kiln_handles_tally(kiln_handles *table, uint64_t *allocs, uint64_t *frees,
                                      uint64_t *pending);

/* A worker starts or ends a background job: while one runs, its context takes part in
 * the reclaim like an outside thread (its pointers stay valid until the job returns). */
KILN_INTERNAL void kiln_handles_background(struct kiln_ctx *ctx, bool running);

/* At frame end, on the driver, after every frame job has finished: advances the reclaim
 * epoch, recomputes the safe epoch, promotes what it made reusable, samples peaks. */
KILN_INTERNAL void kiln_handles_frame_end(struct kiln_runtime *rt, struct kiln_ctx *driver,
                                          uint64_t epoch);

/* ---- runtime/handle_sites.c ---- */

/* With KILN_DEBUG_SITES, a site per slot; false when memory runs out. */
KILN_INTERNAL bool kiln_handles_sites_init(kiln_handles *table, uint32_t debug);
KILN_INTERNAL void kiln_handles_sites_fini(kiln_handles *table);

/* Logs the live items grouped by allocation site (HANDLES_LEAK_SITE); no other thread
 * may use the table (destroy). Nothing without KILN_DEBUG_SITES. */
KILN_INTERNAL void kiln_handles_report_leaks(kiln_handles *table);

/* kiln_destroy: destroys the tables still alive (logged) and frees every table. */
KILN_INTERNAL void kiln_runtime_handles_fini(struct kiln_runtime *rt);

/* Test hook: slots retire once their generation would pass max_generation (odd, >= 3)
 * instead of 2^32 - 1, so retirement can be tested in a few reuses. Before any alloc. */
KILN_INTERNAL void kiln_handles_set_generation_limit(kiln_handles *table, uint32_t max_generation);

#endif /* KILN_RUNTIME_HANDLES_H */
