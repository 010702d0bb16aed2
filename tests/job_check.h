/* tests/job_check.h — checks made inside jobs. Criterion's assertions must run on the
 * test's own thread, so a job records what it found wrong with JOB_CHECK (any thread)
 * and the test asserts afterwards, with assert_no_job_failures, that nothing was.
 * job_checks_reset starts a test's count. Each test binary that includes this has its
 * own state (static). */
#ifndef KILN_TESTS_JOB_CHECK_H
#define KILN_TESTS_JOB_CHECK_H

#include <kiln/jobs.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static _Atomic unsigned job_failures;
static char             job_failure_text[256];   /* the first failure; written once */

static inline void job_fail(int line, const char *what) {
    if (atomic_fetch_add(&job_failures, 1) == 0)
        snprintf(job_failure_text, sizeof job_failure_text, "line %d: %s", line, what);
}

static inline void job_checks_reset(void) {
    atomic_store(&job_failures, 0);
    job_failure_text[0] = '\0';
}

#define JOB_CHECK(cond) \
    do { \
        if (!(cond)) job_fail(__LINE__, #cond); \
    } while (0)

/* White-box: a counter's unfinished jobs and holds (the low 32 bits of its first word;
 * the rest names whose runtime counted on it last, and the flag of waiting batches),
 * read while other threads may change it. 0: its jobs are done. */
static inline uint64_t counter_jobs(const kiln_counter *c) {
    return __atomic_load_n(&c->opaque[0], __ATOMIC_ACQUIRE) & UINT64_C(0xffffffff);
}

/* Seconds of CLOCK_MONOTONIC since start: the deadlines that turn a hang into a failure
 * (never a pass or fail by time). */
static inline double seconds_since(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) * 1e-9;
}

/* A job that sets the _Atomic int at arg to 1. */
static inline void job_raise_flag(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    atomic_store((_Atomic int *)arg, 1);
}

/* A job that holds the thread running it (a test's only worker, say) until released:
 * arg is a job_hold; started is 1 once it runs. */
typedef struct job_hold {
    _Atomic int started, release;
} job_hold;

static inline void job_hold_thread(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    job_hold *hold = arg;
    atomic_store(&hold->started, 1);
    while (!atomic_load(&hold->release)) sched_yield();
}

#define assert_no_job_failures() \
    cr_assert_eq(atomic_load(&job_failures), 0, "%u check(s) failed inside jobs, the first at %s", \
                 atomic_load(&job_failures), job_failure_text)

#endif /* KILN_TESTS_JOB_CHECK_H */
