/* alloc/heap.h — the general heap (kiln/heap.h): size classes served as pools are
 * (each class is a kiln_pool, alloc/pool.h, whose object blocks keep a byte per slot),
 * dedicated mappings for larger sizes (alloc/heap_large.c), and each allocation's tag.
 *
 * A slot's byte: 0 while the slot is free, KILN_HEAP_UNTAGGED for an untagged allocation,
 * else its tag's slot in the runtime's table + KILN_HEAP_FIRST_TAG. Written by the alloc
 * (relaxed: the program hands the pointer over to whoever frees it, which orders the
 * two), cleared by the free; a free that finds 0 is a double free.
 *
 * Tags are charged through credit: each context holds, per tag, bytes drawn from the
 * tag's account (kiln_tag_draw) and not yet handed out; an alloc takes its class's size
 * from it and a free gives it back to the freeing context; a draw or give-back happens
 * only when the credit runs out or passes 2 * KILN_HEAP_TAG_CREDIT. Untagged allocations
 * draw from the runtime's untagged account the same way.
 *
 * Who owns what:
 *   kiln_heap_cache    one context's: its thread writes it; the counters are atomics that
 *                      stats readers sum. credit is its thread's alone.
 *   class pools        as alloc/pool.h says.
 *   large registry     under its lock (alloc/heap_large.c).
 *   counters           relaxed atomics (statistics). */
#ifndef KILN_ALLOC_HEAP_H
#define KILN_ALLOC_HEAP_H

#include <kiln/heap.h>

#include "pool.h"
#include "size_class.h"

#define KILN_HEAP_FREE       0u   /* a slot's byte: free */
#define KILN_HEAP_UNTAGGED   1u   /* an untagged allocation */
#define KILN_HEAP_FIRST_TAG  2u   /* tag slot 0's byte */
#define KILN_HEAP_TAG_BYTES  256

_Static_assert(KILN_MAX_TAGS + KILN_HEAP_FIRST_TAG <= KILN_HEAP_TAG_BYTES, "a tag fits a slot's byte");
_Static_assert(KILN_SIZE_CLASSES == KILN_HEAP_CLASSES && KILN_SIZE_CLASS_MAX == KILN_HEAP_CLASS_MAX,
               "kiln/heap.h states the classes of alloc/size_class.h");

/* One context's use of one tag. */
typedef struct kiln_heap_tag_use {
    _Atomic int64_t  credit;      /* drawn and not handed out: owner-written (relaxed load
                                     and store), read by the tags' figures */
    _Atomic uint64_t allocs;      /* owner-written, read by stats */
    _Atomic uint64_t frees;
} kiln_heap_tag_use;

/* One context's heap cache: its caches of the classes, its credit per tag. */
typedef struct kiln_heap_cache {
    kiln_pool_cache   classes[KILN_SIZE_CLASSES];
    kiln_heap_tag_use tags[KILN_HEAP_TAG_BYTES];
} kiln_heap_cache;

/* The public heads (kiln/heap.h) are these structures' words. */
_Static_assert(sizeof(kiln_heap_tag_use) == sizeof(kiln_heap_credit_head) &&
               offsetof(kiln_heap_tag_use, credit) == offsetof(kiln_heap_credit_head, credit) &&
               offsetof(kiln_heap_tag_use, allocs) == offsetof(kiln_heap_credit_head, allocs) &&
               offsetof(kiln_heap_tag_use, frees) == offsetof(kiln_heap_credit_head, frees),
               "kiln_heap_credit_head (KILN_HEAD_LAYOUT) is a context's credit of a tag");
_Static_assert(sizeof(kiln_heap_cache) == sizeof(kiln_heap_cache_head) &&
               offsetof(kiln_heap_cache, tags) == offsetof(kiln_heap_cache_head, tags),
               "kiln_heap_cache_head (KILN_HEAD_LAYOUT) is a context's heap cache");

/* A large allocation (alloc/heap_large.c). */
typedef struct kiln_heap_large_entry {
    uintptr_t   ptr;              /* the mapping's start, and the allocation's; 0: empty */
    size_t      bytes;            /* the mapping's bytes (whole pages) */
    size_t      size;             /* bytes asked */
    const char *file;             /* KILN_DEBUG_SITES: its site; NULL: none */
    int         line;
    uint8_t     tag;              /* its slot byte (KILN_HEAP_UNTAGGED, ...) */
    bool        moving;           /* a resize is moving its pages: lookups pass it by */
} kiln_heap_large_entry;

typedef struct kiln_heap_kept { void *map; size_t bytes; } kiln_heap_kept;

typedef struct kiln_heap_large {
    pthread_mutex_t        lock;
    kiln_heap_large_entry *table; /* open addressing by address, linear probes; lock */
    size_t                 capacity, count;    /* lock */
    kiln_heap_kept         kept[KILN_HEAP_KEPT_MAPPINGS];   /* lock */
    uint32_t               kept_count;         /* lock */
    _Atomic uint64_t       live_bytes, kept_bytes, reused, remaps, allocs, frees;
    _Atomic uint64_t       live;   /* count (relaxed: statistics) */
} kiln_heap_large;

typedef struct kiln_heap {
    kiln_heap_head   head;          /* first: the inline paths' words (kiln/heap.h) */
    kiln_pool        classes[KILN_SIZE_CLASSES];
    uint32_t         class_count;   /* classes 0 .. class_count-1 exist (a prefix) */
    size_t           class_max;     /* the largest size they serve; larger: mapped */
    kiln_block_pool *blocks;
    kiln_log_sink    log;
    uint32_t         debug;         /* the runtime's KILN_DEBUG_* bits */
    bool             exchange;      /* KILN_DEBUG_CHECKS: a free exchanges the slot's byte */
    /* The runtime's tag table (runtime/tags.h): accounts by slot, published once; and
     * the account of untagged allocations. */
    _Atomic(kiln_tag_account *) *accounts;
    kiln_tag_account *untagged;
    /* Totals folded in from contexts that detached, by slot byte. */
    _Atomic uint64_t retired_allocs[KILN_HEAP_TAG_BYTES];
    _Atomic uint64_t retired_frees[KILN_HEAP_TAG_BYTES];
    _Atomic uint64_t failures, bad_frees, double_frees, reallocs_in_place;
    kiln_heap_large  large;
    pthread_rwlock_t fork_gate;     /* the classes' (kiln_pool_config.fork_gate): a fork
                                       of the process runtime takes it for writing */
} kiln_heap;

typedef struct kiln_heap_config {
    kiln_block_pool *blocks;
    kiln_log_sink    log;
    uint32_t         debug;
    uint32_t         audit_sample;
    uint32_t         warn_percent;
    _Atomic(kiln_tag_account *) *accounts;
    kiln_tag_account *untagged;
} kiln_heap_config;

/* What the tags' figures need of the heap, by tag slot: the credit contexts hold (drawn
 * from the tag's account, not handed out: subtracted from its live bytes), the tag's
 * own and with its children's, and its heap allocations and frees over every context
 * and those gone. */
typedef struct kiln_heap_tag_sums {
    uint64_t credit[KILN_MAX_TAGS];       /* the tag's and its children's */
    uint64_t own_credit[KILN_MAX_TAGS];
    uint64_t allocs[KILN_MAX_TAGS];
    uint64_t frees[KILN_MAX_TAGS];
    uint64_t untagged_credit;             /* held for untagged allocations */
} kiln_heap_tag_sums;

/* Sets the heap up (its classes carve nothing yet; a block too small for a class leaves
 * its sizes to dedicated mappings). The creating thread, before anyone uses it. */
KILN_INTERNAL void kiln_heap_init(kiln_heap *heap, const kiln_heap_config *config);

/* Logs what is live (HEAP_OBJECTS_LIVE, the classes' leak sites), returns every block
 * and unmaps every mapping. No other thread may use the heap (kiln_destroy). */
KILN_INTERNAL void kiln_heap_fini(kiln_heap *heap);

/* A cache made ready for a context (at attach): unbound, no credit but the untagged. */
KILN_INTERNAL void kiln_heap_cache_init(kiln_heap_cache *cache);

/* Gives a cache's magazines back to the classes' depots, its credit back to the tags, and
 * folds its counters into the heap. The context's thread, or anyone once it is gone. */
KILN_INTERNAL void kiln_heap_cache_flush(kiln_heap *heap, kiln_heap_cache *cache);

/* An allocation (see kiln/heap.h): size and align already checked (align a power of two
 * or 0), tag a slot byte whose account exists. NULL when memory or a budget refuses
 * (counted). The cache's thread. */
KILN_INTERNAL void *kiln_heap_alloc_in(kiln_heap *heap, kiln_heap_cache *cache, uint8_t tag,
                                       size_t size, size_t align, bool zero, kiln_debug_site site);

/* Frees ptr (not NULL) into cache; a bad pointer is logged (naming function) and
 * counted, and nothing happens. The cache's thread. */
KILN_INTERNAL void kiln_heap_free_in(kiln_heap *heap, kiln_heap_cache *cache, void *ptr,
                                     const char *function);

/* realloc of ptr (not NULL, size not 0). The cache's thread. */
KILN_INTERNAL void *kiln_heap_realloc_in(kiln_heap *heap, kiln_heap_cache *cache, void *ptr,
                                         size_t size, size_t align);

/* What a pointer is to the heap. */
typedef struct kiln_heap_find {
    enum { KILN_HEAP_NOT_OURS, KILN_HEAP_INTERIOR, KILN_HEAP_CLASS, KILN_HEAP_LARGE } kind;
    size_t   usable;    /* CLASS, LARGE: the bytes usable */
    uint8_t  tag;       /* CLASS, LARGE: the slot byte (CLASS: 0 once freed) */
} kiln_heap_find;

/* Finds ptr without writing anything, nor reading memory the heap does not own. Any
 * thread (the large registry's lock). */
KILN_INTERNAL kiln_heap_find kiln_heap_find_ptr(kiln_heap *heap, const void *ptr);

/* Logs and counts a bad pointer (HEAP_FOREIGN_POINTER, HEAP_INTERIOR_POINTER,
 * HEAP_DOUBLE_FREE per kind). Any thread. */
KILN_INTERNAL KILN_COLD void kiln_heap_reject(kiln_heap *heap, const void *ptr, int kind,
                                              const char *function);

/* Returns the classes' free blocks (after the caller flushed its own cache) to the block
 * pool and unmaps the kept large mappings; the bytes unmapped. Any thread. */
KILN_INTERNAL size_t kiln_heap_trim(kiln_heap *heap);

/* Statistics: per class (cache tallies summed by the caller over contexts), and totals.
 * Any thread (relaxed reads). */
KILN_INTERNAL void kiln_heap_class_read(kiln_heap *heap, uint32_t c, const kiln_pool_tally *tally,
                                        kiln_heap_class_stats *out);

/* The slot byte's account (the untagged one for KILN_HEAP_UNTAGGED); never NULL for the
 * byte of a live allocation. */
static inline kiln_tag_account *kiln_heap_account(const kiln_heap *heap, uint8_t tag) {
    return tag >= KILN_HEAP_FIRST_TAG ? kiln_load_acquire(&heap->accounts[tag - KILN_HEAP_FIRST_TAG])
                                      : heap->untagged;
}

/* ---- large allocations (alloc/heap_large.c) ---- */

KILN_INTERNAL void  kiln_heap_large_init(kiln_heap_large *large);
KILN_INTERNAL void  kiln_heap_large_fini(kiln_heap *heap);   /* unmaps all */
/* A mapping of at least size bytes aligned to align, charged to tag (zero: its first
 * size bytes zero); NULL refused. */
KILN_INTERNAL void *kiln_heap_large_alloc(kiln_heap *heap, uint8_t tag, size_t size, size_t align,
                                          bool zero, kiln_debug_site site);
/* Whether ptr is a live large allocation; then *out is a copy of its entry. */
KILN_INTERNAL bool  kiln_heap_large_find(kiln_heap *heap, const void *ptr, kiln_heap_large_entry *out);
/* Frees ptr: false (nothing done) when it is no live large allocation. */
KILN_INTERNAL bool  kiln_heap_large_free(kiln_heap *heap, void *ptr);
/* Resizes a live large allocation in place or by moving its pages (align at most a
 * page); NULL when it cannot (ptr untouched). */
KILN_INTERNAL void *kiln_heap_large_resize(kiln_heap *heap, void *ptr, size_t size);
/* realloc's look at a large allocation, under one lock: false when ptr is none; else
 * *out is a copy of its entry and *kept says whether it stays where it is for size bytes
 * (aligned says ptr suits the alignment asked: size fits its mapping and needs more than
 * half of it), its size then noted (KILN_DEBUG_FILL fills that much when it is freed). */
KILN_INTERNAL bool  kiln_heap_large_find_for(kiln_heap *heap, const void *ptr, size_t size,
                                             bool aligned, kiln_heap_large_entry *out, bool *kept);
/* Whether ptr lies inside a live large allocation (not at its start): a walk of the
 * registry, for the refusal that says so. */
KILN_INTERNAL bool  kiln_heap_large_contains(kiln_heap *heap, const void *ptr);
/* Unmaps the kept mappings when bytes more would pass memory_limit (they count toward
 * it): whether any went. */
KILN_INTERNAL bool  kiln_heap_large_make_way(kiln_heap *heap, size_t bytes);
/* Unmaps the kept mappings; their bytes. */
KILN_INTERNAL size_t kiln_heap_large_trim(kiln_heap *heap);

#endif /* KILN_ALLOC_HEAP_H */
