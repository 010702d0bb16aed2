/* alloc/handle_ring.h — the reuse ring of a handle table: every freed slot not handed
 * out again, oldest first, each with the reclaim epoch of its free, and the rule that
 * says when a freed slot may be handed out. Inline; never installed.
 *
 * Positions [head, promoted) are reusable, [promoted, tail) wait for the safe epoch
 * (limbo). Positions only grow; position p is entries[p % size], and tail - head <= size
 * because each slot is in the ring once. The size is the table's capacity, no power of
 * two, so each call divides once and steps its entry index with a wrap test after that.
 * Concurrency: every function runs under the lock of the table that holds the ring; the
 * two counts are atomics for stats readers. */
#ifndef KILN_ALLOC_HANDLE_RING_H
#define KILN_ALLOC_HANDLE_RING_H

#include <stdbool.h>
#include <stdint.h>

#include "../base/atomics.h"

/* A freed slot and the reclaim epoch of its free: the whole 64-bit epoch, so that an
 * entry judged any number of frame ends after its free reads as in the past (a 32-bit
 * epoch read as in the future 2^31 frame ends later, under an hour of an empty frame
 * loop, and blocked the promotion of every entry behind it). */
typedef struct kiln_reuse_entry {
    uint32_t index;
    uint32_t unused;    /* padding, named: the public head spells the same layout */
    uint64_t epoch;
} kiln_reuse_entry;

typedef struct kiln_handle_ring {
    kiln_reuse_entry *entries;        /* size of them */
    uint32_t          size;
    uint64_t          head, promoted, tail;
    _Atomic uint32_t  reusable_count; /* promoted - head, for stats readers */
    _Atomic uint32_t  limbo_count;    /* tail - promoted, for stats readers */
} kiln_handle_ring;

/* Whether a slot freed at epoch freed_epoch may be handed out, given the safe epoch.
 * Epochs count frame ends from 1 and never wrap (2^64 frame ends at a million a second
 * take half a million years), so a plain compare. */
static inline bool kiln_epoch_reusable(uint64_t freed_epoch, uint64_t safe) {
    return freed_epoch < safe;
}

/* An empty ring over size entries. */
static inline void kiln_handle_ring_init(kiln_handle_ring *ring, kiln_reuse_entry *entries,
                                         uint32_t size) {
    ring->entries = entries;
    ring->size = size;
}

/* The ring's entries go away with its table: nothing is left in it for stats readers. */
static inline void kiln_handle_ring_fini(kiln_handle_ring *ring) {
    kiln_store_relaxed(&ring->limbo_count, 0);
    kiln_store_relaxed(&ring->reusable_count, 0);
    ring->entries = NULL;
}

/* Publishes the counts for stats readers. */
static inline void kiln_handle_ring_publish(kiln_handle_ring *ring) {
    kiln_store_relaxed(&ring->reusable_count, (uint32_t)(ring->promoted - ring->head));
    kiln_store_relaxed(&ring->limbo_count, (uint32_t)(ring->tail - ring->promoted));
}

/* The entry index of position p. */
static inline uint32_t kiln_handle_ring_at(const kiln_handle_ring *ring, uint64_t p) {
    return (uint32_t)(p % ring->size);
}

/* The entry index after at. */
static inline uint32_t kiln_handle_ring_next(const kiln_handle_ring *ring, uint32_t at) {
    return at + 1 == ring->size ? 0 : at + 1;
}

/* Moves the entries the safe epoch makes reusable out of limbo, oldest first; it stops
 * at the first that is not (entries are nearly in epoch order), so the work is the
 * entries moved. */
static inline void kiln_handle_ring_promote(kiln_handle_ring *ring, uint64_t safe) {
    if (ring->promoted == ring->tail) return;
    uint32_t at = kiln_handle_ring_at(ring, ring->promoted);
    while (ring->promoted != ring->tail && kiln_epoch_reusable(ring->entries[at].epoch, safe)) {
        ring->promoted++;
        at = kiln_handle_ring_next(ring, at);
    }
}

/* Puts n entries into limbo, after every entry there. */
static inline void kiln_handle_ring_append(kiln_handle_ring *ring, const kiln_reuse_entry *entries,
                                           uint32_t n) {
    uint32_t at = kiln_handle_ring_at(ring, ring->tail);
    for (uint32_t i = 0; i < n; i++, at = kiln_handle_ring_next(ring, at)) ring->entries[at] = entries[i];
    ring->tail += n;
}

/* How many entries are reusable. */
static inline uint32_t kiln_handle_ring_reusable(const kiln_handle_ring *ring) {
    return (uint32_t)(ring->promoted - ring->head);
}

/* Takes the n oldest reusable entries (there are n) into out, downwards: the oldest
 * slot at out[n - 1], the next at out[n - 2], ... */
static inline void kiln_handle_ring_take(kiln_handle_ring *ring, uint32_t *out, uint32_t n) {
    uint32_t at = kiln_handle_ring_at(ring, ring->head);
    for (uint32_t k = 0; k < n; k++, at = kiln_handle_ring_next(ring, at))
        out[n - 1 - k] = ring->entries[at].index;
    ring->head += n;
}

#endif /* KILN_ALLOC_HANDLE_RING_H */
