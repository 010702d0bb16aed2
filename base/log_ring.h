/* base/log_ring.h — the async log (desc.log_mode = KILN_LOG_ASYNC): a bounded ring that
 * any thread puts a formatted message into with no lock and no system call, and a writer
 * thread of kiln's that delivers them to the sinks. A full ring drops the message and
 * counts it. Delivered messages stay in their slots until a later message takes the slot,
 * so the newest KILN_LOG_RING_MESSAGES are there to read (the crash report).
 *
 * The protocol (a bounded queue with a sequence word per slot, many producers, one
 * consumer at a time):
 * - A slot's seq is ticket + 1 once the message of that ticket is written (release),
 *   ticket + KILN_LOG_RING_MESSAGES once it is delivered (release): the producer of the
 *   next ticket that maps to the slot waits for nothing; it finds seq == its ticket and
 *   takes the slot, or finds the slot not yet delivered and drops its message.
 * - head is the next ticket; a producer takes one with a CAS from the value its slot's
 *   seq matched, so two producers never write one slot.
 * - The consumer (the writer thread, or kiln_log_flush, or destroy: under drain_lock)
 *   delivers tickets in order from tail while their slot's seq is ticket + 1. Never
 * installed. */
#ifndef KILN_BASE_LOG_RING_H
#define KILN_BASE_LOG_RING_H

#include <pthread.h>

#include "log_sink.h"

#define KILN_LOG_RING_MESSAGES 256    /* a power of two */
#define KILN_LOG_RING_TEXT     512    /* kiln formats at most 511 bytes and its NUL */
#define KILN_LOG_WRITER_SLEEP_MS 10   /* the writer looks for messages this often */

#define KILN_LOG_RING_WORDS    (KILN_LOG_RING_TEXT / 8)

/* A slot's words are relaxed atomics, written before seq's release, so that the crash
 * report may copy a queued message while producers and the writer go on (it checks seq
 * again after the copy). */
typedef struct kiln_log_slot {
    _Atomic uint64_t seq;      /* see the protocol */
    _Atomic uint64_t kind;     /* level << 32 | item (kiln_log_level, kiln_log_item) */
    _Atomic uint64_t words[KILN_LOG_RING_WORDS];   /* the text, NUL-ended, words past the
                                                      NUL's unwritten */
} kiln_log_slot;

typedef struct kiln_log_ring {
    _Alignas(KILN_CACHE_LINE) _Atomic uint64_t head;   /* the next ticket (producers: CAS) */
    _Atomic uint64_t dropped;                   /* messages a full ring refused (relaxed) */
    _Alignas(KILN_CACHE_LINE) uint64_t tail;   /* the next ticket to deliver: drain_lock's */
    uint64_t         dropped_told;              /* drops already logged: drain_lock's */
    pthread_mutex_t  drain_lock;                /* one consumer at a time */
    kiln_log_sink    sink;                      /* where the writer delivers */
    pthread_t        writer;
    _Atomic bool     stop;                      /* the writer's end (relaxed, then joined) */
    kiln_log_slot    slots[KILN_LOG_RING_MESSAGES];
} kiln_log_ring;

/* Makes the ring and starts its writer, which delivers to sink (a copy) with
 * kiln_log_deliver, which never queues. NULL when the heap or
 * the thread refuses. The creating thread. */
KILN_INTERNAL kiln_log_ring *kiln_log_ring_start(const kiln_log_sink *sink);

/* Delivers what is queued, stops and joins the writer, frees the ring. No producer may
 * use it during or after the call. NULL: nothing. */
KILN_INTERNAL void kiln_log_ring_stop(kiln_log_ring *ring);

/* Puts one message in the ring: true, or false (counted in dropped) when the ring is
 * full. Lock-free, no system call. Concurrency: any thread, with the writer running. */
KILN_INTERNAL bool kiln_log_ring_put(kiln_log_ring *ring, kiln_log_level level,
                                     kiln_log_item item, const char *message);

/* Delivers every message queued before the call, on the calling thread (blocks while
 * another consumer delivers). Concurrency: any thread but one inside a sink's callback. */
KILN_INTERNAL void kiln_log_ring_drain(kiln_log_ring *ring);

/* Hands each message queued and not yet delivered to fn, oldest first: its level and
 * text (NUL-ended, a copy that was whole). Lock-free, no system call: async-signal-safe
 * (the crash report). Concurrency: any thread, producers and the writer going on. */
KILN_INTERNAL void kiln_log_ring_each_queued(kiln_log_ring *ring,
                                             void (*fn)(void *user, kiln_log_level level,
                                                        const char *text),
                                             void *user);

/* Counts n more messages as dropped (what a dropped summary told of). Any thread. */
KILN_INTERNAL void kiln_log_ring_lost(kiln_log_ring *ring, uint64_t n);

/* Messages dropped so far. Any thread (relaxed). */
KILN_INTERNAL uint64_t kiln_log_ring_dropped(const kiln_log_ring *ring);

#endif /* KILN_BASE_LOG_RING_H */
