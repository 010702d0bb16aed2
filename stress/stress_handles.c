/* stress/stress_handles.c — generational handle tables on a real runtime under load,
 * tied to the frame clock and to the reuse rule of kiln/handles.h. Shared arrays of
 * handle bits (one per table) are rewritten at random while other threads look the
 * handles up:
 *   - the main thread drives frames every few milliseconds; in each it submits jobs to
 *     the workers that look up random entries, replace entries (free the handle, then
 *     allocate a new one into the same entry), free handles that another thread already
 *     freed (must return false), and look up handles of the other table and forged ones;
 *     then phase-two jobs re-check the pointers phase one kept (valid until the frame
 *     ends, whoever freed them meanwhile), and the main thread re-checks its own;
 *   - a render thread, attached and outside the frame clock, looks handles up and keeps
 *     the pointers across a sleep (so across frame ends) until its next quiescent point:
 *     kiln_handles_quiescent, or the reset of its own frame arena; it replaces entries
 *     too, and reads the tables' figures (single counters never go down);
 *   - the live-item walks run beside all of it: the render thread walks a table every
 *     turn (kiln_handles_foreach), the driver every eighth frame walks the big one over
 *     the workers (kiln_handles_parallel_for) while phase one's jobs run;
 *   - a churn thread attaches and detaches over and over (kiln_detach is its quiescent
 *     point), keeping pointers across sleeps in between, and now and then makes a
 *     transient table of its own, fills it, destroys it and is refused on it afterwards.
 * One table is big (64-byte items aligned to 64) and never full; the other has a tiny
 * capacity and more entries than slots, so allocations fail concurrently.
 *
 * Every item holds its own handle's bits (the canary) and words derived from them; a
 * lookup that returns an item must return the one of the handle asked for, and a kept
 * pointer must still show it at every re-check (freed items keep their last contents
 * until reuse). A new item must be zeroed, its handle of the right table and shape.
 * At the end, with the helpers gone: per table live == the handles left in the array ==
 * allocs - frees, and every figure (allocs, frees, failures, double frees) equals what the
 * threads counted, stale and foreign lookups included; after everything is freed and two
 * frames have ended, nothing waits for reuse and every slot can be had again.
 *
 * The handle bits in the arrays are published with release and read with acquire: the
 * canary is written after kiln_handle_alloc returns, so the table itself cannot order
 * it before another thread's lookup; the array store is what publishes the item (as a
 * game would publish a new entity's handle).
 *
 * Usage: stress-handles [--threads N] [--iterations N] [--seed S]; --threads is the
 * worker count, --iterations the number of frames. Exit status 0 when every check held. */
#include "stress_common.h"   /* first: it sets the feature macros */

#include <kiln/kiln.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>

enum {
    NTABLES        = 2,
    BIG            = 0,
    SMALL          = 1,
    MAX_WORDS      = 8,           /* words of an item of the big table */
    FREED_RING     = 64,          /* handles known freed, per table */
    JOBS_PER_WORKER = 2,          /* phase-one jobs per frame, per worker */
    OPS_PER_JOB    = 48,
    CHECK_CHUNK    = 4,           /* phase-one records a phase-two job re-checks */
    HOLD_MAX       = 16,          /* pointers one job (or the main thread) keeps */
    RENDER_HOLD    = 32,          /* pointers the render thread keeps to its quiescent point */
    FRAME_PAUSE_US = 1500,        /* at most this long between frames */
    STATS_CAP      = 8,
};

/* ---- the tables ------------------------------------------------------------------ */

typedef struct table_spec {
    const char *name;
    size_t      item_size, item_align;
    uint32_t    capacity;
    uint32_t    entries;      /* of the shared array; above the capacity: the table fills */
} table_spec;

static const table_spec specs[NTABLES] = {
    { "big", MAX_WORDS * 8, 64, 16384, 2048 },
    { "small", 16, 8, 100, 160 },   /* a few contexts' caches (32 slots each) hold it all */
};

typedef enum count_id {
    C_ALLOC,          /* kiln_handle_alloc returned a handle */
    C_FAIL,           /* ... returned {0}: the table was full */
    C_FREE,           /* kiln_handle_free returned true */
    C_DOUBLE,         /* a free of a handle known freed, refused */
    C_RACED,          /* a free that lost to another thread's free of the same handle */
    C_GET,            /* a lookup that returned the item */
    C_STALE,          /* a lookup of a freed or zero handle: NULL */
    C_FOREIGN,        /* a lookup or free of another table's handle, or a forged one */
    C_RECHECK,        /* a kept pointer checked again */
    C_MISMATCH,       /* an item that did not belong to its handle */
    NCOUNTS
} count_id;

static const char *const count_names[NCOUNTS] = {
    "allocs", "alloc failures", "frees", "double frees", "raced frees", "lookups", "stale",
    "foreign", "re-checks", "mismatches",
};

typedef struct table_state {
    kiln_handles     *table;
    const table_spec *spec;
    unsigned          words;              /* item_size / 8 */
    _Atomic uint64_t *entries;            /* handle bits, 0: empty; release / acquire */
    _Atomic uint64_t  freed[FREED_RING];  /* handles some thread freed (relaxed) */
    uint64_t          tag_bits;           /* bits 24-31 of every handle of this table */
} table_state;

/* Shared; written by main before the other threads start. */
static stress_options   opt;
static kiln_runtime    *g_rt;
static table_state      g_tables[NTABLES];
static _Atomic int      g_stop;
static _Atomic uint64_t g_counts[NTABLES][NCOUNTS];   /* relaxed tallies */

/* ---- items ----------------------------------------------------------------------- */

static uint64_t item_word(uint64_t bits, unsigned i) {
    return i == 0 ? bits : stress_mix(bits + 0x9e3779b97f4a7c15ull * i);
}

/* A pointer from kiln_handle_get that its thread keeps, and the handle it came from. */
typedef struct kept { const uint64_t *p; uint64_t bits; unsigned table; } kept;

/* One thread in one job or turn: its context and random numbers, what it counted (added
 * to g_counts at its boundary) and the pointers it may keep until then. */
typedef struct actor {
    kiln_ctx  *ctx;
    stress_rng rng;
    uint64_t   n[NTABLES][NCOUNTS];
    kept      *hold;        /* pointers kept until the actor's boundary */
    unsigned   held, hold_cap;
    const char *who;
} actor;

static void actor_flush(actor *a) {
    for (unsigned t = 0; t < NTABLES; t++)
        for (unsigned c = 0; c < NCOUNTS; c++) {
            if (a->n[t][c]) atomic_fetch_add_explicit(&g_counts[t][c], a->n[t][c],
                                                      memory_order_relaxed);
            a->n[t][c] = 0;
        }
}

/* Whether the item at p is the one of handle bits; counts and reports a mismatch. */
static bool item_ok(actor *a, unsigned t, const uint64_t *p, uint64_t bits, const char *when) {
    for (unsigned i = 0; i < g_tables[t].words; i++) {
        if (p[i] != item_word(bits, i)) {
            a->n[t][C_MISMATCH]++;
            stress_fail("%s, table %s, %s: item %p of handle %016" PRIx64 " (index %u): word %u "
                        "is %016" PRIx64 ", expected %016" PRIx64, a->who, specs[t].name, when,
                        (const void *)p, bits, kiln_handle_index((kiln_handle){ bits }), i, p[i],
                        item_word(bits, i));
            return false;
        }
    }
    return true;
}

static void recheck(actor *a, const kept *k, unsigned count, const char *when) {
    for (unsigned i = 0; i < count; i++) {
        a->n[k[i].table][C_RECHECK]++;
        item_ok(a, k[i].table, k[i].p, k[i].bits, when);
    }
}

/* Keeps p until the actor's boundary; when full, replaces one at random (after a
 * last check of it). */
static void keep(actor *a, unsigned t, const uint64_t *p, uint64_t bits) {
    if (a->held < a->hold_cap) {
        a->hold[a->held++] = (kept){ p, bits, t };
        return;
    }
    unsigned i = (unsigned)stress_below(&a->rng, a->hold_cap);
    recheck(a, &a->hold[i], 1, "re-check of a kept pointer");
    a->hold[i] = (kept){ p, bits, t };
}

/* ---- operations: any thread with a context --------------------------------------- */

/* A new item, checked and filled; 0 when the table is full. */
static uint64_t alloc_filled(actor *a, unsigned t) {
    table_state *ts = &g_tables[t];
    void *raw = (void *)1;
    kiln_handle h = kiln_handle_alloc(a->ctx, ts->table, &raw);
    if (kiln_handle_is_null(h)) {
        STRESS_CHECK(raw == NULL, "%s: a failed alloc in table %s gave item %p", a->who,
                     specs[t].name, raw);
        a->n[t][C_FAIL]++;
        return 0;
    }
    a->n[t][C_ALLOC]++;
    uint64_t *p = raw;
    STRESS_CHECK(p != NULL && ((uintptr_t)p & (specs[t].item_align - 1)) == 0,
                 "%s: table %s: item %p for handle %016" PRIx64, a->who, specs[t].name,
                 (void *)p, h.bits);
    STRESS_CHECK(kiln_handle_index(h) < specs[t].capacity && (kiln_handle_generation(h) & 1) &&
                 (h.bits & 0xff000000u) == ts->tag_bits,
                 "%s: table %s: handle %016" PRIx64 " (index %u, generation %u) out of shape",
                 a->who, specs[t].name, h.bits, kiln_handle_index(h),
                 kiln_handle_generation(h));
    if (!p) return 0;   /* reported; the handle leaks into the final figures */
    for (unsigned i = 0; i < ts->words; i++) {
        if (p[i] != 0) {
            a->n[t][C_MISMATCH]++;
            stress_fail("%s: table %s: new item %p of handle %016" PRIx64 " not zeroed (word %u "
                        "is %016" PRIx64 ")", a->who, specs[t].name, (void *)p, h.bits, i, p[i]);
            break;
        }
    }
    for (unsigned i = 0; i < ts->words; i++) p[i] = item_word(h.bits, i);
    return h.bits;
}

/* Looks up a random entry; an item found must be its handle's, and is kept. */
static void op_get(actor *a, unsigned t) {
    table_state *ts = &g_tables[t];
    uint64_t bits = atomic_load_explicit(&ts->entries[stress_below(&a->rng, ts->spec->entries)],
                                         memory_order_acquire);
    if (!bits) return;
    const uint64_t *p = kiln_handle_get(ts->table, (kiln_handle){ bits });
    if (!p) {   /* freed since the load */
        a->n[t][C_STALE]++;
        return;
    }
    a->n[t][C_GET]++;
    if (item_ok(a, t, p, bits, "lookup")) keep(a, t, p, bits);
}

/* Frees a random entry's handle and allocates a new one into the entry (an empty entry
 * gets one). Of two threads that free the same handle, exactly one wins and rewrites
 * the entry; the other's free is refused. */
static void op_replace(actor *a, unsigned t) {
    table_state *ts = &g_tables[t];
    _Atomic uint64_t *entry = &ts->entries[stress_below(&a->rng, ts->spec->entries)];
    uint64_t bits = atomic_load_explicit(entry, memory_order_acquire);
    if (bits == 0) {
        uint64_t fresh = alloc_filled(a, t);
        uint64_t empty = 0;
        if (fresh && !atomic_compare_exchange_strong_explicit(entry, &empty, fresh,
                                                              memory_order_release,
                                                              memory_order_relaxed)) {
            bool freed = kiln_handle_free(a->ctx, ts->table, (kiln_handle){ fresh });
            STRESS_CHECK(freed, "%s: table %s: the free of its own new handle %016" PRIx64
                         " was refused", a->who, specs[t].name, fresh);
            a->n[t][freed ? C_FREE : C_MISMATCH]++;
        }
        return;
    }
    if (!kiln_handle_free(a->ctx, ts->table, (kiln_handle){ bits })) {
        a->n[t][C_RACED]++;
        return;
    }
    a->n[t][C_FREE]++;
    atomic_store_explicit(&ts->freed[stress_below(&a->rng, FREED_RING)], bits,
                          memory_order_relaxed);
    uint64_t fresh = alloc_filled(a, t);
    uint64_t expected = bits;
    bool swapped = atomic_compare_exchange_strong_explicit(entry, &expected, fresh,
                                                           memory_order_release,
                                                           memory_order_relaxed);
    STRESS_CHECK(swapped, "%s: table %s: entry of handle %016" PRIx64 " rewritten to %016" PRIx64
                 " by another thread after this thread's free succeeded", a->who,
                 specs[t].name, bits, expected);
}

/* A handle some thread freed: the lookup finds nothing, the free is refused. */
static void op_double_free(actor *a, unsigned t) {
    table_state *ts = &g_tables[t];
    uint64_t bits = atomic_load_explicit(&ts->freed[stress_below(&a->rng, FREED_RING)],
                                         memory_order_relaxed);
    if (!bits) return;
    const void *p = kiln_handle_get(ts->table, (kiln_handle){ bits });
    STRESS_CHECK(p == NULL, "%s: table %s: freed handle %016" PRIx64 " resolved to %p", a->who,
                 specs[t].name, bits, p);
    a->n[t][p ? C_MISMATCH : C_STALE]++;
    bool freed = kiln_handle_free(a->ctx, ts->table, (kiln_handle){ bits });
    STRESS_CHECK(!freed, "%s: table %s: a second free of handle %016" PRIx64 " succeeded",
                 a->who, specs[t].name, bits);
    a->n[t][freed ? C_MISMATCH : C_DOUBLE]++;
}

/* Handles this table must refuse: one of the other table (another tag), a forged one
 * (this table's tag, an index past the capacity), and the zero handle (a stale lookup).
 * Frees are logged by kiln: only one probe in four frees. */
static void op_foreign(actor *a, unsigned t) {
    table_state *ts = &g_tables[t], *other = &g_tables[1 - t];
    uint64_t theirs = atomic_load_explicit(&other->entries[0], memory_order_acquire);
    uint64_t forged = ((uint64_t)(2 * stress_below(&a->rng, 1u << 30) + 1) << 32) |
                      ts->tag_bits |
                      (specs[t].capacity + stress_below(&a->rng, 0xffffffu - specs[t].capacity));
    bool do_free = stress_below(&a->rng, 4) == 0;
    for (int k = 0; k < 2; k++) {
        uint64_t bits = k == 0 ? theirs : forged;
        if (!bits) continue;
        const void *p = kiln_handle_get(ts->table, (kiln_handle){ bits });
        STRESS_CHECK(p == NULL, "%s: table %s resolved a %s handle %016" PRIx64, a->who,
                     specs[t].name, k == 0 ? "foreign" : "forged", bits);
        a->n[t][p ? C_MISMATCH : C_FOREIGN]++;
        if (do_free) {
            bool freed = kiln_handle_free(a->ctx, ts->table, (kiln_handle){ bits });
            STRESS_CHECK(!freed, "%s: table %s freed a %s handle %016" PRIx64, a->who,
                         specs[t].name, k == 0 ? "foreign" : "forged", bits);
            a->n[t][freed ? C_MISMATCH : C_FOREIGN]++;
        }
    }
    STRESS_CHECK(kiln_handle_get(ts->table, (kiln_handle){ 0 }) == NULL,
                 "%s: table %s resolved the zero handle", a->who, specs[t].name);
    a->n[t][C_STALE]++;
}

/* One random operation on a random table (the small one a third of the time). */
static void op_random(actor *a) {
    unsigned t = stress_below(&a->rng, 3) == 0 ? SMALL : BIG;
    unsigned r = (unsigned)stress_below(&a->rng, 100);
    if (r < 55) op_get(a, t);
    else if (r < 88) op_replace(a, t);
    else if (r < 98) op_double_free(a, t);
    else op_foreign(a, t);
}

/* ---- frame jobs ------------------------------------------------------------------ */

/* A phase-one job's argument and record, in the driver's frame memory: what it kept is
 * re-checked by phase two, after phase one's counter reached zero. */
typedef struct job_rec {
    uint64_t frame, seed;
    unsigned held;
    kept     hold[HOLD_MAX];
} job_rec;

typedef struct check_arg {
    job_rec *recs;
    unsigned count;
    uint64_t frame, seed;
} check_arg;

static actor actor_make(kiln_ctx *ctx, uint64_t seed, uint64_t stream, kept *hold,
                        unsigned cap, const char *who) {
    return (actor){ .ctx = ctx, .rng = stress_rng_make(seed, stream), .hold = hold,
                    .hold_cap = cap, .who = who };
}

static void frame_job(kiln_ctx *ctx, void *arg) {
    job_rec *rec = arg;
    STRESS_CHECK(kiln_frame_number(g_rt) == rec->frame, "a job of frame %" PRIu64
                 " runs in frame %" PRIu64, rec->frame, kiln_frame_number(g_rt));
    actor a = actor_make(ctx, opt.seed, rec->seed, rec->hold, HOLD_MAX, "frame job");
    for (unsigned i = 0; i < OPS_PER_JOB; i++) op_random(&a);
    recheck(&a, a.hold, a.held, "end of the job");
    rec->held = a.held;
    actor_flush(&a);
}

/* Phase two: the pointers phase one kept are still the items of their handles (freed
 * or not: no slot is reused before the frame ends); some churn meanwhile. */
static void check_job(kiln_ctx *ctx, void *arg) {
    check_arg *c = arg;
    kept hold[HOLD_MAX];
    actor a = actor_make(ctx, opt.seed, c->seed, hold, HOLD_MAX, "phase-two job");
    for (unsigned r = 0; r < c->count; r++)
        recheck(&a, c->recs[r].hold, c->recs[r].held, "phase two");
    for (unsigned i = 0; i < OPS_PER_JOB / 4; i++) op_random(&a);
    recheck(&a, a.hold, a.held, "end of the phase-two job");
    actor_flush(&a);
}

/* ---- the live-item walks --------------------------------------------------------- */

static _Atomic uint64_t g_walk_visits;   /* relaxed tally */

/* A visit while others allocate and free: the handle is of this table, live-shaped, and
 * names this item (a lookup gives it, or NULL once freed: the slot is not reused while
 * the walking thread may still hold the pointer). Reads no item word: the allocating
 * thread writes the canary after alloc, unordered with a walk (as in a game, an item's
 * contents are the client's to publish). */
static void walk_visit(void *user, kiln_handle h, void *item) {
    const table_state *ts = user;
    unsigned t = (unsigned)(ts - g_tables);
    STRESS_CHECK((h.bits & 0xff000000u) == ts->tag_bits && kiln_handle_index(h) < specs[t].capacity &&
                 (kiln_handle_generation(h) & 1u),
                 "walk of table %s: handle %016" PRIx64 " out of shape", specs[t].name, h.bits);
    void *p = kiln_handle_get(ts->table, h);
    STRESS_CHECK(p == item || p == NULL, "walk of table %s: handle %016" PRIx64 " visited with "
                 "item %p, but get gives %p", specs[t].name, h.bits, item, p);
    atomic_fetch_add_explicit(&g_counts[t][p ? C_GET : C_STALE], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_walk_visits, 1, memory_order_relaxed);
}

/* One frame: phase one (jobs, and the driver's own operations while they run), phase
 * two, the driver's re-check, frame end. */
static void drive_frame(kiln_ctx *ctx, uint64_t expected, stress_rng *rng) {
    uint64_t frame = kiln_frame_begin(ctx);
    STRESS_CHECK(frame == expected, "kiln_frame_begin returned %" PRIu64 ", expected %" PRIu64,
                 frame, expected);
    unsigned jobs = JOBS_PER_WORKER * opt.threads;
    unsigned checks = (jobs + CHECK_CHUNK - 1) / CHECK_CHUNK;
    job_rec *recs = kiln_frame_alloc(ctx, jobs * sizeof *recs, alignof(job_rec));
    check_arg *cargs = kiln_frame_alloc(ctx, checks * sizeof *cargs, alignof(check_arg));
    kiln_job *list = kiln_frame_alloc(ctx, jobs * sizeof *list, alignof(kiln_job));
    if (!recs || !cargs || !list) {
        stress_fail("frame %" PRIu64 ": kiln_frame_alloc returned NULL", frame);
        kiln_frame_end(ctx);
        return;
    }
    for (unsigned j = 0; j < jobs; j++) {
        recs[j] = (job_rec){ .frame = frame, .seed = stress_next(rng) };
        list[j] = (kiln_job){ frame_job, &recs[j] };
    }
    kiln_counter phase1 = { { 0, 0 } };
    kiln_run(ctx, list, jobs, &phase1);

    kept hold[HOLD_MAX];   /* the driver's pointers: valid until the frame ends */
    actor a = actor_make(ctx, opt.seed, stress_next(rng), hold, HOLD_MAX, "driver");
    for (unsigned i = 0; i < OPS_PER_JOB; i++) op_random(&a);
    if (frame % 8 == 0)   /* the walk's ranges run beside phase one's jobs */
        kiln_handles_parallel_for(ctx, g_tables[BIG].table, 256, walk_visit, &g_tables[BIG]);
    kiln_wait(ctx, &phase1);

    for (unsigned c = 0; c < checks; c++) {
        unsigned first = c * CHECK_CHUNK;
        cargs[c] = (check_arg){ &recs[first], jobs - first < CHECK_CHUNK ? jobs - first
                                                                          : CHECK_CHUNK,
                                frame, stress_next(rng) };
        list[c] = (kiln_job){ check_job, &cargs[c] };
    }
    kiln_counter phase2 = { { 0, 0 } };
    kiln_run(ctx, list, checks, &phase2);
    for (unsigned i = 0; i < OPS_PER_JOB / 4; i++) op_random(&a);
    kiln_wait(ctx, &phase2);
    recheck(&a, a.hold, a.held, "driver, before frame end");
    actor_flush(&a);
    kiln_frame_end(ctx);
}

/* ---- the render thread: attached, outside the frame clock ------------------------ */

typedef struct render_state {
    uint64_t turns, quiescent_calls, arena_resets, stats_reads;
    uint64_t last[NTABLES][4];   /* allocs, frees, failures, double frees last read */
} render_state;

/* Single counters never go down; live never exceeds the capacity. */
static void check_figures(render_state *rs) {
    for (unsigned t = 0; t < NTABLES; t++) {
        kiln_handles_stats s;
        if (!kiln_handles_stats_get(g_tables[t].table, &s)) {
            stress_fail("kiln_handles_stats_get(%s) failed", specs[t].name);
            continue;
        }
        uint64_t now[4] = { s.allocs, s.frees, s.failures, s.double_frees };
        for (unsigned k = 0; k < 4; k++) {
            STRESS_CHECK(now[k] >= rs->last[t][k], "table %s: figure %u went down from %" PRIu64
                         " to %" PRIu64, specs[t].name, k, rs->last[t][k], now[k]);
            rs->last[t][k] = now[k];
        }
        STRESS_CHECK(s.live <= s.capacity && s.capacity == specs[t].capacity,
                     "table %s: live %" PRIu64 " of capacity %" PRIu64, specs[t].name, s.live,
                     s.capacity);
    }
    kiln_handles_stats all[STATS_CAP];
    size_t n = kiln_stats_handles(g_rt, all, STATS_CAP);
    STRESS_CHECK(n >= NTABLES && n <= NTABLES + 1, "%zu live tables", n);
    rs->stats_reads++;
}

static void *render_main(void *arg) {
    render_state *rs = arg;
    kiln_ctx *ctx = kiln_attach(g_rt);
    if (!ctx) {
        stress_fail("render thread: kiln_attach failed");
        return NULL;
    }
    kept hold[RENDER_HOLD];
    actor a = actor_make(ctx, opt.seed, 0x7e4de7, hold, RENDER_HOLD, "render thread");
    while (!atomic_load_explicit(&g_stop, memory_order_acquire)) {
        unsigned ops = 8 + (unsigned)stress_below(&a.rng, 24);
        for (unsigned i = 0; i < ops; i++) {
            unsigned t = stress_below(&a.rng, 3) == 0 ? SMALL : BIG;
            if (stress_below(&a.rng, 6) == 0) op_replace(&a, t);
            else op_get(&a, t);
        }
        kiln_handles_foreach(g_tables[rs->turns % NTABLES].table, walk_visit,
                             &g_tables[rs->turns % NTABLES]);
        /* Holding the pointers across a pause, and so across frame ends. */
        nanosleep(&(struct timespec){ 0, 200000 + 200000 * (long)stress_below(&a.rng, 5) }, NULL);
        recheck(&a, a.hold, a.held, "render thread after a pause");
        if (stress_below(&a.rng, 4) == 0) {
            /* Its frame boundary: the reset of its own frame arena is a quiescent point. */
            uint64_t *scratch = kiln_frame_alloc(ctx, 256, 8);
            STRESS_CHECK(scratch != NULL, "render thread: kiln_frame_alloc returned NULL");
            if (scratch) scratch[0] = rs->turns;
            kiln_arena_reset(kiln_frame_arena(ctx));
            rs->arena_resets++;
        } else {
            kiln_handles_quiescent(ctx);
            rs->quiescent_calls++;
        }
        a.held = 0;
        actor_flush(&a);
        check_figures(rs);
        rs->turns++;
    }
    kiln_detach(ctx);
    return NULL;
}

/* ---- the churn thread: attach, use, detach --------------------------------------- */

typedef struct churn_state {
    uint64_t attaches, transients, refused_after_destroy;
} churn_state;

/* A table of its own that lives for a moment: its exact figures are checked (nobody
 * else touches it), it is destroyed with items still live, then refused. */
static void transient_table(actor *a, churn_state *cs) {
    kiln_handles *t = kiln_handles_create(g_rt, &(kiln_handles_desc){
        .name = "transient", .item_size = 8 + stress_below(&a->rng, 200), .capacity = 16 });
    if (!t) {
        stress_fail("kiln_handles_create of a transient table failed");
        return;
    }
    cs->transients++;
    kiln_handle hs[20];
    unsigned made = 0, freed = 0, failed = 0;
    for (unsigned i = 0; i < 20; i++) {
        void *p = NULL;
        hs[i] = kiln_handle_alloc(a->ctx, t, &p);
        if (kiln_handle_is_null(hs[i])) failed++;
        else made++;
    }
    for (unsigned i = 0; i < 20; i += 2)
        if (!kiln_handle_is_null(hs[i])) freed += kiln_handle_free(a->ctx, t, hs[i]);
    kiln_handles_stats s;
    STRESS_CHECK(kiln_handles_stats_get(t, &s) && made == 16 && failed == 4 &&
                 s.allocs == made && s.frees == freed && s.failures == failed &&
                 s.live == made - freed, "transient table: %u made, %u failed, %u freed; kiln: "
                 "%" PRIu64 " allocs, %" PRIu64 " failures, %" PRIu64 " frees, live %" PRIu64,
                 made, failed, freed, s.allocs, s.failures, s.frees, s.live);
    kiln_handles_destroy(t);
    STRESS_CHECK(kiln_handle_get(t, hs[1]) == NULL, "a destroyed table resolved a handle");
    STRESS_CHECK(!kiln_handle_free(a->ctx, t, hs[1]), "a destroyed table freed a handle");
    cs->refused_after_destroy += 2;
}

static void *churn_main(void *arg) {
    churn_state *cs = arg;
    kept hold[HOLD_MAX];
    actor a = actor_make(NULL, opt.seed, 0xc4a2, hold, HOLD_MAX, "churn thread");
    while (!atomic_load_explicit(&g_stop, memory_order_acquire)) {
        a.ctx = kiln_attach(g_rt);
        if (!a.ctx) {
            stress_fail("churn thread: kiln_attach failed");
            return NULL;
        }
        cs->attaches++;
        unsigned rounds = 1 + (unsigned)stress_below(&a.rng, 3);
        for (unsigned r = 0; r < rounds; r++) {
            for (unsigned i = 0; i < 16; i++) op_random(&a);
            nanosleep(&(struct timespec){ 0, 100000 + 100000 * (long)stress_below(&a.rng, 8) },
                      NULL);
            recheck(&a, a.hold, a.held, "churn thread after a pause");
            if (r + 1 < rounds && stress_below(&a.rng, 2) == 0) {
                kiln_handles_quiescent(a.ctx);
                a.held = 0;
            }
        }
        if (stress_below(&a.rng, 16) == 0) transient_table(&a, cs);
        kiln_detach(a.ctx);   /* its quiescent point: the pointers are gone */
        a.held = 0;
        actor_flush(&a);
        nanosleep(&(struct timespec){ 0, 100000 * (long)stress_below(&a.rng, 4) }, NULL);
    }
    return NULL;
}

/* ---- the end: exact figures and a full audit ------------------------------------- */

static uint64_t count_of(unsigned t, count_id c) {
    return atomic_load_explicit(&g_counts[t][c], memory_order_relaxed);
}

/* Quiet (only the driver and idle workers attached): every figure is exact. */
static void check_final(unsigned t) {
    table_state *ts = &g_tables[t];
    uint64_t in_array = 0;
    for (uint32_t i = 0; i < ts->spec->entries; i++)
        in_array += atomic_load_explicit(&ts->entries[i], memory_order_relaxed) != 0;
    kiln_handles_stats s;
    if (!kiln_handles_stats_get(ts->table, &s)) {
        stress_fail("kiln_handles_stats_get(%s) failed", specs[t].name);
        return;
    }
    const char *name = specs[t].name;
    STRESS_CHECK(s.live == in_array && s.allocs - s.frees == s.live,
                 "table %s: live %" PRIu64 ", %" PRIu64 " handles in the array, allocs %" PRIu64
                 " - frees %" PRIu64, name, s.live, in_array, s.allocs, s.frees);
    STRESS_CHECK(s.allocs == count_of(t, C_ALLOC) && s.frees == count_of(t, C_FREE) &&
                 s.failures == count_of(t, C_FAIL),
                 "table %s: kiln counted %" PRIu64 " allocs, %" PRIu64 " frees, %" PRIu64
                 " failures; the threads %" PRIu64 ", %" PRIu64 ", %" PRIu64, name, s.allocs,
                 s.frees, s.failures, count_of(t, C_ALLOC), count_of(t, C_FREE),
                 count_of(t, C_FAIL));
    uint64_t doubles = count_of(t, C_DOUBLE) + count_of(t, C_RACED);
    STRESS_CHECK(s.double_frees == doubles, "table %s: %" PRIu64 " double frees counted, %" PRIu64
                 " made (%" PRIu64 " of them raced)", name, s.double_frees, doubles,
                 count_of(t, C_RACED));
    /* Lookup misses are counted with an atomic add on the miss path: exact. */
    STRESS_CHECK(s.stale_lookups == count_of(t, C_STALE) &&
                 s.foreign_handles == count_of(t, C_FOREIGN),
                 "table %s: %" PRIu64 " stale and %" PRIu64 " foreign lookups counted, the "
                 "threads saw %" PRIu64 " and %" PRIu64, name, s.stale_lookups,
                 s.foreign_handles, count_of(t, C_STALE), count_of(t, C_FOREIGN));
    STRESS_CHECK(s.retired_slots == 0 && s.peak_live <= s.capacity, "table %s: %" PRIu64
                 " retired slots, peak %" PRIu64, name, s.retired_slots, s.peak_live);
}

/* The audit's jobs: one per thread that runs frame jobs (every worker and the driver),
 * held at a barrier until all have started, then each allocates until the table is full:
 * every context's cache is drained by its own thread, so together they must get the
 * whole capacity. */
typedef struct audit_arg {
    unsigned          table, parties;
    _Atomic unsigned *arrived;
    _Atomic uint32_t *cursor;
    uint64_t         *got;        /* capacity entries, each written by one job */
    uint64_t          seed;
} audit_arg;

static void audit_job(kiln_ctx *ctx, void *arg) {
    audit_arg *au = arg;
    atomic_fetch_add_explicit(au->arrived, 1, memory_order_relaxed);
    double give_up = stress_seconds() + 30;
    while (atomic_load_explicit(au->arrived, memory_order_relaxed) < au->parties) {
        if (stress_seconds() > give_up) {
            stress_fail("audit: only %u of %u threads ran an audit job",
                        atomic_load_explicit(au->arrived, memory_order_relaxed), au->parties);
            break;
        }
        sched_yield();
    }
    kept none[1];
    actor a = actor_make(ctx, opt.seed, au->seed, none, 1, "audit job");
    for (uint64_t bits; (bits = alloc_filled(&a, au->table)) != 0;) {
        uint32_t at = atomic_fetch_add_explicit(au->cursor, 1, memory_order_relaxed);
        if (at < specs[au->table].capacity) au->got[at] = bits;
        else stress_fail("audit: table %s handed out more than its capacity %u",
                         specs[au->table].name, specs[au->table].capacity);
    }
    actor_flush(&a);
}

/* After a drain and two frame ends: the whole capacity of table t can be had again,
 * every item distinct; then it is freed again. */
static void audit_table(kiln_ctx *ctx, unsigned t, uint64_t *frame) {
    table_state *ts = &g_tables[t];
    uint32_t capacity = specs[t].capacity;
    uint64_t *got = calloc(capacity, sizeof *got);
    unsigned char *seen = calloc(capacity, 1);
    audit_arg *args = calloc(opt.threads + 1, sizeof *args);
    kiln_job *jobs = calloc(opt.threads + 1, sizeof *jobs);
    if (!got || !seen || !args || !jobs) {
        stress_fail("audit: out of memory");
        exit(2);
    }
    _Atomic unsigned arrived = 0;
    _Atomic uint32_t cursor = 0;
    for (unsigned j = 0; j <= opt.threads; j++) {
        args[j] = (audit_arg){ t, opt.threads + 1, &arrived, &cursor, got, 0xa0d1700 + j };
        jobs[j] = (kiln_job){ audit_job, &args[j] };
    }
    STRESS_CHECK(kiln_frame_begin(ctx) == ++*frame, "audit frame %" PRIu64, *frame);
    kiln_counter counter = { { 0, 0 } };
    kiln_run(ctx, jobs, opt.threads + 1, &counter);
    kiln_wait(ctx, &counter);
    uint32_t n = atomic_load_explicit(&cursor, memory_order_relaxed);
    kiln_handles_stats s;
    kiln_handles_stats_get(ts->table, &s);
    STRESS_CHECK(n == capacity && s.live == capacity && s.pending_reuse == 0,
                 "audit: table %s: %u items could be had again of capacity %u (kiln: live %"
                 PRIu64 ", %" PRIu64 " waiting for reuse)", specs[t].name, n, capacity, s.live,
                 s.pending_reuse);
    kept none[1];
    actor a = actor_make(ctx, opt.seed, 0xa0d17, none, 1, "audit");
    for (uint32_t i = 0; i < n && i < capacity; i++) {
        uint32_t index = kiln_handle_index((kiln_handle){ got[i] });
        STRESS_CHECK(!seen[index], "audit: table %s: slot %u handed out twice", specs[t].name,
                     index);
        seen[index] = 1;
        const uint64_t *p = kiln_handle_get(ts->table, (kiln_handle){ got[i] });
        a.n[t][p ? C_GET : C_STALE]++;
        if (p) item_ok(&a, t, p, got[i], "audit, with the whole capacity taken");
        bool freed = kiln_handle_free(ctx, ts->table, (kiln_handle){ got[i] });
        STRESS_CHECK(freed, "audit: table %s: free of %016" PRIx64 " refused", specs[t].name,
                     got[i]);
        a.n[t][freed ? C_FREE : C_RACED]++;
    }
    actor_flush(&a);
    kiln_frame_end(ctx);
    free(got);
    free(seen);
    free(args);
    free(jobs);
}

/* Frees every handle of the arrays, ends two frames, then audits both tables. */
static void drain_and_audit(kiln_ctx *ctx, uint64_t *frame) {
    kept none[1];
    actor a = actor_make(ctx, opt.seed, 0xd2a1, none, 1, "drain");
    for (unsigned t = 0; t < NTABLES; t++) {
        table_state *ts = &g_tables[t];
        for (uint32_t i = 0; i < ts->spec->entries; i++) {
            uint64_t bits = atomic_exchange_explicit(&ts->entries[i], 0, memory_order_acquire);
            if (!bits) continue;
            const uint64_t *p = kiln_handle_get(ts->table, (kiln_handle){ bits });
            STRESS_CHECK(p != NULL, "drain: table %s: live handle %016" PRIx64 " is stale",
                         specs[t].name, bits);
            a.n[t][p ? C_GET : C_STALE]++;
            if (p) item_ok(&a, t, p, bits, "drain");
            bool freed = kiln_handle_free(ctx, ts->table, (kiln_handle){ bits });
            STRESS_CHECK(freed, "drain: table %s: free of live handle %016" PRIx64 " refused",
                         specs[t].name, bits);
            a.n[t][freed ? C_FREE : C_RACED]++;
        }
    }
    actor_flush(&a);
    for (int k = 0; k < 2; k++) {
        STRESS_CHECK(kiln_frame_begin(ctx) == ++*frame, "drain frame %" PRIu64, *frame);
        kiln_frame_end(ctx);
    }
    for (unsigned t = 0; t < NTABLES; t++) audit_table(ctx, t, frame);
    for (unsigned t = 0; t < NTABLES; t++) check_final(t);
}

int main(int argc, char **argv) {
    opt = (stress_options){ .threads = 4, .iterations = 2000, .seed = 1 };
    if (!stress_parse(argc, argv, &opt)) return 2;
    static const char *const expected_items[] = {
        "HANDLE_DOUBLE_FREE", "HANDLE_FOREIGN", "HANDLES_FULL",
        "HANDLES_DESTROYED", "HANDLES_ITEMS_LIVE", "HANDLES_CAPACITY_NEAR", NULL };
    static stress_log log = { .expected = expected_items };
    double start = stress_seconds();
    g_rt = kiln_create(&(kiln_desc){ .worker_count = opt.threads, .log = stress_log_fn, .log_every_repeat = true,   /* counted one by one */
                                     .log_user = &log });
    kiln_ctx *ctx = g_rt ? kiln_attach(g_rt) : NULL;
    if (!ctx) {
        stress_fail("kiln_create or kiln_attach failed");
        return 2;
    }
    for (unsigned t = 0; t < NTABLES; t++) {
        table_state *ts = &g_tables[t];
        ts->spec = &specs[t];
        ts->words = (unsigned)(specs[t].item_size / 8);
        ts->table = kiln_handles_create(g_rt, &(kiln_handles_desc){
            .name = specs[t].name, .item_size = specs[t].item_size,
            .item_align = specs[t].item_align, .capacity = specs[t].capacity });
        ts->entries = calloc(specs[t].entries, sizeof *ts->entries);
        if (!ts->table || !ts->entries) {
            stress_fail("table %s: create failed", specs[t].name);
            return 2;
        }
        /* The tag, from a first handle (given back at once). */
        kiln_handle h = kiln_handle_alloc(ctx, ts->table, NULL);
        ts->tag_bits = h.bits & 0xff000000u;
        STRESS_CHECK(!kiln_handle_is_null(h) && ts->tag_bits != 0 &&
                     kiln_handle_free(ctx, ts->table, h), "table %s: first handle %016" PRIx64,
                     specs[t].name, h.bits);
        g_counts[t][C_ALLOC] = 1;
        g_counts[t][C_FREE] = 1;
        /* The big table starts full of entries: lookups find something from frame one. */
        kept none[1];
        actor a = actor_make(ctx, opt.seed, 0xf111 + t, none, 1, "setup");
        for (uint32_t i = 0; t == BIG && i < specs[t].entries; i++)
            atomic_store_explicit(&ts->entries[i], alloc_filled(&a, t), memory_order_release);
        actor_flush(&a);
    }
    STRESS_CHECK(g_tables[BIG].tag_bits != g_tables[SMALL].tag_bits, "two tables, one tag");

    static render_state render;
    static churn_state churn;
    pthread_t render_thread, churn_thread;
    if (pthread_create(&render_thread, NULL, render_main, &render) != 0 ||
        pthread_create(&churn_thread, NULL, churn_main, &churn) != 0) {
        stress_fail("pthread_create failed");
        return 2;
    }
    stress_rng rng = stress_rng_make(opt.seed, 1);
    uint64_t frame = 0;
    for (uint64_t f = 0; f < opt.iterations; f++) {
        drive_frame(ctx, ++frame, &rng);
        nanosleep(&(struct timespec){ 0, 1000L * (long)stress_below(&rng, FRAME_PAUSE_US) }, NULL);
    }
    atomic_store_explicit(&g_stop, 1, memory_order_release);
    pthread_join(render_thread, NULL);
    pthread_join(churn_thread, NULL);

    for (unsigned t = 0; t < NTABLES; t++) check_final(t);
    uint64_t small_fails = count_of(SMALL, C_FAIL);
    STRESS_CHECK(small_fails > 0 || opt.iterations < 50, "table %s never filled up",
                 specs[SMALL].name);
    drain_and_audit(ctx, &frame);
    uint64_t totals[NCOUNTS] = { 0 };
    for (unsigned t = 0; t < NTABLES; t++) {
        for (unsigned c = 0; c < NCOUNTS; c++) totals[c] += count_of(t, c);
        kiln_handles_destroy(g_tables[t].table);
        free(g_tables[t].entries);
    }
    STRESS_CHECK(totals[C_MISMATCH] == 0, "%" PRIu64 " items did not belong to their handle",
                 totals[C_MISMATCH]);
    STRESS_CHECK(atomic_load(&log.unexpected_seen) == 0, "unexpected log messages");
    kiln_detach(ctx);
    kiln_destroy(g_rt);

    uint64_t failures = stress_failure_count();
    printf("stress-handles: %s: threads %u, frames %" PRIu64 ", seed %" PRIu64 ", %.2fs |",
           failures ? "FAILED" : "ok", opt.threads, opt.iterations, opt.seed,
           stress_seconds() - start);
    for (unsigned c = 0; c < NCOUNTS; c++)
        printf("%s%s %" PRIu64, c ? ", " : " ", count_names[c], totals[c]);
    printf(" (small table: %" PRIu64 " alloc failures) | render %" PRIu64 " turns, %" PRIu64
           " quiescent calls, %" PRIu64 " arena resets, %" PRIu64 " stats reads | churn %" PRIu64
           " attaches, %" PRIu64 " transient tables | %" PRIu64 " items walked | %" PRIu64
           " log items | %" PRIu64 " failures\n", small_fails, render.turns, render.quiescent_calls,
           render.arena_resets, render.stats_reads, churn.attaches, churn.transients,
           atomic_load(&g_walk_visits),
           atomic_load(&log.expected_seen), failures);
    return failures ? 1 : 0;
}
