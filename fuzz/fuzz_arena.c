/* fuzz/fuzz_arena.c — libFuzzer target: two arenas driven by the input (allocations of
 * every size and alignment, large ones beyond a block, marks, releases to valid, stale,
 * foreign and forged marks, resets) against a model that knows where each allocation
 * must land, what the arena's byte count must read, what each live allocation must
 * still hold and which misuse must be logged.
 *
 * The model is white-box where the contract is exact: an allocation that fits the
 * current block is the next aligned address after the previous one, so the model needs
 * to know where a block's data starts (alloc/arena.h), and bytes_in_use counts the
 * alignment padding.
 *
 * Input: one byte of debug bits (fuzz_debug_bits), then operations: a byte each (its
 * top bit picks the arena), with their operands in the bytes after it. */
#include "fuzz_common.h"

#include <stdalign.h>

#include "alloc/arena.h"

#define BLOCK_SIZE    4096u
#define MAX_LIVE      512
#define MAX_MARKS     16
#define MAX_SCOPES    4096   /* live marks the model follows; more are not taken */
#define DEFAULT_ALIGN alignof(max_align_t)

typedef struct allocation {
    uint8_t *p;
    size_t   size;
    uint8_t  fill;
} allocation;

/* A position of an arena: everything a release to a mark taken there restores. */
typedef struct position {
    uint32_t  live;     /* allocations made before it: live[0 .. live) */
    uint32_t  large;    /* large allocations among them */
    uint32_t  chain;    /* blocks on the chain */
    uintptr_t cursor;   /* the end of the last in-block allocation (or the data start) */
    size_t    bytes;    /* bytes_in_use: in-block bytes with their padding + large sizes */
} position;

typedef struct mark_slot {
    bool      used;
    bool      valid;    /* neither released past nor from before a reset */
    uint32_t  serial;
    kiln_mark mark;
    position  pos;
} mark_slot;

/* Marks are LIFO scopes (alloc/arena.h): the model keeps every live mark's serial,
 * oldest first, and knows that kiln's stack holds the newest `stacked` of them, at most
 * KILN_ARENA_MARK_STACK; below that kiln judges a mark by position only. */
typedef struct scopes {
    uint32_t live[MAX_SCOPES];
    uint32_t count;
    uint32_t stacked;
    uint32_t taken;     /* serials handed out */
    uint32_t reset;     /* taken at the last reset: marks up to it are stale */
    uint32_t cleared;   /* taken at the last reset or release to {0}: all dead */
    uint32_t floor;     /* marks in (cleared, floor] off kiln's stack: position only */
} scopes;

typedef struct model {
    kiln_arena *arena;
    const char *name;
    allocation  live[MAX_LIVE];       /* in allocation order: a release truncates it */
    uintptr_t   chain[MAX_LIVE + 1];  /* the chain's blocks, first to current */
    uintptr_t   chain_end[MAX_LIVE + 1];  /* below the current block: where its bytes end */
    position    pos;
    mark_slot   marks[MAX_MARKS];
    scopes      scopes;
    uint64_t    allocs, failures, releases, resets, large_allocs;
} model;

typedef struct world {
    fuzz_log      log;
    kiln_runtime *rt;
    model         arenas[2];
    uint8_t       next_fill;
} world;

static uintptr_t block_of(uintptr_t p) { return p & ~(uintptr_t)(BLOCK_SIZE - 1); }

static uintptr_t align_up(uintptr_t x, size_t align) {
    return (x + (align - 1)) & ~(uintptr_t)(align - 1);
}

/* Where allocations in block start: after the block header, the first block's too (the
 * arena's bookkeeping is a record outside its blocks). */
static uintptr_t data_start(const model *m, uintptr_t block) {
    (void)m;
    return block + sizeof(kiln_arena_block);
}

static void start_over(model *m) {
    m->pos = (position){ .chain = 1, .cursor = data_start(m, m->chain[0]) };
    for (int i = 0; i < MAX_MARKS; i++) m->marks[i].valid = false;
}

static void model_init(world *w, model *m, const char *name) {
    memset(m, 0, sizeof *m);
    m->name = name;
    m->arena = kiln_arena_create(w->rt, name);
    FUZZ_CHECK(m->arena != NULL, "kiln_arena_create: %s", w->log.last);
    m->chain[0] = (uintptr_t)m->arena->first;
    start_over(m);
}

/* ---- checks ---------------------------------------------------------------------- */

static void check_stats(const model *m) {
    kiln_arena_stats s;
    FUZZ_CHECK(kiln_arena_stats_get(m->arena, &s), "kiln_arena_stats_get failed");
    FUZZ_CHECK(s.bytes_in_use == m->pos.bytes, "bytes_in_use %zu, model %zu", s.bytes_in_use,
               m->pos.bytes);
    FUZZ_CHECK(s.allocs == m->allocs && s.failures == m->failures && s.releases == m->releases &&
                   s.resets == m->resets && s.large_allocs == m->large_allocs,
               "allocs %" PRIu64 "/%" PRIu64 " failures %" PRIu64 "/%" PRIu64 " releases %" PRIu64
               "/%" PRIu64 " resets %" PRIu64 "/%" PRIu64 " large %" PRIu64 "/%" PRIu64
               " (kiln/model)", s.allocs, m->allocs, s.failures, m->failures, s.releases,
               m->releases, s.resets, m->resets, s.large_allocs, m->large_allocs);
    FUZZ_CHECK(s.peak_total >= s.bytes_in_use && s.peak_frame >= s.bytes_in_use,
               "peaks %zu/%zu below bytes_in_use %zu", s.peak_total, s.peak_frame,
               s.bytes_in_use);
    FUZZ_CHECK(s.blocks_held >= m->pos.chain, "blocks_held %u, chain %u", s.blocks_held,
               m->pos.chain);
}

/* Each live allocation still holds its fill: every byte (full) or its two ends. */
static void check_contents(const model *m, bool full) {
    for (uint32_t i = 0; i < m->pos.live; i++) {
        const allocation *a = &m->live[i];
        size_t bad = fuzz_fill_differs_at(a->p, a->size, a->fill, full);
        FUZZ_CHECK(bad == a->size, "allocation %u (%p, %zu bytes) changed at byte %zu", i,
                   (void *)a->p, a->size, bad);
    }
}

static void check_all(world *w, bool full) {
    for (int i = 0; i < 2; i++) {
        check_stats(&w->arenas[i]);
        check_contents(&w->arenas[i], full);
    }
    fuzz_log_verify(&w->log, w->rt);
}

/* ---- allocation ------------------------------------------------------------------ */

static bool on_chain(const model *m, uintptr_t block) {
    for (uint32_t i = 0; i < m->pos.chain; i++)
        if (m->chain[i] == block) return true;
    return false;
}

static void check_no_overlap(const world *w, const uint8_t *p, size_t size) {
    for (int k = 0; k < 2; k++) {
        const model *m = &w->arenas[k];
        for (uint32_t i = 0; i < m->pos.live; i++)
            FUZZ_CHECK(!fuzz_overlap(p, size, m->live[i].p, m->live[i].size),
                       "new %p+%zu overlaps live %p+%zu of arena %d", (const void *)p, size,
                       (void *)m->live[i].p, m->live[i].size, k);
    }
}

/* Where the model says an allocation goes. */
typedef enum placement { IN_BLOCK, FRESH_BLOCK, LARGE, BAD_ALIGN, TOO_BIG } placement;

static placement place(const model *m, size_t size, size_t align) {
    if (!fuzz_is_pow2(align) || align > BLOCK_SIZE) return BAD_ALIGN;
    uintptr_t end = m->chain[m->pos.chain - 1] + BLOCK_SIZE;
    uintptr_t start = align_up(m->pos.cursor, align);
    if (start <= end && size <= end - start) return IN_BLOCK;
    size_t fresh = sizeof(kiln_arena_block) > align ? sizeof(kiln_arena_block) : align;
    if (fresh < BLOCK_SIZE && size <= BLOCK_SIZE - fresh) return FRESH_BLOCK;
    return size >= SIZE_MAX / 2 ? TOO_BIG : LARGE;
}

static void do_alloc(world *w, model *m, size_t size, size_t align_arg) {
    if (m->pos.live == MAX_LIVE) return;
    size_t align = align_arg ? align_arg : DEFAULT_ALIGN;
    placement where = place(m, size, align);
    uint8_t *p = kiln_arena_alloc(m->arena, size, align_arg);
    uintptr_t addr = (uintptr_t)p;
    if (where == BAD_ALIGN || where == TOO_BIG) {
        FUZZ_CHECK(p == NULL, "alloc of %zu at align %zu gave %p", size, align_arg, (void *)p);
        m->failures++;
        fuzz_log_expect(&w->log, where == BAD_ALIGN ? "ARENA_BAD_ALIGN" : "ARENA_SIZE_OVERFLOW",
                        true, m->name);   /* both are misuse, counted */
        return;
    }
    FUZZ_CHECK(p != NULL, "alloc of %zu at align %zu failed: %s", size, align, w->log.last);
    FUZZ_CHECK(addr % align == 0, "%p is not aligned to %zu", (void *)p, align);
    if (where == IN_BLOCK) {
        uintptr_t start = align_up(m->pos.cursor, align);
        FUZZ_CHECK(addr == start, "alloc of %zu at align %zu: %p, model %p", size, align,
                   (void *)p, (void *)start);
        m->pos.bytes += addr + size - m->pos.cursor;
        m->pos.cursor = addr + size;
    } else if (where == FRESH_BLOCK) {
        uintptr_t block = block_of(addr);
        FUZZ_CHECK(addr - block == align_up(sizeof(kiln_arena_block), align) && !on_chain(m, block),
                   "alloc of %zu at align %zu in a fresh block: %p", size, align, (void *)p);
        m->chain_end[m->pos.chain - 1] = m->pos.cursor;
        m->chain[m->pos.chain++] = block;
        m->pos.bytes += addr + size - data_start(m, block);
        m->pos.cursor = addr + size;
    } else {
        for (uint32_t i = 0; i < m->pos.chain; i++)
            FUZZ_CHECK(!fuzz_overlap(p, size, (void *)m->chain[i], BLOCK_SIZE),
                       "large allocation %p+%zu lies in block %u", (void *)p, size, i);
        m->pos.large++;
        m->pos.bytes += size;
        m->large_allocs++;
    }
    check_no_overlap(w, p, size);
    m->allocs++;
    allocation *a = &m->live[m->pos.live++];
    *a = (allocation){ p, size, w->next_fill++ };
    memset(p, a->fill, size);
}

/* Sizes: small, up to a block, at a block's edge, beyond a block, zero, and (rarely)
 * too big to represent. */
static size_t read_size(fuzz_input *in) {
    switch (fuzz_byte(in) % 8) {
    case 0: case 1: return fuzz_byte(in) % 65;
    case 2: case 3: return fuzz_below(in, BLOCK_SIZE);
    case 4: return BLOCK_SIZE - 64 + fuzz_byte(in) % 128;
    case 5: return BLOCK_SIZE + fuzz_below(in, 3 * BLOCK_SIZE);
    case 6: return 0;
    default: return fuzz_byte(in) == 0xff ? SIZE_MAX / 2 + fuzz_byte(in) : fuzz_byte(in);
    }
}

/* Alignments: the default (0), every power of two up to the block size, and bad ones. */
static size_t read_align(fuzz_input *in) {
    static const size_t bad[] = { 3, 24, 2 * BLOCK_SIZE, SIZE_MAX / 2 + 1 };
    uint8_t v = fuzz_byte(in) % 20;
    if (v < 6) return 0;
    if (v < 19) return (size_t)1 << (v - 6);
    return bad[fuzz_byte(in) % 4];
}

/* ---- marks ----------------------------------------------------------------------- */

/* Marks taken after the one with serial s (modulo 2^32, as kiln counts). */
static uint32_t age(const scopes *sc, uint32_t s) { return sc->taken - s; }

static bool take_mark(model *m, kiln_mark *out, uint32_t *serial) {
    scopes *sc = &m->scopes;
    if (sc->count == MAX_SCOPES) return false;
    kiln_mark mark = kiln_arena_mark(m->arena);
    *serial = ++sc->taken;
    uint64_t tags = ((uint64_t)*serial << 32) | m->pos.large;
    FUZZ_CHECK(mark.opaque[0] == m->pos.cursor && mark.opaque[1] == tags,
               "mark {%#" PRIx64 ", %#" PRIx64 "}, model {%#" PRIxPTR ", %#" PRIx64 "}",
               mark.opaque[0], mark.opaque[1], m->pos.cursor, tags);
    if (sc->stacked == KILN_ARENA_MARK_STACK)
        sc->floor = sc->live[sc->count - KILN_ARENA_MARK_STACK];   /* dropped by kiln */
    else
        sc->stacked++;
    sc->live[sc->count++] = *serial;
    *out = mark;
    return true;
}

static void do_mark(model *m, unsigned slot) {
    kiln_mark mark;
    uint32_t serial;
    if (!take_mark(m, &mark, &serial)) return;
    m->marks[slot] = (mark_slot){ .used = true, .valid = true, .serial = serial, .mark = mark,
                                  .pos = m->pos };
}

/* Where serial is among the live marks, or -1. */
static int64_t live_index(const scopes *sc, uint32_t serial) {
    for (uint32_t i = sc->count; i-- > 0;)
        if (sc->live[i] == serial) return i;
    return -1;
}

/* Whether kiln's release would go ahead as far as the order of scopes goes: the mark is
 * on kiln's stack, or off it and judged by position alone. */
static bool scope_open(const scopes *sc, uint32_t serial) {
    int64_t i = live_index(sc, serial);
    if (i >= (int64_t)(sc->count - sc->stacked)) return true;
    return age(sc, serial) < age(sc, sc->cleared) && age(sc, serial) >= age(sc, sc->floor);
}

/* Whether kiln can tell that mark is no position of m now (the checks of
 * kiln_arena_release: the block on the chain, the cursor within what the block holds,
 * the reset, the large count, the order of scopes). */
static bool detectably_bad(const model *m, kiln_mark mark) {
    uintptr_t cursor = (uintptr_t)mark.opaque[0];
    if (cursor == 0 && mark.opaque[1] == 0) return false;   /* {0}: the empty arena */
    uint32_t serial = (uint32_t)(mark.opaque[1] >> 32);
    if (age(&m->scopes, serial) >= age(&m->scopes, m->scopes.reset)) return true;
    if ((uint32_t)mark.opaque[1] > m->pos.large) return true;
    uintptr_t block = block_of(cursor - 1);
    for (uint32_t i = 0; i < m->pos.chain; i++) {
        if (m->chain[i] != block) continue;
        uintptr_t end = i == m->pos.chain - 1 ? m->pos.cursor : m->chain_end[i];
        return cursor < data_start(m, block) || cursor > end || !scope_open(&m->scopes, serial);
    }
    return true;
}

/* The scopes after a release to the mark with serial (0: {0}): the marks after it die;
 * kiln pops them off its stack, or, for a mark off its stack, empties it. */
static void close_scopes(model *m, uint32_t serial) {
    scopes *sc = &m->scopes;
    if (serial == 0) {
        sc->count = sc->stacked = 0;
        sc->cleared = sc->floor = sc->taken;
    } else {
        int64_t i = live_index(sc, serial);
        FUZZ_CHECK(i >= 0, "a release to a dead mark %" PRIu32 " went ahead", serial);
        uint32_t above = sc->count - 1 - (uint32_t)i;
        if (above < sc->stacked) {
            sc->stacked -= above;
        } else {
            sc->stacked = 0;
            sc->floor = serial;
        }
        sc->count = (uint32_t)i + 1;
    }
    for (int k = 0; k < MAX_MARKS; k++)
        if (serial == 0 || age(sc, m->marks[k].serial) < age(sc, serial)) m->marks[k].valid = false;
}

static void release_valid(model *m, kiln_mark mark, uint32_t serial, const position *to) {
    kiln_arena_release(m->arena, mark);
    m->pos = *to;
    m->releases++;
    close_scopes(m, serial);
    check_contents(m, true);
}

/* A release to a mark the model knows to be no position of m: when kiln can tell, the
 * call must be logged and change nothing. When it cannot, the call is not made: a
 * forged mark that names a position inside what m's blocks hold now is beyond any
 * check, and so is a mark released past, nested more than KILN_ARENA_MARK_STACK deep,
 * whose position the arena has grown back over (kiln/memory.h: checked by position
 * only). Every other mark released past must be refused, whatever its position. */
static void release_bad(world *w, model *m, kiln_mark mark) {
    if (!detectably_bad(m, mark)) return;
    kiln_arena_release(m->arena, mark);
    fuzz_log_expect(&w->log, "ARENA_BAD_MARK", true, m->name);
}

static void do_release(world *w, model *m, const mark_slot *slot) {
    if (!slot->used) return;
    if (slot->valid) {
        FUZZ_CHECK(!detectably_bad(m, slot->mark), "a valid mark looks bad: {%#" PRIx64
                   ", %#" PRIx64 "}", slot->mark.opaque[0], slot->mark.opaque[1]);
        release_valid(m, slot->mark, slot->serial, &slot->pos);
    } else {
        const scopes *sc = &m->scopes;
        bool judged = age(sc, slot->serial) >= age(sc, sc->cleared) ||
                      age(sc, slot->serial) < age(sc, sc->floor);
        FUZZ_CHECK(!judged || detectably_bad(m, slot->mark),
                   "mark %" PRIu32 " was released past, but looks valid", slot->serial);
        release_bad(w, m, slot->mark);
    }
}

/* Marks no caller should have: random bits, a real mark with one field changed, the
 * empty-arena mark {0} (valid: it releases everything). */
static void do_forged_release(world *w, model *m, fuzz_input *in) {
    const mark_slot *slot = &m->marks[fuzz_byte(in) % MAX_MARKS];
    kiln_mark mark = slot->mark;
    uint32_t serial = slot->serial;
    if (!slot->used && !take_mark(m, &mark, &serial)) return;
    switch (fuzz_byte(in) % 5) {
    case 0: mark.opaque[0] = fuzz_bits(in, 8); mark.opaque[1] = fuzz_bits(in, 8); break;
    case 1: mark.opaque[0] += (uint64_t)(int64_t)(int16_t)fuzz_bits(in, 2); break;
    case 2: mark.opaque[1] += 1 + fuzz_byte(in); break;                      /* large count */
    case 3: mark.opaque[1] += (uint64_t)(1 + fuzz_byte(in)) << 32; break;   /* serial */
    default: mark = (kiln_mark){ { 0, 0 } }; break;
    }
    if (mark.opaque[0] == 0 && mark.opaque[1] == 0) {
        position empty = { .chain = 1, .cursor = data_start(m, m->chain[0]) };
        release_valid(m, mark, 0, &empty);
    } else if (slot->used && slot->valid && memcmp(&mark, &slot->mark, sizeof mark) == 0) {
        release_valid(m, mark, serial, &slot->pos);   /* the change was no change */
    } else {
        release_bad(w, m, mark);
    }
}

static void do_reset(model *m) {
    kiln_arena_reset(m->arena);
    m->resets++;
    start_over(m);
    close_scopes(m, 0);
    m->scopes.reset = m->scopes.taken;
}

/* ---- the program ----------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static world w;
    fuzz_input in = { data, size, 0 };
    w.next_fill = 1;
    w.rt = fuzz_runtime(&w.log, BLOCK_SIZE, fuzz_debug_bits(fuzz_byte(&in)));
    model_init(&w, &w.arenas[0], "fuzzed");
    model_init(&w, &w.arenas[1], "other");

    while (!fuzz_done(&in)) {
        uint8_t op = fuzz_byte(&in);
        model *m = &w.arenas[op >> 7], *other = &w.arenas[!(op >> 7)];
        switch (op % 12) {
        case 0: case 1: case 2: case 3: case 4: {
            size_t bytes = read_size(&in);
            do_alloc(&w, m, bytes, read_align(&in));
            break;
        }
        case 5: case 6: do_mark(m, fuzz_byte(&in) % MAX_MARKS); break;
        case 7: do_release(&w, m, &m->marks[fuzz_byte(&in) % MAX_MARKS]); break;
        case 8: {   /* a mark of the other arena */
            const mark_slot *slot = &other->marks[fuzz_byte(&in) % MAX_MARKS];
            if (slot->used) release_bad(&w, m, slot->mark);
            break;
        }
        case 9: do_forged_release(&w, m, &in); break;
        case 10: do_reset(m); break;
        default: check_contents(m, true); break;
        }
        check_all(&w, false);
    }
    check_all(&w, true);

    kiln_arena_destroy(w.arenas[0].arena);
    kiln_arena_destroy(w.arenas[1].arena);
    kiln_stats stats;
    FUZZ_CHECK(kiln_stats_get(w.rt, &stats), "kiln_stats_get failed");
    FUZZ_CHECK(stats.blocks.blocks_in_use == 0 && stats.blocks.large_mappings == 0,
               "after destroying the arenas: %" PRIu64 " blocks, %" PRIu64 " large mappings",
               stats.blocks.blocks_in_use, stats.blocks.large_mappings);
    kiln_destroy(w.rt);
    fuzz_log_verify(&w.log, NULL);
    return 0;
}
