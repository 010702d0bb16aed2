/* kiln/pool.h — pools of fixed-size objects with per-thread caches.
 *
 * What a pool does:
 * - Each context keeps a small cache per pool: a loaded and a spare magazine (arrays of
 *   free objects).
 * - kiln_pool_alloc and kiln_pool_free touch only that cache (no lock, no atomic
 *   read-modify-write, no shared cache line) until it runs empty or full; then one whole
 *   magazine is exchanged with the pool's shared depot (lock-free).
 * - Objects are carved from blocks of the runtime's block pool.
 * - A free may come from any thread, whoever allocated the object: it lands in the
 *   freeing thread's cache.
 *
 * Bounds:
 * - A context caches at most two magazines per pool; kiln_detach gives them back to the
 *   depot.
 * - capacity is enforced when objects are carved, so at most capacity objects are ever
 *   live.
 * - An alloc can be refused early by at most the free objects other contexts hold in
 *   their caches (at most two magazines each).
 *
 * Concurrency (each function says its own):
 * - kiln_pool_alloc, kiln_pool_alloc_at: the context's thread only.
 * - kiln_pool_free: any thread with its own context, concurrently with other allocs and
 *   frees of the pool.
 * - kiln_pool_create: any thread, concurrently with other creates and destroys; no other
 *   thread may use a pool during or after its kiln_pool_destroy.
 *
 * Checks, in every build:
 * - A free (NULL-safe) is ignored, logged and counted when the pointer is
 *   - not in a block of this pool (a pointer of another pool, of malloc, of the stack:
 *     found in O(1) through an address bitmap and the block header, without reading the
 *     pointer's memory first): POOL_FOREIGN_POINTER;
 *   - outside the block's slots:
 *     - its header, its tail past the last whole slot: POOL_FOREIGN_POINTER;
 *     - past the start of the last slot's object: POOL_INTERIOR_POINTER, since an
 *       object there would run past the slots.
 * - Any use of a destroyed pool is refused, logged and counted (POOL_DESTROYED).
 * - A context that is detached (CONTEXT_DETACHED) or of another runtime
 *   (POOL_WRONG_RUNTIME) is refused: a cache of either would strand objects or move
 *   them into another pool. The fast paths pay one compare for it (is the context's
 *   cache bound to this pool?); the checks run when it says no.
 * - With KILN_POOL_CHECKED (or the runtime's KILN_DEBUG_CHECKS bit), frees are also
 *   checked for double frees (POOL_DOUBLE_FREE) and for pointers into the middle of an
 *   object (POOL_INTERIOR_POINTER).
 *
 * What a pool does NOT do:
 * - detect a double free without KILN_POOL_CHECKED or KILN_DEBUG_CHECKS, unless
 *   KILN_DEBUG_GUARDS or KILN_DEBUG_SITES is on (they detect it too);
 * - lock, or make an atomic read-modify-write, on an alloc or free the cache serves;
 * - hand out more than capacity live objects.
 *
 * Debug layer (kiln_desc.debug; kiln/core.h says what each bit does):
 * - KILN_DEBUG_FILL: objects filled 0xCD when handed out and 0xDD when freed.
 * - KILN_DEBUG_GUARDS: guard bytes around each object, checked on every free and by a
 *   sampled audit at each kiln_frame_end (POOL_GUARD_DAMAGED, with the object, the
 *   offset of the first bad byte and its site).
 * - KILN_DEBUG_POISON: freed objects poisoned for ASan and memcheck.
 * - KILN_DEBUG_GUARD_PAGES: blocks end in an inaccessible page with the objects packed
 *   against it.
 * - KILN_DEBUG_SITES: allocation sites from kiln_pool_alloc_at, and at kiln_pool_destroy
 *   the live objects listed by site (POOL_LEAK_SITE, then POOL_LEAK_SUMMARY beyond 16
 *   sites).
 *   - Define KILN_TRACK_SITES before including kiln and kiln_pool_alloc becomes a macro
 *     passing __FILE__ and __LINE__ to kiln_pool_alloc_at ((kiln_pool_alloc)(ctx, pool)
 *     calls the function itself).
 * - The per-object state and site live in each block's header, out of the objects' way.
 * - With every debug bit off, the alloc and free paths are exactly as fast as without
 *   the layer: the flag word they test anyway carries it. */
#ifndef KILN_POOL_H
#define KILN_POOL_H

#include <kiln/core.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_pool kiln_pool;

enum {
    KILN_POOL_ZERO    = 1u << 0,  /* objects come back zeroed */
    KILN_POOL_CHECKED = 1u << 1,  /* detect double frees and interior pointers (a bit per object) */
    /* Each object is zeroed (its size bytes) when it is freed, so that an object waiting
     * in the pool (a cache, the depot) keeps no pointer from its last use; newly carved
     * objects are zero too. alloc stays a pop: it writes nothing. Only KILN_POOL_ZERO
     * promises a zeroed object from alloc (KILN_DEBUG_FILL still fills 0xCD there).
     * With the debug layer the zeroing follows the checks of the free (guards,
     * double free) and comes before poisoning, and it replaces KILN_DEBUG_FILL's 0xDD
     * freed pattern; guard bytes are never cleared. */
    KILN_POOL_CLEAR_ON_FREE = 1u << 2
};

typedef struct kiln_pool_desc {
    const char *name;          /* copied (47 bytes kept); NULL: "pool" */
    size_t      size;          /* bytes per object, 1 to a quarter of the block size */
    size_t      align;         /* a power of two up to 4096; 0: alignof(max_align_t) */
    size_t      capacity;      /* most live objects; 0: grows without limit */
    uint32_t    flags;         /* KILN_POOL_*; 0: none */
    uint32_t    magazine_size; /* objects per magazine, 2 to 256; 0: 64 for objects up to
                                  128 bytes, fewer for bigger ones (a magazine holds about
                                  8 KiB of objects, at least 4) */
    size_t      reserve;       /* objects carved (and their pages touched) at create, as by
                                  kiln_pool_reserve, and kept carved by kiln_pool_trim; at
                                  most capacity when one is set; 0: none */
    kiln_tag    tag;           /* the tag its blocks are charged to (kiln/heap.h); a block
                                  a REFUSE budget refuses is an alloc that returns NULL
                                  (counted in failures); one that is no tag of the
                                  runtime's refuses create (TAG_INVALID, TAG_FOREIGN).
                                  {0}: untagged */
} kiln_pool_desc;

/* A new pool; NULL when no heap memory is left for its bookkeeping
 * (POOL_OUT_OF_MEMORY), or on a bad desc (logged):
 * - desc NULL: POOL_NULL_DESC;
 * - size not from 1 to a quarter of the block size: POOL_BAD_SIZE;
 * - align neither 0 nor a power of two up to 4096: POOL_BAD_ALIGN;
 * - flags with a bit that is no KILN_POOL_* flag: POOL_BAD_FLAGS;
 * - magazine_size neither 0 nor 2 to 256: POOL_BAD_MAGAZINE_SIZE;
 * - reserve over capacity, or reserve objects' bytes over SIZE_MAX: POOL_BAD_RESERVE.
 * At most 256 pools live per runtime (POOL_TOO_MANY beyond). Blocks are taken as allocs
 * and frees need them, not here, but for desc.reserve: its objects are carved before
 * create returns, as kiln_pool_reserve carves them; a reserve that memory_limit cuts
 * short still makes the pool (POOL_RESERVE_SHORT).
 * Concurrency: any thread, concurrently with other creates and destroys. */
KILN_API kiln_pool *kiln_pool_create(kiln_runtime *rt, const kiln_pool_desc *desc);

/* Logs how many objects are still live (POOL_OBJECTS_LIVE; with KILN_DEBUG_SITES, one
 * more message per allocation site: POOL_LEAK_SITE), then returns every block to the
 * runtime.
 * - No other thread may use the pool during or after the call.
 * - Later calls on it are logged and refused (POOL_DESTROYED); the pool's bookkeeping
 *   lives on until kiln_destroy. */
KILN_API void kiln_pool_destroy(kiln_pool *pool);

/* An object, or NULL:
 * - at capacity: counted; one warning naming the pool (POOL_CAPACITY_REACHED) until an
 *   alloc succeeds again, and at most one a second per pool (threads that keep a pool at
 *   its capacity start a new episode with every free and alloc): the next warning says
 *   how many went unlogged;
 * - when memory runs out;
 * - refused, logged naming the pool:
 *   - a NULL ctx or pool: CONTEXT_NULL, POOL_NULL;
 *   - a destroyed pool: POOL_DESTROYED;
 *   - a detached ctx: CONTEXT_DETACHED;
 *   - a ctx of another runtime than the pool's: POOL_WRONG_RUNTIME.
 * The context's thread only. */
KILN_API void *kiln_pool_alloc(kiln_ctx *ctx, kiln_pool *pool);

/* Frees obj into the calling context's cache; any thread, whoever allocated it. NULL is
 * a no-op.
 * - Bad pointers are logged, counted and ignored (see Checks above).
 * - So is a free through a detached ctx (CONTEXT_DETACHED) or one of another runtime
 *   (POOL_WRONG_RUNTIME): obj stays live, to be freed through a context of the pool's
 *   runtime.
 * Concurrency: any thread with its own context, concurrently with other allocs and frees
 * of the pool. */
KILN_API void kiln_pool_free(kiln_ctx *ctx, kiln_pool *pool, void *obj);

/* Carves objects now, so that count objects can be allocated from the pool without it
 * taking a block from the runtime's block pool, and page-faults the memory they take
 * (no cold first frame). Returns how many objects can now be allocated without a new
 * block: the free objects in the pool's depot (objects idle in contexts' caches are not
 * counted: only their own context can use them; nor is the room left in the block being
 * carved, since a refill that ran out of it partway would take a block). That is at
 * least count on success; at the capacity or memory_limit
 * it carves what it can and returns that, logged (POOL_RESERVE_SHORT, naming the pool
 * and both figures). count 0 carves nothing and returns the figure. The count is not
 * remembered: kiln_pool_trim keeps only desc.reserve.
 * Bad input: 0, logged: a NULL pool (POOL_NULL, on stderr), a destroyed pool
 * (POOL_DESTROYED); count objects whose bytes overflow size_t in a pool without a
 * capacity (POOL_RESERVE_TOO_LARGE) carves nothing and returns the figure.
 * Concurrency: any thread, concurrently with allocs, frees, reserves and trims of the
 * pool (takes the pool's carving lock: an alloc that must carve waits for it). */
KILN_API size_t kiln_pool_reserve(kiln_pool *pool, size_t count);

/* Returns to the runtime's block pool every block of the pool whose objects are all
 * free in the pool's depot, none live and none held in any context's cache (call
 * kiln_pool_flush on each context first to give those back), keeping at least
 * desc.reserve objects carved; returns the number of blocks returned. The blocks that
 * hold the pool's magazines stay (blocks_held - magazine_blocks in kiln_pool_stats
 * are its object blocks). Returned blocks stay mapped in the block pool: kiln_trim
 * gives their pages back to the OS.
 * Bad input: 0, logged: a NULL pool (POOL_NULL, on stderr), a destroyed pool
 * (POOL_DESTROYED).
 * Concurrency: any thread, concurrently with allocs, frees, reserves and trims of the
 * pool: it holds the carving lock for one pass over the depot's objects, and an alloc
 * that finds the depot empty meanwhile waits for it (the cache-hit paths never do). */
KILN_API size_t kiln_pool_trim(kiln_pool *pool);

/* Gives ctx's cached objects of the pool (its two magazines) back to the pool's depot,
 * where kiln_pool_trim and other contexts find them; kiln_detach does the same for every
 * pool. The cache refills at its next alloc or free.
 * Bad input: ignored, logged: a NULL ctx (CONTEXT_NULL) or pool (POOL_NULL), a
 * destroyed pool (POOL_DESTROYED), a detached ctx (CONTEXT_DETACHED), a ctx of another
 * runtime than the pool's (POOL_WRONG_RUNTIME).
 * Concurrency: the context's thread only, concurrently with any other thread's use of
 * the pool. */
KILN_API void kiln_pool_flush(kiln_ctx *ctx, kiln_pool *pool);

/* kiln_pool_alloc with the caller's site (file, line), kept under KILN_DEBUG_SITES.
 * file must outlive the pool (a string literal such as __FILE__). */
KILN_API void *kiln_pool_alloc_at(kiln_ctx *ctx, kiln_pool *pool, const char *file, int line);

#ifdef KILN_TRACK_SITES
#  define kiln_pool_alloc(ctx, pool) kiln_pool_alloc_at((ctx), (pool), __FILE__, __LINE__)
#endif

/* ---- Inline alloc and free (see "Inline fast paths" in core.h) ----
 * kiln_pool_alloc and kiln_pool_free serve the calling context's cache inline when the
 * cache is bound to the pool, the pool has no alloc or free hook (KILN_POOL_ZERO,
 * CHECKED, CLEAR_ON_FREE and the debug bits send every call to the library), the
 * magazine has an object (alloc) or room (free), and, for a free, obj lies in one of the
 * pool's known blocks, which proves it is the pool's. Everything else, and every refusal,
 * is the library's call, documented above. */
#define KILN_POOL_HEAD_KNOWN    32u
/* An empty entry, left only while the pool has no object block (before its first
 * allocation, or after kiln_pool_trim returned them all): every other entry names one of
 * the pool's blocks. Its window, [2^63, 2^63 + the last object's offset in a block],
 * holds no address a program can have on x86-64 or AArch64 (not canonical). The library
 * refuses pointers there (POOL_FOREIGN_POINTER), but after such a trim an inline free
 * through a cache that is still bound (not flushed) and has room takes one for the
 * pool's, uncounted, and a later alloc of that context hands it out. */
#define KILN_POOL_HEAD_NO_BLOCK ((uintptr_t)1 << 63)

/* A pool's first words. */
typedef struct kiln_pool_head {
    uint64_t  key;          /* equals a cache's serial when the inline paths may use it */
    uint32_t  index;        /* the pool's cache in every context */
    uint32_t  block_shift;  /* log2 of the runtime's block size */
    uintptr_t last_start;   /* the last object's offset from a block's first one */
    uintptr_t known[KILN_POOL_HEAD_KNOWN];   /* first objects of known blocks, by block
                                                number modulo 32 (relaxed atomics) */
} kiln_pool_head;

/* A magazine's header; its object pointers follow it. The owning context's. */
typedef struct kiln_pool_magazine_head {
    void     *link;
    uint32_t  count;        /* objects held */
    uint32_t  capacity;
} kiln_pool_magazine_head;

/* A context's cache of one pool (64 bytes; kiln's but for the named words). */
struct kiln_pool_cache_head {
    kiln_pool_magazine_head *loaded;      /* alloc pops here, free pushes here */
    void                    *spare;
    uint64_t                 allocs;      /* relaxed atomics: stats readers */
    uint64_t                 frees;
    uint64_t                 moved[2];
    uint64_t                 serial;      /* the pool life it is bound to (relaxed atomics) */
    uint32_t                 marks[2];
};

#ifdef KILN_INLINE_PATHS
/* Whether ctx's cache of the pool may be used inline: bound to the pool's life, and the
 * pool free of hooks (the pool's key). The context's thread. */
static inline bool kiln_pool_cache_open(const kiln_pool_cache_head *cache, const kiln_pool_head *pool) {
    return KILN_HEAD_LOAD(&cache->serial) == KILN_HEAD_LOAD(&pool->key);
}

static inline void **kiln_pool_magazine_objects(kiln_pool_magazine_head *mag) {
    return (void **)(void *)(mag + 1);
}

static inline void *kiln_pool_alloc_inline(kiln_ctx *ctx, kiln_pool *pool) {
    const kiln_ctx_head *head = kiln_ctx_head_of(ctx);
    if (KILN_HEAD_LIKELY(head != NULL && pool != NULL)) {
        const kiln_pool_head *p = (const kiln_pool_head *)(void *)pool;
        kiln_pool_cache_head *cache = &head->pool_caches[p->index];
        if (KILN_HEAD_LIKELY(kiln_pool_cache_open(cache, p))) {
            kiln_pool_magazine_head *mag = cache->loaded;
            if (KILN_HEAD_LIKELY(mag->count != 0)) {
                uint32_t n = --mag->count;
                KILN_OWNER_COUNT(&cache->allocs);
                return kiln_pool_magazine_objects(mag)[n];
            }
        }
    }
    return (kiln_pool_alloc)(ctx, pool);
}

static inline void kiln_pool_free_inline(kiln_ctx *ctx, kiln_pool *pool, void *obj) {
    const kiln_ctx_head *head = kiln_ctx_head_of(ctx);
    if (KILN_HEAD_LIKELY(head != NULL && pool != NULL)) {
        const kiln_pool_head *p = (const kiln_pool_head *)(void *)pool;
        uintptr_t addr = (uintptr_t)obj;
        uintptr_t first = KILN_HEAD_LOAD(&p->known[(addr >> p->block_shift) % KILN_POOL_HEAD_KNOWN]);
        kiln_pool_cache_head *cache = &head->pool_caches[p->index];
        if (KILN_HEAD_LIKELY(addr - first <= p->last_start && kiln_pool_cache_open(cache, p))) {
            kiln_pool_magazine_head *mag = cache->loaded;
            if (KILN_HEAD_LIKELY(mag->count != mag->capacity)) {
                kiln_pool_magazine_objects(mag)[mag->count++] = obj;
                KILN_OWNER_COUNT(&cache->frees);
                return;
            }
        }
    }
    (kiln_pool_free)(ctx, pool, obj);
}

#  define kiln_pool_alloc(ctx, pool)     kiln_pool_alloc_inline((ctx), (pool))
#  define kiln_pool_free(ctx, pool, obj) kiln_pool_free_inline((ctx), (pool), (obj))
#endif

#ifdef __cplusplus
}
#endif

#endif /* KILN_POOL_H */
