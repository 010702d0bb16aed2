/* fuzz/fuzz_pool.c — libFuzzer target: three pools of input-chosen sizes, alignments,
 * capacities, flags and magazine sizes, driven through allocs, frees from two contexts,
 * bad frees (double frees and interior pointers where the pool checks them, objects of
 * another pool, heap, stack and arena memory, forged addresses, frees into a destroyed
 * pool), destroys and re-creations, against a model that knows every live object's
 * contents, what the pool's statistics must read and which log items must come.
 *
 * Two contexts on one thread: each is used only by the thread that attached it, which is
 * the contract, and frees through the second one take the paths of a cross-thread free.
 *
 * Input: one byte of debug bits (fuzz_debug_bits), the three pools' descs, then
 * operations: a byte each (its high nibble picks the pool), operands after it. */
#include "fuzz_common.h"

#include <stdalign.h>

#define BLOCK_SIZE  4096u
#define POOLS       3
#define MAX_OBJECTS 256
#define MAX_FREED   64
#define MAX_DEAD    16

typedef struct object {
    uint8_t *p;
    uint8_t  fill;
} object;

typedef struct pool_model {
    kiln_pool *pool;              /* NULL: the slot is empty (a create was refused) */
    char       name[24];
    size_t     size, align, capacity;
    uint32_t   magazine_size;     /* as asked (0: the default) */
    bool       checked, zero;
    object     live[MAX_OBJECTS];
    uint32_t   live_count;
    uint8_t   *freed[MAX_FREED];  /* freed and not handed out again: a double free target */
    uint32_t   freed_count;
    uint32_t   remote_frees;      /* frees through the second context since it last flushed */
    bool       capacity_warned;
    bool       capacity_warned_once;   /* an episode was logged: later ones may be held back */
    uint64_t   allocs, frees, failures, bad_frees, double_frees;
} pool_model;

typedef struct world {
    fuzz_log      log;
    kiln_runtime *rt;
    kiln_ctx     *ctx, *remote;   /* the second context: frees only */
    bool          debug_checks;
    pool_model    pools[POOLS];
    pool_model    dead[MAX_DEAD]; /* destroyed pools: their stats stay readable */
    uint32_t      dead_count;
    uint32_t      created;        /* names pools uniquely */
    uint8_t       next_fill;
    uint8_t      *arena_memory;   /* kiln memory that is no pool object */
    uint8_t      *heap_memory;
} world;

/* ---- checks ---------------------------------------------------------------------- */

static void check_stats(const pool_model *pm, bool alive) {
    kiln_pool_stats s;
    FUZZ_CHECK(kiln_pool_stats_get(pm->pool, &s), "kiln_pool_stats_get failed");
    FUZZ_CHECK(s.alive == alive && s.object_size == pm->size && s.align == pm->align &&
                   s.capacity == pm->capacity && strcmp(s.name, pm->name) == 0,
               "pool %s: alive %d size %zu align %zu capacity %zu name %s", pm->name, s.alive,
               s.object_size, s.align, s.capacity, s.name);
    FUZZ_CHECK(s.allocs == pm->allocs && s.frees == pm->frees && s.failures == pm->failures &&
                   s.bad_frees == pm->bad_frees && s.double_frees == pm->double_frees,
               "pool %s: allocs %" PRIu64 "/%" PRIu64 " frees %" PRIu64 "/%" PRIu64
               " failures %" PRIu64 "/%" PRIu64 " bad %" PRIu64 "/%" PRIu64 " double %" PRIu64
               "/%" PRIu64 " (kiln/model)", pm->name, s.allocs, pm->allocs, s.frees, pm->frees,
               s.failures, pm->failures, s.bad_frees, pm->bad_frees, s.double_frees,
               pm->double_frees);
    if (!alive) return;
    FUZZ_CHECK(s.live == pm->live_count, "pool %s: live %" PRIu64 ", model %u", pm->name, s.live,
               pm->live_count);
    FUZZ_CHECK(s.carved == s.live + s.cached + s.in_depot &&
                   (pm->capacity == 0 || s.carved <= pm->capacity),
               "pool %s: carved %" PRIu64 " != live %" PRIu64 " + cached %" PRIu64
               " + in depot %" PRIu64 " (capacity %zu)", pm->name, s.carved, s.live, s.cached,
               s.in_depot, pm->capacity);
}

static void check_object(const pool_model *pm, const object *o, bool full) {
    size_t bad = fuzz_fill_differs_at(o->p, pm->size, o->fill, full);
    FUZZ_CHECK(bad == pm->size, "pool %s: object %p changed at byte %zu of %zu", pm->name,
               (void *)o->p, bad, pm->size);
}

static void check_all(world *w, bool full) {
    for (int i = 0; i < POOLS; i++) {
        const pool_model *pm = &w->pools[i];
        if (!pm->pool) continue;
        check_stats(pm, true);
        for (uint32_t k = 0; k < pm->live_count; k++) check_object(pm, &pm->live[k], full);
    }
    for (uint32_t i = 0; i < w->dead_count; i++) check_stats(&w->dead[i], false);
    fuzz_log_verify(&w->log, w->rt);
}

/* ---- creating and destroying ----------------------------------------------------- */

/* A desc from the input: mostly good values, sometimes each kind of bad one. */
static kiln_pool_desc read_desc(fuzz_input *in) {
    static const size_t bad_align[] = { 3, 24, 8192 };
    kiln_pool_desc d = { 0 };
    uint8_t v = fuzz_byte(in);
    d.size = v % 8 < 4 ? 1 + fuzz_byte(in) % 64
           : v % 8 < 6 ? 1 + fuzz_below(in, BLOCK_SIZE / 4)
           : v % 8 == 6 ? BLOCK_SIZE / 4
           : (fuzz_byte(in) & 1) * (BLOCK_SIZE / 4 + 1);            /* 0 or too big */
    v = fuzz_byte(in) % 16;
    d.align = v < 5 ? 0 : v < 13 ? (size_t)1 << (v - 5) : v == 13 ? (size_t)256 << fuzz_byte(in) % 5
            : v == 14 ? bad_align[fuzz_byte(in) % 3] : 0;
    v = fuzz_byte(in);
    d.capacity = v % 4 == 0 ? 0 : 1 + fuzz_byte(in) % 40;
    d.flags = fuzz_byte(in) & (KILN_POOL_ZERO | KILN_POOL_CHECKED);
    v = fuzz_byte(in) % 8;
    d.magazine_size = v == 0 ? 0 : v < 7 ? 2 + fuzz_byte(in) % 10 : (fuzz_byte(in) & 1 ? 257 : 1);
    return d;
}

/* Which item kiln_pool_create must refuse d with, or NULL when d is good. */
static const char *desc_problem(const kiln_pool_desc *d) {
    size_t align = d->align ? d->align : alignof(max_align_t);
    if (d->size == 0 || d->size > BLOCK_SIZE / 4) return "POOL_BAD_SIZE";
    if (!fuzz_is_pow2(align) || align > 4096) return "POOL_BAD_ALIGN";
    if (d->magazine_size == 1 || d->magazine_size > 256) return "POOL_BAD_MAGAZINE_SIZE";
    /* A slot aligned to the whole block leaves no room for the block's header: not one
     * object fits (sizes are at most a quarter block, so any smaller alignment fits). */
    if (align == BLOCK_SIZE) return "POOL_BAD_SIZE";
    return NULL;
}

static void create_pool(world *w, pool_model *pm, fuzz_input *in) {
    kiln_pool_desc d = read_desc(in);
    memset(pm, 0, sizeof *pm);
    snprintf(pm->name, sizeof pm->name, "pool-%u", w->created++);
    d.name = pm->name;
    const char *problem = desc_problem(&d);
    pm->pool = kiln_pool_create(w->rt, &d);
    if (problem) {
        FUZZ_CHECK(pm->pool == NULL, "a desc with %s was accepted", problem);
        fuzz_log_expect(&w->log, problem, true, pm->name);
        return;
    }
    FUZZ_CHECK(pm->pool != NULL, "pool %s: create failed: %s", pm->name, w->log.last);
    pm->size = d.size;
    pm->align = d.align ? d.align : alignof(max_align_t);
    pm->capacity = d.capacity;
    pm->magazine_size = d.magazine_size;
    pm->checked = (d.flags & KILN_POOL_CHECKED) || w->debug_checks;
    pm->zero = d.flags & KILN_POOL_ZERO;
}

/* Destroys the pool and keeps its model among the dead (its objects are gone). */
static void destroy_pool(world *w, pool_model *pm) {
    kiln_pool_destroy(pm->pool);
    if (pm->live_count) fuzz_log_expect(&w->log, "POOL_OBJECTS_LIVE", false, pm->name);
    if (w->dead_count < MAX_DEAD) {
        pool_model *dead = &w->dead[w->dead_count++];
        *dead = *pm;
        dead->live_count = dead->freed_count = 0;
    }
    pm->pool = NULL;
}

/* ---- allocs and frees ------------------------------------------------------------ */

static void forget_freed(pool_model *pm, const uint8_t *p) {
    for (uint32_t i = 0; i < pm->freed_count; i++)
        if (pm->freed[i] == p) pm->freed[i] = pm->freed[--pm->freed_count];
}

static void check_no_overlap(const world *w, const uint8_t *p, size_t size) {
    FUZZ_CHECK(!fuzz_overlap(p, size, w->arena_memory, 256), "%p lies in arena memory", (void *)p);
    for (int i = 0; i < POOLS; i++) {
        const pool_model *pm = &w->pools[i];
        if (!pm->pool) continue;
        for (uint32_t k = 0; k < pm->live_count; k++)
            FUZZ_CHECK(!fuzz_overlap(p, size, pm->live[k].p, pm->size),
                       "%p+%zu overlaps live %p of %s", (const void *)p, size,
                       (void *)pm->live[k].p, pm->name);
    }
}

static void do_alloc(world *w, pool_model *pm) {
    if (pm->live_count == MAX_OBJECTS) return;
    uint8_t *p = kiln_pool_alloc(w->ctx, pm->pool);
    bool full = pm->capacity != 0 && pm->live_count == pm->capacity;
    /* The second context's cache may hold free objects the first cannot reach: with
     * them counted the pool may be full too (pool.h: "refused early by at most ..."). */
    uint32_t held = pm->remote_frees;
    uint32_t most_held = 2 * (pm->magazine_size ? pm->magazine_size : 64);
    bool may_be_full = pm->capacity != 0 &&
                       pm->live_count + (held < most_held ? held : most_held) >= pm->capacity;
    if (!p) {
        FUZZ_CHECK(full || may_be_full, "pool %s: alloc failed with %u of %zu live: %s",
                   pm->name, pm->live_count, pm->capacity, w->log.last);
        pm->failures++;
        /* One warning per episode, at most one a second (pool.h): the pool's first is
         * certain, later ones may be held back. */
        if (!pm->capacity_warned && !pm->capacity_warned_once)
            fuzz_log_expect(&w->log, "POOL_CAPACITY_REACHED", false, pm->name);
        else if (!pm->capacity_warned)
            fuzz_log_allow(&w->log, "POOL_CAPACITY_REACHED");
        pm->capacity_warned = pm->capacity_warned_once = true;
        return;
    }
    FUZZ_CHECK(!full, "pool %s: alloc beyond capacity %zu", pm->name, pm->capacity);
    FUZZ_CHECK((uintptr_t)p % pm->align == 0, "pool %s: %p not aligned to %zu", pm->name,
               (void *)p, pm->align);
    if (pm->zero)
        FUZZ_CHECK(fuzz_first_difference(p, pm->size, 0) == pm->size,
                   "pool %s: object %p not zeroed", pm->name, (void *)p);
    check_no_overlap(w, p, pm->size);
    forget_freed(pm, p);
    pm->allocs++;
    pm->capacity_warned = false;
    object *o = &pm->live[pm->live_count++];
    *o = (object){ p, w->next_fill++ };
    memset(p, o->fill, pm->size);
}

static void do_free(world *w, pool_model *pm, uint32_t index, bool remote) {
    if (pm->live_count == 0) return;
    object o = pm->live[index % pm->live_count];
    check_object(pm, &o, true);
    kiln_pool_free(remote ? w->remote : w->ctx, pm->pool, o.p);
    pm->live[index % pm->live_count] = pm->live[--pm->live_count];
    pm->frees++;
    if (remote) pm->remote_frees++;
    if (pm->freed_count == MAX_FREED) pm->freed[0] = pm->freed[--pm->freed_count];
    pm->freed[pm->freed_count++] = o.p;
}

/* A refused free: nothing changes but the counters and the log. */
static void free_refused(world *w, pool_model *pm, void *p, const char *item) {
    kiln_pool_free(w->ctx, pm->pool, p);
    if (strcmp(item, "POOL_DOUBLE_FREE") == 0) pm->double_frees++;
    else pm->bad_frees++;
    fuzz_log_expect(&w->log, item, true, pm->name);
}

/* Pointers that are no object of pm, each of a kind kiln must recognise. */
static void do_foreign_free(world *w, pool_model *pm, fuzz_input *in) {
    uint8_t stack_byte = 0;
    const pool_model *other = &w->pools[fuzz_byte(in) % POOLS];
    void *p;
    switch (fuzz_byte(in) % 6) {
    case 0:   /* another pool's live object */
        if (other == pm || !other->pool || other->live_count == 0) return;
        p = other->live[fuzz_byte(in) % other->live_count].p;
        break;
    case 1: p = w->heap_memory + fuzz_byte(in) % 64; break;
    case 2: p = &stack_byte; break;
    case 3: p = w->arena_memory + fuzz_byte(in) % 256; break;
    case 4:   /* beyond user space, or in the first page: never a kiln block */
        p = (void *)(uintptr_t)(fuzz_byte(in) & 1 ? fuzz_bits(in, 8) | (1ull << 63)
                                                  : 1 + fuzz_below(in, 4095));
        break;
    default:   /* the header of a block pm's objects live in */
        if (pm->live_count == 0) return;
        p = (void *)((uintptr_t)pm->live[fuzz_byte(in) % pm->live_count].p & ~(uintptr_t)(BLOCK_SIZE - 1));
        break;
    }
    free_refused(w, pm, p, "POOL_FOREIGN_POINTER");
}

/* ---- the program ----------------------------------------------------------------- */

static void setup(world *w, fuzz_input *in) {
    uint32_t debug = fuzz_debug_bits(fuzz_byte(in));
    w->debug_checks = debug & KILN_DEBUG_CHECKS;
    w->rt = fuzz_runtime(&w->log, BLOCK_SIZE, debug);
    w->ctx = kiln_attach(w->rt);
    w->remote = kiln_attach(w->rt);
    FUZZ_CHECK(w->ctx && w->remote, "kiln_attach failed: %s", w->log.last);
    w->arena_memory = kiln_frame_alloc(w->ctx, 256, 0);
    w->heap_memory = malloc(64);
    FUZZ_CHECK(w->arena_memory && w->heap_memory, "no memory for the foreign pointers");
    w->dead_count = w->created = 0;
    w->next_fill = 1;
    for (int i = 0; i < POOLS; i++) create_pool(w, &w->pools[i], in);
}

static void teardown(world *w) {
    for (int i = 0; i < POOLS; i++)
        if (w->pools[i].pool) destroy_pool(w, &w->pools[i]);
    kiln_detach(w->remote);
    kiln_detach(w->ctx);
    free(w->heap_memory);
    kiln_destroy(w->rt);
    fuzz_log_verify(&w->log, NULL);
}

static void step(world *w, fuzz_input *in) {
    uint8_t op = fuzz_byte(in);
    pool_model *pm = &w->pools[(op >> 4) % POOLS];
    if (!pm->pool && op % 16 != 12 && op % 16 != 13) return;
    switch (op % 16) {
    case 0: case 1: case 2: case 3: case 4: do_alloc(w, pm); break;
    case 5: case 6: case 7: do_free(w, pm, fuzz_byte(in), false); break;
    case 8: do_free(w, pm, fuzz_byte(in), true); break;
    case 9:   /* a double free: only a checked pool can tell */
        if (pm->checked && pm->freed_count)
            free_refused(w, pm, pm->freed[fuzz_byte(in) % pm->freed_count], "POOL_DOUBLE_FREE");
        break;
    case 10: {   /* a pointer into an object: only a checked pool can tell */
        size_t slot = (pm->size + pm->align - 1) / pm->align * pm->align;
        if (pm->checked && pm->live_count && slot > 1)
            free_refused(w, pm, pm->live[fuzz_byte(in) % pm->live_count].p + 1 + fuzz_below(in, (uint32_t)slot - 1),
                         "POOL_INTERIOR_POINTER");
        break;
    }
    case 11: do_foreign_free(w, pm, in); break;
    case 12:
        if (pm->pool) destroy_pool(w, pm);
        create_pool(w, pm, in);
        break;
    case 13: {   /* a destroyed pool used again: refused, named, counted */
        if (w->dead_count == 0) return;
        pool_model *dead = &w->dead[fuzz_byte(in) % w->dead_count];
        switch (fuzz_byte(in) % 3) {
        case 0: FUZZ_CHECK(kiln_pool_alloc(w->ctx, dead->pool) == NULL, "alloc from %s", dead->name); break;
        case 1: kiln_pool_free(w->ctx, dead->pool, w->heap_memory); dead->bad_frees++; break;
        default: kiln_pool_destroy(dead->pool); break;
        }
        fuzz_log_expect(&w->log, "POOL_DESTROYED", true, dead->name);
        break;
    }
    case 14:   /* the second context flushes its caches to the depots */
        kiln_detach(w->remote);
        w->remote = kiln_attach(w->rt);
        FUZZ_CHECK(w->remote != NULL, "kiln_attach failed: %s", w->log.last);
        for (int i = 0; i < POOLS; i++) w->pools[i].remote_frees = 0;
        break;
    default: check_all(w, true); break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static world w;
    fuzz_input in = { data, size, 0 };
    setup(&w, &in);
    while (!fuzz_done(&in)) {
        step(&w, &in);
        check_all(&w, false);
    }
    check_all(&w, true);
    teardown(&w);
    return 0;
}
