/* jobs/batch.h — the record of jobs that wait for counters (kiln_run_desc.after), and
 * the entries of the lists of waiting batches that each counter keeps. Registration is
 * jobs/graph.c's; the drain, when a counter reaches zero, the scheduler's.
 *   pending == prerequisites not yet finished + 1 while the submitter registers it
 * The thread whose decrement takes pending to 0 queues the tasks and frees the record
 * (no thread touches a record once its tasks are queued). Records of calls with at most
 * KILN_BATCH_SMALL_TASKS jobs and KILN_BATCH_SMALL_LINKS prerequisites (a dependency
 * graph's nodes: one job after its neighbours) are of one size, and a freed one waits on
 * the system's spare list for the next call, up to KILN_BATCH_SPARES of them: a graph of
 * thousands of such calls per frame costs no heap call, and no page fault when the heap
 * would have trimmed and grown again between frames. Other calls take one heap
 * allocation each. */
#ifndef KILN_JOBS_BATCH_H
#define KILN_JOBS_BATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "task.h"

struct kiln_job_queue;

/* One per (batch, prerequisite counter): an entry of that counter's list. */
typedef struct kiln_wait_link {
    struct kiln_wait_link *next;   /* written before the push (release), read by the drainer */
    struct kiln_batch     *batch;
} kiln_wait_link;

#define KILN_BATCH_SMALL_TASKS 2
#define KILN_BATCH_SMALL_LINKS 4
#define KILN_BATCH_SPARES      1024

typedef struct kiln_batch {
    _Atomic uint64_t pending;      /* see the header comment (acq_rel) */
    struct kiln_job_queue *pinned;       /* the target of a pin, or NULL */
    uint64_t         pin_life;     /* the life of pinned it names (kiln_jobs_pin_life) */
    uint32_t         submitter;    /* ids of the submitting context and of the pin's target */
    uint32_t         pinned_id;    /* when the call was made, for the log */
    struct kiln_batch *prev, *next;  /* the system's waiting batches; under its batch_lock */
    int              priority;
    bool             small;        /* of the small size: goes to the spare list when freed */
    size_t           count;        /* tasks */
    kiln_wait_link  *links;        /* one per prerequisite, after the tasks */
    kiln_task        tasks[];      /* flags, counter and isolation set by the submitter */
} kiln_batch;

#endif /* KILN_JOBS_BATCH_H */
