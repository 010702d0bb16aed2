/* jobs/inbox.h — the pinned jobs waiting for one context: a FIFO ring of tasks that
 * grows by doubling, so that taking the oldest costs O(1) whatever the backlog, and for
 * background jobs one such ring per counter. No locking here: the scheduler holds the
 * queue's inbox lock around every call. */
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

/* Frees the ring. */
KILN_INTERNAL void kiln_inbox_fini(kiln_inbox *inbox);

/* How many of its tasks match says are wanted (a stuck wait's report: O(count)). */
KILN_INTERNAL size_t kiln_inbox_count_if(const kiln_inbox *inbox,
                                         bool (*match)(const kiln_task *task, const void *arg),
                                         const void *arg);

/* The background jobs pinned to one context: a ring per counter (a lane; NULL is a
 * counter too), found by the counter in an open-addressing table (linear probing), so
 * that a thread waiting on one counter takes its jobs in O(1) however many jobs of
 * other counters are parked. A lane leaves the table when it runs empty.
 *   count == the tasks of every lane;  used == the lanes;  used <= cap / 2 */
typedef struct kiln_inbox_lane {
    const kiln_counter_state *counter;
    kiln_inbox                ring;
    bool                      used;
} kiln_inbox_lane;

typedef struct kiln_lanes {
    kiln_inbox_lane *slots;    /* cap of them: 0 or a power of two */
    size_t           cap, used, count;
    size_t           cursor;   /* where kiln_lanes_pop_any looks first */
} kiln_lanes;

/* Appends count tasks that all count on counter to its lane; false (nothing appended)
 * when memory runs out. */
KILN_INTERNAL bool kiln_lanes_push(kiln_lanes *lanes, const kiln_counter_state *counter,
                                   const kiln_task *tasks, size_t count);

/* The oldest task of counter's lane; false when it has none. */
KILN_INTERNAL bool kiln_lanes_take(kiln_lanes *lanes, const kiln_counter_state *counter,
                                   kiln_task *task);

/* The oldest task of some lane (in order within a lane; lanes in no set order); false
 * when every lane is empty. */
KILN_INTERNAL bool kiln_lanes_pop_any(kiln_lanes *lanes, kiln_task *task);

/* How many tasks counter's lane holds. */
KILN_INTERNAL size_t kiln_lanes_count_of(const kiln_lanes *lanes, const kiln_counter_state *counter);

/* Frees every lane and the table. */
KILN_INTERNAL void kiln_lanes_fini(kiln_lanes *lanes);

#endif /* KILN_JOBS_INBOX_H */
