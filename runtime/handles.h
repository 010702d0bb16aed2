/* runtime/handles.h — the handle table's layout, the per-context cache of free slots,
 * and what the frame clock calls. Never installed.
 *
 * Who owns what:
 *   slot->gen           any thread: get loads it (acquire); alloc stores it (release,
 *                       after zeroing the item); free moves it odd -> even by CAS.
 *   slot->next, ->freed_epoch
 *                       whoever holds the freed slot: the freeing context until it hands
 *                       the slot to the table, then the table (under lock).
 *   kiln_handle_cache   one context's cache of one table: written by that context's
 *                       thread only; counts are atomics so stats readers may sum them.
 *   limbo, reusable,    under the table's lock (a batch exchange: once per 32 calls;
 *   fresh               and the frame end, which moves slots from limbo to reusable).
 *
 * Slot accounting (all counts summed over contexts):
 *   used slots (fresh) == live + pending + ready + retired
 *   freed, not handed out again == limbo.count + reusable.count + every cache's freed_count
 *   live               == allocs - frees
 *
 * Reuse (the reclaim epoch): rt->handle_epoch counts frame ends. A free records the
 * epoch it read (after its CAS made the handle stale) in the slot. A frame end, after
 * every frame job has finished, bumps the epoch and computes safe = the new epoch,
 * lowered to the quiescent epoch of every attached thread outside the frame clock. A slot
 * freed at epoch F is reusable once safe > F: a frame end and each outside thread's
 * quiescent point came after the free, so no pointer from get taken before the free is
 * still in use. */
#ifndef KILN_RUNTIME_HANDLES_H
#define KILN_RUNTIME_HANDLES_H

#include <kiln/handles.h>
#include <pthread.h>

#include "../base/atomics.h"
#include "../base/common.h"
#include "../base/log.h"

#define KILN_MAX_HANDLE_TABLES   64
#define KILN_HANDLES_BATCH       32          /* slot indices per cache list */
#define KILN_HANDLE_INDEX_MASK   0xffffffu   /* 24 bits of slot index */
#define KILN_HANDLE_TAG_SHIFT    24          /* then 8 bits of table tag */
#define KILN_HANDLES_MAX_CAPACITY KILN_HANDLE_INDEX_MASK
#define KILN_HANDLE_NO_SLOT      UINT32_MAX  /* end of the limbo list */
#define KILN_HANDLES_STALE_STRIPES 8         /* stale-lookup counters, a cache line each */
/* Frame ends with the reclaim held back by one outside thread before it is logged. */
#define KILN_HANDLES_STALL_WARN_FRAMES 120u

/* A FIFO of slots linked through slot->next; under the table's lock (count is atomic
 * for stats readers). */
typedef struct kiln_slot_queue {
    uint32_t         head, tail;      /* KILN_HANDLE_NO_SLOT when empty */
    _Atomic uint32_t count;
} kiln_slot_queue;

/* The header before every item. An item starts header bytes after its slot. */
typedef struct kiln_handle_slot {
    _Atomic uint32_t gen;          /* odd: live; even: free (0: never used, still zero) */
    uint32_t         next;         /* limbo list link */
    uint32_t         freed_epoch;  /* the reclaim epoch when it was freed (truncated) */
    uint32_t         unused;
} kiln_handle_slot;
_Static_assert(sizeof(kiln_handle_slot) == 16, "a slot header is 16 bytes");

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
    uint32_t         ready[KILN_HANDLES_BATCH];
    uint32_t         freed[KILN_HANDLES_BATCH];
} kiln_handle_cache;

struct kiln_handles {
    /* Read by get on every call; written only at create (and capacity = 0 at destroy,
     * when no thread may use the table). */
    char            *slots;
    size_t           stride;          /* bytes per slot: header + item, aligned */
    size_t           header;          /* bytes before the item: 16 rounded up to the align */
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

    /* Statistics any thread adds to (relaxed). */
    kiln_handle_stripe stale[KILN_HANDLES_STALE_STRIPES];
    _Alignas(KILN_CACHE_LINE) _Atomic uint64_t foreign;
    _Atomic uint64_t double_frees;
    _Atomic uint64_t retired;
    _Atomic uint64_t failures;
    _Atomic uint64_t peak_live;
    _Atomic int      full_warned;     /* 1 after a full table was logged, 0 after a success */

    /* Batch exchanges: under lock. */
    pthread_mutex_t  lock;
    uint32_t         fresh;           /* slots [0, fresh) have been handed out at least once */
    kiln_slot_queue  limbo;           /* freed, not reusable yet (oldest first) */
    kiln_slot_queue  reusable;        /* freed and safe to hand out (oldest first) */
    _Atomic uint64_t folded_allocs;   /* counters of caches that were unbound */
    _Atomic uint64_t folded_frees;

    struct kiln_handles *dead_next;   /* the runtime's list of destroyed tables */
};

static inline kiln_handle_slot *kiln_handle_slot_at(const kiln_handles *table, uint32_t index) {
    return (kiln_handle_slot *)(table->slots + (size_t)index * table->stride);
}

/* At attach: every cache unbound. */
KILN_INTERNAL void kiln_handle_caches_init(kiln_handle_cache *caches, size_t count);

/* At detach, on the context's thread: hands the caches' slots back to their tables and
 * folds their counters in. Takes registry_lock. */
KILN_INTERNAL void kiln_ctx_flush_handles(struct kiln_ctx *ctx);

/* At frame end, on the driver, after every frame job has finished: advances the reclaim
 * epoch, recomputes the safe epoch, samples peaks. */
KILN_INTERNAL void kiln_handles_frame_end(struct kiln_runtime *rt, struct kiln_ctx *driver);

/* kiln_destroy: destroys the tables still alive (logged) and frees every table. */
KILN_INTERNAL void kiln_runtime_handles_fini(struct kiln_runtime *rt);

/* Test hook: slots retire once their generation would pass max_generation (odd, >= 3)
 * instead of 2^32 - 1, so retirement can be tested in a few reuses. Before any alloc. */
KILN_INTERNAL void kiln_handles_set_generation_limit(kiln_handles *table, uint32_t max_generation);

#endif /* KILN_RUNTIME_HANDLES_H */
