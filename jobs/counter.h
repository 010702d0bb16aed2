/* jobs/counter.h — whose jobs a counter counts: a run adds its jobs to a counter
 * (kiln_counter_add), and a registration of jobs after it (jobs/graph.c) pins whose run
 * it counts while it takes its hold (kiln_counter_pin). Never installed.
 *
 * The rule: a counter counts the jobs of one job system (one runtime) at a time.
 *   counter in use (pending != 0)  =>  every job and hold counted on it is of the
 *                                      system in its owner word
 * so the decrement that drains its waiting batches runs on a thread of the system that
 * registered them, and a batch is never queued on another system's queues. A run of
 * another system is refused while the counter is in use (the caller logs
 * COUNTER_FOREIGN); sharing within one system stays allowed (COUNTER_SHARED).
 *
 * The owner word and the count are two words; two steps keep them together:
 * - A claim makes an idle counter (pending == 0) non-zero: CAS the owner word to the
 *   run's own with KILN_COUNTER_CLAIMING (only from a word with no claim and no pin), CAS
 *   the count from zero, then store the owner word without the bit (release), or the old
 *   one back when the count CAS lost. Two claims at once are serialized by the owner CAS;
 *   the loser then finds the winner's count and owner.
 * - An operation on a counter in use (an add, a hold) pins the owner word first (adds
 *   KILN_COUNTER_PIN by CAS, only to a word of its own system with no claim), changes the
 *   count, and unpins. No claim can start while a pin is held, so the count cannot drain
 *   and be made non-zero by another system's run between the read of its owner and the
 *   change (the ABA that one CAS on the count alone cannot see).
 * Costs, against one fetch-and-add (and a store) before the rule: a claim takes two CASes
 * and a store, an add to a counter in use or a hold three RMWs, all on the counter's line.
 * Readers wait while a claim is in progress, and claims while pins are held: each is a
 * few instructions of another thread (base/backoff.h's rounds, giving the core away
 * now and then in case that thread was preempted there). Holders of a pin are this
 * system's threads registering or adding at that instant, at most 127 at once (more
 * wait). */
#ifndef KILN_JOBS_COUNTER_H
#define KILN_JOBS_COUNTER_H

#include <stdbool.h>

#include "../base/common.h"
#include "task.h"

/* The owner word (kiln_counter_state.owner):
 *   bit 63        KILN_COUNTER_CLAIMING: a claim in progress
 *   bits 56-62    pins: operations on the counter in use, in progress
 *   bits 24-55    the job system's tag (kiln_job_system.tag): whose jobs it counts
 *   bits 0-23     the id of the context whose run made it non-zero (its low 24 bits:
 *                 messages only) */
#define KILN_COUNTER_CLAIMING (UINT64_C(1) << 63)
#define KILN_COUNTER_PIN      (UINT64_C(1) << 56)
#define KILN_COUNTER_PINS     (UINT64_C(0x7f) << 56)

/* The owner word of a run of context id on the system with tag. */
static inline uint64_t kiln_counter_owner_of(uint32_t tag, uint32_t id) {
    return (uint64_t)tag << 24 | (id & 0xffffffu);
}

static inline uint32_t kiln_counter_owner_tag(uint64_t owner) { return (uint32_t)(owner >> 24); }
static inline uint32_t kiln_counter_owner_id(uint64_t owner) { return (uint32_t)owner & 0xffffffu; }

/* Whether the counter is in use by a run of another system than tag's: its count is
 * not zero and its owner word (once no claim is in progress) names another system. A
 * check before the work, not a decision: the counter may change right after. Any thread. */
KILN_INTERNAL bool kiln_counter_foreign(const kiln_counter_state *counter, uint32_t tag);

typedef enum kiln_counter_use {
    KILN_COUNTER_IDLE,    /* its word read 0: nothing pinned */
    KILN_COUNTER_THEIRS,  /* in use by another system's run: nothing pinned */
    KILN_COUNTER_OURS     /* in use by a run of this system: pinned (kiln_counter_unpin) */
} kiln_counter_use;

/* Reads the counter and pins its owner word when it is in use by a run of the system
 * with tag. *word: the counter's word (for OURS, read again under the pin: it may have
 * drained to a zero count by then); *owner: its owner word without claim and pins.
 * Waits while a claim is in progress. acquire on the count: the owner word of the run
 * that made it non-zero was written before. Any thread of that system. */
KILN_INTERNAL kiln_counter_use kiln_counter_pin(kiln_counter_state *counter, uint32_t tag,
                                                uint64_t *word, uint64_t *owner);

/* Ends a pin. release: what the pinned operation did to the count happens before a
 * claim that finds no pin. */
static inline void kiln_counter_unpin(kiln_counter_state *counter) {
    kiln_sub_acq_rel(&counter->owner, KILN_COUNTER_PIN);
}

/* What kiln_counter_add found. */
typedef struct kiln_counter_seen {
    bool     added;   /* false: in use by another system's run; nothing added */
    uint64_t before;  /* the counter's word just before the add (or the refusal) */
    uint64_t owner;   /* its owner word then, without claim and pins */
} kiln_counter_seen;

/* One try of kiln_counter_add: true when it decided (*seen says how); false when a
 * claim or pins were in progress, or another thread changed the counter between its
 * reads: nothing done, try again. Inline: the path of every kiln_run with a counter. */
static inline bool kiln_counter_try_add(kiln_counter_state *counter, uint64_t self, uint64_t count,
                                        kiln_counter_seen *seen) {
    /* acquire: the owner word of the run that made the count non-zero comes with it. */
    uint64_t word = kiln_load_acquire(&counter->pending);
    uint64_t owner = kiln_load_relaxed(&counter->owner);
    if (word == 0) {   /* idle: claim it */
        if (owner & (KILN_COUNTER_CLAIMING | KILN_COUNTER_PINS)) return false;
        /* acquire: the count CAS comes after the claim, and after the pins it saw end. */
        if (!kiln_cas_strong_acquire(&counter->owner, &owner, self | KILN_COUNTER_CLAIMING)) return false;
        uint64_t idle = 0;
        bool added = kiln_cas_strong_seq_cst(&counter->pending, &idle, count);
        /* release: a reader that sees the bit clear sees the count the claim settled on. */
        kiln_store_release(&counter->owner, added ? self : owner);
        if (!added) return false;
        *seen = (kiln_counter_seen){ .added = true, .before = 0, .owner = self };
        return true;
    }
    if (owner & KILN_COUNTER_CLAIMING) return false;
    *seen = (kiln_counter_seen){ .added = false, .before = word,
                                 .owner = owner & ~KILN_COUNTER_PINS };
    if (kiln_counter_owner_tag(owner) != kiln_counter_owner_tag(self)) return true;
    if ((owner & KILN_COUNTER_PINS) == KILN_COUNTER_PINS) return false;
    /* In use by this system: pinned, no claim can start, so the count counts this
     * system's jobs only whatever it does meanwhile (an add to a count drained to zero
     * under the pin is this system's too: the owner word names a context of it). */
    if (!kiln_cas_strong_acquire(&counter->owner, &owner, owner + KILN_COUNTER_PIN)) return false;
    seen->before = kiln_add_acq_rel(&counter->pending, count);
    seen->added = true;
    kiln_counter_unpin(counter);
    return true;
}

/* kiln_counter_add's tries after the first, with waits between them. */
KILN_INTERNAL kiln_counter_seen kiln_counter_add_retry(kiln_counter_state *counter, uint64_t self,
                                                       uint64_t count);

/* Adds count jobs of the run whose owner word is self (kiln_counter_owner_of) to the
 * counter, unless it is in use by a run of another system than self's: then nothing.
 * acq_rel on the count, as the add it replaces. Lock-free but for the waits on a claim
 * or pins in progress. Any thread (the submitting context's). */
static inline kiln_counter_seen kiln_counter_add(kiln_counter_state *counter, uint64_t self,
                                                 uint64_t count) {
    kiln_counter_seen seen;
    if (kiln_likely(kiln_counter_try_add(counter, self, count, &seen))) return seen;
    return kiln_counter_add_retry(counter, self, count);
}

#endif /* KILN_JOBS_COUNTER_H */
