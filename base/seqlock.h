/* base/seqlock.h — a sequence counter through which one writer publishes a snapshot of
 * several words that readers on other threads copy without a lock: an arena's current
 * block, the frame history's records and the trace rings. Never installed.
 *
 * Contract: one writer at a time (its caller excludes other writers); any number of
 * readers at once, on any thread, never blocking the writer. Every protected word is an
 * atomic that both sides access relaxed, so the protocol is race-free in C11 (a
 * seqlock as in Boehm, "Can seqlocks get along with programming language memory
 * models?", MSPC 2012); a reader that overlaps a write sees that it did and retries or
 * drops what it copied. ThreadSanitizer does not model the fences, and needs nothing
 * from them: it sees only atomics here.
 *
 *   writer:  s = kiln_seq_write_begin(&seq); relaxed stores; kiln_seq_write_end(&seq, s);
 *   reader:  s = kiln_seq_read_begin(&seq); relaxed loads; kiln_seq_read_valid(&seq, s)
 *            says whether the copy is whole (false: retry, or drop it)
 *
 * The count is even while nothing is being written and odd during a write; it grows by
 * two per write. The orders, and why:
 *   claim    (begin of a write): the odd count stored, then a release fence. A reader
 *            whose relaxed load saw a word stored after the fence synchronises with it
 *            through its own acquire fence, so its second look at the count sees the
 *            odd count or a later one, never the one it started from.
 *   publish  (end of a write): the even count stored with release. A reader that loads
 *            it with acquire sees every word stored before it, or later values.
 *   snapshot (begin of a read): the count loaded with acquire (pairs with publish).
 *   recheck  (end of a read): an acquire fence, then the count loaded relaxed (pairs
 *            with claim): equal to the snapshot only if no write overlapped the copy.
 * The trace ring splits the counter in two (claimed, the begin of a write, and head, its
 * end) and uses these four steps on the two words directly. */
#ifndef KILN_BASE_SEQLOCK_H
#define KILN_BASE_SEQLOCK_H

#include <stdbool.h>

#include "atomics.h"

/* The four steps. claim and publish: the writer only; snapshot and recheck: any thread. */
static inline void kiln_seq_claim(_Atomic uint64_t *seq, uint64_t value) {
    kiln_store_relaxed(seq, value);
    kiln_fence_release();   /* the count before every word stored after it */
}

static inline void kiln_seq_publish(_Atomic uint64_t *seq, uint64_t value) {
    kiln_store_release(seq, value);   /* every word stored before it, then the count */
}

static inline uint64_t kiln_seq_snapshot(_Atomic uint64_t *seq) {
    return kiln_load_acquire(seq);
}

static inline uint64_t kiln_seq_recheck(_Atomic uint64_t *seq) {
    kiln_fence_acquire();   /* every word loaded before it, then the count */
    return kiln_load_relaxed(seq);
}

/* The writer: starts a write (the count goes odd) and returns the count it found, which
 * kiln_seq_write_end takes back. */
static inline uint64_t kiln_seq_write_begin(_Atomic uint64_t *seq) {
    uint64_t s = kiln_load_relaxed(seq);   /* the writer's own store */
    kiln_seq_claim(seq, s + 1);
    return s;
}

static inline void kiln_seq_write_end(_Atomic uint64_t *seq, uint64_t s) {
    kiln_seq_publish(seq, s + 2);
}

/* Any thread: the count a copy starts from. */
static inline uint64_t kiln_seq_read_begin(_Atomic uint64_t *seq) {
    return kiln_seq_snapshot(seq);
}

/* Any thread, after copying: whether the words loaded since kiln_seq_read_begin returned
 * s form one snapshot (no write was under way at s, and none began since). */
static inline bool kiln_seq_read_valid(_Atomic uint64_t *seq, uint64_t s) {
    return (s & 1) == 0 && kiln_seq_recheck(seq) == s;
}

#endif /* KILN_BASE_SEQLOCK_H */
