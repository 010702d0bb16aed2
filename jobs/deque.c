/* jobs/deque.c — the deque's rings: allocation, growth, and their release. */
#include "deque.h"

#include "../base/sys_alloc.h"

static kiln_deque_ring *ring_new(int64_t capacity) {
    kiln_deque_ring *ring = kiln_sys_alloc(sizeof *ring + (size_t)capacity * sizeof ring->slots[0]);
    if (!ring) return NULL;
    ring->mask = capacity - 1;
    ring->retired = NULL;
    return ring;
}

bool kiln_deque_init(kiln_deque *deque, int64_t capacity) {
    kiln_deque_ring *ring = ring_new(capacity);
    if (!ring) return false;
    kiln_store_relaxed(&deque->top, 0);
    kiln_store_relaxed(&deque->bottom, 0);
    kiln_store_relaxed(&deque->ring, ring);
    return true;
}

void kiln_deque_fini(kiln_deque *deque) {
    for (kiln_deque_ring *ring = kiln_load_relaxed(&deque->ring), *next; ring; ring = next) {
        next = ring->retired;
        kiln_sys_free(ring);
    }
    kiln_store_relaxed(&deque->ring, NULL);
}

kiln_deque_ring *kiln_deque_grow(kiln_deque *deque, int64_t top, int64_t bottom) {
    kiln_deque_ring *old = kiln_load_relaxed(&deque->ring);
    kiln_deque_ring *ring = ring_new(2 * (old->mask + 1));
    if (!ring) return NULL;
    kiln_task task;
    for (int64_t i = top; i < bottom; i++) {
        kiln_slot_read(old, i, &task);
        kiln_slot_write(ring, i, &task);
    }
    ring->retired = old;   /* thieves may still read it: freed with the deque */
    kiln_store_release(&deque->ring, ring);
    return ring;
}
