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

/* The word bits of the system with tag (kiln_job_system.tag): its low 30 bits. Two live
 * systems share bits only if 2^30 systems were made while one lived. */
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

/* Adds count jobs of a run of context id of the system of mine (kiln_counter_tag_bits)
 * to the counter: true, *before the word the add replaced. false, nothing added, *before
 * the word that refused it: in use by a run of another system (its tag is not mine), or
 * it would count more than KILN_COUNTER_JOBS_MAX. An idle counter (count 0, no waiting
 * batches) is claimed: its word becomes mine and count (a sleepers flag left behind
 * goes), and its owner word id. acq_rel CAS, as the
 * fetch-and-add it replaces: the release orders the submitter's writes before any
 * finish that reads this add. Inline: the path of every kiln_run with a counter. Any
 * thread (the submitting context's). */
static inline bool kiln_counter_add(kiln_counter_state *counter, uint64_t mine, uint32_t id,
                                    uint64_t count, uint64_t *before) {
    uint64_t word = kiln_load_relaxed(&counter->pending);
    for (;;) {
        bool idle = !kiln_counter_busy(word);
        uint64_t next = word + count;
        if (idle) next = mine | count;
        else if ((word & KILN_COUNTER_TAG_MASK) != mine) break;
        if (kiln_unlikely(count > KILN_COUNTER_JOBS_MAX - KILN_COUNTER_COUNT(next - count))) break;
        if (kiln_likely(kiln_cas_weak_acq_rel(&counter->pending, &word, next))) {
            if (idle) kiln_store_relaxed(&counter->owner, id);   /* messages only (see above) */
            *before = word;
            return true;
        }
    }
    *before = word;
    return false;
}

#endif /* KILN_JOBS_COUNTER_H */
