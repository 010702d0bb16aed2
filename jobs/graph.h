/* jobs/graph.h — jobs that wait for counters (kiln_run_desc.after): making their record
 * (jobs/batch.h) and registering it on each prerequisite. No thread blocks or polls: the
 * thread whose decrement makes the last prerequisite zero queues the batch on its own
 * queue (kiln_counter_finish, scheduler.h). */
#ifndef KILN_JOBS_GRAPH_H
#define KILN_JOBS_GRAPH_H

#include "scheduler.h"

/* A record for count tasks waiting on prerequisites counters, a spare one of the small
 * size when it fits (jobs/batch.h); NULL when the heap refuses (nothing logged: the
 * caller logs). Any thread (takes sys's batch_lock for a small one). */
KILN_INTERNAL kiln_batch *kiln_batch_new(kiln_job_system *sys, size_t count, uint32_t prerequisites);

/* Owner of q: counts the batch's frame jobs as submitted by q (frame end waits for
 * them from now on), registers it on each counter of after that is not zero and, when
 * none holds it back, queues it at once. The record belongs to the scheduler from here.
 * Returns how many counters it did not wait for because another system's run had made
 * them non-zero (a race with the caller's check; see counter_hold). */
KILN_INTERNAL uint32_t kiln_jobs_submit_after(kiln_job_system *sys, kiln_job_queue *q, kiln_batch *batch,
                                              const kiln_counter_state *const *after, uint32_t count);

#endif /* KILN_JOBS_GRAPH_H */
