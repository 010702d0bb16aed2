/* alloc/lifo.h — a lock-free, ABA-safe LIFO of intrusive nodes (a Treiber stack with
 * a generation tag beside the top pointer, swapped together by Concurrency Kit's
 * double-width CAS). The block pool keeps its free blocks on one.
 *
 * Contract: push, push_chain and pop may be called by any number of threads at once;
 * all three are lock-free. A node's link word is read by poppers that may lose the
 * race for it, so a node's memory must stay mapped and readable for as long as the
 * stack lives, even after the node has been popped (never PROT_NONE, never unmapped).
 *
 * Contention: a thread whose CAS lost spins briefly before it retries (kiln_backoff,
 * exponential and bounded), so that two cores retrying at once stop taking the line
 * from each other on every attempt. Progress stays lock-free: some CAS always succeeds.
 *
 * ThreadSanitizer: ck's primitives are inline assembly TSan cannot see; each CAS is
 * preceded by a release and a successful one followed by an acquire on the stack's
 * address (base/atomics.h), which gives TSan exactly the ordering the hardware CAS
 * gives. Zero reports, no suppressions. */
#ifndef KILN_ALLOC_LIFO_H
#define KILN_ALLOC_LIFO_H

#include <ck_pr.h>
#include <stdbool.h>

#include "../base/atomics.h"
#include "../base/backoff.h"
#include "../base/common.h"

/* Most pauses a lost CAS waits before its retry (kiln_backoff doubles the wait from 1 up
 * to this). bench/alloc_bench A5, 2 threads on 2 cores: 455 ns per get+put pair without
 * backoff, 80-92 with 64 (8 was clearly worse, 512 no better than 64). */
#ifndef KILN_LIFO_BACKOFF_MAX
#define KILN_LIFO_BACKOFF_MAX 64
#endif

typedef struct kiln_lifo_node {
    struct kiln_lifo_node *next;   /* written by the pusher, which owns the node then */
} kiln_lifo_node;

/* Bits of the tag word: the low ones count the nodes on the stack (so a pool's free count
 * needs no counter of its own: the CAS that moves a node updates it), the high ones count
 * pops (the ABA generation: a node popped and pushed again comes back under another tag,
 * so a stale pop fails). 40 bits of pops wrap after 10^12 pops, far beyond any window in
 * which one pop could be descheduled. */
#define KILN_LIFO_DEPTH_BITS 24
#define KILN_LIFO_MAX_DEPTH  (((uint64_t)1 << KILN_LIFO_DEPTH_BITS) - 1)
#define KILN_LIFO_POPS_MASK  (((uint64_t)1 << (64 - KILN_LIFO_DEPTH_BITS)) - 1)

/* {top, tag}: the pair one double-width CAS swaps; 16-byte aligned for it (cmpxchg16b
 * faults on a misaligned operand). Zero-initialised: empty. */
typedef struct kiln_lifo {
    _Alignas(16) kiln_lifo_node *top;
    uint64_t tag;                  /* pops << KILN_LIFO_DEPTH_BITS | depth */
} kiln_lifo;

_Static_assert(sizeof(kiln_lifo) == 2 * sizeof(void *), "kiln_lifo is one CAS operand");

static inline kiln_lifo kiln_lifo_snapshot(kiln_lifo *lifo) {
    kiln_lifo seen;
    seen.tag = ck_pr_load_64(&lifo->tag);
    ck_pr_fence_load();            /* a top read after its tag: the CAS checks the pair */
    seen.top = ck_pr_load_ptr(&lifo->top);
    return seen;
}

/* Pushes the chain first -> ... -> last of count nodes (linked by the caller through
 * next). The caller keeps the depth under KILN_LIFO_MAX_DEPTH. */
static inline void kiln_lifo_push_chain(kiln_lifo *lifo, kiln_lifo_node *first,
                                        kiln_lifo_node *last, uint64_t count) {
    kiln_lifo seen = kiln_lifo_snapshot(lifo), next;
    unsigned spins = 1;
    for (;;) {
        last->next = seen.top;
        /* Release: the link, and everything written to the nodes before, is visible to a
         * pop that takes them. A C11 fence, not ck's store fence: ck's double-width CAS
         * orders nothing on aarch64 (casp, ldxp/stxp without acquire or release), and a
         * store-store fence does not order the nodes' earlier loads. Free on x86. */
        kiln_fence_release();
        next.top = first;
        next.tag = seen.tag + count;
        kiln_tsan_release(lifo);
        if (ck_pr_cas_ptr_2_value(lifo, &seen, &next, &seen)) return;
        kiln_backoff(&spins, KILN_LIFO_BACKOFF_MAX);
    }
}

static inline void kiln_lifo_push(kiln_lifo *lifo, kiln_lifo_node *node) {
    kiln_lifo_push_chain(lifo, node, node, 1);
}

/* The most recently pushed node, or NULL when empty; *depth (if not NULL) receives the
 * number of nodes left on the stack right after this pop. */
static inline kiln_lifo_node *kiln_lifo_pop_depth(kiln_lifo *lifo, uint64_t *depth) {
    kiln_lifo seen = kiln_lifo_snapshot(lifo), next;
    unsigned spins = 1;
    while (seen.top != NULL) {
        ck_pr_fence_load();        /* read the link after the top it belongs to */
        /* The node may be popped and reused by another thread right now; then this
         * read sees garbage and the CAS below fails on the tag. */
        next.top = ck_pr_load_ptr(&seen.top->next);
        next.tag = seen.tag - 1 + ((uint64_t)1 << KILN_LIFO_DEPTH_BITS);
        kiln_tsan_release(lifo);
        if (ck_pr_cas_ptr_2_value(lifo, &seen, &next, &seen)) {
            /* Acquire: what the pusher wrote to the node comes before its use here, by
             * C11's fence rule, not by an address dependency that aarch64 honours and C11
             * does not promise. Free on x86. */
            kiln_fence_acquire();
            kiln_tsan_acquire(lifo);
            if (depth) *depth = next.tag & KILN_LIFO_MAX_DEPTH;
            return seen.top;
        }
        kiln_backoff(&spins, KILN_LIFO_BACKOFF_MAX);
    }
    return NULL;
}

static inline kiln_lifo_node *kiln_lifo_pop(kiln_lifo *lifo) {
    return kiln_lifo_pop_depth(lifo, NULL);
}

/* Nodes on the stack, and pops so far (mod 2^40), at some instant. Any thread. */
static inline uint64_t kiln_lifo_depth(kiln_lifo *lifo) {
    return ck_pr_load_64(&lifo->tag) & KILN_LIFO_MAX_DEPTH;
}
static inline uint64_t kiln_lifo_pops(kiln_lifo *lifo) {
    return ck_pr_load_64(&lifo->tag) >> KILN_LIFO_DEPTH_BITS;
}

#endif /* KILN_ALLOC_LIFO_H */
