/* runtime/memory_snapshot.c — each allocator's memory at the last frame end, for the
 * crash report (the protocol: runtime/memory_snapshot.h). */
#define _POSIX_C_SOURCE 200809L   /* strnlen */
#include "memory_snapshot.h"

#include <string.h>

#include "../base/seqlock.h"

void kiln_snapshot_begin(kiln_memory_snapshot *s) {
    uint64_t newest = kiln_load_relaxed(&s->newest);   /* the driver's own store */
    s->writing = &s->buffers[newest == 1 ? 1 : 0];     /* the one not written last */
    s->filling = 0;
    s->omitted = 0;
    s->started = kiln_seq_write_begin(&s->writing->seq);
}

void kiln_snapshot_add(kiln_memory_snapshot *s, const kiln_snapshot_item *item) {
    if (s->filling == KILN_SNAPSHOT_ITEMS) {
        s->omitted++;
        return;
    }
    kiln_snapshot_words *w = &s->writing->items[s->filling++];
    uint64_t name[KILN_SNAPSHOT_NAME_WORDS] = { 0 };
    memcpy(name, item->name, strnlen(item->name, sizeof name - 1));   /* NUL-padded */
    for (size_t i = 0; i < KILN_SNAPSHOT_NAME_WORDS; i++) kiln_store_relaxed(&w->name[i], name[i]);
    kiln_store_relaxed(&w->kind, (uint64_t)item->kind);
    kiln_store_relaxed(&w->bytes, item->bytes);
    kiln_store_relaxed(&w->live, item->live);
    kiln_store_relaxed(&w->blocks, item->blocks);
    kiln_store_relaxed(&w->budget, item->budget);
}

void kiln_snapshot_end(kiln_memory_snapshot *s, uint64_t frame) {
    kiln_snapshot_buffer *b = s->writing;
    kiln_store_relaxed(&b->frame, frame);
    kiln_store_relaxed(&b->count, s->filling);
    kiln_store_relaxed(&b->omitted, s->omitted);
    kiln_seq_write_end(&b->seq, s->started);
    /* release: a reader that finds this buffer newest (acquire) finds it written. */
    kiln_store_release(&s->newest, (uint64_t)(b - s->buffers) + 1);
}

static void copy_item(kiln_snapshot_words *w, kiln_snapshot_item *out) {
    uint64_t name[KILN_SNAPSHOT_NAME_WORDS];
    for (size_t i = 0; i < KILN_SNAPSHOT_NAME_WORDS; i++) name[i] = kiln_load_relaxed(&w->name[i]);
    memcpy(out->name, name, sizeof out->name);
    out->name[sizeof out->name - 1] = '\0';
    out->kind = (kiln_snapshot_kind)kiln_load_relaxed(&w->kind);
    out->bytes = kiln_load_relaxed(&w->bytes);
    out->live = kiln_load_relaxed(&w->live);
    out->blocks = kiln_load_relaxed(&w->blocks);
    out->budget = kiln_load_relaxed(&w->budget);
}

bool kiln_snapshot_each(kiln_memory_snapshot *s, uint64_t *frame, uint64_t *omitted,
                        void (*fn)(void *user, const kiln_snapshot_item *item), void *user) {
    uint64_t newest = kiln_load_acquire(&s->newest);
    if (newest == 0) return false;
    kiln_snapshot_buffer *b = &s->buffers[newest - 1];
    uint64_t seq = kiln_seq_read_begin(&b->seq);
    if (seq & 1) return false;
    *frame = kiln_load_relaxed(&b->frame);
    *omitted = kiln_load_relaxed(&b->omitted);
    uint64_t count = kiln_load_relaxed(&b->count);
    if (!kiln_seq_read_valid(&b->seq, seq) || count > KILN_SNAPSHOT_ITEMS) return false;
    for (uint64_t i = 0; i < count; i++) {
        kiln_snapshot_item item;
        copy_item(&b->items[i], &item);
        if (!kiln_seq_read_valid(&b->seq, seq)) return false;
        fn(user, &item);
    }
    return true;
}
