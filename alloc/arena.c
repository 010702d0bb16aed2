/* alloc/arena.c — the arena's core: its slow paths (new blocks, large mappings, the
 * budget check), marks, release, reset with its keep policy, and the stats snapshot.
 * The debug layer (arena_debug.c) sits above it and is reached only through
 * arena->hooks: in allocation, the owner check, release and reset. */
#include "arena.h"

#include <stdalign.h>
#include <stdio.h>
#include <string.h>

#include "../base/sys_alloc.h"
#include "../base/near_limit.h"
#include "../base/seqlock.h"
#include "os.h"

/* Alignment when the caller passes 0: that of max_align_t (16 on x86_64). */
#define KILN_DEFAULT_ALIGN alignof(max_align_t)

/* Header of a dedicated mapping for one large allocation. With KILN_DEBUG_GUARD_PAGES
 * the mapping is [guard page][header ... allocation][guard page], the allocation ending
 * right below the last page (within its alignment), so an overrun faults at once. */
struct kiln_large {
    kiln_large *prev;       /* the next older large allocation (or next kept mapping) */
    size_t      map_size;   /* bytes mapped, guard pages included */
    size_t      map_align;  /* alignment of the mapping */
    size_t      size;       /* bytes asked */
    size_t      guard;      /* bytes of each guard page (before this header); 0: none */
};

/* Header of a frame allocation the system allocator served (desc.frame_fallback): the
 * allocation follows at its alignment; freed at the arena's reset. */
struct kiln_fallback {
    kiln_fallback *prev;    /* the next older one */
    size_t         size;    /* bytes asked */
    char          *data;    /* the allocation: size bytes (kiln_arena_holds) */
};

/* Every block alike: the arena's record lives outside its blocks. */
static uintptr_t data_start(const kiln_arena_block *block) {
    return (uintptr_t)(block + 1);
}

static uintptr_t block_end(const kiln_arena *arena, const kiln_arena_block *block) {
    return (uintptr_t)block + arena->usable;
}

/* The arena position of addr in block (on the chain): bytes in use before it. */
static size_t position(const kiln_arena_block *block, uintptr_t addr) {
    return block->used_before + (size_t)(addr - data_start(block));
}

/* Owner: bytes in use in blocks (without large allocations). */
static size_t block_bytes(const kiln_arena *arena) {
    return arena->current->used_before +
           (size_t)(kiln_load_relaxed(&arena->cursor) - kiln_load_relaxed(&arena->base));
}

static size_t bytes_in_use(const kiln_arena *arena) {
    return block_bytes(arena) + kiln_load_relaxed(&arena->large_bytes);
}

const kiln_arena_head kiln_arena_closed_head = { .cursor = 1, .limit = 0, .allocs = 0 };

/* Owner: the peaks are recorded before anything makes bytes_in_use smaller. */
static void record_peak(kiln_arena *arena) {
    size_t used = bytes_in_use(arena);
    if (used > kiln_load_relaxed(&arena->peak_frame)) kiln_store_relaxed(&arena->peak_frame, used);
    if (used > kiln_load_relaxed(&arena->peak_total)) kiln_store_relaxed(&arena->peak_total, used);
}

/* Owner: the fast path's bound is the block end, or the point where the budget would be
 * crossed if that comes first and this frame has not been warned yet (under
 * KILN_BUDGET_REFUSE, always: the slow path refuses there); 0 when a debug bit wants
 * every allocation out of line. */
static void set_limit(kiln_arena *arena) {
    uintptr_t limit = block_end(arena, arena->current);
    if (arena->budget != 0 && (!arena->budget_warned || arena->refuse_over_budget)) {
        uintptr_t base = kiln_load_relaxed(&arena->base);
        size_t below = arena->current->used_before + kiln_load_relaxed(&arena->large_bytes);
        uintptr_t point = below >= arena->budget ? base : base + (arena->budget - below);
        if (point < limit) limit = point;
    }
    arena->limit = (arena->debug & KILN_ARENA_SLOW_BITS) ? 0 : limit;
}

/* Owner: makes block current with the cursor at cursor; published to stats readers. */
static void switch_block(kiln_arena *arena, kiln_arena_block *block, uintptr_t cursor) {
    uint64_t seq = kiln_seq_write_begin(&arena->seq);
    arena->current = block;
    kiln_store_relaxed(&arena->base, data_start(block));
    kiln_store_relaxed(&arena->used_before, block->used_before);
    kiln_store_relaxed(&arena->cursor, cursor);
    kiln_seq_write_end(&arena->seq, seq);
}

static KILN_COLD void warn_budget(kiln_arena *arena, size_t used) {
    arena->budget_warned = true;
    kiln_owner_inc(&arena->budget_warnings);
    unsigned long long frame = arena->frame_clock ? kiln_load_relaxed(arena->frame_clock) : 0;
    kiln_log(&arena->log, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED,
             "arena '%s': %zu bytes in use in frame %llu, over its budget of %zu bytes",
             arena->name, used, frame, arena->budget);
}

/* Owner: after a slow-path allocation, warn once if the frame went over budget. */
static void check_budget(kiln_arena *arena) {
    if (arena->budget != 0 && !arena->budget_warned) {
        size_t used = bytes_in_use(arena);
        if (used > arena->budget) warn_budget(arena, used);
    }
    set_limit(arena);
}

/* Owner, KILN_BUDGET_REFUSE: an allocation that would bring the bytes in use to total,
 * past the budget, is refused: counted, and logged at the frame's first refusal. The
 * bound may have moved (a fresh block): set again. */
static KILN_COLD void *refuse_budget(kiln_arena *arena, size_t total, size_t size) {
    kiln_owner_inc(&arena->budget_refusals);
    kiln_owner_inc(&arena->failures);
    set_limit(arena);
    if (arena->budget_refused) return NULL;
    arena->budget_refused = true;
    unsigned long long frame = arena->frame_clock ? kiln_load_relaxed(arena->frame_clock) : 0;
    kiln_log(&arena->log, KILN_LOGITEM_FRAME_BUDGET_REFUSED,
             "arena '%s': an allocation of %zu bytes in frame %llu would bring it to %zu bytes, "
             "over its budget of %zu bytes; refused (KILN_BUDGET_REFUSE; logged once per frame)",
             arena->name, size, frame, total, arena->budget);
    return NULL;
}

/* Owner: whether an allocation that brings the bytes in use to total must be refused. */
static bool over_refused_budget(const kiln_arena *arena, size_t total) {
    return kiln_unlikely(arena->refuse_over_budget) && total > arena->budget;
}

/* Owner: bytes more held from the block pool (taken already), charged to the arena's
 * tag: false when its tag refuses them (the caller gives them back). */
static bool hold_bytes(kiln_arena *arena, uint64_t bytes) {
    kiln_tag_account *account = kiln_load_relaxed(&arena->account);
    if (account && !kiln_tag_charge(account, bytes, (kiln_tag_payer){ "arena", arena->name }))
        return false;
    kiln_owner_add(&arena->held_bytes, bytes);
    kiln_owner_add(&arena->held_charges, 1);
    return true;
}

static void unhold_bytes(kiln_arena *arena, uint64_t bytes) {
    kiln_store_relaxed(&arena->held_bytes, kiln_load_relaxed(&arena->held_bytes) - bytes);
    kiln_store_relaxed(&arena->held_charges, kiln_load_relaxed(&arena->held_charges) - 1);
    kiln_tag_release(kiln_load_relaxed(&arena->account), bytes);
}

bool kiln_arena_retag(kiln_arena *arena, kiln_tag_account *account) {
    if (kiln_unlikely(arena->debug & KILN_DEBUG_OWNERSHIP)) arena->hooks->use(arena, "kiln_arena_set_tag");
    kiln_tag_account *before = kiln_load_relaxed(&arena->account);
    if (!kiln_tag_move(before, account, kiln_load_relaxed(&arena->held_bytes),
                       kiln_load_relaxed(&arena->held_charges),
                       (kiln_tag_payer){ "arena", arena->name }))
        return false;
    kiln_store_relaxed(&arena->account, account);
    return true;
}

void *kiln_arena_take_block(kiln_arena *arena) {
    void *block = kiln_block_get(arena->pool);
    if (!block) return NULL;
    if (!hold_bytes(arena, arena->pool->block_size)) {
        kiln_block_put(arena->pool, block);
        return NULL;
    }
    if (kiln_unlikely(arena->debug))
        kiln_debug_block_taken(arena->debug, block, arena->pool->block_size, &arena->log);
    kiln_owner_inc(&arena->blocks_taken);
    kiln_owner_add(&arena->blocks_held, 1);
    return block;
}

void kiln_arena_give_block(kiln_arena *arena, void *block) {
    kiln_block_pool *pool = arena->pool;
    kiln_store_relaxed(&arena->blocks_held, kiln_load_relaxed(&arena->blocks_held) - 1);
    if (kiln_unlikely(arena->debug)) kiln_debug_block_leaving(arena->debug, block, pool->block_size);
    kiln_block_put(pool, block);
    unhold_bytes(arena, pool->block_size);
}

/* Owner: pushes a fresh block (a kept spare first, else one from the pool). */
static bool push_block(kiln_arena *arena) {
    kiln_arena_block *block = arena->spare;
    if (block) {
        arena->spare = block->prev;
        arena->spare_blocks--;
    } else {
        block = kiln_arena_take_block(arena);
        if (!block) return false;
    }
    block->prev = arena->current;
    block->used_before = block_bytes(arena);
    switch_block(arena, block, data_start(block));
    arena->chain_blocks++;
    return true;
}

/* Owner: moves the current block to the spare list (release and reset). */
static void pop_block(kiln_arena *arena) {
    kiln_arena_block *block = arena->current;
    kiln_arena_block *below = block->prev;
    /* below's cursor was where block took over: recover it from the used counts. */
    switch_block(arena, below, data_start(below) + (block->used_before - below->used_before));
    block->prev = arena->spare;
    arena->spare = block;
    arena->spare_blocks++;
    arena->chain_blocks--;
}

/* Owner: the smallest kept mapping that can hold map_size bytes at align, taken off the
 * list; none more than twice map_size, so that a frame of small large allocations does
 * not keep a spike's mapping alive by reusing it (reset unmaps what no allocation reused:
 * kept mappings stay within twice what the last frame had live). */
static kiln_large *take_kept_large(kiln_arena *arena, size_t map_size, size_t align) {
    kiln_large **best = NULL;
    for (kiln_large **link = &arena->large_kept; *link; link = &(*link)->prev) {
        kiln_large *large = *link;
        if (large->map_size >= map_size && large->map_size / 2 <= map_size &&
            large->map_align >= align && (!best || large->map_size < (*best)->map_size))
            best = link;
    }
    if (!best) return NULL;
    kiln_large *large = *best;
    *best = large->prev;
    return large;
}

/* Where the allocation of a large mapping starts: right after the header, or with guard
 * pages as high as its alignment allows below the last page. */
static char *large_data(const kiln_large *large, size_t align) {
    if (large->guard == 0) return (char *)large + kiln_align_up(sizeof(kiln_large), align);
    uintptr_t end = (uintptr_t)large - large->guard + large->map_size - large->guard;
    return (char *)((end - large->size) & ~(uintptr_t)(align - 1));
}

/* A new mapping of map_size bytes for the header and an allocation (guard pages around
 * it under KILN_DEBUG_GUARD_PAGES). */
static kiln_large *map_large(kiln_arena *arena, size_t map_size, size_t align, size_t guard) {
    char *map = kiln_block_pool_map_large(arena->pool, map_size, align, true);
    if (!map) return NULL;
    if (!hold_bytes(arena, kiln_block_pool_large_bytes(map_size))) {   /* what it reserved */
        kiln_block_pool_unmap_large(arena->pool, map, map_size);
        return NULL;
    }
    if (guard) {
        kiln_debug_protect(map, guard, &arena->log);
        kiln_debug_protect(map + map_size - guard, guard, &arena->log);
    }
    kiln_large *large = (kiln_large *)(map + guard);
    large->map_size = map_size;
    large->map_align = align;
    large->guard = guard;
    return large;
}

/* Why an allocation in blocks or a mapping failed. */
typedef enum arena_refusal {
    ARENA_REFUSAL_NONE,
    ARENA_REFUSAL_POOL,     /* the block pool refused (memory_limit, the OS) */
    ARENA_REFUSAL_BUDGET,   /* KILN_BUDGET_REFUSE (counted by refuse_budget) */
    ARENA_REFUSAL_SIZE      /* the size cannot be represented (logged) */
} arena_refusal;

/* A dedicated mapping for the allocation; NULL with *why set. */
static void *alloc_large(kiln_arena *arena, size_t size, size_t align, arena_refusal *why) {
    size_t guard = (arena->debug & KILN_DEBUG_GUARD_PAGES) ? kiln_os_page_size() : 0;
    size_t header = kiln_align_up(sizeof(kiln_large), align);
    if (size > SIZE_MAX / 2 - header - 2 * guard) {
        kiln_log_misuse(&arena->log, KILN_LOGITEM_ARENA_SIZE_OVERFLOW,
                        "arena '%s': an allocation of %zu bytes cannot be represented", arena->name,
                        size);
        *why = ARENA_REFUSAL_SIZE;
        return NULL;
    }
    size_t map_size = guard ? 2 * guard + kiln_align_up(sizeof(kiln_large) + align + size, guard)
                            : header + size;
    if (over_refused_budget(arena, bytes_in_use(arena) + size)) {
        *why = ARENA_REFUSAL_BUDGET;
        return refuse_budget(arena, bytes_in_use(arena) + size, size);
    }
    kiln_large *large = take_kept_large(arena, map_size, align);
    if (large) arena->kept_count--;
    else large = map_large(arena, map_size, align, guard);
    if (!large) {
        *why = ARENA_REFUSAL_POOL;
        return NULL;
    }
    large->prev = arena->large;
    large->size = size;
    arena->large = large;
    if (++arena->large_count > arena->large_peak) arena->large_peak = arena->large_count;
    kiln_owner_add(&arena->large_bytes, size);
    kiln_owner_inc(&arena->large_allocs);
    kiln_owner_inc(&arena->allocs);
    check_budget(arena);
    return large_data(large, align);
}

/* Owner: gives one mapping back to the OS (poison lifted first: the address range may
 * come back from the OS to anyone). */
static void unmap_large(kiln_arena *arena, kiln_large *large) {
    /* Read before lifting the poison: under memcheck the header it covers reads as
     * undefined afterwards. */
    char *map = (char *)large - large->guard;
    size_t map_size = large->map_size;
    if (arena->debug & KILN_DEBUG_POISON) kiln_debug_unpoison(map, map_size);
    kiln_block_pool_unmap_large(arena->pool, map, map_size);
    unhold_bytes(arena, kiln_block_pool_large_bytes(map_size));
}

/* Owner: frees large allocations down to count; their mappings are kept for reuse (a
 * frame that makes the same large allocations every frame maps nothing), but no more
 * than the arena had live at once since the last reset: beyond that the smallest kept
 * ones are unmapped, so an arena that releases and never resets (mark, large
 * allocation, release, over and over) keeps what one round needs, not every size it
 * ever asked for. */
static void free_large_down_to(kiln_arena *arena, uint32_t count) {
    while (arena->large_count > count) {
        kiln_large *large = arena->large;
        arena->large = large->prev;
        arena->large_count--;
        kiln_store_relaxed(&arena->large_bytes, kiln_load_relaxed(&arena->large_bytes) - large->size);
        large->prev = arena->large_kept;
        arena->large_kept = large;
        arena->kept_count++;
    }
    while (arena->large_count + arena->kept_count > arena->large_peak) {
        kiln_large **smallest = &arena->large_kept;
        for (kiln_large **link = &(*smallest)->prev; *link; link = &(*link)->prev)
            if ((*link)->map_size < (*smallest)->map_size) smallest = link;
        kiln_large *large = *smallest;
        *smallest = large->prev;
        arena->kept_count--;
        unmap_large(arena, large);
    }
}

/* Owner: unmaps every kept mapping. */
static void unmap_kept_large(kiln_arena *arena) {
    for (kiln_large *large = arena->large_kept, *prev; large; large = prev) {
        prev = large->prev;
        unmap_large(arena, large);
    }
    arena->large_kept = NULL;
    arena->kept_count = 0;
}

/* Owner, desc.frame_fallback: the allocation from the system allocator, freed at reset;
 * the frame's first one is logged. NULL when the heap refuses too (counted). */
static KILN_COLD void *alloc_fallback(kiln_arena *arena, size_t size, size_t align) {
    size_t heap_align = align > alignof(max_align_t) ? align : alignof(max_align_t);
    size_t header = kiln_align_up(sizeof(kiln_fallback), heap_align);
    /* size passed alloc_large's bound (or fits a block), so header + size is representable. */
    kiln_fallback *fb = kiln_sys_aligned(heap_align, header + size);
    if (!fb) {
        kiln_owner_inc(&arena->failures);
        return NULL;
    }
    fb->prev = arena->fallback_list;
    fb->size = size;
    fb->data = (char *)fb + header;
    arena->fallback_list = fb;
    kiln_owner_inc(&arena->fallback_allocs);
    kiln_owner_add(&arena->fallback_bytes, size);
    kiln_owner_inc(&arena->allocs);
    if (!arena->fallback_warned) {
        arena->fallback_warned = true;
        unsigned long long frame = arena->frame_clock ? kiln_load_relaxed(arena->frame_clock) : 0;
        kiln_log(&arena->log, KILN_LOGITEM_FRAME_FALLBACK,
                 "arena '%s': the block pool refused an allocation of %zu bytes in frame %llu; "
                 "the system allocator served it, freed at the arena's reset (logged once per "
                 "frame)", arena->name, size, frame);
    }
    return fb->data;
}

/* Owner: frees the frame's fallback allocations (reset, fini). */
static void free_fallbacks(kiln_arena *arena) {
    for (kiln_fallback *fb = arena->fallback_list, *prev; fb; fb = prev) {
        prev = fb->prev;
        kiln_sys_free(fb);
    }
    arena->fallback_list = NULL;
    kiln_store_relaxed(&arena->fallback_bytes, 0);
}

/* Owner: the allocation itself, bounded by the block end (the fast path's limit may lie
 * lower: the budget point, or 0 in a debug arena): in the current block, else in a
 * fresh one if it fits after the block header at this alignment, else in a mapping of
 * its own. Under KILN_BUDGET_REFUSE, refused past the budget; when the pool refuses,
 * served by the system allocator with desc.frame_fallback. A failure is counted. */
static void *alloc_in_blocks(kiln_arena *arena, size_t size, size_t align) {
    size_t fresh_offset = sizeof(kiln_arena_block) > align ? sizeof(kiln_arena_block) : align;
    bool fits_fresh = fresh_offset < arena->usable && size <= arena->usable - fresh_offset;
    arena_refusal why = ARENA_REFUSAL_NONE;
    for (;;) {
        uintptr_t start = kiln_align_up(kiln_load_relaxed(&arena->cursor), align);
        uintptr_t end;
        if (!__builtin_add_overflow(start, size, &end) && end <= block_end(arena, arena->current)) {
            size_t total = position(arena->current, end) + kiln_load_relaxed(&arena->large_bytes);
            if (over_refused_budget(arena, total)) return refuse_budget(arena, total, size);
            kiln_store_relaxed(&arena->cursor, end);
            kiln_owner_inc(&arena->allocs);
            check_budget(arena);
            return (void *)start;
        }
        if (!fits_fresh) break;
        if (!push_block(arena)) {
            why = ARENA_REFUSAL_POOL;
            break;
        }
    }
    void *p = why == ARENA_REFUSAL_NONE ? alloc_large(arena, size, align, &why) : NULL;
    if (p) return p;
    if (why == ARENA_REFUSAL_POOL && arena->fallback) return alloc_fallback(arena, size, align);
    if (why != ARENA_REFUSAL_BUDGET) kiln_owner_inc(&arena->failures);   /* budget: counted */
    return NULL;
}

/* kiln_arena_alloc_slow with the caller's site (kept by the debug layer). Inlined into
 * both callers, so that the plain slow path pays nothing for the site it never has. */
static inline __attribute__((always_inline)) void *
alloc_slow_at(kiln_arena *arena, size_t size, size_t align, kiln_debug_site site) {
    /* A destroyed arena's fast path is closed: every allocation through it lands here. */
    if (kiln_unlikely(!kiln_arena_live(arena, "an allocation"))) return NULL;
    bool debug = (arena->debug & KILN_ARENA_SLOW_BITS) != 0;
    if (align == 0) {
        if (!debug) return kiln_arena_bump(arena, size, KILN_DEFAULT_ALIGN);
        align = KILN_DEFAULT_ALIGN;
    }
    if (!kiln_is_pow2(align) || align > arena->max_align) {
        kiln_owner_inc(&arena->failures);
        kiln_log_misuse(&arena->log, KILN_LOGITEM_ARENA_BAD_ALIGN,
                        "arena '%s': alignment %zu is not a power of two from 1 to %zu",
                        arena->name, align, arena->max_align);
        return NULL;
    }
    if (debug) return arena->hooks->alloc(arena, size, align, site);
    return alloc_in_blocks(arena, size, align);
}

void *kiln_arena_alloc_slow(kiln_arena *arena, size_t size, size_t align) {
    return alloc_slow_at(arena, size, align, (kiln_debug_site){ NULL, 0 });
}

void *kiln_arena_alloc_raw(kiln_arena *arena, size_t size, size_t align, kiln_arena_spot *spot) {
    uint32_t large_before = arena->large_count;
    void *p = alloc_in_blocks(arena, size, align);
    if (!p) return NULL;
    spot->large = arena->large_count != large_before;
    spot->large_index = large_before;
    spot->pos = spot->large ? 0 : position(arena->current, (uintptr_t)p);
    return p;
}

bool kiln_arena_init_core(kiln_arena *arena, const kiln_arena_config *config) {
    kiln_arena_block *first = kiln_block_get(config->pool);
    if (!first) return false;
    first->prev = NULL;
    first->used_before = 0;
    memset(arena, 0, sizeof *arena);
    arena->first = first;
    arena->pool = config->pool;
    arena->max_align = config->pool->block_size;
    arena->budget = config->budget;
    arena->warn_percent = config->warn_percent;
    arena->refuse_over_budget = config->budget != 0 && config->refuse_over_budget;
    arena->fallback = config->fallback && !(config->debug & KILN_ARENA_SLOW_BITS);
    arena->frame_clock = config->frame_clock;
    arena->is_frame = config->is_frame;
    arena->log = config->log;
    snprintf(arena->name, sizeof arena->name, "%s", config->name ? config->name : "arena");
    arena->chain_blocks = 1;
    arena->keep_blocks = 1;
    kiln_store_relaxed(&arena->blocks_held, 1);
    kiln_store_relaxed(&arena->blocks_taken, 1);
    kiln_store_relaxed(&arena->held_bytes, config->pool->block_size);
    kiln_store_relaxed(&arena->held_charges, 1);
    kiln_tag_charge_always(config->account, config->pool->block_size, (kiln_tag_payer){ "arena", arena->name });
    kiln_store_relaxed(&arena->account, config->account);
    arena->debug = config->debug & (KILN_ARENA_SLOW_BITS | KILN_DEBUG_GUARD_PAGES);
    arena->audit_sample = config->audit_sample;
    arena->usable = kiln_debug_block_usable(arena->debug, config->pool->block_size);
    switch_block(arena, first, data_start(first));
    set_limit(arena);
    return true;
}

void kiln_arena_fini_core(kiln_arena *arena) {
    free_fallbacks(arena);
    free_large_down_to(arena, 0);
    unmap_kept_large(arena);
    kiln_arena_block *first = arena->first;
    while (arena->current != first) pop_block(arena);
    for (kiln_arena_block *b = arena->spare, *next; b; b = next) {
        next = b->prev;
        kiln_arena_give_block(arena, b);
    }
    kiln_arena_give_block(arena, first);
    arena->spare = NULL;
    arena->current = arena->first = NULL;
    /* Closed: no bump can succeed (start >= 1 > limit), so every allocation through a
     * stale pointer goes out of line and meets the destroyed check. */
    arena->limit = 0;
    kiln_store_relaxed(&arena->cursor, 1);
}

void kiln_arena_refuse_destroyed(const kiln_arena *arena, const char *what) {
    kiln_log_misuse(&arena->log, KILN_LOGITEM_ARENA_DESTROYED,
                    "arena '%s': %s on an arena that was destroyed%s; refused", arena->name,
                    what, arena->is_frame ? " (a frame arena: its context detached)" : "");
}

void *kiln_arena_alloc_site(kiln_arena *arena, size_t size, size_t align, kiln_debug_site site) {
    if (kiln_likely(!(arena->debug & KILN_ARENA_SLOW_BITS)))
        return kiln_arena_bump(arena, size, align);
    return alloc_slow_at(arena, size, align, site);
}

kiln_mark kiln_arena_take_mark(kiln_arena *arena) {
    if (!kiln_arena_live(arena, "kiln_arena_mark")) return (kiln_mark){ { 0, 0 } };
    if (kiln_unlikely(arena->debug & KILN_DEBUG_OWNERSHIP))
        arena->hooks->use(arena, "kiln_arena_mark");
    uint32_t serial = ++arena->marks_taken;
    uint32_t *slot = &arena->mark_stack[arena->mark_next];
    if (arena->mark_depth == KILN_ARENA_MARK_STACK)
        arena->mark_floor = *slot;   /* full: the slot holds the oldest entry */
    else
        arena->mark_depth++;
    *slot = serial;
    arena->mark_next = (arena->mark_next + 1) & (KILN_ARENA_MARK_STACK - 1);
    arena->top_mark = kiln_load_relaxed(&arena->cursor);
    uint64_t tags = ((uint64_t)serial << 32) | arena->large_count;
    return (kiln_mark){ { (uint64_t)kiln_load_relaxed(&arena->cursor), tags } };
}

/* How many marks were taken after the one with serial (modulo 2^32: see arena.h). */
static uint32_t mark_age(const kiln_arena *arena, uint32_t serial) {
    return arena->marks_taken - serial;
}

/* Owner: every mark taken so far is dead (reset, release to {0}). */
static void clear_marks(kiln_arena *arena) {
    arena->mark_depth = 0;
    arena->cleared_serial = arena->marks_taken;
    arena->mark_floor = arena->marks_taken;
    arena->top_mark = 0;
}

/* Owner: whether a release to the mark with serial may go ahead as far as the order of
 * scopes goes; if so, the marks taken after it are popped, for they die with the
 * release. The mark itself stays live: releasing to it twice is a no-op. */
static bool pop_marks_to(kiln_arena *arena, uint32_t serial) {
    uint32_t age = mark_age(arena, serial);
    for (uint32_t above = 0; above < arena->mark_depth; above++) {
        uint32_t slot = (arena->mark_next - 1 - above) & (KILN_ARENA_MARK_STACK - 1);
        if (arena->mark_stack[slot] != serial) continue;
        arena->mark_depth -= above;
        arena->mark_next = (slot + 1) & (KILN_ARENA_MARK_STACK - 1);
        return true;
    }
    if (age >= mark_age(arena, arena->cleared_serial) || age < mark_age(arena, arena->mark_floor))
        return false;
    /* Dropped off a full stack: all on the stack is newer, and dies; marks between this one
     * and the old floor died too, and are judged again from now on. */
    arena->mark_depth = 0;
    arena->mark_floor = serial;
    return true;
}

/* Owner: where the bytes in use end in block if it is on the chain (the cursor for the
 * current block; for a lower one, the point where the block above took over, recovered
 * from the used counts as pop_block does), or 0 when it is not on the chain. A mark
 * beyond that point was released past, even if the block is in use again. */
static uintptr_t chain_in_use_end(const kiln_arena *arena, const kiln_arena_block *block) {
    const kiln_arena_block *above = NULL;
    for (const kiln_arena_block *b = arena->current; b; above = b, b = b->prev) {
        if (b != block) continue;
        if (!above) return kiln_load_relaxed(&arena->cursor);
        return data_start(block) + (above->used_before - block->used_before);
    }
    return 0;
}

void kiln_arena_release_to(kiln_arena *arena, kiln_mark mark) {
    if (!kiln_arena_live(arena, "kiln_arena_release")) return;
    if (kiln_unlikely(arena->debug & KILN_DEBUG_OWNERSHIP))
        arena->hooks->use(arena, "kiln_arena_release");
    uintptr_t cursor = (uintptr_t)mark.opaque[0];
    uint32_t serial = (uint32_t)(mark.opaque[1] >> 32);
    uint32_t large_count = (uint32_t)mark.opaque[1];
    kiln_arena_block *block = arena->first;
    bool empty = cursor == 0 && mark.opaque[1] == 0;
    if (empty)
        cursor = data_start(block);        /* {0}: the empty arena, the outermost scope */
    else
        block = kiln_block_of(arena->pool, (void *)(cursor - 1));
    /* The position first, so that a mark of another arena (whose serial may well be on this
     * arena's stack) is refused as such; then the reset, then the order of scopes. */
    const char *problem = NULL;
    uintptr_t in_use_end = chain_in_use_end(arena, block);
    if (in_use_end == 0 || cursor < data_start(block) || cursor > block_end(arena, block))
        problem = "does not belong to this arena's current blocks";
    else if (!empty && mark_age(arena, serial) >= mark_age(arena, arena->reset_serial))
        problem = "comes from before the last reset";
    else if (cursor > in_use_end || large_count > arena->large_count)
        problem = "lies past the current position (already released)";
    else if (empty)
        clear_marks(arena);
    else if (!pop_marks_to(arena, serial))
        problem = "was released past: a release to an earlier mark ended its scope";
    if (problem) {
        kiln_log_misuse(&arena->log, KILN_LOGITEM_ARENA_BAD_MARK, "arena '%s': the mark %s; ignored",
                        arena->name, problem);
        return;
    }
    if (arena->hooks)
        arena->hooks->release(arena, position(block, cursor), large_count, "at release");
    record_peak(arena);
    free_large_down_to(arena, large_count);
    while (arena->current != block) pop_block(arena);
    kiln_store_relaxed(&arena->cursor, cursor);
    if (!empty) arena->top_mark = cursor;   /* the mark released to is the newest live one */
    kiln_owner_inc(&arena->releases);
    set_limit(arena);
}

/* Owner, at reset: the FRAME_BUDGET_NEAR episode rule (base/near_limit.h) on the
 * frame's high-water mark. */
static void judge_budget_near(kiln_arena *arena, size_t peak) {
    kiln_near_limit_step step = kiln_near_limit_next(arena->budget_near, peak, arena->budget,
                                                     arena->warn_percent);
    if (kiln_likely(step == KILN_NEAR_LIMIT_STAY)) return;
    arena->budget_near = step == KILN_NEAR_LIMIT_START;
    if (step != KILN_NEAR_LIMIT_START) return;
    unsigned long long frame = arena->frame_clock ? kiln_load_relaxed(arena->frame_clock) : 0;
    unsigned low = arena->warn_percent > KILN_WARN_HYSTERESIS ? arena->warn_percent - KILN_WARN_HYSTERESIS : 0;
    kiln_log(&arena->log, KILN_LOGITEM_FRAME_BUDGET_NEAR,
             "arena '%s': frame %llu reached %zu bytes, %u%% or more of its budget of %zu bytes; "
             "warned once until a frame stays under %u%%", arena->name, frame, peak,
             arena->warn_percent, arena->budget, low);
}

void kiln_arena_reset_all(kiln_arena *arena) {
    if (arena->hooks) arena->hooks->release(arena, 0, 0, "at reset");
    record_peak(arena);
    size_t peak = kiln_load_relaxed(&arena->peak_frame);
    if (arena->budget != 0 && arena->warn_percent != 0) judge_budget_near(arena, peak);
    kiln_store_relaxed(&arena->peak_last_frame, peak);
    kiln_store_relaxed(&arena->peak_frame, 0);
    free_fallbacks(arena);
    /* Mappings the frame did not reuse go back to the OS; those it used are kept. */
    unmap_kept_large(arena);
    free_large_down_to(arena, 0);
    arena->large_peak = arena->kept_count;   /* what this frame used is what it keeps */

    /* Keep what this frame used; after a spike, give back one block per reset, so a
     * steady frame never touches the pool and a one-off spike does not pin memory. */
    uint32_t decayed = arena->keep_blocks > 1 ? arena->keep_blocks - 1 : 1;
    uint32_t floor = kiln_load_relaxed(&arena->reserved_blocks);
    if (decayed < floor) decayed = floor;   /* a reserve never decays */
    arena->keep_blocks = arena->chain_blocks > decayed ? arena->chain_blocks : decayed;
    kiln_arena_block *first = arena->first;
    while (arena->current != first) pop_block(arena);
    while (arena->spare && 1 + arena->spare_blocks > arena->keep_blocks) {
        kiln_arena_block *block = arena->spare;
        arena->spare = block->prev;
        arena->spare_blocks--;
        kiln_arena_give_block(arena, block);
    }
    switch_block(arena, first, data_start(first));
    clear_marks(arena);
    arena->reset_serial = arena->marks_taken;
    arena->budget_warned = false;
    arena->budget_refused = false;
    arena->fallback_warned = false;
    kiln_owner_inc(&arena->resets);
    set_limit(arena);
}

bool kiln_arena_stats_read(const kiln_arena *arena, kiln_arena_stats *out) {
    if (!kiln_arena_live(arena, "kiln_arena_stats_get")) {
        *out = (kiln_arena_stats){ 0 };   /* zeroed, as for any refused stats call */
        return false;
    }
    kiln_arena *a = (kiln_arena *)arena;   /* atomics are read, never written */
    size_t used;
    for (;;) {
        uint64_t seq = kiln_seq_read_begin(&a->seq);
        size_t below = kiln_load_relaxed(&a->used_before);
        uintptr_t base = kiln_load_relaxed(&a->base);
        uintptr_t cursor = kiln_load_relaxed(&a->cursor);
        size_t large = kiln_load_relaxed(&a->large_bytes);
        if (kiln_seq_read_valid(&a->seq, seq)) {
            used = below + (size_t)(cursor - base) + large;
            break;
        }
    }
    size_t peak_frame = kiln_load_relaxed(&a->peak_frame);
    size_t peak_total = kiln_load_relaxed(&a->peak_total);
    *out = (kiln_arena_stats){
        .bytes_in_use = used,
        .peak_frame = used > peak_frame ? used : peak_frame,
        .peak_last_frame = kiln_load_relaxed(&a->peak_last_frame),
        .peak_total = used > peak_total ? used : peak_total,
        .budget = a->budget,
        .allocs = kiln_load_relaxed(&a->allocs),
        .failures = kiln_load_relaxed(&a->failures),
        .resets = kiln_load_relaxed(&a->resets),
        .releases = kiln_load_relaxed(&a->releases),
        .budget_warnings = kiln_load_relaxed(&a->budget_warnings),
        .large_allocs = kiln_load_relaxed(&a->large_allocs),
        .blocks_held = kiln_load_relaxed(&a->blocks_held),
        .blocks_taken = kiln_load_relaxed(&a->blocks_taken),
        .guard_errors = kiln_load_relaxed(&a->guard_errors),
        .wrong_thread = kiln_load_relaxed(&a->wrong_thread),
        .reserved_blocks = kiln_load_relaxed(&a->reserved_blocks),
        .budget_refusals = kiln_load_relaxed(&a->budget_refusals),
        .fallback_allocs = kiln_load_relaxed(&a->fallback_allocs),
        .fallback_bytes = kiln_load_relaxed(&a->fallback_bytes),
    };
    memcpy(out->name, a->name, sizeof out->name);
    return true;
}

/* ---- growing the last allocation in place (kiln_arena_grow, runtime/arena_text.c) ---- */

bool kiln_arena_move_end(kiln_arena *arena, uintptr_t end, uintptr_t new_end) {
    kiln_arena_block *block = arena->current;
    if (end != kiln_load_relaxed(&arena->cursor) || end == arena->top_mark ||
        new_end < data_start(block) || new_end > block_end(arena, block))
        return false;
    if (new_end > end) {
        /* Past an unwarned budget only through the allocation path, which warns (or, by
         * the frame's policy, refuses). */
        if (arena->budget != 0 && !arena->budget_warned &&
            bytes_in_use(arena) + (new_end - end) > arena->budget)
            return false;
    } else {
        record_peak(arena);
    }
    kiln_store_relaxed(&arena->cursor, new_end);
    return true;
}

bool kiln_arena_grow_in_place(kiln_arena *arena, void *ptr, size_t old_size, size_t new_size,
                              size_t align) {
    uintptr_t start = (uintptr_t)ptr;
    if (align == 0) align = KILN_DEFAULT_ALIGN;
    if ((start & (align - 1)) != 0) return false;
    bool done;
    if (arena->debug & KILN_ARENA_RECORD_BITS) {
        done = arena->hooks->grow(arena, ptr, old_size, new_size);
    } else {
        uintptr_t cursor = kiln_load_relaxed(&arena->cursor);
        done = start >= data_start(arena->current) && start <= cursor &&
               cursor - start == old_size &&
               new_size <= block_end(arena, arena->current) - start &&
               kiln_arena_move_end(arena, cursor, start + new_size);
    }
    if (done && (arena->debug & KILN_DEBUG_OWNERSHIP)) arena->hooks->use(arena, "kiln_arena_grow");
    return done;
}

bool kiln_arena_holds(const kiln_arena *arena, const void *ptr, size_t size) {
    uintptr_t p = (uintptr_t)ptr;
    const kiln_arena_block *above = NULL;
    for (const kiln_arena_block *b = arena->current; b; above = b, b = b->prev) {
        uintptr_t end = above ? data_start(b) + (above->used_before - b->used_before)
                              : kiln_load_relaxed(&arena->cursor);
        if (p >= data_start(b) && p <= end && size <= end - p) return true;
    }
    for (const kiln_large *large = arena->large; large; large = large->prev) {
        uintptr_t map = (uintptr_t)large - large->guard;
        uintptr_t end = map + large->map_size - large->guard;
        if (p > (uintptr_t)large && p <= end && size <= end - p) return true;
    }
    for (const kiln_fallback *fb = arena->fallback_list; fb; fb = fb->prev) {
        uintptr_t start = (uintptr_t)fb->data, end = start + fb->size;
        if (p >= start && p <= end && size <= end - p) return true;
    }
    return false;
}
/* ---- kiln_arena_reserve ---- */

/* Block space one block offers allocations from its start. */
static size_t block_space(const kiln_arena *arena) {
    return arena->usable - sizeof(kiln_arena_block);
}

/* Owner: bytes the arena can allocate from its position without the pool: the rest of
 * the current block and its spares (fewer than 2^32 blocks of under 1 GiB: no overflow). */
static size_t space_held(const kiln_arena *arena) {
    size_t rest = (size_t)(block_end(arena, arena->current) - kiln_load_relaxed(&arena->cursor));
    return rest + (size_t)arena->spare_blocks * block_space(arena);
}

/* Owner: faults in the pages of [from, the block's usable end) now, not in the frame
 * that first uses them. Free bytes only: a block just taken from the pool (zeroed), or
 * the current block past the cursor (kept as they are; KILN_DEBUG_POISON may have
 * poisoned them: the caller skips it then). */
static void touch_pages(const kiln_arena *arena, kiln_arena_block *block, uintptr_t from, bool keep) {
    kiln_os_touch_pages((void *)from, block_end(arena, block) - from, keep);
}

bool kiln_arena_reserve_bytes(kiln_arena *arena, size_t bytes) {
    if (!kiln_arena_live(arena, "kiln_arena_reserve")) return false;
    if (kiln_unlikely(arena->debug & KILN_DEBUG_OWNERSHIP))
        arena->hooks->use(arena, "kiln_arena_reserve");
    if (bytes > ((size_t)1 << KILN_ADDRESS_BITS)) {
        kiln_log_misuse(&arena->log, KILN_LOGITEM_ARENA_RESERVE_TOO_LARGE,
                        "arena '%s': kiln_arena_reserve of %zu bytes, more than the user address "
                        "space holds; refused", arena->name, bytes);
        return false;
    }
    size_t per_block = block_space(arena);
    size_t floor_blocks = bytes / per_block + (bytes % per_block != 0);
    if (floor_blocks == 0) floor_blocks = 1;   /* the first block is always kept */
    if (floor_blocks > UINT32_MAX) floor_blocks = UINT32_MAX;   /* the pool refuses long before */
    if (bytes != 0 && !(arena->debug & KILN_DEBUG_POISON))
        touch_pages(arena, arena->current, kiln_load_relaxed(&arena->cursor), true);
    while (space_held(arena) < bytes) {
        kiln_arena_block *block = kiln_arena_take_block(arena);
        if (!block) {
            kiln_log(&arena->log, KILN_LOGITEM_ARENA_RESERVE_FAILED,
                     "arena '%s': kiln_arena_reserve of %zu bytes: a block was refused "
                     "(memory_limit, the OS, or the arena's tag's budget; %zu bytes of block "
                     "space held); the arena keeps what it took",
                     arena->name, bytes, space_held(arena));
            return false;
        }
        touch_pages(arena, block, (uintptr_t)block, false);   /* the header's page too: written next */
        block->prev = arena->spare;
        arena->spare = block;
        arena->spare_blocks++;
    }
    if (bytes != 0 && (arena->debug & KILN_ARENA_RECORD_BITS) &&
        !arena->hooks->reserve_records(arena, bytes / KILN_RESERVE_BYTES_PER_RECORD + 1)) {
        kiln_log(&arena->log, KILN_LOGITEM_ARENA_RESERVE_FAILED,
                 "arena '%s': kiln_arena_reserve of %zu bytes: a block was refused (memory_limit, "
                 "the OS, or the arena's tag's budget) for the debug records; the arena keeps "
                 "what it took", arena->name, bytes);
        return false;
    }
    if (floor_blocks > kiln_load_relaxed(&arena->reserved_blocks))
        kiln_store_relaxed(&arena->reserved_blocks, (uint32_t)floor_blocks);
    if (floor_blocks > arena->keep_blocks) arena->keep_blocks = (uint32_t)floor_blocks;
    return true;
}
