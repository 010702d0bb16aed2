/* alloc/pool.h — fixed-size object pools: blocks carved into slots, a lock-free depot
 * of magazines, and the per-context cache whose fast path is a few inline lines.
 *
 * Who owns what:
 *   kiln_pool_cache   one context's cache of one pool: written by that context's thread
 *                     only; its counters are atomics so stats readers may sum them.
 *   depot LIFOs       any thread (lock-free, alloc/lifo.h).
 *   carving state     under carve_lock (slow path: new blocks, new magazines).
 *
 * Object accounting, with every count summed over contexts:
 *   carved == live + cached + in_depot
 *   live   == allocs - frees
 *   cached == (taken_from_depot + carved_into_caches + frees) - (allocs + given_to_depot)
 *   carved <= capacity (when a capacity is set): the only place the limit is enforced.
 * kiln_pool_trim lowers carved by the objects of the blocks it returns, all of which
 * were in the depot. */
#ifndef KILN_ALLOC_POOL_H
#define KILN_ALLOC_POOL_H

#include <kiln/pool.h>
#include <kiln/stats.h>

#include "address_map.h"
#include "block_pool.h"
#include "debug.h"
#include "tag_account.h"

#define KILN_POOL_BLOCK_MAGIC 0x6b696c6e504f4f4cull   /* "kilnPOOL" */
#define KILN_POOL_KNOWN       KILN_POOL_HEAD_KNOWN   /* entries of a pool's table of its object blocks */
#define KILN_POOL_NO_BLOCK    KILN_POOL_HEAD_NO_BLOCK   /* an empty entry (kiln/pool.h) */
#define KILN_POOL_KEY_CLOSED  UINT64_MAX   /* a pool's key that no cache serial equals */
#define KILN_POOL_TRIMMED     UINT32_MAX       /* trim_free of a block being returned */

/* An internal flag beside the public KILN_POOL_* ones: the debug layer (pool_debug.c)
 * works on alloc and free. The fast paths test the flag word anyway (for ZERO and
 * CHECKED), so the debug layer costs them nothing. KILN_POOL_FREE_HOOKS: the flags that
 * send a free to the checked free (pool_check.c). */
#define KILN_POOL_DEBUG_HOOKS (1u << 31)
#define KILN_POOL_FREE_HOOKS  (KILN_POOL_CHECKED | KILN_POOL_DEBUG_HOOKS | KILN_POOL_CLEAR_ON_FREE)
/* The flags that send an alloc out of line (kiln_pool_on_alloc): CLEAR_ON_FREE is not
 * one, so that its alloc stays a pop. */
#define KILN_POOL_ALLOC_HOOKS (KILN_POOL_ZERO | KILN_POOL_CHECKED | KILN_POOL_DEBUG_HOOKS)

typedef struct kiln_magazine {
    kiln_lifo_node link;          /* on a depot LIFO; first: the LIFO's link word */
    uint32_t       count;         /* objects held; written by the owning context */
    uint32_t       capacity;
    void          *objects[];     /* objects[0 .. count) are free objects */
} kiln_magazine;

/* One context's cache of one pool. Fast-path fields first. An unbound cache (never used,
 * flushed, or its pool destroyed) points both magazines at kiln_pool_unbound, which is
 * empty and has no room, so the fast paths need no separate "bound?" test: alloc sees
 * count 0, free sees count == capacity, and both fall into the slow path. */
typedef struct kiln_pool_cache {
    kiln_magazine    *loaded;     /* alloc pops here, free pushes here */
    kiln_magazine    *spare;      /* swapped in when loaded runs empty or full */
    _Atomic uint64_t  allocs;     /* owner-written counters, read by stats */
    _Atomic uint64_t  frees;
    _Atomic uint64_t  received;   /* objects that came in from the depot or carving */
    _Atomic uint64_t  given;      /* objects that went out to the depot */
    _Atomic uint64_t  serial;     /* the pool life this cache is bound to; 0: unbound */
    uint32_t          refused_at; /* allocs * 2 + 1 (mod 2^32) at this cache's last refusal
                                     at capacity; 0: none since bind (owner only, slow path) */
    uint32_t          synced;     /* allocs - frees (mod 2^32) when this cache last added
                                     its share to the pool's live_sampled (owner only, slow
                                     path; between two exchanges it moves by at most the
                                     objects two magazines hold, so the difference is exact) */
} kiln_pool_cache;

_Static_assert(sizeof(kiln_pool_cache) == 64, "a context's 257 caches cost 16 KiB");
/* The public heads (kiln/pool.h) are these structures' first words. */
_Static_assert(sizeof(kiln_pool_cache) == sizeof(kiln_pool_cache_head) &&
               offsetof(kiln_pool_cache, loaded) == offsetof(kiln_pool_cache_head, loaded) &&
               offsetof(kiln_pool_cache, allocs) == offsetof(kiln_pool_cache_head, allocs) &&
               offsetof(kiln_pool_cache, frees) == offsetof(kiln_pool_cache_head, frees) &&
               offsetof(kiln_pool_cache, serial) == offsetof(kiln_pool_cache_head, serial),
               "kiln_pool_cache_head (KILN_HEAD_LAYOUT) is the cache's layout");
_Static_assert(offsetof(kiln_magazine, count) == offsetof(kiln_pool_magazine_head, count) &&
               offsetof(kiln_magazine, capacity) == offsetof(kiln_pool_magazine_head, capacity) &&
               offsetof(kiln_magazine, objects) == sizeof(kiln_pool_magazine_head),
               "kiln_pool_magazine_head (KILN_HEAD_LAYOUT) is the magazine's header");

/* The magazine of every unbound cache: count 0, capacity 0, never written. */
KILN_INTERNAL extern kiln_magazine kiln_pool_unbound;

/* Makes a cache unbound (at attach, and for a destroyed pool's caches). */
static inline void kiln_pool_cache_unbind(kiln_pool_cache *cache) {
    cache->loaded = cache->spare = &kiln_pool_unbound;
    kiln_store_relaxed(&cache->serial, 0);
}

/* Header at the start of every block a pool carves. */
typedef struct kiln_pool_block {
    uint64_t                magic;    /* KILN_POOL_BLOCK_MAGIC */
    struct kiln_pool       *pool;
    uint64_t                serial;   /* the pool's serial when carved */
    struct kiln_pool_block *next;     /* the pool's block list (carve_lock) */
    uint32_t                trim_free; /* kiln_pool_trim's count of the block's objects in
                                          the depot, or KILN_POOL_TRIMMED (carve_lock) */
    _Atomic uint64_t       *in_use;   /* KILN_POOL_CHECKED: a bit per slot, else NULL */
    uintptr_t               first;    /* address of slot 0's object */
} kiln_pool_block;

struct kiln_pool {
    /* The public head (kiln_pool_head, kiln/pool.h): what the inline alloc and free read.
     * key: the serial while the pool lives and has no alloc or free hook, else
     * KILN_POOL_KEY_CLOSED (no cache's serial equals it: every call goes to the library).
     * Written at init and fini only. */
    _Atomic uint64_t    key;
    uint32_t            index;          /* this pool's cache slot in every context */
    uint32_t            block_shift;    /* copy of map.block_shift */
    uintptr_t           last_start;     /* (slots_per_block - 1) * slot: where the last slot's
                                           object lies, from slot 0's: every pointer the
                                           ownership check accepts is at most this far in,
                                           so no object handed out runs past the slots */
    /* The pool's object blocks, direct-mapped by block number, so that a free usually
     * proves ownership with one load of the pool's own memory and one compare instead of
     * the address map and the block header: an entry holds the first object's address of
     * an object block of this pool's current life, or KILN_POOL_NO_BLOCK, and obj is that
     * block's when obj - entry <= last_start. Written under carve_lock when an object
     * block is carved (a newer block may take an older one's entry: that one's frees
     * take the full check; entries no block maps to name one too), emptied when their
     * block is trimmed (then filled from another) and at fini. */
    _Atomic uintptr_t   known[KILN_POOL_KNOWN];

    /* Read-only while the pool lives. */
    size_t              size;           /* bytes asked per object */
    size_t              slot;           /* bytes per slot: size rounded up to align */
    size_t              align;
    size_t              capacity;       /* 0: none */
    size_t              reserve;        /* desc.reserve: objects kiln_pool_trim keeps carved */
    uint32_t            warn_percent;   /* the runtime's desc.warn_percent (POOL_CAPACITY_NEAR) */
    uint32_t            magazine_size;
    uint32_t            flags;          /* KILN_POOL_* (CHECKED also set by the runtime's debug bit) */
    uint32_t            slots_per_block;
    /* Unique in the process, never reused; 0 once destroyed. Written at init and fini
     * only. */
    _Atomic uint64_t    serial;
    kiln_block_pool    *blocks;
    kiln_address_map    map;            /* copy of blocks->map (its table never moves): one
                                           load less on every free */
    uintptr_t           block_mask;     /* copy of blocks->block_mask */
    uintptr_t           first_offset;   /* where slot 0's object lies in every object block */
    _Atomic uintptr_t  *shared_known;   /* a table its object blocks are also known in, as
                                           block | shared_class (kiln_heap_head.known); NULL:
                                           none. Written under carve_lock, as known is */
    uintptr_t           shared_class;
    size_t              tags_offset;    /* slot_tags: where an object block's byte per slot
                                           lies (after the slot entries); 0: none */
    uint64_t            slot_recip;     /* ceil(2^32 / slot): a slot's number from its offset
                                           by a multiply (exact for offsets under 2^32 that
                                           are multiples of slot) */
    kiln_log_sink       log;
    kiln_tag_account   *account;        /* the tag its blocks are charged to; NULL: none */
    char                name[48];

    /* The depot: full (or partly full) magazines and empty ones. */
    kiln_lifo           full;
    kiln_lifo           empty;

    /* Shared statistics, slow paths only (relaxed). */
    _Alignas(KILN_CACHE_LINE) _Atomic uint64_t carved;
    _Atomic uint64_t    in_depot;       /* objects in full magazines on the depot */
    _Atomic uint64_t    peak_outside;   /* most carved - in_depot seen at an exchange */
    _Atomic uint64_t    exchanges;
    _Atomic uint64_t    failures;
    _Atomic uint64_t    bad_frees;      /* foreign, interior, destroyed-pool frees */
    _Atomic uint64_t    double_frees;
    _Atomic uint32_t    blocks_held;
    _Atomic uint32_t    magazine_blocks;   /* of blocks_held, those carved into magazines */
    _Atomic int         capacity_reported;
    _Atomic uint64_t    capacity_warned_ns;   /* the clock at the last POOL_CAPACITY_REACHED */
    _Atomic uint64_t    capacity_quiet;       /* episodes since then that were not logged */
    /* POOL_CAPACITY_NEAR (pools with a capacity only): the sum of every cache's allocs -
     * frees as of its last exchange (mod 2^64; read as signed, a free counted before its
     * alloc may dip it under zero), and the episode flag of base/near_limit.h, 1 while
     * in an episode; any thread that exchanges samples them (relaxed: a warning, nothing
     * is published through them). */
    _Atomic uint64_t    live_sampled;
    _Atomic int         near_reported;
    _Atomic uint64_t    trims;             /* kiln_pool_trim calls that took effect */
    _Atomic uint64_t    blocks_trimmed;
    /* Totals folded in from caches that were flushed (detach) and unbound. */
    _Atomic uint64_t    retired_allocs, retired_frees, retired_received, retired_given;

    /* Carving: under carve_lock (kiln_pool_carve_lock: behind fork_gate, if any). */
    pthread_mutex_t     carve_lock;
    pthread_rwlock_t   *fork_gate;      /* read-held around carve_lock; NULL: none */
    kiln_pool_block    *block_list;
    kiln_pool_block    *carve_block;    /* the object block carve_next lies in; NULL: none */
    bool                touching;       /* kiln_pool_reserve: page-fault every new block */
    uintptr_t           carve_next;     /* next slot of the newest block */
    uintptr_t           carve_end;
    char               *magazine_next;  /* magazine storage carved from blocks */
    char               *magazine_end;

    /* Debug layer (pool_debug.c). Read-only while the pool lives but the audit cursor,
     * which only the frame-end audit touches (under carve_lock). With KILN_DEBUG_GUARDS
     * a slot is [front guard][object][back guard], the object debug_front bytes in; the
     * per-slot state and site live in a table after the block header and its bitmap
     * (info_offset), out of the objects' way, so an overrun never damages what finds and
     * names it. */
    uint32_t            debug;          /* the KILN_DEBUG_* bits that concern pools */
    uint32_t            audit_sample;   /* live objects each frame-end audit checks */
    size_t              debug_front;    /* front guard bytes (0 without guards) */
    size_t              info_offset;    /* KILN_POOL_HEADER_BITS: where an object block's
                                           table of slot entries starts (after the bitmap) */
    size_t              usable;         /* bytes of each block in use (less a guard page) */
    const struct kiln_pool_hooks *hooks;   /* the layer's entry points into the core's
                                              paths, set at init with KILN_POOL_DEBUG_HOOKS;
                                              NULL without it */
    kiln_pool_block    *audit_block;    /* where the next audit starts; NULL: the newest */
    uint32_t            audit_slot;
    _Atomic uint64_t    guard_errors;
};

_Static_assert(offsetof(struct kiln_pool, key) == offsetof(kiln_pool_head, key) &&
               offsetof(struct kiln_pool, index) == offsetof(kiln_pool_head, index) &&
               offsetof(struct kiln_pool, block_shift) == offsetof(kiln_pool_head, block_shift) &&
               offsetof(struct kiln_pool, last_start) == offsetof(kiln_pool_head, last_start) &&
               offsetof(struct kiln_pool, known) == offsetof(kiln_pool_head, known),
               "kiln_pool_head (KILN_HEAD_LAYOUT) is the pool's first words");

typedef struct kiln_pool_config {
    kiln_block_pool *blocks;
    kiln_pool_desc   desc;
    uint32_t         index;
    uint64_t         serial;
    bool             checked;           /* the runtime's KILN_DEBUG_CHECKS */
    kiln_log_sink    log;
    uint32_t         debug;             /* the runtime's KILN_DEBUG_* bits */
    uint32_t         audit_sample;      /* KILN_DEBUG_GUARDS: objects per frame-end audit */
    uint32_t         warn_percent;      /* the runtime's desc.warn_percent, 1-100 */
    kiln_tag_account *account;          /* desc.tag's account; NULL: untagged */
    bool             slot_tags;         /* a byte per slot in each object block, for its
                                           user (the general heap, alloc/heap.h), zeroed
                                           when the block is carved */
    _Atomic uintptr_t *shared_known;    /* a table of KILN_HEAP_HEAD_KNOWN entries its object
                                           blocks are entered in too (the heap's); NULL: none */
    uint32_t         shared_class;      /* the low bits of its entries there (under 64) */
    pthread_rwlock_t *fork_gate;        /* taken for reading around carve_lock, so that a
                                           fork takes one lock (the gate, for writing) for
                                           many pools: the heap's classes; NULL: none */
} kiln_pool_config;

/* The carve lock, behind the pool's fork gate when it has one. Any thread. */
static inline void kiln_pool_carve_lock(kiln_pool *pool) {
    if (pool->fork_gate) pthread_rwlock_rdlock(pool->fork_gate);
    pthread_mutex_lock(&pool->carve_lock);
}

static inline void kiln_pool_carve_unlock(kiln_pool *pool) {
    pthread_mutex_unlock(&pool->carve_lock);
    if (pool->fork_gate) pthread_rwlock_unlock(pool->fork_gate);
}

/* A serial for a new pool life: unique in the process, never 0. Any thread. */
KILN_INTERNAL uint64_t kiln_pool_serial_new(void);

/* slot_tags: the byte of obj's slot, and obj's slot number in its block (obj must be a
 * slot's object of one of the pool's blocks). Any thread. */
static inline uint32_t kiln_pool_slot_of(const kiln_pool *pool, uintptr_t offset) {
    return (uint32_t)((offset * pool->slot_recip) >> 32);
}

/* Validates the desc (logging what is wrong) and sets the pool up; carves nothing yet.
 * A bad desc leaves *pool untouched. kiln_pool_init (pool_debug.c, the layer above the
 * core) is kiln_pool_init_core (pool.c) and, with KILN_POOL_DEBUG_HOOKS, the debug
 * layer's hooks installed. */
KILN_INTERNAL bool kiln_pool_init(kiln_pool *pool, const kiln_pool_config *config);
KILN_INTERNAL bool kiln_pool_init_core(kiln_pool *pool, const kiln_pool_config *config);

/* Returns every block to the block pool and marks the pool dead. Caller excludes all
 * other use (the runtime holds its registry lock). */
KILN_INTERNAL void kiln_pool_fini(kiln_pool *pool);

/* Carves objects into the depot until count objects can be allocated without a new
 * block (the depot's free objects and the room left in the block being carved), every
 * block taken page-faulted now. Returns that number: at least count, or fewer when the
 * capacity or the block pool stopped it (POOL_RESERVE_SHORT). A count whose bytes
 * overflow is refused (POOL_RESERVE_TOO_LARGE, misuse) and carves nothing. Any thread,
 * concurrently with allocs, frees and trims (takes carve_lock); not with fini. */
KILN_INTERNAL size_t kiln_pool_reserve_objects(kiln_pool *pool, size_t count);

/* Takes every full magazine off the depot, returns to the block pool each object block
 * whose carved objects are all among them (keeping at least pool->reserve objects
 * carved), and gives the rest back to the depot; the number of blocks returned. Objects
 * in caches are never looked at. Any thread, concurrently with allocs, frees and
 * reserves (takes carve_lock; an alloc that finds the depot empty meanwhile waits for
 * it, see refill); not with fini. */
KILN_INTERNAL size_t kiln_pool_trim_blocks(kiln_pool *pool);

/* Slow paths, out of line. */
KILN_INTERNAL void *kiln_pool_alloc_slow(kiln_pool *pool, kiln_pool_cache *cache);
KILN_INTERNAL void  kiln_pool_free_slow(kiln_pool *pool, kiln_pool_cache *cache, void *obj);

/* Gives the cache's magazines back to the depot and folds its counters into the pool.
 * The cache's owner, or anyone once the owner is gone; excluded from kiln_pool_fini. */
KILN_INTERNAL void kiln_pool_cache_flush(kiln_pool *pool, kiln_pool_cache *cache);

/* Folds the counters of a cache bound to the pool into the pool's totals and unbinds
 * it, keeping its magazines out of the depot (kiln_pool_destroy: they go back with the
 * blocks). Same callers as kiln_pool_cache_flush. */
KILN_INTERNAL void kiln_pool_cache_retire(kiln_pool *pool, kiln_pool_cache *cache);

/* Statistics: the counters of every cache bound to the pool are summed into a tally
 * (the runtime walks its contexts), then combined with the pool's own figures. Any
 * thread (relaxed reads; see kiln/stats.h). */
typedef struct kiln_pool_tally { uint64_t allocs, frees, received, given; } kiln_pool_tally;
KILN_INTERNAL void kiln_pool_tally_cache(kiln_pool *pool, const kiln_pool_cache *cache,
                                         kiln_pool_tally *tally);
KILN_INTERNAL void kiln_pool_stats_read(kiln_pool *pool, const kiln_pool_tally *caches,
                                        kiln_pool_stats *out);

/* KILN_POOL_ZERO / KILN_POOL_CHECKED work on an object being handed out, and the debug
 * layer's alloc hook; returns obj, so that the fast path reaches it by a tail call and
 * needs no callee-saved register. */
KILN_INTERNAL void *kiln_pool_on_alloc(kiln_pool *pool, void *obj);

/* The debug layer's entry points into the core's paths: pool_debug.c sets pool->hooks
 * at init with KILN_POOL_DEBUG_HOOKS, and the core calls through it, so that it names no
 * function of the layer above it. */
typedef struct kiln_pool_hooks {
    /* A new object block (under carve_lock, before any of its objects is handed out):
     * every slot's entry free, its guards written, its object poisoned. */
    void (*block)(kiln_pool *pool, kiln_pool_block *block);
    /* An object handed out: unpoisoned, filled 0xCD, live, no site yet. Any thread (the
     * object's user). */
    void (*alloc)(kiln_pool *pool, void *obj);
} kiln_pool_hooks;

/* ---- the free checks (pool_check.c), above the core and the debug layer ---- */

/* Logs and counts a free of obj that kiln_pool_owns refused: POOL_DESTROYED for a
 * destroyed pool, POOL_INTERIOR_POINTER for a pointer into a slot (its object or its
 * guards) of one of the pool's blocks: past the last slot's object start, or into slot
 * 0's front guard (in every build: an object there would run past the slots),
 * POOL_FOREIGN_POINTER otherwise (the header or the tail past the last whole slot of a
 * block of the pool, too). Any thread (the caller of kiln_pool_free). */
KILN_INTERNAL KILN_COLD void kiln_pool_reject_free(kiln_pool *pool, void *obj);

/* KILN_POOL_FREE_HOOKS, for obj that passed kiln_pool_owns: refuses (logged, counted) an
 * interior pointer (POOL_INTERIOR_POINTER, with CHECKED or a slot-entry bit) and a double
 * free (POOL_DOUBLE_FREE: the in-use bit with CHECKED, the slot entry in the debug
 * layer), runs the debug layer's free (or, without it, CLEAR_ON_FREE's zeroing), then
 * the cache free. Out of line for the same
 * reason as kiln_pool_on_alloc. The cache's owner thread. */
KILN_INTERNAL void kiln_pool_free_checked(kiln_pool *pool, kiln_pool_cache *cache, void *obj);

/* ---- the debug layer (pool_debug.c; see KILN_DEBUG_* in kiln/core.h) ---- */

/* Bytes per slot of an object block's table of slot entries (state and site), which
 * follows the header and the bitmap (pool->info_offset). */
#define KILN_POOL_SLOT_INFO 16

/* An object freed, once pool_check.c has refused an interior pointer (with CHECKED or
 * slot entries): with slot entries, false for a double free, which the caller reports;
 * otherwise its guards checked (POOL_GUARD_DAMAGED), zeroed with KILN_POOL_CLEAR_ON_FREE
 * or else filled 0xDD, poisoned, and true.
 * Any thread (the object's user). */
KILN_INTERNAL bool kiln_pool_debug_free(kiln_pool *pool, void *obj);

/* KILN_DEBUG_SITES: records where a live object was allocated. Its user's thread. */
KILN_INTERNAL void kiln_pool_debug_site(kiln_pool *pool, void *obj, kiln_debug_site site);

/* KILN_DEBUG_SITES: where a live object was allocated ({0}: no site). Its user's thread. */
KILN_INTERNAL kiln_debug_site kiln_pool_debug_site_of(kiln_pool *pool, const void *obj);

/* KILN_DEBUG_GUARDS, at frame end: checks the guards of up to audit_sample live
 * objects, going on where the last audit stopped (so that over frames it covers the
 * whole pool); a damage is reported once. Concurrency: while other threads allocate
 * and free (the entries' state is atomic, guard bytes are read with atomic loads);
 * excluded from kiln_pool_fini by the caller; takes carve_lock. */
KILN_INTERNAL void kiln_pool_audit(kiln_pool *pool);

/* KILN_DEBUG_SITES: logs the live objects grouped by site (POOL_LEAK_SITE, then
 * POOL_LEAK_SUMMARY). No other thread may use the pool meanwhile (kiln_pool_destroy). */
KILN_INTERNAL void kiln_pool_report_leaks(kiln_pool *pool);


/* Whether obj lies in a block this pool carved, in its object area: the address bitmap
 * first (nothing is read at an address kiln does not own), then the block header. A
 * destroyed pool owns nothing, and its serial is checked before any header is read:
 * its blocks went back to the block pool and may be another thread's by now. */
static inline bool kiln_pool_owns_fully(const kiln_pool *pool, const void *obj) {
    uint64_t serial = kiln_load_relaxed(&pool->serial);   /* 0 once destroyed */
    if (serial == 0 || !kiln_address_map_has(&pool->map, obj)) return false;
    const kiln_pool_block *block = (const kiln_pool_block *)((uintptr_t)obj & ~pool->block_mask);
    return block->magic == KILN_POOL_BLOCK_MAGIC && block->pool == pool &&
           block->serial == serial && (uintptr_t)obj - block->first <= pool->last_start;
}

/* The entry of the known-block table that addr's block maps to. Any thread. */
static inline _Atomic uintptr_t *kiln_pool_known_entry(const kiln_pool *pool, uintptr_t addr) {
    return (_Atomic uintptr_t *)&pool->known[(addr >> pool->block_shift) % KILN_POOL_KNOWN];
}

/* The same answer, from the pool's table of known blocks when obj's block is in it
 * (nothing is read but the pool's own memory), else from kiln_pool_owns_fully. Either
 * way obj lies from slot 0's object to the last slot's (one unsigned compare: below
 * slot 0 wraps round), never in the header nor in the tail past the last whole slot.
 * An entry's window [first, first + last_start] lies inside its block, so a pointer in
 * it is in that block; empty entries (KILN_POOL_NO_BLOCK) are refused here, and exist
 * only while the pool has no object block. The inline free (kiln/pool.h) makes the same
 * test without that last compare. */
static inline bool kiln_pool_owns(const kiln_pool *pool, const void *obj) {
    uintptr_t addr = (uintptr_t)obj;
    uintptr_t first = kiln_load_relaxed(kiln_pool_known_entry(pool, addr));
    if (kiln_likely(addr - first <= pool->last_start && first != KILN_POOL_NO_BLOCK)) return true;
    return kiln_pool_owns_fully(pool, obj);
}

/* Whether cache is bound to this pool: the one test the runtime's alloc and free make
 * before they use a cache. An unbound cache (first use, flushed at detach) and the cache
 * of another pool at the same index (a context of another runtime) both fail it, and
 * go to the checks of the slow path. Serials are unique in the process, so a cache
 * never matches a pool it was not bound to. A destroyed pool (serial 0) matches its
 * never-bound spare cache, which is empty: its slow path refuses the call. */
static inline bool kiln_pool_cache_bound(const kiln_pool *pool, const kiln_pool_cache *cache) {
    return kiln_load_relaxed(&cache->serial) == kiln_load_relaxed(&pool->serial);
}

static inline void *kiln_pool_cache_alloc(kiln_pool *pool, kiln_pool_cache *cache) {
    kiln_magazine *mag = cache->loaded;
    if (kiln_unlikely(mag->count == 0)) return kiln_pool_alloc_slow(pool, cache);
    void *obj = mag->objects[--mag->count];
    kiln_owner_inc(&cache->allocs);
    if (kiln_unlikely(pool->flags & KILN_POOL_ALLOC_HOOKS)) return kiln_pool_on_alloc(pool, obj);   /* debug too */
    return obj;
}

/* obj has passed kiln_pool_owns (and, with KILN_POOL_FREE_HOOKS, the hooks). */
static inline void kiln_pool_cache_free(kiln_pool *pool, kiln_pool_cache *cache, void *obj) {
    kiln_magazine *mag = cache->loaded;
    if (kiln_unlikely(mag->count == mag->capacity)) {
        kiln_pool_free_slow(pool, cache, obj);
        return;
    }
    mag->objects[mag->count++] = obj;
    kiln_owner_inc(&cache->frees);
}

#endif /* KILN_ALLOC_POOL_H */
