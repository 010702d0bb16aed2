/* examples/demo/report.c — the closing table (and under it the kiln run's memory by tag
 * and where kiln's memory is) and the consistency checks. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

#define BUDGET_60HZ_MS 16.667

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

frame_times report_frame_times(const demo_run *run) {
    frame_times t = { 0 };
    size_t n = run->frames;
    double *sorted = n ? malloc(n * sizeof *sorted) : NULL;
    if (!sorted) return t;
    memcpy(sorted, run->frame_ms, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, compare_double);
    t = (frame_times){ .median = sorted[n / 2], .p99 = sorted[(size_t)((double)(n - 1) * 0.99)],
                       .max = sorted[n - 1], .first = run->frame_ms[0], .worst_frame = 1 };
    for (size_t i = 0; i < n; i++) {
        t.over_budget += sorted[i] > BUDGET_60HZ_MS;
        if (run->frame_ms[i] > run->frame_ms[t.worst_frame - 1]) t.worst_frame = (uint32_t)i + 1;
    }
    free(sorted);
    return t;
}

/* ---------- the table ---------- */

typedef struct column {
    const demo_run *run;
    frame_times     times;
    double          peak_kib;      /* the frame with the most frame memory */
} column;

static double median(const column *c) { return c->times.median; }
static double p99(const column *c) { return c->times.p99; }
static double max(const column *c) { return c->times.max; }
static double first(const column *c) { return c->times.first; }

#define CELL(name, ...) \
    static void name(const column *c, char *text, size_t size) { \
        const demo_run *r = c->run; (void)r; snprintf(text, size, __VA_ARGS__); }
CELL(cell_median, "%.3f", c->times.median)
CELL(cell_p99, "%.3f", c->times.p99)
CELL(cell_max, "%.3f", c->times.max)
CELL(cell_first, "%.3f", c->times.first)
CELL(cell_worst_at, "%u", c->times.worst_frame)
CELL(cell_spread, "%.1fx", c->times.median > 0 ? c->times.max / c->times.median : 0.0)
CELL(cell_over, "%.0f", c->times.over_budget)
CELL(cell_jobs, "%.1f", r->frames ? (double)r->history_jobs / r->frames : 0.0)
CELL(cell_steals, "%.1f", r->frames ? (double)r->history_steals / r->frames : 0.0)
CELL(cell_frame_kib, "%.0f", c->peak_kib)
CELL(cell_projectiles, "%u / %llu", r->projectiles, (unsigned long long)(r->memory.has_object_stats
     ? r->memory.object_peak[DEMO_PROJECTILE] : r->totals.object_peak[DEMO_PROJECTILE]))
CELL(cell_particles, "%u / %llu", r->particles, (unsigned long long)(r->memory.has_object_stats
     ? r->memory.object_peak[DEMO_PARTICLE] : r->totals.object_peak[DEMO_PARTICLE]))
CELL(cell_entities, "%llu", (unsigned long long)r->memory.entity_live)
CELL(cell_stale, "%llu", (unsigned long long)r->memory.stale_lookups)
CELL(cell_kills, "%llu / %llu", (unsigned long long)r->totals.kills,
     (unsigned long long)r->totals.barrages)
CELL(cell_blocks, "%llu", (unsigned long long)r->stats.blocks.blocks_reserved)
CELL(cell_reserved, "%.1f", (double)r->stats.blocks.reserved_bytes / (1024.0 * 1024.0))
CELL(cell_allocs, "%.0f", r->frames ? (double)r->history_allocs / r->frames : 0.0)
CELL(cell_live, "%llu", (unsigned long long)(r->last_pool_live + r->last_handles_live))
CELL(cell_data, "%llu", (unsigned long long)(r->totals.data_allocs - r->totals.data_frees))
CELL(cell_wall, "%.2f", r->wall_s)

/* One row per context of the first run: its most frame memory in one frame. */
static void print_contexts(FILE *out, const column *cols, size_t n) {
    const demo_run *first = cols[0].run;
    for (uint32_t i = first->context_count; i-- > 0;) {   /* listed newest first */
        const kiln_ctx_stats *ctx = &first->contexts[i];
        if (ctx->id > RUN_MAX_CONTEXTS) continue;
        char label[64];
        snprintf(label, sizeof label, "  ctx %u (%s)", ctx->id, ctx->is_worker ? "worker" : "main");
        fprintf(out, "  %-38s", label);
        for (size_t k = 0; k < n; k++)
            fprintf(out, " %16.0f", (double)cols[k].run->ctx_peak_bytes[ctx->id] / 1024.0);
        fputc('\n', out);
    }
}

/* The table's rows: a label, how to print one run's cell, and for the frame times the
 * figure whose malloc/kiln ratio goes in the last column. */
typedef struct row {
    const char *label;
    void      (*cell)(const column *, char *, size_t);
    double    (*ratio_of)(const column *);
} row;

static const row rows[] = {
    { "frame time median (ms)", cell_median, median },
    { "frame time p99 (ms)", cell_p99, p99 },
    { "first frame (ms)", cell_first, first },
    { "worst frame (ms), the first included", cell_max, max },
    { "worst frame's number", cell_worst_at, NULL },
    { "worst / median", cell_spread, NULL },
    { "frames over 16.7 ms (60 Hz)", cell_over, NULL },
    { "jobs per frame", cell_jobs, NULL },
    { "steals per frame", cell_steals, NULL },
    { "frame memory high-water (KiB)", cell_frame_kib, NULL },
    { "kiln allocations per frame", cell_allocs, NULL },
    { "kiln objects live, last frame", cell_live, NULL },
    { NULL, NULL, NULL },   /* here: one row per context */
    { "projectiles live / peak", cell_projectiles, NULL },
    { "particles live / peak", cell_particles, NULL },
    { "entities live", cell_entities, NULL },
    { "stale lookups (dead targets)", cell_stale, NULL },
    { "kills / barrages", cell_kills, NULL },
    { "persistent data allocations live", cell_data, NULL },
    { "blocks reserved", cell_blocks, NULL },
    { "reserved from the OS by kiln (MiB)", cell_reserved, NULL },
    { "wall time of the run (s)", cell_wall, NULL },
};

static void print_rows(FILE *out, const column *cols, size_t n) {
    for (const row *r = rows; r < rows + sizeof rows / sizeof *rows; r++) {
        if (!r->label) {
            print_contexts(out, cols, n);
            continue;
        }
        fprintf(out, "  %-38s", r->label);
        for (size_t i = 0; i < n; i++) {
            char text[40];
            r->cell(&cols[i], text, sizeof text);
            fprintf(out, " %16s", text);
        }
        /* malloc / kiln: the kiln run is the first column, the malloc run the second */
        if (r->ratio_of && n == 2 && r->ratio_of(&cols[0]) > 0)
            fprintf(out, " %10.2fx", r->ratio_of(&cols[1]) / r->ratio_of(&cols[0]));
        fputc('\n', out);
    }
}

static double kib(uint64_t bytes) { return (double)bytes / 1024.0; }

/* The kiln run's tags at its last frame end (exact: its threads were quiet): what each
 * subsystem holds, the most it held, its budget and whether it was passed; then where
 * all of kiln's memory is, in parts that add up to what it reserved from the OS. */
static void print_tags(FILE *out, const demo_run *r) {
    fprintf(out, "\n  %-38s %10s %10s %10s  %s\n", "memory by tag (kiln, last frame end)",
            "live KiB", "peak KiB", "budget KiB", "budget");
    for (int tag = 0; tag < DEMO_TAGS; tag++) {
        const kiln_tag_stats *t = &r->tags[tag];
        char budget[16] = "none", verdict[48] = "";
        if (t->budget) {
            snprintf(budget, sizeof budget, "%.0f", kib(t->budget));
            if (t->budget_warnings)
                snprintf(verdict, sizeof verdict, "reached (%llu warning%s)",
                         (unsigned long long)t->budget_warnings, t->budget_warnings == 1 ? "" : "s");
            else
                snprintf(verdict, sizeof verdict, "not reached");
        }
        fprintf(out, "    %-36s %10.0f %10.0f %10s%s%s\n", t->name, kib(t->live_bytes),
                kib(t->peak_bytes), budget, *verdict ? "  " : "", verdict);
    }
    const kiln_memory_stats *m = &r->memory_split;
    uint64_t parts = m->tagged + m->untagged + m->frame + m->heap_free + m->heap_kept + m->free_blocks;
    fprintf(out, "  kiln's memory (KiB): %.0f reserved = %.0f tagged + %.0f untagged + %.0f frame\n"
                 "    + %.0f heap free + %.0f heap kept + %.0f free blocks: %s\n",
            kib(m->reserved), kib(m->tagged), kib(m->untagged), kib(m->frame), kib(m->heap_free),
            kib(m->heap_kept), kib(m->free_blocks), parts == m->reserved ? "adds up" : "DOES NOT ADD UP");
}

void report_table(const demo_options *o, const demo_run *runs, size_t count, FILE *out) {
    column cols[2];
    size_t n = count < 2 ? count : 2;
    for (size_t i = 0; i < n; i++) {
        cols[i] = (column){ &runs[i], report_frame_times(&runs[i]), 0 };
        for (uint32_t f = 0; f < runs[i].frames; f++)
            if (runs[i].frame_kib[f] > cols[i].peak_kib) cols[i].peak_kib = runs[i].frame_kib[f];
    }
    uint32_t workers = runs[0].stats.worker_count;
    fprintf(out, "\nkiln-demo: %u frames, %u entities, %u worker thread%s + the main thread, "
                 "seed %llu\n\n", o->frames, o->entities, workers, workers == 1 ? "" : "s",
            (unsigned long long)o->seed);
    fprintf(out, "  %-38s", "");
    for (size_t i = 0; i < n; i++) fprintf(out, " %16s", runs[i].name);
    if (n == 2) fprintf(out, " %11s", "malloc/kiln");
    fputc('\n', out);
    print_rows(out, cols, n);
    for (size_t i = 0; i < n; i++)
        if (runs[i].has_tags) print_tags(out, &runs[i]);
    if (n == 2 && cols[0].times.median > 0)   /* kiln first, malloc second */
        fprintf(out, "\n  goal: kiln's worst frame at most 1.5x its median (%.2fx now) and below\n"
                     "  malloc's worst (%.3f ms against %.3f ms): %s\n",
                cols[0].times.max / cols[0].times.median, cols[0].times.max, cols[1].times.max,
                cols[0].times.max <= 1.5 * cols[0].times.median && cols[0].times.max < cols[1].times.max
                    ? "met" : "not met");
    if (o->quiet) return;
    fprintf(out, "\n  Frame time is kiln_frame_begin to the end of kiln_frame_end; the worst frame is\n"
                 "  over the whole run, the first frame included. Allocations per frame are kiln's\n"
                 "  (frame, pool and handle; the malloc run makes none from kiln); objects live are\n"
                 "  those in kiln's pools and handle tables at the last frame end. Frame memory is\n"
                 "  the sum over threads of each one's high-water in one frame; the malloc run takes\n"
                 "  its scratch from malloc, so it shows next to none. kiln's pool peak counts the\n"
                 "  objects cached in threads' magazines too. Blocks are %zu KiB each.\n"
                 "  Persistent data: the world's lists and the entities' AI memory, on kiln's heap\n"
                 "  (malloc/realloc in the malloc run). A tag holds its pool's blocks or table's\n"
                 "  slots and its heap data; its peak counts the heap credit threads held too. The\n"
                 "  AI's budget is tight on purpose: passing it is a warning, and the game goes on.\n",
            runs[0].stats.blocks.block_size >> 10);
}

/* ---------- the checks ---------- */

typedef struct checker {
    FILE *out;
    bool  ok;
    char  failed[512];
} checker;

static void expect(checker *c, bool holds, const char *what) {
    if (holds) return;
    size_t len = strlen(c->failed);
    snprintf(c->failed + len, sizeof c->failed - len, "%s%s", c->ok ? "" : ",", what);
    c->ok = false;
}

static void field(checker *c, const char *key, uint64_t value) {
    fprintf(c->out, " %s=%llu", key, (unsigned long long)value);
}

/* " pool_particle_allocs=N": prefix, kind and figure make the key. */
static void kind_field(checker *c, const char *prefix, const char *kind, const char *what,
                       uint64_t value) {
    fprintf(c->out, " %s%s_%s=%llu", prefix, kind, what, (unsigned long long)value);
}

static void check_objects(checker *c, const demo_run *r, demo_kind kind, uint32_t live) {
    static const char *const names[DEMO_KINDS] = { "projectile", "particle" };
    const char *name = names[kind];
    const world_totals *t = &r->totals;
    const demo_memory_stats *pool = &r->memory;
    char what[48];
    kind_field(c, "", name, "allocs", t->object_allocs[kind]);
    kind_field(c, "", name, "frees", t->object_frees[kind]);
    kind_field(c, "", name, "live", live);
    snprintf(what, sizeof what, "%s_allocs_minus_frees", name);
    expect(c, t->object_allocs[kind] - t->object_frees[kind] == live, what);
    if (!pool->has_object_stats) return;   /* malloc keeps no count of its own */
    kind_field(c, "pool_", name, "allocs", pool->object_allocs[kind]);
    kind_field(c, "pool_", name, "frees", pool->object_frees[kind]);
    kind_field(c, "pool_", name, "live", pool->object_live[kind]);
    snprintf(what, sizeof what, "pool_%s_counts", name);
    expect(c, pool->object_allocs[kind] == t->object_allocs[kind] &&
              pool->object_frees[kind] == t->object_frees[kind] && pool->object_live[kind] == live,
           what);
    snprintf(what, sizeof what, "pool_%s_leaked", name);
    expect(c, r->memory_after.object_live[kind] == 0, what);
}

/* The persistent data: the game's count of its allocations against the heap's (kiln run),
 * none refused, none left after the teardown; kiln's memory in parts that add up (both
 * runs: the malloc run's runtime holds frame memory). */
static void check_data(checker *c, const demo_run *r) {
    const world_totals *t = &r->totals;
    uint64_t live = t->data_allocs - t->data_frees;
    field(c, "data_allocs", t->data_allocs), field(c, "data_frees", t->data_frees);
    field(c, "data_failures", t->data_failures);
    expect(c, t->data_failures == 0, "data_failures");
    expect(c, r->totals_after.data_allocs == r->totals_after.data_frees, "data_leaked");
    if (r->memory.has_heap_stats) {
        field(c, "heap_live", r->memory.heap_live);
        field(c, "heap_live_after", r->memory_after.heap_live);
        expect(c, r->memory.heap_live == live, "heap_live");
        expect(c, r->memory_after.heap_live == 0, "heap_leaked");
    }
    const kiln_memory_stats *m = &r->memory_split;
    uint64_t parts = m->tagged + m->untagged + m->frame + m->heap_free + m->heap_kept + m->free_blocks;
    field(c, "memory_reserved", m->reserved), field(c, "memory_parts", parts);
    expect(c, m->reserved > 0 && parts == m->reserved, "memory_sum");
}

/* The demo's tags (kiln run): each holds memory; the AI's budget warned exactly when its
 * peak passed it; the history's last record has the tags' live bytes; after the teardown
 * none holds any. */
static void check_tags(checker *c, const demo_run *r) {
    static const char *const keys[DEMO_TAGS] = { "entities", "projectiles", "particles", "ai" };
    uint64_t history = 0, live = 0;
    for (int tag = 0; tag < DEMO_TAGS; tag++) history += r->last_tag_bytes[tag];
    field(c, "history_tag_bytes", history);
    field(c, "history_tags_omitted", r->history_tags_omitted);
    expect(c, r->history_tags_omitted == 0, "history_tags_omitted");
    if (!r->has_tags) {
        expect(c, history == 0, "history_tag_bytes");
        return;
    }
    bool charged = true;
    for (int tag = 0; tag < DEMO_TAGS; tag++) {
        kind_field(c, "tag_", keys[tag], "live", r->tags[tag].live_bytes);
        live += r->tags[tag].live_bytes;
        charged = charged && (tag == DEMO_TAG_AI || r->tags[tag].live_bytes > 0);
    }
    expect(c, charged, "tags_charged");
    const kiln_tag_stats *ai = &r->tags[DEMO_TAG_AI];
    field(c, "tag_ai_peak", ai->peak_bytes), field(c, "tag_ai_budget", ai->budget);
    field(c, "tag_ai_budget_warnings", ai->budget_warnings);
    field(c, "tag_ai_budget_reached", ai->budget_warnings > 0);
    expect(c, ai->budget > 0 && (ai->peak_bytes > ai->budget) == (ai->budget_warnings > 0),
           "tag_ai_budget");
    expect(c, history == live, "history_tag_bytes");
    field(c, "tags_live_after", r->tags_live_after);
    expect(c, r->tags_live_after == 0, "tags_leaked");
}

bool report_check(const demo_options *o, const demo_run *r, FILE *out) {
    checker c = { out, true, "" };
    const world_totals *t = &r->totals;
    fprintf(out, "demo-check run=%s", r->name);
    field(&c, "frames", r->frames), field(&c, "frames_expected", o->frames);
    field(&c, "history_frames", r->history_frames);
    expect(&c, r->frames == o->frames, "frames");
    expect(&c, r->history_frames == r->frames, "history_frames");

    /* Frame times: exact figures of one run, judged against each other only. */
    frame_times times = report_frame_times(r);
    field(&c, "first_frame_us", (uint64_t)(times.first * 1000.0));
    field(&c, "median_frame_us", (uint64_t)(times.median * 1000.0));
    field(&c, "worst_frame_us", (uint64_t)(times.max * 1000.0));
    field(&c, "worst_frame", times.worst_frame);
    expect(&c, times.max >= times.first && times.max >= times.median, "worst_frame_us");
    expect(&c, times.worst_frame >= 1 && times.worst_frame <= r->frames, "worst_frame");

    field(&c, "jobs_submitted", r->jobs_submitted), field(&c, "jobs_run", r->jobs_run);
    field(&c, "history_jobs", r->history_jobs);
    expect(&c, r->jobs_submitted == r->jobs_run, "jobs_run");
    expect(&c, r->history_jobs == r->jobs_run, "history_jobs");

    /* Entities: the game's count of spawns and deaths against the table's own. */
    field(&c, "entities", r->entities);
    field(&c, "entity_allocs", t->entity_allocs), field(&c, "entity_frees", t->entity_frees);
    field(&c, "table_allocs", r->memory.entity_allocs), field(&c, "table_frees", r->memory.entity_frees);
    field(&c, "table_live", r->memory.entity_live);
    expect(&c, t->entity_allocs - t->entity_frees == r->entities, "entity_allocs_minus_frees");
    expect(&c, r->memory.entity_allocs == t->entity_allocs && r->memory.entity_frees == t->entity_frees,
           "table_counts");
    expect(&c, r->memory.entity_allocs - r->memory.entity_frees == r->memory.entity_live &&
               r->memory.entity_live == r->entities, "table_live");
    field(&c, "stale_game", t->stale_lookups), field(&c, "stale_table", r->memory.stale_lookups);
    /* Every lookup that found its target dead, counted by the game and by the table:
     * both counts are exact (kiln's miss counter is an atomic add), so they are equal. */
    expect(&c, r->memory.stale_lookups == t->stale_lookups, "stale_lookups");
    expect(&c, r->memory_after.entity_live == 0, "table_leaked");

    check_objects(&c, r, DEMO_PROJECTILE, r->projectiles);
    check_objects(&c, r, DEMO_PARTICLE, r->particles);

    /* The history's allocation and live counts against the game's: kiln's pools hold the
     * projectiles and particles, its table the entities (the malloc run: neither). */
    field(&c, "history_allocs", r->history_allocs);
    field(&c, "history_pool_live", r->last_pool_live);
    field(&c, "history_handles_live", r->last_handles_live);
    bool on_kiln = r->memory.has_object_stats;
    uint64_t made = t->entity_allocs + t->object_allocs[DEMO_PROJECTILE] + t->object_allocs[DEMO_PARTICLE];
    expect(&c, !on_kiln || r->history_allocs >= made, "history_allocs");
    expect(&c, r->last_pool_live == (on_kiln ? (uint64_t)r->projectiles + r->particles : 0),
           "history_pool_live");
    expect(&c, r->last_handles_live == (on_kiln ? r->entities : 0), "history_handles_live");

    check_data(&c, r);
    check_tags(&c, r);

    field(&c, "scratch_failures", r->scratch_failures);
    field(&c, "kiln_errors", r->log_errors), field(&c, "api_errors", r->stats.api_errors);
    expect(&c, r->scratch_failures == 0, "scratch_failures");
    expect(&c, r->log_errors == 0 && r->stats.api_errors == 0, "kiln_errors");
    fprintf(out, " trace=%s", !r->traced ? "none" : r->trace_written ? "written" : "failed");
    expect(&c, !r->traced || r->trace_written, "trace");
    fprintf(out, " checksum=%016llx result=%s%s%s\n", (unsigned long long)r->checksum,
            c.ok ? "ok" : "FAILED(", c.failed, c.ok ? "" : ")");
    return c.ok;
}

bool report_compare(const demo_run *a, const demo_run *b, FILE *out) {
    bool same = a->checksum == b->checksum && a->totals.kills == b->totals.kills &&
                a->totals.stale_lookups == b->totals.stale_lookups;
    fprintf(out, "demo-check run=compare checksum_%s=%016llx checksum_%s=%016llx result=%s\n",
            a->name, (unsigned long long)a->checksum, b->name, (unsigned long long)b->checksum,
            same ? "ok" : "FAILED(the runs played different games)");
    return same;
}
