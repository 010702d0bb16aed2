/* stress/stress_arenas.c — arenas on a real runtime under load: many threads, each
 * attached, each with an arena of its own and its frame arena, allocate (sizes 0 to
 * three blocks, alignments 1 to 4096), mark, release and reset at random, with small
 * blocks so blocks flow through the global pool all the time; they reserve block space
 * now and then (kiln_arena_reserve), and every context's frame arena reserves some when
 * it is made (desc.frame_reserve). Meanwhile a stats thread reads kiln_stats_get and
 * kiln_stats_arenas without pause and trims, whole (kiln_trim) or in steps
 * (kiln_trim_step), and two churn threads attach, allocate and detach over and over.
 *
 * Every live allocation holds a copy of a slice of its thread's random reference
 * bytes, checked with memcmp: before and after every release (what came before the
 * mark must be intact), before every reset, and one at random as an operation of
 * its own. A new allocation must not overlap a live one of its thread, and must be
 * aligned. The owner's arena statistics must match what it did (allocs, failures,
 * resets, releases; bytes in use back to the mark's figure after a release, 0 after a
 * reset). With the workers parked: blocks in use == the blocks the arenas hold; at the
 * end: nothing in use, no context, no arena, no large mapping, every pool failure
 * accounted for by a NULL some thread saw.
 *
 * Two phases on fresh runtimes: no memory_limit (no allocation may fail), then a tight
 * limit (allocations fail, concurrently). Usage: stress-arenas [--threads N]
 * [--iterations N] [--seed S]; --iterations counts each worker's operations per phase.
 * Exit status 0 when every check held. */
#include "stress_common.h"   /* first: it sets the feature macros */

#include <kiln/kiln.h>
#include <pthread.h>
#include <sched.h>

enum {
    BLOCK_SIZE   = 4096,
    RESERVE_SIZE = 16 * BLOCK_SIZE,
    FRAME_BUDGET = 8 * BLOCK_SIZE,   /* crossed now and then: the budget path runs too */
    FRAME_RESERVE = 2 * BLOCK_SIZE,  /* every context's frame arena, at attach */
    MAX_RESERVE  = 2 * BLOCK_SIZE,   /* a kiln_arena_reserve asks at most this */
    MAX_SIZE     = 3 * BLOCK_SIZE,
    MAX_ALIGN    = 4096,
    MAX_LIVE     = 48,               /* live allocations tracked per arena */
    MAX_MARKS    = 8,
    REF_SLACK    = 4096,             /* an allocation copies ref[off, off + size), off < this */
    REF_SIZE     = MAX_SIZE + REF_SLACK,
    STATS_CAP    = 256,
    CHURN_THREADS = 2,               /* threads that attach and detach over and over */
};

typedef struct live_alloc {
    unsigned char *p;
    size_t         size;
    uint32_t       off;              /* where in the thread's reference bytes it copied from */
} live_alloc;

typedef struct mark_rec {
    kiln_mark mark;
    unsigned  live_count;            /* allocations made before the mark */
    size_t    bytes_in_use;          /* the arena's figure at the mark */
} mark_rec;

/* One arena as its owner thread sees it, with the statistics it must show. */
typedef struct tracked {
    kiln_arena *arena;
    bool        is_frame;
    live_alloc  live[MAX_LIVE];
    unsigned    live_count;
    mark_rec    marks[MAX_MARKS];
    unsigned    mark_count;
    uint64_t    allocs, failures, resets, releases;
} tracked;

typedef struct thread_state {
    pthread_t      thread;
    unsigned       id;
    stress_rng     rng;
    unsigned char *ref;              /* REF_SIZE random bytes, this thread's own */
    kiln_ctx      *ctx;
    tracked        own, frame;
    uint64_t       ops, verified_bytes, frames_driven;
    uint64_t       null_allocs;      /* allocations that returned NULL (limit phase) */
    uint64_t       reserves, refused_reserves;   /* kiln_arena_reserve calls, false ones */
    uint64_t       refused_creates;  /* kiln_attach / kiln_arena_create that returned NULL */
    uint64_t       attaches;         /* churn thread */
    uint64_t       stats_reads, trims;
} thread_state;

/* Shared per phase; written by main before the threads start. */
static stress_options    opt;
static kiln_runtime     *rt;
static size_t            memory_limit;
static pthread_barrier_t start_barrier, quiet_barrier, finish_barrier;
static _Atomic int       stop_helpers;

/* ---- patterns ------------------------------------------------------------------- */

static void make_ref(thread_state *ts) {
    ts->ref = malloc(REF_SIZE);
    if (!ts->ref) {
        stress_fail("no memory for reference bytes");
        exit(2);
    }
    for (size_t i = 0; i < REF_SIZE; i += 8) {
        uint64_t x = stress_next(&ts->rng);
        memcpy(ts->ref + i, &x, 8);
    }
}

static bool verify_alloc(thread_state *ts, const tracked *t, const live_alloc *a) {
    ts->verified_bytes += a->size;
    if (memcmp(a->p, ts->ref + a->off, a->size) == 0) return true;
    size_t bad = 0;
    while (a->p[bad] == ts->ref[a->off + bad]) bad++;
    stress_fail("thread %u %s arena: allocation %p (%zu bytes) overwritten at byte %zu",
                ts->id, t->is_frame ? "frame" : "own", (void *)a->p, a->size, bad);
    return false;
}

static void verify_all(thread_state *ts, const tracked *t) {
    for (unsigned i = 0; i < t->live_count; i++) verify_alloc(ts, t, &t->live[i]);
}

/* ---- statistics the owner can predict exactly ------------------------------------ */

static size_t owner_stats(thread_state *ts, tracked *t, kiln_arena_stats *s) {
    if (!kiln_arena_stats_get(t->arena, s)) {
        stress_fail("thread %u: kiln_arena_stats_get failed", ts->id);
        return 0;
    }
    return s->bytes_in_use;
}

static void check_owner_stats(thread_state *ts, tracked *t) {
    kiln_arena_stats s;
    owner_stats(ts, t, &s);
    size_t live_bytes = 0;
    for (unsigned i = 0; i < t->live_count; i++) live_bytes += t->live[i].size;
    const char *which = t->is_frame ? "frame" : "own";
    STRESS_CHECK(s.allocs == t->allocs && s.failures == t->failures && s.resets == t->resets &&
                 s.releases == t->releases,
                 "thread %u %s arena: stats allocs/failures/resets/releases %" PRIu64 "/%" PRIu64
                 "/%" PRIu64 "/%" PRIu64 ", expected %" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64,
                 ts->id, which, s.allocs, s.failures, s.resets, s.releases, t->allocs,
                 t->failures, t->resets, t->releases);
    STRESS_CHECK(s.bytes_in_use >= live_bytes && s.peak_frame >= s.bytes_in_use &&
                 s.peak_total >= s.peak_frame,
                 "thread %u %s arena: %zu bytes in use (peaks %zu, %zu) for %zu live bytes",
                 ts->id, which, s.bytes_in_use, s.peak_frame, s.peak_total, live_bytes);
    STRESS_CHECK(s.blocks_held >= 1 && s.blocks_taken >= s.blocks_held,
                 "thread %u %s arena: %u blocks held, %" PRIu64 " taken", ts->id, which,
                 s.blocks_held, s.blocks_taken);
    STRESS_CHECK(s.budget == (t->is_frame ? (size_t)FRAME_BUDGET : 0) &&
                 s.budget_warnings <= s.resets + 1,
                 "thread %u %s arena: budget %zu, %" PRIu64 " warnings in %" PRIu64 " resets",
                 ts->id, which, s.budget, s.budget_warnings, s.resets);
}

/* ---- operations ------------------------------------------------------------------ */

static size_t random_size(stress_rng *rng) {
    uint64_t r = stress_below(rng, 100);
    if (r < 60) return (size_t)stress_below(rng, 257);
    if (r < 85) return (size_t)stress_below(rng, BLOCK_SIZE + 1);
    return (size_t)stress_below(rng, MAX_SIZE + 1);
}

/* 0 (the default, alignof(max_align_t)) or a power of two from 1 to 4096. */
static size_t random_align(stress_rng *rng) {
    if (stress_below(rng, 4) == 0) return 0;
    return (size_t)1 << stress_below(rng, 13);
}

static bool overlaps(const tracked *t, const unsigned char *p, size_t size) {
    for (unsigned i = 0; i < t->live_count; i++) {
        const live_alloc *a = &t->live[i];
        if (a->size && p < a->p + a->size && a->p < p + size) return true;
    }
    return false;
}

static void do_alloc(thread_state *ts, tracked *t) {
    size_t size = random_size(&ts->rng), align = random_align(&ts->rng);
    unsigned char *p;
    if (t->is_frame && stress_below(&ts->rng, 2) == 0) p = kiln_frame_alloc(ts->ctx, size, align);
    else p = kiln_arena_alloc(t->arena, size, align);
    if (!p) {
        t->failures++;
        ts->null_allocs++;
        STRESS_CHECK(memory_limit != 0, "thread %u: %s arena alloc of %zu bytes (align %zu) "
                     "returned NULL without a memory_limit", ts->id,
                     t->is_frame ? "frame" : "own", size, align);
        return;
    }
    t->allocs++;
    size_t want = align ? align : 16;
    STRESS_CHECK(((uintptr_t)p & (want - 1)) == 0, "thread %u: %p is not aligned to %zu", ts->id,
                 (void *)p, want);
    if (size == 0) return;   /* a valid pointer that must not be dereferenced */
    STRESS_CHECK(!overlaps(&ts->own, p, size) && !overlaps(&ts->frame, p, size),
                 "thread %u: new allocation %p (%zu bytes) overlaps a live one", ts->id,
                 (void *)p, size);
    uint32_t off = (uint32_t)stress_below(&ts->rng, REF_SLACK);
    memcpy(p, ts->ref + off, size);
    t->live[t->live_count++] = (live_alloc){ p, size, off };
}

static void do_mark(thread_state *ts, tracked *t) {
    if (t->mark_count == MAX_MARKS) return;
    kiln_arena_stats s;
    mark_rec *m = &t->marks[t->mark_count++];
    m->mark = kiln_arena_mark(t->arena);
    m->live_count = t->live_count;
    m->bytes_in_use = owner_stats(ts, t, &s);
}

/* Releases to a random mark (or now and then to {0}, the empty arena). */
static void do_release(thread_state *ts, tracked *t) {
    bool to_empty = t->mark_count == 0 || stress_below(&ts->rng, 8) == 0;
    unsigned k = to_empty ? 0 : (unsigned)stress_below(&ts->rng, t->mark_count);
    mark_rec m = to_empty ? (mark_rec){ { { 0, 0 } }, 0, 0 } : t->marks[k];
    verify_all(ts, t);
    kiln_arena_release(t->arena, m.mark);
    t->releases++;
    t->live_count = m.live_count;
    t->mark_count = k;
    verify_all(ts, t);   /* what came before the mark is intact */
    kiln_arena_stats s;
    size_t used = owner_stats(ts, t, &s);
    STRESS_CHECK(used == m.bytes_in_use, "thread %u %s arena: %zu bytes in use after release "
                 "to a mark taken at %zu", ts->id, t->is_frame ? "frame" : "own", used,
                 m.bytes_in_use);
}

static void do_reset(thread_state *ts, tracked *t) {
    verify_all(ts, t);
    if (t->is_frame && ts->id == 0) {
        /* Thread 0 drives the frame clock: its frame arena is reset by frame end. */
        kiln_frame_end(ts->ctx);
        uint64_t frame = kiln_frame_begin(ts->ctx);
        ts->frames_driven++;
        STRESS_CHECK(frame == ts->frames_driven + 1, "frame_begin returned %" PRIu64
                     ", expected %" PRIu64, frame, ts->frames_driven + 1);
    } else {
        kiln_arena_reset(t->arena);
    }
    t->resets++;
    t->live_count = 0;
    t->mark_count = 0;
    kiln_arena_stats s;
    size_t used = owner_stats(ts, t, &s);
    STRESS_CHECK(used == 0, "thread %u %s arena: %zu bytes in use after reset", ts->id,
                 t->is_frame ? "frame" : "own", used);
}

/* A reserve changes what the arena holds, never what it has in use; false only at the
 * limit (one pool refusal, counted as a NULL would be). */
static void do_reserve(thread_state *ts, tracked *t) {
    kiln_arena_stats before;
    size_t used = owner_stats(ts, t, &before);
    size_t bytes = (size_t)stress_below(&ts->rng, MAX_RESERVE + 1);
    ts->reserves++;
    if (!kiln_arena_reserve(t->arena, bytes)) {
        ts->refused_reserves++;
        STRESS_CHECK(memory_limit != 0, "thread %u: kiln_arena_reserve of %zu bytes failed "
                     "without a memory_limit", ts->id, bytes);
    }
    kiln_arena_stats after;
    STRESS_CHECK(owner_stats(ts, t, &after) == used && after.allocs == before.allocs,
                 "thread %u: a reserve changed the bytes in use (%zu)", ts->id, used);
}

static void worker_step(thread_state *ts) {
    tracked *t = stress_below(&ts->rng, 5) < 2 ? &ts->frame : &ts->own;
    uint64_t r = stress_below(&ts->rng, 100);
    if (t->live_count == MAX_LIVE) r = t->mark_count ? 70 : 78;   /* full: release or reset */
    if (r < 55) do_alloc(ts, t);
    else if (r < 65) do_mark(ts, t);
    else if (r < 77) do_release(ts, t);
    else if (r < 80) do_reset(ts, t);
    else if (r < 82) check_owner_stats(ts, t);
    else if (r < 83) do_reserve(ts, t);
    else if (t->live_count) verify_alloc(ts, t, &t->live[stress_below(&ts->rng, t->live_count)]);
    ts->ops++;
}

static void *worker_main(void *arg) {
    thread_state *ts = arg;
    make_ref(ts);
    ts->ctx = kiln_attach(rt);
    char name[48];
    snprintf(name, sizeof name, "stress t%u", ts->id);
    kiln_arena *own = ts->ctx ? kiln_arena_create(rt, name) : NULL;
    if (!ts->ctx || !own) {
        stress_fail("thread %u: kiln_attach or kiln_arena_create failed at start", ts->id);
        exit(2);
    }
    ts->own.arena = own;
    ts->frame = (tracked){ .arena = kiln_frame_arena(ts->ctx), .is_frame = true };
    if (ts->id == 0) {
        uint64_t frame = kiln_frame_begin(ts->ctx);
        STRESS_CHECK(frame == 1, "the first kiln_frame_begin returned %" PRIu64, frame);
    }
    pthread_barrier_wait(&start_barrier);

    for (uint64_t i = 0; i < opt.iterations; i++) worker_step(ts);
    verify_all(ts, &ts->own);
    verify_all(ts, &ts->frame);
    check_owner_stats(ts, &ts->own);
    check_owner_stats(ts, &ts->frame);

    pthread_barrier_wait(&quiet_barrier);    /* main checks the quiet-state equations */
    pthread_barrier_wait(&finish_barrier);
    if (ts->id == 0) kiln_frame_end(ts->ctx);
    kiln_arena_destroy(ts->own.arena);
    kiln_detach(ts->ctx);
    free(ts->ref);
    return NULL;
}

/* ---- helper threads -------------------------------------------------------------- */

static bool name_is_known(const char *name) {
    if (memchr(name, '\0', 48) == NULL) return false;
    return strncmp(name, "stress t", 8) == 0 || strncmp(name, "frame ctx ", 10) == 0 ||
           strcmp(name, "stress churn") == 0;
}

/* Reads the statistics without pause (they must be race-free) and trims now and then. */
static void *stats_main(void *arg) {
    thread_state *ts = arg;
    static kiln_arena_stats arenas[STATS_CAP];   /* this thread's only */
    while (!atomic_load_explicit(&stop_helpers, memory_order_acquire)) {
        kiln_stats s;
        if (!kiln_stats_get(rt, &s)) stress_fail("kiln_stats_get failed");
        ts->stats_reads++;
        STRESS_CHECK(s.api_errors == 0, "%" PRIu64 " API errors", s.api_errors);
        STRESS_CHECK(s.contexts <= opt.threads + CHURN_THREADS &&
                     s.arenas <= 2 * (opt.threads + CHURN_THREADS),
                     "%u contexts, %u arenas", s.contexts, s.arenas);
        STRESS_CHECK(s.blocks.block_size == BLOCK_SIZE && s.blocks.memory_limit == memory_limit,
                     "block_size %zu, memory_limit %zu", s.blocks.block_size,
                     s.blocks.memory_limit);
        if (memory_limit) {
            STRESS_CHECK(s.blocks.reserved_bytes <= memory_limit &&
                         s.blocks.peak_reserved_bytes <= memory_limit,
                         "reserved %zu (peak %zu) over the limit %zu", s.blocks.reserved_bytes,
                         s.blocks.peak_reserved_bytes, memory_limit);
        }
        size_t n = kiln_stats_arenas(rt, arenas, STATS_CAP);
        for (size_t i = 0; i < n && i < STATS_CAP; i++) {
            const kiln_arena_stats *a = &arenas[i];
            STRESS_CHECK(name_is_known(a->name), "an arena with a bad name: '%.48s'", a->name);
            STRESS_CHECK(a->peak_frame >= a->bytes_in_use && a->peak_total >= a->bytes_in_use &&
                         a->blocks_held >= 1,
                         "arena '%.48s': %zu bytes in use, peaks %zu/%zu, %u blocks held",
                         a->name, a->bytes_in_use, a->peak_frame, a->peak_total, a->blocks_held);
            STRESS_CHECK(a->bytes_in_use <= (size_t)a->blocks_held * BLOCK_SIZE +
                                                (size_t)(MAX_LIVE + 8) * (MAX_SIZE + MAX_ALIGN),
                         "arena '%.48s': %zu bytes in use is more than it can hold", a->name,
                         a->bytes_in_use);
        }
        (void)kiln_frame_number(rt);
        if (ts->stats_reads % 64 == 0) {
            kiln_trim(rt);
            ts->trims++;
        } else if (ts->stats_reads % 16 == 0) {
            /* A slice; whatever it says is left may be stale by the time it returns. */
            size_t left = kiln_trim_step(rt, 1 + (size_t)stress_below(&ts->rng, 8));
            kiln_stats after;   /* blocks_reserved never shrinks: read later, it bounds left */
            if (!kiln_stats_get(rt, &after)) stress_fail("kiln_stats_get failed");
            STRESS_CHECK(left <= after.blocks.blocks_reserved, "trim_step says %zu resident free "
                         "blocks of %" PRIu64 " reserved", left, after.blocks.blocks_reserved);
            ts->trims++;
        }
    }
    return NULL;
}

/* Attaches, uses its frame arena and an arena of its own, detaches; over and over. */
static void *churn_main(void *arg) {
    thread_state *ts = arg;
    make_ref(ts);
    while (!atomic_load_explicit(&stop_helpers, memory_order_acquire)) {
        ts->ctx = kiln_attach(rt);
        if (!ts->ctx) {
            ts->refused_creates++;
            STRESS_CHECK(memory_limit != 0, "kiln_attach failed without a memory_limit");
            sched_yield();
            continue;
        }
        ts->attaches++;
        ts->frame = (tracked){ .arena = kiln_frame_arena(ts->ctx), .is_frame = true };
        ts->own = (tracked){ .arena = NULL };
        bool with_arena = stress_below(&ts->rng, 2) == 0;
        if (with_arena) {
            ts->own.arena = kiln_arena_create(rt, "stress churn");
            if (!ts->own.arena) {
                ts->refused_creates++;
                STRESS_CHECK(memory_limit != 0, "kiln_arena_create failed without a memory_limit");
            }
        }
        unsigned steps = 4 + (unsigned)stress_below(&ts->rng, 24);
        for (unsigned i = 0; i < steps && ts->frame.live_count < MAX_LIVE; i++) {
            do_alloc(ts, &ts->frame);
            if (ts->own.arena && ts->own.live_count < MAX_LIVE) do_alloc(ts, &ts->own);
        }
        if (ts->own.arena) {
            do_mark(ts, &ts->own);
            do_alloc(ts, &ts->own);
            do_release(ts, &ts->own);
            check_owner_stats(ts, &ts->own);
            verify_all(ts, &ts->own);
            kiln_arena_destroy(ts->own.arena);
        }
        check_owner_stats(ts, &ts->frame);
        if (stress_below(&ts->rng, 2) == 0) do_reset(ts, &ts->frame);
        else verify_all(ts, &ts->frame);
        kiln_detach(ts->ctx);   /* takes the frame arena, live allocations and all */
        ts->ctx = NULL;
    }
    free(ts->ref);
    return NULL;
}

/* ---- one phase ------------------------------------------------------------------ */

typedef struct phase_result {
    uint64_t ops, null_allocs, attaches, stats_reads, trims, frames, blocks_reserved, gets;
    uint64_t verified_bytes;
    double   seconds;
} phase_result;

static void start_thread(pthread_t *thread, void *(*fn)(void *), void *arg) {
    if (pthread_create(thread, NULL, fn, arg) != 0) {
        stress_fail("pthread_create failed");
        exit(2);
    }
}

static phase_result run_phase(const char *name, size_t limit) {
    phase_result result = { 0 };
    static const char *const expected_items[] = { "MEMORY_LIMIT_REACHED", "FRAME_BUDGET_EXCEEDED",
                                                   "FRAME_BUDGET_NEAR", "MEMORY_LIMIT_NEAR",
                                                   "ARENA_RESERVE_FAILED",
                                                   /* an attach whose frame_reserve the limit refused */
                                                   "CONTEXT_OUT_OF_MEMORY", NULL };
    static const char *const expected_unlimited[] = { "FRAME_BUDGET_EXCEEDED", "FRAME_BUDGET_NEAR",
                                                      NULL };
    stress_log log = { .expected = limit ? expected_items : expected_unlimited };
    memory_limit = limit;
    /* No workers: this program's threads are its own, and its accounting counts every
     * context and frame arena (stress-jobs covers the workers). */
    rt = kiln_create(&(kiln_desc){
        .worker_count = KILN_NO_WORKERS,
        .block_size = BLOCK_SIZE,
        .reserve_size = RESERVE_SIZE,
        .memory_limit = limit,
        .frame_budget = FRAME_BUDGET,
        .frame_reserve = FRAME_RESERVE,
        .log = stress_log_fn, .log_every_repeat = true,   /* counted one by one */
        .log_user = &log,
    });
    if (!rt) {
        stress_fail("%s: kiln_create failed", name);
        return result;
    }
    unsigned n = opt.threads;
    thread_state *workers = calloc(n + 1 + CHURN_THREADS, sizeof *workers);
    if (!workers) exit(2);
    thread_state *stats = &workers[n], *churn = &workers[n + 1];
    for (unsigned t = 0; t < n + 1 + CHURN_THREADS; t++) {
        workers[t].id = t;
        workers[t].rng = stress_rng_make(opt.seed, (uint64_t)(limit != 0) * 1000 + t);
    }
    atomic_store(&stop_helpers, 0);
    pthread_barrier_init(&start_barrier, NULL, n + 1);
    pthread_barrier_init(&quiet_barrier, NULL, n + 1);
    pthread_barrier_init(&finish_barrier, NULL, n + 1);

    double start = stress_seconds();
    for (unsigned t = 0; t < n; t++) start_thread(&workers[t].thread, worker_main, &workers[t]);
    pthread_barrier_wait(&start_barrier);   /* every worker is attached with its arena */
    start_thread(&stats->thread, stats_main, stats);
    for (unsigned c = 0; c < CHURN_THREADS; c++)
        start_thread(&churn[c].thread, churn_main, &churn[c]);
    pthread_barrier_wait(&quiet_barrier);   /* the workers are done and parked */
    atomic_store_explicit(&stop_helpers, 1, memory_order_release);
    pthread_join(stats->thread, NULL);
    for (unsigned c = 0; c < CHURN_THREADS; c++) pthread_join(churn[c].thread, NULL);

    /* Quiet: the workers hold their arenas, nothing else runs. */
    uint64_t expected_failures = 0;
    for (unsigned t = 0; t < n; t++) expected_failures += workers[t].null_allocs + workers[t].refused_reserves;
    for (unsigned c = 0; c < CHURN_THREADS; c++)
        expected_failures += churn[c].null_allocs + churn[c].refused_creates;
    kiln_stats s;
    kiln_stats_get(rt, &s);
    static kiln_arena_stats arenas[STATS_CAP];
    size_t count = kiln_stats_arenas(rt, arenas, STATS_CAP);
    uint64_t held = 0;
    for (size_t i = 0; i < count && i < STATS_CAP; i++) held += arenas[i].blocks_held;
    STRESS_CHECK(s.contexts == n && s.arenas == 2 * n && count == 2 * n,
                 "%s: %u contexts and %u (%zu) arenas with %u workers parked", name, s.contexts,
                 s.arenas, count, n);
    STRESS_CHECK(held == s.blocks.blocks_in_use, "%s: the arenas hold %" PRIu64
                 " blocks, the pool has %" PRIu64 " in use", name, held, s.blocks.blocks_in_use);
    STRESS_CHECK(s.blocks.blocks_in_use + s.blocks.blocks_free == s.blocks.blocks_reserved,
                 "%s: in use %" PRIu64 " + free %" PRIu64 " != reserved %" PRIu64, name,
                 s.blocks.blocks_in_use, s.blocks.blocks_free, s.blocks.blocks_reserved);
    STRESS_CHECK(s.blocks.failures == expected_failures, "%s: the pool counted %" PRIu64
                 " failures, the threads saw %" PRIu64 " NULLs", name, s.blocks.failures,
                 expected_failures);
    STRESS_CHECK(s.api_errors == 0, "%s: %" PRIu64 " API errors", name, s.api_errors);

    pthread_barrier_wait(&finish_barrier);   /* the workers destroy and detach */
    for (unsigned t = 0; t < n; t++) pthread_join(workers[t].thread, NULL);
    result.seconds = stress_seconds() - start;

    kiln_stats_get(rt, &s);
    STRESS_CHECK(s.blocks.blocks_in_use == 0, "%s: %" PRIu64 " blocks in use at the end", name,
                 s.blocks.blocks_in_use);
    STRESS_CHECK(s.blocks.blocks_free == s.blocks.blocks_reserved, "%s: %" PRIu64
                 " free of %" PRIu64 " reserved", name, s.blocks.blocks_free,
                 s.blocks.blocks_reserved);
    STRESS_CHECK(s.contexts == 0 && s.arenas == 0 && kiln_stats_arenas(rt, NULL, 0) == 0,
                 "%s: %u contexts, %u arenas left", name, s.contexts, s.arenas);
    STRESS_CHECK(s.blocks.large_mappings == 0 &&
                 s.blocks.reserved_bytes == s.blocks.blocks_reserved * BLOCK_SIZE,
                 "%s: %" PRIu64 " large mappings left, %zu bytes reserved for %" PRIu64 " blocks",
                 name, s.blocks.large_mappings, s.blocks.reserved_bytes, s.blocks.blocks_reserved);
    STRESS_CHECK(s.blocks.failures == expected_failures, "%s: %" PRIu64 " pool failures, %" PRIu64
                 " expected", name, s.blocks.failures, expected_failures);
    STRESS_CHECK(s.frame == workers[0].frames_driven + 1, "%s: frame %" PRIu64 " after %" PRIu64
                 " frames driven", name, s.frame, workers[0].frames_driven + 1);
    if (limit) {
        STRESS_CHECK(s.blocks.peak_reserved_bytes <= limit, "%s: peak reserved %zu over the "
                     "limit %zu", name, s.blocks.peak_reserved_bytes, limit);
        /* Short runs may stop before the limit; longer ones must have met it. */
        STRESS_CHECK(expected_failures > 0 || opt.iterations < STRESS_MIN_ITERATIONS,
                     "%s: the limit of %zu bytes was never reached", name, limit);
    }
    kiln_destroy(rt);   /* nothing left: any STILL_ALIVE message is a failure */
    rt = NULL;
    STRESS_CHECK(atomic_load(&log.unexpected_seen) == 0, "%s: unexpected log messages", name);
    pthread_barrier_destroy(&start_barrier);
    pthread_barrier_destroy(&quiet_barrier);
    pthread_barrier_destroy(&finish_barrier);

    for (unsigned t = 0; t < n; t++) {
        result.ops += workers[t].ops;
        result.null_allocs += workers[t].null_allocs;
        result.verified_bytes += workers[t].verified_bytes;
    }
    for (unsigned c = 0; c < CHURN_THREADS; c++) {
        result.null_allocs += churn[c].null_allocs;
        result.attaches += churn[c].attaches;
    }
    result.stats_reads = stats->stats_reads;
    result.trims = stats->trims;
    result.frames = workers[0].frames_driven;
    result.blocks_reserved = s.blocks.blocks_reserved;
    result.gets = s.blocks.gets;
    free(workers);
    return result;
}

int main(int argc, char **argv) {
    opt = (stress_options){ .threads = 4, .iterations = 100000, .seed = 1 };
    if (!stress_parse(argc, argv, &opt)) return 2;
    /* Tight: the first block of every arena of every thread, and room for about what
     * one busy thread needs, so refusals come even when the threads barely overlap. */
    size_t tight = ((size_t)(opt.threads + CHURN_THREADS) * 2 + 24) * BLOCK_SIZE;
    struct {
        const char *name;
        size_t      limit;
    } phases[] = { { "unlimited", 0 }, { "limited", tight } };
    double start = stress_seconds();
    char summary[1024];
    size_t used = 0;
    for (size_t p = 0; p < sizeof phases / sizeof phases[0]; p++) {
        phase_result r = run_phase(phases[p].name, phases[p].limit);
        used += (size_t)snprintf(summary + used, sizeof summary - used,
                         " | %s: %" PRIu64 " ops, %" PRIu64 " NULL, %" PRIu64 " block gets, %"
                         PRIu64 " blocks, %" PRIu64 " frames, %" PRIu64 " attaches, %" PRIu64
                         " stats reads, %" PRIu64 " trims, %" PRIu64 " MiB verified, %.2fs",
                         phases[p].name, r.ops, r.null_allocs, r.gets, r.blocks_reserved,
                         r.frames, r.attaches, r.stats_reads, r.trims, r.verified_bytes >> 20,
                         r.seconds);
        if (used >= sizeof summary) used = sizeof summary - 1;   /* truncated, never past */
    }
    uint64_t failures = stress_failure_count();
    printf("stress-arenas: %s: threads %u, iterations %" PRIu64 ", seed %" PRIu64 ", %.2fs%s, %"
           PRIu64 " failures\n", failures ? "FAILED" : "ok", opt.threads, opt.iterations,
           opt.seed, stress_seconds() - start, summary, failures);
    return failures ? 1 : 0;
}
