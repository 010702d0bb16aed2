/* runtime/history.c — the per-frame history: what the driver measures at frame begin
 * and end, the ring of the last KILN_HISTORY_FRAMES records (the protocol is in
 * history.h), and kiln_history_read. */
#include "history.h"
#include "check.h"

#include <string.h>

#include "../base/clock.h"
#include "../base/seqlock.h"

void kiln_history_frame_begin(kiln_runtime *rt) {
    rt->history.begin_ns = kiln_now_ns();
}

/* The high-water mark of a frame arena this frame end has just reset. */
static void add_context(kiln_frame_record *record, const kiln_ctx *ctx) {
    uint64_t bytes = kiln_load_relaxed(&ctx->frame_arena->peak_last_frame);
    record->frame_bytes += bytes;
    if (record->contexts == KILN_HISTORY_MAX_CONTEXTS) {
        record->contexts_omitted++;
        return;
    }
    record->ctx_ids[record->contexts] = ctx->id;
    record->ctx_frame_bytes[record->contexts++] = bytes;
}

static void append(kiln_history *h, const kiln_frame_record *record) {
    uint64_t words[KILN_HISTORY_WORDS];
    memcpy(words, record, sizeof words);
    uint64_t n = kiln_load_relaxed(&h->written);   /* only drivers write it, one at a time */
    kiln_history_slot *slot = &h->slots[n % KILN_HISTORY_FRAMES];
    uint64_t seq = kiln_seq_write_begin(&slot->seq);
    for (size_t i = 0; i < KILN_HISTORY_WORDS; i++) kiln_store_relaxed(&slot->words[i], words[i]);
    kiln_seq_write_end(&slot->seq, seq);
    kiln_store_release(&h->written, n + 1);
}

void kiln_history_frame_end(kiln_runtime *rt, kiln_ctx *driver, kiln_frame_record *record) {
    kiln_history *h = &rt->history;
    uint64_t end_ns = kiln_now_ns();
    *record = (kiln_frame_record){
        .frame = kiln_load_relaxed(&rt->frame),
        .begin_ns = h->begin_ns,
        .duration_ns = end_ns - h->begin_ns,
    };
    add_context(record, driver);
    for (uint32_t i = 0; i < rt->workers_started; i++) add_context(record, rt->workers[i]);
    /* Jobs run and stolen: the queues' own owner-written counters (relaxed loads), less
     * what the last frame end saw, so the job path pays nothing for them and every job
     * lands in exactly one record. */
    pthread_mutex_lock(&rt->registry_lock);
    for (kiln_ctx *ctx = rt->contexts; ctx; ctx = ctx->next) {
        kiln_history_seen *seen = &h->seen[ctx->queue.slot];
        if (seen->id != ctx->id)   /* attached since: its counts started at zero */
            *seen = (kiln_history_seen){ .id = ctx->id };
        uint64_t run = kiln_load_relaxed(&ctx->queue.jobs_run);
        uint64_t stolen = kiln_load_relaxed(&ctx->queue.jobs_stolen);
        record->jobs_run += run - seen->jobs_run;
        record->steals += stolen - seen->jobs_stolen;
        seen->jobs_run = run;
        seen->jobs_stolen = stolen;
    }
    pthread_mutex_unlock(&rt->registry_lock);
    append(h, record);
}

/* Copies record number index from its slot; false when the driver has overwritten it
 * (or is overwriting it) since the reader chose it. */
static bool read_record(kiln_history *h, uint64_t index, kiln_frame_record *out) {
    kiln_history_slot *slot = &h->slots[index % KILN_HISTORY_FRAMES];
    uint64_t expected = 2 * (index / KILN_HISTORY_FRAMES + 1);   /* after its own write */
    uint64_t words[KILN_HISTORY_WORDS];
    if (kiln_seq_read_begin(&slot->seq) != expected) return false;
    for (size_t i = 0; i < KILN_HISTORY_WORDS; i++) words[i] = kiln_load_relaxed(&slot->words[i]);
    if (!kiln_seq_read_valid(&slot->seq, expected)) return false;
    memcpy(out, words, sizeof words);
    return true;
}

size_t kiln_history_read(kiln_runtime *rt, kiln_frame_record *out, size_t cap) {
    if (!kiln_stats_list_args_ok(rt, out, cap, "kiln_history_read")) return 0;
    kiln_history *h = &rt->history;
    for (;;) {   /* starts over only when the driver laps this reader */
        uint64_t written = kiln_load_acquire(&h->written);
        uint64_t take = written < KILN_HISTORY_FRAMES ? written : KILN_HISTORY_FRAMES;
        if (take > cap) take = cap;
        uint64_t first = written - take;
        size_t got = 0;
        while (got < take && read_record(h, first + got, &out[got])) got++;
        if (got == take) return (size_t)take;
    }
}
