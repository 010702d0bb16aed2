/* jobs/counter.h — whose jobs a counter counts: a run adds its jobs to a counter
 * (kiln_counter_add), and a registration of jobs after it (jobs/graph.c) takes a hold on
 * it, each by one CAS on the counter's word. Never installed.
 *
 * The rule: a counter counts the jobs of one job system (one runtime) at a time.
 *   counter in use (count != 0)  =>  every job and hold counted on it is of the system
 *                                    whose tag is in its word (jobs/task.h's layout)
 * so the decrement that drains its waiting batches runs on a thread of the system that
 * registered them, and a batch is never queued on another system's queues. A run of
 * another system is refused while the counter is in use (the caller logs
 * COUNTER_FOREIGN); sharing within one system stays allowed (COUNTER_SHARED).
 *
 * Why one CAS keeps the rule: an add or a hold writes the word only by CAS from the
 * value it read and judged (idle: any tag; in use: its own system's tag). If the count
 * drained and another system's run made it non-zero between the read and the CAS, the
 * tag differs, and the CAS fails; if the same system's run did, the jobs counted are
 * still of that system, which is all the rule asks. Tag and count are one word, so
 * there is no ABA between them to guard against. Lock-free: a CAS fails only because
 * another thread changed the word.
 *
 * The owner word (kiln_counter_state.owner) names the context whose run last made the
 * counter non-zero, for messages only (COUNTER_SHARED, COUNTER_FOREIGN): it is written
 * after the claim, relaxed, so a run that races with a claim may read the previous one.
 * Nothing is decided by it. */
#ifndef KILN_JOBS_COUNTER_H
#define KILN_JOBS_COUNTER_H

#include <stdbool.h>

#include "../base/common.h"
#include "task.h"

/* The most jobs one counter counts at once (the rest of the count field is for the
 * holds of registrations in progress, so a hold never overflows it). Each counted job
 * is a task held in memory, so the bound is far above what fits in an address space's
 * worth of tasks only in theory: a run past it is refused, not wrapped. */
#define KILN_COUNTER_JOBS_MAX (KILN_COUNTER_COUNT_MASK / 2)

/* The word bits of the system with tag (kiln_job_system.tag): its low 31 bits. Two live
 * systems share bits only if 2^31 systems were made while one lived. */
static inline uint64_t kiln_counter_tag_bits(uint32_t tag) {
    return ((uint64_t)tag << KILN_COUNTER_TAG_SHIFT) & KILN_COUNTER_TAG_MASK;
}

/* Whether the counter is in use by a run of another system than the one of mine
 * (kiln_counter_tag_bits). A check before the work, not a decision: the counter may
 * change right after. acquire: as a waiter's read. Any thread. */
static inline bool kiln_counter_foreign(const kiln_counter_state *counter, uint64_t mine) {
    uint64_t word = kiln_load_acquire(&counter->pending);
    return KILN_COUNTER_COUNT(word) != 0 && (word & KILN_COUNTER_TAG_MASK) != mine;
}

typedef enum kiln_counter_added {
    KILN_COUNTER_ADDED,     /* counted */
    KILN_COUNTER_THEIRS,    /* in use by another system's run: nothing added */
    KILN_COUNTER_FULL       /* past KILN_COUNTER_JOBS_MAX: nothing added */
} kiln_counter_added;

/* What kiln_counter_add found. */
typedef struct kiln_counter_seen {
    kiln_counter_added result;
    uint64_t before;   /* the counter's word just before the add (or the refusal) */
    uint32_t owner;    /* the context whose run made it non-zero (a claim: the caller) */
} kiln_counter_seen;

/* Adds count jobs of a run of context id of the system of mine (kiln_counter_tag_bits)
 * to the counter, unless it is in use by a run of another system, or would count more
 * than KILN_COUNTER_JOBS_MAX: then nothing. An idle counter (count 0, no waiters) is
 * claimed: its tag becomes mine. acq_rel CAS, as the fetch-and-add it replaces: the
 * release orders the submitter's writes before any finish that reads this add. Inline:
 * the path of every kiln_run with a counter. Any thread (the submitting context's). */
static inline kiln_counter_seen kiln_counter_add(kiln_counter_state *counter, uint64_t mine,
                                                 uint32_t id, uint64_t count) {
    uint64_t word = kiln_load_relaxed(&counter->pending);
    for (;;) {
        bool idle = (word & ~KILN_COUNTER_TAG_MASK) == 0;
        if (!idle && (word & KILN_COUNTER_TAG_MASK) != mine)
            return (kiln_counter_seen){ KILN_COUNTER_THEIRS, word, kiln_load_relaxed(&counter->owner) };
        uint64_t counted = idle ? 0 : KILN_COUNTER_COUNT(word);
        if (kiln_unlikely(count > KILN_COUNTER_JOBS_MAX - counted))
            return (kiln_counter_seen){ KILN_COUNTER_FULL, word, kiln_load_relaxed(&counter->owner) };
        uint64_t next = idle ? mine | count : word + count;
        if (kiln_likely(kiln_cas_weak_acq_rel(&counter->pending, &word, next))) {
            if (idle) {
                kiln_store_relaxed(&counter->owner, id);   /* messages only (see above) */
                return (kiln_counter_seen){ KILN_COUNTER_ADDED, word, id };
            }
            return (kiln_counter_seen){ KILN_COUNTER_ADDED, word, kiln_load_relaxed(&counter->owner) };
        }
    }
}

#endif /* KILN_JOBS_COUNTER_H */
