/* stress/stress_pools.c — pools on a real runtime under load: several threads, each
 * attached, allocate from six pools of different sizes, alignments and options (a
 * capacity, KILN_POOL_CHECKED, KILN_POOL_ZERO, magazines of 2 to 64 objects), fill
 * every object with a pattern derived from its address and a (thread, sequence) word,
 * and hand a share of them to one another through exchange slots (atomic_exchange on
 * _Atomic(void *)), where the thread that swaps one out frees it: a cross-thread free.
 * Every object is verified before it is freed, by whichever thread frees it. Meanwhile:
 *   - a churn thread attaches, works, and detaches over and over (its caches are
 *     flushed to the depots while the others exchange magazines), keeping some objects
 *     across a detach, and now and then creates a transient pool, uses it, destroys it
 *     and frees a stale pointer into it (a use of a destroyed pool, to be refused);
 *   - a stats thread calls kiln_stats_pools, kiln_pool_stats_get and kiln_stats_get
 *     without pause, trims the block pool now and then, and reserves objects in and
 *     trims one pool after another (kiln_pool_reserve, kiln_pool_trim) while the
 *     workers allocate, free and now and then flush their cache of a pool
 *     (kiln_pool_flush), so trims find blocks to return;
 *   - every worker uses its frame arena for scratch, so blocks keep moving through the
 *     block pool (a block a destroyed pool gave back is soon written by someone else).
 * The capacity pool returns NULL concurrently; the program counts its live objects with
 * an atomic and checks the count never exceeds the capacity. A few deliberate bad frees
 * (a malloc pointer, a stack pointer, an object of another pool; on the checked pool an
 * interior pointer and a double free) must be refused without harm and counted.
 *
 * At the end, with every context detached: for each pool live == 0, allocs == frees ==
 * what the threads did, carved == cached + in_depot with cached == 0, bad_frees and
 * double_frees == the deliberate ones, failures == the NULLs the threads saw (0 except
 * for the capacity pool), carved <= capacity. Then an audit: a fresh context takes
 * every object of every depot back, and they must all be distinct, aligned, zeroed
 * where asked, and come without carving a new one; at capacity the next alloc is NULL.
 * Tags (kiln/heap.h): every pool carries a tag of its own under one parent, read by the
 * stats thread as blocks move (whole blocks at each step); quiet, each tag holds exactly
 * its pool's blocks and the parent their sum. Then a pool under a tag with a REFUSE
 * budget is filled and emptied by every thread at once while a reader reads it and trims:
 * the budget is never passed but by magazine blocks, each failure was a refusal, and
 * quiet the tag holds exactly the pool's blocks.
 * Usage: stress-pools [--threads N] [--iterations N] [--seed S]; --iterations counts each
 * worker's operations. Exit status 0 when every check held. */
#include "stress_common.h"   /* first: it sets the feature macros */

#include <kiln/kiln.h>
#include <pthread.h>
#include <sched.h>

enum {
    BLOCK_SIZE    = 16384,          /* 4096-byte objects are the most a block allows */
    RESERVE_SIZE  = 16 * BLOCK_SIZE,
    NPOOLS        = 6,
    CAPPED        = 4,              /* the index of the pool with a capacity */
    CHECKED       = 2,              /* the index of the KILN_POOL_CHECKED pool */
    MAX_HOLD      = 32,             /* objects one thread holds per pool */
    SLOTS         = 16,             /* exchange slots per pool */
    SCRATCH_RESET = 24,             /* frame-arena scratch allocations between resets */
    STATS_CAP     = 16,
    AUDIT_CAP     = 1 << 16,        /* most objects one pool's audit takes back */
};

typedef struct pool_spec {
    const char *name;
    size_t      size, align;        /* align 0: alignof(max_align_t) */
    uint32_t    flags, magazine;    /* magazine 0: the pool's default */
} pool_spec;

static const pool_spec specs[NPOOLS] = {
    { "p16", 16, 0, 0, 0 },
    { "p64 mag4", 64, 64, 0, 4 },                    /* tiny magazines: the depot is hot */
    { "p200 checked", 200, 8, KILN_POOL_CHECKED, 0 },
    { "p4096", 4096, 4096, 0, 0 },
    { "p48 capped", 48, 16, 0, 8 },                  /* capacity set at run time */
    { "p100 zero mag2", 100, 4, KILN_POOL_ZERO, 2 },
};

typedef struct held_obj {
    unsigned char *p;
    uint64_t       owner;           /* the (thread, sequence) word it was filled with */
} held_obj;

/* What one thread did to one pool; summed by main after the joins. */
typedef struct pool_counts {
    uint64_t allocs, frees, nulls, sent, received, cross_frees;
} pool_counts;

typedef struct thread_state {
    pthread_t   thread;
    unsigned    id;
    stress_rng  rng;
    kiln_ctx   *ctx;
    uint64_t    seq;                /* objects this thread has filled */
    held_obj    held[NPOOLS][MAX_HOLD];
    unsigned    count[NPOOLS];
    pool_counts c[NPOOLS];
    uint64_t    ops, verified_bytes, scratch_allocs, flushes, reserves, pool_trims;
    uint64_t    attaches, transients, stats_reads, trims;   /* churn and stats threads */
    /* The stats thread: the last figures it read of each pool's single counters, which
     * must never go down (and are compared with the final totals by main). */
    uint64_t    seen_bad[NPOOLS], seen_double[NPOOLS], seen_failures[NPOOLS];
    uint64_t    seen_trimmed[NPOOLS], seen_exchanges[NPOOLS];
} thread_state;

/* Shared; written by main before the threads start. */
static stress_options     opt;
static kiln_runtime      *rt;
static kiln_pool         *pools[NPOOLS];
static kiln_tag           pool_tags[NPOOLS], all_tag;   /* each pool's tag, children of All */
static size_t             capacity;          /* of pools[CAPPED] */
static unsigned           id_count;          /* thread ids in use: workers, churn, stats, main */
static pthread_barrier_t  start_barrier;
static _Atomic int        stop_helpers;

/* The exchange: any thread swaps an object in and frees what it swapped out. */
static _Atomic(void *)    exchange[NPOOLS][SLOTS];

/* Live objects of the capacity pool as the threads see them: incremented after an
 * alloc returns, decremented before the free, so never above the true live count. */
static _Atomic int64_t    capped_live, capped_peak;

/* Deliberate misuse, counted by the thread that makes it. */
static _Atomic uint64_t   bad_expected[NPOOLS], double_expected[NPOOLS];
static _Atomic uint64_t   misuse_expected;   /* api_errors: every refused call */

/* ---- a logger that counts each expected item ------------------------------------- */

enum { LOG_FOREIGN, LOG_INTERIOR, LOG_DOUBLE, LOG_CAPACITY, LOG_DESTROYED, LOG_NEAR,
       LOG_RESERVE_SHORT, LOG_TAG_REFUSED, LOG_TAG_NEAR, LOG_TAG_EXCEEDED };   /* places in log_items */
static const char *const log_items[] = {
    "POOL_FOREIGN_POINTER", "POOL_INTERIOR_POINTER", "POOL_DOUBLE_FREE",
    "POOL_CAPACITY_REACHED", "POOL_DESTROYED", "POOL_CAPACITY_NEAR",
    "POOL_RESERVE_SHORT",   /* the stats thread's reserves on the capacity pool */
    "TAG_BUDGET_REFUSED", "TAG_BUDGET_NEAR",   /* the budget phase's tight tag */
    "TAG_BUDGET_EXCEEDED",   /* its magazine blocks, charged past the budget */
    NULL,
};
static stress_log items_seen = { .expected = log_items };

/* ---- patterns -------------------------------------------------------------------- */

static uint64_t owner_word(unsigned tid, uint64_t seq) {
    return ((uint64_t)tid << 48) | (seq & ((UINT64_C(1) << 48) - 1));
}

static uint64_t pattern_word(const unsigned char *p, uint64_t owner, size_t offset) {
    return stress_mix((uint64_t)(uintptr_t)p ^ stress_mix(owner)) + offset * 0x9e3779b97f4a7c15ull;
}

/* Bytes 0-7: the owner word (so any thread can verify an object it did not fill); then
 * words derived from the address and the owner word, the tail cut to the size. memcpy:
 * objects of the align-4 pool are not 8-byte aligned. */
static void fill(unsigned char *p, size_t size, uint64_t owner) {
    memcpy(p, &owner, 8);
    for (size_t i = 8; i < size; i += 8) {
        uint64_t x = pattern_word(p, owner, i);
        memcpy(p + i, &x, size - i < 8 ? size - i : 8);
    }
}

/* The offset of the first byte that differs from what fill wrote, or SIZE_MAX. */
static size_t first_bad(const unsigned char *p, size_t size, uint64_t owner) {
    if (memcmp(p, &owner, 8) != 0) return 0;
    for (size_t i = 8; i < size; i += 8) {
        uint64_t x = pattern_word(p, owner, i);
        if (memcmp(p + i, &x, size - i < 8 ? size - i : 8) != 0) return i;
    }
    return SIZE_MAX;
}

static bool verify_bytes(thread_state *ts, const char *pool_name, const unsigned char *p,
                         size_t size, uint64_t owner) {
    ts->verified_bytes += size;
    size_t bad = first_bad(p, size, owner);
    if (bad == SIZE_MAX) return true;
    uint64_t head;
    memcpy(&head, p, 8);
    stress_fail("pool %s: object %p (filled by thread %u, seq %" PRIu64 ", checked by thread "
                "%u) overwritten at byte %zu (head 0x%016" PRIx64 ")", pool_name,
                (const void *)p, (unsigned)(owner >> 48), owner & ((UINT64_C(1) << 48) - 1),
                ts->id, bad, head);
    return false;
}

static bool verify(thread_state *ts, unsigned pool, const unsigned char *p, uint64_t owner) {
    return verify_bytes(ts, specs[pool].name, p, specs[pool].size, owner);
}

/* ---- operations ------------------------------------------------------------------ */

static size_t spec_align(unsigned pool) {
    return specs[pool].align ? specs[pool].align : _Alignof(max_align_t);
}

static void do_alloc(thread_state *ts, unsigned pool) {
    unsigned char *p = kiln_pool_alloc(ts->ctx, pools[pool]);
    if (!p) {
        ts->c[pool].nulls++;
        STRESS_CHECK(pool == CAPPED, "thread %u: pool %s returned NULL (no capacity, no "
                     "memory_limit)", ts->id, specs[pool].name);
        return;
    }
    ts->c[pool].allocs++;
    if (pool == CAPPED) {
        int64_t live = atomic_fetch_add_explicit(&capped_live, 1, memory_order_relaxed) + 1;
        STRESS_CHECK(live <= (int64_t)capacity, "thread %u: %" PRId64 " objects of pool %s "
                     "live, capacity %zu", ts->id, live, specs[pool].name, capacity);
        int64_t peak = atomic_load_explicit(&capped_peak, memory_order_relaxed);
        while (live > peak && !atomic_compare_exchange_weak_explicit(
                                  &capped_peak, &peak, live, memory_order_relaxed,
                                  memory_order_relaxed)) {
        }
    }
    STRESS_CHECK(((uintptr_t)p & (spec_align(pool) - 1)) == 0, "pool %s: %p is not aligned "
                 "to %zu", specs[pool].name, (void *)p, spec_align(pool));
    if (specs[pool].flags & KILN_POOL_ZERO) {
        size_t nonzero = 0;
        while (nonzero < specs[pool].size && p[nonzero] == 0) nonzero++;
        STRESS_CHECK(nonzero == specs[pool].size, "pool %s: object %p not zeroed at byte %zu",
                     specs[pool].name, (void *)p, nonzero);
    }
    uint64_t owner = owner_word(ts->id, ++ts->seq);
    fill(p, specs[pool].size, owner);
    ts->held[pool][ts->count[pool]++] = (held_obj){ p, owner };
}

/* Verifies obj and frees it from this thread's context, whoever allocated it. */
static void free_obj(thread_state *ts, unsigned pool, unsigned char *p, uint64_t owner) {
    verify(ts, pool, p, owner);
    if (pool == CAPPED) atomic_fetch_sub_explicit(&capped_live, 1, memory_order_relaxed);
    if ((unsigned)(owner >> 48) != ts->id) ts->c[pool].cross_frees++;
    kiln_pool_free(ts->ctx, pools[pool], p);
    ts->c[pool].frees++;
}

static held_obj take_held(thread_state *ts, unsigned pool) {
    unsigned j = (unsigned)stress_below(&ts->rng, ts->count[pool]);
    held_obj h = ts->held[pool][j];
    ts->held[pool][j] = ts->held[pool][--ts->count[pool]];
    return h;
}

/* An object out of an exchange slot: it names its writer in its first bytes. */
static void receive(thread_state *ts, unsigned pool, unsigned char *p) {
    uint64_t owner;
    memcpy(&owner, p, 8);
    STRESS_CHECK((owner >> 48) < id_count, "pool %s: object %p from the exchange names thread "
                 "%u", specs[pool].name, (void *)p, (unsigned)(owner >> 48));
    ts->c[pool].received++;
    free_obj(ts, pool, p, owner);
}

static void do_send(thread_state *ts, unsigned pool, uint64_t r) {
    held_obj h = take_held(ts, pool);
    verify(ts, pool, h.p, h.owner);
    void *old = atomic_exchange_explicit(&exchange[pool][r % SLOTS], h.p, memory_order_acq_rel);
    ts->c[pool].sent++;
    if (old) receive(ts, pool, old);
}

static void do_receive(thread_state *ts, unsigned pool, uint64_t r) {
    void *old = atomic_exchange_explicit(&exchange[pool][r % SLOTS], NULL, memory_order_acq_rel);
    if (old) receive(ts, pool, old);
}

/* Counts a deliberate bad free (compared with kiln's counts after the joins). */
static void expect_bad(_Atomic uint64_t *counter) {
    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&misuse_expected, 1, memory_order_relaxed);
}

/* One deliberate bad free into pools[pool]; it must be refused and leave everything
 * intact. */
static void do_misuse(thread_state *ts, unsigned pool, uint64_t r) {
    switch (r % 5) {
    case 0: {   /* malloc memory */
        void *m = malloc(64);
        if (!m) return;
        expect_bad(&bad_expected[pool]);
        kiln_pool_free(ts->ctx, pools[pool], m);
        free(m);
        break;
    }
    case 1: {   /* the stack */
        uint64_t local[4] = { 0 };
        expect_bad(&bad_expected[pool]);
        kiln_pool_free(ts->ctx, pools[pool], &local[1]);
        break;
    }
    case 2: {   /* an object of another pool, which stays ours and intact */
        unsigned other = (pool + 1 + (unsigned)((r >> 8) % (NPOOLS - 1))) % NPOOLS;
        if (ts->count[other] == 0) return;
        held_obj h = ts->held[other][ts->count[other] - 1];
        expect_bad(&bad_expected[pool]);
        kiln_pool_free(ts->ctx, pools[pool], h.p);
        verify(ts, other, h.p, h.owner);
        break;
    }
    default: {  /* checked pool: an interior pointer, then a double free */
        if (ts->count[CHECKED] == 0) return;
        held_obj h = take_held(ts, CHECKED);
        expect_bad(&bad_expected[CHECKED]);
        kiln_pool_free(ts->ctx, pools[CHECKED], h.p + 8 + (r >> 8) % 64);
        free_obj(ts, CHECKED, h.p, h.owner);
        /* The object sits in this context's cache, which no other thread takes from:
         * still free, so the second free must be caught. */
        expect_bad(&double_expected[CHECKED]);
        kiln_pool_free(ts->ctx, pools[CHECKED], h.p);
        break;
    }
    }
}

/* Scratch from the frame arena, reset now and then: blocks keep cycling through the
 * block pool while pools carve and give theirs back. */
static void do_scratch(thread_state *ts, uint64_t r) {
    size_t size = 64 + (size_t)(r % (2 * BLOCK_SIZE / 3));
    unsigned char *p = kiln_frame_alloc(ts->ctx, size, 16);
    STRESS_CHECK(p != NULL, "thread %u: kiln_frame_alloc of %zu bytes failed", ts->id, size);
    if (p) memset(p, (int)(ts->id + 1), size);
    if (++ts->scratch_allocs % SCRATCH_RESET == 0) kiln_arena_reset(kiln_frame_arena(ts->ctx));
}

static void step(thread_state *ts) {
    uint64_t r = stress_next(&ts->rng);
    unsigned pool = (unsigned)(r % NPOOLS);
    unsigned action = (unsigned)((r >> 8) % 1000);
    uint64_t rest = r >> 20;
    unsigned n = ts->count[pool];
    if (action < 440) {
        if (n < MAX_HOLD) do_alloc(ts, pool);
        else action = 500;
    }
    if (action >= 440 && action < 700 && n > 0) {
        held_obj h = take_held(ts, pool);
        free_obj(ts, pool, h.p, h.owner);
    } else if (action >= 700 && action < 840 && n > 0) {
        do_send(ts, pool, rest);
    } else if (action >= 840 && action < 940) {
        do_receive(ts, pool, rest);
    } else if (action >= 940 && action < 984 && n > 0) {
        held_obj h = ts->held[pool][rest % n];
        verify(ts, pool, h.p, h.owner);
    } else if (action == 984) {
        kiln_pool_flush(ts->ctx, pools[pool]);   /* while the stats thread trims */
        ts->flushes++;
    } else if (action >= 985 && action < 997) {
        do_scratch(ts, rest);
    } else if (action >= 997) {
        do_misuse(ts, pool, rest);
    }
    ts->ops++;
}

static void free_all_held(thread_state *ts) {
    for (unsigned pool = 0; pool < NPOOLS; pool++)
        while (ts->count[pool] > 0) {
            held_obj h = ts->held[pool][--ts->count[pool]];
            free_obj(ts, pool, h.p, h.owner);
        }
}

static kiln_ctx *attach_or_die(thread_state *ts) {
    kiln_ctx *ctx = kiln_attach(rt);
    if (!ctx) {
        stress_fail("thread %u: kiln_attach failed", ts->id);
        exit(2);
    }
    return ctx;
}

static void *worker_main(void *arg) {
    thread_state *ts = arg;
    ts->ctx = attach_or_die(ts);
    pthread_barrier_wait(&start_barrier);
    for (uint64_t i = 0; i < opt.iterations; i++) step(ts);
    free_all_held(ts);
    kiln_detach(ts->ctx);
    ts->ctx = NULL;
    return NULL;
}

/* ---- the churn thread ------------------------------------------------------------ */

/* A pool of its own that lives for a moment: created and destroyed while the others
 * run and the stats thread reads it; its exact figures are checked (no other thread
 * touches it), then a stale pointer is freed into it after the destroy. */
static void transient_pool(thread_state *ts) {
    size_t size = 8 + (size_t)stress_below(&ts->rng, 400);
    kiln_pool *t = kiln_pool_create(rt, &(kiln_pool_desc){
        .name = "transient", .size = size, .align = 8, .magazine_size = 4 });
    if (!t) {
        stress_fail("kiln_pool_create of a transient pool (%zu bytes) failed", size);
        return;
    }
    ts->transients++;
    enum { N = 40 };
    held_obj objs[N];
    uint64_t allocs = 0;
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) {
            objs[i].p = kiln_pool_alloc(ts->ctx, t);
            if (!objs[i].p) {
                stress_fail("transient pool: alloc %d returned NULL", i);
                return;
            }
            allocs++;
            objs[i].owner = owner_word(ts->id, ++ts->seq);
            fill(objs[i].p, size, objs[i].owner);
        }
        for (int i = N - 1; i >= 0; i--) {
            verify_bytes(ts, "transient", objs[i].p, size, objs[i].owner);
            kiln_pool_free(ts->ctx, t, objs[i].p);
        }
    }
    kiln_pool_stats s;
    STRESS_CHECK(kiln_pool_stats_get(t, &s), "kiln_pool_stats_get(transient) failed");
    STRESS_CHECK(s.alive && s.allocs == allocs && s.frees == allocs && s.live == 0 &&
                 s.carved == s.cached + s.in_depot && s.carved >= N && s.bad_frees == 0 &&
                 s.failures == 0 && s.object_size == size && s.magazine_size == 4,
                 "transient pool: alive %d, allocs %" PRIu64 "/%" PRIu64 ", frees %" PRIu64
                 ", live %" PRIu64 ", carved %" PRIu64 " cached %" PRIu64 " in_depot %" PRIu64
                 ", bad %" PRIu64 ", failures %" PRIu64, s.alive, s.allocs, allocs, s.frees,
                 s.live, s.carved, s.cached, s.in_depot, s.bad_frees, s.failures);
    kiln_pool_destroy(t);
    /* Its blocks are back in the block pool; the yield lets other threads take them and
     * write them (frame-arena scratch). A stale free and an alloc must be refused
     * without reading those blocks. */
    sched_yield();
    atomic_fetch_add_explicit(&misuse_expected, 2, memory_order_relaxed);
    kiln_pool_free(ts->ctx, t, objs[0].p);
    STRESS_CHECK(kiln_pool_alloc(ts->ctx, t) == NULL, "an alloc from a destroyed pool worked");
    /* Only this thread creates pools, so the slot still holds the dead pool's figures. */
    STRESS_CHECK(kiln_pool_stats_get(t, &s) && !s.alive && s.bad_frees == 1,
                 "destroyed transient pool: alive %d, %" PRIu64 " bad frees", s.alive,
                 s.bad_frees);
}

static void *churn_main(void *arg) {
    thread_state *ts = arg;
    while (!atomic_load_explicit(&stop_helpers, memory_order_acquire)) {
        ts->ctx = attach_or_die(ts);
        ts->attaches++;
        unsigned steps = 8 + (unsigned)stress_below(&ts->rng, 56);
        for (unsigned i = 0; i < steps; i++) step(ts);
        if (stress_below(&ts->rng, 8) == 0) transient_pool(ts);
        /* Half the time the objects stay held across the detach: freed by a later
         * context of this thread (objects need not go home). */
        if (stress_below(&ts->rng, 2) == 0) free_all_held(ts);
        kiln_detach(ts->ctx);
        ts->ctx = NULL;
    }
    ts->ctx = attach_or_die(ts);
    free_all_held(ts);
    kiln_detach(ts->ctx);
    ts->ctx = NULL;
    return NULL;
}

/* ---- the stats thread ------------------------------------------------------------ */

static int spec_index(const char *name) {
    for (int i = 0; i < NPOOLS; i++)
        if (strncmp(name, specs[i].name, 48) == 0) return i;
    return -1;
}

/* Raises *last to now; false when now is below it (a counter went down). */
static bool advance(uint64_t *last, uint64_t now) {
    bool ok = now >= *last;
    if (ok) *last = now;
    return ok;
}

/* Figures each pool must show at any moment, whatever the others are doing. Each
 * figure is exact on its own but they may be of slightly different moments, so only
 * single counters are compared over time (one atomic each: they never go down). */
static void check_running(thread_state *ts, const kiln_pool_stats *s) {
    if (memchr(s->name, '\0', sizeof s->name) == NULL) {
        stress_fail("a pool name is not terminated");
        return;
    }
    int i = spec_index(s->name);
    if (i < 0) {
        STRESS_CHECK(strcmp(s->name, "transient") == 0, "an unknown pool '%s'", s->name);
        return;
    }
    const pool_spec *sp = &specs[i];
    STRESS_CHECK(s->alive && s->object_size == sp->size && s->align == spec_align((unsigned)i) &&
                 s->capacity == (i == CAPPED ? capacity : 0) &&
                 (sp->magazine == 0 || s->magazine_size == sp->magazine) &&
                 s->slot_size >= sp->size && s->slot_size % s->align == 0,
                 "pool %s: alive %d, size %zu, align %zu, capacity %zu, magazine %u, slot %zu",
                 sp->name, s->alive, s->object_size, s->align, s->capacity, s->magazine_size,
                 s->slot_size);
    STRESS_CHECK(i == CAPPED || s->failures == 0, "pool %s: %" PRIu64 " failures", sp->name,
                 s->failures);
    STRESS_CHECK(i != CAPPED || s->carved <= capacity, "pool %s: %" PRIu64 " carved, capacity "
                 "%zu", sp->name, s->carved, capacity);
    STRESS_CHECK(s->peak_live >= s->live && s->cached_bytes == s->cached * s->slot_size,
                 "pool %s: peak %" PRIu64 " < live %" PRIu64 " or cached_bytes %zu != %" PRIu64
                 " * %zu", sp->name, s->peak_live, s->live, s->cached_bytes, s->cached,
                 s->slot_size);
    STRESS_CHECK(advance(&ts->seen_bad[i], s->bad_frees) &&
                 advance(&ts->seen_double[i], s->double_frees) &&
                 advance(&ts->seen_failures[i], s->failures) &&
                 advance(&ts->seen_trimmed[i], s->blocks_trimmed) &&
                 advance(&ts->seen_exchanges[i], s->depot_exchanges),
                 "pool %s: a counter went down: bad %" PRIu64 " (was %" PRIu64 "), double %"
                 PRIu64 " (%" PRIu64 "), failures %" PRIu64 " (%" PRIu64 "), blocks trimmed %" PRIu64
                 " (%" PRIu64 "), exchanges %" PRIu64 " (%" PRIu64 ")", sp->name, s->bad_frees,
                 ts->seen_bad[i], s->double_frees, ts->seen_double[i], s->failures,
                 ts->seen_failures[i], s->blocks_trimmed, ts->seen_trimmed[i], s->depot_exchanges,
                 ts->seen_exchanges[i]);
}

static void *stats_main(void *arg) {
    thread_state *ts = arg;
    kiln_pool_stats out[STATS_CAP];
    while (!atomic_load_explicit(&stop_helpers, memory_order_acquire)) {
        size_t n = kiln_stats_pools(rt, out, STATS_CAP);
        ts->stats_reads++;
        STRESS_CHECK(n == NPOOLS || n == NPOOLS + 1, "kiln_stats_pools: %zu pools", n);
        for (size_t i = 0; i < n && i < STATS_CAP; i++) check_running(ts, &out[i]);
        kiln_tag_stats tags[NPOOLS + 1];   /* read while the pools take and give blocks */
        STRESS_CHECK(kiln_stats_tags(rt, tags, NPOOLS + 1) == NPOOLS + 1, "kiln_stats_tags");
        for (unsigned i = 1; i <= NPOOLS; i++)
            STRESS_CHECK(tags[i].parent == all_tag.id && tags[i].own_bytes % BLOCK_SIZE == 0 &&
                         tags[i].live_bytes % BLOCK_SIZE == 0,   /* whole blocks, each step */
                         "tag %s: %" PRIu64 " bytes", tags[i].name, tags[i].live_bytes);
        kiln_pool_stats one;
        unsigned pick = (unsigned)(ts->stats_reads % NPOOLS);
        STRESS_CHECK(kiln_pool_stats_get(pools[pick], &one), "kiln_pool_stats_get failed");
        check_running(ts, &one);
        kiln_stats s;
        STRESS_CHECK(kiln_stats_get(rt, &s), "kiln_stats_get failed");
        STRESS_CHECK(s.pools == NPOOLS || s.pools == NPOOLS + 1, "kiln_stats_get: %u pools",
                     s.pools);
        STRESS_CHECK(s.contexts <= s.worker_count + opt.threads + 1, "%u contexts (%u workers)",
                     s.contexts, s.worker_count);
        if (ts->stats_reads % 64 == 0) {
            kiln_trim(rt);
            ts->trims++;
        }
        /* Reserve and trim one pool while the workers allocate, free and flush. */
        if (ts->stats_reads % 8 == 0) {
            STRESS_CHECK(kiln_pool_reserve(pools[pick], 48) > 0 || pick == CAPPED,
                         "kiln_pool_reserve(%s) made nothing available", specs[pick].name);
            ts->reserves++;
        } else if (ts->stats_reads % 8 == 4) {
            kiln_pool_trim(pools[pick]);
            ts->pool_trims++;
        }
    }
    return NULL;
}

/* ---- the end --------------------------------------------------------------------- */

static int compare_ptr(const void *a, const void *b) {
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return (x > y) - (x < y);
}

/* With no context attached every cached object is on a depot: a fresh context takes
 * them all back (no carving), and they must be distinct; then one more alloc either
 * carves a new one or, at capacity, is refused. Everything is freed again. */
static void audit(thread_state *ts, const kiln_pool_stats *before, uint64_t *refused) {
    void **objs = malloc(AUDIT_CAP * sizeof *objs);
    if (!objs) {
        stress_fail("no memory for the audit");
        return;
    }
    ts->ctx = attach_or_die(ts);
    for (unsigned pool = 0; pool < NPOOLS; pool++) {
        const kiln_pool_stats *b = &before[pool];
        size_t n = 0;
        if (b->in_depot > AUDIT_CAP) {
            stress_fail("pool %s: %" PRIu64 " objects on the depot, the audit takes at most %d",
                        specs[pool].name, b->in_depot, AUDIT_CAP);
            continue;
        }
        while (n < b->in_depot) {
            unsigned char *p = kiln_pool_alloc(ts->ctx, pools[pool]);
            if (!p) break;
            STRESS_CHECK(((uintptr_t)p & (spec_align(pool) - 1)) == 0, "audit: %p misaligned",
                         (void *)p);
            if (specs[pool].flags & KILN_POOL_ZERO) {
                size_t nz = 0;
                while (nz < specs[pool].size && p[nz] == 0) nz++;
                STRESS_CHECK(nz == specs[pool].size, "audit: %p not zeroed", (void *)p);
            }
            objs[n++] = p;
        }
        kiln_pool_stats s;
        kiln_pool_stats_get(pools[pool], &s);
        STRESS_CHECK(n == b->in_depot && s.carved == b->carved, "pool %s: the audit took %zu of %"
                     PRIu64 " depot objects and carved %" PRIu64 " more", specs[pool].name, n,
                     b->in_depot, s.carved - b->carved);
        qsort(objs, n, sizeof *objs, compare_ptr);
        size_t dups = 0;
        for (size_t i = 1; i < n; i++) dups += objs[i] == objs[i - 1];
        STRESS_CHECK(dups == 0, "pool %s: %zu objects handed out twice by the audit",
                     specs[pool].name, dups);
        unsigned char *extra = kiln_pool_alloc(ts->ctx, pools[pool]);
        if (pool == CAPPED && b->carved == capacity) {
            STRESS_CHECK(extra == NULL, "pool %s: an alloc past the capacity (%zu) worked",
                         specs[pool].name, capacity);
            if (!extra) (*refused)++;
        } else {
            STRESS_CHECK(extra != NULL, "pool %s: the audit's extra alloc failed",
                         specs[pool].name);
        }
        if (extra) {
            STRESS_CHECK(!bsearch(&extra, objs, n, sizeof *objs, compare_ptr),
                         "pool %s: the extra object %p is also live", specs[pool].name,
                         (void *)extra);
            kiln_pool_free(ts->ctx, pools[pool], extra);
        }
        for (size_t i = 0; i < n; i++) kiln_pool_free(ts->ctx, pools[pool], objs[i]);
        kiln_pool_stats_get(pools[pool], &s);
        STRESS_CHECK(s.live == 0 && s.allocs == b->allocs + n + (extra != NULL) &&
                     s.frees == s.allocs, "pool %s: after the audit live %" PRIu64 ", allocs %"
                     PRIu64 ", frees %" PRIu64, specs[pool].name, s.live, s.allocs, s.frees);
    }
    kiln_detach(ts->ctx);
    ts->ctx = NULL;
    free(objs);
}

static void start_thread(pthread_t *thread, void *(*fn)(void *), void *arg) {
    if (pthread_create(thread, NULL, fn, arg) != 0) {
        stress_fail("pthread_create failed");
        exit(2);
    }
}

/* ---- a REFUSE budget under threads that charge at once ---------------------------- */

enum { TIGHT_BLOCKS = 4 };
static kiln_pool *tight_pool;
static kiln_tag   tight_tag;

static void *tight_main(void *arg) {
    (void)arg;
    kiln_ctx *ctx = kiln_attach(rt);
    void *held[256];
    for (uint64_t round = 0; round < opt.iterations / 2000 + 10; round++) {
        size_t n = 0;
        while (n < 256 && (held[n] = kiln_pool_alloc(ctx, tight_pool)) != NULL) n++;
        while (n > 0) kiln_pool_free(ctx, tight_pool, held[--n]);
        if (round % 4 == 3) kiln_pool_flush(ctx, tight_pool);   /* magazines move */
    }
    kiln_detach(ctx);
    return NULL;
}

static void *tight_stats_main(void *arg) {
    (void)arg;
    while (!atomic_load_explicit(&stop_helpers, memory_order_acquire)) {
        kiln_tag_stats t;
        STRESS_CHECK(kiln_tag_stats_get(rt, tight_tag, &t) && t.live_bytes % BLOCK_SIZE == 0,
                     "the tight tag: %" PRIu64 " bytes", t.live_bytes);
        kiln_trim(rt);
    }
    return NULL;
}

/* Threads fill a pool whose tag has a REFUSE budget and empty it again, while a reader
 * reads the tag and trims the block pool: the budget is never passed but by magazine
 * blocks, and quiet, the tag holds exactly the pool's blocks. */
static void check_refuse_budget(void) {
    stop_helpers = 0;
    tight_tag = kiln_tag_create(rt, &(kiln_tag_desc){ .name = "Tight", .parent = all_tag,
                                                      .budget = TIGHT_BLOCKS * BLOCK_SIZE,
                                                      .policy = KILN_BUDGET_REFUSE });
    tight_pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "tight", .size = 512, .tag = tight_tag });
    STRESS_CHECK(tight_tag.id != 0 && tight_pool != NULL, "the tight tag and pool");
    if (!tight_pool) return;
    pthread_t threads[8], stats;
    unsigned n = opt.threads < 8 ? opt.threads : 8;
    for (unsigned i = 0; i < n; i++) pthread_create(&threads[i], NULL, tight_main, NULL);
    pthread_create(&stats, NULL, tight_stats_main, NULL);
    for (unsigned i = 0; i < n; i++) pthread_join(threads[i], NULL);
    atomic_store_explicit(&stop_helpers, 1, memory_order_release);
    pthread_join(stats, NULL);
    kiln_pool_stats ps;
    kiln_tag_stats t;
    STRESS_CHECK(kiln_pool_stats_get(tight_pool, &ps) && kiln_tag_stats_get(rt, tight_tag, &t), "stats");
    STRESS_CHECK(t.peak_bytes <= (uint64_t)(TIGHT_BLOCKS + ps.magazine_blocks) * BLOCK_SIZE,
                 "the tight tag peaked at %" PRIu64 " bytes: budget %d blocks, %u magazine blocks",
                 t.peak_bytes, TIGHT_BLOCKS, ps.magazine_blocks);
    /* Every failure is a refusal (no capacity, no memory_limit); a refused carve may yet
     * be served from the depot, so not every refusal is a failure. */
    STRESS_CHECK(t.live_bytes == (uint64_t)ps.blocks_held * BLOCK_SIZE && ps.failures > 0 &&
                 ps.failures <= t.refusals && ps.live == 0,
                 "the tight tag: %" PRIu64 " bytes for %u blocks, %" PRIu64 " refusals, %" PRIu64
                 " failures, %" PRIu64 " live", t.live_bytes, ps.blocks_held, t.refusals,
                 ps.failures, ps.live);
    kiln_pool_destroy(tight_pool);
    STRESS_CHECK(kiln_tag_stats_get(rt, tight_tag, &t) && t.live_bytes == 0, "tight tag after destroy");
}

int main(int argc, char **argv) {
    opt = (stress_options){ .threads = 4, .iterations = 200000, .seed = 1 };
    if (!stress_parse(argc, argv, &opt)) return 2;
    unsigned n = opt.threads;
    /* Below what the threads want at once (up to MAX_HOLD each, plus the exchange and two
     * magazines per context): refusals come, concurrently. */
    capacity = (size_t)16 * n + 16;
    id_count = n + 3;

    rt = kiln_create(&(kiln_desc){
        .block_size = BLOCK_SIZE,
        .reserve_size = RESERVE_SIZE,
        .log = stress_log_fn, .log_user = &items_seen, .log_every_repeat = true,   /* counted one by one */
    });
    if (!rt) {
        stress_fail("kiln_create failed");
        return 1;
    }
    all_tag = kiln_tag_create(rt, &(kiln_tag_desc){ .name = "All" });
    for (unsigned i = 0; i < NPOOLS; i++) {
        pool_tags[i] = kiln_tag_create(rt, &(kiln_tag_desc){ .name = specs[i].name, .parent = all_tag });
        pools[i] = kiln_pool_create(rt, &(kiln_pool_desc){
            .tag = pool_tags[i],
            .name = specs[i].name,
            .size = specs[i].size,
            .align = specs[i].align,
            .capacity = i == CAPPED ? capacity : 0,
            .flags = specs[i].flags,
            .magazine_size = specs[i].magazine,
        });
        if (!pools[i]) {
            stress_fail("kiln_pool_create(%s) failed", specs[i].name);
            return 1;
        }
    }

    thread_state *threads = calloc(id_count, sizeof *threads);
    if (!threads) return 2;
    thread_state *churn = &threads[n], *stats = &threads[n + 1], *main_ts = &threads[n + 2];
    for (unsigned t = 0; t < id_count; t++) {
        threads[t].id = t;
        threads[t].rng = stress_rng_make(opt.seed, t);
    }
    pthread_barrier_init(&start_barrier, NULL, n + 1);

    double start = stress_seconds();
    for (unsigned t = 0; t < n; t++) start_thread(&threads[t].thread, worker_main, &threads[t]);
    pthread_barrier_wait(&start_barrier);   /* every worker is attached */
    start_thread(&churn->thread, churn_main, churn);
    start_thread(&stats->thread, stats_main, stats);
    for (unsigned t = 0; t < n; t++) pthread_join(threads[t].thread, NULL);
    atomic_store_explicit(&stop_helpers, 1, memory_order_release);
    pthread_join(churn->thread, NULL);
    pthread_join(stats->thread, NULL);
    double seconds = stress_seconds() - start;

    /* What the exchange still holds: verified and freed by main (cross-thread frees). */
    main_ts->ctx = attach_or_die(main_ts);
    for (unsigned pool = 0; pool < NPOOLS; pool++)
        for (unsigned s = 0; s < SLOTS; s++) {
            void *p = atomic_exchange_explicit(&exchange[pool][s], NULL, memory_order_acq_rel);
            if (p) receive(main_ts, pool, p);
        }
    kiln_detach(main_ts->ctx);
    main_ts->ctx = NULL;

    /* Quiet, nothing attached: the exact equations. */
    pool_counts total[NPOOLS] = { { 0 } };
    uint64_t ops = 0, verified = 0, flushes = 0;
    for (unsigned t = 0; t < id_count; t++) {
        flushes += threads[t].flushes;
        for (unsigned pool = 0; pool < NPOOLS; pool++) {
            total[pool].allocs += threads[t].c[pool].allocs;
            total[pool].frees += threads[t].c[pool].frees;
            total[pool].nulls += threads[t].c[pool].nulls;
            total[pool].sent += threads[t].c[pool].sent;
            total[pool].received += threads[t].c[pool].received;
            total[pool].cross_frees += threads[t].c[pool].cross_frees;
        }
        ops += threads[t].ops;
        verified += threads[t].verified_bytes;
    }
    kiln_pool_stats before[NPOOLS];
    uint64_t allocs = 0, cross = 0, bad = 0, dbl = 0, exchanges = 0;
    for (unsigned pool = 0; pool < NPOOLS; pool++) {
        kiln_pool_stats *s = &before[pool];
        const char *name = specs[pool].name;
        const pool_counts *c = &total[pool];
        uint64_t bad_want = atomic_load(&bad_expected[pool]);
        uint64_t dbl_want = atomic_load(&double_expected[pool]);
        STRESS_CHECK(kiln_pool_stats_get(pools[pool], s), "kiln_pool_stats_get(%s) failed", name);
        STRESS_CHECK(s->live == 0 && s->allocs == s->frees, "pool %s: live %" PRIu64 ", allocs %"
                     PRIu64 ", frees %" PRIu64, name, s->live, s->allocs, s->frees);
        STRESS_CHECK(s->allocs == c->allocs && s->frees == c->frees, "pool %s: kiln counted %"
                     PRIu64 " allocs and %" PRIu64 " frees, the threads %" PRIu64 " and %" PRIu64,
                     name, s->allocs, s->frees, c->allocs, c->frees);
        STRESS_CHECK(s->carved == s->cached + s->in_depot && s->cached == 0 && s->cached_bytes == 0,
                     "pool %s: carved %" PRIu64 " != cached %" PRIu64 " + in_depot %" PRIu64
                     " (nothing attached)", name, s->carved, s->cached, s->in_depot);
        STRESS_CHECK(s->bad_frees == bad_want && s->double_frees == dbl_want, "pool %s: %" PRIu64
                     " bad and %" PRIu64 " double frees counted, %" PRIu64 " and %" PRIu64 " made",
                     name, s->bad_frees, s->double_frees, bad_want, dbl_want);
        STRESS_CHECK(s->failures == c->nulls, "pool %s: %" PRIu64 " failures counted, the threads "
                     "saw %" PRIu64 " NULLs", name, s->failures, c->nulls);
        STRESS_CHECK(stats->seen_bad[pool] <= s->bad_frees &&
                     stats->seen_double[pool] <= s->double_frees &&
                     stats->seen_failures[pool] <= s->failures &&
                     stats->seen_trimmed[pool] <= s->blocks_trimmed &&
                     stats->seen_exchanges[pool] <= s->depot_exchanges,
                     "pool %s: the stats thread saw more than the final figures", name);
        STRESS_CHECK(c->sent == c->received, "pool %s: %" PRIu64 " objects received of %" PRIu64
                     " sent through the exchange", name, c->received, c->sent);
        STRESS_CHECK(c->allocs == 0 || (s->peak_live >= 1 && s->blocks_held >= 1 &&
                                        s->depot_exchanges >= 1),
                     "pool %s: peak %" PRIu64 ", %u blocks, %" PRIu64 " exchanges", name,
                     s->peak_live, s->blocks_held, s->depot_exchanges);
        allocs += s->allocs;
        cross += c->cross_frees;
        bad += s->bad_frees;
        dbl += s->double_frees;
        exchanges += s->depot_exchanges;
    }
    STRESS_CHECK(before[CAPPED].carved <= capacity &&
                 atomic_load(&capped_peak) <= (int64_t)capacity && atomic_load(&capped_live) == 0,
                 "pool %s: carved %" PRIu64 ", peak %" PRId64 " live %" PRId64 ", capacity %zu",
                 specs[CAPPED].name, before[CAPPED].carved, atomic_load(&capped_peak),
                 atomic_load(&capped_live), capacity);
    /* Short runs may stop before the capacity is reached; longer ones must have met it. */
    STRESS_CHECK(total[CAPPED].nulls > 0 || opt.iterations < STRESS_MIN_ITERATIONS,
                 "pool %s: the capacity %zu was never reached", specs[CAPPED].name, capacity);

    uint64_t audit_refused = 0;
    audit(main_ts, before, &audit_refused);

    kiln_stats rs;
    kiln_stats_get(rt, &rs);
    uint64_t misuse_want = atomic_load(&misuse_expected);
    STRESS_CHECK(rs.contexts <= rs.worker_count && rs.pools == NPOOLS, "%u contexts (%u workers), "
                 "%u pools", rs.contexts, rs.worker_count, rs.pools);
    STRESS_CHECK(rs.api_errors == misuse_want, "%" PRIu64 " API errors, %" PRIu64 " misuses made",
                 rs.api_errors, misuse_want);
    /* Quiet: each pool's tag holds exactly its blocks, and All their sum. */
    uint64_t tagged = 0;
    for (unsigned pool = 0; pool < NPOOLS; pool++) {
        kiln_pool_stats ps;
        kiln_tag_stats ts_;
        STRESS_CHECK(kiln_pool_stats_get(pools[pool], &ps) && kiln_tag_stats_get(rt, pool_tags[pool], &ts_),
                     "stats of %s", specs[pool].name);
        STRESS_CHECK(ts_.live_bytes == (uint64_t)ps.blocks_held * BLOCK_SIZE, "tag %s: %" PRIu64
                     " bytes charged, the pool holds %u blocks", specs[pool].name, ts_.live_bytes,
                     ps.blocks_held);
        tagged += ts_.live_bytes;
    }
    kiln_tag_stats all;
    STRESS_CHECK(kiln_tag_stats_get(rt, all_tag, &all) && all.live_bytes == tagged && all.own_bytes == 0,
                 "tag All: %" PRIu64 " bytes, its children %" PRIu64, all.live_bytes, tagged);
    for (unsigned pool = 0; pool < NPOOLS; pool++) kiln_pool_destroy(pools[pool]);
    STRESS_CHECK(kiln_tag_stats_get(rt, all_tag, &all) && all.live_bytes == 0,
                 "tag All: %" PRIu64 " bytes after the pools are gone", all.live_bytes);
    check_refuse_budget();
    /* Every pool block is back: what is in use is the frame arenas of the runtime's own
     * workers (if it has started any). */
    kiln_stats_get(rt, &rs);
    kiln_arena_stats arenas[STATS_CAP];
    size_t arena_count = kiln_stats_arenas(rt, arenas, STATS_CAP);
    uint64_t arena_blocks = 0;
    for (size_t i = 0; i < arena_count && i < STATS_CAP; i++) arena_blocks += arenas[i].blocks_held;
    STRESS_CHECK(rs.pools == 0 && kiln_stats_pools(rt, NULL, 0) == 0 &&
                 rs.blocks.blocks_in_use == arena_blocks &&
                 rs.blocks.blocks_free == rs.blocks.blocks_reserved - rs.blocks.blocks_in_use,
                 "after destroying the pools: %u pools, %" PRIu64 " blocks in use (the arenas "
                 "hold %" PRIu64 "), %" PRIu64 " free of %" PRIu64, rs.pools,
                 rs.blocks.blocks_in_use, arena_blocks, rs.blocks.blocks_free,
                 rs.blocks.blocks_reserved);
    uint64_t blocks = rs.blocks.blocks_reserved;
    kiln_destroy(rt);
    rt = NULL;

    uint64_t transients = churn->transients;
    uint64_t seen_foreign = atomic_load(&items_seen.seen[LOG_FOREIGN]);
    uint64_t seen_interior = atomic_load(&items_seen.seen[LOG_INTERIOR]);
    STRESS_CHECK(seen_foreign + seen_interior == bad, "%" PRIu64 " foreign and %" PRIu64
                 " interior pointers logged, %" PRIu64 " bad frees", seen_foreign, seen_interior,
                 bad);
    STRESS_CHECK(atomic_load(&items_seen.seen[LOG_DOUBLE]) == dbl, "%" PRIu64 " double frees logged, %"
                 PRIu64 " made", atomic_load(&items_seen.seen[LOG_DOUBLE]), dbl);
    STRESS_CHECK(atomic_load(&items_seen.seen[LOG_DESTROYED]) == 2 * transients, "%" PRIu64
                 " destroyed-pool calls logged, %" PRIu64 " made",
                 atomic_load(&items_seen.seen[LOG_DESTROYED]), 2 * transients);
    uint64_t capped_nulls = total[CAPPED].nulls + audit_refused;
    STRESS_CHECK((atomic_load(&items_seen.seen[LOG_CAPACITY]) > 0) == (capped_nulls > 0),
                 "%" PRIu64 " capacity warnings for %" PRIu64 " NULLs",
                 atomic_load(&items_seen.seen[LOG_CAPACITY]), capped_nulls);
    STRESS_CHECK(atomic_load(&items_seen.unexpected_seen) == 0, "unexpected log messages");
    pthread_barrier_destroy(&start_barrier);

    uint64_t failures = stress_failure_count();
    printf("stress-pools: %s: threads %u, iterations %" PRIu64 ", seed %" PRIu64 ", %.2fs | %"
           PRIu64 " ops, %" PRIu64 " allocs, %" PRIu64 " cross-thread frees, %" PRIu64
           " capped NULLs (peak %" PRId64 " of %zu), %" PRIu64 " depot exchanges, %" PRIu64
           " bad + %" PRIu64 " double frees refused, %" PRIu64 " attaches, %" PRIu64
           " transient pools, %" PRIu64 " stats reads, %" PRIu64 " trims, %" PRIu64 " pool reserves, %"
           PRIu64 " pool trims, %" PRIu64 " flushes, %" PRIu64 " blocks, %"
           PRIu64 " MiB verified, %" PRIu64 " failures\n",
           failures ? "FAILED" : "ok", opt.threads, opt.iterations, opt.seed, seconds, ops,
           allocs, cross, total[CAPPED].nulls, atomic_load(&capped_peak), capacity, exchanges,
           bad, dbl, churn->attaches, transients, stats->stats_reads, stats->trims, stats->reserves, stats->pool_trims, flushes, blocks,
           verified >> 20, failures);
    free(threads);
    return failures ? 1 : 0;
}
