/* alloc/lifo.h — a lock-free, ABA-safe LIFO of intrusive nodes (a Treiber stack with
 * a generation tag beside the top pointer, swapped together by Concurrency Kit's
 * double-width CAS). The block pool keeps its free blocks on one.
 *
 * Contract: push, push_chain and pop may be called by any number of threads at once;
 * all three are lock-free. A node's link word is read by poppers that may lose the
 * race for it, so a node's memory must stay mapped and readable for as long as the
 * stack lives, even after the node has been popped (never PROT_NONE, never unmapped).
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
#include "../base/common.h"

typedef struct kiln_lifo_node {
    struct kiln_lifo_node *next;   /* written by the pusher, which owns the node then */
} kiln_lifo_node;

/* {top, generation}: the pair one double-width CAS swaps; 16-byte aligned for it
 * (cmpxchg16b faults on a misaligned operand). Zero-initialised: empty. */
typedef struct kiln_lifo {
    _Alignas(16) kiln_lifo_node *top;
    char *generation;              /* bumped by every pop, so a recycled top fails the CAS */
} kiln_lifo;

_Static_assert(sizeof(kiln_lifo) == 2 * sizeof(void *), "kiln_lifo is one CAS operand");

/* Pushes the chain first -> ... -> last (linked by the caller through next). */
static inline void kiln_lifo_push_chain(kiln_lifo *lifo, kiln_lifo_node *first,
                                        kiln_lifo_node *last) {
    kiln_lifo_node *top = ck_pr_load_ptr(&lifo->top);
    for (;;) {
        last->next = top;
        ck_pr_fence_store();       /* the link is visible before the node is */
        kiln_tsan_release(lifo);
        /* Push needs no generation bump: ABA only hurts a pop, which bumps it. */
        if (ck_pr_cas_ptr_value(&lifo->top, top, first, &top)) return;
    }
}

static inline void kiln_lifo_push(kiln_lifo *lifo, kiln_lifo_node *node) {
    kiln_lifo_push_chain(lifo, node, node);
}

/* The most recently pushed node, or NULL when empty. */
static inline kiln_lifo_node *kiln_lifo_pop(kiln_lifo *lifo) {
    kiln_lifo seen, next;
    seen.generation = ck_pr_load_ptr(&lifo->generation);
    ck_pr_fence_load();
    seen.top = ck_pr_load_ptr(&lifo->top);
    while (seen.top != NULL) {
        ck_pr_fence_load();        /* read the link after the top it belongs to */
        /* The node may be popped and reused by another thread right now; then this
         * read sees garbage and the CAS below fails on the generation. */
        next.top = ck_pr_load_ptr(&seen.top->next);
        next.generation = seen.generation + 1;
        kiln_tsan_release(lifo);
        if (ck_pr_cas_ptr_2_value(lifo, &seen, &next, &seen)) {
            kiln_tsan_acquire(lifo);
            return seen.top;
        }
    }
    return NULL;
}

/* Whether the stack looked empty at some instant (a hint; any thread). */
static inline bool kiln_lifo_looks_empty(kiln_lifo *lifo) {
    return ck_pr_load_ptr(&lifo->top) == NULL;
}

#endif /* KILN_ALLOC_LIFO_H */
