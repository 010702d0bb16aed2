/* jobs/task.h — what a deque slot holds: one job or one range of a parallel_for, by
 * value, so submitting a job writes a few words into the submitter's own ring and
 * allocates nothing. */
#ifndef KILN_JOBS_TASK_H
#define KILN_JOBS_TASK_H

#include <kiln/jobs.h>
#include <stdbool.h>
#include <stdint.h>

#include "../base/atomics.h"

struct kiln_wait_link;

/* The internal view of a kiln_counter: the public struct is three uint64_t words.
 * The word pending:
 *   bits 0-31   the count: unfinished jobs + registrations in progress (jobs/graph.c)
 *   bits 32-61  the tag of the job system whose run made the count non-zero: whose jobs
 *               it counts (jobs/counter.h); left behind when the count drains
 *   bit 62      KILN_COUNTER_SLEEPERS once a thread waiting on it may sleep: the
 *               decrement that makes the count zero wakes the sleeping waiters
 *               (jobs/scheduler.c, jobs/wait_sleep.pml); left behind, cleared by a claim
 *   bit 63      KILN_COUNTER_WAITERS while batches wait on it
 * The flag stays set after the count reaches zero until the thread that made it zero
 * has taken the list of waiting batches, so a waiter that reads neither count nor flag
 * (kiln_counter_busy) knows that nobody touches the counter any more. */
typedef struct kiln_counter_state {
    _Atomic uint64_t pending;   /* acq_rel: a waiter that reads it idle sees everything
                                   the jobs wrote */
    _Atomic uint64_t owner;     /* the id of the context whose run made it non-zero:
                                   messages only, relaxed (jobs/counter.h) */
    _Atomic(struct kiln_wait_link *) waiters;  /* batches waiting for it (jobs/graph.c) */
} kiln_counter_state;

#define KILN_COUNTER_WAITERS    (UINT64_C(1) << 63)
#define KILN_COUNTER_SLEEPERS   (UINT64_C(1) << 62)
#define KILN_COUNTER_TAG_SHIFT  32
#define KILN_COUNTER_TAG_MASK   (UINT64_C(0x3fffffff) << KILN_COUNTER_TAG_SHIFT)
#define KILN_COUNTER_COUNT_MASK UINT64_C(0xffffffff)
#define KILN_COUNTER_COUNT(word) ((word) & KILN_COUNTER_COUNT_MASK)

/* Whether a counter's word still counts jobs or holds, or has batches to drain: a
 * waiter waits while it does. */
static inline bool kiln_counter_busy(uint64_t word) {
    return (word & (KILN_COUNTER_COUNT_MASK | KILN_COUNTER_WAITERS)) != 0;
}

_Static_assert(sizeof(kiln_counter_state) == sizeof(kiln_counter), "counter layout");

static inline kiln_counter_state *kiln_counter_of(kiln_counter *counter) {
    return (kiln_counter_state *)(void *)counter;
}

enum {
    KILN_TASK_RANGE      = 1u << 0,  /* fn is a kiln_range_fn over [begin, end) */
    KILN_TASK_BACKGROUND = 1u << 1,  /* may outlive the frame; not counted by frame end */
    KILN_TASK_HIGH       = 1u << 2   /* came from the high-priority queue */
};

typedef struct kiln_task {
    union {
        kiln_job_fn     job;
        kiln_range_fn   range;    /* with KILN_TASK_RANGE */
    } fn;
    void               *arg;
    kiln_counter_state *counter;  /* may be NULL */
    uint64_t            flags;    /* KILN_TASK_* */
    uint64_t            begin;    /* range tasks: [begin, end) and the grain to split by */
    uint64_t            end;
    uint64_t            grain;
    uint64_t            isolation;  /* the tag an isolated wait runs (scheduler.h); 0: none */
} kiln_task;

#endif /* KILN_JOBS_TASK_H */
