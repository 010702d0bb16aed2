/* tests/test_jobs.c — the job scheduler: every job runs exactly once, nested jobs and
 * waits inside jobs, parallel_for coverage and its ranges on the caller as jobs, frame
 * end waiting for counter-less jobs, frame memory from jobs, idle workers asleep, pinned
 * jobs, priorities, background jobs, bad input, a runtime without workers, and destroy
 * with idle workers.
 *
 * Criterion's assertions must run on the test's own thread, so a job records what it
 * found wrong with JOB_CHECK and the test asserts afterwards that nothing was.
 * Whenever the main thread must not run jobs (to prove a worker ran them), it spins on
 * an atomic with sched_yield and calls no kiln function until the jobs are done. */
#define _GNU_SOURCE   /* pthread_getcpuclockid, sched_yield */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "job_check.h"
#include "recording_log.h"
#include "runtime/types.h"   /* contexts' job arenas, made on first use */

#define MAX_WORKERS 8

static recording_log *rec;
static kiln_runtime  *rt;
static kiln_ctx      *main_ctx;
static pthread_t      main_thread;


#define assert_no_log() \
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec))

/* ---------- fixture ---------- */

static void setup(void) {
    rec = recording_log_new();
    job_checks_reset();
    main_thread = pthread_self();
}

static void teardown(void) { recording_fixture_end(&main_ctx, &rt, &rec); }

/* The timeout only turns a deadlock into a failed test; nothing passes or fails by it. */
TestSuite(jobs, .init = setup, .fini = teardown, .timeout = 60);

static kiln_runtime *create_runtime_from(const kiln_desc *desc) {
    kiln_runtime *r = kiln_create(desc);
    cr_assert_not_null(r, "kiln_create failed:%s", recorded_summary(rec));
    return r;
}

static kiln_runtime *create_runtime(uint32_t workers, uint32_t debug) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = workers;   /* recording_desc says KILN_NO_WORKERS */
    desc.debug = debug;
    return create_runtime_from(&desc);
}

static void attach_main(void) {
    main_ctx = kiln_attach(rt);
    cr_assert_not_null(main_ctx, "kiln_attach failed:%s", recorded_summary(rec));
}

/* The suite's runtime with this many workers (or KILN_NO_WORKERS) and main_ctx. */
static void start(uint32_t workers, uint32_t debug) {
    rt = create_runtime(workers, debug);
    attach_main();
}

static kiln_stats runtime_stats(void) {
    kiln_stats s;
    cr_assert(kiln_stats_get(rt, &s));
    return s;
}

static kiln_arena_stats arena_stats(const kiln_arena *arena) {
    kiln_arena_stats s;
    cr_assert(kiln_arena_stats_get(arena, &s));
    return s;
}

/* Every context's stats (workers and attached threads); returns how many. */
static size_t context_stats(kiln_ctx_stats *out, size_t cap) {
    size_t n = kiln_stats_contexts(rt, out, cap);
    cr_assert_leq(n, cap);
    return n;
}

static uint64_t total_jobs_run(void) {
    kiln_ctx_stats s[MAX_WORKERS + 2];
    size_t n = context_stats(s, MAX_WORKERS + 2);
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) sum += s[i].jobs_run;
    return sum;
}

static void spin_until(_Atomic unsigned *value, unsigned at_least) {
    while (atomic_load(value) < at_least) sched_yield();
}

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns) {
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static void busy_ns(uint64_t ns) {
    uint64_t end = mono_ns() + ns;
    while (mono_ns() < end) {
    }
}

static bool counter_is_zero(const kiln_counter *c) {   /* never counted on: untouched */
    return c->opaque[0] == 0 && c->opaque[1] == 0;
}

/* ---------- worker census: each worker runs one job, which says who it is ---------- */

typedef struct census {
    unsigned         expected;
    _Atomic unsigned claimed;    /* slots handed out */
    _Atomic unsigned arrived;    /* slots filled */
    kiln_ctx        *ctx[MAX_WORKERS];
    pthread_t        thread[MAX_WORKERS];
    clockid_t        clock[MAX_WORKERS];
    int              clock_rc[MAX_WORKERS];
} census;

/* Fills a slot, then waits until every expected worker has: so no worker can take two
 * of these jobs, and each worker takes exactly one. */
static void census_job(kiln_ctx *ctx, void *arg) {
    census *c = arg;
    unsigned i = atomic_fetch_add(&c->claimed, 1);
    JOB_CHECK(i < c->expected);
    if (i >= c->expected) return;
    c->ctx[i] = ctx;
    c->thread[i] = pthread_self();
    c->clock_rc[i] = pthread_getcpuclockid(pthread_self(), &c->clock[i]);
    atomic_fetch_add(&c->arrived, 1);
    while (atomic_load(&c->arrived) < c->expected) sched_yield();
}

/* Learns every worker's context and thread. The main thread runs none of the jobs. */
static void census_take(census *c, unsigned workers) {
    cr_assert_leq(workers, MAX_WORKERS);
    memset(c, 0, sizeof *c);
    c->expected = workers;
    kiln_job jobs[MAX_WORKERS];
    for (unsigned i = 0; i < workers; i++) jobs[i] = (kiln_job){ census_job, c };
    kiln_counter done = { { 0, 0 } };
    kiln_run(main_ctx, jobs, workers, &done);
    spin_until(&c->arrived, workers);   /* no kiln call: main runs none of them */
    kiln_wait(main_ctx, &done);
    assert_no_job_failures();
    for (unsigned i = 0; i < workers; i++) {
        cr_assert_neq(c->ctx[i], main_ctx, "a census job ran on the main context");
        cr_assert(!pthread_equal(c->thread[i], main_thread), "a census job ran on the main thread");
        cr_assert_eq(c->clock_rc[i], 0, "pthread_getcpuclockid failed");
        for (unsigned j = 0; j < i; j++) {
            cr_assert_neq(c->ctx[i], c->ctx[j], "one worker context ran two census jobs");
            cr_assert(!pthread_equal(c->thread[i], c->thread[j]), "one thread ran two census jobs");
        }
    }
    kiln_ctx_stats s[MAX_WORKERS + 2];
    size_t n = context_stats(s, MAX_WORKERS + 2);
    size_t worker_entries = 0;
    for (size_t i = 0; i < n; i++) worker_entries += s[i].is_worker;
    cr_assert_eq(worker_entries, workers);
}

/* ---------- 1. every job runs exactly once ---------- */

#define ONCE_JOBS  100000
#define ONCE_BATCH 1000

static _Atomic uint32_t *once_tally;

static void once_job(kiln_ctx *ctx, void *arg) {
    JOB_CHECK(ctx != NULL);
    atomic_fetch_add_explicit(&once_tally[(uintptr_t)arg], 1, memory_order_relaxed);
}

Test(jobs, every_job_runs_exactly_once) {
    start(3, 0);
    once_tally = calloc(ONCE_JOBS, sizeof *once_tally);
    kiln_job *jobs = malloc(ONCE_JOBS * sizeof *jobs);
    cr_assert(once_tally && jobs);
    for (size_t i = 0; i < ONCE_JOBS; i++) jobs[i] = (kiln_job){ once_job, (void *)(uintptr_t)i };
    uint64_t run_before = total_jobs_run();

    /* Ten rounds of ten batches on one counter, each round waited for. */
    for (size_t round = 0; round < ONCE_JOBS / (10 * ONCE_BATCH); round++) {
        kiln_counter done = { { 0, 0 } };
        for (size_t b = 0; b < 10; b++)
            kiln_run(main_ctx, jobs + (round * 10 + b) * ONCE_BATCH, ONCE_BATCH, &done);
        kiln_wait(main_ctx, &done);
        cr_assert_eq(counter_jobs(&done), 0, "the counter reads zero");
        for (size_t i = 0; i < (round + 1) * 10 * ONCE_BATCH; i++)
            cr_assert_eq(atomic_load(&once_tally[i]), 1, "job %zu ran %u times after round %zu", i,
                         atomic_load(&once_tally[i]), round);
        for (size_t i = (round + 1) * 10 * ONCE_BATCH; i < ONCE_JOBS; i++)
            cr_assert_eq(atomic_load(&once_tally[i]), 0, "job %zu ran before it was submitted", i);
    }

    assert_no_job_failures();
    cr_assert_eq(total_jobs_run() - run_before, ONCE_JOBS, "the contexts' jobs_run add up");
    kiln_ctx_stats s[MAX_WORKERS + 2];
    size_t n = context_stats(s, MAX_WORKERS + 2);
    for (size_t i = 0; i < n; i++)
        if (!s[i].is_worker) cr_assert_eq(s[i].jobs_submitted, ONCE_JOBS);
    assert_no_log();
    free(jobs);
    free(once_tally);
}

/* Several attached threads submit and wait at once, beside the workers. */
#define MT_THREADS 3
#define MT_JOBS    20000

typedef struct mt_thread {
    _Atomic uint32_t *tally;
    int               failures;
} mt_thread;

static void mt_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    atomic_fetch_add_explicit((_Atomic uint32_t *)arg, 1, memory_order_relaxed);
}

static void *mt_main(void *arg) {
    mt_thread *t = arg;
    kiln_ctx *ctx = kiln_attach(rt);
    if (!ctx) {
        t->failures++;
        return NULL;
    }
    kiln_job batch[500];
    for (size_t base = 0; base < MT_JOBS; base += 500) {
        for (size_t i = 0; i < 500; i++) batch[i] = (kiln_job){ mt_job, &t->tally[base + i] };
        kiln_counter done = { { 0, 0 } };
        kiln_run(ctx, batch, 500, &done);
        kiln_wait(ctx, &done);
        for (size_t i = 0; i < 500; i++)
            if (atomic_load_explicit(&t->tally[base + i], memory_order_relaxed) != 1) t->failures++;
    }
    kiln_detach(ctx);
    return NULL;
}

Test(jobs, attached_threads_submit_and_wait_at_once) {
    start(2, 0);
    pthread_t threads[MT_THREADS];
    mt_thread state[MT_THREADS];
    for (int i = 0; i < MT_THREADS; i++) {
        state[i] = (mt_thread){ calloc(MT_JOBS, sizeof(_Atomic uint32_t)), 0 };
        cr_assert_not_null(state[i].tally);
        cr_assert_eq(pthread_create(&threads[i], NULL, mt_main, &state[i]), 0);
    }
    for (int i = 0; i < MT_THREADS; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < MT_THREADS; i++) {
        cr_assert_eq(state[i].failures, 0, "thread %d saw %d jobs not run exactly once at its wait", i,
                     state[i].failures);
        for (size_t j = 0; j < MT_JOBS; j++) cr_assert_eq(atomic_load(&state[i].tally[j]), 1);
        free(state[i].tally);
    }
    cr_assert_eq(runtime_stats().contexts, 3, "two workers and main are left");
    assert_no_log();
}

/* ---------- 2. nested fib ---------- */

typedef struct fib_arg {
    int  n;
    long result;
} fib_arg;

/* Each job runs its two children and waits for them on a counter of its own. */
static void fib_job(kiln_ctx *ctx, void *arg) {
    fib_arg *a = arg;
    if (a->n < 2) {
        a->result = a->n;
        return;
    }
    fib_arg left = { a->n - 1, -1 }, right = { a->n - 2, -1 };
    kiln_job jobs[2] = { { fib_job, &left }, { fib_job, &right } };
    kiln_counter done = { { 0, 0 } };
    kiln_run(ctx, jobs, 2, &done);
    kiln_wait(ctx, &done);
    JOB_CHECK(counter_jobs(&done) == 0);
    a->result = left.result + right.result;
}

static long fib_by_jobs(int n) {
    fib_arg root = { n, -1 };
    kiln_counter done = { { 0, 0 } };
    kiln_run(main_ctx, &(kiln_job){ fib_job, &root }, 1, &done);
    kiln_wait(main_ctx, &done);
    return root.result;
}

Test(jobs, nested_fib_20) {
    start(3, 0);
    uint64_t run_before = total_jobs_run();
    cr_assert_eq(fib_by_jobs(20), 6765);
    /* fib(20) by this recursion is 2 * fib(21) - 1 = 21891 jobs. */
    cr_assert_eq(total_jobs_run() - run_before, 21891);
    cr_assert_eq(fib_by_jobs(1), 1);
    cr_assert_eq(fib_by_jobs(0), 0);
    assert_no_job_failures();
    assert_no_log();
}

Test(jobs, nested_fib_on_one_worker) {
    start(1, 0);
    cr_assert_eq(fib_by_jobs(18), 2584);
    assert_no_job_failures();
    assert_no_log();
}

/* ---------- 3. parallel_for ---------- */

typedef struct pf_check {
    size_t            count, grain;
    _Atomic uint8_t  *hits;
    _Atomic unsigned  bad_ranges;
    _Atomic size_t    ranges;
    _Atomic unsigned  null_ctx;
} pf_check;

static void pf_fn(kiln_ctx *ctx, size_t begin, size_t end, void *arg) {
    pf_check *c = arg;
    atomic_fetch_add(&c->ranges, 1);
    if (!ctx) atomic_fetch_add(&c->null_ctx, 1);
    /* Non-empty, within bounds, and split down to at most grain indices. */
    if (begin >= end || end > c->count || (c->grain && end - begin > c->grain)) {
        atomic_fetch_add(&c->bad_ranges, 1);
        return;
    }
    for (size_t i = begin; i < end; i++) atomic_fetch_add_explicit(&c->hits[i], 1, memory_order_relaxed);
}

/* Runs parallel_for over count with grain from ctx; returns the first index hit a
 * number of times other than once, or SIZE_MAX when there is none (c counts the ranges
 * and the bad ones). */
static size_t pf_run(kiln_ctx *ctx, pf_check *c, size_t count, size_t grain) {
    c->count = count;
    c->grain = grain;
    atomic_store(&c->bad_ranges, 0);
    atomic_store(&c->ranges, 0);
    atomic_store(&c->null_ctx, 0);
    for (size_t i = 0; i < count; i++) atomic_store_explicit(&c->hits[i], 0, memory_order_relaxed);
    kiln_parallel_for(ctx, count, grain, pf_fn, c);
    for (size_t i = 0; i < count; i++)
        if (atomic_load_explicit(&c->hits[i], memory_order_relaxed) != 1) return i;
    return SIZE_MAX;
}

Test(jobs, parallel_for_covers_every_index_once) {
    start(3, 0);
    static const size_t counts[] = { 0, 1, 2, 3, 7, 64, 1000, 100003 };
    static const size_t grains[] = { 0, 1, 2, 5, 64, 1000, 200000 };
    pf_check c = { 0 };
    c.hits = calloc(100003, sizeof *c.hits);
    cr_assert_not_null(c.hits);
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
        for (size_t gi = 0; gi < sizeof grains / sizeof grains[0]; gi++) {
            size_t count = counts[ci], grain = grains[gi];
            size_t wrong = pf_run(main_ctx, &c, count, grain);
            cr_assert_eq(wrong, SIZE_MAX, "count %zu grain %zu: index %zu hit %u times", count,
                         grain, wrong, wrong == SIZE_MAX ? 0 : atomic_load(&c.hits[wrong]));
            cr_assert_eq(atomic_load(&c.bad_ranges), 0,
                         "count %zu grain %zu: an empty, out-of-bounds or oversized range", count, grain);
            cr_assert_eq(atomic_load(&c.null_ctx), 0);
            size_t ranges = atomic_load(&c.ranges);
            if (count == 0) cr_assert_eq(ranges, 0, "count 0 calls fn %zu times", ranges);
            else if (grain >= count) cr_assert_eq(ranges, 1, "count %zu grain %zu: %zu ranges", count, grain, ranges);
            else if (grain == 1) cr_assert_eq(ranges, count, "grain 1 makes one range per index");
            else cr_assert(ranges >= 1 && ranges <= count);
        }
    }
    free(c.hits);
    assert_no_log();
}

/* The ranges of a parallel_for that run on the caller's context: every one of them,
 * the lowest included (the caller runs it in place), is a job running on that context,
 * so the calls refused inside a job are refused there. The other ranges, on workers,
 * call nothing: which ones a worker steals varies from run to run. */
#define PF_INSIDE_COUNT 4

static _Atomic unsigned pf_inside_on_caller, pf_inside_first_on_caller;
static uint64_t         pf_inside_frame;   /* the open frame; written before the call */

static void pf_inside_fn(kiln_ctx *ctx, size_t begin, size_t end, void *arg) {
    (void)end;
    (void)arg;
    if (ctx != main_ctx) return;
    atomic_fetch_add(&pf_inside_on_caller, 1);
    if (begin == 0) atomic_store(&pf_inside_first_on_caller, 1);
    unsigned char *mine = kiln_frame_alloc(ctx, 256, 16);
    JOB_CHECK(mine != NULL);
    if (!mine) return;
    memset(mine, 0x3C, 256);
    kiln_arena_reset(kiln_frame_arena(ctx));    /* ARENA_RESET_INSIDE_JOB */
    kiln_frame_end(ctx);                        /* FRAME_INSIDE_JOB */
    JOB_CHECK(kiln_frame_begin(ctx) == pf_inside_frame);   /* FRAME_INSIDE_JOB */
    kiln_detach(ctx);                           /* CONTEXT_INSIDE_JOB */
    JOB_CHECK(kiln_frame_number(rt) == pf_inside_frame);   /* the frame stays open */
    JOB_CHECK(kiln_frame_alloc(ctx, 16, 16) != NULL);      /* the context stays attached */
    for (int i = 0; i < 256; i++) JOB_CHECK(mine[i] == 0x3C);   /* the arena was not reset */
}

/* One frame's parallel_for from the driver; the refusals come in fours, one of each
 * per range that ran on main_ctx; returns how many did. */
static unsigned pf_inside_run(void) {
    atomic_store(&pf_inside_on_caller, 0);
    atomic_store(&pf_inside_first_on_caller, 0);
    pf_inside_frame = kiln_frame_begin(main_ctx);
    kiln_parallel_for(main_ctx, PF_INSIDE_COUNT, 1, pf_inside_fn, NULL);
    assert_no_job_failures();
    unsigned n = atomic_load(&pf_inside_on_caller);
    cr_assert_eq(atomic_load(&pf_inside_first_on_caller), 1, "range [0, 1) runs on the caller");
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_RESET_INSIDE_JOB), n, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_INSIDE_JOB), 2 * n, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_CONTEXT_INSIDE_JOB), n, "log:%s", recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 4 * n, "log:%s", recorded_summary(rec));
    /* Outside the loop again: the frame closes, and the next one opens. */
    cr_assert_eq(kiln_frame_number(rt), pf_inside_frame, "the frame stays open");
    kiln_frame_end(main_ctx);
    cr_assert_eq(kiln_frame_begin(main_ctx), pf_inside_frame + 1);
    cr_assert_not_null(kiln_frame_alloc(main_ctx, 16, 16));
    kiln_frame_end(main_ctx);
    cr_assert_eq(recorded_count(rec), 4 * n, "log:%s", recorded_summary(rec));
    return n;
}

Test(jobs, parallel_for_ranges_on_the_caller_are_inside_a_job) {
    start(1, 0);
    cr_assert_geq(pf_inside_run(), 1);
}

Test(jobs, parallel_for_ranges_without_workers_are_all_inside_a_job) {
    start(KILN_NO_WORKERS, 0);
    cr_assert_eq(pf_inside_run(), PF_INSIDE_COUNT, "every range runs on the caller");
}

/* ---------- 4. kiln_wait from inside a job ---------- */

#define NEST_CHILDREN 50

typedef struct nest_parent {
    int              child_done[NEST_CHILDREN];   /* plain: the counter orders them */
    _Atomic unsigned finished;
    pthread_t        thread;
} nest_parent;

static void nest_child(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    *(int *)arg += 1;
}

static void nest_parent_job(kiln_ctx *ctx, void *arg) {
    nest_parent *p = arg;
    p->thread = pthread_self();
    kiln_job jobs[NEST_CHILDREN];
    for (int i = 0; i < NEST_CHILDREN; i++) jobs[i] = (kiln_job){ nest_child, &p->child_done[i] };
    kiln_counter done = { { 0, 0 } };
    kiln_run(ctx, jobs, NEST_CHILDREN, &done);
    kiln_wait(ctx, &done);
    for (int i = 0; i < NEST_CHILDREN; i++) JOB_CHECK(p->child_done[i] == 1);

    /* And a parallel_for from inside the job. */
    _Atomic uint8_t hits[1000];
    pf_check c = { .hits = hits };
    JOB_CHECK(pf_run(ctx, &c, 1000, 10) == SIZE_MAX);
    JOB_CHECK(atomic_load(&c.bad_ranges) == 0);
    atomic_store(&p->finished, 1);
}

Test(jobs, wait_inside_jobs) {
    start(2, 0);
    enum { PARENTS = 16 };
    nest_parent *parents = calloc(PARENTS, sizeof *parents);
    cr_assert_not_null(parents);
    kiln_job jobs[PARENTS];
    for (int i = 0; i < PARENTS; i++) jobs[i] = (kiln_job){ nest_parent_job, &parents[i] };
    kiln_counter done = { { 0, 0 } };
    kiln_run(main_ctx, jobs, PARENTS, &done);
    kiln_wait(main_ctx, &done);
    for (int i = 0; i < PARENTS; i++) cr_assert_eq(atomic_load(&parents[i].finished), 1, "parent %d", i);
    assert_no_job_failures();
    assert_no_log();
    free(parents);
}

/* One worker and a main thread that runs nothing: the worker's wait inside the job
 * must run the job's children (and parallel_for pieces) itself. */
Test(jobs, wait_inside_a_job_on_a_single_worker_runs_the_children) {
    start(1, 0);
    nest_parent parent;
    memset(&parent, 0, sizeof parent);
    kiln_counter done = { { 0, 0 } };
    kiln_run(main_ctx, &(kiln_job){ nest_parent_job, &parent }, 1, &done);
    spin_until(&parent.finished, 1);   /* no kiln call */
    cr_assert(!pthread_equal(parent.thread, main_thread));
    kiln_wait(main_ctx, &done);
    assert_no_job_failures();
    assert_no_log();
}

/* ---------- 5. frame end waits for counter-less jobs ---------- */

#define FE_ROOTS    64
#define FE_CHILDREN 4

static int fe_frame;                                   /* set before each frame's submit */
static int fe_root_done[FE_ROOTS];                     /* plain writes: frame end orders them */
static int fe_child_done[FE_ROOTS * FE_CHILDREN];
static int fe_grandchild_done[FE_ROOTS * FE_CHILDREN];
static int fe_pinned_done[FE_ROOTS * FE_CHILDREN];
static _Atomic unsigned fe_pinned_off_main;

static void fe_grandchild(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    size_t i = (uintptr_t)arg;
    if (i % 13 == 0) busy_ns(200000);   /* some stragglers for frame end to wait for */
    fe_grandchild_done[i] = fe_frame;
}

static void fe_pinned(kiln_ctx *ctx, void *arg) {
    size_t i = (uintptr_t)arg;
    if (ctx != main_ctx || !pthread_equal(pthread_self(), main_thread))
        atomic_fetch_add(&fe_pinned_off_main, 1);
    fe_pinned_done[i] = fe_frame;
}

static void fe_child(kiln_ctx *ctx, void *arg) {
    size_t i = (uintptr_t)arg;
    fe_child_done[i] = fe_frame;
    kiln_run(ctx, &(kiln_job){ fe_grandchild, arg }, 1, NULL);
    kiln_run_ex(ctx, &(kiln_job){ fe_pinned, arg }, 1, NULL,
                &(kiln_run_desc){ .pinned_to = main_ctx });
}

static void fe_root(kiln_ctx *ctx, void *arg) {
    size_t r = (uintptr_t)arg;
    kiln_job children[FE_CHILDREN];
    for (size_t k = 0; k < FE_CHILDREN; k++)
        children[k] = (kiln_job){ fe_child, (void *)(uintptr_t)(r * FE_CHILDREN + k) };
    kiln_run(ctx, children, FE_CHILDREN, NULL);
    if (r % 7 == 0) busy_ns(300000);
    fe_root_done[r] = fe_frame;
}

static void fe_frames(int frames) {
    for (int f = 0; f < frames; f++) {
        uint64_t number = kiln_frame_begin(main_ctx);
        cr_assert_neq(number, 0);
        fe_frame = (int)number;
        kiln_job roots[FE_ROOTS];
        for (size_t r = 0; r < FE_ROOTS; r++) roots[r] = (kiln_job){ fe_root, (void *)(uintptr_t)r };
        kiln_run(main_ctx, roots, FE_ROOTS, NULL);
        kiln_frame_end(main_ctx);
        for (size_t r = 0; r < FE_ROOTS; r++)
            cr_assert_eq(fe_root_done[r], fe_frame, "frame %d: root %zu not done at frame end", fe_frame, r);
        for (size_t i = 0; i < FE_ROOTS * FE_CHILDREN; i++) {
            cr_assert_eq(fe_child_done[i], fe_frame, "frame %d: child %zu not done", fe_frame, i);
            cr_assert_eq(fe_grandchild_done[i], fe_frame, "frame %d: grandchild %zu not done", fe_frame, i);
            cr_assert_eq(fe_pinned_done[i], fe_frame, "frame %d: pinned %zu not done", fe_frame, i);
        }
    }
    cr_assert_eq(atomic_load(&fe_pinned_off_main), 0, "a job pinned to main ran elsewhere");
}

Test(jobs, frame_end_waits_for_jobs_without_counters) {
    start(2, 0);
    fe_frames(5);
    assert_no_job_failures();
    assert_no_log();
}

/* ---------- 6. frame memory from jobs ---------- */

#define FM_JOBS   16
#define FM_SIZE   1000
#define FM_FRAMES 40

typedef struct fm_slot {
    void     *p;
    kiln_ctx *ctx;
    uint32_t  seed;
} fm_slot;

static fm_slot  fm_slots[FM_JOBS];
static uint32_t fm_frame;

static void fm_write(kiln_ctx *ctx, void *arg) {
    size_t i = (uintptr_t)arg;
    void *p = kiln_frame_alloc(ctx, FM_SIZE, 16);
    JOB_CHECK(p != NULL);
    JOB_CHECK(((uintptr_t)p & 15) == 0);
    if (!p) return;
    uint32_t seed = fm_frame * 1000u + (uint32_t)i;
    fill_pattern(p, FM_SIZE, seed);
    fm_slots[i] = (fm_slot){ p, ctx, seed };
}

/* A later phase of the same frame, on any thread, checks another job's memory. */
static void fm_check(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    const fm_slot *s = &fm_slots[((uintptr_t)arg + 5) % FM_JOBS];
    JOB_CHECK(s->p && check_pattern(s->p, FM_SIZE, s->seed));
}

typedef struct ctx_block {
    kiln_ctx *ctx;
    uint32_t  parity;   /* frames alternate between a context's two job arenas */
    uintptr_t block;
} ctx_block;

static size_t frame_arena_stats(kiln_arena_stats *out, size_t cap) {
    kiln_arena_stats all[32];
    size_t n = kiln_stats_arenas(rt, all, 32);
    cr_assert_leq(n, 32);
    size_t frames = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(all[i].name, "frame ", 6) == 0 && frames < cap) out[frames++] = all[i];
    return frames;
}

Test(jobs, frame_memory_from_jobs_lives_until_frame_end_and_is_reused) {
    start(2, 0);
    size_t bs = kiln_runtime_desc(rt).block_size;
    ctx_block blocks[2 * (MAX_WORKERS + 1)];
    size_t known = 0;
    uint64_t taken_first = 0, pool_in_use_first = 0;

    for (uint32_t f = 1; f <= FM_FRAMES; f++) {
        cr_assert_eq(kiln_frame_begin(main_ctx), f);
        fm_frame = f;
        memset(fm_slots, 0, sizeof fm_slots);
        kiln_job jobs[FM_JOBS];
        for (size_t i = 0; i < FM_JOBS; i++) jobs[i] = (kiln_job){ fm_write, (void *)(uintptr_t)i };
        kiln_counter written = { { 0, 0 } };
        kiln_run(main_ctx, jobs, FM_JOBS, &written);
        kiln_wait(main_ctx, &written);
        for (size_t i = 0; i < FM_JOBS; i++) jobs[i] = (kiln_job){ fm_check, (void *)(uintptr_t)i };
        kiln_counter checked = { { 0, 0 } };
        kiln_run(main_ctx, jobs, FM_JOBS, &checked);
        kiln_wait(main_ctx, &checked);
        assert_no_job_failures();

        /* Before frame end every allocation is live in its context's frame memory (its
         * job arena of the frame's parity, counted in its frame arena's stats), and every
         * context keeps allocating from the same block, every other frame. */
        for (size_t i = 0; i < FM_JOBS; i++) {
            fm_slot s = fm_slots[i];
            cr_assert(check_pattern(s.p, FM_SIZE, s.seed), "frame %u slot %zu", f, i);
            cr_assert_geq(arena_stats(kiln_frame_arena(s.ctx)).bytes_in_use, FM_SIZE);
            uintptr_t block = (uintptr_t)s.p & ~(uintptr_t)(bs - 1);
            size_t k = 0;
            while (k < known && (blocks[k].ctx != s.ctx || blocks[k].parity != (f & 1))) k++;
            if (k == known) {
                cr_assert_lt(known, 2 * (MAX_WORKERS + 1));
                blocks[known++] = (ctx_block){ s.ctx, f & 1, block };
            } else {
                cr_assert_eq(blocks[k].block, block, "frame %u: a context's frame memory moved to another block", f);
            }
        }
        kiln_frame_end(main_ctx);

        /* After: every frame arena (workers' and main's) is empty. */
        for (size_t k = 0; k < known; k++)
            cr_assert_eq(arena_stats(kiln_frame_arena(blocks[k].ctx)).bytes_in_use, 0,
                         "frame %u: a frame arena not reset", f);
        kiln_arena_stats fa[MAX_WORKERS + 2];
        size_t n = frame_arena_stats(fa, MAX_WORKERS + 2);
        cr_assert_eq(n, 3, "two workers' frame arenas and main's");
        uint64_t taken = 0;
        for (size_t i = 0; i < n; i++) {
            cr_assert_eq(fa[i].bytes_in_use, 0, "frame %u: '%s' holds %zu bytes after frame end", f,
                         fa[i].name, fa[i].bytes_in_use);
            taken += fa[i].blocks_taken;
        }
        /* A context makes a job arena, with its first block, at its first job of an
         * even or odd frame, whenever the stealing makes that happen: not counted. */
        uint64_t made = 0;
        for (kiln_ctx *c = rt->contexts; c; c = c->next)
            for (int p = 0; p < 2; p++) made += kiln_load_relaxed(&c->job_arenas[p]) != NULL;
        taken -= made;
        uint64_t pool_in_use = runtime_stats().blocks.blocks_in_use - made;
        if (f == 1) {
            taken_first = taken;
            pool_in_use_first = pool_in_use;
        }
        cr_assert_eq(taken, taken_first, "frame %u: frame arenas took new blocks (%llu, first %llu)", f,
                     (unsigned long long)taken, (unsigned long long)taken_first);
        cr_assert_eq(pool_in_use, pool_in_use_first, "frame %u: the block pool lent more blocks", f);
    }
    cr_assert_geq(known, 1);
    assert_no_log();
}

/* ---------- 7. idle workers sleep ---------- */

/* Deterministic on a loaded machine: no CPU-time or sleep-share threshold (how much CPU
 * idle workers burn is a benchmark's figure). What must hold: every idle worker reaches
 * its sleep (its sleep time grows; a sleeper wakes by itself at least every 50 ms, so it
 * keeps growing while it stays idle), and no job runs meanwhile. The suite timeout only
 * turns a worker that never sleeps into a failure. */
Test(jobs, idle_workers_sleep) {
    start(2, 0);
    kiln_ctx_stats before[4], now[4];
    size_t nb = context_stats(before, 4);   /* before the census: its jobs end an idle period */
    census c;
    census_take(&c, 2);
    size_t workers_asleep = 0;
    while (workers_asleep < 2) {
        sleep_ns(10000000);
        size_t na = context_stats(now, 4);
        cr_assert_eq(na, nb);
        workers_asleep = 0;
        for (size_t i = 0; i < na; i++) {
            if (!now[i].is_worker) continue;
            size_t j = 0;
            while (j < nb && before[j].id != now[i].id) j++;
            cr_assert_lt(j, nb);
            cr_assert_eq(now[i].jobs_run, before[j].jobs_run + 1, "the census job, and none while idle");
            if (now[i].sleep_ns > before[j].sleep_ns && now[i].sleeps > before[j].sleeps)
                workers_asleep++;
        }
    }
    assert_no_log();
}

/* The suite's runtime and main_ctx, with desc.idle_spin_us set. */
static void start_idle_spin(uint32_t workers, uint32_t idle_spin_us) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = workers;
    desc.idle_spin_us = idle_spin_us;
    rt = create_runtime_from(&desc);
    cr_assert_eq(kiln_runtime_desc(rt).idle_spin_us, idle_spin_us, "read back as given");
    attach_main();
}

/* The idle figures only grow (each only by its owner, so two reads in a row are
 * ordered). A thread in kiln_wait with nothing to run spins and sleeps too. */
static void assert_idle_figures_grow(const kiln_ctx_stats *then, const kiln_ctx_stats *now, size_t n) {
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(now[i].id, then[i].id, "nothing attached meanwhile: the same list");
        cr_assert_geq(now[i].sleeps, then[i].sleeps);
        cr_assert_geq(now[i].sleep_ns, then[i].sleep_ns);
        cr_assert_geq(now[i].idle_spin_ns, then[i].idle_spin_ns);
    }
}

/* A short desc.idle_spin_us: after each burst of work every worker spins (idle_spin_ns
 * grows), then sleeps (sleeps and sleep_ns grow; a sleeper that wakes by itself to look
 * for work, every 50 ms, neither spins nor counts a sleep again). Waited for in a loop
 * bounded only by the suite timeout, over three idle periods each ended by work, and
 * the figures never go back. */
Test(jobs, short_idle_spin_sleeps_and_counts_its_spin) {
    start_idle_spin(2, 1);
    kiln_ctx_stats period[4], prev[4], now[4];
    size_t n = context_stats(prev, 4);
    cr_assert_eq(n, 3);
    for (int round = 0; round < 3; round++) {
        /* Before the census: each worker's job ends its idle period, after which it
         * spins and sleeps anew (perhaps before census_take returns). */
        cr_assert_eq(context_stats(period, 4), n);
        assert_idle_figures_grow(prev, period, n);
        memcpy(prev, period, sizeof prev);
        census c;
        census_take(&c, 2);
        size_t asleep = 0;
        while (asleep < 2) {
            sleep_ns(1000000);
            cr_assert_eq(context_stats(now, 4), n);
            assert_idle_figures_grow(prev, now, n);
            memcpy(prev, now, sizeof prev);
            asleep = 0;
            for (size_t i = 0; i < n; i++)
                asleep += now[i].is_worker && now[i].sleeps > period[i].sleeps &&
                          now[i].sleep_ns > period[i].sleep_ns &&
                          now[i].idle_spin_ns > period[i].idle_spin_ns;
        }
    }
    assert_no_log();
}

/* The longest desc.idle_spin_us: an idle worker keeps looking for work, and its spin
 * shows in idle_spin_ns while it lasts (counted at every clock read, not only when the
 * spin ends). Should the test thread stall past the whole second, the worker sleeps,
 * and a census wakes it for another try. kiln_destroy does not wait for the spin. */
Test(jobs, long_idle_spin_counts_while_it_spins) {
    start_idle_spin(1, KILN_MAX_IDLE_SPIN_US);
    kiln_ctx_stats before[2], now[2];
    size_t n = 0;
    bool grew = false;
    while (!grew) {
        census c;
        census_take(&c, 1);
        n = context_stats(before, 2);
        cr_assert_eq(n, 2);
        for (;;) {
            sleep_ns(1000000);
            cr_assert_eq(context_stats(now, 2), n);
            assert_idle_figures_grow(before, now, n);
            size_t w = now[0].is_worker ? 0 : 1;
            if (now[w].sleeps > before[w].sleeps) break;   /* stalled: once more */
            if (now[w].idle_spin_ns > before[w].idle_spin_ns) {
                grew = true;
                break;
            }
        }
    }
    assert_no_log();
}

/* ---------- 8. pinned jobs ---------- */

typedef struct pin_probe {
    _Atomic unsigned ran;
    kiln_ctx        *ctx;
    pthread_t        thread;
} pin_probe;

static void pin_probe_job(kiln_ctx *ctx, void *arg) {
    pin_probe *p = arg;
    p->ctx = ctx;
    p->thread = pthread_self();
    atomic_fetch_add(&p->ran, 1);
}

typedef struct pin_relay {
    pin_probe        probe;
    kiln_counter     probe_done;   /* NULL when use_counter is false */
    bool             use_counter;
    kiln_ctx        *ran_on;
    _Atomic unsigned submitted;
} pin_relay;

/* A worker job that pins a probe to the main context. */
static void pin_relay_job(kiln_ctx *ctx, void *arg) {
    pin_relay *r = arg;
    r->ran_on = ctx;
    kiln_run_ex(ctx, &(kiln_job){ pin_probe_job, &r->probe }, 1, r->use_counter ? &r->probe_done : NULL,
                &(kiln_run_desc){ .pinned_to = main_ctx });
    atomic_store(&r->submitted, 1);
}

Test(jobs, pinned_to_main_from_a_worker_runs_on_main) {
    start(2, 0);

    /* Run by main's kiln_wait. */
    pin_relay r;
    memset(&r, 0, sizeof r);
    r.use_counter = true;
    kiln_counter relay_done = { { 0, 0 } };
    kiln_run(main_ctx, &(kiln_job){ pin_relay_job, &r }, 1, &relay_done);
    spin_until(&r.submitted, 1);   /* no kiln call: a worker ran the relay */
    cr_assert_neq(r.ran_on, main_ctx);
    sleep_ns(20000000);
    cr_assert_eq(atomic_load(&r.probe.ran), 0, "a job pinned to main ran before main waited");
    kiln_wait(main_ctx, &r.probe_done);
    cr_assert_eq(atomic_load(&r.probe.ran), 1);
    cr_assert_eq(r.probe.ctx, main_ctx);
    cr_assert(pthread_equal(r.probe.thread, main_thread));
    kiln_wait(main_ctx, &relay_done);

    /* Run by frame end, no counter. */
    pin_relay f;
    memset(&f, 0, sizeof f);
    kiln_frame_begin(main_ctx);
    kiln_run(main_ctx, &(kiln_job){ pin_relay_job, &f }, 1, NULL);
    spin_until(&f.submitted, 1);
    cr_assert_neq(f.ran_on, main_ctx);
    sleep_ns(20000000);
    cr_assert_eq(atomic_load(&f.probe.ran), 0, "a job pinned to main ran before frame end");
    kiln_frame_end(main_ctx);
    cr_assert_eq(atomic_load(&f.probe.ran), 1, "frame end ran the job pinned to main");
    cr_assert_eq(f.probe.ctx, main_ctx);
    cr_assert(pthread_equal(f.probe.thread, main_thread));
    assert_no_log();
}

typedef struct pin_expect {
    kiln_ctx        *ctx;
    pthread_t        thread;
    _Atomic unsigned ran, wrong;
} pin_expect;

static void pin_expect_job(kiln_ctx *ctx, void *arg) {
    pin_expect *e = arg;
    if (ctx != e->ctx || !pthread_equal(pthread_self(), e->thread)) atomic_fetch_add(&e->wrong, 1);
    atomic_fetch_add(&e->ran, 1);
}

typedef struct pin_cross {
    pin_expect  *target;
    kiln_counter done;
} pin_cross;

/* From a worker job: pins jobs to another worker and waits for them. */
static void pin_cross_job(kiln_ctx *ctx, void *arg) {
    pin_cross *x = arg;
    kiln_job jobs[8];
    for (int i = 0; i < 8; i++) jobs[i] = (kiln_job){ pin_expect_job, x->target };
    kiln_counter done = { { 0, 0 } };
    kiln_run_ex(ctx, jobs, 8, &done, &(kiln_run_desc){ .pinned_to = x->target->ctx });
    kiln_wait(ctx, &done);
    JOB_CHECK(counter_jobs(&done) == 0);
}

#define PIN_EACH 200

Test(jobs, pinned_to_a_worker_runs_on_that_worker) {
    start(3, 0);
    census c;
    census_take(&c, 3);
    pin_expect expect[3];
    memset(expect, 0, sizeof expect);
    kiln_counter done = { { 0, 0 } };
    for (int w = 0; w < 3; w++) {
        expect[w].ctx = c.ctx[w];
        expect[w].thread = c.thread[w];
        kiln_job jobs[PIN_EACH];   /* more than an inbox holds at first: it grows */
        for (int i = 0; i < PIN_EACH; i++) jobs[i] = (kiln_job){ pin_expect_job, &expect[w] };
        kiln_run_ex(main_ctx, jobs, PIN_EACH, &done, &(kiln_run_desc){ .pinned_to = c.ctx[w] });
    }
    kiln_wait(main_ctx, &done);   /* main cannot run them: the workers do */
    for (int w = 0; w < 3; w++) {
        cr_assert_eq(atomic_load(&expect[w].ran), PIN_EACH, "worker %d ran %u of its %d pinned jobs", w,
                     atomic_load(&expect[w].ran), PIN_EACH);
        cr_assert_eq(atomic_load(&expect[w].wrong), 0, "a job pinned to worker %d ran elsewhere", w);
    }

    /* Worker to worker: jobs submitted inside a job, pinned to each worker in turn. */
    for (int w = 0; w < 3; w++) atomic_store(&expect[w].ran, 0);
    pin_cross cross[3];
    kiln_job relays[3];
    for (int w = 0; w < 3; w++) {
        cross[w].target = &expect[(w + 1) % 3];
        relays[w] = (kiln_job){ pin_cross_job, &cross[w] };
    }
    kiln_counter relays_done = { { 0, 0 } };
    kiln_run(main_ctx, relays, 3, &relays_done);
    kiln_wait(main_ctx, &relays_done);
    for (int w = 0; w < 3; w++) {
        cr_assert_eq(atomic_load(&expect[w].ran), 8);
        cr_assert_eq(atomic_load(&expect[w].wrong), 0, "a job pinned to worker %d ran elsewhere", w);
    }
    assert_no_job_failures();
    assert_no_log();
}

/* ---------- 9. high priority first ---------- */

#define PRIO_N 200

static _Atomic unsigned prio_claimed, prio_done;
static int              prio_order[2 * PRIO_N];   /* 0: normal, 1: high, by execution order */

static void prio_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    unsigned i = atomic_fetch_add(&prio_claimed, 1);
    if (i < 2 * PRIO_N) prio_order[i] = (int)(uintptr_t)arg;
    atomic_fetch_add(&prio_done, 1);
}

Test(jobs, high_priority_runs_before_normal_on_one_worker) {
    start(1, 0);
    kiln_counter blocker_done = { { 0, 0 } };
    job_hold hold = { 0, 0 };
    kiln_run(main_ctx, &(kiln_job){ job_hold_thread, &hold }, 1, &blocker_done);
    while (!atomic_load(&hold.started)) sched_yield();   /* the only worker is busy from here on */

    kiln_job normal[PRIO_N], high[PRIO_N];
    for (int i = 0; i < PRIO_N; i++) {
        normal[i] = (kiln_job){ prio_job, (void *)(uintptr_t)0 };
        high[i] = (kiln_job){ prio_job, (void *)(uintptr_t)1 };
    }
    kiln_counter done = { { 0, 0 } };
    kiln_run(main_ctx, normal, PRIO_N, &done);
    kiln_run_ex(main_ctx, high, PRIO_N, &done, &(kiln_run_desc){ .priority = KILN_PRIORITY_HIGH });
    atomic_store(&hold.release, 1);
    spin_until(&prio_done, 2 * PRIO_N);   /* no kiln call: the worker runs them all */
    kiln_wait(main_ctx, &done);
    kiln_wait(main_ctx, &blocker_done);

    cr_assert_eq(atomic_load(&prio_claimed), 2 * PRIO_N);
    for (int i = 0; i < PRIO_N; i++)
        cr_assert_eq(prio_order[i], 1, "job number %d to run was a normal one", i);
    for (int i = PRIO_N; i < 2 * PRIO_N; i++) cr_assert_eq(prio_order[i], 0);
    assert_no_log();
}

/* ---------- 10. background jobs ---------- */

typedef struct bg_state {
    _Atomic unsigned started, release, finished;
    void            *frame_memory;
    bool             alloc_tried;
} bg_state;

static void bg_job(kiln_ctx *ctx, void *arg) {
    bg_state *b = arg;
    b->frame_memory = kiln_frame_alloc(ctx, 64, 8);
    b->alloc_tried = true;
    atomic_store(&b->started, 1);
    while (!atomic_load(&b->release)) sched_yield();
    atomic_store(&b->finished, 1);
}

static _Atomic unsigned frame_alloc_ok, frame_alloc_null;

static void frame_alloc_job(kiln_ctx *ctx, void *arg) {
    (void)arg;
    void *p = kiln_frame_alloc(ctx, 128, 16);
    atomic_fetch_add(p ? &frame_alloc_ok : &frame_alloc_null, 1);
}

Test(jobs, frame_end_does_not_wait_for_background_jobs) {
    start(2, KILN_DEBUG_CHECKS);
    bg_state b;
    memset(&b, 0, sizeof b);
    uint64_t frame = kiln_frame_begin(main_ctx);
    kiln_counter bg_done = { { 0, 0 } };
    kiln_run_ex(main_ctx, &(kiln_job){ bg_job, &b }, 1, &bg_done, &(kiln_run_desc){ .background = true });
    spin_until(&b.started, 1);   /* no kiln call: a worker runs it */

    /* Frame jobs beside it still get frame memory (the check is only for background). */
    kiln_job frame_jobs[8];
    for (int i = 0; i < 8; i++) frame_jobs[i] = (kiln_job){ frame_alloc_job, NULL };
    kiln_run(main_ctx, frame_jobs, 8, NULL);
    kiln_frame_end(main_ctx);
    cr_assert_eq(atomic_load(&frame_alloc_ok), 8, "frame end waited for the frame jobs");
    cr_assert_eq(atomic_load(&frame_alloc_null), 0);
    cr_assert_eq(atomic_load(&b.finished), 0, "frame end returned with the background job running");

    /* It crosses more frames. */
    for (int f = 0; f < 3; f++) {
        cr_assert_eq(kiln_frame_begin(main_ctx), frame + 1 + (uint64_t)f);
        kiln_frame_end(main_ctx);
    }
    cr_assert_eq(atomic_load(&b.finished), 0);
    cr_assert_neq(counter_jobs(&bg_done), 0, "its counter still counts it");

    atomic_store(&b.release, 1);
    kiln_wait(main_ctx, &bg_done);
    cr_assert_eq(atomic_load(&b.finished), 1);
    cr_assert_eq(counter_jobs(&bg_done), 0);
    cr_assert(b.alloc_tried);
    cr_assert_null(b.frame_memory, "kiln_frame_alloc inside a background job is refused with KILN_DEBUG_CHECKS");
    cr_assert_eq(count_items(rec, KILN_LOGITEM_JOB_BACKGROUND_FRAME_ALLOC), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_JOB_BACKGROUND_FRAME_ALLOC, KILN_LOG_ERROR), 1);
    cr_assert_eq(recorded_count(rec), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(runtime_stats().api_errors, 1);
}

/* Without KILN_DEBUG_CHECKS the check costs nothing and refuses nothing. */
Test(jobs, background_frame_alloc_is_only_checked_with_debug_checks) {
    start(1, 0);
    bg_state b;
    memset(&b, 0, sizeof b);
    atomic_store(&b.release, 1);
    kiln_counter done = { { 0, 0 } };
    kiln_run_ex(main_ctx, &(kiln_job){ bg_job, &b }, 1, &done, &(kiln_run_desc){ .background = true });
    kiln_wait(main_ctx, &done);
    cr_assert_eq(atomic_load(&b.finished), 1);
    cr_assert_not_null(b.frame_memory);
    assert_no_log();
}

static _Atomic unsigned bg_ranges, bg_range_refused;

static void bg_range_fn(kiln_ctx *ctx, size_t begin, size_t end, void *arg) {
    (void)begin;
    (void)end;
    (void)arg;
    atomic_fetch_add(&bg_ranges, 1);
    if (!kiln_frame_alloc(ctx, 32, 8)) atomic_fetch_add(&bg_range_refused, 1);
}

static void bg_parallel_job(kiln_ctx *ctx, void *arg) {
    (void)arg;
    kiln_parallel_for(ctx, 64, 4, bg_range_fn, NULL);
}

/* A parallel_for inside a background job is background too: its pieces are refused
 * frame memory wherever they run, and frame end does not count them. */
Test(jobs, parallel_for_inside_a_background_job_is_background) {
    start(2, KILN_DEBUG_CHECKS);
    kiln_counter done = { { 0, 0 } };
    kiln_frame_begin(main_ctx);
    kiln_run_ex(main_ctx, &(kiln_job){ bg_parallel_job, NULL }, 1, &done,
                &(kiln_run_desc){ .background = true });
    kiln_wait(main_ctx, &done);
    kiln_frame_end(main_ctx);
    cr_assert_eq(atomic_load(&bg_ranges), 16, "64 indices by 4");
    cr_assert_eq(atomic_load(&bg_range_refused), 16);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_JOB_BACKGROUND_FRAME_ALLOC, KILN_LOG_ERROR), 16, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 16, "log:%s", recorded_summary(rec));
    cr_assert_eq(runtime_stats().api_errors, 16);
    kiln_ctx_stats s[4];
    size_t n = context_stats(s, 4);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(s[i].jobs_submitted, 0, "context %u counted background pieces as frame jobs", s[i].id);
}

/* The driver's frame end must not pick up a queued background job and run it itself:
 * that would make frame end wait for it after all (here: for ever, since the job waits
 * for a flag the test sets only after frame end). One worker, kept busy by another
 * background job, so the queued one stays on main's deque. In a game: a long asset load
 * queued on the driver's deque must not stall its frame. */
Test(jobs, frame_end_does_not_run_queued_background_jobs, .timeout = 5) {
    start(1, 0);
    bg_state busy, queued;
    memset(&busy, 0, sizeof busy);
    memset(&queued, 0, sizeof queued);
    kiln_counter done = { { 0, 0 } };
    kiln_run_desc bg = { .background = true };
    kiln_frame_begin(main_ctx);
    kiln_run_ex(main_ctx, &(kiln_job){ bg_job, &busy }, 1, &done, &bg);
    spin_until(&busy.started, 1);
    kiln_run_ex(main_ctx, &(kiln_job){ bg_job, &queued }, 1, &done, &bg);
    kiln_frame_end(main_ctx);
    cr_assert_eq(atomic_load(&queued.started), 0, "frame end ran a background job");
    atomic_store(&busy.release, 1);
    atomic_store(&queued.release, 1);
    kiln_wait(main_ctx, &done);
    assert_no_log();
}

/* ---------- 11. bad input ---------- */

static _Atomic unsigned bad_ran;

static void bad_count_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
    atomic_fetch_add(&bad_ran, 1);
}

static void bad_range_fn(kiln_ctx *ctx, size_t begin, size_t end, void *arg) {
    (void)ctx;
    (void)begin;
    (void)end;
    (void)arg;
    atomic_fetch_add(&bad_ran, 1);
}

/* Runs everything that may still be queued: a frame's end drains every frame job. */
static void drain_everything(void) {
    kiln_frame_begin(main_ctx);
    kiln_frame_end(main_ctx);
}

static uint64_t main_jobs_submitted(void) {
    kiln_ctx_stats s[MAX_WORKERS + 2];
    size_t n = context_stats(s, MAX_WORKERS + 2);
    for (size_t i = 0; i < n; i++)
        if (!s[i].is_worker) return s[i].jobs_submitted;
    cr_assert_fail("no main context in the stats");
    return 0;
}

Test(jobs, batch_with_a_null_fn_is_refused_whole) {
    start(2, 0);
    kiln_job jobs[10];
    for (int i = 0; i < 10; i++) jobs[i] = (kiln_job){ bad_count_job, NULL };
    jobs[3].fn = NULL;
    kiln_counter counter = { { 0, 0 } };
    kiln_run(main_ctx, jobs, 10, &counter);
    kiln_run_ex(main_ctx, jobs, 10, &counter, &(kiln_run_desc){ .priority = KILN_PRIORITY_HIGH });
    cr_assert(counter_is_zero(&counter), "the counter is untouched");
    drain_everything();
    cr_assert_eq(atomic_load(&bad_ran), 0, "no job of a refused batch runs");
    cr_assert_eq(main_jobs_submitted(), 0);

    /* A NULL fn past the first 64 (kiln copies jobs in batches of 64): still nothing runs. */
    kiln_job many[200];
    for (int i = 0; i < 200; i++) many[i] = (kiln_job){ bad_count_job, NULL };
    many[150].fn = NULL;
    kiln_run(main_ctx, many, 200, &counter);
    cr_assert(counter_is_zero(&counter));
    drain_everything();
    cr_assert_eq(atomic_load(&bad_ran), 0, "no job of a refused batch runs");
    cr_assert_eq(main_jobs_submitted(), 0);

    cr_assert_eq(count_items(rec, KILN_LOGITEM_JOB_NULL_FN), 3, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_JOB_NULL_FN, KILN_LOG_ERROR), 3);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_JOB_NULL_FN, "job 3 of 10"), 2, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_JOB_NULL_FN, "job 150 of 200"), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 3, "log:%s", recorded_summary(rec));
    cr_assert_eq(runtime_stats().api_errors, 3);
}

Test(jobs, count_zero_and_null_jobs_are_refused) {
    start(2, 0);
    kiln_job job = { bad_count_job, NULL };
    kiln_counter counter = { { 0, 0 } };
    kiln_run(main_ctx, &job, 0, &counter);                                    /* JOB_COUNT_ZERO */
    kiln_run(main_ctx, NULL, 0, &counter);                                    /* JOB_COUNT_ZERO */
    kiln_run(main_ctx, NULL, 4, &counter);                                    /* JOB_NULL_JOBS */
    kiln_run_ex(main_ctx, NULL, 4, &counter, &(kiln_run_desc){ .background = true }); /* JOB_NULL_JOBS */
    cr_assert(counter_is_zero(&counter));
    drain_everything();
    cr_assert_eq(atomic_load(&bad_ran), 0);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_JOB_COUNT_ZERO, KILN_LOG_ERROR), 2, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_JOB_NULL_JOBS, KILN_LOG_ERROR), 2, "log:%s", recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 4, "log:%s", recorded_summary(rec));
    cr_assert_eq(runtime_stats().api_errors, 4);
    /* The context still works. */
    kiln_run(main_ctx, &job, 1, &counter);
    kiln_wait(main_ctx, &counter);
    cr_assert_eq(atomic_load(&bad_ran), 1);
}

Test(jobs, wait_with_a_null_counter_returns) {
    start(2, 0);
    kiln_wait(main_ctx, NULL);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_JOB_WAIT_NULL_COUNTER, KILN_LOG_ERROR), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(runtime_stats().api_errors, 1);
    kiln_counter zero = { { 0, 0 } };
    kiln_wait(main_ctx, &zero);   /* a zero counter: returns at once, nothing logged */
    cr_assert_eq(recorded_count(rec), 1);
}

Test(jobs, parallel_for_with_a_null_fn_is_refused) {
    start(2, 0);
    kiln_parallel_for(main_ctx, 100, 10, NULL, NULL);
    kiln_parallel_for(main_ctx, 0, 0, NULL, NULL);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_JOB_NULL_FN, KILN_LOG_ERROR), 2, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_JOB_NULL_FN, "kiln_parallel_for"), 2);
    cr_assert_eq(recorded_count(rec), 2, "log:%s", recorded_summary(rec));
    cr_assert_eq(runtime_stats().api_errors, 2);
    kiln_parallel_for(main_ctx, 0, 5, bad_range_fn, NULL);   /* count 0 is fine: nothing runs */
    cr_assert_eq(atomic_load(&bad_ran), 0);
    cr_assert_eq(recorded_count(rec), 2);
}

Test(jobs, pin_to_a_foreign_or_detached_context_is_refused) {
    start(2, 0);
    recording_log *other_rec = recording_log_new();
    kiln_desc other_desc = recording_desc(other_rec);   /* no workers */
    kiln_runtime *other = kiln_create(&other_desc);
    kiln_ctx *foreign = kiln_attach(other);
    kiln_ctx *gone = kiln_attach(rt);
    cr_assert(other && foreign && gone);
    kiln_detach(gone);

    kiln_job job = { bad_count_job, NULL };
    kiln_counter counter = { { 0, 0 } };
    kiln_run_ex(main_ctx, &job, 1, &counter, &(kiln_run_desc){ .pinned_to = foreign });
    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_run_ex(main_ctx, &job, 1, &counter, &(kiln_run_desc){ .pinned_to = gone });
    char *text = stderr_capture_end(&cap);
    cr_assert(counter_is_zero(&counter));
    drain_everything();
    cr_assert_eq(atomic_load(&bad_ran), 0);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_JOB_BAD_PIN, KILN_LOG_ERROR), 2, "log:%s", recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 2, "log:%s", recorded_summary(rec));
    cr_assert_eq(runtime_stats().api_errors, 2);
    cr_assert_eq(count_substrings(text, "CONTEXT_"), 0, "one report, JOB_BAD_PIN: %s", text);
    cr_assert_eq(recorded_count(other_rec), 0, "the other runtime heard nothing");
    free(text);

    /* A NULL pinned_to means any thread. */
    kiln_run_ex(main_ctx, &job, 1, &counter, &(kiln_run_desc){ .pinned_to = NULL });
    kiln_wait(main_ctx, &counter);
    cr_assert_eq(atomic_load(&bad_ran), 1);
    cr_assert_eq(recorded_count(rec), 2);

    kiln_detach(foreign);
    kiln_destroy(other);
    recording_log_free(other_rec);
}

typedef struct shared_counter {
    kiln_counter    *counter;
    _Atomic unsigned started, release, child_ran, submitted;
} shared_counter;

static void shared_blocker(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    shared_counter *s = arg;
    atomic_store(&s->started, 1);
    while (!atomic_load(&s->release)) sched_yield();
}

static void shared_child(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    atomic_fetch_add(&((shared_counter *)arg)->child_ran, 1);
}

/* On another worker: adds to the counter the main context's run still holds. */
static void shared_adder(kiln_ctx *ctx, void *arg) {
    shared_counter *s = arg;
    kiln_run(ctx, &(kiln_job){ shared_child, s }, 1, s->counter);
    atomic_store(&s->submitted, 1);
}

Test(jobs, counter_shared_between_contexts_warns_and_completes) {
    start(2, 0);
    kiln_counter counter = { { 0, 0 } };
    shared_counter s;
    memset(&s, 0, sizeof s);
    s.counter = &counter;
    kiln_run(main_ctx, &(kiln_job){ shared_blocker, &s }, 1, &counter);
    spin_until(&s.started, 1);   /* worker A holds the counter at 1 */
    kiln_run(main_ctx, &(kiln_job){ shared_adder, &s }, 1, NULL);
    spin_until(&s.submitted, 1);   /* worker B added to it */
    spin_until(&s.child_ran, 1);
    cr_assert_neq(counter_jobs(&counter), 0, "the blocker still holds the counter");
    atomic_store(&s.release, 1);
    kiln_wait(main_ctx, &counter);
    cr_assert_eq(counter_jobs(&counter), 0, "the counter reaches zero");
    cr_assert_eq(atomic_load(&s.child_ran), 1);
    drain_everything();

    kiln_ctx_stats st[4];
    size_t n = context_stats(st, 4);
    uint32_t main_id = 0;
    for (size_t i = 0; i < n; i++)
        if (!st[i].is_worker) main_id = st[i].id;
    char fragment[64];
    snprintf(fragment, sizeof fragment, "from a run of context %u", main_id);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_COUNTER_SHARED, KILN_LOG_WARN), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_COUNTER_SHARED, fragment), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(runtime_stats().api_errors, 0, "a warning is not misuse");
}

static kiln_ctx *_Atomic seen_worker_ctx;

static void remember_ctx(kiln_ctx *ctx, void *arg) {
    (void)arg;
    atomic_store(&seen_worker_ctx, ctx);
}

Test(jobs, detach_of_a_worker_context_is_refused) {
    start(1, 0);
    kiln_counter done = { { 0, 0 } };
    kiln_run(main_ctx, &(kiln_job){ remember_ctx, NULL }, 1, &done);
    while (!atomic_load(&seen_worker_ctx)) sched_yield();   /* the worker ran it */
    kiln_wait(main_ctx, &done);
    kiln_ctx *worker = atomic_load(&seen_worker_ctx);
    cr_assert_neq(worker, main_ctx);
    kiln_detach(worker);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_CONTEXT_IS_WORKER, KILN_LOG_ERROR), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(runtime_stats().api_errors, 1);
    /* The worker still works. */
    atomic_store(&seen_worker_ctx, NULL);
    kiln_run(main_ctx, &(kiln_job){ remember_ctx, NULL }, 1, &done);
    while (!atomic_load(&seen_worker_ctx)) sched_yield();
    kiln_wait(main_ctx, &done);
    cr_assert_eq(atomic_load(&seen_worker_ctx), worker);
    cr_assert_eq(runtime_stats().contexts, 2);
}

Test(jobs, null_context_calls_are_safe) {
    start(1, 0);
    kiln_job job = { bad_count_job, NULL };
    kiln_counter counter = { { 0, 0 } };
    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_run(NULL, &job, 1, &counter);
    kiln_run_ex(NULL, &job, 1, &counter, NULL);
    kiln_wait(NULL, &counter);
    kiln_parallel_for(NULL, 10, 1, bad_range_fn, NULL);
    char *text = stderr_capture_end(&cap);
    cr_assert(counter_is_zero(&counter));
    drain_everything();
    cr_assert_eq(atomic_load(&bad_ran), 0);
    cr_assert_eq(count_substrings(text, "CONTEXT_NULL: kiln_run: the context is NULL"), 1, "stderr: %s", text);
    cr_assert_eq(count_substrings(text, "CONTEXT_NULL: kiln_run_ex: the context is NULL"), 1, "stderr: %s", text);
    cr_assert_eq(count_substrings(text, "CONTEXT_NULL: kiln_wait: the context is NULL"), 1, "stderr: %s", text);
    cr_assert_eq(count_substrings(text, "CONTEXT_NULL: kiln_parallel_for: the context is NULL"), 1,
                 "stderr: %s", text);
    free(text);
    cr_assert_eq(runtime_stats().api_errors, 0, "a NULL context cannot reach the runtime");
    assert_no_log();
}

/* ---------- 12. no workers ---------- */

static _Atomic unsigned nw_ran, nw_off_main;

static void nw_job(kiln_ctx *ctx, void *arg) {
    (void)arg;
    if (ctx != main_ctx || !pthread_equal(pthread_self(), main_thread)) atomic_fetch_add(&nw_off_main, 1);
    atomic_fetch_add(&nw_ran, 1);
}

static void nw_spawner(kiln_ctx *ctx, void *arg) {
    nw_job(ctx, arg);
    kiln_job children[3] = { { nw_job, NULL }, { nw_job, NULL }, { nw_job, NULL } };
    kiln_run(ctx, children, 3, NULL);
}

Test(jobs, no_workers_runs_everything_on_the_waiting_thread) {
    start(KILN_NO_WORKERS, 0);
    cr_assert_eq(runtime_stats().worker_count, 0);
    cr_assert_eq(runtime_stats().contexts, 1);

    /* kiln_wait runs them. */
    kiln_job jobs[500];
    for (int i = 0; i < 500; i++) jobs[i] = (kiln_job){ nw_job, NULL };
    kiln_counter done = { { 0, 0 } };
    kiln_run(main_ctx, jobs, 500, &done);
    cr_assert_eq(atomic_load(&nw_ran), 0, "no thread but the waiter can run them");
    kiln_wait(main_ctx, &done);
    cr_assert_eq(atomic_load(&nw_ran), 500);

    /* Frame end runs counter-less jobs and their children. */
    atomic_store(&nw_ran, 0);
    kiln_frame_begin(main_ctx);
    for (int i = 0; i < 100; i++) jobs[i] = (kiln_job){ nw_spawner, NULL };
    kiln_run(main_ctx, jobs, 100, NULL);
    cr_assert_eq(atomic_load(&nw_ran), 0);
    kiln_frame_end(main_ctx);
    cr_assert_eq(atomic_load(&nw_ran), 400);

    /* High priority, pinned to itself, background with a counter. */
    atomic_store(&nw_ran, 0);
    kiln_job one = { nw_job, NULL };
    kiln_run_ex(main_ctx, &one, 1, &done, &(kiln_run_desc){ .priority = KILN_PRIORITY_HIGH });
    kiln_run_ex(main_ctx, &one, 1, &done, &(kiln_run_desc){ .pinned_to = main_ctx });
    kiln_run_ex(main_ctx, &one, 1, &done, &(kiln_run_desc){ .background = true });
    cr_assert_eq(atomic_load(&nw_ran), 0);
    kiln_wait(main_ctx, &done);
    cr_assert_eq(atomic_load(&nw_ran), 3);
    cr_assert_eq(atomic_load(&nw_off_main), 0, "a job ran off the main thread");

    /* Nested waits and parallel_for. */
    cr_assert_eq(fib_by_jobs(15), 610);
    pf_check c = { 0 };
    c.hits = calloc(1000, sizeof *c.hits);
    cr_assert_not_null(c.hits);
    cr_assert_eq(pf_run(main_ctx, &c, 1000, 0), SIZE_MAX);
    cr_assert_eq(pf_run(main_ctx, &c, 1000, 7), SIZE_MAX);
    cr_assert_eq(atomic_load(&c.bad_ranges), 0);
    free(c.hits);
    drain_everything();   /* the frame-end-style jobs above were counted; nothing is left */
    assert_no_job_failures();
    assert_no_log();
}

/* ---------- 13. destroy ---------- */

static void noop_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
}

Test(jobs, destroy_with_idle_workers_returns) {
    start(3, 0);
    census c;
    census_take(&c, 3);
    sleep_ns(100000000);   /* every worker asleep */
    kiln_detach(main_ctx);
    main_ctx = NULL;
    uint64_t t0 = mono_ns();
    kiln_destroy(rt);
    uint64_t t1 = mono_ns();
    rt = NULL;
    cr_log_info("destroy with 3 idle workers took %llu us", (unsigned long long)((t1 - t0) / 1000));
    assert_no_log();
}

/* Create and destroy runtimes with 3 workers: right after create, after jobs, after
 * frames; the heap is back where it was (exact in the ASan build). */
Test(jobs, create_destroy_loop) {
    kiln_job jobs[16];
    for (int i = 0; i < 16; i++) jobs[i] = (kiln_job){ noop_job, NULL };
    size_t heap0 = 0;
    for (int round = -1; round < 50; round++) {   /* round -1 warms up libc's thread caches */
        if (round == 0) heap0 = heap_bytes_in_use();
        kiln_runtime *r = create_runtime(3, 0);
        if (round % 3 != 0) {
            kiln_ctx *ctx = kiln_attach(r);
            cr_assert_not_null(ctx);
            if (round % 3 == 1) {
                kiln_counter done = { { 0, 0 } };
                kiln_run(ctx, jobs, 16, &done);
                kiln_wait(ctx, &done);
            } else {
                kiln_frame_begin(ctx);
                kiln_run(ctx, jobs, 16, NULL);
                kiln_frame_end(ctx);
            }
            kiln_detach(ctx);
        }
        kiln_destroy(r);
        if (round == 49) {
            size_t heap1 = heap_bytes_in_use();
            if (heap_accounting_exact())
                cr_assert_eq(heap1, heap0, "50 runtimes left %zd heap bytes behind", (ssize_t)(heap1 - heap0));
        }
    }
    assert_no_log();
}

/* ---- an attached thread without a frame loop (an IO thread) helps with the driver's
 * frame jobs in kiln_wait and keeps none of their memory: it once kept 4 KiB per stolen
 * job in its own frame arena, which no frame end reset ---- */

typedef struct own_clock_state {
    _Atomic int    main_jobs_run;       /* main's frame jobs, run by anybody */
    _Atomic int    ran_on_render;       /* ... of them, run on the render context */
    kiln_ctx      *render;
    _Atomic int    waiting;             /* the render thread is inside kiln_wait */
    _Atomic int    release;             /* main lets the render thread return */
    kiln_arena_stats own_before, own_after;   /* the render thread's own frame arena */
    bool           own_back;            /* after its wait, its allocations take its own */
} own_clock_state;

static own_clock_state own_clock;

static void main_frame_job(kiln_ctx *ctx, void *arg) {
    (void)arg;
    JOB_CHECK(kiln_frame_alloc(ctx, 4096, 8) != NULL);
    atomic_fetch_add(&own_clock.main_jobs_run, 1);
    if (ctx == own_clock.render) atomic_fetch_add(&own_clock.ran_on_render, 1);
}

static void *render_thread(void *arg) {
    (void)arg;
    kiln_ctx *render = own_clock.render;
    (void)kiln_frame_alloc(render, 100, 8);   /* its own frame memory, outside jobs */
    kiln_arena_stats_get(kiln_frame_arena(render), &own_clock.own_before);
    /* Wait on a job pinned to main: the wait runs main's frame jobs meanwhile. */
    kiln_counter done = { { 0, 0 } };
    kiln_job job = { noop_job, NULL };
    kiln_arena *own = kiln_frame_arena(render);
    kiln_run_ex(render, &job, 1, &done, &(kiln_run_desc){ .pinned_to = main_ctx });
    atomic_store(&own_clock.waiting, 1);
    kiln_wait(render, &done);
    own_clock.own_back = kiln_frame_arena(render) == own;   /* its own memory again */
    /* Main reads this arena's stats before it releases us: allocate only after that. */
    while (!atomic_load(&own_clock.release)) sched_yield();
    void *p = kiln_frame_alloc(render, 8, 8);
    own_clock.own_back &= p != NULL;
    kiln_arena_stats_get(kiln_frame_arena(render), &own_clock.own_after);
    return NULL;
}

Test(jobs, helping_thread_keeps_no_frame_memory) {
    start(KILN_NO_WORKERS, 0);
    memset(&own_clock, 0, sizeof own_clock);
    kiln_frame_begin(main_ctx);
    kiln_job jobs[200];
    for (int i = 0; i < 200; i++) jobs[i] = (kiln_job){ main_frame_job, NULL };
    kiln_run(main_ctx, jobs, 200, NULL);   /* queued on main's deque, nobody runs them yet */

    pthread_t thread;
    /* The render context is attached here and handed over by pthread_create. */
    own_clock.render = kiln_attach(rt);
    cr_assert_not_null(own_clock.render);
    cr_assert_eq(pthread_create(&thread, NULL, render_thread, NULL), 0);
    while (!atomic_load(&own_clock.waiting)) sched_yield();
    /* Its wait runs main's jobs (nobody else does: no workers, main spins here); then
     * frame end runs the pinned one, freeing the wait. */
    while (atomic_load(&own_clock.main_jobs_run) < 200) sched_yield();
    cr_assert_eq(atomic_load(&own_clock.ran_on_render), 200);
    kiln_frame_end(main_ctx);   /* runs main's jobs and the pinned one, freeing the wait */
    cr_assert_eq(atomic_load(&own_clock.main_jobs_run), 200);
    assert_no_job_failures();
    /* Every byte the IO thread's share of the jobs took went back at frame end (its
     * frame arena's stats count its job memory too). */
    kiln_arena_stats now;
    cr_assert(kiln_arena_stats_get(kiln_frame_arena(own_clock.render), &now));
    cr_assert_leq(now.bytes_in_use, own_clock.own_before.bytes_in_use,
                  "the IO thread kept %zu bytes of main's frame", now.bytes_in_use);
    atomic_store(&own_clock.release, 1);
    pthread_join(thread, NULL);
    cr_assert(own_clock.own_back, "after kiln_wait the thread's frame memory is its own again");
    /* And its own frame memory, outside jobs, is its own: frame end did not touch it. */
    cr_assert_eq(own_clock.own_after.resets, own_clock.own_before.resets);
    cr_assert_geq(own_clock.own_after.bytes_in_use, 108);
    kiln_detach(own_clock.render);
}

/* ---- background jobs under a frame that never runs dry ---- */

/* A stream of 5000 frame jobs of 20 us on main's deque, and then one background job;
 * the one worker is the only thread that runs any of them (main waits isolated on the
 * background job's counter, which runs neither). A HIGH background job runs before the
 * stream's normal jobs, as jobs.h promises, and a normal one gets its turn within a few
 * looks: both once waited for the whole stream (3 s of 50 us jobs in the review). */
static _Atomic int stream_done;
static _Atomic int stream_done_when_bg_ran;

static void stream_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
    busy_ns(20000);
    atomic_fetch_add(&stream_done, 1);
}

static void background_marker(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
    atomic_store(&stream_done_when_bg_ran, atomic_load(&stream_done));
}

Test(jobs, background_jobs_progress_under_a_frame_that_never_runs_dry) {
    start(1, 0);
    static kiln_job stream[5000];
    for (int i = 0; i < 5000; i++) stream[i] = (kiln_job){ stream_job, NULL };
    for (int high = 1; high >= 0; high--) {
        atomic_store(&stream_done, 0);
        atomic_store(&stream_done_when_bg_ran, -1);
        kiln_counter frame = { { 0 } }, bg = { { 0 } };
        kiln_run(main_ctx, stream, 5000, &frame);
        kiln_run_ex(main_ctx, &(kiln_job){ background_marker, NULL }, 1, &bg,
                    &(kiln_run_desc){ .background = true,
                                      .priority = high ? KILN_PRIORITY_HIGH : KILN_PRIORITY_NORMAL });
        kiln_wait_ex(main_ctx, &bg, &(kiln_wait_desc){ .isolate = true });
        int when = atomic_load(&stream_done_when_bg_ran);
        cr_assert(when >= 0 && when < 2500, "%s background job ran after %d of 5000 stream jobs",
                  high ? "a HIGH" : "a normal", when);
        kiln_wait(main_ctx, &frame);
        cr_assert_eq(atomic_load(&stream_done), 5000);
    }
    assert_no_log();
}
