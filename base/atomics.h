/* base/atomics.h — kiln's C11 atomic operations, with the memory order in the name,
 * and the ThreadSanitizer annotations that Concurrency Kit's inline-assembly primitives
 * need. No other file uses <stdatomic.h> orders or __tsan_* directly; the one user of
 * ck's atomics (the double-width CAS of alloc/lifo.h) annotates them from here. */
#ifndef KILN_BASE_ATOMICS_H
#define KILN_BASE_ATOMICS_H

#include <kiln/core.h>
#include <stdatomic.h>
#include <stdint.h>

#define kiln_load_relaxed(p)        atomic_load_explicit((p), memory_order_relaxed)
#define kiln_load_acquire(p)        atomic_load_explicit((p), memory_order_acquire)
#define kiln_store_relaxed(p, v)    atomic_store_explicit((p), (v), memory_order_relaxed)
#define kiln_store_release(p, v)    atomic_store_explicit((p), (v), memory_order_release)
#define kiln_add_relaxed(p, v)      atomic_fetch_add_explicit((p), (v), memory_order_relaxed)
#define kiln_sub_relaxed(p, v)      atomic_fetch_sub_explicit((p), (v), memory_order_relaxed)
#define kiln_add_release(p, v)      atomic_fetch_add_explicit((p), (v), memory_order_release)
#define kiln_add_acq_rel(p, v)      atomic_fetch_add_explicit((p), (v), memory_order_acq_rel)
#define kiln_sub_acq_rel(p, v)      atomic_fetch_sub_explicit((p), (v), memory_order_acq_rel)
#define kiln_or_relaxed(p, v)       atomic_fetch_or_explicit((p), (v), memory_order_relaxed)
#define kiln_and_relaxed(p, v)      atomic_fetch_and_explicit((p), (v), memory_order_relaxed)
#define kiln_exchange_acq_rel(p, v) atomic_exchange_explicit((p), (v), memory_order_acq_rel)
#define kiln_exchange_relaxed(p, v) atomic_exchange_explicit((p), (v), memory_order_relaxed)
#define kiln_cas_strong_acquire(p, expected, desired) \
    atomic_compare_exchange_strong_explicit((p), (expected), (desired), \
                                            memory_order_acquire, memory_order_relaxed)
#define kiln_cas_strong_seq_cst(p, expected, desired) \
    atomic_compare_exchange_strong_explicit((p), (expected), (desired), \
                                            memory_order_seq_cst, memory_order_relaxed)
#define kiln_cas_weak_acq_rel(p, expected, desired) \
    atomic_compare_exchange_weak_explicit((p), (expected), (desired), \
                                          memory_order_acq_rel, memory_order_relaxed)
#define kiln_cas_strong_relaxed(p, expected, desired) \
    atomic_compare_exchange_strong_explicit((p), (expected), (desired), \
                                            memory_order_relaxed, memory_order_relaxed)
#define kiln_cas_weak_relaxed(p, expected, desired) \
    atomic_compare_exchange_weak_explicit((p), (expected), (desired), \
                                          memory_order_relaxed, memory_order_relaxed)

/* Fences. release and acquire: the halves of the sequence counters that publish
 * multi-word snapshots (base/seqlock.h). seq_cst: a store before a load of another
 * location, on both sides of a handshake (the Chase-Lev deque's owner and thieves, a
 * sleeping worker and its waker, handle frees and the reclaim epoch). */
#define kiln_fence_release() atomic_thread_fence(memory_order_release)
#define kiln_fence_acquire() atomic_thread_fence(memory_order_acquire)
#define kiln_fence_seq_cst() atomic_thread_fence(memory_order_seq_cst)

/* seq_cst accesses: they take part in the single total order of seq_cst operations and
 * fences, which the handshakes above rely on (the sleepers count, the reclaim epoch). */
#define kiln_add_seq_cst(p, v) atomic_fetch_add_explicit((p), (v), memory_order_seq_cst)
#define kiln_sub_seq_cst(p, v) atomic_fetch_sub_explicit((p), (v), memory_order_seq_cst)
#define kiln_load_seq_cst(p)   atomic_load_explicit((p), memory_order_seq_cst)
#define kiln_store_seq_cst(p, v) atomic_store_explicit((p), (v), memory_order_seq_cst)

/* A counter written by one thread and read by others: a relaxed load and store, no
 * read-modify-write (a plain mov on x86), so the owner's update costs nothing more
 * than a plain increment and readers see a torn-free value. */
#define kiln_owner_add(p, v) kiln_store_relaxed((p), kiln_load_relaxed(p) + (v))
/* kiln_owner_add(p, 1) of a 64-bit counter, in one instruction where the target allows
 * (KILN_OWNER_COUNT, kiln/core.h: the same single-writer rule). Elsewhere the C11 form:
 * clang's __atomic builtins, which KILN_OWNER_COUNT's fallback uses for the public heads'
 * plain words, refuse an _Atomic operand. */
#ifdef KILN_OWNER_COUNT_ASM
#  define kiln_owner_inc(p) KILN_OWNER_COUNT(p)
#else
#  define kiln_owner_inc(p) kiln_owner_add((p), 1)
#endif

/* Raises *p to at least v (a relaxed high-water mark, any thread). */
static inline void kiln_max_relaxed_u64(_Atomic uint64_t *p, uint64_t v) {
    uint64_t seen = kiln_load_relaxed(p);
    while (seen < v && !kiln_cas_weak_relaxed(p, &seen, v)) {
    }
}

/* ThreadSanitizer cannot see Concurrency Kit's inline assembly. Around a ck CAS loop,
 * release the address before each attempt and acquire it after a successful one:
 * that gives TSan the same happens-before edges the hardware CAS provides. */
#if defined(__SANITIZE_THREAD__)
#  define KILN_TSAN 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define KILN_TSAN 1
#  endif
#endif

#ifdef KILN_TSAN
#  include <sanitizer/tsan_interface.h>
#  define kiln_tsan_release(addr) __tsan_release((void *)(addr))
#  define kiln_tsan_acquire(addr) __tsan_acquire((void *)(addr))
#else
#  define kiln_tsan_release(addr) ((void)(addr))
#  define kiln_tsan_acquire(addr) ((void)(addr))
#endif

#endif /* KILN_BASE_ATOMICS_H */
