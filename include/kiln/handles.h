/* kiln/handles.h — generational handle tables: references that stay safe across threads.
 *
 * A table stores items of one size inline in slots that never move. A handle names a
 * slot and the generation the slot had when the item was made; freeing the item bumps
 * the generation, so every copy of the handle, on every thread, goes stale at once.
 *
 *   kiln_handles *enemies = kiln_handles_create(rt, &(kiln_handles_desc){
 *       .name = "enemies", .item_size = sizeof(struct enemy) });
 *   struct enemy *e;
 *   kiln_handle h = kiln_handle_alloc(ctx, enemies, (void **)&e);   // e is zeroed
 *   ...
 *   struct enemy *target = kiln_handle_get(enemies, h);   // any thread; NULL once freed
 *   kiln_handle_free(ctx, enemies, h);                    // false if already stale
 *
 * Or typed, so the compiler rejects a bullet handle where an enemy handle is expected:
 *   KILN_HANDLE_TYPE(enemy, struct enemy)
 *   enemy_table t = enemy_table_create(rt, "enemies", 20000);
 *   struct enemy *e; enemy_handle h = enemy_alloc(ctx, t, &e);
 *   e = enemy_get(t, h); enemy_free(ctx, t, h);
 *
 * The reuse rule: how long a pointer from kiln_handle_get stays valid.
 * - A freed slot is reused only after both of:
 *   1. the next kiln_frame_end: every frame job has finished, so jobs and the driving
 *      thread may keep pointers until the end of the frame;
 *   2. a quiescent point after the free on every other attached thread, one that runs
 *      outside the frame clock (a render or IO thread).
 * - Such a thread keeps a pointer only until its next quiescent point. Its quiescent
 *   points:
 *   - kiln_handles_quiescent(ctx);
 *   - the reset of its own frame arena, its frame boundary:
 *     kiln_arena_reset(kiln_frame_arena(ctx));
 *   - kiln_detach.
 * - Background jobs (kiln_run_ex with .background) live across frames. While a worker
 *   runs one, that worker counts as a thread outside the frame clock whose quiescent
 *   point is the job's return:
 *   - its pointers stay valid until the job returns;
 *   - a long job may call kiln_handles_quiescent(ctx) between pieces of work to let
 *     reuse go on.
 * - An attached thread that blocks for a long time without a quiescent point delays the
 *   reuse of every freed slot: logged once, HANDLES_RECLAIM_STALLED (by kiln_frame_end,
 *   after 120 frame ends without progress). Call kiln_handles_quiescent before blocking.
 * - Until reuse, the freed item's memory keeps its last contents.
 * - A thread that is not attached takes no part in this rule: see kiln_handle_get.
 *
 * What a handle is:
 * - 24 bits of slot index, 8 bits of table tag, 32 bits of generation (odd while the
 *   slot is live). {0} is never valid.
 * - The tag: a process-wide counter cycling through 1..255 at each create.
 * - A handle of another table is detected by its tag (unless that table's tag is the
 *   same: 1 in 255 tables), and by the index and generation in any case.
 * - A slot whose generation would wrap is retired for good (retired_slots).
 *
 * Costs:
 * - get is wait-free: one load with acquire and a compare, no lock, and on a hit no
 *   write at all. A miss adds one relaxed atomic increment to one of the table's miss
 *   counters (the stale count is striped by slot), so the miss counts are exact.
 * - alloc and free touch only the calling context's cache of the table (a short array
 *   of free slot indices) until it runs empty or full, then exchange a batch with the
 *   table under a lock taken once per batch.
 * - free also makes one compare-and-swap on the slot's generation, so that of two
 *   threads freeing the same handle exactly one succeeds.
 *
 * Concurrency (each function says its own):
 * - any thread: kiln_handle_get (on a thread that is not attached, what its pointer is
 *   good for: see there), kiln_handle_free (with its own context), the stats calls;
 * - the context's thread only: kiln_handle_alloc, kiln_handle_alloc_at,
 *   kiln_handles_quiescent;
 * - create and destroy: any thread, concurrently with other creates and destroys; no
 *   other thread may use a table during or after its destroy.
 *
 * What a table does NOT do:
 * - grow: the slots of the whole capacity are reserved at create;
 * - move an item: slots never move;
 * - log a stale lookup: kiln_handle_get counts it (looking up a stale handle is normal
 *   use);
 * - reuse a slot before the reuse rule allows it. */
#ifndef KILN_HANDLES_H
#define KILN_HANDLES_H

#include <kiln/core.h>
#include <kiln/stats_fields.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_handle { uint64_t bits; } kiln_handle;   /* bits == 0: no object */
typedef struct kiln_handles kiln_handles;

typedef struct kiln_handles_desc {
    const char *name;          /* copied (47 bytes kept); NULL: "handles" */
    size_t      item_size;     /* each slot holds one item of this size, zeroed on alloc;
                                  1 byte to 1 MiB */
    size_t      item_align;    /* a power of two up to 4096; 0: alignof(max_align_t) */
    uint32_t    capacity;      /* most live items, up to 16777215; 0: a default of 65536 */
    uint32_t    reserve;       /* slots whose memory is touched (page-faulted) at create, so
                                  the first frame that allocates them faults no page; at most
                                  the capacity; 0: none beyond what create does */
    kiln_tag    tag;           /* the tag its slots' mapping is charged to (kiln/heap.h), at
                                  create: a REFUSE budget it would pass refuses create; one
                                  that is no tag of the runtime's too (TAG_INVALID,
                                  TAG_FOREIGN). {0}: untagged */
} kiln_handles_desc;

/* The figures of one table. Counts are exact when no thread allocates or frees
 * meanwhile; read while others do, each figure is a recent value. The list: those after
 * its name, X(type, name, doc) per field, in struct order (kiln/stats_fields.h). */
#define KILN_HANDLES_STATS_FIELDS(X)                                                           \
    X(uint64_t, item_size,       "bytes per item, as asked")                                   \
    X(uint64_t, capacity,        "most live items, as asked")                                  \
    X(uint64_t, live,            "allocs - frees")                                             \
    X(uint64_t, peak_live,       "the most live seen at a frame end or a stats read (a burst " \
                                 "made and freed inside one frame is not seen: an exact peak " \
                                 "would need a shared counter on every alloc)")                \
    X(uint64_t, allocs,          "successful allocations")                                     \
    X(uint64_t, frees,           "items freed")                                                \
    X(uint64_t, failures,        "allocs that returned {0}: capacity reached")                 \
    X(uint64_t, stale_lookups,   "kiln_handle_get of the zero handle or of one shaped like "   \
                                 "this table's whose slot is not at its generation (freed, "   \
                                 "reused, or never reached: forged); exact, however many "     \
                                 "threads miss at the same instant")                           \
    X(uint64_t, double_frees,    "kiln_handle_free of a handle already freed")                 \
    X(uint64_t, foreign_handles, "get or free of a handle of another table or of a shape no "  \
                                 "handle of this table has; free of a forged generation too "  \
                                 "(exact, like stale_lookups)")                                \
    X(uint64_t, retired_slots,   "slots whose generation ran out; never used again")           \
    X(uint64_t, pending_reuse,   "freed slots not reusable yet: waiting for a frame end or "   \
                                 "an outside thread's quiescent point")                        \
    /* end of list */

typedef struct kiln_handles_stats {
    char name[48];   /* the table's name, cut at 47 bytes (an array, so not in the list) */
    KILN_HANDLES_STATS_FIELDS(KILN_STATS_MEMBER)
} kiln_handles_stats;

/* A new table; NULL when memory runs out, or on a bad desc (logged):
 * - desc NULL: HANDLES_NULL_DESC;
 * - item_size 0 or over 1 MiB: HANDLES_BAD_ITEM_SIZE;
 * - item_align neither 0 nor a power of two up to 4096: HANDLES_BAD_ALIGN;
 * - capacity over 16777215: HANDLES_BAD_CAPACITY;
 * - reserve over the capacity (0's default included): HANDLES_BAD_RESERVE.
 * The slots of the whole capacity are reserved at once (address space; pages are touched
 * as slots are first used, the first desc.reserve slots' at create) and counted against
 * memory_limit. With a capacity, one HANDLES_CAPACITY_NEAR warning per episode when the
 * live items reach kiln_desc.warn_percent of it, judged at each frame end and stats
 * read (so it may come a frame late; kiln_desc.warn_percent says when an episode ends).
 * At most 64 tables live per runtime (HANDLES_TOO_MANY beyond).
 * Concurrency: any thread, concurrently with other creates and destroys. */
KILN_API kiln_handles *kiln_handles_create(kiln_runtime *rt, const kiln_handles_desc *desc);

/* Logs how many items are still live (HANDLES_ITEMS_LIVE), then returns the slots'
 * memory. NULL is a no-op.
 * - No other thread may use the table during or after the call.
 * - Later calls on it are logged and refused (HANDLES_DESTROYED); its bookkeeping lives
 *   on until kiln_destroy. */
KILN_API void kiln_handles_destroy(kiln_handles *table);

/* A handle to a new zeroed item, its address in *item (item may be NULL).
 * - The item is zeroed before the handle exists. What the caller writes into it
 *   afterwards reaches other threads the way the caller publishes the handle (a release
 *   store, kiln_run, a frame boundary), as with any memory.
 * - Table full: {0} and *item = NULL, counted (failures); one warning naming the table
 *   (HANDLES_FULL) until the table hands out slots again: an alloc that takes a batch of
 *   slots from the table (the one that ends the episode, or any context's next refill).
 *   An alloc served from slots a context's cache already held does not end the episode:
 *   it touches nothing the table shares.
 *   - A table can be full while live < capacity: slots freed in this frame are not
 *     reused yet, and each other context may hold up to 32 free slots in its cache
 *     (given back at its detach).
 * - Refused: {0} and *item = NULL, logged naming the table:
 *   - a NULL ctx or table: CONTEXT_NULL, HANDLES_NULL;
 *   - a destroyed table: HANDLES_DESTROYED;
 *   - a detached ctx: CONTEXT_DETACHED;
 *   - a ctx of another runtime than the table's: HANDLES_WRONG_RUNTIME.
 * Concurrency: the context's thread only. */
KILN_API kiln_handle kiln_handle_alloc(kiln_ctx *ctx, kiln_handles *table, void **item);

/* kiln_handle_alloc that also records the caller's file:line.
 * - With KILN_DEBUG_SITES: kiln_handles_destroy (and kiln_destroy) list the items still
 *   live grouped by site (HANDLES_LEAK_SITE). Without the bit: kiln_handle_alloc.
 * - Define KILN_TRACK_SITES before including kiln and kiln_handle_alloc passes
 *   __FILE__/__LINE__ itself.
 * Concurrency: the context's thread only. */
KILN_API kiln_handle kiln_handle_alloc_at(kiln_ctx *ctx, kiln_handles *table, void **item,
                                          const char *file, int line);
#ifdef KILN_TRACK_SITES
#  define kiln_handle_alloc(ctx, table, item) \
       kiln_handle_alloc_at((ctx), (table), (item), __FILE__, __LINE__)
#endif

/* The item, or NULL for a stale, freed, zero, forged or foreign handle (stale and
 * foreign lookups are counted; not logged: looking up a stale handle is normal use).
 * Concurrency: any thread, wait-free. On an attached thread (a job's included) the
 * pointer is valid under the reuse rule above.
 * - On a thread that is not attached the answer is right at the instant of the call
 *   (NULL: h was stale then; else its live item), but no part of the reuse rule covers
 *   the pointer: only attached contexts take part in reclaim. It stays valid only while
 *   the caller knows by its own synchronization that h is not freed, or that no
 *   kiln_frame_end completes between h's free and the pointer's last use (say the
 *   driver waits for this thread before it ends the frame).
 * - Being handed h by a job, or using the pointer while that job runs, does not cover
 *   it: the job's lifetime protects the job's own pointers, not this thread's.
 * - Attach such a thread (kiln_attach) and it keeps its pointers until its own
 *   quiescent points. */
KILN_API void *kiln_handle_get(kiln_handles *table, kiln_handle h);

/* Frees the item: h is stale at once for every thread.
 * - false, logged and counted:
 *   - a handle already freed: HANDLE_DOUBLE_FREE;
 *   - the zero handle: HANDLE_NULL;
 *   - a forged or foreign handle: HANDLE_FOREIGN.
 * - false and logged, the item left live: the ctx and table refusals of
 *   kiln_handle_alloc (CONTEXT_NULL, HANDLES_NULL, HANDLES_DESTROYED, CONTEXT_DETACHED,
 *   HANDLES_WRONG_RUNTIME).
 * Concurrency: any thread, whoever allocated it, with its own context. */
KILN_API bool kiln_handle_free(kiln_ctx *ctx, kiln_handles *table, kiln_handle h);

/* A quiescent point of the calling thread: it holds no pointer from kiln_handle_get at
 * this point. For attached threads outside the frame clock (see the reuse rule);
 * harmless on any other. Cheap: one store and a fence.
 * Concurrency: the context's thread only. */
KILN_API void kiln_handles_quiescent(kiln_ctx *ctx);

/* ---------- the live-item walk ---------- */

/* Called once per live item a walk finds: its handle and its address. */
typedef void (*kiln_handle_visit_fn)(void *user, kiln_handle h, void *item);

/* Calls fn(user, h, item) for every live item of the table, in slot order: the loop
 * "update every live entity" of a game.
 * - The walk reads each slot's generation (an acquire load, as kiln_handle_get), so it
 *   costs a pass over the slots handed out so far, live or not, and no lock but one
 *   short one at its start.
 * - Items allocated or freed during the walk (by fn or by other threads) may or may not
 *   be visited. An item another thread has just allocated may be visited before that
 *   thread has written it (zeroed, or half written): as for a handle looked up before
 *   its owner published it, what fn reads of an item is the client's to order. A
 *   visited item's pointer follows kiln_handle_get's lifetime rule (the reuse rule
 *   above): fn may free the item it is given (or any other) with its own
 *   context, and the pointer stays valid until the reuse rule lets the slot go.
 * - fn may call kiln_handle_get, alloc and free on this table and may start another
 *   walk. kiln_handles_destroy of a table that is being walked is refused
 *   (HANDLES_WALK_ACTIVE), so a walk never reads a returned mapping.
 * - Refused, logged, nothing visited: a NULL table (HANDLES_NULL), a destroyed table
 *   (HANDLES_DESTROYED), a NULL fn (HANDLES_NULL_VISIT).
 * Concurrency: any thread, while others get, alloc and free. */
KILN_API void kiln_handles_foreach(kiln_handles *table, kiln_handle_visit_fn fn, void *user);

/* kiln_handles_foreach split over jobs (kiln_parallel_for over the slots handed out so
 * far, grain slots per range; grain 0: kiln picks), returning when every range is done.
 * fn runs on many threads at once, each with the item it was given; ranges are disjoint,
 * so no item is visited twice. The walk's rules above hold, and fn runs inside a job
 * (what a job may not do is refused there too). fn is given no context and must not use
 * the caller's, which belongs to the calling thread: to free the items a parallel walk
 * picks, collect their handles (one list per range, say) and free them after it returns,
 * or free them from kiln_handles_foreach.
 * - Refused, logged, nothing visited: the refusals of kiln_handles_foreach (a NULL
 *   table's HANDLES_NULL goes to ctx's runtime's log and api_errors, not to stderr), and
 *   a NULL ctx (CONTEXT_NULL), a detached one (CONTEXT_DETACHED), or one of another
 *   runtime than the table's (HANDLES_WRONG_RUNTIME).
 * Concurrency: the context's thread (like kiln_parallel_for); inside a job too. */
KILN_API void kiln_handles_parallel_for(kiln_ctx *ctx, kiln_handles *table, size_t grain,
                                        kiln_handle_visit_fn fn, void *user);

/* Copies the figures of up to cap live tables (in slot order) and returns how many
 * tables are live, which may exceed cap. out may be NULL when cap is 0. Any thread. */
KILN_API size_t kiln_stats_handles(kiln_runtime *rt, kiln_handles_stats *out, size_t cap);

/* The figures of one table (a destroyed one too, until kiln_destroy). false for bad
 * input: a NULL table (HANDLES_NULL) or out (STATS_NULL_OUT). Any thread. */
KILN_API bool kiln_handles_stats_get(kiln_handles *table, kiln_handles_stats *out);

/* The parts of a handle, for logs and debug overlays. */
static inline uint32_t kiln_handle_index(kiln_handle h) { return (uint32_t)(h.bits & 0xffffffu); }
static inline uint32_t kiln_handle_generation(kiln_handle h) { return (uint32_t)(h.bits >> 32); }
static inline bool kiln_handle_is_null(kiln_handle h) { return h.bits == 0; }
static inline bool kiln_handle_equal(kiln_handle a, kiln_handle b) { return a.bits == b.bits; }

#ifdef __cplusplus
#  define KILN_ALIGNOF(T) alignof(T)
#else
#  define KILN_ALIGNOF(T) _Alignof(T)
#endif
/* A zeroed desc, whatever fields it gains, without -Wmissing-field-initializers: C's
 * universal zero initialiser, C++'s empty braces. */
#ifdef __cplusplus
#  define KILN_ZERO_DESC {}
#else
#  define KILN_ZERO_DESC { 0 }
#endif
/* The typed wrappers a file does not call must not warn (clang's -Wunused-function). */
#if defined(__GNUC__) || defined(__clang__)
#  define KILN_TYPED_FN static inline __attribute__((unused))
#else
#  define KILN_TYPED_FN static inline
#endif

/* KILN_HANDLE_TYPE(name, T) declares a typed table and a typed handle for items of type T.
 * - The types name##_table and name##_handle. Handles of two typed tables are distinct
 *   struct types, so passing one where the other is expected does not compile.
 * - Inline functions: name##_table_create(rt, label, capacity), name##_table_destroy(t),
 *   name##_alloc(ctx, t, T **item), name##_get(t, h), name##_free(ctx, t, h),
 *   name##_handle_is_null(h), and name##_alloc_at(ctx, t, item, file, line), which
 *   records the site (name##_alloc records none).
 * - The walks: name##_foreach(t, fn, user) and name##_parallel_for(ctx, t, grain, fn,
 *   user), with fn a name##_visit_fn, void fn(void *user, name##_handle h, T *item). */
#define KILN_HANDLE_TYPE(prefix, T)                                                        \
    typedef struct prefix##_handle { kiln_handle raw; } prefix##_handle;                   \
    typedef struct prefix##_table { kiln_handles *raw; } prefix##_table;                   \
    KILN_TYPED_FN prefix##_table prefix##_table_create(kiln_runtime *rt, const char *label, \
                                                   uint32_t capacity) {                    \
        kiln_handles_desc desc = KILN_ZERO_DESC;                                           \
        desc.name = label;                                                                 \
        desc.item_size = sizeof(T);                                                        \
        desc.item_align = KILN_ALIGNOF(T);                                                 \
        desc.capacity = capacity;                                                          \
        prefix##_table t = { kiln_handles_create(rt, &desc) };                             \
        return t;                                                                          \
    }                                                                                      \
    KILN_TYPED_FN void prefix##_table_destroy(prefix##_table t) { kiln_handles_destroy(t.raw); } \
    KILN_TYPED_FN prefix##_handle prefix##_alloc_at(kiln_ctx *ctx, prefix##_table t, T **item, \
                                                const char *file, int line) {              \
        void *p = 0;                                                                       \
        prefix##_handle h = { kiln_handle_alloc_at(ctx, t.raw, &p, file, line) };          \
        if (item) *item = (T *)p;                                                          \
        return h;                                                                          \
    }                                                                                      \
    KILN_TYPED_FN prefix##_handle prefix##_alloc(kiln_ctx *ctx, prefix##_table t, T **item) { \
        return prefix##_alloc_at(ctx, t, item, 0, 0);                                      \
    }                                                                                      \
    KILN_TYPED_FN T *prefix##_get(prefix##_table t, prefix##_handle h) {                   \
        return (T *)kiln_handle_get(t.raw, h.raw);                                         \
    }                                                                                      \
    KILN_TYPED_FN bool prefix##_free(kiln_ctx *ctx, prefix##_table t, prefix##_handle h) { \
        return kiln_handle_free(ctx, t.raw, h.raw);                                        \
    }                                                                                      \
    KILN_TYPED_FN bool prefix##_handle_is_null(prefix##_handle h) { return h.raw.bits == 0; } \
    typedef void (*prefix##_visit_fn)(void *user, prefix##_handle h, T *item);             \
    typedef struct prefix##_visit { prefix##_visit_fn fn; void *user; } prefix##_visit;    \
    KILN_TYPED_FN void prefix##_visit_untyped(void *user, kiln_handle h, void *item) {     \
        const prefix##_visit *v = (const prefix##_visit *)user;                            \
        prefix##_handle typed = { h };                                                     \
        v->fn(v->user, typed, (T *)item);                                                  \
    }                                                                                      \
    KILN_TYPED_FN void prefix##_foreach(prefix##_table t, prefix##_visit_fn fn, void *user) { \
        prefix##_visit v = { fn, user };                                                   \
        kiln_handles_foreach(t.raw, fn ? prefix##_visit_untyped : 0, &v);                  \
    }                                                                                      \
    KILN_TYPED_FN void prefix##_parallel_for(kiln_ctx *ctx, prefix##_table t, size_t grain, \
                                           prefix##_visit_fn fn, void *user) {             \
        prefix##_visit v = { fn, user };                                                   \
        kiln_handles_parallel_for(ctx, t.raw, grain, fn ? prefix##_visit_untyped : 0, &v); \
    }

/* ---- Inline get, alloc and free (see "Inline fast paths" in core.h) ----
 * kiln_handle_get finds a live handle's item inline; a miss (stale, freed, zero, forged,
 * foreign, a destroyed table) is the library's call, which counts it as documented.
 * kiln_handle_alloc pops a slot from the calling context's cache of the table, and
 * kiln_handle_free pushes one there, inline when the cache is bound to this life of the
 * table and has a slot (alloc) or room (free); everything else (an empty or full cache,
 * a NULL, detached or foreign context, a destroyed or foreign table, a refused handle, a
 * slot whose generations run out) is the library's call. */
#define KILN_HANDLES_HEAD_INDEX_MASK 0xffffffu   /* a handle's low 24 bits: the slot */
#define KILN_HANDLES_HEAD_BATCH      32u         /* slots a context's cache holds per list */

/* A table's first words; read-only while the table lives (capacity and serial 0 once
 * destroyed). */
typedef struct kiln_handles_head {
    char     *slots;      /* slot i at slots + i * stride: its 64-bit word first */
    size_t    stride;
    size_t    header;     /* the item's offset in its slot */
    uint32_t  capacity;
    uint32_t  tag_bits;   /* the table's tag, in the bits above the index */
    uint64_t  serial;     /* this life of the table, unique in the process; 0: destroyed */
    size_t    item_size;
    const uint64_t *reclaim_epoch;   /* the runtime's; a free records it (seq_cst) */
    uint32_t  index;      /* the table's cache in every context */
    uint32_t  gen_max;    /* a slot retires before its generation passes this */
} kiln_handles_head;

/* A freed slot waiting in a cache, with the reclaim epoch of its free (64 bits: epochs
 * count frame ends and never wrap). */
typedef struct kiln_handle_reuse_head {
    uint32_t index;
    uint32_t unused;
    uint64_t epoch;
} kiln_handle_reuse_head;

/* A context's cache of one table: written by the context's thread only; stats readers
 * read the counts (relaxed atomics). */
struct kiln_handle_cache_head {
    uint64_t serial;            /* the table life it is bound to; 0: unbound (empty) */
    uint32_t ready_count;
    uint32_t freed_count;
    uint64_t freed_last_epoch;  /* the epoch of freed[freed_count - 1] */
    uint64_t allocs;
    uint64_t frees;
    uint32_t ready[KILN_HANDLES_HEAD_BATCH];               /* free slots, popped from the top */
    kiln_handle_reuse_head freed[KILN_HANDLES_HEAD_BATCH]; /* in the order of the frees */
};

/* The word a slot holds while h is its live handle: h plus one. A free or never-used
 * slot's word has an even generation in its high half, which no key has (a live handle's
 * generation is odd), and the zero handle's key, 1, is no slot's word. */
static inline uint64_t kiln_handle_key(kiln_handle h) {
    return h.bits + 1u;
}

/* The inline get's miss, out of line: h did not prove live (the inline test above
 * failed); what kiln_handle_get does then: counts a stale or foreign lookup (a destroyed
 * table: HANDLES_DESTROYED, logged) and returns NULL; a NULL table: HANDLES_NULL. Use
 * kiln_handle_get: a live handle given here is counted as stale. Concurrency:
 * kiln_handle_get's. */
KILN_API void *kiln_handle_get_missed(kiln_handles *table, kiln_handle h);

#if defined(__GNUC__)
/* The pop and the push of a cache, shared by the inline paths and the library. */

/* Slot index's word: its generation, and while live its handle's key. */
static inline uint64_t *kiln_handle_head_word(const kiln_handles_head *t, uint32_t index) {
    return (uint64_t *)(void *)(t->slots + (size_t)index * t->stride);
}

/* Hands out the top of the n > 0 ready slots of a cache bound to t; its item is zero
 * already (the exchange that filled the cache zeroed it). The cache's thread. */
static inline kiln_handle kiln_handle_cache_head_pop(const kiln_handles_head *t,
                                                     kiln_handle_cache_head *cache, uint32_t n,
                                                     void **item) {
    uint32_t index = cache->ready[--n];
    __atomic_store_n(&cache->ready_count, n, __ATOMIC_RELAXED);
    uint64_t *word = kiln_handle_head_word(t, index);
    /* its word is free (an even generation), and only this cache holds the slot */
    uint32_t gen = (uint32_t)(__atomic_load_n(word, __ATOMIC_RELAXED) >> 32) + 1u;
    kiln_handle h = { (uint64_t)gen << 32 | t->tag_bits | index };
    /* release: the zeroed item happens before any get that sees the new generation. */
    __atomic_store_n(word, kiln_handle_key(h), __ATOMIC_RELEASE);
    KILN_OWNER_COUNT(&cache->allocs);
    if (item) *item = (char *)word + t->header;
    return h;
}

/* Makes h stale, its slot free at the next (even) generation, when h (index below the
 * capacity) is its slot's live handle: true then; false, nothing changed, when it is not
 * (only the live handle's key matches the slot's word: tag, index and an odd
 * generation), with that word in *seen. Any thread: of two that free one handle exactly
 * one wins (seq_cst, and the stale generation comes before any later seq_cst read in
 * the single total order, which the reuse rule's epoch read needs). */
static inline bool kiln_handle_head_release(const kiln_handles_head *t, kiln_handle h, uint64_t *seen) {
    uint64_t free_word = (uint64_t)(uint32_t)(kiln_handle_generation(h) + 1u) << 32;
    *seen = kiln_handle_key(h);
    return __atomic_compare_exchange_n(kiln_handle_head_word(t, kiln_handle_index(h)), seen,
                                       free_word, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

/* Frees h into a cache bound to t with room, h's index below the capacity and its
 * generation not the slot's last (gen + 2 <= gen_max): true when h was its slot's live
 * handle, and its slot waits in the cache for reuse; false as kiln_handle_head_release.
 * The cache's thread; h's slot may be freed by any thread at once. */
static inline bool kiln_handle_cache_head_push(const kiln_handles_head *t,
                                               kiln_handle_cache_head *cache, kiln_handle h,
                                               uint64_t *seen) {
    if (!kiln_handle_head_release(t, h, seen)) return false;
    uint32_t index = kiln_handle_index(h);
    KILN_OWNER_COUNT(&cache->frees);
    uint64_t epoch = __atomic_load_n(t->reclaim_epoch, __ATOMIC_SEQ_CST);
    uint32_t n = __atomic_load_n(&cache->freed_count, __ATOMIC_RELAXED);
    cache->freed[n].index = index;
    cache->freed[n].epoch = epoch;
    __atomic_store_n(&cache->freed_last_epoch, epoch, __ATOMIC_RELAXED);
    __atomic_store_n(&cache->freed_count, n + 1u, __ATOMIC_RELAXED);
    return true;
}
#endif

#ifdef KILN_INLINE_PATHS
static inline void *kiln_handle_get_inline(kiln_handles *table, kiln_handle h) {
    const kiln_handles_head *t = (const kiln_handles_head *)(const void *)table;
    uint32_t index = (uint32_t)h.bits & KILN_HANDLES_HEAD_INDEX_MASK;
    if (KILN_HEAD_LIKELY(t != NULL && index < t->capacity)) {
        char *slot = t->slots + (size_t)index * t->stride;
        /* acquire: pairs with the alloc's release store of the word, so the zeroed item
         * is visible. One compare proves the table's tag, the generation and liveness. */
        if (KILN_HEAD_LIKELY(__atomic_load_n((const uint64_t *)(const void *)slot, __ATOMIC_ACQUIRE) ==
                             kiln_handle_key(h)))
            return slot + t->header;
    }
    return kiln_handle_get_missed(table, h);
}

/* ctx's cache of the table when ctx is attached and the cache is bound to this life of
 * the table (a destroyed table's serial, 0, matches only unbound caches, which are
 * empty and full alike), else NULL. The context's thread. */
static inline kiln_handle_cache_head *kiln_handle_cache_of(kiln_ctx *ctx, const kiln_handles_head *t) {
    const kiln_ctx_head *head = kiln_ctx_head_of(ctx);
    if (KILN_HEAD_LIKELY(head != NULL && t != NULL)) {
        kiln_handle_cache_head *cache = &head->handle_caches[t->index];
        if (KILN_HEAD_LIKELY(KILN_HEAD_LOAD(&cache->serial) == t->serial)) return cache;
    }
    return NULL;
}

static KILN_HEAD_ALWAYS_INLINE kiln_handle kiln_handle_alloc_inline(kiln_ctx *ctx, kiln_handles *table,
                                                                     void **item) {
    const kiln_handles_head *t = (const kiln_handles_head *)(const void *)table;
    kiln_handle_cache_head *cache = kiln_handle_cache_of(ctx, t);
    if (KILN_HEAD_LIKELY(cache != NULL)) {
        uint32_t n = KILN_HEAD_LOAD(&cache->ready_count);
        if (KILN_HEAD_LIKELY(n != 0)) return kiln_handle_cache_head_pop(t, cache, n, item);
    }
    return (kiln_handle_alloc)(ctx, table, item);
}

/* A handle the push refuses is refused again, and reported, by the library's call: its
 * key never matches its slot's word again (generations only grow). */
static KILN_HEAD_ALWAYS_INLINE bool kiln_handle_free_inline(kiln_ctx *ctx, kiln_handles *table,
                                                             kiln_handle h) {
    const kiln_handles_head *t = (const kiln_handles_head *)(const void *)table;
    kiln_handle_cache_head *cache = kiln_handle_cache_of(ctx, t);
    uint64_t seen;
    if (KILN_HEAD_LIKELY(cache != NULL && kiln_handle_index(h) < t->capacity &&
                         KILN_HEAD_LOAD(&cache->freed_count) != KILN_HANDLES_HEAD_BATCH &&
                         (uint64_t)kiln_handle_generation(h) + 2u <= t->gen_max &&
                         kiln_handle_cache_head_push(t, cache, h, &seen)))
        return true;
    return (kiln_handle_free)(ctx, table, h);
}

#  define kiln_handle_alloc(ctx, table, item) kiln_handle_alloc_inline((ctx), (table), (item))
#  define kiln_handle_free(ctx, table, h)     kiln_handle_free_inline((ctx), (table), (h))
#  define kiln_handle_get(table, h) kiln_handle_get_inline((table), (h))
#endif

#ifdef __cplusplus
}
#endif

#endif /* KILN_HANDLES_H */
