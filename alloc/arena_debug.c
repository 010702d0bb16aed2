/* alloc/arena_debug.c — the arenas' debug layer, above the core (arena.c): a record of
 * every live allocation on a stack kept in blocks of its own, guard bytes around
 * allocations, fill patterns and poisoning, the guard checks at release, reset and
 * destroy and in the frame-end audit, the leak list by site, and the owner-thread check.
 * It sets an arena up and tears it down around the core's halves (kiln_arena_init,
 * kiln_arena_fini), and with a debug bit installs the hooks through which the core
 * reaches it; that arena's fast path is closed (limit 0): every allocation comes here.
 *
 * The records sit out of the allocations' way on purpose: an overrun damages guard
 * bytes, never a record, so a check can always find every allocation and name it. */
#include "arena.h"

#include <stdio.h>
#include <string.h>

/* One live allocation. */
typedef struct kiln_arena_record {
    char       *object;
    size_t      size;          /* bytes asked */
    size_t      pos;           /* block allocations: the arena position of the raw start */
    const char *file;          /* the site; NULL: none given */
    int         line;
    uint32_t    large_index;   /* large allocations: live large allocations before it */
    uint32_t    front;         /* guard bytes before object (0 without KILN_DEBUG_GUARDS) */
    bool        large;
} kiln_arena_record;

/* A block of the record stack: records oldest first; the block below holds older ones.
 * Every block on the stack holds at least one record, but the bottom one may be empty. */
typedef struct kiln_record_block {
    struct kiln_record_block *below;
    size_t                    count;   /* records in use here */
    kiln_arena_record         records[];
} kiln_record_block;

static size_t records_per_block(const kiln_arena *arena) {
    return (arena->usable - sizeof(kiln_record_block)) / sizeof(kiln_arena_record);
}

static size_t back_guard(const kiln_arena *arena) {
    return (arena->debug & KILN_DEBUG_GUARDS) ? KILN_GUARD_BYTES : 0;
}

static kiln_guarded guarded(const kiln_arena *arena, const kiln_arena_record *r) {
    return (kiln_guarded){ r->object, r->size, r->front, back_guard(arena) };
}

/* Owner: where the next record goes: on top, or at the start of a kept empty block
 * (taken from the block pool if none is kept); NULL when the block pool refuses (it
 * logged why). Nothing changes on the stack until record_push. */
static kiln_arena_record *record_room(kiln_arena *arena) {
    kiln_record_block *top = arena->records;
    if (top && top->count < records_per_block(arena)) return &top->records[top->count];
    if (!arena->record_spare) {
        kiln_record_block *fresh = kiln_arena_take_block(arena);
        if (!fresh) return NULL;
        fresh->below = NULL;
        arena->record_spare = fresh;
    }
    return &arena->record_spare->records[0];
}

/* Owner: counts the record written where record_room said. */
static void record_push(kiln_arena *arena) {
    kiln_record_block *top = arena->records;
    if (!top || top->count == records_per_block(arena)) {
        kiln_record_block *fresh = arena->record_spare;
        arena->record_spare = fresh->below;
        fresh->below = top;
        fresh->count = 0;
        arena->records = top = fresh;
    }
    top->count++;
}

/* Owner: drops the top record; an emptied block is kept for the next ones. */
static void record_pop(kiln_arena *arena) {
    kiln_record_block *top = arena->records;
    if (--top->count != 0 || !top->below) return;
    arena->records = top->below;
    top->below = arena->record_spare;
    arena->record_spare = top;
}

static kiln_arena_record *record_top(const kiln_arena *arena) {
    kiln_record_block *top = arena->records;
    return top && top->count ? &top->records[top->count - 1] : NULL;
}

static void debug_use(kiln_arena *arena, const char *what);

/* The alloc hook (kiln_arena_hooks in arena.h). */
static void *debug_alloc(kiln_arena *arena, size_t size, size_t align, kiln_debug_site site) {
    if (arena->debug & KILN_DEBUG_OWNERSHIP) debug_use(arena, "an allocation");
    kiln_arena_spot spot;
    if (!(arena->debug & KILN_ARENA_RECORD_BITS))
        return kiln_arena_alloc_raw(arena, size, align, &spot);
    kiln_arena_record *r = record_room(arena);
    if (!r) {
        kiln_owner_inc(&arena->failures);
        return NULL;
    }
    /* With guards: [front guard][object][back guard], the front guard a whole multiple
     * of the alignment (16 at least: ASan poisons in 8-byte granules). */
    size_t front = 0, total = size;
    if (arena->debug & KILN_DEBUG_GUARDS) {
        if (align < KILN_GUARD_BYTES) align = KILN_GUARD_BYTES;
        front = kiln_align_up(KILN_GUARD_BYTES, align);
        if (__builtin_add_overflow(size, front + KILN_GUARD_BYTES, &total)) total = SIZE_MAX;
    }
    char *raw = kiln_arena_alloc_raw(arena, total, align, &spot);
    if (!raw) return NULL;
    *r = (kiln_arena_record){ .object = raw + front, .size = size, .pos = spot.pos,
                              .file = (arena->debug & KILN_DEBUG_SITES) ? site.file : NULL,
                              .line = site.line,
                              .large_index = spot.large_index, .front = (uint32_t)front,
                              .large = spot.large };
    record_push(arena);
    if (arena->debug & KILN_DEBUG_SITES)
        kiln_sites_alloc(arena->pool->sites, (kiln_debug_site){ r->file, r->line }, size, true);
    if (arena->debug & KILN_DEBUG_POISON) {
        kiln_debug_unpoison(raw, total);   /* its guards may lie where a freed object was */
        kiln_debug_object_taken(arena, r->object, size);
    }
    if (front) {
        kiln_guarded g = guarded(arena, r);
        kiln_debug_guards_write(&g);
    }
    if (arena->debug & KILN_DEBUG_FILL) memset(r->object, KILN_FILL_FRESH, size);
    return r->object;
}

/* Owner: checks one record's guards; a damage is reported, counted and (repair) mended
 * so that it is reported once. */
static void check_record(kiln_arena *arena, const kiln_arena_record *r, const char *when,
                         bool repair) {
    kiln_guarded g = guarded(arena, r);
    ptrdiff_t bad;
    if (kiln_debug_guards_intact(&g, &bad)) return;
    kiln_add_relaxed(&arena->guard_errors, 1);
    kiln_debug_report_guard(&arena->log, KILN_LOGITEM_ARENA_GUARD_DAMAGED, "arena", arena->name, &g, bad,
                            (kiln_debug_site){ r->file, r->line }, when);
    if (repair) kiln_debug_guards_write(&g);
}

/* The release hook. */
static void debug_release(kiln_arena *arena, size_t pos, uint32_t large_count, const char *when) {
    /* The stack is in allocation order, so the allocations after the mark are on top. */
    for (kiln_arena_record *r; (r = record_top(arena)) != NULL; record_pop(arena)) {
        if (r->large ? r->large_index < large_count : r->pos < pos) break;
        if (arena->debug & KILN_DEBUG_GUARDS) check_record(arena, r, when, false);
        if (arena->debug & KILN_DEBUG_SITES)
            kiln_sites_freed(arena->pool->sites, (kiln_debug_site){ r->file, r->line });
        if (arena->debug & KILN_DEBUG_FILL) memset(r->object, KILN_FILL_FREED, r->size);
        if (arena->debug & KILN_DEBUG_POISON) kiln_debug_object_freed(arena, r->object, r->size);
    }
}

/* memcheck: the chunk at object is now size bytes long. */
static void chunk_resized(const kiln_arena *arena, const char *object, size_t size) {
#ifdef KILN_HAVE_VALGRIND
    VALGRIND_MEMPOOL_CHANGE(arena, object, object, size);
#endif
    (void)arena;
    (void)object;
    (void)size;
}

/* The grow hook: the newest record's end moves, and its back guard with it. The old
 * guards are checked first (a damage is reported "at grow": the bytes it hit are about
 * to become the object's or the new guard's). Grown bytes are unpoisoned (a released
 * object may have lain there) and read 0xCD with KILN_DEBUG_FILL; bytes a shrink gives
 * up read 0xDD and are poisoned, as a release leaves them. */
static bool debug_grow(kiln_arena *arena, char *object, size_t old_size, size_t new_size) {
    kiln_arena_record *r = record_top(arena);
    if (!r || r->large || r->object != object || r->size != old_size) return false;
    size_t back = back_guard(arena);
    uintptr_t end = (uintptr_t)object + old_size + back, new_end;
    if (__builtin_add_overflow((uintptr_t)object + back, new_size, &new_end) ||
        !kiln_arena_move_end(arena, end, new_end))
        return false;
    if (arena->debug & KILN_DEBUG_GUARDS) check_record(arena, r, "at grow", false);
    r->size = new_size;
    if (new_size > old_size) {
        if (arena->debug & KILN_DEBUG_POISON) kiln_debug_unpoison(object + old_size, new_end - end + back);
        if (arena->debug & KILN_DEBUG_FILL)
            memset(object + old_size, KILN_FILL_FRESH, new_size - old_size);
    } else {
        char *freed = (char *)new_end;   /* after the new back guard, up to the old end */
        if (arena->debug & KILN_DEBUG_FILL) memset(freed, KILN_FILL_FREED, end - new_end);
        if (arena->debug & KILN_DEBUG_POISON) kiln_debug_poison(freed, end - new_end);
    }
    if (arena->debug & KILN_DEBUG_POISON) chunk_resized(arena, object, new_size);
    if (r->front) {
        kiln_guarded g = guarded(arena, r);
        kiln_debug_guards_write(&g);
    }
    return true;
}

void kiln_arena_audit(kiln_arena *arena) {
    if (!(arena->debug & KILN_DEBUG_GUARDS) || arena->is_frame ||
        kiln_load_relaxed(&arena->owner_thread) != kiln_debug_thread())
        return;
    uint32_t left = arena->audit_sample;
    for (kiln_record_block *b = arena->records; b && left; b = b->below)
        for (size_t i = b->count; i-- > 0 && left; left--)
            check_record(arena, &b->records[i], "by the frame-end audit", true);
}

void kiln_arena_report_leaks(kiln_arena *arena) {
    if (!(arena->debug & KILN_DEBUG_SITES) || !record_top(arena)) return;
    kiln_site_table table = { 0 };
    for (kiln_record_block *b = arena->records; b; b = b->below)
        for (size_t i = 0; i < b->count; i++)
            kiln_site_table_add(&table, (kiln_debug_site){ b->records[i].file, b->records[i].line });
    char what[80];
    snprintf(what, sizeof what, "arena '%s'", arena->name);
    kiln_site_table_report(&table, &arena->log, KILN_LOGITEM_ARENA_LEAK_SITE, KILN_LOGITEM_ARENA_LEAK_SUMMARY, what,
                           "allocations");
}

kiln_debug_site kiln_arena_site_of(const kiln_arena *arena, const void *object, size_t size) {
    const kiln_arena_record *at = NULL;   /* the newest record at object, whatever its size */
    if (arena->debug & KILN_DEBUG_SITES)
        for (const kiln_record_block *b = arena->records; b; b = b->below)
            for (size_t i = b->count; i-- > 0;) {
                const kiln_arena_record *r = &b->records[i];
                if (r->object != object) continue;
                if (r->size == size) return (kiln_debug_site){ r->file, r->line };
                if (!at) at = r;
            }
    return at ? (kiln_debug_site){ at->file, at->line } : (kiln_debug_site){ NULL, 0 };
}

/* The reserve_records hook: record blocks on the spare list until the top block's room
 * and the spares hold records more. */
static bool debug_reserve_records(kiln_arena *arena, size_t records) {
    size_t per_block = records_per_block(arena), room = 0;
    if (arena->records) room = per_block - arena->records->count;
    for (const kiln_record_block *b = arena->record_spare; b; b = b->below) room += per_block;
    while (room < records) {
        kiln_record_block *fresh = kiln_arena_take_block(arena);
        if (!fresh) return false;
        fresh->below = arena->record_spare;
        arena->record_spare = fresh;
        room += per_block;
    }
    return true;
}

/* ---- ownership ---- */

void kiln_arena_debug_claim(kiln_arena *arena) {
    kiln_store_relaxed(&arena->owner_thread, kiln_debug_thread());
    kiln_store_relaxed(&arena->reported_thread, 0);
}

/* The use hook. */
static void debug_use(kiln_arena *arena, const char *what) {
    uintptr_t self = kiln_debug_thread();
    if (kiln_load_relaxed(&arena->owner_thread) == self) return;
    kiln_add_relaxed(&arena->wrong_thread, 1);
    if (kiln_exchange_relaxed(&arena->reported_thread, self) == self) return;
    kiln_log_misuse(&arena->log, KILN_LOGITEM_ARENA_WRONG_THREAD,
                    "arena '%s': %s from a thread that does not own it (the owner is %s); "
                    "the call proceeds", arena->name, what,
                    arena->is_frame ? "its context's thread"
                                    : "the thread that created it or last reset it");
}

void kiln_arena_debug_reset(kiln_arena *arena) {
    if (!arena->is_frame) kiln_arena_debug_claim(arena);
    else if (arena->debug & KILN_DEBUG_OWNERSHIP) debug_use(arena, "kiln_arena_reset");
}

/* ---- set-up and teardown: the core's, with this layer around it ---- */

static const kiln_arena_hooks debug_hooks = {
    .alloc = debug_alloc,
    .use = debug_use,
    .release = debug_release,
    .grow = debug_grow,
    .reserve_records = debug_reserve_records,
};

/* The creating thread owns the arena, the first block gets its guard page, the arena
 * becomes a memcheck pool, and the hooks through which the core calls this layer go in. */
static void debug_init(kiln_arena *arena) {
    kiln_arena_debug_claim(arena);
    kiln_debug_block_taken(arena->debug, arena->first, arena->pool->block_size, &arena->log);
    if (arena->debug & KILN_DEBUG_POISON) kiln_debug_mempool_create(arena);
    arena->hooks = &debug_hooks;
}

/* The records are checked and their blocks go back. */
static void debug_fini(kiln_arena *arena) {
    debug_release(arena, 0, 0, "at destroy");
    for (kiln_record_block *b = arena->records, *below; b; b = below) {
        below = b->below;
        kiln_arena_give_block(arena, b);
    }
    for (kiln_record_block *b = arena->record_spare, *below; b; b = below) {
        below = b->below;
        kiln_arena_give_block(arena, b);
    }
    arena->records = arena->record_spare = NULL;
    if (arena->debug & KILN_DEBUG_POISON) kiln_debug_mempool_destroy(arena);
}

bool kiln_arena_init(kiln_arena *arena, const kiln_arena_config *config) {
    if (!kiln_arena_init_core(arena, config)) return false;
    if (arena->debug) debug_init(arena);
    return true;
}

void kiln_arena_fini(kiln_arena *arena) {
    if (arena->debug) debug_fini(arena);
    kiln_arena_fini_core(arena);
}
