/* alloc/arena.h — arenas: a chain of blocks from the block pool with a bump pointer,
 * marks, release to a mark, reset with a keep policy, dedicated mappings for large
 * allocations, statistics and the per-frame budget.
 *
 * Layout: the arena's bookkeeping (struct kiln_arena, its record) lives outside its
 * blocks, in memory its owner (runtime/arenas.c) provides and keeps after the arena is
 * destroyed: a block goes back to the global pool and may come back as anyone's, even
 * as another arena's first block, but a destroyed arena's record still says so
 * (destroyed; limit 0 and cursor 1 close the fast path), so every later call through
 * it is refused on a slow path instead of writing into memory that is someone else's.
 * Every block starts with a kiln_arena_block header; the chain runs from the current
 * block down to the first.
 *
 *   bytes_in_use == current->used_before + (cursor - base) + large_bytes
 *   peak_frame   >= bytes_in_use at every moment since the last reset
 *
 * Threads: every function here is owner-thread only unless its comment says otherwise.
 * kiln_arena_stats_read is any thread's: the owner publishes the (base, used_before)
 * pair under a sequence counter (base/seqlock.h) when it changes blocks (the slow path
 * only), so a reader never combines the cursor of one block with the base of another. */
#ifndef KILN_ALLOC_ARENA_H
#define KILN_ALLOC_ARENA_H

#include <kiln/stats.h>

#include "block_pool.h"
#include "debug.h"
#include "tag_account.h"

typedef struct kiln_arena_block {
    struct kiln_arena_block *prev;   /* the block below in the chain, or the next spare */
    size_t used_before;              /* arena bytes in use when this block became current */
} kiln_arena_block;

typedef struct kiln_large kiln_large;
typedef struct kiln_fallback kiln_fallback;

/* Live marks whose order a release can check (kiln/memory.h names this bound: deeper
 * nesting is checked by position only). A power of two: the stack is a ring indexed by
 * masking. */
#define KILN_ARENA_MARK_STACK 32u
_Static_assert((KILN_ARENA_MARK_STACK & (KILN_ARENA_MARK_STACK - 1)) == 0,
               "the mark stack is a ring indexed by masking");

struct kiln_arena {
    /* Hot, owner-written; atomics only so stats readers on other threads are race-free
     * (relaxed loads and stores compile to plain moves). */
    _Atomic uintptr_t cursor;        /* next free byte in the current block */
    uintptr_t         limit;         /* min(block end, budget point): the fast path's bound */
    _Atomic uint64_t  allocs;
    size_t            max_align;     /* the block size: the largest alignment served */

    /* Warm, owner-written, read by stats readers under seq. */
    _Atomic uint64_t  seq;           /* odd while the owner changes blocks (base/seqlock.h) */
    _Atomic uintptr_t base;          /* first data byte of the current block */
    _Atomic size_t    used_before;   /* copy of current->used_before */
    _Atomic size_t    large_bytes;   /* bytes asked by live large allocations */

    /* Owner-only state. */
    kiln_arena_block *current;       /* top of the chain */
    kiln_arena_block *spare;         /* blocks kept for reuse, linked by prev */
    kiln_large       *large;         /* live large allocations, newest first */
    kiln_large       *large_kept;    /* freed mappings kept for reuse until the next reset */
    uint32_t          large_count;   /* entries on the large list */
    uint32_t          kept_count;    /* entries on large_kept */
    uint32_t          large_peak;    /* the most large allocations live at once since the
                                        last reset (at least those it kept). A release
                                        keeps freed mappings only up to it, the largest:
                                          after a release, large_count + kept_count <= large_peak */
    uint32_t          chain_blocks;  /* blocks on the chain, the first one included */
    uint32_t          spare_blocks;
    uint32_t          keep_blocks;   /* blocks the next reset keeps (decays by one per reset) */
    /* Marks are LIFO scopes: every mark carries a serial (marks taken, truncated to 32
     * bits: serials are compared by age, marks_taken - serial, so only a mark more than
     * 2^32 marks old is misjudged). The stack holds the serials of the newest live marks
     * as a ring, newest at mark_next - 1. A release is valid to a mark on the stack, and
     * to one with cleared_serial < serial <= mark_floor (a full stack dropped its entry:
     * judged by position alone); every other mark was released past or is stale.
     *   reset_serial <= cleared_serial <= mark_floor < every serial on the stack
     *   the stack's serials increase from bottom to top */
    uint32_t          marks_taken;   /* the newest mark's serial */
    uint32_t          reset_serial;  /* marks_taken at the last reset: marks up to it are stale */
    uint32_t          cleared_serial;  /* ... at the last reset or release to {0}: all dead */
    uint32_t          mark_floor;    /* the newest serial a full stack dropped (or cleared_serial) */
    uint32_t          mark_depth;    /* entries on the stack, at most KILN_ARENA_MARK_STACK */
    uint32_t          mark_next;     /* the slot the next mark takes */
    uint32_t          mark_stack[KILN_ARENA_MARK_STACK];
    uintptr_t         top_mark;      /* the cursor of the newest live mark; 0: none live.
                                        kiln_arena_grow_in_place never moves the cursor
                                        while it equals this (the mark's scope starts there) */
    bool              budget_warned; /* this frame's warning was given */
    bool              is_frame;      /* a context's frame arena: destroyed with its context */

    /* Planning (kiln_arena_reserve, the near-budget episode, the budget policy, the
     * fallback), owner-only. Every reset keeps at least reserved_blocks blocks:
     *   keep_blocks >= reserved_blocks, and after a reset 1 + spare_blocks >= reserved_blocks
     *   unless the pool refused a block meanwhile (a reserve that failed raises nothing) */
    bool              budget_near;   /* in a FRAME_BUDGET_NEAR episode */
    bool              budget_refused;   /* KILN_BUDGET_REFUSE: this frame's refusal was logged */
    bool              fallback_warned;  /* this frame's FRAME_FALLBACK was logged */
    kiln_fallback    *fallback_list;    /* this frame's system-allocator allocations, newest first */

    /* Statistics other threads read (relaxed). */
    _Atomic size_t    peak_frame;    /* recorded before every decrease of bytes_in_use */
    _Atomic size_t    peak_last_frame;
    _Atomic size_t    peak_total;
    _Atomic uint64_t  failures, resets, releases, budget_warnings, large_allocs, blocks_taken;
    _Atomic uint32_t  blocks_held;
    _Atomic uint32_t  reserved_blocks;   /* the reserve's floor (owner-written) */
    _Atomic uint64_t  budget_refusals, fallback_allocs;
    _Atomic size_t    fallback_bytes;
    _Atomic uint64_t  held_bytes;    /* blocks and mappings held from the block pool (owner-
                                        written): what its tag is charged with */
    _Atomic uint64_t  held_charges;  /* how many: the charges a tag move carries */
    _Atomic(kiln_tag_account *) account;   /* its tag's account, NULL: untagged (owner-
                                        written, read by stats) */

    /* Read-only after creation. */
    kiln_block_pool         *pool;
    size_t                   budget;       /* 0: none */
    uint32_t                 warn_percent; /* FRAME_BUDGET_NEAR's share of budget; 0: never */
    bool                     refuse_over_budget;   /* KILN_BUDGET_REFUSE (with a budget) */
    bool                     fallback;     /* desc.frame_fallback, off under KILN_ARENA_SLOW_BITS */
    const _Atomic uint64_t  *frame_clock;  /* named in budget warnings; may be NULL */
    kiln_log_sink            log;
    char                     name[48];

    kiln_arena_block        *first;        /* the bottom of the chain */

    /* Set by the arena's owner (runtime/arenas.c) when the arena is destroyed, under
     * the owner's registry lock, and kept set while the record is kept; every entry
     * point reads it first (kiln_arena_live). */
    _Atomic bool       destroyed;

    /* Debug layer (arena_debug.c). debug, audit_sample and usable are read-only after
     * creation; the record stack is owner-only; the rest is written by any thread that
     * uses the arena (relaxed) and read by stats and the frame-end audit. */
    uint32_t          debug;          /* the KILN_DEBUG_* bits that concern arenas */
    uint32_t          audit_sample;   /* newest records the frame-end audit checks */
    size_t            usable;         /* bytes of each block in use: block_size, less the
                                         guard page with KILN_DEBUG_GUARD_PAGES */
    const struct kiln_arena_hooks *hooks;   /* the layer's entry points into the core's
                                               paths, set at init with any debug bit;
                                               NULL without one. Read-only after init */
    struct kiln_record_block *records;       /* live allocations' records, newest on top */
    struct kiln_record_block *record_spare;  /* emptied record blocks, kept until destroy */
    _Atomic uintptr_t owner_thread;   /* kiln_debug_thread() of the owner (any debug bit) */
    _Atomic uintptr_t reported_thread;   /* last thread reported as ARENA_WRONG_THREAD */
    _Atomic uint64_t  guard_errors, wrong_thread;
};

/* The public head (kiln/memory.h) is the arena's first three words: the inline bump of
 * a client reads and writes them as this file's fast path does. */
_Static_assert(offsetof(struct kiln_arena, cursor) == offsetof(kiln_arena_head, cursor) &&
               offsetof(struct kiln_arena, limit) == offsetof(kiln_arena_head, limit) &&
               offsetof(struct kiln_arena, allocs) == offsetof(kiln_arena_head, allocs) &&
               sizeof(((struct kiln_arena *)0)->cursor) == sizeof(uintptr_t) &&
               sizeof(((struct kiln_arena *)0)->allocs) == sizeof(uint64_t),
               "kiln_arena_head (KILN_HEAD_LAYOUT) is the arena's first words");
_Static_assert(KILN_INLINE_MAX_ALIGN <= 4096, "every block serves the inline bump's alignments");

/* The head of no arena: limit 0 below cursor 1, so no inline bump fits and every call
 * through it reaches the library's checks (a detached context's frame head). Never written. */
KILN_INTERNAL extern const kiln_arena_head kiln_arena_closed_head;

typedef struct kiln_arena_config {
    kiln_block_pool        *pool;
    const char             *name;         /* copied; NULL: "arena" */
    size_t                  budget;       /* 0: none */
    uint32_t                warn_percent; /* 1-100: FRAME_BUDGET_NEAR at that share of budget */
    bool                    refuse_over_budget;   /* KILN_BUDGET_REFUSE */
    bool                    fallback;     /* frame_fallback (ignored under KILN_ARENA_SLOW_BITS) */
    const _Atomic uint64_t *frame_clock;  /* may be NULL */
    bool                    is_frame;
    kiln_log_sink           log;
    uint32_t                debug;        /* KILN_DEBUG_* bits */
    uint32_t                audit_sample; /* KILN_DEBUG_GUARDS: records per frame-end audit */
    kiln_tag_account       *account;      /* what its blocks are charged to from the first;
                                             never refused (the untagged or frame account) */
} kiln_arena_config;

/* Builds the arena in the record arena (memory the caller owns, KILN_CACHE_LINE
 * aligned, at least sizeof(kiln_arena)) and takes its first block; with a debug bit,
 * sets the debug layer up on it (arena_debug.c, which defines these two: the layer
 * above the core). false when the pool refuses (it logged why); the record is then the
 * caller's again. */
KILN_INTERNAL bool kiln_arena_init(kiln_arena *arena, const kiln_arena_config *config);

/* Tears the debug layer down (its records checked, its blocks given back), then returns
 * every block and mapping and closes the fast path (limit 0, cursor 1: every bump goes
 * out of line, where destroyed is checked). The record stays readable: its owner keeps
 * it, with destroyed set, for as long as a stale pointer may be used. */
KILN_INTERNAL void kiln_arena_fini(kiln_arena *arena);

/* The core's halves of those two (arena.c): kiln_arena_init without the debug layer's
 * set-up (arena->hooks NULL), kiln_arena_fini after the layer's teardown. */
KILN_INTERNAL bool kiln_arena_init_core(kiln_arena *arena, const kiln_arena_config *config);
KILN_INTERNAL void kiln_arena_fini_core(kiln_arena *arena);

/* Owner: charges what the arena holds to account (NULL: untagged) and releases it from
 * its tag before; false (the tag's refusal logged, nothing changed) when account's
 * budget refuses it. */
KILN_INTERNAL bool kiln_arena_retag(kiln_arena *arena, kiln_tag_account *account);

/* Logs ARENA_DESTROYED naming the arena and what was asked (a function's name). */
KILN_INTERNAL KILN_COLD void kiln_arena_refuse_destroyed(const kiln_arena *arena,
                                                         const char *what);

/* Whether arena may be used: true unless it was destroyed, which is logged. Every entry
 * point but the bump calls it first; the bump cannot succeed on a destroyed arena and
 * its slow path calls it. Whoever may call that entry point (a relaxed load: destroy
 * and any other call on the arena must not overlap, so it only has to be race-free). */
static inline bool kiln_arena_live(const kiln_arena *arena, const char *what) {
    if (kiln_likely(!kiln_load_relaxed(&arena->destroyed))) return true;
    kiln_arena_refuse_destroyed(arena, what);
    return false;
}

/* Out of line: the current block is full, the budget point is crossed, the size is
 * large, the alignment unusual or bad, or a debug bit sends every allocation here (the
 * limit is then 0: the bump itself needs no test of its own for the debug layer). */
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
    kiln_owner_inc(&arena->allocs);
    return (void *)start;
}

/* The allocator's entry points behind kiln_arena_alloc_at, kiln_arena_mark and
 * kiln_arena_release (runtime/arenas.c checks for NULL first): the allocation with its
 * caller's site, taking a mark, and releasing to one, with every other check of those
 * calls (a destroyed arena, the mark's validity, KILN_DEBUG_OWNERSHIP) and their log
 * items. Owner thread only. */
KILN_INTERNAL void *kiln_arena_alloc_site(kiln_arena *arena, size_t size, size_t align,
                                          kiln_debug_site site);
KILN_INTERNAL kiln_mark kiln_arena_take_mark(kiln_arena *arena);
KILN_INTERNAL void kiln_arena_release_to(kiln_arena *arena, kiln_mark mark);

/* Frees everything, keeping blocks by the keep policy (kiln_arena_reset's work; the
 * runtime wraps it): what the frame used, decaying by one block per reset after a spike,
 * never under the reserve's floor; kept mappings only as many as the frame had live,
 * each reused only by an allocation at least half its size. Judges the frame's
 * high-water mark for FRAME_BUDGET_NEAR and frees the frame's fallback allocations.
 * Owner thread only. */
KILN_INTERNAL void kiln_arena_reset_all(kiln_arena *arena);

/* kiln_arena_reserve's work (the runtime checks for NULL first): takes blocks from the
 * pool until bytes can be allocated from the current position without it, touching
 * their pages, and raises the floor every later reset keeps to the blocks that hold
 * bytes from an empty arena. false, logged: a destroyed arena (ARENA_DESTROYED), more
 * than the user address space (ARENA_RESERVE_TOO_LARGE), the pool refusing a block
 * (ARENA_RESERVE_FAILED; the blocks taken so far stay as spares, the floor unchanged).
 * Owner thread only. */
KILN_INTERNAL bool kiln_arena_reserve_bytes(kiln_arena *arena, size_t bytes);

/* Any thread; see the header comment. A destroyed arena: logged (ARENA_DESTROYED),
 * *out zeroed but for the name, false. */
KILN_INTERNAL bool kiln_arena_stats_read(const kiln_arena *arena, kiln_arena_stats *out);

/* ---- what the core (arena.c) offers the debug layer ----
 * With a record bit (KILN_ARENA_RECORD_BITS) every allocation has a record on a stack
 * kept in blocks of its own, out of the allocations' way (an overrun damages guard
 * bytes, never the bookkeeping that finds them): the object, its size, its site and its
 * position in the arena, so that release and reset know exactly which allocations they
 * end. With KILN_DEBUG_GUARDS an allocation is [front guard][object][back guard]. */

/* Where a raw allocation went: its arena position (the bytes in use in blocks before
 * it, which only grows along the chain, so "after a mark" is "position >= the mark's"),
 * or for a dedicated mapping how many live large allocations came before it. */
typedef struct kiln_arena_spot {
    size_t   pos;
    uint32_t large_index;
    bool     large;
} kiln_arena_spot;

/* size bytes at align (valid, nonzero), bounded by the block end: the allocation under
 * a debug allocation's guards. Counted as one allocation; NULL when memory runs out
 * (counted as a failure). Owner thread only. */
KILN_INTERNAL void *kiln_arena_alloc_raw(kiln_arena *arena, size_t size, size_t align,
                                         kiln_arena_spot *spot);

/* A block for the arena's own use (stats count it as held), with its guard page under
 * KILN_DEBUG_GUARD_PAGES; NULL when the block pool refuses. And its way back. */
KILN_INTERNAL void *kiln_arena_take_block(kiln_arena *arena);
KILN_INTERNAL void  kiln_arena_give_block(kiln_arena *arena, void *block);

/* The debug layer's entry points into the core's paths: arena_debug.c sets arena->hooks
 * at init when a debug bit is on, and the core calls through it, so that it names no
 * function of the layer above it. Each runs on the thread of the core's call: the owner,
 * or the driver resetting a frame arena at frame end; use on any thread (it checks which). */
typedef struct kiln_arena_hooks {
    /* kiln_arena_alloc_slow's work when a debug bit closed the fast path: the owner
     * check, the record, guards, fill and poisoning. align is valid. */
    void *(*alloc)(kiln_arena *arena, size_t size, size_t align, kiln_debug_site site);
    /* KILN_DEBUG_OWNERSHIP, on mark and release: logs ARENA_WRONG_THREAD (once per
     * offending thread until the owner changes) and counts the call when the calling
     * thread does not own the arena. what names the call. */
    void  (*use)(kiln_arena *arena, const char *what);
    /* Before release and reset give memory back: ends the records of every allocation
     * after (pos, large_count), all of them for (0, 0), checking their guards
     * (ARENA_GUARD_DAMAGED, found `when`), filling them with 0xDD and poisoning them as
     * the bits say. */
    void  (*release)(kiln_arena *arena, size_t pos, uint32_t large_count, const char *when);
    /* kiln_arena_grow_in_place with a record bit: when object is the newest record (a
     * block allocation of old_size bytes), moves its end through kiln_arena_move_end and
     * its back guard, fill and poisoning with it; false, changing nothing, otherwise. */
    bool  (*grow)(kiln_arena *arena, char *object, size_t old_size, size_t new_size);
    /* kiln_arena_reserve with a record bit: holds record room for records more
     * allocations (blocks taken now, kept until destroy), so that the reserve's
     * allocations take no block for their records; false when the pool refuses (logged). */
    bool  (*reserve_records)(kiln_arena *arena, size_t records);
} kiln_arena_hooks;

/* A reserve with a record bit holds a record for every KILN_RESERVE_BYTES_PER_RECORD
 * bytes it reserves (kiln/memory.h says so). */
#define KILN_RESERVE_BYTES_PER_RECORD 256

/* ---- the debug layer (arena_debug.c; see KILN_DEBUG_* in kiln/core.h) ----
 * Besides kiln_arena_init and kiln_arena_fini above, what the runtime calls. */

/* The calling thread owns the arena from now on (a worker claims its frame arena when
 * it starts; a reset of an arena that is no frame arena hands it to the caller). */
KILN_INTERNAL void kiln_arena_debug_claim(kiln_arena *arena);

/* kiln_arena_reset by the calling thread: a frame arena's owner is its context's thread
 * for good, so another thread resetting it is a wrong-thread use; any other arena
 * passes to the caller. */
KILN_INTERNAL void kiln_arena_debug_reset(kiln_arena *arena);

/* KILN_DEBUG_GUARDS, at frame end: checks the guards of the newest audit_sample live
 * allocations, if the calling thread owns the arena and it is no frame arena (a frame
 * arena's reset checks every allocation). A damaged guard is reported and repaired.
 * Any thread: on an arena it does not own, it returns at once. */
KILN_INTERNAL void kiln_arena_audit(kiln_arena *arena);

/* KILN_DEBUG_SITES: logs the live allocations grouped by site (ARENA_LEAK_SITE, then
 * ARENA_LEAK_SUMMARY). The owner, or anyone once the owner is done with the arena. */
KILN_INTERNAL void kiln_arena_report_leaks(kiln_arena *arena);

/* KILN_DEBUG_SITES: the site recorded for the live allocation of size bytes at object,
 * so that a grow that must move gives its copy the same site. Allocations of 0 bytes
 * share their address with the next one: the record of that size wins, else the newest
 * at object; {NULL, 0} without the bit or when object is no live allocation's start.
 * Searches newest first. Owner thread only. */
KILN_INTERNAL kiln_debug_site kiln_arena_site_of(const kiln_arena *arena, const void *object,
                                                 size_t size);

/* ---- growing the last allocation (kiln_arena_grow; arena.c's end) ---- */

/* Moves the end of the arena's last block allocation from end (which must be the
 * cursor) to new_end in the current block, growing or shrinking it. false, changing
 * nothing, when end is not the cursor, a live mark sits at it (top_mark: its scope
 * starts there), new_end lies outside the current block's data, or growing would cross
 * an unwarned frame budget (the allocation path judges that). A shrink records the
 * peak first. Owner thread only; the debug layer's grow hook calls it. */
KILN_INTERNAL bool kiln_arena_move_end(kiln_arena *arena, uintptr_t end, uintptr_t new_end);

/* Grows or shrinks ptr, the arena's last allocation of old_size bytes, to new_size in
 * place; true when it did. false, changing nothing, when ptr is not the last allocation
 * (or is a large one), is not aligned to align (valid; 0: alignof(max_align_t)), or
 * kiln_arena_move_end refuses. With KILN_DEBUG_OWNERSHIP a grow from a thread that
 * does not own the arena is logged and counted (it proceeds). Owner thread only. */
KILN_INTERNAL bool kiln_arena_grow_in_place(kiln_arena *arena, void *ptr, size_t old_size,
                                            size_t new_size, size_t align);

/* Whether [ptr, ptr + size) lies in memory the arena has in use: the used part of a
 * block on its chain, or a live large allocation's mapping (KILN_DEBUG_CHECKS' test of
 * kiln_arena_grow's pointer; walks the chain). Owner thread only. */
KILN_INTERNAL bool kiln_arena_holds(const kiln_arena *arena, const void *ptr, size_t size);

#endif /* KILN_ALLOC_ARENA_H */
