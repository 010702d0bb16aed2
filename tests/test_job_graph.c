/* tests/test_job_graph.c — jobs that wait for counters (kiln_run_desc.after) and isolated
 * waits (kiln_wait_ex): chains, fan-out, fan-in, a 2D grid checked through per-block
 * stamps, frame end with jobs still waiting, prerequisites already done, background and
 * pinned jobs after frame jobs, and isolated waits that never run an unrelated job on
 * the waiting thread (asserted through which thread ran which job, never by time).
 * The bad inputs are rows of tests/misuse_cases.h. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "job_check.h"
#include "recording_log.h"

static recording_log *rec;
static kiln_runtime  *rt;
static kiln_ctx      *main_ctx;
static pthread_t      main_thread;

static void setup(void) {
    rec = recording_log_new();
    job_checks_reset();
    main_thread = pthread_self();
}

static void teardown(void) { recording_fixture_end(&main_ctx, &rt, &rec); }

/* The timeout only turns a deadlock into a failed test; nothing passes or fails by it. */
TestSuite(job_graph, .init = setup, .fini = teardown, .timeout = 60);

static void start(uint32_t workers) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = workers;
    rt = kiln_create(&desc);
    cr_assert_not_null(rt, "kiln_create failed:%s", recorded_summary(rec));
    main_ctx = kiln_attach(rt);
    cr_assert_not_null(main_ctx);
}

#define assert_no_log() \
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec))

static void busy_ns(uint64_t ns) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u + (uint64_t)(b.tv_nsec - a.tv_nsec) < ns);
}

/* Every job takes a stamp when it starts and when it ends: a job after another starts
 * after the other ended. */
static _Atomic uint32_t clock_tick;

typedef struct stamp { uint32_t begin, end; } stamp;

static void stamp_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    stamp *s = arg;
    s->begin = atomic_fetch_add(&clock_tick, 1) + 1;
    busy_ns(20000);
    s->end = atomic_fetch_add(&clock_tick, 1) + 1;
}

/* ---------- chains ---------- */

static void chain(uint32_t workers) {
    start(workers);
    enum { LINKS = 16, WIDTH = 3 };
    static stamp stamps[LINKS][WIDTH];
    memset(stamps, 0, sizeof stamps);
    kiln_counter counters[LINKS] = { 0 };
    for (int i = 0; i < LINKS; i++) {
        kiln_job jobs[WIDTH];
        for (int k = 0; k < WIDTH; k++) jobs[k] = (kiln_job){ stamp_job, &stamps[i][k] };
        const kiln_counter *after[] = { i ? &counters[i - 1] : NULL };
        kiln_run_ex(main_ctx, jobs, WIDTH, &counters[i],
                    &(kiln_run_desc){ .after = after, .after_count = i ? 1 : 0 });
    }
    kiln_wait(main_ctx, &counters[LINKS - 1]);   /* the last counter counts the last links */
    for (int i = 0; i < LINKS; i++) kiln_wait(main_ctx, &counters[i]);
    for (int i = 1; i < LINKS; i++)
        for (int k = 0; k < WIDTH; k++)
            for (int p = 0; p < WIDTH; p++)
                cr_assert_gt(stamps[i][k].begin, stamps[i - 1][p].end, "link %d job %d", i, k);
    assert_no_log();
}

Test(job_graph, chain_runs_in_order) { chain(2); }
Test(job_graph, chain_runs_in_order_without_workers) { chain(KILN_NO_WORKERS); }

/* ---------- fan-out, fan-in ---------- */

Test(job_graph, fan_out_and_fan_in) {
    start(2);
    enum { ROOTS = 4, BRANCHES = 5 };
    stamp roots[ROOTS] = { 0 }, branches[BRANCHES] = { 0 }, joined = { 0 }, joined_one = { 0 };
    kiln_counter root_done = { 0 }, branch_done[BRANCHES] = { 0 }, joined_done = { 0 };
    kiln_job root_jobs[ROOTS];
    for (int i = 0; i < ROOTS; i++) root_jobs[i] = (kiln_job){ stamp_job, &roots[i] };
    kiln_run(main_ctx, root_jobs, 2, &root_done);                /* two runs on one counter */
    kiln_run(main_ctx, root_jobs + 2, ROOTS - 2, &root_done);
    const kiln_counter *after_root[] = { &root_done };
    for (int b = 0; b < BRANCHES; b++)                            /* fan-out */
        kiln_run_ex(main_ctx, &(kiln_job){ stamp_job, &branches[b] }, 1, &branch_done[b],
                    &(kiln_run_desc){ .after = after_root, .after_count = 1 });
    const kiln_counter *after_branches[BRANCHES];
    for (int b = 0; b < BRANCHES; b++) after_branches[b] = &branch_done[b];
    kiln_run_ex(main_ctx, &(kiln_job){ stamp_job, &joined }, 1, &joined_done,   /* fan-in */
                &(kiln_run_desc){ .after = after_branches, .after_count = BRANCHES });
    kiln_run_ex(main_ctx, &(kiln_job){ stamp_job, &joined_one }, 1, &joined_done,
                &(kiln_run_desc){ .after = after_root, .after_count = 1 });
    kiln_wait(main_ctx, &joined_done);
    for (int b = 0; b < BRANCHES; b++) {
        for (int r = 0; r < ROOTS; r++) cr_assert_gt(branches[b].begin, roots[r].end);
        cr_assert_gt(joined.begin, branches[b].end, "branch %d", b);
    }
    for (int r = 0; r < ROOTS; r++) cr_assert_gt(joined_one.begin, roots[r].end);
    assert_no_log();
}

/* ---------- a 2D grid: block (i, j) after (i-1, j) and (i, j-1) ---------- */

enum { GRID = 10 };
static stamp            grid_stamps[GRID][GRID];
static _Atomic unsigned grid_order_wrong;

static void grid_block(kiln_ctx *ctx, void *arg) {
    stamp *s = arg;
    size_t at = (size_t)(s - &grid_stamps[0][0]);
    size_t i = at / GRID, j = at % GRID;
    /* Its predecessors have ended, read here as well as afterwards. */
    if (i > 0 && grid_stamps[i - 1][j].end == 0) atomic_fetch_add(&grid_order_wrong, 1);
    if (j > 0 && grid_stamps[i][j - 1].end == 0) atomic_fetch_add(&grid_order_wrong, 1);
    stamp_job(ctx, arg);
}

static void grid(uint32_t workers) {
    start(workers);
    memset(grid_stamps, 0, sizeof grid_stamps);
    atomic_store(&grid_order_wrong, 0);
    static kiln_counter done[GRID][GRID];
    memset(done, 0, sizeof done);
    for (int i = 0; i < GRID; i++) {
        for (int j = 0; j < GRID; j++) {
            const kiln_counter *after[2];
            uint32_t n = 0;
            if (i > 0) after[n++] = &done[i - 1][j];
            if (j > 0) after[n++] = &done[i][j - 1];
            kiln_run_ex(main_ctx, &(kiln_job){ grid_block, &grid_stamps[i][j] }, 1, &done[i][j],
                        &(kiln_run_desc){ .after = after, .after_count = n });
        }
    }
    for (int i = 0; i < GRID; i++)
        for (int j = 0; j < GRID; j++) kiln_wait(main_ctx, &done[i][j]);
    for (int i = 0; i < GRID; i++) {
        for (int j = 0; j < GRID; j++) {
            cr_assert_neq(grid_stamps[i][j].end, 0u, "block %d,%d ran", i, j);
            if (i > 0) cr_assert_gt(grid_stamps[i][j].begin, grid_stamps[i - 1][j].end);
            if (j > 0) cr_assert_gt(grid_stamps[i][j].begin, grid_stamps[i][j - 1].end);
        }
    }
    cr_assert_eq(atomic_load(&grid_order_wrong), 0u);
    assert_no_log();
}

Test(job_graph, grid_runs_each_block_after_its_two_predecessors) { grid(3); }
Test(job_graph, grid_without_workers) { grid(KILN_NO_WORKERS); }

/* ---------- prerequisites already done ---------- */

Test(job_graph, prerequisites_already_zero_count_as_done) {
    start(1);
    kiln_counter finished = { 0 }, never_used = { 0 }, done = { 0 };
    stamp first = { 0 }, s = { 0 };
    kiln_run(main_ctx, &(kiln_job){ stamp_job, &first }, 1, &finished);
    kiln_wait(main_ctx, &finished);
    const kiln_counter *after[] = { &finished, &never_used, &finished };
    kiln_run_ex(main_ctx, &(kiln_job){ stamp_job, &s }, 1, &done,
                &(kiln_run_desc){ .after = after, .after_count = 3 });
    kiln_wait(main_ctx, &done);
    cr_assert_gt(s.begin, first.end);
    assert_no_log();
}

/* ---------- frame end waits for jobs still waiting ---------- */

static _Atomic unsigned frame_dependents_ran;

static void slow_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
    busy_ns(2000000);
}

static void dependent_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
    atomic_fetch_add(&frame_dependents_ran, 1);
}

/* A job of a worker submits the slow prerequisite and the dependents, without
 * counters for the dependents: frame end has nothing but its accounting to wait by. */
static void frame_root(kiln_ctx *ctx, void *arg) {
    kiln_counter *prerequisite = arg;
    kiln_run(ctx, &(kiln_job){ slow_job, NULL }, 1, prerequisite);
    const kiln_counter *after[] = { prerequisite };
    kiln_job deps[4];
    for (int i = 0; i < 4; i++) deps[i] = (kiln_job){ dependent_job, NULL };
    kiln_run_ex(ctx, deps, 4, NULL, &(kiln_run_desc){ .after = after, .after_count = 1 });
}

Test(job_graph, frame_end_waits_for_jobs_waiting_for_prerequisites) {
    start(2);
    atomic_store(&frame_dependents_ran, 0);
    for (unsigned frame = 1; frame <= 5; frame++) {
        kiln_counter prerequisite = { 0 }, also = { 0 };
        kiln_frame_begin(main_ctx);
        kiln_run(main_ctx, &(kiln_job){ frame_root, &prerequisite }, 1, NULL);
        /* and one from the driver itself, after a counter that no thread waits on */
        kiln_run(main_ctx, &(kiln_job){ slow_job, NULL }, 1, &also);
        const kiln_counter *after[] = { &also };
        kiln_run_ex(main_ctx, &(kiln_job){ dependent_job, NULL }, 1, NULL,
                    &(kiln_run_desc){ .after = after, .after_count = 1 });
        kiln_frame_end(main_ctx);
        cr_assert_eq(atomic_load(&frame_dependents_ran), frame * 5, "frame %u", frame);
    }
    assert_no_log();
}

/* Without workers nobody but the driver runs a background job, so frame end runs the
 * background prerequisite of a frame job that waits, and does not hang. With workers
 * one of them runs it, and frame end waits. */
static void frame_end_after_background(uint32_t workers) {
    start(workers);
    atomic_store(&frame_dependents_ran, 0);
    kiln_counter background = { 0 };
    kiln_frame_begin(main_ctx);
    kiln_run_ex(main_ctx, &(kiln_job){ slow_job, NULL }, 1, &background,
                &(kiln_run_desc){ .background = true });
    const kiln_counter *after[] = { &background };
    kiln_run_ex(main_ctx, &(kiln_job){ dependent_job, NULL }, 1, NULL,
                &(kiln_run_desc){ .after = after, .after_count = 1 });
    kiln_frame_end(main_ctx);
    cr_assert_eq(atomic_load(&frame_dependents_ran), 1u);
    kiln_wait(main_ctx, &background);
    assert_no_log();
}

Test(job_graph, frame_end_after_a_background_job_without_workers) {
    frame_end_after_background(KILN_NO_WORKERS);
}
Test(job_graph, frame_end_after_a_background_job) { frame_end_after_background(2); }

/* ---------- background and pinned jobs after frame jobs ---------- */

static _Atomic(pthread_t) pinned_ran_on;
static _Atomic unsigned   pinned_ran;

static void pinned_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
    atomic_store(&pinned_ran_on, pthread_self());
    atomic_fetch_add(&pinned_ran, 1);
}

Test(job_graph, background_and_pinned_jobs_after_frame_jobs) {
    start(2);
    kiln_counter frame_jobs = { 0 }, background = { 0 }, pinned = { 0 };
    stamp first[3] = { 0 }, later = { 0 };
    kiln_job jobs[3];
    for (int i = 0; i < 3; i++) jobs[i] = (kiln_job){ stamp_job, &first[i] };
    kiln_run(main_ctx, jobs, 3, &frame_jobs);
    const kiln_counter *after[] = { &frame_jobs };
    kiln_run_ex(main_ctx, &(kiln_job){ stamp_job, &later }, 1, &background,
                &(kiln_run_desc){ .after = after, .after_count = 1, .background = true });
    kiln_run_ex(main_ctx, &(kiln_job){ pinned_job, NULL }, 1, &pinned,
                &(kiln_run_desc){ .after = after, .after_count = 1, .pinned_to = main_ctx });
    kiln_wait(main_ctx, &pinned);
    kiln_wait(main_ctx, &background);
    for (int i = 0; i < 3; i++) cr_assert_gt(later.begin, first[i].end);
    cr_assert_eq(atomic_load(&pinned_ran), 1u);
    cr_assert(pthread_equal(atomic_load(&pinned_ran_on), main_thread), "the pin is honoured");
    assert_no_log();
}

/* A pin to a context that detaches while the jobs wait for their prerequisites drops
 * them, even when a thread attached meanwhile gets the same context memory: the pin
 * names the context, not its memory. The prerequisite is held by a gate until the
 * second thread is attached, and that thread keeps waiting on the jobs' own counter
 * (where a pinned job, frame or background, would run) until the main thread has seen the jobs
 * finish on their counter. */
static _Atomic bool   pin_gate_open, pin_reuser_done, pin_registered, pin_first_ready;
static kiln_ctx      *pin_first, *_Atomic pin_second;
static kiln_counter   pin_counter;

static void gate_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
    while (!atomic_load(&pin_gate_open)) sched_yield();
}

static void *pin_first_thread(void *arg) {
    (void)arg;
    pin_first = kiln_attach(rt);
    atomic_store(&pin_first_ready, true);
    while (!atomic_load(&pin_registered)) sched_yield();
    kiln_detach(pin_first);
    return NULL;
}

static void *pin_reuser_thread(void *arg) {
    (void)arg;
    kiln_ctx *ctx = kiln_attach(rt);
    atomic_store(&pin_second, ctx);
    while (!atomic_load(&pin_reuser_done)) {
        kiln_wait(ctx, &pin_counter);   /* where jobs pinned to ctx would run */
        sched_yield();
    }
    kiln_detach(ctx);
    return NULL;
}

static void pin_to_reused_context(bool background) {
    start(2);
    memset(&pin_counter, 0, sizeof pin_counter);
    atomic_store(&pin_gate_open, false);
    atomic_store(&pin_reuser_done, false);
    atomic_store(&pin_second, NULL);
    atomic_store(&pin_registered, false);
    atomic_store(&pin_first_ready, false);
    pthread_t first, second;
    /* The first thread attaches and stays attached until the batch is registered. */
    cr_assert_eq(pthread_create(&first, NULL, pin_first_thread, NULL), 0);
    while (!atomic_load(&pin_first_ready)) sched_yield();
    cr_assert_not_null(pin_first);
    kiln_counter gate = { 0 };
    kiln_run(main_ctx, &(kiln_job){ gate_job, NULL }, 1, &gate);
    const kiln_counter *after[] = { &gate };
    kiln_run_ex(main_ctx, &(kiln_job){ pinned_job, NULL }, 1, &pin_counter,
                &(kiln_run_desc){ .after = after, .after_count = 1, .pinned_to = pin_first,
                                  .background = background });
    atomic_store(&pin_registered, true);
    pthread_join(first, NULL);
    cr_assert_eq(pthread_create(&second, NULL, pin_reuser_thread, NULL), 0);
    while (!atomic_load(&pin_second)) sched_yield();
    cr_assert_eq(atomic_load(&pin_second), pin_first, "the second attach reuses the memory");
    atomic_store(&pin_gate_open, true);
    kiln_wait(main_ctx, &pin_counter);
    atomic_store(&pin_reuser_done, true);
    pthread_join(second, NULL);
    kiln_wait(main_ctx, &gate);
    cr_assert_eq(atomic_load(&pinned_ran), 0u, "a job pinned to a detached context ran");
    cr_assert_eq(count_items(rec, KILN_LOGITEM_JOB_PIN_DETACHING), 1, "%s", recorded_summary(rec));
    /* It names the submitter and the pin's target, not the thread that drained. */
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_JOB_PIN_DETACHING, " pinned to context "), 1,
                 "%s", recorded_summary(rec));
}

/* Messages name the call the user made: kiln_run_ex, not kiln_run. */
Test(job_graph, refusals_name_the_function_called) {
    start(1);
    kiln_counter c = { 0 };
    kiln_run_ex(main_ctx, &(kiln_job){ dependent_job, NULL }, 1, &c,
                &(kiln_run_desc){ .after_count = 1 });
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_JOB_AFTER_NULL, "kiln_run_ex: context"), 1,
                 "%s", recorded_summary(rec));
    kiln_run(main_ctx, &(kiln_job){ NULL, NULL }, 1, &c);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_JOB_NULL_FN, "kiln_run: context"), 1,
                 "%s", recorded_summary(rec));
}

Test(job_graph, pin_to_detached_context_is_not_honoured_by_its_reuser) { pin_to_reused_context(false); }
Test(job_graph, background_pin_to_detached_context_is_not_honoured_by_its_reuser) {
    pin_to_reused_context(true);
}

/* A cycle through two counters never runs; kiln_destroy frees its records (no leak
 * under LeakSanitizer) and says how many jobs never ran. The first job on b is pinned
 * to the main thread, which runs it only when its context detaches, so both
 * registrations find their prerequisite non-zero. */
Test(job_graph, destroy_frees_a_cycle_and_logs_it) {
    start(2);
    kiln_counter a = { 0 }, b = { 0 };
    kiln_run_ex(main_ctx, &(kiln_job){ dependent_job, NULL }, 1, &b,
                &(kiln_run_desc){ .pinned_to = main_ctx });
    const kiln_counter *after_b[] = { &b }, *after_a[] = { &a };
    kiln_run_ex(main_ctx, &(kiln_job){ pinned_job, NULL }, 1, &a,
                &(kiln_run_desc){ .after = after_b, .after_count = 1, .background = true });
    kiln_run_ex(main_ctx, &(kiln_job){ pinned_job, NULL }, 1, &b,
                &(kiln_run_desc){ .after = after_a, .after_count = 1, .background = true });
    kiln_detach(main_ctx);
    main_ctx = NULL;
    kiln_destroy(rt);
    rt = NULL;
    cr_assert_eq(atomic_load(&pinned_ran), 0u);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_JOB_STILL_WAITING), 1, "%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_JOB_STILL_WAITING, "2 jobs of 2 calls"), 1);
}

/* ---------- isolated waits ---------- */

/* Which thread ran what: an unrelated job records whether it ran on the main thread
 * while the main thread was inside its isolated wait. */
static _Atomic bool     in_isolated_wait;
static _Atomic unsigned unrelated_on_waiter, unrelated_ran, related_ran, related_children;
static kiln_counter     related_done;

static void unrelated_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
    if (pthread_equal(pthread_self(), main_thread) && atomic_load(&in_isolated_wait))
        atomic_fetch_add(&unrelated_on_waiter, 1);
    busy_ns(1000000);
    atomic_fetch_add(&unrelated_ran, 1);
}

static void related_child(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
    atomic_fetch_add(&related_children, 1);
}

/* A short job that submits children: counted on the same counter, and on one of its
 * own that it waits on (a nested wait, which keeps the isolation on the waiter). */
static void related_job(kiln_ctx *ctx, void *arg) {
    (void)arg;
    busy_ns(10000);
    kiln_job child = { related_child, NULL };
    kiln_run(ctx, &child, 1, &related_done);
    kiln_counter own = { 0 };
    kiln_run(ctx, (kiln_job[]){ child, child }, 2, &own);
    kiln_wait(ctx, &own);
    atomic_fetch_add(&related_ran, 1);
}

static void isolated_wait(uint32_t workers, bool related_first) {
    start(workers);
    memset(&related_done, 0, sizeof related_done);
    kiln_counter unrelated = { 0 };
    enum { UNRELATED = 8, RELATED = 10 };
    kiln_job u[UNRELATED], r[RELATED];
    for (int i = 0; i < UNRELATED; i++) u[i] = (kiln_job){ unrelated_job, NULL };
    for (int i = 0; i < RELATED; i++) r[i] = (kiln_job){ related_job, NULL };
    if (related_first) kiln_run(main_ctx, r, RELATED, &related_done);
    kiln_run(main_ctx, u, UNRELATED / 2, &unrelated);
    if (!related_first) kiln_run(main_ctx, r, RELATED, &related_done);
    kiln_run(main_ctx, u + UNRELATED / 2, UNRELATED / 2, &unrelated);
    atomic_store(&in_isolated_wait, true);
    kiln_wait_ex(main_ctx, &related_done, &(kiln_wait_desc){ .isolate = true });
    atomic_store(&in_isolated_wait, false);
    cr_assert_eq(atomic_load(&related_ran), (unsigned)RELATED);
    cr_assert_eq(atomic_load(&related_children), 3u * RELATED);
    cr_assert_eq(atomic_load(&unrelated_on_waiter), 0u, "an unrelated job ran on the waiting thread");
    kiln_wait(main_ctx, &unrelated);
    cr_assert_eq(atomic_load(&unrelated_ran), (unsigned)UNRELATED);
    /* A related job that a worker took adds its child to related_done, which the main
     * thread's run still holds: the warning that says so, and nothing else. */
    cr_assert_eq(recorded_count(rec), count_items(rec, KILN_LOGITEM_COUNTER_SHARED),
                 "unexpected log:%s", recorded_summary(rec));
}

Test(job_graph, isolated_wait_runs_no_unrelated_job) { isolated_wait(2, false); }
Test(job_graph, isolated_wait_runs_no_unrelated_job_related_first) { isolated_wait(2, true); }
Test(job_graph, isolated_wait_without_workers_reaches_its_jobs) { isolated_wait(KILN_NO_WORKERS, false); }

/* An isolated wait on jobs that wait for prerequisites of another counter (a frame job,
 * or a background one): without workers the waiter is the only thread that can run the
 * prerequisites, so it runs them rather than wait for ever. */
static void isolated_wait_after(uint32_t workers, bool background) {
    start(workers);
    atomic_store(&frame_dependents_ran, 0);
    kiln_counter prerequisite = { 0 }, dependents = { 0 };
    kiln_run_ex(main_ctx, &(kiln_job){ slow_job, NULL }, 1, &prerequisite,
                &(kiln_run_desc){ .background = background });
    const kiln_counter *after[] = { &prerequisite };
    kiln_run_ex(main_ctx, &(kiln_job){ dependent_job, NULL }, 1, &dependents,
                &(kiln_run_desc){ .after = after, .after_count = 1 });
    kiln_wait_ex(main_ctx, &dependents, &(kiln_wait_desc){ .isolate = true });
    cr_assert_eq(atomic_load(&frame_dependents_ran), 1u);
    kiln_wait(main_ctx, &prerequisite);
    assert_no_log();
}

Test(job_graph, isolated_wait_after_a_frame_job_without_workers) {
    isolated_wait_after(KILN_NO_WORKERS, false);
}
Test(job_graph, isolated_wait_after_a_background_job_without_workers) {
    isolated_wait_after(KILN_NO_WORKERS, true);
}
Test(job_graph, isolated_wait_after_a_frame_job) { isolated_wait_after(2, false); }
Test(job_graph, isolated_wait_after_a_background_job) { isolated_wait_after(2, true); }

/* The main thread waits, isolated, on a short batch while long jobs are queued on its
 * deque behind and before it; with isolation off (a plain kiln_wait_ex) the same setup
 * is legal and finishes too. */
Test(job_graph, wait_ex_without_isolate_is_kiln_wait) {
    start(1);
    kiln_counter c = { 0 };
    stamp s = { 0 };
    kiln_run(main_ctx, &(kiln_job){ stamp_job, &s }, 1, &c);
    kiln_wait_ex(main_ctx, &c, NULL);
    cr_assert_neq(s.end, 0u);
    kiln_run(main_ctx, &(kiln_job){ stamp_job, &s }, 1, &c);
    kiln_wait_ex(main_ctx, &c, &(kiln_wait_desc){ .isolate = false });
    assert_no_log();
}

/* A counter that another runtime's thread keeps running and waiting on, named in after
 * by this runtime at the same time: every call is refused or registers only on this
 * runtime's counters (JOB_AFTER_FOREIGN either way), and nothing of one runtime reaches
 * the other's scheduler. Before the owner was checked inside the hold, the registration
 * could land on the other runtime's counter and its drain freed the record twice. */
static kiln_counter foreign_counter;
static atomic_bool foreign_stop;

static void nop_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
}

static void count_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    atomic_fetch_add((atomic_int *)arg, 1);
}

static void *foreign_runner(void *arg) {
    kiln_runtime *other = arg;
    kiln_ctx *ctx = kiln_attach(other);
    cr_assert_not_null(ctx);
    kiln_job job = { nop_job, NULL };
    while (!atomic_load(&foreign_stop)) {
        kiln_run(ctx, &job, 1, &foreign_counter);
        kiln_wait(ctx, &foreign_counter);
    }
    kiln_detach(ctx);
    return NULL;
}

/* More messages than a recording log keeps: counted by item instead. */
static atomic_int item_counts[KILN_LOGITEM_COUNT];

static void item_counts_reset(void) {
    for (int i = 0; i < KILN_LOGITEM_COUNT; i++) atomic_store(&item_counts[i], 0);
}

/* Messages of every item but a and b. */
static int items_but(kiln_log_item a, kiln_log_item b) {
    int n = 0;
    for (int i = 0; i < KILN_LOGITEM_COUNT; i++)
        if (i != (int)a && i != (int)b) n += atomic_load(&item_counts[i]);
    return n;
}

static void quiet_log(void *user, kiln_log_level level, const char *message) {
    (void)user;
    (void)level;
    (void)message;
}

static void count_item(void *user, kiln_log_level level, kiln_log_item item, const char *message) {
    (void)user;
    (void)level;
    (void)message;
    if ((int)item >= 0 && item < KILN_LOGITEM_COUNT) atomic_fetch_add(&item_counts[item], 1);
}

static const kiln_desc counting_desc = { .worker_count = 2, .log = quiet_log, .log_item = count_item,
                                           .log_every_repeat = true };   /* counted one by one */

Test(job_graph, after_a_counter_another_runtime_keeps_using) {
    item_counts_reset();
    rt = kiln_create(&counting_desc);
    cr_assert_not_null(rt);
    main_ctx = kiln_attach(rt);
    cr_assert_not_null(main_ctx);
    kiln_runtime *other = kiln_create(&counting_desc);
    cr_assert_not_null(other);
    atomic_store(&foreign_stop, false);
    pthread_t thread;
    cr_assert_eq(pthread_create(&thread, NULL, foreign_runner, other), 0);
    const kiln_counter *after[] = { &foreign_counter };
    static atomic_int ran;
    atomic_store(&ran, 0);
    for (int i = 0; i < 50000; i++) {
        kiln_counter done = { 0 };
        kiln_job job = { count_job, &ran };
        kiln_run_ex(main_ctx, &job, 1, &done, &(kiln_run_desc){ .after = after, .after_count = 1 });
        kiln_wait(main_ctx, &done);
    }
    atomic_store(&foreign_stop, true);
    pthread_join(thread, NULL);
    kiln_destroy(other);
    cr_assert_eq(items_but(KILN_LOGITEM_JOB_AFTER_FOREIGN, KILN_LOGITEM_NONE), 0,
                 "only JOB_AFTER_FOREIGN is logged");
    cr_assert_eq(atomic_load(&ran) + atomic_load(&item_counts[KILN_LOGITEM_JOB_AFTER_FOREIGN]) >= 50000, true,
                 "every call ran its job or was refused (a raced one may do both)");
}

/* ---------- a counter and two runtimes ---------- */

/* A job that holds its counter until the test releases it. */
typedef struct gate { atomic_int started, release, done; } gate;

static void gate_init(gate *g) {
    atomic_store(&g->started, 0);
    atomic_store(&g->release, 0);
    atomic_store(&g->done, 0);
}

static void gated_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    gate *g = arg;
    atomic_store(&g->started, 1);
    while (!atomic_load(&g->release)) sched_yield();
    atomic_store(&g->done, 1);
}

static kiln_runtime *_Atomic after_ran_on;

static void note_runtime(kiln_ctx *ctx, void *arg) {
    (void)arg;
    atomic_store(&after_ran_on, kiln_ctx_runtime(ctx));
}


/* Runtime A's run holds a counter, and a run of runtime B names it too: B's is refused
 * (COUNTER_FOREIGN, B's misuse), so the jobs after the counter that A then submits run on
 * A, with A's context, once A's job is done, and both runtimes' frame ends return.
 * Before, B's run shared the counter (COUNTER_SHARED), B's job finished it last, the jobs
 * after it were queued and run on B, and both frame ends waited for ever. */
Test(job_graph, counter_held_by_another_runtime_is_refused) {
    start(1);
    recording_log *rec_b = recording_log_new();
    kiln_runtime *rt_b = recording_runtime(rec_b, 1);
    cr_assert_not_null(rt_b, "kiln_create failed:%s", recorded_summary(rec_b));
    kiln_ctx *ctx_b = kiln_attach(rt_b);
    cr_assert_not_null(ctx_b);
    kiln_frame_begin(main_ctx);
    kiln_frame_begin(ctx_b);
    static gate on_a, on_b;
    gate_init(&on_a);
    gate_init(&on_b);
    atomic_store(&after_ran_on, NULL);

    kiln_counter c = { 0 };
    kiln_run(main_ctx, &(kiln_job){ gated_job, &on_a }, 1, &c);
    while (!atomic_load(&on_a.started)) sched_yield();   /* on A's worker */
    kiln_run(ctx_b, &(kiln_job){ gated_job, &on_b }, 1, &c);
    cr_assert_eq(count_items(rec_b, KILN_LOGITEM_COUNTER_FOREIGN), 1, "log:%s",
                 recorded_summary(rec_b));
    kiln_counter after_done = { 0 };
    const kiln_counter *after[] = { &c };
    kiln_run_ex(main_ctx, &(kiln_job){ note_runtime, NULL }, 1, &after_done,
                &(kiln_run_desc){ .after = after, .after_count = 1 });
    /* A's job ends first: B's, had it been counted, would end the counter. */
    atomic_store(&on_a.release, 1);
    while (!atomic_load(&on_a.done) || counter_jobs(&c) > 1) sched_yield();
    atomic_store(&on_b.release, 1);
    kiln_wait(main_ctx, &after_done);
    kiln_runtime *ran_on = atomic_load(&after_ran_on);
    cr_assert_eq(ran_on, rt, "the job after the counter ran on %s",
                 ran_on == rt_b ? "runtime B, with B's context" : "no runtime");
    kiln_frame_end(main_ctx);
    kiln_frame_end(ctx_b);

    cr_assert_eq(atomic_load(&on_b.started), 0, "B's refused job never ran");
    cr_assert_eq(count_items_with(rec_b, KILN_LOGITEM_COUNTER_FOREIGN, "holds jobs of another runtime"),
                 1, "log:%s", recorded_summary(rec_b));
    cr_assert_eq(recorded_count(rec_b), 1, "log:%s", recorded_summary(rec_b));
    kiln_stats stats_b;
    cr_assert(kiln_stats_get(rt_b, &stats_b));
    cr_assert_eq(stats_b.api_errors, 1, "counted as B's misuse");
    assert_no_log();
    kiln_detach(ctx_b);
    kiln_destroy(rt_b);
    recording_log_free(rec_b);
}

/* Two runtimes' threads make one counter non-zero from zero at the same instant, over
 * and over, and each names it in after at once. A claim from zero is decided by one CAS
 * on the owner word, so the counter never counts both runtimes' jobs: a run is refused
 * while the other runtime's jobs hold it (COUNTER_FOREIGN), an after is refused while
 * they do (JOB_AFTER_FOREIGN), the jobs after it run on the runtime that submitted
 * them, and every frame end of both runtimes returns. */
enum { RACE_ROUNDS = 16384, RACE_FRAME = 64 };
static kiln_counter raced_counter;
static atomic_int race_ready, wrong_runtime;

static void check_runtime(kiln_ctx *ctx, void *arg) {
    if (kiln_ctx_runtime(ctx) != arg) atomic_fetch_add(&wrong_runtime, 1);
}

static void *race_for_the_counter(void *arg) {
    kiln_runtime *own = arg;
    kiln_ctx *ctx = kiln_attach(own);   /* drives its runtime's frame clock */
    const kiln_counter *after[] = { &raced_counter };
    atomic_fetch_add(&race_ready, 1);
    while (atomic_load(&race_ready) < 2) sched_yield();
    for (int i = 0; i < RACE_ROUNDS; i++) {
        if (i % RACE_FRAME == 0) kiln_frame_begin(ctx);
        kiln_counter done = { 0 };
        kiln_run(ctx, &(kiln_job){ nop_job, NULL }, 1, &raced_counter);
        kiln_run_ex(ctx, &(kiln_job){ check_runtime, own }, 1, &done,
                    &(kiln_run_desc){ .after = after, .after_count = 1 });
        kiln_wait(ctx, &done);
        if (i % RACE_FRAME == RACE_FRAME - 1) kiln_frame_end(ctx);
    }
    kiln_detach(ctx);
    return NULL;
}

Test(job_graph, two_runtimes_racing_for_an_idle_counter) {
    _Static_assert(RACE_ROUNDS % RACE_FRAME == 0, "every frame ends");
    item_counts_reset();
    atomic_store(&race_ready, 0);
    atomic_store(&wrong_runtime, 0);
    memset(&raced_counter, 0, sizeof raced_counter);
    kiln_runtime *rts[2];
    pthread_t threads[2];
    for (int i = 0; i < 2; i++) {
        rts[i] = kiln_create(&counting_desc);
        cr_assert_not_null(rts[i]);
    }
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&threads[i], NULL, race_for_the_counter, rts[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < 2; i++) kiln_destroy(rts[i]);
    cr_assert_eq(atomic_load(&wrong_runtime), 0, "jobs after the counter ran on the other runtime");
    cr_assert_eq(items_but(KILN_LOGITEM_COUNTER_FOREIGN, KILN_LOGITEM_JOB_AFTER_FOREIGN), 0,
                 "only the two refusals are logged");
    cr_log_info("COUNTER_FOREIGN %d, JOB_AFTER_FOREIGN %d",
                atomic_load(&item_counts[KILN_LOGITEM_COUNTER_FOREIGN]),
                atomic_load(&item_counts[KILN_LOGITEM_JOB_AFTER_FOREIGN]));
}
