/* examples/demo/run.c — one play of the game: a kiln runtime (the jobs run on it in both
 * runs), a memory layer, the world, the frame loop, and the figures read afterwards:
 * kiln's history frame by frame (memory by tag included), its figures after the last
 * frame (tags, where its memory is) and after the teardown (what stayed live). */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime */
#include "run.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "systems.h"

typedef struct run_log {
    bool             quiet;
    _Atomic uint64_t warnings, errors;
} run_log;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Every demo tag is in every record's top tags, so a tag missing from one had no live
 * bytes at that frame end. */
_Static_assert(DEMO_TAGS <= KILN_HISTORY_TOP_TAGS, "the history lists every demo tag");

/* kiln's log callback: may be called from any thread at once. Warnings are counted and
 * shown (unless --quiet); errors are always shown and fail the run's check. */
static void on_log(void *user, kiln_log_level level, const char *message) {
    run_log *log = user;
    if (level >= KILN_LOG_ERROR) atomic_fetch_add(&log->errors, 1);
    else if (level == KILN_LOG_WARN) atomic_fetch_add(&log->warnings, 1);
    if (level >= KILN_LOG_ERROR || (level == KILN_LOG_WARN && !log->quiet))
        fprintf(stderr, "kiln-demo: kiln %s: %s\n", level >= KILN_LOG_ERROR ? "error" : "warning",
                message);
}

/* Tracing is two calls: switch it on before the frames, write the file after them. */
static void trace_start(kiln_runtime *rt) {
    kiln_trace_enable(rt, true);
}

static bool trace_finish(kiln_runtime *rt, const char *path, kiln_trace_stats *stats) {
    kiln_trace_enable(rt, false);
    kiln_trace_stats_get(rt, stats);
    return kiln_trace_write(rt, path);
}

/* The frame just closed, as kiln recorded it: its jobs, steals, frame memory,
 * allocations, the objects live in kiln's pools and handle tables, and the tags with the
 * most live bytes (the demo's, by id: the tags of the malloc run's runtime are none). */
static void read_history(kiln_runtime *rt, uint64_t number, demo_run *out, uint32_t f) {
    kiln_frame_record record;
    if (kiln_history_read(rt, &record, 1) != 1 || record.frame != number) return;
    out->history_frames++;
    out->history_jobs += record.jobs_run;
    out->history_steals += record.steals;
    out->frame_kib[f] = (double)record.frame_bytes / 1024.0;
    out->history_allocs += record.allocs;
    out->pool_live[f] = (double)record.pool_live;
    out->handles_live[f] = (double)record.handles_live;
    out->last_pool_live = record.pool_live;
    out->last_handles_live = record.handles_live;
    out->last_reserved_bytes = record.reserved_bytes;
    out->history_tags_omitted += record.tags_omitted;
    for (int tag = 0; tag < DEMO_TAGS; tag++) {
        uint64_t live = 0;
        for (uint32_t i = 0; i < record.tags; i++)
            if (out->has_tags && record.tag_ids[i] == out->tag_ids[tag].id) live = record.tag_live_bytes[i];
        out->tag_mib[tag][f] = (double)live / (1024.0 * 1024.0);
        out->last_tag_bytes[tag] = live;
    }
    for (uint32_t i = 0; i < record.contexts; i++) {
        uint32_t id = record.ctx_ids[i];
        if (id <= RUN_MAX_CONTEXTS && record.ctx_frame_bytes[i] > out->ctx_peak_bytes[id])
            out->ctx_peak_bytes[id] = record.ctx_frame_bytes[i];
    }
}

/* The demo's tags by name, as a debug overlay finds them; only the kiln run made them. */
static void find_tags(kiln_runtime *rt, demo_run *out) {
    out->has_tags = true;
    for (int tag = 0; tag < DEMO_TAGS; tag++) {
        out->tag_ids[tag] = kiln_tag_find(rt, demo_tag_name(tag));
        out->has_tags = out->has_tags && out->tag_ids[tag].id != 0;
    }
}

/* Each demo tag's live bytes, summed. */
static uint64_t tags_live(kiln_runtime *rt, const demo_run *out) {
    uint64_t sum = 0;
    for (int tag = 0; out->has_tags && tag < DEMO_TAGS; tag++) {
        kiln_tag_stats stats;
        if (kiln_tag_stats_get(rt, out->tag_ids[tag], &stats)) sum += stats.live_bytes;
    }
    return sum;
}

/* After the last frame, its jobs done: every thread that allocates is quiet, so the
 * tags' live bytes are exact and kiln's memory adds up (kiln_stats_memory). */
static void read_stats(kiln_runtime *rt, demo_run *out) {
    kiln_stats_memory(rt, &out->memory_split);
    for (int tag = 0; out->has_tags && tag < DEMO_TAGS; tag++)
        kiln_tag_stats_get(rt, out->tag_ids[tag], &out->tags[tag]);
    kiln_stats_get(rt, &out->stats);
    size_t n = kiln_stats_contexts(rt, out->contexts, RUN_MAX_CONTEXTS);
    out->context_count = (uint32_t)(n < RUN_MAX_CONTEXTS ? n : RUN_MAX_CONTEXTS);
    for (uint32_t i = 0; i < out->context_count; i++) {
        out->jobs_submitted += out->contexts[i].jobs_submitted;
        out->jobs_run += out->contexts[i].jobs_run;
        out->jobs_stolen += out->contexts[i].jobs_stolen;
    }
}

static void play(const demo_options *o, kiln_runtime *rt, kiln_ctx *ctx, world *w, demo_run *out) {
    for (uint32_t f = 0; f < o->frames; f++) {
        uint64_t start = now_ns(), barrages = w->totals.barrages;
        uint64_t number = kiln_frame_begin(ctx);
        world_begin_frame(w, number);
        systems_figures figures = systems_frame(w, ctx);
        kiln_frame_end(ctx);   /* every job is done; all frame memory comes back at once */
        out->frame_ms[f] = (double)(now_ns() - start) / 1e6;
        out->barrage[f] = w->totals.barrages != barrages;
        out->scratch_failures += figures.scratch_failures;
        out->drawn_sparks += figures.drawn_sparks;
        out->frames++;
        read_history(rt, number, out, f);
    }
}

bool run_play(const demo_options *o, bool use_kiln, const char *trace_path, demo_run *out) {
    uint64_t start = now_ns();
    *out = (demo_run){ .name = use_kiln ? "kiln" : "malloc",
                       .frame_ms = calloc(o->frames, sizeof *out->frame_ms),
                       .frame_kib = calloc(o->frames, sizeof *out->frame_kib),
                       .pool_live = calloc(o->frames, sizeof *out->pool_live),
                       .handles_live = calloc(o->frames, sizeof *out->handles_live),
                       .barrage = calloc(o->frames, sizeof *out->barrage) };
    run_log log = { .quiet = o->quiet };
    /* The same runtime in both runs: the jobs are kiln's either way. */
    /* frame_reserve: each context's frame arena takes (and touches) the frame memory a
     * frame of this battle uses when the context is made, at load, not in frame one. */
    kiln_runtime *rt = kiln_create(&(kiln_desc){ .worker_count = o->workers,
                                                 .frame_budget = 8u << 20,
                                                 .frame_reserve = 2u << 20,
                                                 .log = on_log, .log_user = &log });
    kiln_ctx *ctx = rt ? kiln_attach(rt) : NULL;
    uint32_t capacity = o->entities * 2 + 1024;   /* the living + a frame's respawns */
    demo_memory memory;
    world w = { 0 };
    bool ok = ctx && out->frame_ms && out->frame_kib && out->pool_live && out->handles_live &&
              out->barrage;
    for (int tag = 0; tag < DEMO_TAGS; tag++) {
        out->tag_mib[tag] = calloc(o->frames, sizeof *out->tag_mib[tag]);
        ok = ok && out->tag_mib[tag];
    }
    ok = ok && (use_kiln ? demo_memory_kiln(&memory, rt, capacity) : demo_memory_malloc(&memory, capacity));
    bool have_memory = ok;
    if (ok && use_kiln) find_tags(rt, out);
    ok = ok && world_init(&w, &memory, ctx, o->entities, o->seed);
    if (ok) {
        out->traced = trace_path != NULL;
        if (out->traced) trace_start(rt);
        play(o, rt, ctx, &w, out);
        if (out->traced) out->trace_written = trace_finish(rt, trace_path, &out->trace);
        read_stats(rt, out);
        memory.stats(memory.self, &out->memory);
        out->totals = w.totals;
        out->entities = w.entity_count;
        out->projectiles = w.projectile_count;
        out->particles = w.particle_count;
        out->checksum = world_checksum(&w);
    } else {
        fprintf(stderr, "kiln-demo: the %s run could not be set up (out of memory?)\n", out->name);
    }
    if (have_memory) {
        world_destroy(&w, ctx);
        out->totals_after = w.totals;
        memory.stats(memory.self, &out->memory_after);
        memory.destroy(memory.self, ctx);
        out->tags_live_after = tags_live(rt, out);
    }
    kiln_detach(ctx);
    kiln_destroy(rt);
    out->log_warnings = atomic_load(&log.warnings);
    out->log_errors = atomic_load(&log.errors);
    out->wall_s = (double)(now_ns() - start) / 1e9;
    return ok;
}

void run_free(demo_run *run) {
    free(run->frame_ms);
    free(run->frame_kib);
    free(run->pool_live);
    free(run->handles_live);
    free(run->barrage);
    for (int tag = 0; tag < DEMO_TAGS; tag++) free(run->tag_mib[tag]);
    *run = (demo_run){ 0 };
}
