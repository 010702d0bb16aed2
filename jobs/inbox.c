/* jobs/inbox.c — the pinned-job ring: growth, FIFO takes, and the take of one
 * counter's task. */
#include "inbox.h"

#include "../base/heap.h"

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
    kiln_task *slots = kiln_heap_alloc(cap * sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < inbox->count; i++) slots[i] = *slot_at(inbox, i);
    kiln_heap_free(inbox->slots);
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

bool kiln_inbox_take_counted(kiln_inbox *inbox, const kiln_counter_state *counter,
                             kiln_task *task) {
    for (size_t i = 0; i < inbox->count; i++) {
        if (slot_at(inbox, i)->counter != counter) continue;
        *task = *slot_at(inbox, i);
        /* The older tasks move up one place into the gap, so the order stays FIFO. */
        for (size_t j = i; j > 0; j--) *slot_at(inbox, j) = *slot_at(inbox, j - 1);
        inbox->head = (inbox->head + 1) & (inbox->cap - 1);
        inbox->count--;
        return true;
    }
    return false;
}

void kiln_inbox_fini(kiln_inbox *inbox) {
    kiln_heap_free(inbox->slots);
    *inbox = (kiln_inbox){ 0 };
}
