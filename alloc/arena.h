/* alloc/arena.h — arenas: a chain of blocks from the block pool with a bump pointer,
 * marks, release to a mark, reset with a keep policy, dedicated mappings for large
 * allocations, statistics and the per-frame budget.
 *
 * Layout: the arena's bookkeeping (struct kiln_arena) lives in its first block, right
 * after that block's header, so an arena costs no malloc. Every block starts with a
 * kiln_arena_block header; the chain runs from the current block down to the first.
 *
 *   bytes_in_use == current->used_before + (cursor - base) + large_bytes
 *   peak_frame   >= bytes_in_use at every moment since the last reset
 *
 * Threads: every function here is owner-thread only, except kiln_arena_stats_read,
 * which any thread may call: the owner publishes the (base, used_before) pair under a
 * sequence counter when it changes blocks (the slow path only), so a reader never
 * combines the cursor of one block with the base of another. */
#ifndef KILN_ALLOC_ARENA_H
#define KILN_ALLOC_ARENA_H

#include <kiln/stats.h>

#include "block_pool.h"

typedef struct kiln_arena_block {
    struct kiln_arena_block *prev;   /* the block below in the chain, or the next spare */
    size_t used_before;              /* arena bytes in use when this block became current */
} kiln_arena_block;

typedef struct kiln_large kiln_large;

struct kiln_arena {
    /* Hot, owner-written; atomics only so stats readers on other threads are race-free
     * (relaxed loads and stores compile to plain moves). */
    _Atomic uintptr_t cursor;        /* next free byte in the current block */
    uintptr_t         limit;         /* min(block end, budget point): the fast path's bound */
    size_t            max_align;     /* the block size: the largest alignment served */
    _Atomic uint64_t  allocs;

    /* Warm, owner-written, read by stats readers under seq. */
    _Atomic uint32_t  seq;           /* odd while the owner changes blocks */
    _Atomic uintptr_t base;          /* first data byte of the current block */
    _Atomic size_t    used_before;   /* copy of current->used_before */
    _Atomic size_t    large_bytes;   /* bytes asked by live large allocations */

    /* Owner-only state. */
    kiln_arena_block *current;       /* top of the chain */
    kiln_arena_block *spare;         /* blocks kept for reuse, linked by prev */
    kiln_large       *large;         /* live large allocations, newest first */
    kiln_large       *large_kept;    /* freed mappings kept for reuse until the next reset */
    uint32_t          large_count;   /* entries on the large list */
    uint32_t          chain_blocks;  /* blocks on the chain, the first one included */
    uint32_t          spare_blocks;
    uint32_t          keep_blocks;   /* blocks the next reset keeps (decays by one per reset) */
    uint32_t          epoch;         /* resets so far, truncated: marks carry it */
    bool              budget_warned; /* this frame's warning was given */
    bool              is_frame;      /* a context's frame arena: destroyed with its context */

    /* Statistics other threads read (relaxed). */
    _Atomic size_t    peak_frame;    /* recorded before every decrease of bytes_in_use */
    _Atomic size_t    peak_last_frame;
    _Atomic size_t    peak_total;
    _Atomic uint64_t  failures, resets, releases, budget_warnings, large_allocs, blocks_taken;
    _Atomic uint32_t  blocks_held;

    /* Read-only after creation. */
    kiln_block_pool         *pool;
    size_t                   budget;       /* 0: none */
    const _Atomic uint64_t  *frame_clock;  /* named in budget warnings; may be NULL */
    kiln_log_sink            log;
    char                     name[48];

    /* Owned by whoever keeps the arena registry (runtime/). */
    struct kiln_arena *registry_prev, *registry_next;
    void              *registry_owner;
    void              *frame_owner;   /* frame arenas: the context owning it; else NULL */
};

typedef struct kiln_arena_config {
    kiln_block_pool        *pool;
    const char             *name;         /* copied; NULL: "arena" */
    size_t                  budget;       /* 0: none */
    const _Atomic uint64_t *frame_clock;  /* may be NULL */
    bool                    is_frame;
    kiln_log_sink           log;
} kiln_arena_config;

/* Takes a block, builds the arena in it. NULL when the pool refuses (it logged why). */
KILN_INTERNAL kiln_arena *kiln_arena_init(const kiln_arena_config *config);

/* Returns every block and mapping; the arena's memory goes with its first block. */
KILN_INTERNAL void kiln_arena_fini(kiln_arena *arena);

/* Out of line: the current block is full, the budget point is crossed, the size is
 * large, the alignment unusual or bad. */
KILN_INTERNAL void *kiln_arena_alloc_slow(kiln_arena *arena, size_t size, size_t align);

/* The bump: a few instructions, then the slow path. align must be checked by the
 * caller to be nonzero (0 and bad values go to the slow path through the test below). */
static inline void *kiln_arena_bump(kiln_arena *arena, size_t size, size_t align) {
    /* One test sends align 0, non-powers of two and over-large alignments out of line. */
    if (kiln_unlikely(((align - 1) & align) != 0 || align - 1 >= arena->max_align))
        return kiln_arena_alloc_slow(arena, size, align);
    uintptr_t start = kiln_align_up(kiln_load_relaxed(&arena->cursor), align);
    uintptr_t end;
    if (kiln_unlikely(__builtin_add_overflow(start, size, &end) || end > arena->limit))
        return kiln_arena_alloc_slow(arena, size, align);
    kiln_store_relaxed(&arena->cursor, end);
    kiln_owner_add(&arena->allocs, 1);
    return (void *)start;
}

/* Frees everything, keeping blocks by the keep policy (kiln_arena_reset's work; the
 * runtime wraps it). Owner thread only. */
KILN_INTERNAL void kiln_arena_reset_all(kiln_arena *arena);

/* Any thread; see the header comment. */
KILN_INTERNAL void kiln_arena_stats_read(const kiln_arena *arena, kiln_arena_stats *out);

#endif /* KILN_ALLOC_ARENA_H */
