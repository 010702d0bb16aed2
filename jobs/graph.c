/* jobs/graph.c — batches that wait for counters (kiln_run_desc.after): registering a
 * batch on its prerequisites, and draining a counter's waiting batches when it reaches
 * zero. Lock-free: a CAS loop per prerequisite on the counter's word and on its list.
 *
 * Why a waiter never misses the zero and a counter is never touched after its last job:
 * - The registrant holds the counter while it registers: it adds 1 with the flag
 *   KILN_COUNTER_WAITERS, by CAS, only from a non-zero count (from a zero count the
 *   prerequisite is done: the acquire read of that zero orders the jobs' writes before
 *   the batch's queuing). The count cannot reach zero under a hold, so the push onto the
 *   list always comes before the zero, and the registrant then releases its hold with
 *   kiln_counter_finish, like a job.
 * - The decrement that reaches zero (a job's or a hold's) sees the flag in the value it
 *   replaced (kiln_counter_finish) and drains; a decrement that sees no flag is the
 *   last touch of the counter, as before dependencies existed.
 * - The drainer's decrement is an acq_rel RMW, so it reads the end of a release sequence
 *   that every hold's release decrement heads: each push (before its hold's release)
 *   happens before the drainer's exchange, which takes them all.
 * - The drainer clears the flag (CAS from "flag, count 0" to 0) before it walks the list,
 *   and touches the counter no more: a waiter that reads 0 may reuse or free it. If the
 *   CAS fails the counter was reused (a new run made it non-zero: misuse while batches
 *   wait, see jobs.h): the flag stays, and that run's last decrement drains what has
 *   been pushed since.
 * The drain is kiln_counter_finished in jobs/scheduler.c.
 * - A batch's pending count: the drainer reads link->next before its decrement (which may
 *   queue and free the record); the thread whose decrement reaches zero read every
 *   task the submitter wrote, through the submitter's release of its own hold. */
#include "graph.h"

#include "../base/sys_alloc.h"
#include "counter.h"

kiln_batch *kiln_batch_new(kiln_job_system *sys, size_t count, uint32_t prerequisites) {
    bool small = count <= KILN_BATCH_SMALL_TASKS && prerequisites <= KILN_BATCH_SMALL_LINKS;
    size_t tasks = (small ? KILN_BATCH_SMALL_TASKS : count) * sizeof(kiln_task);
    size_t links = (size_t)(small ? KILN_BATCH_SMALL_LINKS : prerequisites) * sizeof(kiln_wait_link);
    if (count > (SIZE_MAX - sizeof(kiln_batch) - links) / sizeof(kiln_task)) return NULL;
    kiln_batch *batch = small ? kiln_batch_spare(sys) : NULL;
    if (!batch) batch = kiln_sys_alloc(sizeof(kiln_batch) + tasks + links);
    if (!batch) return NULL;
    batch->small = small;
    batch->count = count;
    batch->links = (kiln_wait_link *)(void *)((char *)batch->tasks + tasks);
    return batch;
}

typedef enum { HOLD_TAKEN, HOLD_DONE, HOLD_FOREIGN } hold_result;

/* A hold on a non-zero counter of this system's runs, with the flag set (see the file
 * comment); HOLD_DONE when the count is zero: the jobs it counted are done; HOLD_FOREIGN
 * when the run that made it non-zero is another system's (its drain would queue this
 * batch there). One CAS from the word judged (jobs/counter.h): if another system's run
 * made the count non-zero since the read, the tag differs and the CAS fails, so a hold
 * taken is on this system's jobs. The count has room: runs stop at half of it
 * (KILN_COUNTER_JOBS_MAX). seq_cst CAS (acq_rel would do). */
static hold_result counter_hold(kiln_counter_state *counter, uint64_t mine) {
    for (;;) {
        /* acquire, read again after a failed CAS (whose failure read is relaxed): a zero
         * orders the jobs' writes before the batch's queuing. */
        uint64_t word = kiln_load_acquire(&counter->pending);
        if (KILN_COUNTER_COUNT(word) == 0) return HOLD_DONE;
        if ((word & KILN_COUNTER_TAG_MASK) != mine) return HOLD_FOREIGN;
        if (kiln_cas_strong_seq_cst(&counter->pending, &word, (word + 1) | KILN_COUNTER_WAITERS))
            return HOLD_TAKEN;
    }
}

uint32_t kiln_jobs_submit_after(kiln_job_system *sys, kiln_job_queue *q, kiln_batch *batch,
                                const kiln_counter_state *const *after, uint32_t count) {
    uint32_t foreign = 0;
    kiln_batch_list(sys, batch);   /* before any drain may queue (and free) it */
    /* Counted before anyone can run them, under their frame epoch, as kiln_jobs_submit
     * counts: they belong to the frame of the call, however late they become runnable. */
    if (!(batch->tasks[0].flags & KILN_TASK_BACKGROUND)) {
        kiln_tasks_set_epoch(batch->tasks, batch->count, kiln_jobs_count_frame(sys, q, batch->count));
    }
    /* No drain can reach zero before every registration: this thread holds 1. */
    kiln_store_relaxed(&batch->pending, (uint64_t)count + 1);   /* published by the pushes */
    uint64_t done = 1;   /* the hold, and the prerequisites already finished */
    for (uint32_t i = 0; i < count; i++) {
        /* The counter is the caller's, which it must keep alive: not const to us. */
        kiln_counter_state *counter = (kiln_counter_state *)(uintptr_t)after[i];
        hold_result hold = counter_hold(counter, sys->counter_tag);
        if (hold != HOLD_TAKEN) {
            foreign += hold == HOLD_FOREIGN;
            done++;
            continue;
        }
        kiln_wait_link *link = &batch->links[i];
        link->batch = batch;
        kiln_wait_link *head = kiln_load_relaxed(&counter->waiters);
        do {
            link->next = head;
        } while (!kiln_cas_strong_seq_cst(&counter->waiters, &head, link));   /* release: link, tasks */
        kiln_counter_finish(sys, q, counter, 1);   /* the hold; may drain, this batch included */
    }
    if (kiln_sub_acq_rel(&batch->pending, done) == done) kiln_jobs_queue_batch(sys, q, batch);
    return foreign;
}
