/* kiln/heap.h — tags: every byte kiln hands out attributed to a subsystem, with budgets.
 *
 *   kiln_tag audio  = kiln_tag_create(rt, &(kiln_tag_desc){ .name = "Audio",
 *                                                            .budget = 64 << 20 });
 *   kiln_tag stream = kiln_tag_create(rt, &(kiln_tag_desc){ .name = "Audio/Streaming",
 *                                                            .parent = audio,
 *                                                            .budget = 16 << 20,
 *                                                            .policy = KILN_BUDGET_REFUSE });
 *   kiln_pool *voices = kiln_pool_create(rt, &(kiln_pool_desc){ .size = 256, .tag = audio });
 *   kiln_arena_set_tag(level_arena, stream);
 *
 * What a tag counts: the memory its allocators hold from the block pool, at block
 * granularity (a pool's blocks, its magazines' included; an arena's blocks and large
 * mappings; a handle table's slots), charged when they take it and released when they
 * give it back. A child's bytes count toward its parent too ("Audio/Streaming" rolls up
 * into "Audio"). Frame memory is never tagged: it is its own line (kiln_stats). The
 * charges happen on the allocators' slow paths only: an allocation served from memory
 * the allocator holds costs the tag nothing.
 *
 * Budgets (bytes live at once, the tag's children included):
 * - KILN_BUDGET_WARN: TAG_BUDGET_NEAR when the tag's live bytes reach desc.warn_percent
 *   of it, TAG_BUDGET_EXCEEDED when they pass it, each once per episode (an episode ends
 *   when they fall 10 points under warn_percent).
 * - KILN_BUDGET_REFUSE: a charge that would pass it is refused: the pool's or arena's
 *   allocation that needed the memory returns NULL (counted in its failures and in the
 *   tag's refusals), a table's create fails; TAG_BUDGET_REFUSED once per frame per tag.
 * Exactness: a tag's live bytes are exact at every instant (one atomic step per charge
 * and per level). A REFUSE budget is passed by no block, mapping or table, not even for
 * a moment, with one exception: the blocks that hold a pool's magazines
 * (kiln_pool_stats.magazine_blocks), which a free may need, are charged whatever the
 * budget (refusing one would lose the object freed), and such a pass is told as
 * TAG_BUDGET_EXCEEDED. Two charges that meet at a parent's budget may both be refused
 * where one would have fit.
 *
 * Tags live as long as their runtime; KILN_MAX_TAGS at most. A tag's id is unique among
 * the live runtimes (another's is refused, TAG_FOREIGN); a tag kept from a runtime
 * destroyed since may pass for one of a runtime made later. Several tags read while they
 * are charged are each exact at its own instant: compare a parent with its children
 * (the parent includes them) in figures read while their allocators are quiet. Concurrency: every call
 * here may be made from any thread at the same time, but kiln_tag_push and
 * kiln_tag_pop (the context's own thread) and kiln_arena_set_tag (the arena's owner). */
#ifndef KILN_HEAP_H
#define KILN_HEAP_H

#include <kiln/core.h>
#include <kiln/memory.h>
#include <kiln/pool.h>
#include <kiln/stats.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most tags a runtime holds. */
#define KILN_MAX_TAGS 254   /* so that a heap allocation's tag fits its slot's byte */

typedef struct kiln_tag_desc {
    const char        *name;     /* required, unique in the runtime; copied (47 bytes kept) */
    kiln_tag           parent;   /* {0}: none. A child's bytes count toward its parent too */
    size_t             budget;   /* bytes live at once, children included; 0: none */
    kiln_budget_policy policy;   /* KILN_BUDGET_WARN (0) or KILN_BUDGET_REFUSE */
} kiln_tag_desc;

/* A new tag; {0}, logged and counted in api_errors, for a bad rt (RUNTIME_NULL,
 * RUNTIME_INVALID), a NULL desc (TAG_DESC_NULL), a NULL or empty name (TAG_NAME_NULL), a
 * name another tag has (TAG_NAME_TAKEN), a parent that is no tag of rt's (TAG_INVALID,
 * TAG_FOREIGN), a policy that is none (TAG_POLICY_INVALID), or when KILN_MAX_TAGS exist
 * (TAG_TOO_MANY). Not inside a log callback (LOG_CALLBACK_CALL). Concurrency: any thread. */
KILN_API kiln_tag kiln_tag_create(kiln_runtime *rt, const kiln_tag_desc *desc);

/* The tag of that name (compared whole, as kept: 47 bytes); {0} when none has it, a NULL
 * name (TAG_NAME_NULL) or a bad rt. Concurrency: any thread. */
KILN_API kiln_tag kiln_tag_find(kiln_runtime *rt, const char *name);

/* Makes tag the calling thread's current tag and returns the one before, for
 * kiln_tag_pop; the current tag is the default of the heap calls that take none
 * (kiln_tag_current reads it). A tag that is no tag of ctx's runtime is refused
 * (TAG_INVALID, TAG_FOREIGN): the current tag stays and is returned. {0} for a bad ctx.
 * Concurrency: ctx's own thread. */
KILN_API kiln_tag kiln_tag_push(kiln_ctx *ctx, kiln_tag tag);

/* Restores previous (what kiln_tag_push returned) as the current tag; refused like
 * kiln_tag_push's tag. Concurrency: ctx's own thread. */
KILN_API void kiln_tag_pop(kiln_ctx *ctx, kiln_tag previous);

/* The calling thread's current tag; {0} for none or a bad ctx. Concurrency: ctx's own
 * thread. */
KILN_API kiln_tag kiln_tag_current(kiln_ctx *ctx);

/* Moves arena to tag ({0}: untagged): the memory it holds now is released from its old
 * tag and charged to the new one, and what it takes later is charged there. A REFUSE
 * budget the move would pass refuses it (TAG_BUDGET_REFUSED; the arena keeps its tag).
 * Refused, logged: a NULL or destroyed arena (ARENA_NULL, ARENA_DESTROYED), a frame arena
 * (ARENA_FRAME_TAG: frame memory is its own line), a tag that is no tag of the arena's
 * runtime (TAG_INVALID, TAG_FOREIGN). Concurrency: the arena's owner (as its allocations;
 * KILN_DEBUG_OWNERSHIP counts and logs a call from another thread, ARENA_WRONG_THREAD). */
KILN_API void kiln_arena_set_tag(kiln_arena *arena, kiln_tag tag);

/* The arena's tag; {0} for none or a bad arena. Concurrency: any thread. */
KILN_API kiln_tag kiln_arena_tag(const kiln_arena *arena);

/* One tag's figures after its name and before its numbers: X(type, name, doc) per field,
 * in struct order (kiln/stats_fields.h). */
#define KILN_TAG_STATS_FIELDS(X)                                                               \
    X(uint32_t, id,              "the tag's id (kiln_tag.id)")                                 \
    X(uint32_t, parent,          "the parent's id; 0: none")                                   \
    X(uint64_t, live_bytes,      "bytes charged now, its children's included")                 \
    X(uint64_t, own_bytes,       "of those, charged to this tag itself")                       \
    X(uint64_t, peak_bytes,      "the most live_bytes has been")                               \
    X(uint64_t, budget,          "bytes live at once; 0: none")                                \
    X(bool,     refuse,          "KILN_BUDGET_REFUSE")                                         \
    X(uint64_t, allocs,          "blocks, large mappings and table slots charged to it")       \
    X(uint64_t, frees,           "of those, given back")                                       \
    X(uint64_t, refusals,        "charges refused at its budget (REFUSE)")                     \
    X(uint64_t, budget_warnings, "TAG_BUDGET_EXCEEDED episodes (WARN)")                        \
    /* end of list */

typedef struct kiln_tag_stats {
    char name[48];   /* the tag's name (an array, so not in the list) */
    KILN_TAG_STATS_FIELDS(KILN_STATS_MEMBER)
} kiln_tag_stats;

/* Every tag's figures, in creation order, into out[0, cap); returns how many tags there
 * are (more than cap: the rest left out). Refused: a bad rt, a NULL out with cap > 0
 * (STATS_NULL_OUT). Concurrency: any thread; figures of tags charged meanwhile are each
 * exact at some instant of the call. */
KILN_API size_t kiln_stats_tags(kiln_runtime *rt, kiln_tag_stats *out, size_t cap);

/* One tag's figures: true, or false (out zeroed) for a bad rt, a NULL out
 * (STATS_NULL_OUT), or a tag that is no tag of rt's (TAG_INVALID, TAG_FOREIGN).
 * Concurrency: any thread. */
KILN_API bool kiln_tag_stats_get(kiln_runtime *rt, kiln_tag tag, kiln_tag_stats *out);


/* ---- The general heap ----
 *
 *   char *name = kiln_heap_alloc(ctx, ui_tag, 40, 0);
 *   name = kiln_heap_realloc(ctx, name, 4000, 0);    (keeps ui_tag)
 *   kiln_heap_free(other_ctx, name);                 (any thread)
 *
 * Variable-sized memory of any lifetime, each allocation charged to its tag ({0}:
 * untagged). Sizes up to KILN_HEAP_CLASS_MAX (less when the block is small: a quarter
 * block at most, less the debug layer's guards) are served from 64 size classes, each
 * a multiple of 16 bytes that wastes under 12.5 % of a request above 64 bytes; the
 * classes are served as pools are (kiln/pool.h): each context caches two magazines per
 * class, and an alloc or free the cache serves takes no lock and makes no atomic
 * read-modify-write. A free may come from any thread, whoever allocated. Larger sizes
 * get a dedicated mapping each; a freed one is kept for reuse (at most
 * KILN_HEAP_KEPT_MAPPINGS of up to 32 MiB each, together 64 MiB or half the bytes of the
 * live large allocations if that is more, each used again for the smallest request it
 * holds at most twice over: all of it usable), and kiln_trim unmaps the kept ones and
 * gives the classes' free blocks back.
 *
 * Tags: an allocation's bytes (its class's size, or its mapping's) count toward its tag
 * from alloc to free, whichever thread frees it. A context draws credit from a tag's
 * account in chunks of KILN_HEAP_TAG_CREDIT bytes (more for a bigger allocation) and
 * gives back what it holds above twice that, so an alloc or free the credit covers
 * touches no shared counter. So:
 * - a REFUSE budget is never passed: the credit is charged against it. An allocation
 *   may be refused early, by at most the credit the other contexts hold (2 *
 *   KILN_HEAP_TAG_CREDIT each at most);
 * - a tag's live_bytes and own_bytes (kiln_tag_stats) count allocations, not credit:
 *   exact whenever the threads that allocate and free its memory are quiet (at a frame
 *   end, with the frame's jobs done); peak_bytes and the budget warnings count credit
 *   too (an upper bound);
 * - allocs and frees count heap allocations (and the blocks, mappings and tables the
 *   tag's other allocators took).
 *
 * Checks, in every build, each logged with the pointer and counted (heap bad_frees):
 * a free, realloc, usable_size or tag of a pointer the heap did not hand out (another
 * runtime's, malloc's, a pool's, the stack): HEAP_FOREIGN_POINTER, nothing touched; of
 * a pointer into an allocation, not at its start: HEAP_INTERIOR_POINTER; a free or
 * realloc of a class allocation already freed: HEAP_DOUBLE_FREE (its slot's byte says
 * so; a large allocation freed twice is a foreign pointer by then). Two threads that
 * free the same allocation at once are both caught only with KILN_DEBUG_CHECKS (an
 * atomic exchange of the slot's byte instead of a load and a store, on every free);
 * without it, one free may pass, and that allocation is handed out twice. A double free
 * after the memory was handed out again frees the new owner's allocation: no allocator
 * can tell that apart.
 *
 * Debug layer (kiln_desc.debug): the classes take KILN_DEBUG_FILL, GUARDS, POISON,
 * GUARD_PAGES and SITES as pools do (POOL_GUARD_DAMAGED, POOL_LEAK_SITE name the class:
 * "heap 48"); a large allocation is filled (FILL), poisoned while its freed mapping
 * is kept for reuse (POISON), and its site kept (SITES); its whole mapping is usable
 * (kiln_heap_usable_size), so no guard lies past it. kiln_sites_top counts heap
 * allocations with the rest; kiln_destroy logs the live heap allocations
 * (HEAP_OBJECTS_LIVE, then the classes' leak sites).
 *
 * Concurrency: kiln_heap_alloc, calloc, realloc and free are the context's thread's (ctx
 * is the caller's own); a free of memory another thread allocated is fine, and so are
 * usable_size and tag from any thread, of memory the caller may use. */

/* The size classes, and the largest; bigger requests are mapped. */
#define KILN_HEAP_CLASSES       64
#define KILN_HEAP_CLASS_MAX     16384u
/* Freed large mappings kept for reuse, at most. */
#define KILN_HEAP_KEPT_MAPPINGS 64
/* The largest alignment the heap takes (the largest block size). */
#define KILN_HEAP_MAX_ALIGN     ((size_t)1 << 30)
/* The chunk of a tag's budget a context draws at a time. */
#define KILN_HEAP_TAG_CREDIT    (32u * 1024u)

#if defined(__GNUC__)
#  define KILN_HEAP_LOG2_(x) (63u - (unsigned)__builtin_clzll((unsigned long long)(x)))
#else
static inline unsigned kiln_heap_log2_(unsigned long long x) {
    unsigned k = 0;
    while (x >>= 1) k++;
    return k;
}
#  define KILN_HEAP_LOG2_(x) kiln_heap_log2_(x)
#endif

/* The size class of a request of size bytes, 0 to KILN_HEAP_CLASS_MAX (0 counts as 1):
 * up to 128 bytes one class per 16 bytes; above, with 2^k < size <= 2^(k+1), eight
 * classes 2^(k-3) apart. Each class is the smallest that holds the request and wastes
 * under 12.5 % of it above 64 bytes (beyond the rounding to 16). Any thread: a pure
 * function. */
static inline uint32_t kiln_heap_size_class(size_t size) {
    if (size <= 128) return size == 0 ? 0 : (uint32_t)((size + 15) / 16 - 1);
    unsigned k = KILN_HEAP_LOG2_(size - 1);   /* 7.. */
    size_t step = (size_t)1 << (k - 3);   /* a shift, not a division: the fast path's */
    return 8u + (k - 7u) * 8u + (uint32_t)((size - ((size_t)1 << k) + step - 1) >> (k - 3)) - 1u;
}

/* The bytes of a class's allocations (0 to KILN_HEAP_CLASSES - 1). Any thread: a pure
 * function. */
static inline size_t kiln_heap_class_bytes(uint32_t size_class) {
    if (size_class < 8) return ((size_t)size_class + 1) * 16;
    uint32_t j = size_class - 8, k = 7 + j / 8;
    return ((size_t)1 << k) + (size_t)(j % 8 + 1) * ((size_t)1 << (k - 3));
}

/* size bytes (0 counts as 1) aligned to align (0: 16; else a power of two up to
 * KILN_HEAP_MAX_ALIGN) and charged
 * to tag, or NULL:
 * - when memory runs out (memory_limit, the OS), or tag's REFUSE budget (or a parent's)
 *   would be passed (TAG_BUDGET_REFUSED, once per frame); counted in the heap's failures;
 * - refused, logged: a bad ctx (CONTEXT_NULL, CONTEXT_INVALID, CONTEXT_DETACHED), a tag
 *   that is no tag of ctx's runtime (TAG_INVALID, TAG_FOREIGN), an align that is no power
 *   of two up to KILN_HEAP_MAX_ALIGN (HEAP_BAD_ALIGN), a size that cannot be mapped with
 *   its alignment (size + align over PTRDIFF_MAX: HEAP_TOO_LARGE).
 * Concurrency: ctx's own thread. */
KILN_API void *kiln_heap_alloc(kiln_ctx *ctx, kiln_tag tag, size_t size, size_t align);

/* count * size zeroed bytes (aligned to 16); NULL as kiln_heap_alloc, and for a product
 * that overflows (HEAP_TOO_LARGE). Concurrency: ctx's own thread. */
KILN_API void *kiln_heap_calloc(kiln_ctx *ctx, kiln_tag tag, size_t count, size_t size);

/* ptr resized to size bytes, its contents kept up to the smaller size, its tag kept:
 * - in place when the new size is in the same class, or fits a large allocation's mapping
 *   (and needs more than half of it); a large one that must grow or shrink moves its pages
 *   (mremap), not its bytes, when align is at most the page size, and a growth takes a
 *   quarter more than asked (kiln_heap_usable_size says so), so that small steps move
 *   pages rarely;
 * - ptr NULL: kiln_heap_alloc with ctx's current tag (kiln_tag_push);
 * - size 0: ptr freed, NULL returned;
 * - NULL when the memory or a budget refuses: ptr is untouched and still live;
 * - a bad ptr (HEAP_FOREIGN_POINTER, HEAP_INTERIOR_POINTER, HEAP_DOUBLE_FREE) or align:
 *   NULL, logged, nothing freed.
 * align 0 keeps 16; ptr must have been allocated with an alignment that align divides
 * or else it moves. Concurrency: ctx's own thread; ptr may come from any thread. */
KILN_API void *kiln_heap_realloc(kiln_ctx *ctx, void *ptr, size_t size, size_t align);

/* Frees ptr, whoever allocated it; NULL is a no-op. A bad pointer is logged, counted and
 * ignored (see Checks above); so is a free through a bad ctx (ptr stays live).
 * Concurrency: ctx's own thread, concurrently with any other use of the heap. */
KILN_API void kiln_heap_free(kiln_ctx *ctx, void *ptr);

/* The bytes usable at ptr (at least the size asked): its class's size, or its mapping's
 * from ptr on. 0 for NULL, and for a pointer no live runtime's heap handed out (logged
 * on stderr, HEAP_FOREIGN_POINTER: no runtime to name) or an interior one
 * (HEAP_INTERIOR_POINTER). Concurrency: any thread, while ptr is live. */
KILN_API size_t kiln_heap_usable_size(const void *ptr);

/* ptr's tag ({0}: untagged), as kiln_heap_usable_size finds ptr; {0} where that says 0.
 * Concurrency: any thread, while ptr is live. */
KILN_API kiln_tag kiln_heap_tag(const void *ptr);

/* kiln_heap_alloc with the caller's site (file, line), kept under KILN_DEBUG_SITES. file
 * must outlive the runtime (a string literal such as __FILE__). */
KILN_API void *kiln_heap_alloc_at(kiln_ctx *ctx, kiln_tag tag, size_t size, size_t align,
                                  const char *file, int line);

#ifdef KILN_TRACK_SITES
#  define kiln_heap_alloc(ctx, tag, size, align) \
       kiln_heap_alloc_at((ctx), (tag), (size), (align), __FILE__, __LINE__)
#endif

/* ---- The malloc shape: the heap for code that holds no context ----
 *
 *   void *lua_alloc(void *ud, void *p, size_t old, size_t n) {   (Lua's lua_Alloc)
 *       if (n == 0) { kiln_free(p); return NULL; }
 *       return kiln_realloc(p, n);
 *   }
 *   LD_PRELOAD=libkiln-malloc.so ./program      (malloc and operator new themselves)
 *
 * Third-party code that takes a malloc-shaped callback, C++ new, and whole programs
 * (libkiln-malloc.so; pkg-config kiln-malloc) are served by the heap of the process
 * runtime, through the calling thread's context of it:
 * - The process runtime is the one the program named (kiln_set_process_runtime), or else
 *   one kiln makes when a thread with no context of it first calls here: from
 *   KILN_OPTIONS over defaults of no workers (KILN_OPTIONS that kiln_create refuses are
 *   logged, PROCESS_RUNTIME_OPTIONS, and the defaults used). kiln's lives until the
 *   process ends: its kiln_destroy is refused (PROCESS_RUNTIME_DESTROY); its stats=exit
 *   report is written at exit.
 * - The context: the one the thread attached to the process runtime (kiln_attach, a
 *   worker's), so that its current tag (kiln_tag_push) tags what a library allocates
 *   between a push and a pop; else one these calls attach for the thread, detached (its
 *   caches flushed) when the thread exits. Memory outlives its thread: any thread frees
 *   it. A thread that cannot have a context (its exit has begun, or the job system's
 *   slots are all taken: MALLOC_SHARED_CONTEXT, once) is served through one shared
 *   cache under a lock.
 * - A free (or realloc) takes a pointer of any live runtime's heap, from any thread. A
 *   pointer of no runtime's heap (another allocator's) is logged (HEAP_FOREIGN_POINTER
 *   through the process runtime's log), counted (its heap's bad_frees) and left alone;
 *   an interior or double free likewise (HEAP_INTERIOR_POINTER, HEAP_DOUBLE_FREE).
 * - Failure: NULL with errno ENOMEM (memory, a REFUSE budget, a size over PTRDIFF_MAX,
 *   a mapping the OS refuses, as its overcommit rule refuses glibc's): not logged, as
 *   malloc, but for the limits a program set, told as their own docs say
 *   (MEMORY_LIMIT_REACHED, TAG_BUDGET_REFUSED); EINVAL for an alignment that is no
 *   power of two (kiln_aligned_alloc; kiln_posix_memalign returns it). malloc(0) and
 *   realloc(p, 0) as glibc: the first a unique pointer, the second frees p and returns
 *   NULL.
 * - Signals: kiln_free may be called from a signal handler, also one that interrupted a
 *   call here on the same thread (the free is then done as that call returns). The
 *   other calls are no more async-signal-safe than malloc.
 * - fork: the process runtime's locks are taken around it; parent and child go on.
 * Concurrency: every call here, any thread, at the same time. */

/* The calling thread's context: the one it attached last (kiln_attach; a worker's own)
 * and has not detached, else the one the malloc shape attached for it; NULL when none.
 * A context of a runtime destroyed since is forgotten. Concurrency: any thread (its own
 * context). */
KILN_API kiln_ctx *kiln_ctx_current(void);

/* The runtime that serves the malloc shape, made now if there is none (see above); NULL
 * only when none can be made (no memory). Concurrency: any thread. */
KILN_API kiln_runtime *kiln_process_runtime(void);

/* Names rt the process runtime, so that the malloc shape is served from its contexts:
 * call it before its threads allocate (a thread keeps the context it has: one kiln's own
 * process runtime gave it before this serves it until it exits). false, logged: rt not
 * live, or a process runtime named already (PROCESS_RUNTIME_TAKEN). rt stays the
 * program's: destroy it after the last thread that allocates through it; then kiln's own
 * serves again. While allocations malloc handed out are live (under libkiln-malloc.so
 * the C library's own are among them: stdio's buffers, threads' TLS tables), its
 * kiln_destroy keeps it, serving on (PROCESS_RUNTIME_IN_USE, a warning), rather than
 * unmap memory others hold. Concurrency: any thread. */
KILN_API bool kiln_set_process_runtime(kiln_runtime *rt);

/* malloc, calloc, realloc, free, aligned_alloc, posix_memalign and malloc_usable_size
 * (see above), each through the calling thread's context of the process runtime with
 * its current tag; realloc keeps an allocation's tag. usable_size: 0 for NULL or a
 * pointer no live runtime's heap handed out. Concurrency: any thread. */
KILN_API void  *kiln_malloc(size_t size);
KILN_API void  *kiln_calloc(size_t count, size_t size);
KILN_API void  *kiln_realloc(void *ptr, size_t size);
KILN_API void   kiln_free(void *ptr);
KILN_API void  *kiln_aligned_alloc(size_t align, size_t size);
KILN_API int    kiln_posix_memalign(void **out, size_t align, size_t size);
KILN_API size_t kiln_malloc_usable_size(const void *ptr);

/* The heap's figures: X(type, name, doc) per field, in struct order. */
#define KILN_HEAP_STATS_FIELDS(X)                                                              \
    X(uint64_t, live_bytes,     "bytes of live allocations: their classes' sizes, and large "  \
                                "allocations' mappings")                                       \
    X(uint64_t, live_objects,   "live allocations")                                            \
    X(uint64_t, allocs,         "successful allocations (realloc's moves included)")           \
    X(uint64_t, frees,          "allocations freed (realloc's moves included)")                \
    X(uint64_t, failures,       "allocations that returned NULL: memory or a REFUSE budget")   \
    X(uint64_t, bad_frees,      "frees, reallocs and lookups of pointers refused: foreign, "   \
                                "interior, double")                                            \
    X(uint64_t, double_frees,   "of those, HEAP_DOUBLE_FREE")                                  \
    X(uint64_t, class_bytes,    "bytes of the blocks the size classes hold (objects, free "    \
                                "slots, magazines, headers)")                                  \
    X(uint64_t, class_free_bytes, "of those, not in live allocations")                         \
    X(uint64_t, large_live,     "large allocations live")                                      \
    X(uint64_t, large_bytes,    "their mappings' bytes")                                       \
    X(uint64_t, large_kept,     "freed large mappings kept for reuse")                         \
    X(uint64_t, large_kept_bytes, "their bytes")                                               \
    X(uint64_t, large_reused,   "large allocations served by a kept mapping")                  \
    X(uint64_t, reallocs_in_place, "reallocs that kept their address")                         \
    X(uint64_t, remaps,         "large reallocs that moved pages (mremap), not bytes")         \
    /* end of list */

typedef struct kiln_heap_stats {
    KILN_HEAP_STATS_FIELDS(KILN_STATS_MEMBER)
} kiln_heap_stats;

/* One size class's figures. */
#define KILN_HEAP_CLASS_STATS_FIELDS(X)                                                        \
    X(uint32_t, size,           "bytes per allocation of the class")                           \
    X(uint64_t, live,           "allocations live")                                            \
    X(uint64_t, allocs,         "allocations served")                                          \
    X(uint64_t, frees,          "frees")                                                       \
    X(uint64_t, free_slots,     "slots carved and free (cached or in the depot)")              \
    X(uint32_t, blocks,         "blocks held, magazines' included")                            \
    /* end of list */

typedef struct kiln_heap_class_stats {
    KILN_HEAP_CLASS_STATS_FIELDS(KILN_STATS_MEMBER)
} kiln_heap_class_stats;

/* Where the memory kiln reserved from the OS is, each byte in exactly one field; read
 * while the threads that allocate are quiet (a frame end with its jobs done), the
 * fields add up to reserved exactly. X(type, name, doc) per field, in struct order. */
#define KILN_MEMORY_STATS_FIELDS(X)                                                            \
    X(uint64_t, reserved,    "bytes reserved from the OS: the block pool's reservations and "  \
                             "every dedicated mapping (kiln_block_pool_stats.reserved_bytes)") \
    X(uint64_t, tagged,      "held for tags: their roots' live_bytes (kiln_tag_stats)")       \
    X(uint64_t, untagged,    "held by allocators without a tag, and untagged heap "            \
                             "allocations")                                                    \
    X(uint64_t, frame,       "frame memory: the frame and job arenas' blocks and mappings")    \
    X(uint64_t, heap_free,   "the heap classes' blocks not in live allocations: free slots, "  \
                             "magazines, headers")                                             \
    X(uint64_t, heap_kept,   "freed large heap mappings kept for reuse")                       \
    X(uint64_t, free_blocks, "blocks no allocator holds (free, or given back by a trim)")      \
    /* end of list */

typedef struct kiln_memory_stats {
    KILN_MEMORY_STATS_FIELDS(KILN_STATS_MEMBER)
} kiln_memory_stats;

/* The memory's breakdown; false (out zeroed) for a bad rt or a NULL out
 * (STATS_NULL_OUT). Concurrency: any thread; each field is exact at some instant of the
 * call, and they add up to reserved when the runtime's threads are quiet. */
KILN_API bool kiln_stats_memory(kiln_runtime *rt, kiln_memory_stats *out);

/* The heap's figures; false (out zeroed) for a bad rt or a NULL out (STATS_NULL_OUT).
 * Concurrency: any thread; exact while the heap's users are quiet. */
KILN_API bool kiln_stats_heap(kiln_runtime *rt, kiln_heap_stats *out);

/* Each size class's figures, smallest first, into out[0, cap); returns how many classes
 * there are (KILN_HEAP_CLASSES; a class too big for the block size is served as large and
 * reads 0 but its size). Refused: a bad rt, a NULL out with cap > 0 (STATS_NULL_OUT).
 * Concurrency: any thread. */
KILN_API size_t kiln_stats_heap_classes(kiln_runtime *rt, kiln_heap_class_stats *out, size_t cap);

/* ---- Inline alloc and free (see "Inline fast paths" in core.h) ----
 * kiln_heap_alloc and kiln_heap_free serve a class allocation from the calling context's
 * cache inline when: the heap has no debug layer nor KILN_DEBUG_CHECKS (class_max 0
 * otherwise; KILN_DEBUG_GUARD_PAGES only moves where slots lie, which the heads say, so it
 * keeps the inline paths), align is at most 16, the size fits a class, the tag is {0} or of the
 * context's runtime's shape and the context holds credit for it, and the magazine has an
 * object (alloc) or room (free); a free also needs its block in the heap's table of known
 * blocks, the pointer at a slot's start and its slot's byte saying live, and the credit to
 * stay under two chunks. Everything else, and every refusal, is the library's call. */
#define KILN_HEAP_HEAD_KNOWN 1024u

/* One size class's words. */
typedef struct kiln_heap_class_head {
    uint32_t size;          /* bytes per allocation (and per slot) */
    uint32_t first_offset;  /* where slot 0 lies in each of the class's blocks */
    uint32_t tags_offset;   /* where a block's byte per slot lies */
    uint32_t last_start;    /* the last slot's offset from slot 0 */
    uint64_t slot_recip;    /* ceil(2^32 / size): a slot's number by a multiply */
} kiln_heap_class_head;

/* A runtime's heap's first words. */
typedef struct kiln_heap_head {
    uint64_t             class_max;    /* the largest size the inline paths serve; 0: none */
    uint32_t             tag_salt;     /* the runtime's tag ids' high half */
    uint32_t             block_shift;  /* log2 of the block size */
    kiln_heap_class_head classes[KILN_HEAP_CLASSES];
    /* The classes' blocks, direct-mapped by block number modulo KILN_HEAP_HEAD_KNOWN:
     * the block's address with its class in the low 6 bits, or 0 (relaxed atomics). */
    uintptr_t            known[KILN_HEAP_HEAD_KNOWN];
} kiln_heap_head;

/* A context's credit of one tag (kiln's but for the named words). */
typedef struct kiln_heap_credit_head {
    int64_t  credit;        /* bytes drawn from the tag and not handed out */
    uint64_t allocs, frees; /* relaxed atomics: stats readers */
} kiln_heap_credit_head;

/* A context's heap cache: its cache of each class and its credit by slot byte (0: none,
 * 1: untagged, 2 + a tag's slot). */
typedef struct kiln_heap_cache_head {
    kiln_pool_cache_head  classes[KILN_HEAP_CLASSES];
    kiln_heap_credit_head tags[256];
} kiln_heap_cache_head;

/* The slot byte of tag (1: untagged, 2 + its slot) in a runtime of salt, or 0 for an id
 * of another shape (the library then says why: TAG_FOREIGN, TAG_INVALID). A byte of a
 * slot no tag was made in is the library's to refuse too: no context holds credit for
 * it. Any thread: a pure function. */
static inline unsigned kiln_heap_tag_byte(kiln_tag tag, uint32_t salt) {
    uint32_t low = tag.id & 0xffffu;
    if (tag.id == 0) return 1;
    return (tag.id >> 16) == salt && low - 1u < (uint32_t)KILN_MAX_TAGS ? low + 1u : 0;
}

#ifdef KILN_INLINE_PATHS

/* A slot's byte: obj in a block of class k at block. */
static inline unsigned char *kiln_heap_slot_byte(const kiln_heap_class_head *k, uintptr_t block,
                                                 uintptr_t offset) {
    return (unsigned char *)(block + k->tags_offset) + (uint32_t)((offset * k->slot_recip) >> 32);
}

/* The inline alloc, or NULL where it would take the library's call. */
static inline void *kiln_heap_alloc_try_inline(kiln_ctx *ctx, kiln_tag tag, size_t size, size_t align) {
    const kiln_ctx_head *head = kiln_ctx_head_of(ctx);
    if (KILN_HEAD_LIKELY(head != NULL && align <= 16 && (align & (align - 1)) == 0)) {
        const kiln_heap_head *h = head->heap;
        unsigned byte = kiln_heap_tag_byte(tag, h->tag_salt);
        /* class_max 0 (the library's heap): even size 0 is the library's. */
        if (KILN_HEAD_LIKELY(size <= KILN_HEAP_CLASS_MAX && size <= h->class_max && h->class_max != 0 &&
                             byte != 0)) {
            uint32_t c = kiln_heap_size_class(size);
            const kiln_heap_class_head *k = &h->classes[c];
            kiln_heap_credit_head *use = &head->heap_cache->tags[byte];
            kiln_pool_cache_head *cache = &head->heap_cache->classes[c];
            kiln_pool_magazine_head *mag = cache->loaded;
            int64_t credit = KILN_HEAD_LOAD(&use->credit) - (int64_t)k->size;
            if (KILN_HEAD_LIKELY(credit >= 0 && mag->count != 0)) {
                uint32_t n = --mag->count;
                void *obj = kiln_pool_magazine_objects(mag)[n];
                uintptr_t block = (uintptr_t)obj >> h->block_shift << h->block_shift;
                __atomic_store_n(kiln_heap_slot_byte(k, block, (uintptr_t)obj - block - k->first_offset),
                                 (unsigned char)byte, __ATOMIC_RELAXED);
                KILN_HEAD_STORE(&use->credit, credit);
                KILN_OWNER_COUNT(&use->allocs);
                KILN_OWNER_COUNT(&cache->allocs);
                return obj;
            }
        }
    }
    return NULL;
}

static inline void *kiln_heap_alloc_inline(kiln_ctx *ctx, kiln_tag tag, size_t size, size_t align) {
    void *obj = kiln_heap_alloc_try_inline(ctx, tag, size, align);
    return KILN_HEAD_LIKELY(obj != NULL) ? obj : (kiln_heap_alloc)(ctx, tag, size, align);
}

/* The inline free: false where it would take the library's call (nothing done). */
static inline bool kiln_heap_free_try_inline(kiln_ctx *ctx, void *ptr) {
    const kiln_ctx_head *head = kiln_ctx_head_of(ctx);
    if (KILN_HEAD_LIKELY(head != NULL)) {
        const kiln_heap_head *h = head->heap;
        uintptr_t addr = (uintptr_t)ptr;
        uintptr_t known = KILN_HEAD_LOAD(&h->known[(addr >> h->block_shift) % KILN_HEAP_HEAD_KNOWN]);
        if (KILN_HEAD_LIKELY(known != 0 && ((addr ^ known) >> h->block_shift) == 0 && h->class_max != 0)) {
            uintptr_t block = known & ~(uintptr_t)63;
            const kiln_heap_class_head *k = &h->classes[known & 63];
            uintptr_t offset = addr - block - k->first_offset;
            unsigned char *slot = kiln_heap_slot_byte(k, block, offset);
            uint32_t index = (uint32_t)((offset * k->slot_recip) >> 32);
            if (KILN_HEAD_LIKELY(offset <= k->last_start && (uint64_t)index * k->size == offset)) {
                unsigned byte = __atomic_load_n(slot, __ATOMIC_RELAXED);
                kiln_heap_credit_head *use = &head->heap_cache->tags[byte];
                kiln_pool_cache_head *cache = &head->heap_cache->classes[known & 63];
                kiln_pool_magazine_head *mag = cache->loaded;
                int64_t credit = KILN_HEAD_LOAD(&use->credit) + (int64_t)k->size;
                if (KILN_HEAD_LIKELY(byte != 0 && credit <= 2 * (int64_t)KILN_HEAP_TAG_CREDIT &&
                                     mag->count != mag->capacity)) {
                    __atomic_store_n(slot, (unsigned char)0, __ATOMIC_RELAXED);
                    kiln_pool_magazine_objects(mag)[mag->count++] = ptr;
                    KILN_HEAD_STORE(&use->credit, credit);
                    KILN_OWNER_COUNT(&use->frees);
                    KILN_OWNER_COUNT(&cache->frees);
                    return true;
                }
            }
        }
    }
    return false;
}

static inline void kiln_heap_free_inline(kiln_ctx *ctx, void *ptr) {
    if (!kiln_heap_free_try_inline(ctx, ptr)) (kiln_heap_free)(ctx, ptr);
}

#  define kiln_heap_alloc(ctx, tag, size, align) kiln_heap_alloc_inline((ctx), (tag), (size), (align))
#  define kiln_heap_free(ctx, ptr)               kiln_heap_free_inline((ctx), (ptr))
#endif

#ifdef __cplusplus
}
#endif

#endif /* KILN_HEAP_H */
