/* base/log_ring.c — the async log's ring and its writer thread (the protocol:
 * base/log_ring.h). */
#define _POSIX_C_SOURCE 200809L   /* nanosleep */
#include "log_ring.h"

#include <string.h>
#include <time.h>

#include "atomics.h"
#include "fault_signals.h"
#include "sys_alloc.h"

#define RING_MASK ((uint64_t)KILN_LOG_RING_MESSAGES - 1)
_Static_assert((KILN_LOG_RING_MESSAGES & (KILN_LOG_RING_MESSAGES - 1)) == 0, "a power of two");

bool kiln_log_ring_put(kiln_log_ring *ring, kiln_log_level level, kiln_log_item item,
                       const char *message) {
    uint64_t ticket = kiln_load_relaxed(&ring->head);
    kiln_log_slot *slot;
    for (;;) {
        slot = &ring->slots[ticket & RING_MASK];
        /* acquire: pairs with the consumer's release of the slot (ticket's seq), so its
         * reads of the old text happen before this producer's writes. */
        uint64_t seq = kiln_load_acquire(&slot->seq);
        if (seq == ticket) {
            if (kiln_cas_weak_relaxed(&ring->head, &ticket, ticket + 1)) break;   /* ours */
            continue;   /* ticket is the head another producer left */
        }
        if (seq < ticket) {   /* the slot's last message is not delivered yet: full */
            kiln_add_relaxed(&ring->dropped, 1);
            return false;
        }
        ticket = kiln_load_relaxed(&ring->head);   /* another producer took it */
    }
    kiln_store_relaxed(&slot->kind, (uint64_t)level << 32 | (uint32_t)item);
    size_t length = strnlen(message, KILN_LOG_RING_TEXT - 1);
    char cut[KILN_LOG_RING_TEXT];   /* a longer message is cut, ending in "..." */
    if (kiln_unlikely(message[length] != '\0')) {
        memcpy(cut, message, length - 3);
        memcpy(cut + length - 3, "...", 4);
        message = cut;
    }
    size_t i = 0;
    for (; 8 * i + 8 <= length; i++) {   /* whole words */
        uint64_t word;
        memcpy(&word, message + 8 * i, 8);
        kiln_store_relaxed(&slot->words[i], word);
    }
    uint64_t last = 0;   /* the rest and the NUL, zero-padded */
    memcpy(&last, message + 8 * i, length - 8 * i);
    kiln_store_relaxed(&slot->words[i], last);
    kiln_store_release(&slot->seq, ticket + 1);   /* written: the consumer's acquire */
    return true;
}

/* Copies a slot's text into text (KILN_LOG_RING_TEXT bytes) up to its NUL word. */
static void copy_text(kiln_log_slot *slot, char *text) {
    for (size_t i = 0; i < KILN_LOG_RING_WORDS; i++) {
        uint64_t word = kiln_load_relaxed(&slot->words[i]);
        memcpy(text + 8 * i, &word, 8);
        if (memchr(text + 8 * i, '\0', 8)) return;
    }
    text[KILN_LOG_RING_TEXT - 1] = '\0';
}

void kiln_log_ring_drain(kiln_log_ring *ring) {
    pthread_mutex_lock(&ring->drain_lock);
    for (;;) {
        kiln_log_slot *slot = &ring->slots[ring->tail & RING_MASK];
        if (kiln_load_acquire(&slot->seq) != ring->tail + 1) break;   /* not written yet */
        char text[KILN_LOG_RING_TEXT];
        copy_text(slot, text);
        uint64_t kind = kiln_load_relaxed(&slot->kind);
        kiln_log_deliver(&ring->sink, (kiln_log_item)(uint32_t)kind,
                         (kiln_log_level)(kind >> 32), text);
        /* release: the text is read before a producer may take the slot again. */
        kiln_store_release(&slot->seq, ring->tail + KILN_LOG_RING_MESSAGES);
        ring->tail++;
    }
    uint64_t dropped = kiln_load_relaxed(&ring->dropped);
    if (dropped != ring->dropped_told) {
        kiln_log_deliver_fmt(&ring->sink, KILN_LOGITEM_LOG_DROPPED,
                             "the async log's ring (%u messages) was full: %llu messages "
                             "dropped since the last delivery, %llu in all",
                             (unsigned)KILN_LOG_RING_MESSAGES,
                             (unsigned long long)(dropped - ring->dropped_told),
                             (unsigned long long)dropped);
        ring->dropped_told = dropped;
    }
    pthread_mutex_unlock(&ring->drain_lock);
}

void kiln_log_ring_each_queued(kiln_log_ring *ring,
                               void (*fn)(void *user, kiln_log_level level, const char *text),
                               void *user) {
    uint64_t head = kiln_load_acquire(&ring->head);
    uint64_t first = head > KILN_LOG_RING_MESSAGES ? head - KILN_LOG_RING_MESSAGES : 0;
    for (uint64_t ticket = first; ticket < head; ticket++) {
        kiln_log_slot *slot = &ring->slots[ticket & RING_MASK];
        /* Written and not delivered: seq is ticket + 1 before the copy and after it (the
         * acquire fence orders the copy's loads before the second look; a slot taken
         * again meanwhile shows a larger seq). */
        if (kiln_load_acquire(&slot->seq) != ticket + 1) continue;
        char text[KILN_LOG_RING_TEXT];
        copy_text(slot, text);
        uint64_t kind = kiln_load_relaxed(&slot->kind);
        kiln_fence_acquire();
        if (kiln_load_relaxed(&slot->seq) != ticket + 1) continue;
        fn(user, (kiln_log_level)(kind >> 32), text);
    }
}

void kiln_log_ring_lost(kiln_log_ring *ring, uint64_t n) {
    kiln_add_relaxed(&ring->dropped, n);
}

uint64_t kiln_log_ring_dropped(const kiln_log_ring *ring) {
    return kiln_load_relaxed(&((kiln_log_ring *)ring)->dropped);
}

static void *writer_main(void *arg) {
    kiln_log_ring *ring = arg;
    kiln_take_fault_signals();   /* a fault in a log callback reaches the crash report */
    struct timespec pause = { 0, KILN_LOG_WRITER_SLEEP_MS * 1000000L };
    while (!kiln_load_relaxed(&ring->stop)) {
        kiln_log_ring_drain(ring);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

kiln_log_ring *kiln_log_ring_start(const kiln_log_sink *sink) {
    kiln_log_ring *ring = kiln_sys_aligned(KILN_CACHE_LINE, sizeof *ring);
    if (!ring) return NULL;
    memset(ring, 0, sizeof *ring);
    for (uint64_t i = 0; i < KILN_LOG_RING_MESSAGES; i++) kiln_store_relaxed(&ring->slots[i].seq, i);
    ring->sink = *sink;
    pthread_mutex_init(&ring->drain_lock, NULL);
    if (pthread_create(&ring->writer, NULL, writer_main, ring) != 0) {
        pthread_mutex_destroy(&ring->drain_lock);
        kiln_sys_free(ring);
        return NULL;
    }
    return ring;
}

void kiln_log_ring_stop(kiln_log_ring *ring) {
    if (!ring) return;
    kiln_store_relaxed(&ring->stop, true);
    pthread_join(ring->writer, NULL);
    kiln_log_ring_drain(ring);   /* what came after the writer's last look */
    pthread_mutex_destroy(&ring->drain_lock);
    kiln_sys_free(ring);
}
