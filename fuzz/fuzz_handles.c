/* fuzz/fuzz_handles.c — libFuzzer target: two handle tables of input-chosen item sizes,
 * alignments, capacities and generation limits, driven through allocs, gets and frees of
 * live, stale, forged and foreign handles, frame ends, destroys and re-creations, against
 * a model that knows every live handle and its item, which freed slots may not be reused
 * yet (the frame has not ended: their items must keep their contents), which slots are
 * retired, when the table is full, and what each refused call must log and count.
 *
 * One context, the frame clock's driver: with no thread outside the clock, a slot freed
 * in a frame is reusable exactly from the next kiln_frame_end on, so "full" is exact.
 *
 * Input: the two tables' descs (each with a byte for the generation limit), then
 * operations: a byte each (its high nibble picks the table), operands after it. */
#include "fuzz_common.h"

#include <stdalign.h>

#include "runtime/handles.h"   /* the generation limit, to reach retirement quickly */

#define TABLES      2
#define MAX_LIVE    256
#define MAX_PENDING 1024
#define MAX_STALE   64
#define MAX_DEAD    8
#define MAX_INDEX   8192   /* generations are followed for slots below this index */
#define TAG_MASK    ((uint64_t)0xff << KILN_HANDLE_TAG_SHIFT)

typedef struct item {
    kiln_handle h;
    uint8_t    *p;
    uint8_t     fill;
} item;

typedef struct table_model {
    kiln_handles *table;          /* NULL: the slot is empty (a create was refused) */
    char          name[24];
    size_t        item_size, align;
    uint32_t      capacity;       /* the effective one (0 asks for the default) */
    uint32_t      capacity_asked;
    uint32_t      gen_max;        /* the generation limit: a free past it retires the slot */
    uint64_t      tag;            /* the table tag's bits, learnt from the first handle */
    item          live[MAX_LIVE];
    uint32_t      live_count;
    item          pending[MAX_PENDING];   /* freed this frame: not reusable, contents kept */
    uint32_t      pending_count;
    kiln_handle   stale[MAX_STALE];
    uint32_t      stale_count;
    uint32_t      retired;
    bool          full_warned;
    uint64_t      allocs, frees, failures, stale_lookups, double_frees, foreign;
    uint32_t      last_gen[MAX_INDEX];    /* the newest generation handed out per slot */
} table_model;

typedef struct world {
    fuzz_log      log;
    kiln_runtime *rt;
    kiln_ctx     *ctx;
    table_model   tables[TABLES];
    table_model   dead[MAX_DEAD];
    uint32_t      dead_count;
    uint32_t      created;
    uint8_t       next_fill;
} world;

/* ---- checks ---------------------------------------------------------------------- */

static void check_stats(const table_model *tm, bool alive) {
    kiln_handles_stats s;
    FUZZ_CHECK(kiln_handles_stats_get(tm->table, &s), "kiln_handles_stats_get failed");
    FUZZ_CHECK(strcmp(s.name, tm->name) == 0 && s.item_size == tm->item_size,
               "table %s: name %s, item_size %" PRIu64, tm->name, s.name, s.item_size);
    FUZZ_CHECK(s.allocs == tm->allocs && s.frees == tm->frees && s.failures == tm->failures &&
                   s.stale_lookups == tm->stale_lookups && s.double_frees == tm->double_frees &&
                   s.foreign_handles == tm->foreign && s.retired_slots == tm->retired,
               "table %s: allocs %" PRIu64 "/%" PRIu64 " frees %" PRIu64 "/%" PRIu64
               " failures %" PRIu64 "/%" PRIu64 " stale %" PRIu64 "/%" PRIu64 " double %" PRIu64
               "/%" PRIu64 " foreign %" PRIu64 "/%" PRIu64 " retired %" PRIu64 "/%u (kiln/model)",
               tm->name, s.allocs, tm->allocs, s.frees, tm->frees, s.failures, tm->failures,
               s.stale_lookups, tm->stale_lookups, s.double_frees, tm->double_frees,
               s.foreign_handles, tm->foreign, s.retired_slots, tm->retired);
    if (!alive) return;
    FUZZ_CHECK(s.live == tm->live_count && s.capacity == tm->capacity,
               "table %s: live %" PRIu64 "/%u capacity %" PRIu64 "/%u", tm->name, s.live,
               tm->live_count, s.capacity, tm->capacity);
    /* pending_reuse also counts slots that became reusable but were not taken yet. */
    FUZZ_CHECK(s.pending_reuse >= tm->pending_count &&
                   s.pending_reuse + s.live + s.retired_slots <= tm->capacity,
               "table %s: pending_reuse %" PRIu64 ", model pending %u", tm->name,
               s.pending_reuse, tm->pending_count);
}

static void check_item(const table_model *tm, const item *it, bool full) {
    size_t bad = fuzz_fill_differs_at(it->p, tm->item_size, it->fill, full);
    FUZZ_CHECK(bad == tm->item_size, "table %s: item %p of handle %#" PRIx64 " changed at byte %zu",
               tm->name, (void *)it->p, it->h.bits, bad);
}

static void check_all(world *w, bool full) {
    for (int t = 0; t < TABLES; t++) {
        const table_model *tm = &w->tables[t];
        if (!tm->table) continue;
        check_stats(tm, true);
        for (uint32_t i = 0; i < tm->live_count; i++) check_item(tm, &tm->live[i], full);
        for (uint32_t i = 0; i < tm->pending_count; i++) check_item(tm, &tm->pending[i], full);
    }
    for (uint32_t i = 0; i < w->dead_count; i++) check_stats(&w->dead[i], false);
    fuzz_log_verify(&w->log, w->rt);
}

/* ---- create and destroy ---------------------------------------------------------- */

static kiln_handles_desc read_desc(fuzz_input *in) {
    static const size_t bad_align[] = { 3, 48, 8192 };
    kiln_handles_desc d = { 0 };
    uint8_t v = fuzz_byte(in) % 8;
    d.item_size = v < 5 ? 1 + fuzz_byte(in) % 128
                : v < 7 ? 1 + fuzz_below(in, 4096)
                : fuzz_byte(in) & 1 ? ((size_t)1 << 20) + 1 : 0;
    v = fuzz_byte(in) % 16;
    /* 1, 2, 8, 16, 64, 128, 512, 1024, 4096 */
    d.item_align = v < 6 ? 0 : v < 15 ? (size_t)1 << ((v - 6) * 3 / 2) : bad_align[fuzz_byte(in) % 3];
    v = fuzz_byte(in) % 16;
    d.capacity = v < 13 ? 1 + fuzz_byte(in) % 300 : v < 15 ? 0 : KILN_HANDLES_MAX_CAPACITY + 1;
    return d;
}

/* The item kiln_handles_create must refuse d with (the first fault), or NULL. */
static const char *desc_problem(const kiln_handles_desc *d) {
    if (d->item_size == 0 || d->item_size > ((size_t)1 << 20)) return "HANDLES_BAD_ITEM_SIZE";
    if (d->item_align && (!fuzz_is_pow2(d->item_align) || d->item_align > 4096))
        return "HANDLES_BAD_ALIGN";
    if (d->capacity > KILN_HANDLES_MAX_CAPACITY) return "HANDLES_BAD_CAPACITY";
    return NULL;
}

static void create_table(world *w, table_model *tm, fuzz_input *in) {
    kiln_handles_desc d = read_desc(in);
    uint8_t limit = fuzz_byte(in);
    memset(tm, 0, sizeof *tm);
    snprintf(tm->name, sizeof tm->name, "table-%u", w->created++);
    d.name = tm->name;
    const char *problem = desc_problem(&d);
    tm->table = kiln_handles_create(w->rt, &d);
    if (problem) {
        FUZZ_CHECK(tm->table == NULL, "a desc with %s was accepted", problem);
        fuzz_log_expect(&w->log, problem, true, tm->name);
        return;
    }
    FUZZ_CHECK(tm->table != NULL, "table %s: create failed: %s", tm->name, w->log.last);
    tm->item_size = d.item_size;
    tm->align = d.item_align ? d.item_align : alignof(max_align_t);
    tm->capacity_asked = d.capacity;
    tm->capacity = d.capacity ? d.capacity : 65536;
    /* A quarter of the tables retire their slots after a few lives. */
    tm->gen_max = UINT32_MAX;
    if (limit % 4 == 0) {
        tm->gen_max = (1u + limit % 16) | 1u;
        kiln_handles_set_generation_limit(tm->table, tm->gen_max);
    }
}

static void destroy_table(world *w, table_model *tm) {
    kiln_handles_destroy(tm->table);
    if (tm->live_count) fuzz_log_expect(&w->log, "HANDLES_ITEMS_LIVE", false, tm->name);
    if (w->dead_count < MAX_DEAD) w->dead[w->dead_count++] = *tm;
    tm->table = NULL;
}

/* ---- handles --------------------------------------------------------------------- */

static void check_no_overlap(const world *w, const uint8_t *p, size_t size) {
    for (int t = 0; t < TABLES; t++) {
        const table_model *tm = &w->tables[t];
        if (!tm->table) continue;
        for (uint32_t i = 0; i < tm->live_count; i++)
            FUZZ_CHECK(!fuzz_overlap(p, size, tm->live[i].p, tm->item_size),
                       "new item %p overlaps a live one of %s", (const void *)p, tm->name);
        for (uint32_t i = 0; i < tm->pending_count; i++)
            FUZZ_CHECK(!fuzz_overlap(p, size, tm->pending[i].p, tm->item_size),
                       "new item %p reuses one freed in this frame (%s)", (const void *)p,
                       tm->name);
    }
}

static void do_alloc(world *w, table_model *tm) {
    if (tm->live_count == MAX_LIVE) return;
    void *p = NULL;
    kiln_handle h = kiln_handle_alloc(w->ctx, tm->table, &p);
    bool full = tm->live_count + tm->pending_count + tm->retired == tm->capacity;
    if (h.bits == 0) {
        FUZZ_CHECK(full && p == NULL, "table %s: alloc refused with %u live, %u pending, %u "
                   "retired of %u: %s", tm->name, tm->live_count, tm->pending_count,
                   tm->retired, tm->capacity, w->log.last);
        tm->failures++;
        if (!tm->full_warned) fuzz_log_expect(&w->log, "HANDLES_FULL", false, tm->name);
        tm->full_warned = true;
        return;
    }
    FUZZ_CHECK(!full, "table %s: alloc beyond %u live + %u pending + %u retired", tm->name,
               tm->live_count, tm->pending_count, tm->retired);
    uint32_t index = kiln_handle_index(h), gen = kiln_handle_generation(h);
    if (tm->allocs == 0 && tm->frees == 0) tm->tag = h.bits & TAG_MASK;
    FUZZ_CHECK((h.bits & TAG_MASK) == tm->tag && index < tm->capacity && (gen & 1) &&
                   p != NULL && (uintptr_t)p % tm->align == 0,
               "table %s: handle %#" PRIx64 " (tag %#" PRIx64 "), item %p", tm->name, h.bits,
               tm->tag, p);
    /* Fresh slots are handed out in order, so an input (at most a few thousand calls)
     * never reaches MAX_INDEX unless a slot came from nowhere. */
    FUZZ_CHECK(index < MAX_INDEX, "table %s: slot %u after %" PRIu64 " allocs", tm->name, index,
               tm->allocs);
    FUZZ_CHECK(gen == (tm->last_gen[index] ? tm->last_gen[index] + 2 : 1) && gen <= tm->gen_max,
               "table %s: slot %u generation %u after %u (limit %u)", tm->name, index, gen,
               tm->last_gen[index], tm->gen_max);
    tm->last_gen[index] = gen;
    FUZZ_CHECK(fuzz_first_difference(p, tm->item_size, 0) == tm->item_size,
               "table %s: item %p not zeroed", tm->name, p);
    FUZZ_CHECK(kiln_handle_get(tm->table, h) == p, "table %s: get of a new handle", tm->name);
    check_no_overlap(w, p, tm->item_size);
    tm->allocs++;
    tm->full_warned = false;
    item *it = &tm->live[tm->live_count++];
    *it = (item){ h, p, w->next_fill++ };
    memset(p, it->fill, tm->item_size);
}

static void remember_stale(table_model *tm, kiln_handle h) {
    if (tm->stale_count == MAX_STALE) tm->stale[0] = tm->stale[--tm->stale_count];
    tm->stale[tm->stale_count++] = h;
}

/* Frees live[index]: its handle is stale at once; its slot waits for the frame end, or
 * is retired for good when its generation has run out. */
static void free_live(world *w, table_model *tm, uint32_t index) {
    if (tm->pending_count == MAX_PENDING) return;   /* the model could not follow it */
    item it = tm->live[index];
    check_item(tm, &it, true);
    FUZZ_CHECK(kiln_handle_free(w->ctx, tm->table, it.h), "table %s: free of live %#" PRIx64
               " refused: %s", tm->name, it.h.bits, w->log.last);
    tm->live[index] = tm->live[--tm->live_count];
    tm->frees++;
    remember_stale(tm, it.h);
    if ((uint64_t)kiln_handle_generation(it.h) + 2 > tm->gen_max) tm->retired++;
    else tm->pending[tm->pending_count++] = it;
    FUZZ_CHECK(kiln_handle_get(tm->table, it.h) == NULL, "table %s: get of a freed handle",
               tm->name);
    tm->stale_lookups++;
}

static int live_index(const table_model *tm, kiln_handle h) {
    for (uint32_t i = 0; i < tm->live_count; i++)
        if (tm->live[i].h.bits == h.bits) return (int)i;
    return -1;
}

/* The generation slot index holds now: 0 never used, odd live, even freed. */
static uint32_t slot_generation(const table_model *tm, uint32_t index) {
    uint32_t last = index < MAX_INDEX ? tm->last_gen[index] : 0;
    if (last == 0) return 0;
    for (uint32_t i = 0; i < tm->live_count; i++)
        if (kiln_handle_index(tm->live[i].h) == index) return last;
    return last + 1;
}

/* A handle the model does not hold live: get must miss and free must be refused, with
 * the counter and the log item kiln's checks pick. A get of a handle with this table's
 * tag, an index in range and an odd generation (or of zero) is a stale lookup, any other
 * a foreign one. A free of such a handle is a double free when the slot has moved past
 * its generation, and foreign when the slot never reached it (forged, however far
 * ahead); every other
 * handle's free, the zero handle's included, is foreign. A bit pattern that happens to
 * be a live handle is one: then it is used as such. */
static void use_handle(world *w, table_model *tm, kiln_handle h, bool free_it) {
    int live = live_index(tm, h);
    if (live >= 0) {
        if (free_it) free_live(w, tm, (uint32_t)live);
        else FUZZ_CHECK(kiln_handle_get(tm->table, h) == tm->live[live].p, "get of live %#" PRIx64, h.bits);
        return;
    }
    uint32_t index = kiln_handle_index(h), gen = kiln_handle_generation(h);
    bool shaped = (h.bits & TAG_MASK & 0xffffffffu) == tm->tag && index < tm->capacity && (gen & 1);
    if (!free_it) {
        FUZZ_CHECK(kiln_handle_get(tm->table, h) == NULL, "table %s: get of %#" PRIx64
                   " found an item", tm->name, h.bits);
        if (h.bits == 0 || shaped) tm->stale_lookups++;
        else tm->foreign++;
        return;
    }
    FUZZ_CHECK(!kiln_handle_free(w->ctx, tm->table, h), "table %s: free of %#" PRIx64
               " accepted", tm->name, h.bits);
    /* Generations never wrap (a slot retires at its limit): a plain compare, as kiln's.
     * A forged generation more than 2^31 past the slot's is still one it never reached
     * (the table's tag is process-wide, so random bits carry it in some runs only). */
    if (shaped && slot_generation(tm, index) > gen) {
        tm->double_frees++;
        fuzz_log_expect(&w->log, "HANDLE_DOUBLE_FREE", true, tm->name);
    } else {
        tm->foreign++;
        fuzz_log_expect(&w->log, h.bits ? "HANDLE_FOREIGN" : "HANDLE_NULL", true, tm->name);
    }
}

/* Handles no caller should have: random bits, a live one with a field changed, zero,
 * one of the other table or of a destroyed one. */
static kiln_handle forge(const world *w, const table_model *tm, fuzz_input *in) {
    kiln_handle h = tm->live_count ? tm->live[fuzz_byte(in) % tm->live_count].h : (kiln_handle){ 0 };
    const table_model *other = &w->tables[fuzz_byte(in) % TABLES];
    switch (fuzz_byte(in) % 6) {
    /* Random bits, their tag byte taken relative to the table's: which runs carry the
     * table's own tag then depends on the input alone, not on how many tables the
     * process made before (tags are process-wide), so a crash input reproduces. */
    case 0: return (kiln_handle){ fuzz_bits(in, 8) ^ tm->tag };
    case 1: h.bits ^= (uint64_t)1 << fuzz_below(in, 64); return h;
    case 2: h.bits += (uint64_t)2 << 32; return h;    /* a generation still to come */
    case 3: return (kiln_handle){ 0 };
    case 4:
        if (other->table && other->live_count) return other->live[fuzz_byte(in) % other->live_count].h;
        return h;
    default:
        if (w->dead_count && w->dead[fuzz_byte(in) % w->dead_count].stale_count)
            return w->dead[fuzz_byte(in) % w->dead_count].stale[0];
        return h;
    }
}

/* The frame ends: every slot freed in it becomes reusable (its item may change now). */
static void frame_end(world *w) {
    kiln_frame_end(w->ctx);
    kiln_frame_begin(w->ctx);
    for (int t = 0; t < TABLES; t++) w->tables[t].pending_count = 0;
}

/* ---- the program ----------------------------------------------------------------- */

static void use_dead(world *w, fuzz_input *in) {
    if (w->dead_count == 0) return;
    table_model *dead = &w->dead[fuzz_byte(in) % w->dead_count];
    kiln_handle h = dead->stale_count ? dead->stale[0] : (kiln_handle){ 1 };
    switch (fuzz_byte(in) % 4) {
    case 0: FUZZ_CHECK(kiln_handle_get(dead->table, h) == NULL, "get from %s", dead->name); break;
    case 1: FUZZ_CHECK(kiln_handle_alloc(w->ctx, dead->table, NULL).bits == 0, "alloc from %s", dead->name); break;
    case 2: FUZZ_CHECK(!kiln_handle_free(w->ctx, dead->table, h), "free into %s", dead->name); break;
    default: kiln_handles_destroy(dead->table); break;
    }
    fuzz_log_expect(&w->log, "HANDLES_DESTROYED", true, dead->name);
}

static void step(world *w, fuzz_input *in) {
    uint8_t op = fuzz_byte(in);
    table_model *tm = &w->tables[(op >> 4) % TABLES];
    if (!tm->table && op % 16 < 10) return;
    switch (op % 16) {
    case 0: case 1: case 2: case 3: do_alloc(w, tm); break;
    case 4: case 5:
        if (tm->live_count) free_live(w, tm, fuzz_byte(in) % tm->live_count);
        break;
    case 6:
        if (tm->live_count) use_handle(w, tm, tm->live[fuzz_byte(in) % tm->live_count].h, false);
        break;
    case 7:
        if (tm->stale_count) use_handle(w, tm, tm->stale[fuzz_byte(in) % tm->stale_count], fuzz_byte(in) & 1);
        break;
    case 8: case 9:
        if (tm->allocs) use_handle(w, tm, forge(w, tm, in), fuzz_byte(in) & 1);
        break;
    case 10: case 11: frame_end(w); break;
    case 12:
        if (tm->table) destroy_table(w, tm);
        create_table(w, tm, in);
        break;
    case 13: use_dead(w, in); break;
    case 14: kiln_handles_quiescent(w->ctx); break;   /* the driver's: changes nothing */
    default: check_all(w, true); break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static world w;
    fuzz_input in = { data, size, 0 };
    w.rt = fuzz_runtime(&w.log, 0, 0);
    w.ctx = kiln_attach(w.rt);
    FUZZ_CHECK(w.ctx != NULL, "kiln_attach failed: %s", w.log.last);
    kiln_frame_begin(w.ctx);
    w.dead_count = w.created = 0;
    w.next_fill = 1;
    for (int t = 0; t < TABLES; t++) create_table(&w, &w.tables[t], &in);
    while (!fuzz_done(&in)) {
        step(&w, &in);
        check_all(&w, false);
    }
    check_all(&w, true);
    for (int t = 0; t < TABLES; t++)
        if (w.tables[t].table) destroy_table(&w, &w.tables[t]);
    kiln_frame_end(w.ctx);
    kiln_detach(w.ctx);
    kiln_destroy(w.rt);
    fuzz_log_verify(&w.log, NULL);
    return 0;
}
