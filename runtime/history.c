/* runtime/history.c — the per-frame history: what the driver measures at frame begin
 * and end (time, frame bytes, jobs, allocations per context against
 * desc.frame_alloc_budget, live objects, reserved bytes), the ring of the last
 * KILN_HISTORY_FRAMES records (the protocol is in history.h), and kiln_history_read. */
#include "history.h"
#include "check.h"
#include "tags.h"

#include <string.h>

#include "../base/clock.h"
#include "../base/seqlock.h"

void kiln_history_frame_begin(kiln_runtime *rt) {
    rt->history.begin_ns = kiln_now_ns();
}

/* The high-water marks of ctx's frame memory this frame end has just reset: its own
 * frame arena's and its job arena of the frame's parity (the epoch just closed). */
static void add_context(kiln_frame_record *record, const kiln_ctx *ctx, unsigned parity) {
    kiln_arena *jobs = kiln_load_acquire(&((kiln_ctx *)ctx)->job_arenas[parity]);
    uint64_t bytes = kiln_load_relaxed(&ctx->frame_arena->peak_last_frame) +
                     (jobs ? kiln_load_relaxed(&jobs->peak_last_frame) : 0);
    record->frame_bytes += bytes;
    if (record->contexts == KILN_HISTORY_MAX_CONTEXTS) {
        record->contexts_omitted++;
        return;
    }
    record->ctx_ids[record->contexts] = ctx->id;
    record->ctx_frame_bytes[record->contexts++] = bytes;
}

/* ctx's frame allocations so far: its own frame arena's and its job arenas'. */
static uint64_t ctx_frame_allocs(kiln_ctx *ctx) {
    uint64_t allocs = kiln_load_relaxed(&ctx->frame_arena->allocs);
    for (int p = 0; p < 2; p++) {
        kiln_arena *jobs = kiln_load_acquire(&ctx->job_arenas[p]);
        if (jobs) allocs += kiln_load_relaxed(&jobs->allocs);
    }
    return allocs;
}

/* Every attached context's allocations so far, by job queue slot: its frame arena's
 * count and its caches' of every live pool and table (owner-written counters, relaxed
 * loads: the allocation paths pay nothing for them); and the objects live in those pools
 * and tables, from the same sums. A cache flushed or unbound since the last frame end
 * took its counts with it (desc.frame_alloc_budget says so). Under registry_lock. */
static void count_allocations(kiln_runtime *rt, uint64_t allocs[KILN_MAX_QUEUES],
                              kiln_frame_record *record) {
    for (kiln_ctx *ctx = rt->contexts; ctx; ctx = ctx->next)
        allocs[ctx->queue.slot] = ctx_frame_allocs(ctx);
    for (int i = 0; i < KILN_MAX_POOLS; i++) {
        kiln_pool *pool = rt->pools[i];
        if (!pool) continue;
        kiln_pool_tally all = { 0 };
        for (kiln_ctx *ctx = rt->contexts; ctx; ctx = ctx->next) {
            uint64_t before = all.allocs;
            kiln_pool_tally_cache(pool, &ctx->pool_caches[pool->index], &all);
            allocs[ctx->queue.slot] += all.allocs - before;
        }
        kiln_pool_stats stats;
        kiln_pool_stats_read(pool, &all, &stats);
        record->pool_live += stats.live;
        kiln_snapshot_item item = { .kind = KILN_SNAPSHOT_POOL, .live = stats.live,
                                    .bytes = stats.live * stats.slot_size,
                                    .blocks = stats.blocks_held };
        memcpy(item.name, stats.name, sizeof item.name);
        kiln_snapshot_add(&rt->memory_snapshot, &item);
    }
    for (int i = 0; i < KILN_MAX_HANDLE_TABLES; i++) {
        kiln_handles *table = rt->handle_tables[i];
        kiln_handle_tally all;
        if (!table || !kiln_handle_tally_begin(&table->core, &all)) continue;
        for (kiln_ctx *ctx = rt->contexts; ctx; ctx = ctx->next) {
            uint64_t before = all.allocs;
            kiln_handle_tally_cache(&table->core, &ctx->handle_caches[table->core.index], &all);
            allocs[ctx->queue.slot] += all.allocs - before;
        }
        uint64_t live = all.allocs > all.frees ? all.allocs - all.frees : 0;
        record->handles_live += live;
        kiln_snapshot_item item = { .kind = KILN_SNAPSHOT_HANDLES, .live = live,
                                    .bytes = live * table->core.item_size };
        memcpy(item.name, table->core.name, sizeof item.name);
        kiln_snapshot_add(&rt->memory_snapshot, &item);
    }
}

/* A tag with live bytes among the record's top tags, most first (ties: the older tag,
 * which comes first). */
static void rank_tag(kiln_frame_record *record, uint32_t id, uint64_t live) {
    uint32_t at = record->tags;
    while (at > 0 && record->tag_live_bytes[at - 1] < live) at--;
    if (at == KILN_HISTORY_TOP_TAGS) {
        record->tags_omitted++;
        return;
    }
    if (record->tags == KILN_HISTORY_TOP_TAGS) record->tags_omitted++;   /* the last drops */
    else record->tags++;
    for (uint32_t j = record->tags - 1; j > at; j--) {
        record->tag_ids[j] = record->tag_ids[j - 1];
        record->tag_live_bytes[j] = record->tag_live_bytes[j - 1];
    }
    record->tag_ids[at] = id;
    record->tag_live_bytes[at] = live;
}

/* Each tag's live bytes, read once (exact at that instant): into the memory snapshot,
 * and the largest into the record. Under registry_lock, which orders the tags' creation. */
static void note_tags(kiln_runtime *rt, kiln_frame_record *record) {
    kiln_heap_tag_sums_read(rt, rt->tag_count);   /* the credit contexts hold */
    const kiln_heap_tag_sums *sums = &rt->tag_sums;
    for (uint32_t i = 0; i < rt->tag_count; i++) {
        kiln_tag_account *a = kiln_load_relaxed(&rt->tags[i]);
        uint64_t live = kiln_heap_tag_used(a, sums);
        kiln_snapshot_item item = { .kind = KILN_SNAPSHOT_TAG, .bytes = live, .budget = a->budget };
        memcpy(item.name, a->name, sizeof item.name);
        kiln_snapshot_add(&rt->memory_snapshot, &item);
        if (live != 0) rank_tag(record, a->id, live);
    }
}

/* The arenas' part of the memory snapshot (runtime/memory_snapshot.h): the frame arenas
 * as one (the peaks of the frame just reset), then each arena of the program's. Under
 * registry_lock. */
static void snapshot_arenas(kiln_runtime *rt, const kiln_frame_record *record) {
    kiln_snapshot_item frame = { .kind = KILN_SNAPSHOT_FRAME_ARENAS, .name = "frame arenas",
                                 .bytes = record->frame_bytes };
    for (kiln_ctx *ctx = rt->contexts; ctx; ctx = ctx->next) {   /* owner-written, relaxed */
        frame.blocks += kiln_load_relaxed(&ctx->frame_arena->blocks_held);
        for (int p = 0; p < 2; p++) {
            kiln_arena *jobs = kiln_load_acquire(&ctx->job_arenas[p]);
            if (jobs) frame.blocks += kiln_load_relaxed(&jobs->blocks_held);
        }
    }
    kiln_snapshot_add(&rt->memory_snapshot, &frame);
    for (kiln_arena_record *a = rt->arenas; a; a = a->next) {
        if (a->frame_owner) continue;
        kiln_arena_stats stats;
        if (!kiln_arena_stats_read(&a->arena, &stats)) continue;
        kiln_snapshot_item item = { .kind = KILN_SNAPSHOT_ARENA, .bytes = stats.bytes_in_use,
                                    .blocks = stats.blocks_held };
        memcpy(item.name, stats.name, sizeof item.name);
        kiln_snapshot_add(&rt->memory_snapshot, &item);
    }
}

/* A context over desc.frame_alloc_budget this frame, to be warned about once the
 * registry is unlocked. */
typedef struct alloc_overrun { uint32_t id; uint64_t allocs; } alloc_overrun;

/* This frame's allocations of a context whose total so far is now, after the last frame
 * end saw seen->allocs: a total that went down (a cache unbound) counts from zero. */
static uint64_t frame_allocs(kiln_history_seen *seen, uint64_t now) {
    uint64_t made = now >= seen->allocs ? now - seen->allocs : now;
    seen->allocs = now;
    return made;
}

/* Its share of the record's allocs, for a context listed in ctx_ids. */
static void list_allocs(kiln_frame_record *record, uint32_t id, uint64_t made) {
    for (uint32_t i = 0; i < record->contexts; i++)
        if (record->ctx_ids[i] == id) record->ctx_allocs[i] = made;
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
    /* The driver is the epoch's only writer: the frame just closed is the one before. */
    unsigned parity = (unsigned)((kiln_load_relaxed(&rt->handle_epoch) - 1) & 1);
    add_context(record, driver, parity);
    for (uint32_t i = 0; i < rt->workers_started; i++) add_context(record, rt->workers[i], parity);
    /* Jobs run and stolen, and allocations made: the owners' own counters (relaxed
     * loads), less what the last frame end saw, so the job and allocation paths pay
     * nothing for them and every job lands in exactly one record. */
    uint64_t budget = rt->desc.frame_alloc_budget;
    uint64_t allocs[KILN_MAX_QUEUES];
    alloc_overrun over[KILN_MAX_QUEUES];
    size_t overruns = 0;
    pthread_mutex_lock(&rt->registry_lock);
    kiln_snapshot_begin(&rt->memory_snapshot);
    snapshot_arenas(rt, record);
    count_allocations(rt, allocs, record);
    note_tags(rt, record);
    kiln_snapshot_end(&rt->memory_snapshot, record->frame);
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
        uint64_t made = frame_allocs(seen, allocs[ctx->queue.slot]);
        record->allocs += made;
        list_allocs(record, ctx->id, made);
        if (budget != 0 && made > budget)
            over[overruns++] = (alloc_overrun){ ctx->id, made };
    }
    pthread_mutex_unlock(&rt->registry_lock);
    record->reserved_bytes = kiln_load_relaxed(&rt->blocks.reserved_bytes);
    append(h, record);
    for (size_t i = 0; i < overruns; i++)
        kiln_log(&rt->log, KILN_LOGITEM_FRAME_ALLOC_BUDGET_EXCEEDED,
                 "frame %llu: context %u made %llu allocations (frame, pool and handle), more "
                 "than frame_alloc_budget %llu", (unsigned long long)record->frame, over[i].id,
                 (unsigned long long)over[i].allocs, (unsigned long long)budget);
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

bool kiln_history_record(kiln_runtime *rt, uint64_t index, kiln_frame_record *out) {
    return index < kiln_load_acquire(&rt->history.written) && read_record(&rt->history, index, out);
}

uint64_t kiln_history_written(kiln_runtime *rt) {
    return kiln_load_acquire(&rt->history.written);
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
