/* tests/test_frame_clock.c — the frame clock against the submission patterns that once
 * broke it (issue "The frame clock holds for every thread"): a pipelined render thread
 * and threads looping on their own jobs must not hold the driver's frame end; a handle
 * pointer held by an attached thread across its own background job, and by a worker's
 * background job across a nested frame job and background job, keeps its slot from
 * reuse. No timing thresholds: a deadline only turns a hang into a failure. */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "job_check.h"
#include "recording_log.h"
#include "runtime/types.h"   /* the runtime's workers, to pin to one */

static recording_log *rec;

static void setup(void) { rec = recording_log_new(); }
static void teardown(void) { recording_log_free(rec); }

TestSuite(frame_clock, .init = setup, .fini = teardown);

static kiln_runtime *make_runtime(uint32_t workers) {
    kiln_runtime *rt = recording_runtime(rec, workers);
    cr_assert_not_null(rt, "log:%s", recorded_summary(rec));
    return rt;
}

/* ---- frame end waits for its own frame's jobs only ---- */

typedef struct pipeline {
    kiln_runtime    *rt;
    kiln_ctx        *worker;         /* where the jobs run (NULL: wherever) */
    _Atomic int     *stop;           /* main is done with its frames */
    _Atomic int     *gave_up;        /* a render thread hit its deadline first */
    _Atomic int     *started;
    _Atomic uint64_t submitted;      /* this thread's jobs submitted so far */
} pipeline;

typedef struct render_job_arg { pipeline *p; uint64_t n; } render_job_arg;

/* Job n finishes only once job n + 1 is queued (with a worker to run them): at no
 * instant is this thread's pipeline empty. */
static void render_job(kiln_ctx *ctx, void *arg) {
    render_job_arg *a = arg;
    JOB_CHECK(kiln_frame_alloc(ctx, 256, 16) != NULL);
    if (a->p->worker)
        while (atomic_load(&a->p->submitted) < a->n + 2 && !atomic_load(a->p->stop)) sched_yield();
}

/* Keeps one frame job in flight: job n + 1 is queued before job n may finish, until
 * main says stop (or 60 s pass: on a frame clock that waits for every thread's jobs,
 * main's first frame end would wait that long). */
static void *render_main(void *arg) {
    pipeline *p = arg;
    kiln_ctx *ctx = kiln_attach(p->rt);
    kiln_counter counters[2] = { { { 0 } }, { { 0 } } };
    render_job_arg args[2];
    kiln_run_desc desc = { .pinned_to = p->worker };
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    atomic_fetch_add(p->started, 1);
    for (uint64_t n = 0; !atomic_load(p->stop); n++) {
        kiln_wait(ctx, &counters[(n + 1) & 1]);   /* job n - 1: its arg is reused now */
        args[(n + 1) & 1] = (render_job_arg){ p, n + 1 };
        kiln_run_ex(ctx, &(kiln_job){ render_job, &args[(n + 1) & 1] }, 1, &counters[(n + 1) & 1], &desc);
        atomic_store(&p->submitted, n + 2);
        kiln_wait(ctx, &counters[n & 1]);
        if ((n & 255) == 0 && seconds_since(&start) > 60) {
            atomic_store(p->gave_up, 1);
            break;
        }
    }
    kiln_wait(ctx, &counters[0]);
    kiln_wait(ctx, &counters[1]);
    kiln_detach(ctx);
    return NULL;
}

static void driver_job(kiln_ctx *ctx, void *arg) {
    (void)arg;
    JOB_CHECK(kiln_frame_alloc(ctx, 64, 8) != NULL);
}

static void frames_beside(uint32_t workers, int render_threads) {
    kiln_runtime *rt = make_runtime(workers);
    kiln_ctx *main_ctx = kiln_attach(rt);
    _Atomic int stop = 0, gave_up = 0, started = 0;
    pipeline p[2];
    pthread_t threads[2];
    for (int i = 0; i < render_threads; i++) {
        p[i] = (pipeline){ .rt = rt, .worker = rt->desc.worker_count ? rt->workers[0] : NULL, .stop = &stop,
                           .gave_up = &gave_up, .started = &started };
        cr_assert_eq(pthread_create(&threads[i], NULL, render_main, &p[i]), 0);
    }
    while (atomic_load(&started) < render_threads) sched_yield();
    for (int f = 0; f < 50 && !atomic_load(&gave_up); f++) {
        kiln_frame_begin(main_ctx);
        kiln_run(main_ctx, &(kiln_job){ driver_job, NULL }, 1, NULL);
        kiln_frame_end(main_ctx);
    }
    int late = atomic_load(&gave_up);
    atomic_store(&stop, 1);
    for (int i = 0; i < render_threads; i++) pthread_join(threads[i], NULL);
    cr_assert_not(late, "the driver's frame ends waited for the render threads' jobs");
    assert_no_job_failures();
    kiln_detach(main_ctx);
    kiln_destroy(rt);
}

Test(frame_clock, a_pipelined_render_thread_does_not_hold_frame_end) { frames_beside(1, 1); }
Test(frame_clock, two_looping_threads_do_not_hold_frame_end) { frames_beside(1, 2); }
Test(frame_clock, pipelines_without_workers_do_not_hold_frame_end) { frames_beside(KILN_NO_WORKERS, 2); }

/* ---- handle slots are never reused under a pointer held across a background job ---- */

typedef struct item { int value; } item;

typedef struct holder {
    kiln_runtime  *rt;
    kiln_handles  *table;
    kiln_handle    h;
    item          *p;              /* what the holder got */
    _Atomic int    step;           /* the two threads' handshake */
    int            seen;           /* *p read at the end */
} holder;

static void wait_step(holder *s, int step) {
    while (atomic_load(&s->step) < step) sched_yield();
}

static void nothing(kiln_ctx *ctx, void *arg) { (void)ctx; (void)arg; }

/* The attached thread: gets a pointer, then (after main freed the handle and ended a
 * frame) waits on a background job pinned to itself, which runs here. */
static void *attached_holder(void *arg) {
    holder *s = arg;
    kiln_ctx *ctx = kiln_attach(s->rt);
    s->p = kiln_handle_get(s->table, s->h);
    atomic_store(&s->step, 1);
    wait_step(s, 2);
    kiln_counter c = { { 0 } };
    kiln_run_ex(ctx, &(kiln_job){ nothing, NULL }, 1, &c,
                &(kiln_run_desc){ .background = true, .pinned_to = ctx });
    kiln_wait(ctx, &c);
    atomic_store(&s->step, 3);
    wait_step(s, 4);
    s->seen = s->p->value;
    kiln_handles_quiescent(ctx);
    kiln_detach(ctx);
    return NULL;
}

/* Main: frees and ends frames, then allocates: the slot must not come back while the
 * holder has passed no quiescent point since its get. */
static void free_end_frames_alloc(holder *s, kiln_ctx *main_ctx) {
    cr_assert(kiln_handle_free(main_ctx, s->table, s->h));
    kiln_frame_begin(main_ctx);
    kiln_frame_end(main_ctx);
}

static void assert_not_reused(holder *s, kiln_ctx *main_ctx) {
    for (int f = 0; f < 3; f++) {
        kiln_frame_begin(main_ctx);
        kiln_frame_end(main_ctx);
    }
    item *fresh = NULL;
    kiln_handle h2 = kiln_handle_alloc(main_ctx, s->table, (void **)&fresh);
    if (h2.bits) {
        cr_assert_neq(fresh, s->p, "the slot came back while a pointer to it was held");
        fresh->value = 222;
    }
}

Test(frame_clock, attached_threads_background_job_is_no_quiescent_point) {
    kiln_runtime *rt = make_runtime(1);
    kiln_ctx *main_ctx = kiln_attach(rt);
    holder s = { .rt = rt };
    s.table = kiln_handles_create(rt, &(kiln_handles_desc){ .item_size = sizeof(item), .capacity = 1 });
    cr_assert_not_null(s.table, "log:%s", recorded_summary(rec));
    item *it = NULL;
    s.h = kiln_handle_alloc(main_ctx, s.table, (void **)&it);
    cr_assert_not_null(it);
    it->value = 111;
    pthread_t thread;
    cr_assert_eq(pthread_create(&thread, NULL, attached_holder, &s), 0);
    wait_step(&s, 1);
    free_end_frames_alloc(&s, main_ctx);
    atomic_store(&s.step, 2);
    wait_step(&s, 3);   /* its background job ran on it */
    assert_not_reused(&s, main_ctx);
    atomic_store(&s.step, 4);
    pthread_join(thread, NULL);
    cr_assert_eq(s.seen, 111, "the holder read another item's value");
    kiln_handles_destroy(s.table);
    kiln_detach(main_ctx);
    kiln_destroy(rt);
}

/* On the worker: background job B1 gets the pointer, runs frame job F pinned to its own
 * worker, F runs background job B2; B2's end must leave B1 protected. */
static holder *nested;

static void inner_background(kiln_ctx *ctx, void *arg) { (void)ctx; (void)arg; }

static void middle_frame_job(kiln_ctx *ctx, void *arg) {
    (void)arg;
    kiln_counter c = { { 0 } };
    kiln_run_ex(ctx, &(kiln_job){ inner_background, NULL }, 1, &c,
                &(kiln_run_desc){ .background = true, .pinned_to = ctx });
    kiln_wait(ctx, &c);
}

static void outer_background(kiln_ctx *ctx, void *arg) {
    (void)arg;
    holder *s = nested;
    s->p = kiln_handle_get(s->table, s->h);
    kiln_counter c = { { 0 } };
    kiln_run_ex(ctx, &(kiln_job){ middle_frame_job, NULL }, 1, &c, &(kiln_run_desc){ .pinned_to = ctx });
    kiln_wait(ctx, &c);
    atomic_store(&s->step, 1);   /* B2 has returned */
    wait_step(s, 4);
    s->seen = s->p->value;
}

Test(frame_clock, nested_background_jobs_keep_the_outer_one_protected) {
    kiln_runtime *rt = make_runtime(1);
    kiln_ctx *main_ctx = kiln_attach(rt);
    holder s = { .rt = rt };
    nested = &s;
    s.table = kiln_handles_create(rt, &(kiln_handles_desc){ .item_size = sizeof(item), .capacity = 1 });
    cr_assert_not_null(s.table);
    item *it = NULL;
    s.h = kiln_handle_alloc(main_ctx, s.table, (void **)&it);
    cr_assert_not_null(it);
    it->value = 111;
    kiln_counter b1 = { { 0 } };
    kiln_run_ex(main_ctx, &(kiln_job){ outer_background, NULL }, 1, &b1,
                &(kiln_run_desc){ .background = true });
    wait_step(&s, 1);
    free_end_frames_alloc(&s, main_ctx);
    assert_not_reused(&s, main_ctx);
    atomic_store(&s.step, 4);
    kiln_wait(main_ctx, &b1);
    cr_assert_eq(s.seen, 111, "the background job read another item's value");
    kiln_handles_destroy(s.table);
    kiln_detach(main_ctx);
    kiln_destroy(rt);
}

/* ---- a job whose frame memory cannot be made gets NULL, said once, never a crash ---- */

typedef struct starved { int got, refused; } starved;

static void starved_job(kiln_ctx *ctx, void *arg) {
    starved *s = arg;
    for (int i = 0; i < 3; i++) {
        if (kiln_frame_alloc(ctx, 64, 8)) s->got++;
        else s->refused++;
    }
}

Test(frame_clock, a_job_without_frame_memory_is_refused_once) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = KILN_NO_WORKERS;
    desc.memory_limit = 2 * ((size_t)64 << 10);   /* the own arena's block and one more */
    kiln_runtime *rt = kiln_create(&desc);
    cr_assert_not_null(rt, "log:%s", recorded_summary(rec));
    kiln_ctx *main_ctx = kiln_attach(rt);
    cr_assert_not_null(main_ctx);
    starved s[2] = { { 0, 0 }, { 0, 0 } };
    for (int f = 0; f < 2; f++) {   /* the job arena of odd frames takes the last block */
        kiln_frame_begin(main_ctx);
        kiln_counter c = { { 0 } };
        kiln_run(main_ctx, &(kiln_job){ starved_job, &s[f] }, 1, &c);
        kiln_wait(main_ctx, &c);
        kiln_frame_end(main_ctx);
    }
    cr_assert_eq(s[0].got, 3, "log:%s", recorded_summary(rec));
    cr_assert_eq(s[1].refused, 3, "the even frames' job arena could not be made");
    cr_assert_eq(count_items(rec, KILN_LOGITEM_JOB_FRAME_MEMORY_NONE), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_JOB_FRAME_MEMORY_NONE, "context"), 1);
    kiln_detach(main_ctx);
    kiln_destroy(rt);
}
