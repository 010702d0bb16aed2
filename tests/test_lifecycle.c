/* tests/test_lifecycle.c — the frame a job belongs to, whoever submits it. Frame jobs
 * from a render thread with a loop of its own and from background jobs keep their frame
 * memory and their handle pointers while they run, across the driver's frame ends; a
 * pin to a context that is detaching is refused or run, never stranded; a background
 * job pinned to a thread runs only when that thread waits on its counter; pinned jobs
 * come out in order whatever the backlog; the frame clock refuses worker contexts and
 * calls from inside a job, and a context cannot detach from inside a job it runs.
 *
 * The races of the first tests are real ones: correct code passes them every time, and
 * a frame end that resets memory under a running job fails them (a pattern check, an
 * overlap check, a changed handle item, or a crash). Nothing passes or fails by time:
 * jobs that must span frame ends spin for a count of iterations, and the suite timeout
 * only turns a hang into a failure. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "job_check.h"
#include "recording_log.h"

static recording_log *rec;
static kiln_runtime  *rt;
static kiln_ctx      *main_ctx;


static void setup(void) {
    rec = recording_log_new();
    job_checks_reset();
}

static void teardown(void) {
    recording_fixture_end(&main_ctx, &rt, &rec);
}

TestSuite(lifecycle, .init = setup, .fini = teardown, .timeout = 120);

static void start(uint32_t workers, size_t block_size) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = workers;
    desc.block_size = block_size;
    rt = kiln_create(&desc);
    cr_assert_not_null(rt, "kiln_create failed:%s", recorded_summary(rec));
    main_ctx = kiln_attach(rt);
    cr_assert_not_null(main_ctx);
}

static uint64_t api_errors(void) {
    kiln_stats stats;
    cr_assert(kiln_stats_get(rt, &stats));
    return stats.api_errors;
}

/* Runs fn as one job pinned to the main thread (this one) and waits for it: the job
 * runs here, inside the wait, with main's context. */
static void run_pinned_to_main(kiln_job_fn fn) {
    kiln_counter c = { { 0, 0 } };
    kiln_run_ex(main_ctx, &(kiln_job){ fn, NULL }, 1, &c, &(kiln_run_desc){ .pinned_to = main_ctx });
    kiln_wait(main_ctx, &c);
}

/* ---------- frame memory and handles of jobs from every submitter ---------- */

/* What a churn job checks: its frame allocations (two small, one larger than a 16 KiB
 * block) keep their pattern and do not overlap while it runs across frame ends, and the
 * handle item it resolved keeps naming its handle (its slot is not reused under it). */
typedef struct churn_item { uint64_t id; } churn_item;

#define CHURN_HANDLES 64
#define CHURN_SPIN    4000   /* iterations a job holds its memory: long enough to span frames */

static kiln_handles      *churn_items;
static _Atomic uint64_t   churn_live[CHURN_HANDLES];   /* handle values, as uint64_t */
static _Atomic uint32_t   churn_serial;
static _Atomic unsigned   churn_jobs_done, churn_stop, render_batches_done;

static uint64_t handle_bits(kiln_handle h) { return h.bits; }
static kiln_handle handle_of(uint64_t bits) { return (kiln_handle){ bits }; }

static bool overlaps(const char *a, size_t an, const char *b, size_t bn) {
    return a < b + bn && b < a + an;
}

static void churn_job(kiln_ctx *ctx, void *arg) {
    (void)arg;
    uint32_t seed = atomic_fetch_add(&churn_serial, 1);
    size_t sizes[3] = { 256, 256, 40u << 10 };
    char *p[3];
    for (int i = 0; i < 3; i++) {
        p[i] = kiln_frame_alloc(ctx, sizes[i], 16);
        JOB_CHECK(p[i] != NULL);
        if (!p[i]) return;
        fill_pattern(p[i], sizes[i], seed * 3 + (uint32_t)i);
    }
    JOB_CHECK(!overlaps(p[0], sizes[0], p[1], sizes[1]));
    JOB_CHECK(!overlaps(p[0], sizes[0], p[2], sizes[2]));
    JOB_CHECK(!overlaps(p[1], sizes[1], p[2], sizes[2]));
    /* A handle another job may free meanwhile: the pointer stays this item's. */
    uint64_t bits = atomic_load(&churn_live[seed % CHURN_HANDLES]);
    churn_item *item = bits ? kiln_handle_get(churn_items, handle_of(bits)) : NULL;
    uint64_t id = item ? item->id : 0;
    JOB_CHECK(!item || id == bits);
    for (volatile unsigned spin = 0; spin < CHURN_SPIN; spin++) {
    }
    for (int i = 0; i < 3; i++) JOB_CHECK(check_pattern(p[i], sizes[i], seed * 3 + (uint32_t)i));
    if (item) JOB_CHECK(item->id == id);
    /* Replace a handle: free one, allocate its successor (the slot's reuse comes later). */
    uint64_t old = atomic_exchange(&churn_live[(seed * 7) % CHURN_HANDLES], 0);
    if (old) JOB_CHECK(kiln_handle_free(ctx, churn_items, handle_of(old)));
    void *fresh;
    kiln_handle h = kiln_handle_alloc(ctx, churn_items, &fresh);
    if (h.bits) {
        ((churn_item *)fresh)->id = handle_bits(h);
        uint64_t displaced = atomic_exchange(&churn_live[(seed * 7) % CHURN_HANDLES], handle_bits(h));
        if (displaced) JOB_CHECK(kiln_handle_free(ctx, churn_items, handle_of(displaced)));
    }
    atomic_fetch_add(&churn_jobs_done, 1);
}

/* A render thread with a frame loop of its own: it resets its own frame arena at its
 * boundary, so workers run its jobs (it steals none), and waits for each batch. */
static void *render_main(void *arg) {
    unsigned batches = *(unsigned *)arg;
    kiln_ctx *ctx = kiln_attach(rt);
    if (!ctx) {
        job_fail(__LINE__, "render attach");
        return NULL;
    }
    for (unsigned b = 0; b < batches; b++) {
        kiln_arena_reset(kiln_frame_arena(ctx));   /* its own frame boundary */
        kiln_counter c = { { 0, 0 } };
        kiln_job jobs[3] = { { churn_job, NULL }, { churn_job, NULL }, { churn_job, NULL } };
        kiln_run(ctx, jobs, 1 + b % 3, &c);
        kiln_wait(ctx, &c);
        kiln_handles_quiescent(ctx);
        atomic_fetch_add(&render_batches_done, 1);
    }
    kiln_detach(ctx);
    return NULL;
}

/* A background job that submits frame jobs and waits for them, until told to stop. */
static void background_submitter(kiln_ctx *ctx, void *arg) {
    (void)arg;
    while (!atomic_load(&churn_stop)) {
        kiln_counter c = { { 0, 0 } };
        kiln_job jobs[2] = { { churn_job, NULL }, { churn_job, NULL } };
        kiln_run(ctx, jobs, 2, &c);
        kiln_wait(ctx, &c);
    }
}

static void churn_start(void) {
    churn_items = kiln_handles_create(rt, &(kiln_handles_desc){ .name = "churn",
                                                                .item_size = sizeof(churn_item),
                                                                .capacity = 1024 });
    cr_assert_not_null(churn_items);
    for (int i = 0; i < CHURN_HANDLES; i++) {
        void *item;
        kiln_handle h = kiln_handle_alloc(main_ctx, churn_items, &item);
        cr_assert(h.bits != 0);
        ((churn_item *)item)->id = handle_bits(h);
        atomic_store(&churn_live[i], handle_bits(h));
    }
    atomic_store(&churn_serial, 0);
    atomic_store(&churn_jobs_done, 0);
    atomic_store(&render_batches_done, 0);
    atomic_store(&churn_stop, 0);
}

static void churn_finish(void) {
    for (int i = 0; i < CHURN_HANDLES; i++) atomic_store(&churn_live[i], 0);
    kiln_handles_destroy(churn_items);
    churn_items = NULL;
}

Test(lifecycle, frame_jobs_from_a_render_thread_keep_their_memory_across_frame_ends) {
    start(3, 16u << 10);
    churn_start();
    unsigned batches = 3000;
    pthread_t render;
    cr_assert_eq(pthread_create(&render, NULL, render_main, &batches), 0);
    /* The driver runs empty frames as fast as it can: each frame end meets the render
     * thread's jobs at every stage, before, during and after its drain. */
    while (atomic_load(&render_batches_done) < batches) {
        kiln_frame_begin(main_ctx);
        kiln_frame_end(main_ctx);
    }
    pthread_join(render, NULL);
    kiln_frame_begin(main_ctx);
    kiln_frame_end(main_ctx);
    assert_no_job_failures();
    churn_finish();
    kiln_detach(main_ctx);
    main_ctx = NULL;
    kiln_destroy(rt);
    rt = NULL;
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_BLOCK_POOL_BLOCKS_LIVE, KILN_LOG_ERROR) +
                 count_items_at(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, KILN_LOG_ERROR), 0, "log:%s",
                 recorded_summary(rec));
}

Test(lifecycle, frame_jobs_from_background_jobs_keep_their_memory_across_frame_ends) {
    start(2, 16u << 10);
    churn_start();
    kiln_counter bg = { { 0, 0 } };
    kiln_run_ex(main_ctx, &(kiln_job){ background_submitter, NULL }, 1, &bg,
                &(kiln_run_desc){ .background = true });
    /* The driver's own frame jobs too, in the same frames. */
    for (unsigned frame = 0; atomic_load(&churn_jobs_done) < 3000 && frame < 1000000; frame++) {
        kiln_frame_begin(main_ctx);
        if (frame % 4 == 0) kiln_run(main_ctx, &(kiln_job){ churn_job, NULL }, 1, NULL);
        kiln_frame_end(main_ctx);
    }
    atomic_store(&churn_stop, 1);
    kiln_wait(main_ctx, &bg);
    kiln_frame_begin(main_ctx);
    kiln_frame_end(main_ctx);
    assert_no_job_failures();
    cr_assert_geq(atomic_load(&churn_jobs_done), 3000);
    churn_finish();
}

/* ---------- a pin to a context that is detaching ---------- */

static _Atomic unsigned pin_ran;
static _Atomic(kiln_ctx *) pin_target;
static _Atomic unsigned pin_go, pin_detached;

static void pin_count_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
    atomic_fetch_add(&pin_ran, 1);
}

static void *pin_target_main(void *arg) {
    (void)arg;
    kiln_ctx *ctx = kiln_attach(rt);
    atomic_store(&pin_target, ctx);
    while (!atomic_load(&pin_go)) sched_yield();
    kiln_detach(ctx);
    atomic_store(&pin_detached, 1);
    return NULL;
}

Test(lifecycle, a_pin_to_a_detaching_context_is_refused_or_run_never_stranded) {
    start(1, 0);
    for (int cycle = 0; cycle < 200; cycle++) {
        atomic_store(&pin_target, NULL);
        atomic_store(&pin_go, 0);
        atomic_store(&pin_detached, 0);
        pthread_t thread;
        cr_assert_eq(pthread_create(&thread, NULL, pin_target_main, NULL), 0);
        kiln_ctx *target;
        while (!(target = atomic_load(&pin_target))) sched_yield();
        kiln_counter c = { { 0, 0 } };
        atomic_store(&pin_go, 1);
        /* Pins land before, during and after its detach; every one must end, run or
         * refused, so the wait and the frame end below return. */
        while (!atomic_load(&pin_detached))
            kiln_run_ex(main_ctx, &(kiln_job){ pin_count_job, NULL }, 1, &c,
                        &(kiln_run_desc){ .pinned_to = target });
        pthread_join(thread, NULL);
        kiln_wait(main_ctx, &c);
        kiln_frame_begin(main_ctx);
        kiln_frame_end(main_ctx);
    }
    /* Refusals name the detaching context (JOB_PIN_DETACHING) or, once it is gone, the
     * bad pin (JOB_BAD_PIN); nothing else is said. */
    size_t said = count_items(rec, KILN_LOGITEM_JOB_PIN_DETACHING) + count_items(rec, KILN_LOGITEM_JOB_BAD_PIN);
    for (size_t i = 0; i < rec->count; i++) {   /* the kept ones; the rest only counted */
        kiln_log_item item = rec->messages[i].item;
        cr_assert(item == KILN_LOGITEM_JOB_PIN_DETACHING || item == KILN_LOGITEM_JOB_BAD_PIN,
                  "unexpected: %s (%zu refusals)", rec->messages[i].text, said);
    }
}

/* ---------- background jobs pinned to a thread ---------- */

static _Atomic unsigned bg_pinned_ran;
static _Atomic(pthread_t *) bg_expected_thread;

static void bg_pinned_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
    JOB_CHECK(pthread_equal(pthread_self(), *atomic_load(&bg_expected_thread)));
    atomic_fetch_add(&bg_pinned_ran, 1);
}

static void nothing_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
}

Test(lifecycle, a_background_job_pinned_to_main_runs_only_when_main_waits_on_its_counter) {
    start(1, 0);
    pthread_t self = pthread_self();
    atomic_store(&bg_expected_thread, &self);
    kiln_counter bg = { { 0, 0 } };
    kiln_run_ex(main_ctx, &(kiln_job){ bg_pinned_job, NULL }, 1, &bg,
                &(kiln_run_desc){ .pinned_to = main_ctx, .background = true });
    /* Neither a frame end nor a wait on another counter runs it. */
    for (int frame = 0; frame < 3; frame++) {
        kiln_frame_begin(main_ctx);
        run_pinned_to_main(nothing_job);   /* a wait on another counter */
        kiln_frame_end(main_ctx);
    }
    cr_assert_eq(atomic_load(&bg_pinned_ran), 0);
    kiln_wait(main_ctx, &bg);
    cr_assert_eq(atomic_load(&bg_pinned_ran), 1);
    assert_no_job_failures();
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

Test(lifecycle, a_background_job_pinned_to_a_non_worker_without_a_counter_is_refused) {
    start(1, 0);
    kiln_run_ex(main_ctx, &(kiln_job){ bg_pinned_job, NULL }, 1, NULL,
                &(kiln_run_desc){ .pinned_to = main_ctx, .background = true });
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_JOB_BAD_PIN, KILN_LOG_ERROR), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(api_errors(), 1);
    kiln_frame_begin(main_ctx);
    kiln_frame_end(main_ctx);
    cr_assert_eq(atomic_load(&bg_pinned_ran), 0);
}

/* ---------- pinned jobs in order, whatever the backlog ---------- */

#define ORDER_JOBS 20000
static uint32_t order_seen[ORDER_JOBS];
static uint32_t order_next;   /* main thread only: pinned jobs run on main */

static void order_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    if (order_next < ORDER_JOBS) order_seen[order_next++] = (uint32_t)(uintptr_t)arg;
}

Test(lifecycle, pinned_jobs_run_in_submission_order_across_growth_and_wrap) {
    start(1, 0);
    order_next = 0;
    static kiln_job jobs[ORDER_JOBS];
    for (uint32_t i = 0; i < ORDER_JOBS; i++) jobs[i] = (kiln_job){ order_job, (void *)(uintptr_t)i };
    /* Batches of growing size, each partly drained before the next, so the ring wraps
     * and grows with tasks still in it. */
    kiln_counter c = { { 0, 0 } };
    uint32_t submitted = 0;
    for (uint32_t batch = 1; submitted < ORDER_JOBS; batch *= 3) {
        uint32_t n = ORDER_JOBS - submitted < batch ? ORDER_JOBS - submitted : batch;
        kiln_run_ex(main_ctx, jobs + submitted, n, &c, &(kiln_run_desc){ .pinned_to = main_ctx });
        submitted += n;
        kiln_counter one = { { 0, 0 } };   /* a wait runs the oldest pinned ones first */
        kiln_run_ex(main_ctx, &(kiln_job){ nothing_job, NULL }, 1, &one, &(kiln_run_desc){ 0 });
        kiln_wait(main_ctx, &one);
    }
    kiln_wait(main_ctx, &c);
    cr_assert_eq(order_next, ORDER_JOBS);
    for (uint32_t i = 0; i < ORDER_JOBS; i++) cr_assert_eq(order_seen[i], i, "job %u ran at %u", order_seen[i], i);
}

/* ---------- the frame clock from the wrong place ---------- */

static _Atomic uint64_t clock_calls_returned;

static void worker_claims_clock_job(kiln_ctx *ctx, void *arg) {
    (void)arg;
    atomic_store(&clock_calls_returned, kiln_frame_begin(ctx) + 1);
    kiln_frame_end(ctx);
}

Test(lifecycle, a_worker_context_cannot_drive_the_frame_clock) {
    start(1, 0);
    kiln_frame_begin(main_ctx);
    kiln_frame_end(main_ctx);
    kiln_counter c = { { 0, 0 } };
    /* Main calls no kiln function until the job is done, so the worker runs it, with its
     * own context. */
    atomic_store(&clock_calls_returned, 0);
    kiln_run(main_ctx, &(kiln_job){ worker_claims_clock_job, NULL }, 1, &c);
    while (atomic_load(&clock_calls_returned) == 0) sched_yield();
    kiln_wait(main_ctx, &c);
    cr_assert_eq(atomic_load(&clock_calls_returned), 2, "begin returned the current frame");
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_FRAME_WORKER_CONTEXT, KILN_LOG_ERROR), 2, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 2, "log:%s", recorded_summary(rec));
    cr_assert_eq(api_errors(), 2);
    /* The driver still drives. */
    cr_assert_eq(kiln_frame_begin(main_ctx), 2);
    kiln_frame_end(main_ctx);
    cr_assert_eq(kiln_frame_number(rt), 2);
}

static void driver_ends_frame_inside_job(kiln_ctx *ctx, void *arg) {
    (void)arg;
    kiln_frame_end(ctx);
    kiln_frame_begin(ctx);
}

Test(lifecycle, the_driver_cannot_end_or_begin_a_frame_from_inside_a_job) {
    start(1, 0);
    kiln_frame_begin(main_ctx);
    run_pinned_to_main(driver_ends_frame_inside_job);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_FRAME_INSIDE_JOB, KILN_LOG_ERROR), 2, "log:%s", recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 2, "log:%s", recorded_summary(rec));
    cr_assert_eq(kiln_frame_number(rt), 1, "the frame stays open");
    kiln_frame_end(main_ctx);   /* and closes normally */
    cr_assert_eq(recorded_count(rec), 2, "log:%s", recorded_summary(rec));
}

static void detach_inside_job(kiln_ctx *ctx, void *arg) {
    (void)arg;
    kiln_detach(ctx);
}

Test(lifecycle, a_context_cannot_detach_from_inside_a_job_it_runs) {
    start(1, 0);
    run_pinned_to_main(detach_inside_job);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_CONTEXT_INSIDE_JOB, KILN_LOG_ERROR), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(api_errors(), 1);
    kiln_frame_begin(main_ctx);   /* still attached and usable */
    cr_assert_not_null(kiln_frame_alloc(main_ctx, 64, 16));
    kiln_frame_end(main_ctx);
    cr_assert_eq(recorded_count(rec), 1, "log:%s", recorded_summary(rec));
}

/* ---------- frame arena resets under jobs ---------- */

static _Atomic int inner_reset_done;

static void reset_own_frame_arena_job(kiln_ctx *ctx, void *arg) {
    (void)arg;
    kiln_arena_reset(kiln_frame_arena(ctx));
    atomic_store(&inner_reset_done, 1);
}

/* A job pinned to main holds frame memory while a job it waits for (also on main)
 * resets main's frame arena: refused, and the outer job's memory is intact. */
static void outer_holds_frame_memory_job(kiln_ctx *ctx, void *arg) {
    (void)arg;
    unsigned char *mine = kiln_frame_alloc(ctx, 1000, 16);
    JOB_CHECK(mine != NULL);
    if (!mine) return;
    memset(mine, 0x5A, 1000);
    kiln_counter c = { { 0, 0 } };
    kiln_run_ex(ctx, &(kiln_job){ reset_own_frame_arena_job, NULL }, 1, &c,
                &(kiln_run_desc){ .pinned_to = ctx });
    kiln_wait(ctx, &c);
    unsigned char *next = kiln_frame_alloc(ctx, 1000, 16);
    JOB_CHECK(next != mine);
    for (int i = 0; i < 1000; i++) JOB_CHECK(mine[i] == 0x5A);
}

Test(lifecycle, a_frame_arena_is_not_reset_from_inside_a_job_on_its_thread) {
    start(1, 0);
    run_pinned_to_main(outer_holds_frame_memory_job);
    cr_assert_eq(atomic_load(&inner_reset_done), 1);
    assert_no_job_failures();
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_ARENA_RESET_INSIDE_JOB, KILN_LOG_ERROR), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 1, "log:%s", recorded_summary(rec));
}

Test(lifecycle, the_driver_frame_arena_is_not_reset_while_its_frame_is_open) {
    start(1, 0);
    kiln_frame_begin(main_ctx);
    unsigned char *p = kiln_frame_alloc(main_ctx, 500, 16);
    cr_assert_not_null(p);
    memset(p, 0x77, 500);
    kiln_arena_reset(kiln_frame_arena(main_ctx));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_ARENA_DRIVER_FRAME_RESET, KILN_LOG_ERROR), 1, "log:%s",
                 recorded_summary(rec));
    for (int i = 0; i < 500; i++) cr_assert_eq(p[i], 0x77);
    kiln_frame_end(main_ctx);
    kiln_arena_reset(kiln_frame_arena(main_ctx));   /* between frames: harmless, allowed */
    cr_assert_eq(recorded_count(rec), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(api_errors(), 1);
}

/* ---------- pinned background jobs of many counters ---------- */

#define LANE_COUNTERS 300
#define LANE_JOBS     7
static uint32_t lane_seen[LANE_COUNTERS][LANE_JOBS];   /* main thread only */
static uint32_t lane_next[LANE_COUNTERS];

static void lane_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    uint32_t v = (uint32_t)(uintptr_t)arg, c = v / LANE_JOBS;
    JOB_CHECK(lane_next[c] < LANE_JOBS);
    if (lane_next[c] < LANE_JOBS) lane_seen[c][lane_next[c]++] = v % LANE_JOBS;
}

/* Background jobs pinned to main under 300 counters, interleaved: a wait on one counter
 * runs exactly its own jobs, in submission order, and leaves every other counter's
 * parked; waits in a scattered order empty the lanes one by one. */
Test(lifecycle, pinned_background_jobs_run_per_counter_in_order) {
    start(1, 0);
    memset(lane_next, 0, sizeof lane_next);
    static kiln_counter counters[LANE_COUNTERS];
    memset(counters, 0, sizeof counters);
    kiln_run_desc pin = { .pinned_to = main_ctx, .background = true };
    for (uint32_t j = 0; j < LANE_JOBS; j++)
        for (uint32_t c = 0; c < LANE_COUNTERS; c++)
            kiln_run_ex(main_ctx, &(kiln_job){ lane_job, (void *)(uintptr_t)(c * LANE_JOBS + j) }, 1,
                        &counters[c], &pin);
    for (uint32_t k = 0; k < LANE_COUNTERS; k++) {
        uint32_t c = (k * 97) % LANE_COUNTERS;   /* 97 and 300 are coprime: each once */
        kiln_wait(main_ctx, &counters[c]);
        cr_assert_eq(lane_next[c], LANE_JOBS, "counter %u ran %u of its jobs", c, lane_next[c]);
        for (uint32_t j = 0; j < LANE_JOBS; j++) cr_assert_eq(lane_seen[c][j], j, "counter %u", c);
        uint32_t other = ((k + 1) * 97) % LANE_COUNTERS;
        if (k + 1 < LANE_COUNTERS) cr_assert_eq(lane_next[other], 0, "a wait ran another counter's job");
    }
    assert_no_job_failures();
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

/* ---- what detach and destroy run before they return ---- */

static _Atomic int leftovers_ran;

static void leftover_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
    atomic_fetch_add(&leftovers_ran, 1);
}

Test(lifecycle, detach_and_destroy_run_and_count_the_jobs_left_queued) {
    atomic_store(&leftovers_ran, 0);
    rt = recording_runtime(rec, KILN_NO_WORKERS);
    cr_assert_not_null(rt);
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_job jobs[3] = { { leftover_job, NULL }, { leftover_job, NULL }, { leftover_job, NULL } };
    kiln_counter bg = { { 0 } };
    kiln_run(ctx, jobs, 2, NULL);
    kiln_run_ex(ctx, jobs, 1, &bg, &(kiln_run_desc){ .background = true });
    kiln_detach(ctx);   /* runs all three here, the background one too */
    cr_assert_eq(atomic_load(&leftovers_ran), 3);
    kiln_stats stats;
    cr_assert(kiln_stats_get(rt, &stats));
    cr_assert_eq(stats.jobs_run_at_detach, 3);
    cr_assert_eq(recorded_count(rec), 0, "a detach is no error:%s", recorded_summary(rec));

    /* A context left attached at destroy: detached there, its jobs run, and the count said. */
    ctx = kiln_attach(rt);
    kiln_run(ctx, jobs, 3, NULL);
    kiln_destroy(rt);
    rt = NULL;
    cr_assert_eq(atomic_load(&leftovers_ran), 6);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_CONTEXT_STILL_ATTACHED), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_JOBS_RAN_AT_DESTROY, "3 queued jobs ran"), 1,
                 "log:%s", recorded_summary(rec));
}
