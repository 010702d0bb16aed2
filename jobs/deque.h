/* jobs/deque.h — the work-stealing deque: Chase–Lev with the C11 memory orders of
 * Lê, Pop, Cohen and Zappa Nardelli (PPoPP 2013), holding tasks by value.
 *
 * Contract: push and take by the owner thread only; steal by any number of other
 * threads at once. push is wait-free unless the ring grows; take and steal are
 * lock-free. A thief that loses the race for the top slot gets KILN_STEAL_ABORT and
 * may retry elsewhere.
 *
 * Two changes from the paper, both for ThreadSanitizer and both free on x86: the
 * release fence + relaxed store of bottom in push is a release store (TSan does not
 * model fences, and the thief's acquire load of bottom must synchronise with it to
 * order the job's argument data), and slot words are relaxed atomics, because a thief
 * may read a slot that the owner is overwriting (its CAS on top then fails and the
 * read is thrown away). Rings replaced by growth stay allocated until the deque is
 * destroyed: a thief may still be reading the old one. */
#ifndef KILN_JOBS_DEQUE_H
#define KILN_JOBS_DEQUE_H

#include <stdbool.h>

#include "../base/common.h"
#include "task.h"

#define KILN_TASK_WORDS (sizeof(kiln_task) / sizeof(uint64_t))

typedef struct kiln_deque_ring {
    int64_t                  mask;       /* capacity - 1; capacity a power of two */
    struct kiln_deque_ring  *retired;    /* the ring this one replaced */
    _Atomic uint64_t         slots[][KILN_TASK_WORDS];
} kiln_deque_ring;

typedef struct kiln_deque {
    _Alignas(KILN_CACHE_LINE) _Atomic int64_t top;        /* thieves CAS it */
    _Alignas(KILN_CACHE_LINE) _Atomic int64_t bottom;     /* the owner writes it */
    _Atomic(kiln_deque_ring *) ring;                      /* replaced by the owner on growth */
} kiln_deque;

typedef enum { KILN_STEAL_OK, KILN_STEAL_EMPTY, KILN_STEAL_ABORT } kiln_steal_result;

/* false when the first ring cannot be allocated. */
KILN_INTERNAL bool kiln_deque_init(kiln_deque *deque, int64_t capacity);
KILN_INTERNAL void kiln_deque_fini(kiln_deque *deque);
/* Owner: doubles the ring, copying [top, bottom). NULL when out of memory. */
KILN_INTERNAL kiln_deque_ring *kiln_deque_grow(kiln_deque *deque, int64_t top, int64_t bottom);

static inline void kiln_slot_write(kiln_deque_ring *ring, int64_t i, const kiln_task *task) {
    const uint64_t *words = (const uint64_t *)(const void *)task;
    _Atomic uint64_t *slot = ring->slots[i & ring->mask];
    for (size_t w = 0; w < KILN_TASK_WORDS; w++) kiln_store_relaxed(&slot[w], words[w]);
}

static inline void kiln_slot_read(kiln_deque_ring *ring, int64_t i, kiln_task *task) {
    uint64_t *words = (uint64_t *)(void *)task;
    _Atomic uint64_t *slot = ring->slots[i & ring->mask];
    for (size_t w = 0; w < KILN_TASK_WORDS; w++) words[w] = kiln_load_relaxed(&slot[w]);
}

/* Owner. false only when the ring had to grow and memory ran out. */
static inline bool kiln_deque_push(kiln_deque *deque, const kiln_task *task) {
    int64_t b = kiln_load_relaxed(&deque->bottom);
    int64_t t = kiln_load_acquire(&deque->top);
    kiln_deque_ring *ring = kiln_load_relaxed(&deque->ring);
    if (kiln_unlikely(b - t > ring->mask)) {
        ring = kiln_deque_grow(deque, t, b);
        if (!ring) return false;
    }
    kiln_slot_write(ring, b, task);
    kiln_store_release(&deque->bottom, b + 1);   /* publishes the slot and the job's data */
    return true;
}

/* Owner: the newest task. false when empty. */
static inline bool kiln_deque_take(kiln_deque *deque, kiln_task *task) {
    int64_t b = kiln_load_relaxed(&deque->bottom) - 1;
    kiln_deque_ring *ring = kiln_load_relaxed(&deque->ring);
    kiln_store_relaxed(&deque->bottom, b);
    kiln_fence_seq_cst();                         /* the bottom store before the top load */
    int64_t t = kiln_load_relaxed(&deque->top);
    if (t > b) {                                  /* empty */
        kiln_store_relaxed(&deque->bottom, b + 1);
        return false;
    }
    kiln_slot_read(ring, b, task);
    if (t == b) {                                 /* the last task: race the thieves for it */
        bool won = kiln_cas_strong_seq_cst(&deque->top, &t, t + 1);
        kiln_store_relaxed(&deque->bottom, b + 1);
        return won;
    }
    return true;
}

/* What a steal looks at in the oldest task before it claims it: nothing, its
 * isolation, its frame epoch tag, or the counter it is counted on (the address as tag).
 * A constant at each call: the check folds away. */
typedef enum { KILN_STEAL_ANY, KILN_STEAL_ISOLATION, KILN_STEAL_EPOCH, KILN_STEAL_COUNTER } kiln_steal_match;

static inline bool kiln_task_matches(const kiln_task *task, kiln_steal_match match, uint64_t tag) {
    switch (match) {
    case KILN_STEAL_ISOLATION: return task->isolation == tag;
    case KILN_STEAL_EPOCH: return (task->flags >> 32) == tag;
    case KILN_STEAL_COUNTER: return (uint64_t)(uintptr_t)task->counter == tag;
    default: return true;
    }
}

/* Any thread, the owner included (an isolated wait looks at the oldest task of its own
 * deque too; the owner never pushes or takes at the same time as it steals): the oldest
 * task, only when it matches (kiln_task_matches); KILN_STEAL_EMPTY (empty for this
 * match), leaving it in place, when it does not: the slot is read before the CAS, and a
 * task that is not taken is not claimed. */
static inline kiln_steal_result kiln_deque_steal_if(kiln_deque *deque, kiln_task *task,
                                                    kiln_steal_match match, uint64_t tag) {
    int64_t t = kiln_load_acquire(&deque->top);
    kiln_fence_seq_cst();                         /* the top load before the bottom load */
    int64_t b = kiln_load_acquire(&deque->bottom);
    if (t >= b) return KILN_STEAL_EMPTY;
    kiln_deque_ring *ring = kiln_load_acquire(&deque->ring);
    kiln_slot_read(ring, t, task);
    /* A torn read is harmless: a task that is not claimed is not used. */
    if (!kiln_task_matches(task, match, tag)) return KILN_STEAL_EMPTY;
    if (!kiln_cas_strong_seq_cst(&deque->top, &t, t + 1))
        return KILN_STEAL_ABORT;
    return KILN_STEAL_OK;
}

/* Any thread but the owner: the oldest task. */
static inline kiln_steal_result kiln_deque_steal(kiln_deque *deque, kiln_task *task) {
    return kiln_deque_steal_if(deque, task, KILN_STEAL_ANY, 0);
}


/* Whether the deque looked non-empty at some instant (a hint for idle workers). */
static inline bool kiln_deque_looks_busy(kiln_deque *deque) {
    return kiln_load_acquire(&deque->bottom) > kiln_load_acquire(&deque->top);
}

#endif /* KILN_JOBS_DEQUE_H */
