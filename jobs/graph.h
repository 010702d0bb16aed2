/* jobs/graph.h — jobs that wait for counters (kiln_run_desc.after): the batch record
 * that holds them until their last prerequisite finishes, and the lists of batches
 * that each counter keeps. No thread blocks or polls: the thread whose decrement makes
 * the last prerequisite zero queues the batch on its own queue.
 *
 * A batch, from the call to its queuing:
 *   pending == prerequisites not yet finished + 1 while the submitter registers it
 * The thread whose decrement takes pending to 0 queues the tasks and frees the record
 * (one heap allocation per call, whatever its job count; a record is touched by no
 * thread once its tasks are queued). */
#ifndef KILN_JOBS_GRAPH_H
#define KILN_JOBS_GRAPH_H

#include "scheduler.h"

/* One per (batch, prerequisite counter): an entry of that counter's list. */
typedef struct kiln_wait_link {
    struct kiln_wait_link *next;   /* written before the push (release), read by the drainer */
    struct kiln_batch     *batch;
} kiln_wait_link;

typedef struct kiln_batch {
    _Atomic uint64_t pending;      /* see the header comment (acq_rel) */
    kiln_job_queue  *pinned;       /* the target of a pin, or NULL */
    int              priority;
    size_t           count;        /* tasks */
    kiln_wait_link  *links;        /* one per prerequisite, after the tasks */
    kiln_task        tasks[];      /* flags, counter and isolation set by the submitter */
} kiln_batch;

/* A record for count tasks waiting on prerequisites counters; NULL when the heap
 * refuses (nothing logged: the caller logs). Any thread. */
KILN_INTERNAL kiln_batch *kiln_batch_new(size_t count, uint32_t prerequisites);

/* Owner of q: counts the batch's frame jobs as submitted by q (frame end waits for
 * them from now on), registers it on each counter of after that is not zero and, when
 * none holds it back, queues it at once. The record belongs to the scheduler from here. */
KILN_INTERNAL void kiln_jobs_submit_after(kiln_job_system *sys, kiln_job_queue *q, kiln_batch *batch,
                                          const kiln_counter_state *const *after, uint32_t count);

/* Owner of q, the thread whose decrement left the counter at KILN_COUNTER_WAITERS: takes
 * its list, queues (on q) each batch whose last prerequisite it was, then clears the
 * flag unless the counter was reused meanwhile. */
KILN_INTERNAL KILN_COLD void kiln_counter_drain(kiln_job_system *sys, kiln_job_queue *q,
                                                kiln_counter_state *counter);

/* Owner of q: n jobs (or registrations) counted on counter are done. The decrement is
 * the last touch of the counter unless it leaves the flag alone: waiters then drain.
 * acq_rel: the release publishes the jobs' writes to a waiter reading 0 and to the
 * drainer; the acquire lets a drainer see every registration that released before. */
static inline void kiln_counter_finish(kiln_job_system *sys, kiln_job_queue *q,
                                       kiln_counter_state *counter, uint64_t n) {
    uint64_t before = kiln_sub_acq_rel(&counter->pending, n);
    if (kiln_unlikely(before == (KILN_COUNTER_WAITERS | n))) kiln_counter_drain(sys, q, counter);
}

#endif /* KILN_JOBS_GRAPH_H */
