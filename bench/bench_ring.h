/* bench/bench_ring.h — what the multi-threaded allocation workloads share (pool_bench's
 * A3 and A4, heap_bench's H4): a single-producer single-consumer ring that hands objects
 * from one thread to another, the wait of a thread that finds it empty or full, and the
 * per-thread figures of a round. Header only; each program defines INLINE first. */
#ifndef KILN_BENCH_RING_H
#define KILN_BENCH_RING_H

#include <ck_pr.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* ---- the ring -------------------------------------------------------------------------
 * One producer, one consumer, C11 atomics. The producer publishes its head every
 * RING_PUBLISH pushes (and whenever it would wait), so the ring's own cost per object
 * is a slot write and read, not a cache-line transfer of the head per object; the
 * consumer publishes its tail per pop (the producer reads it only when the ring looks
 * full). Every implementation pays the same ring. */

#define RING_CAP     1024        /* a power of two */
#define RING_PUBLISH 32

typedef struct ring {
    _Alignas(64) _Atomic size_t head;   /* pushes published; the producer's */
    _Alignas(64) _Atomic size_t tail;   /* pops done; the consumer's */
    _Alignas(64) void *slots[RING_CAP];
} ring;

typedef struct ring_writer { ring *r; size_t head, published, tail_seen; } ring_writer;
typedef struct ring_reader { ring *r; size_t tail, head_seen; } ring_reader;

/* Endpoints resume where the ring's counters stand (a ring is drained between rounds). */
static ring_writer ring_writer_of(ring *r) {
    size_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    return (ring_writer){ r, head, head, atomic_load_explicit(&r->tail, memory_order_acquire) };
}

static ring_reader ring_reader_of(ring *r) {
    return (ring_reader){ r, atomic_load_explicit(&r->tail, memory_order_relaxed),
                          atomic_load_explicit(&r->head, memory_order_acquire) };
}

INLINE void ring_publish(ring_writer *w) {
    if (w->published != w->head) {
        atomic_store_explicit(&w->r->head, w->head, memory_order_release);
        w->published = w->head;
    }
}

INLINE bool ring_try_push(ring_writer *w, void *p) {
    if (w->head - w->tail_seen == RING_CAP) {
        w->tail_seen = atomic_load_explicit(&w->r->tail, memory_order_acquire);
        if (w->head - w->tail_seen == RING_CAP) {
            ring_publish(w);
            return false;
        }
    }
    w->r->slots[w->head % RING_CAP] = p;
    w->head++;
    if (w->head - w->published >= RING_PUBLISH) ring_publish(w);
    return true;
}

INLINE void *ring_try_pop(ring_reader *rd) {
    if (rd->tail == rd->head_seen) {
        rd->head_seen = atomic_load_explicit(&rd->r->head, memory_order_acquire);
        if (rd->tail == rd->head_seen) return NULL;
    }
    void *p = rd->r->slots[rd->tail % RING_CAP];
    rd->tail++;
    atomic_store_explicit(&rd->r->tail, rd->tail, memory_order_release);
    return p;
}

/* A thread that must wait (ring empty or full): spins briefly, then yields the core,
 * which the oversubscribed runs need to make progress at all. */
INLINE void wait_a_little(unsigned *spins) {
    if (++*spins < 64) ck_pr_stall();
    else sched_yield();
}

static ring *rings_new(int n) {
    ring *r = aligned_alloc(64, (size_t)n * sizeof *r);
    if (!r) bench_die("out of memory for rings");
    for (int i = 0; i < n; i++) {
        atomic_init(&r[i].head, 0);
        atomic_init(&r[i].tail, 0);
    }
    return r;
}

/* Per-thread figures of a multi-threaded round, written by the thread, read by main
 * after bench_team_run. */
typedef struct thread_figures {
    _Alignas(64) uint64_t begin, end;   /* the timed part */
    double  *chunk_ns;                  /* one per chunk */
    int      chunks;
    uint64_t checksum;                  /* what the consumer read (A3, H4a) */
} thread_figures;

static void thread_figures_init(thread_figures *t, int chunks) {
    memset(t, 0, sizeof *t);
    t->chunk_ns = calloc((size_t)chunks, sizeof *t->chunk_ns);
    if (!t->chunk_ns) bench_die("out of memory for figures");
    t->chunks = chunks;
}

/* Wall time from the first thread's start to the last thread's end. */
static double wall_ns(const thread_figures *t, int n) {
    uint64_t first = UINT64_MAX, last = 0;
    for (int i = 0; i < n; i++) {
        if (t[i].begin < first) first = t[i].begin;
        if (t[i].end > last) last = t[i].end;
    }
    return (double)(last - first);
}

/* Records a multi-threaded round into s: each chunk of the first timed threads as a
 * sample (its time over its operations times streams, the streams running side by
 * side), then the round: the wall time of all threads over ops * streams. */
static void record_threads(bench_series *s, const thread_figures *t, int timed, int threads,
                           int ops, int chunk, int streams) {
    for (int i = 0; i < timed; i++)
        for (int c = 0; c < t[i].chunks; c++) {
            int left = ops - c * chunk;
            int n = left < chunk ? left : chunk;
            bench_add_sample(s, t[i].chunk_ns[c], (double)n * streams);
        }
    bench_add_round(s, wall_ns(t, threads), (double)ops * streams);
}

#endif /* KILN_BENCH_RING_H */
