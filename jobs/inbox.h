/* jobs/inbox.h — the pinned jobs waiting for one context: a FIFO ring of tasks that
 * grows by doubling, so that taking the oldest costs O(1) whatever the backlog. No
 * locking here: the scheduler holds the queue's inbox lock around every call. */
#ifndef KILN_JOBS_INBOX_H
#define KILN_JOBS_INBOX_H

#include <stdbool.h>

#include "../base/common.h"
#include "task.h"

/* cap is 0 or a power of two; the oldest task is slots[head], the others follow it
 * modulo cap:  0 <= count <= cap. */
typedef struct kiln_inbox {
    kiln_task *slots;
    size_t     head, count, cap;
} kiln_inbox;

/* Appends count tasks in order; false (nothing appended) when the ring cannot grow. */
KILN_INTERNAL bool kiln_inbox_push(kiln_inbox *inbox, const kiln_task *tasks, size_t count);

/* Takes the oldest task; false when empty. */
KILN_INTERNAL bool kiln_inbox_pop(kiln_inbox *inbox, kiln_task *task);

/* Takes the oldest task that counts on counter; false when none does. O(count): for
 * the background inbox, which is short and read only by a thread waiting on a job. */
KILN_INTERNAL bool kiln_inbox_take_counted(kiln_inbox *inbox, const kiln_counter_state *counter,
                                           kiln_task *task);

/* Frees the ring. */
KILN_INTERNAL void kiln_inbox_fini(kiln_inbox *inbox);

#endif /* KILN_JOBS_INBOX_H */
