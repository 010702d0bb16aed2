/* jobs/inbox.c — the pinned-job ring (growth, FIFO takes) and the lanes of pinned
 * background jobs, one ring per counter in a small hash table. */
#include "inbox.h"

#include "../base/sys_alloc.h"

static kiln_task *slot_at(const kiln_inbox *inbox, size_t i) {
    return &inbox->slots[(inbox->head + i) & (inbox->cap - 1)];
}

/* Room for at least need tasks: a bigger ring with the tasks moved to its start. */
static bool grow(kiln_inbox *inbox, size_t need) {
    size_t cap = inbox->cap ? inbox->cap : 64;
    while (cap < need) {
        if (cap > SIZE_MAX / 2 / sizeof(kiln_task)) return false;
        cap *= 2;
    }
    kiln_task *slots = kiln_sys_alloc(cap * sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < inbox->count; i++) slots[i] = *slot_at(inbox, i);
    kiln_sys_free(inbox->slots);
    inbox->slots = slots;
    inbox->head = 0;
    inbox->cap = cap;
    return true;
}

bool kiln_inbox_push(kiln_inbox *inbox, const kiln_task *tasks, size_t count) {
    if (count > SIZE_MAX - inbox->count) return false;
    if (inbox->count + count > inbox->cap && !grow(inbox, inbox->count + count)) return false;
    for (size_t i = 0; i < count; i++) *slot_at(inbox, inbox->count + i) = tasks[i];
    inbox->count += count;
    return true;
}

bool kiln_inbox_pop(kiln_inbox *inbox, kiln_task *task) {
    if (inbox->count == 0) return false;
    *task = *slot_at(inbox, 0);
    inbox->head = (inbox->head + 1) & (inbox->cap - 1);
    inbox->count--;
    return true;
}

void kiln_inbox_fini(kiln_inbox *inbox) {
    kiln_sys_free(inbox->slots);
    *inbox = (kiln_inbox){ 0 };
}

/* ---- lanes ---- */

static size_t home_of(const kiln_lanes *lanes, const kiln_counter_state *counter) {
    uint64_t h = ((uint64_t)(uintptr_t)counter >> 4) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32) & (lanes->cap - 1);
}

/* The slot of counter's lane, or the empty slot where it would go. cap > used. */
static size_t probe(const kiln_lanes *lanes, const kiln_counter_state *counter) {
    size_t i = home_of(lanes, counter);
    while (lanes->slots[i].used && lanes->slots[i].counter != counter) i = (i + 1) & (lanes->cap - 1);
    return i;
}

/* A table of cap slots with every lane moved over; false when memory runs out. */
static bool rehash(kiln_lanes *lanes, size_t cap) {
    kiln_inbox_lane *slots = kiln_sys_calloc(cap, sizeof *slots);
    if (!slots) return false;
    kiln_lanes grown = { slots, cap, lanes->used, lanes->count, 0 };
    for (size_t i = 0; i < lanes->cap; i++)
        if (lanes->slots[i].used) grown.slots[probe(&grown, lanes->slots[i].counter)] = lanes->slots[i];
    kiln_sys_free(lanes->slots);
    *lanes = grown;
    return true;
}

/* Empties slot i and moves up the lanes after it that probing would no longer reach
 * (backward-shift deletion: no tombstones). */
static void remove_lane(kiln_lanes *lanes, size_t i) {
    size_t mask = lanes->cap - 1;
    kiln_inbox_fini(&lanes->slots[i].ring);
    lanes->slots[i] = (kiln_inbox_lane){ 0 };
    lanes->used--;
    for (size_t j = (i + 1) & mask; lanes->slots[j].used; j = (j + 1) & mask) {
        size_t home = home_of(lanes, lanes->slots[j].counter);
        /* j's lane may fill the hole at i when its home does not lie in (i, j]. */
        bool reachable = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (reachable) continue;
        lanes->slots[i] = lanes->slots[j];
        lanes->slots[j] = (kiln_inbox_lane){ 0 };
        i = j;
    }
}

bool kiln_lanes_push(kiln_lanes *lanes, const kiln_counter_state *counter, const kiln_task *tasks,
                     size_t count) {
    if ((lanes->used + 1) * 2 > lanes->cap && !rehash(lanes, lanes->cap ? lanes->cap * 2 : 16))
        return false;
    size_t i = probe(lanes, counter);
    kiln_inbox_lane *lane = &lanes->slots[i];
    if (!lane->used) *lane = (kiln_inbox_lane){ .counter = counter, .used = true };
    if (!kiln_inbox_push(&lane->ring, tasks, count)) {
        if (lane->ring.count == 0) {   /* a lane made for these: gone again */
            lanes->used++;
            remove_lane(lanes, i);
        }
        return false;
    }
    if (lane->ring.count == count) lanes->used++;   /* a new lane */
    lanes->count += count;
    return true;
}

/* Takes the oldest task of the lane in slot i (used), removing the lane once empty. */
static void take_from(kiln_lanes *lanes, size_t i, kiln_task *task) {
    kiln_inbox_pop(&lanes->slots[i].ring, task);
    lanes->count--;
    if (lanes->slots[i].ring.count == 0) remove_lane(lanes, i);
}

bool kiln_lanes_take(kiln_lanes *lanes, const kiln_counter_state *counter, kiln_task *task) {
    if (lanes->count == 0) return false;
    size_t i = probe(lanes, counter);
    if (!lanes->slots[i].used) return false;
    take_from(lanes, i, task);
    return true;
}

bool kiln_lanes_pop_any(kiln_lanes *lanes, kiln_task *task) {
    if (lanes->count == 0) return false;
    size_t i = lanes->cursor & (lanes->cap - 1);
    while (!lanes->slots[i].used) i = (i + 1) & (lanes->cap - 1);   /* count > 0: one is */
    lanes->cursor = i;
    take_from(lanes, i, task);
    return true;
}

size_t kiln_inbox_count_if(const kiln_inbox *inbox, bool (*match)(const kiln_task *task, const void *arg),
                           const void *arg) {
    size_t n = 0;
    for (size_t i = 0; i < inbox->count; i++) n += match(&inbox->slots[(inbox->head + i) & (inbox->cap - 1)], arg);
    return n;
}

size_t kiln_lanes_count_of(const kiln_lanes *lanes, const kiln_counter_state *counter) {
    if (lanes->count == 0) return 0;
    size_t i = probe(lanes, counter);
    return lanes->slots[i].used ? lanes->slots[i].ring.count : 0;
}

void kiln_lanes_fini(kiln_lanes *lanes) {
    for (size_t i = 0; i < lanes->cap; i++) kiln_inbox_fini(&lanes->slots[i].ring);
    kiln_sys_free(lanes->slots);
    *lanes = (kiln_lanes){ 0 };
}
