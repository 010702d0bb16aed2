/* jobs/counter.c — adding a run's jobs to a counter, one job system at a time: the claim
 * of an idle counter, the pin of one in use, and reading whose run it counts. The rule
 * and both protocols: jobs/counter.h. */
#include "counter.h"

#include "../base/backoff.h"

/* Rounds of a wait for another thread's claim or pin between each time the core is given
 * away: that thread may have been preempted between its two steps. */
#define COUNTER_YIELD_EVERY 8

/* The counter's word (acquire) and its owner word once no claim is in progress (or the
 * word is 0, when whose it was does not matter). */
static void read_settled(const kiln_counter_state *counter, uint64_t *word, uint64_t *owner) {
    for (unsigned round = 1;; round++) {
        *word = kiln_load_acquire(&counter->pending);
        *owner = kiln_load_relaxed(&counter->owner);
        if (*word == 0 || !(*owner & KILN_COUNTER_CLAIMING)) return;
        kiln_spin_round(round, COUNTER_YIELD_EVERY);
    }
}

bool kiln_counter_foreign(const kiln_counter_state *counter, uint32_t tag) {
    uint64_t word, owner;
    read_settled(counter, &word, &owner);
    return KILN_COUNTER_COUNT(word) != 0 && kiln_counter_owner_tag(owner) != tag;
}

kiln_counter_use kiln_counter_pin(kiln_counter_state *counter, uint32_t tag, uint64_t *word,
                                  uint64_t *owner) {
    for (unsigned round = 1;; round++) {
        uint64_t seen;
        read_settled(counter, word, &seen);
        *owner = seen & ~(KILN_COUNTER_CLAIMING | KILN_COUNTER_PINS);
        if (*word == 0) return KILN_COUNTER_IDLE;
        if (kiln_counter_owner_tag(seen) != tag) return KILN_COUNTER_THEIRS;
        if ((seen & KILN_COUNTER_PINS) == KILN_COUNTER_PINS) {
            kiln_spin_round(round, COUNTER_YIELD_EVERY);
            continue;
        }
        /* acquire: the count read below comes after the pin. From the word read: a claim
         * since then (CLAIMING set, or another owner) fails it. */
        if (!kiln_cas_strong_acquire(&counter->owner, &seen, seen + KILN_COUNTER_PIN)) continue;
        *word = kiln_load_acquire(&counter->pending);
        return KILN_COUNTER_OURS;
    }
}

kiln_counter_seen kiln_counter_add_retry(kiln_counter_state *counter, uint64_t self,
                                         uint64_t count) {
    kiln_counter_seen seen;
    for (unsigned round = 1; !kiln_counter_try_add(counter, self, count, &seen); round++)
        kiln_spin_round(round, COUNTER_YIELD_EVERY);
    return seen;
}
