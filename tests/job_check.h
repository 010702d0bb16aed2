/* tests/job_check.h — checks made inside jobs. Criterion's assertions must run on the
 * test's own thread, so a job records what it found wrong with JOB_CHECK (any thread)
 * and the test asserts afterwards, with assert_no_job_failures, that nothing was.
 * job_checks_reset starts a test's count. Each test binary that includes this has its
 * own state (static). */
#ifndef KILN_TESTS_JOB_CHECK_H
#define KILN_TESTS_JOB_CHECK_H

#include <kiln/jobs.h>
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

#define assert_no_job_failures() \
    cr_assert_eq(atomic_load(&job_failures), 0, "%u check(s) failed inside jobs, the first at %s", \
                 atomic_load(&job_failures), job_failure_text)

#endif /* KILN_TESTS_JOB_CHECK_H */
