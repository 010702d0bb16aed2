/* alloc/handle_table.h — generational handle tables: slots with a generation before
 * each item, the per-context cache of free slots with its inline fast paths, the batch
 * exchanges of a cache with the table's reuse ring, and the table's figures. Knows no
 * runtime: the caller passes in the block pool, the caches and the two epochs. Never
 * installed.
 *
 * Who owns what:
 *   slot->word          any thread: get loads it (acquire); alloc stores it (release,
 *                       after zeroing the item); free moves it from live (odd
 *                       generation, the handle's key) to free (even) by CAS.
 *   kiln_handle_cache   one context's cache of one table: written by that context's
 *                       thread only; its counts are atomics so stats readers may sum them.
 *   the reuse ring,     under the table's lock: a batch exchange (once per 32 calls of a
 *   fresh               cache), a flush, and the promotion of what the safe epoch allows.
 *
 * Slot accounting (all counts summed over caches):
 *   fresh == live + every cache's ready and freed counts + ring entries + retired
 *   live  == allocs - frees
 *
 * The epochs are two counters of the table's owner, which the table only reads. A free
 * reads the reclaim epoch (seq_cst, after its CAS made the handle stale) and records it
 * with the slot; a slot freed at epoch F is handed out again once the safe epoch > F.
 * The owner raises the safe epoch past F only when no pointer that a get returned
 * before the free is still in use. */
#ifndef KILN_ALLOC_HANDLE_TABLE_H
#define KILN_ALLOC_HANDLE_TABLE_H

#include <kiln/handles.h>
#include <pthread.h>
#include <string.h>

#include "../base/atomics.h"
#include "../base/common.h"
#include "../base/log.h"
#include "block_pool.h"
#include "debug.h"
#include "handle_ring.h"
#include "tag_account.h"

#define KILN_HANDLES_BATCH       32          /* slot indices per cache list */
#define KILN_HANDLE_INDEX_MASK   0xffffffu   /* 24 bits of slot index */
#define KILN_HANDLE_TAG_SHIFT    24          /* then 8 bits of table tag */
#define KILN_HANDLES_MAX_CAPACITY KILN_HANDLE_INDEX_MASK
#define KILN_HANDLES_STALE_STRIPES 8         /* stale-lookup counters, a cache line each */

/* A slot's word: its generation in the high half (odd: live; even: free; 0: never used,
 * still zero from the OS), and while live its handle's low half plus one, so that a live
 * slot's word is exactly its handle's key (kiln/handles.h, kiln_handle_key: the handle
 * plus one): get proves tag, index, generation and liveness with one compare. No key
 * matches a free or never-used word (a key's generation is odd), and the zero handle's
 * key, 1, matches no word at all (a live word's generation is at least 1). The index is
 * below the capacity, at most 2^24 - 2, so the one never carries into the tag. */
typedef struct kiln_handle_slot {
    _Atomic uint64_t word;
} kiln_handle_slot;

static inline uint32_t kiln_handle_word_gen(uint64_t word) { return (uint32_t)(word >> 32); }
static inline bool kiln_handle_word_live(uint64_t word) { return (kiln_handle_word_gen(word) & 1u) != 0; }

typedef struct kiln_handle_stripe {
    _Alignas(KILN_CACHE_LINE) _Atomic uint64_t count;
} kiln_handle_stripe;

/* One context's cache of one table. ready: free slots safe to hand out; freed: slots
 * this context freed, not yet given to the table. */
typedef struct kiln_handle_cache {
    _Atomic uint64_t serial;       /* the table life this cache is bound to; 0: unbound */
    _Atomic uint32_t ready_count;
    _Atomic uint32_t freed_count;
    _Atomic uint64_t freed_last_epoch;  /* epoch of the newest entry of freed[] */
    _Atomic uint64_t allocs;       /* owner-written counters, read by stats */
    _Atomic uint64_t frees;
    uint32_t         ready[KILN_HANDLES_BATCH];   /* popped from the top */
    kiln_reuse_entry freed[KILN_HANDLES_BATCH];   /* in the order of the frees */
} kiln_handle_cache;

typedef struct kiln_handle_table {
    /* Read by get on every call; written only at init (and capacity = 0 at fini, when
     * no thread may use the table). */
    char            *slots;
    size_t           stride;          /* bytes per slot: header + item, aligned */
    size_t           header;          /* bytes before the item: the slot rounded up to the align */
    uint32_t         capacity;
    uint32_t         tag_bits;        /* tag << KILN_HANDLE_TAG_SHIFT */
    uint64_t         serial;          /* process-unique, never reused; 0 once destroyed */

    /* Read-only while the table lives. */
    size_t           item_size;
    const _Atomic uint64_t *reclaim_epoch;   /* the owner's; read by every free (seq_cst) */
    uint32_t         index;           /* the owner's slot for this table, where it keeps
                                         the table's cache of each context (stored here,
                                         beside the fields its fast paths read with it) */
    uint32_t         gen_max;         /* a slot is retired before its generation passes this */
    const _Atomic uint64_t *safe_epoch;      /* the owner's; read by the exchanges (acquire) */
    size_t           map_bytes;
    kiln_block_pool *blocks;
    kiln_log_sink    log;
    kiln_tag_account *account;       /* charged with map_bytes while the slots are mapped */
    char             name[48];
    uint32_t         capacity_asked;  /* kept for the stats of a destroyed table */
    kiln_site_slot  *sites;           /* KILN_DEBUG_SITES: the site of each slot's item
                                         (alloc/handle_sites.h); atomics: kiln_sites_top
                                         reads them while items are allocated */
    uint32_t         warn_percent;    /* the owner's desc.warn_percent (HANDLES_CAPACITY_NEAR) */

    /* Statistics any thread adds to (relaxed). */
    kiln_handle_stripe stale[KILN_HANDLES_STALE_STRIPES];
    _Alignas(KILN_CACHE_LINE) _Atomic uint64_t foreign;
    _Atomic uint64_t double_frees;
    _Atomic uint64_t retired;
    _Atomic uint64_t failures;
    _Atomic uint64_t peak_live;
    _Atomic int      full_warned;     /* 1 after a full table was logged, 0 after a success */
    _Atomic int      near_warned;     /* 1 in a HANDLES_CAPACITY_NEAR episode (base/near_limit.h);
                                         whoever samples the peak steps it */

    /* Batch exchanges: under lock. The ring's entries lie in the slots' mapping. */
    pthread_mutex_t  lock;
    uint32_t         fresh;           /* slots [0, fresh) have been handed out at least once */
    kiln_handle_ring ring;
    _Atomic uint64_t folded_allocs;   /* counters of caches that were unbound */
    _Atomic uint64_t folded_frees;
} kiln_handle_table;

/* The public head (kiln/handles.h) is the table's first words. */
_Static_assert(offsetof(kiln_handle_table, slots) == offsetof(kiln_handles_head, slots) &&
               offsetof(kiln_handle_table, stride) == offsetof(kiln_handles_head, stride) &&
               offsetof(kiln_handle_table, header) == offsetof(kiln_handles_head, header) &&
               offsetof(kiln_handle_table, capacity) == offsetof(kiln_handles_head, capacity) &&
               offsetof(kiln_handle_table, tag_bits) == offsetof(kiln_handles_head, tag_bits) &&
               KILN_HANDLES_HEAD_INDEX_MASK == KILN_HANDLE_INDEX_MASK &&
               offsetof(kiln_handle_slot, word) == 0 && sizeof(kiln_handle_slot) == sizeof(uint64_t) &&
               KILN_HANDLES_MAX_CAPACITY < KILN_HANDLE_INDEX_MASK + 1u,
               "kiln_handles_head (KILN_HEAD_LAYOUT) is the table's first words");

/* The public heads (kiln/handles.h, KILN_HEAD_LAYOUT): the table's first words and the
 * cache's whole layout. */
_Static_assert(offsetof(kiln_handle_table, serial) == offsetof(kiln_handles_head, serial) &&
               offsetof(kiln_handle_table, item_size) == offsetof(kiln_handles_head, item_size) &&
               offsetof(kiln_handle_table, reclaim_epoch) == offsetof(kiln_handles_head, reclaim_epoch) &&
               offsetof(kiln_handle_table, index) == offsetof(kiln_handles_head, index) &&
               offsetof(kiln_handle_table, gen_max) == offsetof(kiln_handles_head, gen_max) &&
               KILN_HANDLES_BATCH == KILN_HANDLES_HEAD_BATCH &&
               sizeof(kiln_handle_cache) == sizeof(kiln_handle_cache_head) &&
               offsetof(kiln_handle_cache, serial) == offsetof(kiln_handle_cache_head, serial) &&
               offsetof(kiln_handle_cache, ready_count) == offsetof(kiln_handle_cache_head, ready_count) &&
               offsetof(kiln_handle_cache, freed_count) == offsetof(kiln_handle_cache_head, freed_count) &&
               offsetof(kiln_handle_cache, freed_last_epoch) ==
                   offsetof(kiln_handle_cache_head, freed_last_epoch) &&
               offsetof(kiln_handle_cache, allocs) == offsetof(kiln_handle_cache_head, allocs) &&
               offsetof(kiln_handle_cache, frees) == offsetof(kiln_handle_cache_head, frees) &&
               offsetof(kiln_handle_cache, ready) == offsetof(kiln_handle_cache_head, ready) &&
               offsetof(kiln_handle_cache, freed) == offsetof(kiln_handle_cache_head, freed) &&
               sizeof(kiln_reuse_entry) == sizeof(kiln_handle_reuse_head) &&
               offsetof(kiln_reuse_entry, index) == offsetof(kiln_handle_reuse_head, index) &&
               offsetof(kiln_reuse_entry, epoch) == offsetof(kiln_handle_reuse_head, epoch) &&
               sizeof(((kiln_handle_cache *)0)->freed_last_epoch) ==
                   sizeof(((kiln_handle_cache_head *)0)->freed_last_epoch) &&
               sizeof(((kiln_reuse_entry *)0)->epoch) == sizeof(uint64_t),
               "kiln_handles_head and kiln_handle_cache_head (KILN_HEAD_LAYOUT) are the table's "
               "and the cache's layout");

typedef struct kiln_handle_table_config {
    kiln_block_pool        *blocks;         /* maps the slots and the ring */
    kiln_handles_desc       desc;           /* passed kiln_handle_table_desc_ok */
    const char             *name;
    uint32_t                index;          /* kiln_handle_table.index */
    bool                    sites;          /* KILN_DEBUG_SITES: keep a site per slot */
    uint32_t                warn_percent;   /* the owner's desc.warn_percent, 1-100 */
    kiln_log_sink           log;
    const _Atomic uint64_t *reclaim_epoch;
    const _Atomic uint64_t *safe_epoch;
    kiln_tag_account       *account;        /* desc.tag's; NULL: untagged */
} kiln_handle_table_config;

/* The figures of a table's caches summed (kiln_handle_tally_cache), and what the table
 * folded in from caches that are gone. pending: freed slots in caches, not reusable
 * yet; safe: the safe epoch they were judged by. */
typedef struct kiln_handle_tally {
    uint64_t allocs, frees, pending;
    uint64_t safe;
} kiln_handle_tally;

/* ---------- create and destroy ---------- */

/* Whether desc describes a table that can be made; logs why not (HANDLES_BAD_ITEM_SIZE,
 * HANDLES_BAD_ALIGN, HANDLES_BAD_CAPACITY, as misuse). Any thread. */
KILN_INTERNAL bool kiln_handle_table_desc_ok(const kiln_handles_desc *desc, const char *name,
                                             const kiln_log_sink *log);

/* Sets a zeroed table up: layout, the mapping of its slots and ring, the site array,
 * a new tag and serial. false when the block pool refuses (it logged) or there is no
 * memory for the sites (logged: HANDLES_OUT_OF_MEMORY); nothing is kept then. */
KILN_INTERNAL bool kiln_handle_table_init(kiln_handle_table *table,
                                          const kiln_handle_table_config *config);

/* Ends a table's life: keeps the tally's counts for its stats, returns the slots and the
 * sites, and marks it destroyed (serial 0, capacity 0), so that get, alloc and free
 * through a stale pointer are refused. No other thread may use the table, and every
 * cache bound to it was retired (kiln_handle_cache_retire). */
KILN_INTERNAL void kiln_handle_table_fini(kiln_handle_table *table, const kiln_handle_tally *tally);

/* false while the table lives; once destroyed, logs that function was refused
 * (HANDLES_DESTROYED) and returns true. Any thread. */
KILN_INTERNAL bool kiln_handle_table_refuse_dead(const kiln_handle_table *table,
                                                 const char *function);

/* Test hook: slots retire once their generation would pass max_generation (odd, >= 3)
 * instead of 2^32 - 1, so retirement can be tested in a few reuses. Before any alloc. */
KILN_INTERNAL void kiln_handle_table_set_generation_limit(kiln_handle_table *table,
                                                          uint32_t max_generation);

/* Test hook: the table reads its reclaim and safe epochs from these counters of the
 * caller (which outlive it) instead of its owner's, so that reuse can be tested at any
 * epoch (near 2^31 and 2^32 and past them) without that many frame ends. Before any
 * alloc. The owner's frame ends still promote by the owner's own, smaller, safe epoch,
 * which releases no slot freed at the caller's epochs. */
KILN_INTERNAL void kiln_handle_table_set_epochs(kiln_handle_table *table,
                                                const _Atomic uint64_t *reclaim_epoch,
                                                const _Atomic uint64_t *safe_epoch);

/* ---------- the fast paths' pieces ---------- */

static inline kiln_handle_slot *kiln_handle_slot_at(const kiln_handle_table *table,
                                                    uint32_t index) {
    return (kiln_handle_slot *)(table->slots + (size_t)index * table->stride);
}

static inline void *kiln_handle_item_of(const kiln_handle_table *table, kiln_handle_slot *slot) {
    return (char *)slot + table->header;
}

static inline kiln_handle kiln_handle_make(const kiln_handle_table *table, uint32_t index,
                                           uint32_t gen) {
    return (kiln_handle){ (uint64_t)gen << 32 | table->tag_bits | index };
}

/* Why a lookup missed, counted; never logged but for a destroyed table (a stale lookup
 * is normal use). NULL. Any thread, wait-free. */
KILN_INTERNAL KILN_COLD void *kiln_handle_table_get_miss(kiln_handle_table *table, kiln_handle h);

/* The item of h, or NULL (kiln_handle_table_get_miss). Any thread, wait-free. */
static inline void *kiln_handle_table_get(kiln_handle_table *table, kiln_handle h) {
    uint32_t index = kiln_handle_index(h);
    if (kiln_likely(index < table->capacity)) {
        kiln_handle_slot *slot = kiln_handle_slot_at(table, index);
        /* acquire: pairs with alloc's release store, so the zeroed item is visible. */
        if (kiln_likely(kiln_load_acquire(&slot->word) == kiln_handle_key(h)))
            return kiln_handle_item_of(table, slot);
    }
    return kiln_handle_table_get_miss(table, h);
}

/* Whether h has this table's tag, an index in range and a live (odd) generation. */
static inline bool kiln_handle_shape_ok(const kiln_handle_table *table, kiln_handle h) {
    uint32_t index = kiln_handle_index(h);
    return (uint32_t)h.bits - index == table->tag_bits && index < table->capacity &&
           (kiln_handle_generation(h) & 1u);
}

/* Whether cache is bound to this life of the table. Serials are unique in the process,
 * so a cache never matches a table it was not bound to; a destroyed table (serial 0)
 * matches unbound caches, which are empty. The cache's thread. */
static inline bool kiln_handle_cache_bound(const kiln_handle_table *table,
                                           const kiln_handle_cache *cache) {
    return kiln_load_relaxed(&cache->serial) == table->serial;
}

/* ---------- the cache ---------- */

/* At attach: every cache unbound. The caches' thread. */
KILN_INTERNAL void kiln_handle_caches_init(kiln_handle_cache *caches, size_t count);

/* Binds the cache to this life of the table, empty, its counters zero (what it held
 * belonged to an older table in the same slot). The cache's thread; stats readers that
 * sum caches are excluded by the caller. */
KILN_INTERNAL void kiln_handle_cache_bind(kiln_handle_table *table, kiln_handle_cache *cache);

/* The public heads of a table and of a cache (kiln/handles.h): the same memory. */
static inline const kiln_handles_head *kiln_handle_table_head(const kiln_handle_table *table) {
    return (const kiln_handles_head *)(const void *)table;
}

static inline kiln_handle_cache_head *kiln_handle_cache_head_of(kiln_handle_cache *cache) {
    return (kiln_handle_cache_head *)(void *)cache;
}

/* Hands out the top slot of a bound cache that has n > 0 ready (kiln/handles.h, the
 * inline alloc's pop). The cache's thread. */
static inline kiln_handle kiln_handle_cache_pop(kiln_handle_table *table, kiln_handle_cache *cache,
                                                uint32_t n, void **item) {
    return kiln_handle_cache_head_pop(kiln_handle_table_head(table), kiln_handle_cache_head_of(cache),
                                      n, item);
}

/* A bound cache is empty: exchanges a batch with the table (the cache's freed slots go
 * back first, so its frees of earlier frames come back too) and hands out a slot. {0}
 * when the table has none (counted; HANDLES_FULL logged once until an alloc succeeds),
 * *item left as it was. Once per batch, so not cold: its loops are compiled for speed.
 * The cache's thread; takes the table's lock. */
KILN_INTERNAL kiln_handle kiln_handle_table_alloc_slow(kiln_handle_table *table,
                                                       kiln_handle_cache *cache, void **item);

/* Why a free was refused: logged and counted; false. ours: the handle has this table's
 * shape (kiln_handle_shape_ok); seen_gen is the slot's generation then. Any thread. */
KILN_INTERNAL KILN_COLD bool kiln_handle_table_refuse_free(kiln_handle_table *table, kiln_handle h,
                                                           uint32_t seen_gen, bool ours);

/* The refusal of a free whose release found seen in the slot (kiln_handle_head_release):
 * judged by h's shape and the slot's generation. Any thread. */
static inline bool kiln_handle_refuse_seen(kiln_handle_table *table, kiln_handle h, uint64_t seen) {
    return kiln_handle_table_refuse_free(table, h, kiln_handle_word_gen(seen),
                                         kiln_handle_shape_ok(table, h));
}

/* Frees the last handle of a slot whose generations ran out (gen + 2 > gen_max): the
 * slot retires instead of waiting for reuse. false (refused) as the push. The cache's
 * thread. */
KILN_INTERNAL KILN_COLD bool kiln_handle_cache_push_last(kiln_handle_table *table,
                                                         kiln_handle_cache *cache, kiln_handle h);

/* Frees a handle whose index is below the capacity into a bound cache with room: false
 * (refused, reported) when it is not its slot's live handle. Only that handle's key
 * matches the slot's live word (tag, index and an odd generation), so the shape is judged
 * only for the refusal's report. The cache's thread; h's slot may be freed by any thread
 * at once. */
static inline bool kiln_handle_cache_push(kiln_handle_table *table, kiln_handle_cache *cache,
                                          kiln_handle h) {
    if (kiln_unlikely((uint64_t)kiln_handle_generation(h) + 2 > table->gen_max))
        return kiln_handle_cache_push_last(table, cache, h);
    uint64_t seen;
    if (kiln_likely(kiln_handle_cache_head_push(kiln_handle_table_head(table),
                                                kiln_handle_cache_head_of(cache), h, &seen)))
        return true;
    return kiln_handle_refuse_seen(table, h, seen);
}

/* A bound cache's freed list is full: gives it to the table. The cache's thread; takes
 * the table's lock. */
KILN_INTERNAL void kiln_handle_cache_drain(kiln_handle_table *table, kiln_handle_cache *cache);

/* When the cache is bound to the table: gives its slots back (ready ones as reusable at
 * once), folds its counters into the table's and unbinds it. The cache's thread (its
 * detach); takes the table's lock; stats readers are excluded by the caller. */
KILN_INTERNAL void kiln_handle_cache_flush(kiln_handle_table *table, kiln_handle_cache *cache);

/* When the cache is bound to the table: unbinds it, empty (the table is being
 * destroyed, its slots go with it). No thread may use the table. */
KILN_INTERNAL void kiln_handle_cache_retire(kiln_handle_table *table, kiln_handle_cache *cache);

/* ---------- the live-item walk ---------- */

/* How many slots have been handed out at least once ([0, fresh)): the slots after them
 * were never live, and a walk must not touch their pages. Any thread; takes the lock. */
KILN_INTERNAL uint32_t kiln_handle_table_used_slots(kiln_handle_table *table);

/* Calls fn for each slot of [begin, end) that is live when its generation is read
 * (acquire, as get). end at most kiln_handle_table_used_slots. Any thread, while the
 * table lives. */
KILN_INTERNAL void kiln_handle_table_walk(const kiln_handle_table *table, uint32_t begin,
                                          uint32_t end, kiln_handle_visit_fn fn, void *user);

/* ---------- reuse and figures ---------- */

/* Moves the entries that the safe epoch safe makes reusable out of limbo. The owner,
 * after raising the safe epoch, concurrently with the caches' exchanges (takes the
 * table's lock). */
KILN_INTERNAL void kiln_handle_table_promote(kiln_handle_table *table, uint64_t safe);

/* Starts a tally with what the table folded in; false when the table is destroyed
 * (everything was folded in, and caches with serial 0 are unbound ones, not its own):
 * then no cache is to be added. Any thread. */
KILN_INTERNAL bool kiln_handle_tally_begin(const kiln_handle_table *table,
                                           kiln_handle_tally *tally);

/* Adds a cache bound to the table (any other is skipped). Any thread, while the caller
 * keeps the cache's memory and binding from changing under it (relaxed reads). */
KILN_INTERNAL void kiln_handle_tally_cache(const kiln_handle_table *table,
                                           const kiln_handle_cache *cache,
                                           kiln_handle_tally *tally);

/* Samples the live count of a complete tally for the peak and the capacity warning (one
 * HANDLES_CAPACITY_NEAR per episode). Any thread. */
KILN_INTERNAL void kiln_handle_table_sample_peak(kiln_handle_table *table,
                                                 const kiln_handle_tally *tally);

/* The table's figures, from a complete tally (and samples the peak). Any thread. */
KILN_INTERNAL void kiln_handle_table_stats(kiln_handle_table *table, const kiln_handle_tally *tally,
                                           kiln_handles_stats *out);

#endif /* KILN_ALLOC_HANDLE_TABLE_H */
