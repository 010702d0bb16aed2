/* tests/test_waits.c — waits that sleep and never hang silently (issue "Waits that
 * sleep"): a thread waiting on a long job goes to sleep and is woken by the counter's
 * zero; a wait that makes no progress says where its counter's jobs are
 * (JOB_WAIT_STUCK), once, and keeps waiting; a wait nested in an isolated one runs the
 * jobs it waits for. No timing thresholds: each test waits for the event it checks
 * (the stats or the log), and a deadline only turns a hang into a failure. */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "job_check.h"
#include "recording_log.h"
#include "runtime/types.h"   /* a context's id, as the log names it */

static uint32_t kiln_ctx_id(const kiln_ctx *ctx) { return ctx->id; }

static recording_log *rec;

static void setup(void) {
    rec = recording_log_new();
    job_checks_reset();
}
static void teardown(void) { recording_log_free(rec); }

/* The timeout only turns a deadlock into a failed test; nothing passes or fails by it. */
TestSuite(waits, .init = setup, .fini = teardown, .timeout = 60);

static kiln_runtime *make_runtime(uint32_t workers, uint32_t stuck_wait_ms) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = workers;
    desc.stuck_wait_ms = stuck_wait_ms;
    desc.idle_spin_us = 20;   /* waits go to sleep soon: the tests wait for that */
    kiln_runtime *rt = kiln_create(&desc);
    cr_assert_not_null(rt, "log:%s", recorded_summary(rec));
    return rt;
}

/* One context's stats, by id. */
static kiln_ctx_stats stats_of(kiln_runtime *rt, uint32_t id) {
    kiln_ctx_stats all[16];
    size_t n = kiln_stats_contexts(rt, all, 16);
    for (size_t i = 0; i < n && i < 16; i++)
        if (all[i].id == id) return all[i];
    return (kiln_ctx_stats){ 0 };
}

/* ---- a wait with nothing to run sleeps, and the counter's zero wakes it ---- */

typedef struct sleeper_watch {
    kiln_runtime *rt;
    uint32_t      waiter;     /* the waiting context's id */
    uint64_t      after;      /* its sleeps before this wait */
    _Atomic int   saw_sleep;  /* the job saw the waiter asleep (1) or gave up (-1) */
} sleeper_watch;

/* Runs on the worker until the waiter has gone to sleep once more than w->after (its
 * stats say so), or 30 s pass: on a wait that never sleeps, that is a failure. */
static void watch_for_sleep(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    sleeper_watch *w = arg;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (stats_of(w->rt, w->waiter).sleeps <= w->after) {
        if (seconds_since(&start) > 30) {
            atomic_store(&w->saw_sleep, -1);
            return;
        }
        struct timespec pause = { 0, 1000000 };
        nanosleep(&pause, NULL);
    }
    atomic_store(&w->saw_sleep, 1);
}

Test(waits, a_wait_with_nothing_to_run_sleeps_until_its_counter_is_zero) {
    kiln_runtime *rt = make_runtime(1, 0);
    kiln_ctx *main_ctx = kiln_attach(rt);
    sleeper_watch w = { .rt = rt, .waiter = kiln_ctx_id(main_ctx) };
    kiln_counter done = { { 0 } };
    /* Background: only the worker takes it; this thread's wait has nothing to run. */
    kiln_run_ex(main_ctx, &(kiln_job){ watch_for_sleep, &w }, 1, &done,
                &(kiln_run_desc){ .background = true });
    kiln_wait(main_ctx, &done);
    cr_assert_eq(atomic_load(&w.saw_sleep), 1, "the waiting thread never slept (it spun)");
    kiln_ctx_stats s = stats_of(rt, kiln_ctx_id(main_ctx));
    cr_assert_gt(s.sleep_ns, 0);
    cr_assert_gt(s.idle_spin_ns, 0, "it spun before it slept");
    cr_assert_eq(s.waits_stuck, 0);
    kiln_detach(main_ctx);
    kiln_destroy(rt);
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

/* A job queued while the waiter sleeps, which only the waiter may run (pinned to it),
 * wakes it: its counter reaches zero only once the waiter has run it. */
typedef struct late_pin {
    kiln_runtime *rt;
    kiln_ctx     *waiter;
    _Atomic int   ran_on_waiter;
} late_pin;

static void mark_ran(kiln_ctx *ctx, void *arg) {
    late_pin *p = arg;
    if (ctx == p->waiter) atomic_store(&p->ran_on_waiter, 1);
}

/* On the worker: once the waiter sleeps, pins a job to it and returns only when the
 * waiter has run it, so the waiter's counter stays non-zero until then: only the
 * pinned job's wake-up (or the sleep's safety-net timeout) gets it going. */
static void pin_after_sleep(kiln_ctx *ctx, void *arg) {
    late_pin *p = arg;
    sleeper_watch w = { .rt = p->rt, .waiter = kiln_ctx_id(p->waiter) };
    watch_for_sleep(ctx, &w);
    JOB_CHECK(atomic_load(&w.saw_sleep) == 1);
    kiln_counter pinned = { { 0 } };
    kiln_run_ex(ctx, &(kiln_job){ mark_ran, p }, 1, &pinned, &(kiln_run_desc){ .pinned_to = p->waiter });
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (!atomic_load(&p->ran_on_waiter) && seconds_since(&start) < 30) sched_yield();
    kiln_wait(ctx, &pinned);
}

Test(waits, work_pinned_to_a_sleeping_waiter_wakes_it) {
    kiln_runtime *rt = make_runtime(1, 0);
    kiln_ctx *main_ctx = kiln_attach(rt);
    kiln_counter done = { { 0 } };
    late_pin p = { .rt = rt, .waiter = main_ctx };
    kiln_run_ex(main_ctx, &(kiln_job){ pin_after_sleep, &p }, 1, &done,
                &(kiln_run_desc){ .background = true });
    kiln_wait(main_ctx, &done);
    assert_no_job_failures();
    cr_assert_eq(atomic_load(&p.ran_on_waiter), 1, "the pinned job ran on the waiter");
    kiln_detach(main_ctx);
    kiln_destroy(rt);
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

/* ---- frame end's drain sleeps too, and the frame's last job wakes it ---- */

Test(waits, frame_end_sleeps_while_a_worker_runs_the_frames_last_job) {
    kiln_runtime *rt = make_runtime(1, 0);
    kiln_ctx *driver = kiln_attach(rt);
    for (int frame = 0; frame < 3; frame++) {
        kiln_frame_begin(driver);
        sleeper_watch w = { .rt = rt, .waiter = kiln_ctx_id(driver),
                            .after = stats_of(rt, kiln_ctx_id(driver)).sleeps };
        /* Pinned to the worker: the drain cannot run it, only wait for it. */
        kiln_run_ex(driver, &(kiln_job){ watch_for_sleep, &w }, 1, NULL,
                    &(kiln_run_desc){ .pinned_to = rt->workers[0] });
        kiln_frame_end(driver);
        cr_assert_eq(atomic_load(&w.saw_sleep), 1, "frame %d: the driver never slept in its drain", frame);
    }
    kiln_detach(driver);
    kiln_destroy(rt);
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

/* ---- a wait without progress says where its jobs are, once, and keeps waiting ---- */

typedef struct holder {
    kiln_runtime *rt;
    const char   *until;        /* a fragment of the stuck-wait warning it waits for */
    kiln_ctx     *ctx;          /* the holding thread's context: jobs are pinned to it */
    _Atomic int   ready;
    _Atomic int   gave_up;
} holder;

static void nop(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
}

/* An attached thread that runs nothing (the jobs pinned to it wait) until the runtime
 * has logged the stuck wait the test expects, then runs them in a wait of its own. */
static void *holding_thread(void *arg) {
    holder *h = arg;
    h->ctx = kiln_attach(h->rt);
    atomic_store(&h->ready, 1);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (count_items_with(rec, KILN_LOGITEM_JOB_WAIT_STUCK, h->until) == 0) {
        if (seconds_since(&start) > 30) {
            atomic_store(&h->gave_up, 1);
            break;
        }
        struct timespec pause = { 0, 1000000 };
        nanosleep(&pause, NULL);
    }
    kiln_counter mine = { { 0 } };
    kiln_run_ex(h->ctx, &(kiln_job){ nop, NULL }, 1, &mine, &(kiln_run_desc){ .pinned_to = h->ctx });
    kiln_wait(h->ctx, &mine);   /* its inbox is a queue: the held jobs run first */
    kiln_detach(h->ctx);
    return NULL;
}

/* A runtime with one worker and a 20 ms stuck_wait_ms, main's context, and a holding
 * thread that waits for a warning with until in it. */
static void start_holding(kiln_runtime **rt, kiln_ctx **main_ctx, holder *h, const char *until,
                          pthread_t *thread) {
    *rt = make_runtime(1, 20);
    *main_ctx = kiln_attach(*rt);
    *h = (holder){ .rt = *rt, .until = until };
    cr_assert_eq(pthread_create(thread, NULL, holding_thread, h), 0);
    while (!atomic_load(&h->ready)) sched_yield();
}

Test(waits, a_stuck_wait_names_the_context_its_jobs_are_pinned_to) {
    kiln_runtime *rt;
    kiln_ctx *main_ctx;
    holder h;
    pthread_t thread;
    start_holding(&rt, &main_ctx, &h, "pinned to it", &thread);
    kiln_counter c = { { 0 } };
    kiln_job jobs[3] = { { nop, NULL }, { nop, NULL }, { nop, NULL } };
    kiln_run_ex(main_ctx, jobs, 3, &c, &(kiln_run_desc){ .pinned_to = h.ctx });
    kiln_wait(main_ctx, &c);   /* nobody but the holder may run them: stuck until it does */
    pthread_join(thread, NULL);
    cr_assert_eq(atomic_load(&h.gave_up), 0, "no JOB_WAIT_STUCK within 30 s");
    cr_assert_eq(count_items(rec, KILN_LOGITEM_JOB_WAIT_STUCK), 1, "one warning per wait:%s",
                 recorded_summary(rec));
    char where[64];
    snprintf(where, sizeof where, "context %u: 3 pinned to it", kiln_ctx_id(h.ctx));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_JOB_WAIT_STUCK, where), 1, "log:%s",
                 recorded_summary(rec));
    char who[64];
    snprintf(who, sizeof who, "context %u has waited", kiln_ctx_id(main_ctx));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_JOB_WAIT_STUCK, who), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_JOB_WAIT_STUCK, "still counts 3 jobs"), 1);
    cr_assert_eq(stats_of(rt, kiln_ctx_id(main_ctx)).waits_stuck, 1);
    kiln_detach(main_ctx);
    kiln_destroy(rt);
}

/* A job on a worker waits on a counter whose jobs wait for a prerequisite that only
 * the holder may run: the worker's wait is the stuck one, and it says the jobs are
 * held by prerequisites. */
typedef struct waits_in_job {
    kiln_ctx     *holder;
    kiln_counter *gate;     /* the prerequisite: a job pinned to the holder */
    _Atomic uint32_t waiter_id;
} waits_in_job;

static void wait_behind_gate(kiln_ctx *ctx, void *arg) {
    waits_in_job *w = arg;
    atomic_store(&w->waiter_id, kiln_ctx_id(ctx));
    kiln_counter c = { { 0 } };
    const kiln_counter *after[] = { w->gate };
    kiln_job jobs[2] = { { nop, NULL }, { nop, NULL } };
    kiln_run_ex(ctx, jobs, 2, &c, &(kiln_run_desc){ .after = after, .after_count = 1 });
    kiln_wait(ctx, &c);
}

Test(waits, a_job_waiting_on_a_counter_nobody_decrements_says_so) {
    kiln_runtime *rt;
    kiln_ctx *main_ctx;
    holder h;
    pthread_t thread;
    start_holding(&rt, &main_ctx, &h, "held by prerequisites", &thread);
    kiln_counter gate = { { 0 } }, outer = { { 0 } };
    kiln_run_ex(main_ctx, &(kiln_job){ nop, NULL }, 1, &gate, &(kiln_run_desc){ .pinned_to = h.ctx });
    waits_in_job w = { .holder = h.ctx, .gate = &gate };
    /* Background: the worker takes it, and this thread's wait does not. */
    kiln_run_ex(main_ctx, &(kiln_job){ wait_behind_gate, &w }, 1, &outer,
                &(kiln_run_desc){ .background = true });
    kiln_wait(main_ctx, &outer);
    pthread_join(thread, NULL);
    kiln_wait(main_ctx, &gate);
    cr_assert_eq(atomic_load(&h.gave_up), 0, "no JOB_WAIT_STUCK within 30 s");
    char who[64];
    snprintf(who, sizeof who, "context %u has waited", atomic_load(&w.waiter_id));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_JOB_WAIT_STUCK, who), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_JOB_WAIT_STUCK,
                                  "2 held by prerequisites"), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(stats_of(rt, atomic_load(&w.waiter_id)).waits_stuck, 1);
    kiln_detach(main_ctx);
    kiln_destroy(rt);
}

/* A frame end whose frame's job is pinned to a thread that does not run it yet: the
 * drain says so, once, naming where the job is, and returns once the job has run. */
Test(waits, a_stuck_frame_end_names_where_its_frames_jobs_are) {
    kiln_runtime *rt;
    kiln_ctx *driver;
    holder h;
    pthread_t thread;
    start_holding(&rt, &driver, &h, "kiln_frame_end", &thread);
    kiln_frame_begin(driver);
    kiln_run_ex(driver, &(kiln_job){ nop, NULL }, 1, NULL, &(kiln_run_desc){ .pinned_to = h.ctx });
    kiln_frame_end(driver);
    pthread_join(thread, NULL);
    cr_assert_eq(atomic_load(&h.gave_up), 0, "no JOB_WAIT_STUCK within 30 s");
    char where[96];
    snprintf(where, sizeof where, "kiln_frame_end: context %u has waited", kiln_ctx_id(driver));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_JOB_WAIT_STUCK, where), 1, "log:%s", recorded_summary(rec));
    snprintf(where, sizeof where, "context %u: 1 pinned to it", kiln_ctx_id(h.ctx));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_JOB_WAIT_STUCK, where), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(stats_of(rt, kiln_ctx_id(driver)).waits_stuck, 1);
    kiln_detach(driver);
    kiln_destroy(rt);
}

/* A background job that queues background jobs and waits for them: once every worker
 * runs one, nobody else would take the children (kiln_wait leaves background jobs to
 * idle workers), and all hung. A wait runs the background jobs of the counter it waits
 * on: it cannot return without them. */
static void bg_leaf(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    atomic_fetch_add((_Atomic int *)arg, 1);
}

static void bg_outer(kiln_ctx *ctx, void *arg) {
    kiln_counter c = { { 0 } };
    kiln_job leaves[2] = { { bg_leaf, arg }, { bg_leaf, arg } };
    kiln_run_ex(ctx, leaves, 2, &c, &(kiln_run_desc){ .background = true });
    kiln_wait(ctx, &c);
}

Test(waits, background_jobs_waiting_on_their_own_background_children_finish) {
    for (uint32_t workers = 1; workers <= 2; workers++) {
        kiln_runtime *rt = make_runtime(workers, 0);
        kiln_ctx *main_ctx = kiln_attach(rt);
        _Atomic int leaves = 0;
        kiln_counter c = { { 0 } };
        kiln_job outers[4] = { { bg_outer, &leaves }, { bg_outer, &leaves }, { bg_outer, &leaves },
                               { bg_outer, &leaves } };
        kiln_run_ex(main_ctx, outers, 4, &c, &(kiln_run_desc){ .background = true });
        kiln_wait(main_ctx, &c);
        cr_assert_eq(atomic_load(&leaves), 8);
        kiln_detach(main_ctx);
        kiln_destroy(rt);
    }
}

/* A background job on a worker waits on its own background child while the frame's
 * stream of jobs never runs dry: the wait runs the child, not the stream (jobs.h: a
 * frame that never runs out cannot starve background jobs). The wait used to take frame
 * jobs first and reached the child only once the stream ended (the third hostile
 * review). The stream stops when the parent is done, or at STREAM_CAP jobs, so both
 * ways end; the stream jobs that ran inside the parent's wait are counted, exactly. */
#define STREAM_CAP 200000

static _Atomic int stream_total, stream_in_wait, stream_parent_done;
static _Thread_local bool in_parent_wait;

static void stream_job(kiln_ctx *ctx, void *arg) {
    (void)arg;
    if (in_parent_wait) atomic_fetch_add(&stream_in_wait, 1);
    if (atomic_load(&stream_parent_done) || atomic_fetch_add(&stream_total, 2) >= STREAM_CAP) return;
    kiln_job next[2] = { { stream_job, NULL }, { stream_job, NULL } };
    kiln_run(ctx, next, 2, NULL);
}

static void stream_parent(kiln_ctx *ctx, void *arg) {
    kiln_priority priority = (kiln_priority)(intptr_t)arg;
    _Atomic int child_ran = 0;
    kiln_counter c = { { 0 } };
    kiln_run_ex(ctx, &(kiln_job){ job_raise_flag, &child_ran }, 1, &c,
                &(kiln_run_desc){ .background = true, .priority = priority });
    in_parent_wait = true;
    kiln_wait(ctx, &c);
    in_parent_wait = false;
    cr_assert_eq(atomic_load(&child_ran), 1);
    atomic_store(&stream_parent_done, 1);
}

Test(waits, a_background_jobs_wait_runs_its_child_before_an_endless_frame) {
    for (int high = 0; high <= 1; high++) {
        atomic_store(&stream_total, 0);
        atomic_store(&stream_in_wait, 0);
        atomic_store(&stream_parent_done, 0);
        kiln_runtime *rt = make_runtime(1, 0);
        kiln_ctx *main_ctx = kiln_attach(rt);
        kiln_frame_begin(main_ctx);
        kiln_run(main_ctx, &(kiln_job){ stream_job, NULL }, 1, NULL);
        kiln_counter parent = { { 0 } };
        kiln_run_ex(main_ctx,
                    &(kiln_job){ stream_parent,
                                 (void *)(intptr_t)(high ? KILN_PRIORITY_HIGH : KILN_PRIORITY_NORMAL) },
                    1, &parent, &(kiln_run_desc){ .background = true });
        kiln_frame_end(main_ctx);   /* runs the stream until the parent is done */
        kiln_wait(main_ctx, &parent);
        cr_assert_eq(atomic_load(&stream_parent_done), 1);
        cr_assert_eq(atomic_load(&stream_in_wait), 0,
                     "%s child: the parent's wait ran %d frame jobs of the stream (of %d) before it",
                     high ? "HIGH" : "normal", atomic_load(&stream_in_wait), atomic_load(&stream_total));
        kiln_detach(main_ctx);
        kiln_destroy(rt);
        cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
    }
}

/* A background job C submitted by a job run inside an isolated wait carries that wait's
 * tag, not its counter's; a frame job F on the worker waits on C's counter. The wait
 * runs its counter's background jobs (jobs.h), whatever tag they carry: it looked for
 * C by tag only, found nothing, and with one worker nobody ran C; frame end hung for
 * ever (the fourth hostile review). F starts on the worker before C is queued, so the
 * worker cannot have taken C first. */
static kiln_counter iso_child_counter;
static _Atomic int iso_f_started, iso_c_queued, iso_c_ran, iso_gave_up;

static void iso_child_f(kiln_ctx *ctx, void *arg) {
    (void)arg;
    atomic_store(&iso_f_started, 1);
    while (!atomic_load(&iso_c_queued)) sched_yield();
    kiln_wait(ctx, &iso_child_counter);
}

static void iso_child_j(kiln_ctx *ctx, void *arg) {
    (void)arg;
    kiln_run(ctx, &(kiln_job){ iso_child_f, NULL }, 1, NULL);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (!atomic_load(&iso_f_started)) {   /* the worker steals F: nothing else is queued */
        if (seconds_since(&start) > 30) {
            atomic_store(&iso_gave_up, 1);
            break;
        }
        sched_yield();
    }
    kiln_run_ex(ctx, &(kiln_job){ job_raise_flag, &iso_c_ran }, 1, &iso_child_counter,
                &(kiln_run_desc){ .background = true });
    atomic_store(&iso_c_queued, 1);
}

Test(waits, a_workers_wait_runs_its_counters_background_job_queued_in_an_isolated_wait) {
    kiln_runtime *rt = make_runtime(1, 0);
    kiln_ctx *main_ctx = kiln_attach(rt);
    kiln_frame_begin(main_ctx);
    kiln_counter j = { { 0 } };
    kiln_run_ex(main_ctx, &(kiln_job){ iso_child_j, NULL }, 1, &j, &(kiln_run_desc){ .pinned_to = main_ctx });
    kiln_wait_ex(main_ctx, &j, &(kiln_wait_desc){ .isolate = true });
    kiln_frame_end(main_ctx);   /* waits for F, whose wait must run C */
    cr_assert_eq(atomic_load(&iso_gave_up), 0, "the worker never took F");
    cr_assert_eq(atomic_load(&iso_c_ran), 1);
    kiln_wait(main_ctx, &iso_child_counter);
    kiln_detach(main_ctx);
    kiln_destroy(rt);
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

/* An isolated wait runs only its own jobs (jobs.h), even when an earlier isolated wait
 * used a counter at the same address: a job B queued inside the first wait (and left
 * queued when it ended) must not run inside the second. Isolation tags were the
 * counters' addresses, so the second wait took B as its own (the fourth hostile
 * review's suspicion). The only worker is held by a blocker meanwhile, so nobody else
 * runs B; the second wait's job runs on another thread, which gives the wait up to
 * 200 ms to take B first (how long does not decide the test: a correct wait never
 * takes B, and a plain wait runs it afterwards). */
static kiln_counter same_address;
static _Atomic int reused_b_ran;

static void reused_first(kiln_ctx *ctx, void *arg) {
    kiln_run(ctx, &(kiln_job){ job_raise_flag, &reused_b_ran }, 1, (kiln_counter *)arg);
}

static void reused_second(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (!atomic_load(&reused_b_ran) && seconds_since(&start) < 0.2) sched_yield();
}

typedef struct reused_helper {
    kiln_runtime *rt;
    kiln_ctx     *ctx;   /* written before go is 1 */
    _Atomic int   go;
} reused_helper;

static void *reused_thread(void *arg) {
    reused_helper *h = arg;
    kiln_ctx *ctx = h->ctx = kiln_attach(h->rt);
    atomic_store(&h->go, 1);
    while (atomic_load(&h->go) != 2) sched_yield();
    kiln_wait(ctx, &same_address);   /* runs reused_second, pinned here */
    kiln_detach(ctx);
    return NULL;
}

Test(waits, an_isolated_wait_never_runs_an_earlier_isolated_waits_jobs) {
    kiln_runtime *rt = make_runtime(1, 0);
    kiln_ctx *main_ctx = kiln_attach(rt);
    kiln_counter blocker = { { 0 } };
    job_hold hold = { 0, 0 };
    kiln_run_ex(main_ctx, &(kiln_job){ job_hold_thread, &hold }, 1, &blocker,
                &(kiln_run_desc){ .background = true });
    while (!atomic_load(&hold.started)) sched_yield();
    reused_helper h = { rt, NULL, 0 };
    pthread_t thread;
    cr_assert_eq(pthread_create(&thread, NULL, reused_thread, &h), 0);
    while (atomic_load(&h.go) != 1) sched_yield();

    kiln_counter b_counter = { { 0 } };
    kiln_run(main_ctx, &(kiln_job){ reused_first, &b_counter }, 1, &same_address);
    kiln_wait_ex(main_ctx, &same_address, &(kiln_wait_desc){ .isolate = true });
    cr_assert_eq(atomic_load(&reused_b_ran), 0, "B is queued, not run");
    kiln_run_ex(main_ctx, &(kiln_job){ reused_second, NULL }, 1, &same_address,
                &(kiln_run_desc){ .pinned_to = h.ctx });
    atomic_store(&h.go, 2);
    kiln_wait_ex(main_ctx, &same_address, &(kiln_wait_desc){ .isolate = true });
    cr_assert_eq(atomic_load(&reused_b_ran), 0, "the second isolated wait ran the first one's job");
    kiln_wait(main_ctx, &b_counter);   /* a plain wait runs B */
    cr_assert_eq(atomic_load(&reused_b_ran), 1);
    atomic_store(&hold.release, 1);
    kiln_wait(main_ctx, &blocker);
    pthread_join(thread, NULL);
    kiln_detach(main_ctx);
    kiln_destroy(rt);
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

/* A background job A waits isolated on its background child B; B, run inside that wait,
 * waits (plainly or isolated) on its own background child C, which carries A's
 * isolation. With one worker, nobody ran C and both hung (the second hostile review). */
static _Atomic int iso_bg_isolate_inner;

static void iso_bg_c(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    atomic_fetch_add((_Atomic int *)arg, 1);
}

static void iso_bg_b(kiln_ctx *ctx, void *arg) {
    kiln_counter c = { { 0 } };
    kiln_run_ex(ctx, &(kiln_job){ iso_bg_c, arg }, 1, &c, &(kiln_run_desc){ .background = true });
    kiln_wait_ex(ctx, &c, &(kiln_wait_desc){ .isolate = atomic_load(&iso_bg_isolate_inner) != 0 });
}

static void iso_bg_a(kiln_ctx *ctx, void *arg) {
    kiln_counter c = { { 0 } };
    kiln_run_ex(ctx, &(kiln_job){ iso_bg_b, arg }, 1, &c, &(kiln_run_desc){ .background = true });
    kiln_wait_ex(ctx, &c, &(kiln_wait_desc){ .isolate = true });
}

Test(waits, background_grandchildren_of_an_isolated_wait_run_on_its_worker) {
    for (int inner = 0; inner < 2; inner++) {
        atomic_store(&iso_bg_isolate_inner, inner);
        kiln_runtime *rt = make_runtime(1, 0);
        kiln_ctx *main_ctx = kiln_attach(rt);
        _Atomic int ran = 0;
        kiln_counter root = { { 0 } };
        kiln_frame_begin(main_ctx);
        kiln_run_ex(main_ctx, &(kiln_job){ iso_bg_a, &ran }, 1, &root, &(kiln_run_desc){ .background = true });
        kiln_wait(main_ctx, &root);
        kiln_frame_end(main_ctx);
        cr_assert_eq(atomic_load(&ran), 1, "inner wait %s", inner ? "isolated" : "plain");
        kiln_detach(main_ctx);
        kiln_destroy(rt);
    }
}

/* ---- isolated waits and the jobs they wait for ---- */

/* The pattern that once hung for ever: the worker's job waits isolated on cA; main
 * queues U (depends on nothing), then A, and waits isolated on cA; A (on main or on the
 * worker) waits plainly on U's counter. Both isolated waits refused U. Now A's wait
 * runs U: the jobs of the counter it waits on. */
typedef struct isolation_case {
    kiln_counter *a_counter, *u_counter;
    _Atomic int   worker_waiting, u_ran, a_done;
} isolation_case;

static void worker_isolated(kiln_ctx *ctx, void *arg) {
    isolation_case *c = arg;
    atomic_store(&c->worker_waiting, 1);
    kiln_wait_ex(ctx, c->a_counter, &(kiln_wait_desc){ .isolate = true });
}

static void job_u(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    atomic_store(&((isolation_case *)arg)->u_ran, 1);
}

static void job_a(kiln_ctx *ctx, void *arg) {
    isolation_case *c = arg;
    kiln_wait(ctx, c->u_counter);
    atomic_store(&c->a_done, 1);
}

Test(waits, a_wait_nested_in_an_isolated_one_runs_the_jobs_it_waits_for) {
    for (int round = 0; round < 5; round++) {
        kiln_runtime *rt = make_runtime(1, 0);
        kiln_ctx *main_ctx = kiln_attach(rt);
        kiln_counter ca = { { 0 } }, cu = { { 0 } }, cw = { { 0 } };
        isolation_case c = { .a_counter = &ca, .u_counter = &cu };
        /* cA non-zero before the worker waits on it: a job only main may run. */
        kiln_run_ex(main_ctx, &(kiln_job){ nop, NULL }, 1, &ca, &(kiln_run_desc){ .pinned_to = main_ctx });
        kiln_run(main_ctx, &(kiln_job){ worker_isolated, &c }, 1, &cw);
        while (!atomic_load(&c.worker_waiting)) sched_yield();
        kiln_run(main_ctx, &(kiln_job){ job_u, &c }, 1, &cu);
        kiln_run(main_ctx, &(kiln_job){ job_a, &c }, 1, &ca);
        kiln_wait_ex(main_ctx, &ca, &(kiln_wait_desc){ .isolate = true });
        kiln_wait(main_ctx, &cw);
        cr_assert(atomic_load(&c.u_ran) && atomic_load(&c.a_done));
        kiln_detach(main_ctx);
        kiln_destroy(rt);
    }
}

/* ---- nested waits and the stack ---- */

/* Each level is a job that submits the next and waits on it; its thread's wait runs
 * that job nested, one level deeper on the stack. It stops once kiln has said the stack
 * is three quarters used (or at a depth no 1 MiB stack could reach). */
typedef struct deep_chain {
    _Atomic unsigned deepest;
} deep_chain;

static void deep_level(kiln_ctx *ctx, void *arg) {
    deep_chain *chain = arg;
    unsigned depth = atomic_fetch_add(&chain->deepest, 1) + 1;
    if (depth >= 100000 || count_items(rec, KILN_LOGITEM_JOB_WAIT_TOO_DEEP) > 0) return;
    kiln_counter next = { { 0 } };
    kiln_run(ctx, &(kiln_job){ deep_level, chain }, 1, &next);
    kiln_wait(ctx, &next);
}

static void *deep_thread(void *arg) {
    kiln_runtime *rt = arg;
    kiln_ctx *ctx = kiln_attach(rt);
    deep_chain chain = { 0 };
    kiln_counter done = { { 0 } };
    kiln_run(ctx, &(kiln_job){ deep_level, &chain }, 1, &done);
    kiln_wait(ctx, &done);
    kiln_detach(ctx);
    return (void *)(uintptr_t)atomic_load(&chain.deepest);
}

Test(waits, waits_nested_deep_say_so_before_the_stack_runs_out) {
    kiln_runtime *rt = make_runtime(KILN_NO_WORKERS, 0);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)1 << 20);
    pthread_t thread;
    cr_assert_eq(pthread_create(&thread, &attr, deep_thread, rt), 0);
    pthread_attr_destroy(&attr);
    void *deepest;
    pthread_join(thread, &deepest);
    cr_assert_lt((uintptr_t)deepest, 100000, "no warning before depth 100000");
    cr_assert_eq(count_items(rec, KILN_LOGITEM_JOB_WAIT_TOO_DEEP), 1, "once per thread:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_JOB_WAIT_TOO_DEEP, "of its 1024 KiB stack"), 1,
                 "log:%s", recorded_summary(rec));
    kiln_destroy(rt);
}
