/* base/membarrier.h — the heavy half of an asymmetric fence (Linux membarrier, private
 * expedited), so that a rare side of a store-then-load handshake pays a system call and
 * the frequent side nothing but a compiler barrier. Never installed.
 *
 * Contract: when kiln_membarrier returns true, every other thread of the process has
 * run a full memory barrier between the call's start and its return. So for a thread T
 * that stores X, then (after a compiler barrier only) loads Y, and a caller that
 * stores Y, then calls kiln_membarrier, then loads X: either T's load of Y sees the
 * caller's store, or the caller's load of X sees T's store. false: not available (old
 * kernel, or a tool that does not pass the call on); the caller must then not rely on
 * it, and polls instead. Any thread, at any time. */
#ifndef KILN_BASE_MEMBARRIER_H
#define KILN_BASE_MEMBARRIER_H

#include <stdatomic.h>
#include <stdbool.h>

#include "common.h"

KILN_INTERNAL bool kiln_membarrier(void);

/* The light half, on the frequent side between its store and its load: keeps the
 * compiler from moving one past the other; the processor's order is kiln_membarrier's
 * business. */
#define kiln_membarrier_light() atomic_signal_fence(memory_order_seq_cst)

#endif /* KILN_BASE_MEMBARRIER_H */
