/* tests/test_observe.c — observability: the stats table and its sections, the stats
 * JSON (parsed strictly, its figures against kiln_stats_get and the list calls), the
 * keys and columns of both in the order of the structs' X-macro lists, the
 * per-frame history (wrap-around after 300 frames, order, contiguous frame numbers,
 * jobs and steals per frame, frame bytes per context, reads of a partial ring; allocations,
 * live objects and reserved bytes per frame), desc.frame_alloc_budget, the allocation
 * sites under KILN_DEBUG_SITES (kiln_sites_top, the table's top 20), and tracing (nothing recorded while off; on: one complete event per job run, inside its
 * frame, frame markers, counters, thread names; the ring dropping its oldest events;
 * writing to a path; bad input). */
#define _GNU_SOURCE   /* open_memstream, mkstemp */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sys_alloc.h"   /* fault injection (the static library) */
#include "json_check.h"
#include "recording_log.h"

static recording_log *rec;
static kiln_runtime  *rt;
static kiln_ctx      *main_ctx;

static void setup(void) { rec = recording_log_new(); }

static void teardown(void) { recording_fixture_end(&main_ctx, &rt, &rec); }

TestSuite(observe_stats, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(observe_history, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(observe_trace, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(observe_count, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(observe_sites, .init = setup, .fini = teardown, .timeout = 60);

#define assert_no_log() \
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec))

/* The suite's runtime with this many workers (or KILN_NO_WORKERS) and main_ctx. */
static void start_with(kiln_desc desc) {
    rt = kiln_create(&desc);
    cr_assert_not_null(rt, "kiln_create failed:%s", recorded_summary(rec));
    main_ctx = kiln_attach(rt);
    cr_assert_not_null(main_ctx);
}

static void start(uint32_t workers) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = workers;
    start_with(desc);
}

/* ---------- output into memory, parsed ---------- */

typedef struct capture {
    char  *text;
    size_t size;
    FILE  *file;
} capture;

static FILE *capture_begin(capture *c) {
    memset(c, 0, sizeof *c);
    c->file = open_memstream(&c->text, &c->size);
    cr_assert_not_null(c->file);
    return c->file;
}

static char *capture_end(capture *c) {
    cr_assert_eq(fclose(c->file), 0);
    return c->text;
}

static json_value *parse_or_fail(const char *text) {
    char error[200];
    json_value *v = json_parse(text, error, sizeof error);
    cr_assert_not_null(v, "not valid JSON: %s\n%.2000s", error, text);
    return v;
}

static uint64_t u64_member(const json_value *object, const char *key) {
    const json_value *v = json_get(object, key);
    cr_assert_not_null(v, "no member '%s'", key);
    cr_assert(v->type == JSON_NUMBER && v->is_u64, "member '%s' is not an integer", key);
    return v->u64;
}

static const json_value *member(const json_value *object, const char *key, json_type type) {
    const json_value *v = json_get(object, key);
    cr_assert_not_null(v, "no member '%s'", key);
    cr_assert_eq(v->type, type, "member '%s' has type %d, not %d", key, v->type, type);
    return v;
}

/* ---------- jobs that leave a trace ---------- */

static _Atomic uint64_t jobs_done;

static void count_job(kiln_ctx *ctx, void *arg) {
    size_t bytes = (size_t)(uintptr_t)arg;
    if (bytes) {
        char *p = kiln_frame_alloc(ctx, bytes, 64);
        if (p) memset(p, 1, bytes);
    }
    atomic_fetch_add(&jobs_done, 1);
}

/* One frame that runs count jobs (each allocating bytes of frame memory) and waits. */
static uint64_t frame_with_jobs(size_t count, size_t bytes) {
    uint64_t frame = kiln_frame_begin(main_ctx);
    kiln_job jobs[256];
    cr_assert_leq(count, 256);
    for (size_t i = 0; i < count; i++) jobs[i] = (kiln_job){ count_job, (void *)(uintptr_t)bytes };
    if (count) {
        kiln_counter done = { { 0, 0 } };
        kiln_run(main_ctx, jobs, count, &done);
        kiln_wait(main_ctx, &done);
    }
    kiln_frame_end(main_ctx);
    return frame;
}

static uint64_t total_stolen(void) {
    kiln_ctx_stats s[16];
    size_t n = kiln_stats_contexts(rt, s, 16);
    cr_assert_leq(n, 16);
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) sum += s[i].jobs_stolen;
    return sum;
}

/* ---------- stats: the table ---------- */

/* A runtime with one of everything: an arena, a pool with live objects, a handle
 * table with live items, two workers, a frame with jobs. */
static kiln_arena   *level;
static kiln_pool    *bullets;
static kiln_tag      effects;   /* the bullets' tag */
static kiln_handles *enemies;
static kiln_handle   enemy;
static void         *bullet[3];

static void *names, *sounds;   /* heap allocations */

static void populate(void) {
    start(2);
    level = kiln_arena_create(rt, "level \"one\"");   /* a name JSON must escape */
    cr_assert_not_null(level);
    cr_assert_not_null(kiln_arena_alloc(level, 1000, 16));
    effects = kiln_tag_create(rt, &(kiln_tag_desc){ .name = "Effects", .budget = 1 << 30 });
    cr_assert_neq(effects.id, 0u);
    bullets = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "bullets", .size = 48, .tag = effects });
    cr_assert_not_null(bullets);
    for (int i = 0; i < 3; i++) cr_assert_not_null(bullet[i] = kiln_pool_alloc(main_ctx, bullets));
    enemies = kiln_handles_create(rt, &(kiln_handles_desc){ .name = "enemies", .item_size = 32,
                                                           .capacity = 64 });
    cr_assert_not_null(enemies);
    enemy = kiln_handle_alloc(main_ctx, enemies, NULL);
    cr_assert_neq(enemy.bits, 0);
    cr_assert_not_null(names = kiln_heap_alloc(main_ctx, effects, 40, 0));
    cr_assert_not_null(sounds = kiln_heap_alloc(main_ctx, (kiln_tag){ 0 }, 3000, 0));
    frame_with_jobs(32, 256);
}

static void depopulate(void) {
    kiln_heap_free(main_ctx, names);
    kiln_heap_free(main_ctx, sounds);
    for (int i = 0; i < 3; i++) kiln_pool_free(main_ctx, bullets, bullet[i]);
    kiln_pool_destroy(bullets);
    cr_assert(kiln_handle_free(main_ctx, enemies, enemy));
    kiln_handles_destroy(enemies);
    kiln_arena_destroy(level);
}

Test(observe_stats, table_has_every_section_and_name) {
    populate();
    capture c;
    kiln_stats_print(rt, capture_begin(&c));
    char *text = capture_end(&c);
    const char *expected[] = {
        "kiln stats, frame 1", "== runtime ==", "== block_pool ==", "== arenas (", "== pools (1)",
        "== handles (1)", "== tags (1)", "== contexts (3)", "== trace ==", "level \"one\"", "bullets",
        "enemies", "Effects",
        "frame ctx", "frame worker ctx", "jobs_run", "jobs_stolen", "sleep_ns",
        "sleeps", "idle_spin_ns", "frame_peak_last_frame", "blocks_in_use", "pending_reuse", "peak_live",
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        cr_assert_not_null(strstr(text, expected[i]), "'%s' missing from:\n%s", expected[i], text);
    free(text);
    depopulate();
    assert_no_log();
}

Test(observe_stats, json_names_stay_utf8) {
    start(KILN_NO_WORKERS);
    char name[64];
    memset(name, 'a', 46);
    strcpy(name + 46, "\xc3\xa9\"");   /* 'e' acute cut in half at the 47 bytes kept */
    kiln_arena *cut = kiln_arena_create(rt, name);
    kiln_arena *accent = kiln_arena_create(rt, "caf\xc3\xa9 \x01");
    capture c;
    cr_assert(kiln_stats_write_json(rt, capture_begin(&c)));
    char *text = capture_end(&c);
    json_value *root = parse_or_fail(text);
    const json_value *arenas = member(root, "arenas", JSON_ARRAY);
    char expected_cut[64];
    memset(expected_cut, 'a', 46);
    strcpy(expected_cut + 46, "\xef\xbf\xbd");   /* U+FFFD in place of the stray byte */
    size_t found = 0;
    for (size_t i = 0; i < arenas->count; i++) {
        const json_value *n = json_get(&arenas->items[i], "name");
        found += json_is_string(n, expected_cut) + json_is_string(n, "caf\xc3\xa9 \x01");
    }
    cr_assert_eq(found, 2, "%s", text);
    json_free(root);
    free(text);
    kiln_arena_destroy(cut);
    kiln_arena_destroy(accent);
    assert_no_log();
}

Test(observe_stats, bad_input_is_refused) {
    start(KILN_NO_WORKERS);
    capture c;
    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_stats_print(NULL, capture_begin(&c));
    char *text = capture_end(&c);
    char *err = stderr_capture_end(&cap);
    cr_assert_str_empty(text);
    cr_assert_not_null(strstr(err, "RUNTIME_NULL: kiln_stats_print"), "%s", err);
    free(err);
    free(text);
    kiln_stats_print(rt, NULL);
    cr_assert(!kiln_stats_write_json(rt, NULL));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_STATS_NULL_OUT), 2, "%s", recorded_summary(rec));
}

/* ---------- stats: keys and columns from the structs' lists ---------- */

/* Each section's keys, in output order, made from the lists kiln/stats.h makes the
 * structs from (plus the hand-written names). */
#define KEY(type, name, doc) #name,
static const char *const runtime_keys[] = {
    KILN_STATS_FIELDS(KEY) KILN_STATS_TAIL_FIELDS(KEY) KILN_STATS_ERROR_FIELDS(KEY)
};
static const char *const block_pool_keys[] = { KILN_BLOCK_POOL_STATS_FIELDS(KEY) };
static const char *const arena_keys[] = { "name", KILN_ARENA_STATS_FIELDS(KEY) };
static const char *const pool_keys[] = { "name", KILN_POOL_STATS_FIELDS(KEY) };
static const char *const handles_keys[] = { "name", KILN_HANDLES_STATS_FIELDS(KEY) };
static const char *const tag_keys[] = { "name", KILN_TAG_STATS_FIELDS(KEY) };
static const char *const context_keys[] = { KILN_CTX_STATS_FIELDS(KEY) };
static const char *const trace_keys[] = { KILN_TRACE_STATS_FIELDS(KEY) };
static const char *const memory_keys[] = { KILN_MEMORY_STATS_FIELDS(KEY) };
static const char *const heap_keys[] = { KILN_HEAP_STATS_FIELDS(KEY) };
static const char *const heap_class_keys[] = { KILN_HEAP_CLASS_STATS_FIELDS(KEY) };

typedef struct section_keys {
    const char        *section;
    const char *const *keys;
    size_t             count;
    bool               list;
} section_keys;

#define KEYS(list) list, sizeof list / sizeof list[0]
static const section_keys sections[] = {
    { "runtime", KEYS(runtime_keys), false },   { "block_pool", KEYS(block_pool_keys), false },
    { "memory", KEYS(memory_keys), false },
    { "arenas", KEYS(arena_keys), true },       { "pools", KEYS(pool_keys), true },
    { "heap", KEYS(heap_keys), false },         { "heap_classes", KEYS(heap_class_keys), true },
    { "handles", KEYS(handles_keys), true },    { "tags", KEYS(tag_keys), true },
    { "contexts", KEYS(context_keys), true },   { "trace", KEYS(trace_keys), false },
};

static void assert_object_keys(const json_value *object, const section_keys *s) {
    cr_assert_eq(object->type, JSON_OBJECT, "%s", s->section);
    cr_assert_eq(object->count, s->count, "%s: %zu keys, its list has %zu", s->section,
                 object->count, s->count);
    for (size_t k = 0; k < s->count; k++)
        cr_assert_str_eq(object->keys[k], s->keys[k], "%s: key %zu", s->section, k);
}

/* The line after "== section ..." and the lines after it up to a blank one. */
static const char *section_body(const char *text, const char *section) {
    char title[64];
    snprintf(title, sizeof title, "\n== %s ", section);
    const char *at = strstr(text, title);
    cr_assert_not_null(at, "no section %s in:\n%s", section, text);
    return strchr(at + 1, '\n') + 1;
}

/* The first word of a line (or of the next ones, after at), copied into word. */
static const char *next_word(const char *at, char *word, size_t size) {
    while (*at == ' ') at++;
    size_t n = strcspn(at, " \n");
    cr_assert_lt(n, size);
    memcpy(word, at, n);
    word[n] = '\0';
    return at + n;
}

Test(observe_stats, keys_and_columns_follow_the_lists) {
    populate();
    capture c;
    cr_assert(kiln_stats_write_json(rt, capture_begin(&c)));
    char *json = capture_end(&c);
    kiln_stats_print(rt, capture_begin(&c));
    char *text = capture_end(&c);
    json_value *root = parse_or_fail(json);
    cr_assert_eq(root->count, sizeof sections / sizeof sections[0]);
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
        const section_keys *s = &sections[i];
        cr_assert_str_eq(root->keys[i], s->section);
        const json_value *v = &root->items[i];
        if (s->list) {
            cr_assert_eq(v->type, JSON_ARRAY, "%s", s->section);
            cr_assert_gt(v->count, 0, "%s: populate() makes one at least", s->section);
            for (size_t k = 0; k < v->count; k++) assert_object_keys(&v->items[k], s);
        } else {
            assert_object_keys(v, s);
        }
        /* The table: a list's first line holds its column titles; a struct's lines each
         * start with a key. */
        const char *at = section_body(text, s->section);
        char word[64];
        for (size_t k = 0; k < s->count; k++) {
            if (!s->list && k > 0) at = strchr(at, '\n') + 1;
            at = next_word(at, word, sizeof word);
            cr_assert_str_eq(word, s->keys[k], "%s: column %zu", s->section, k);
        }
        if (s->list) {
            while (*at == ' ') at++;
            cr_assert_eq(*at, '\n', "%s: more columns than its list", s->section);
        } else {
            at = strchr(at, '\n') + 1;
            cr_assert(*at == '\n' || *at == '\0', "%s: more lines than its list", s->section);
        }
    }
    json_free(root);
    free(json);
    free(text);
    depopulate();
    assert_no_log();
}

/* ---------- stats: JSON ---------- */

Test(observe_stats, json_parses_and_matches_the_stats_calls) {
    populate();
    capture c;
    cr_assert(kiln_stats_write_json(rt, capture_begin(&c)));
    char *text = capture_end(&c);
    json_value *root = parse_or_fail(text);
    cr_assert_eq(root->type, JSON_OBJECT);
    const char *keys[] = { "runtime", "block_pool", "memory", "arenas", "pools", "heap", "heap_classes",
                           "handles", "tags", "contexts", "trace" };
    cr_assert_eq(root->count, 11);
    for (size_t i = 0; i < 11; i++) cr_assert_str_eq(root->keys[i], keys[i]);
    /* The memory adds up, the heap's figures are the call's. */
    const json_value *memory = member(root, "memory", JSON_OBJECT);
    cr_expect_eq(u64_member(memory, "reserved"),
                 u64_member(memory, "tagged") + u64_member(memory, "untagged") +
                 u64_member(memory, "frame") + u64_member(memory, "heap_free") +
                 u64_member(memory, "heap_kept") + u64_member(memory, "free_blocks"));
    kiln_heap_stats heap;
    cr_assert(kiln_stats_heap(rt, &heap));
    cr_expect_eq(u64_member(member(root, "heap", JSON_OBJECT), "live_objects"), heap.live_objects);
    cr_expect_eq(member(root, "heap_classes", JSON_ARRAY)->count, 2u, "the two classes used");
    kiln_tag_stats tag;
    cr_assert(kiln_tag_stats_get(rt, effects, &tag));
    const json_value *tags = member(root, "tags", JSON_ARRAY);
    cr_assert_eq(tags->count, 1);
    cr_expect_str_eq(member(&tags->items[0], "name", JSON_STRING)->string, "Effects");
    cr_expect_eq(u64_member(&tags->items[0], "live_bytes"), tag.live_bytes);
    cr_expect_gt(tag.live_bytes, 0u, "the bullets' block");

    kiln_stats stats;
    cr_assert(kiln_stats_get(rt, &stats));
    const json_value *runtime = member(root, "runtime", JSON_OBJECT);
    cr_assert_eq(u64_member(runtime, "frame"), stats.frame);
    cr_assert_eq(u64_member(runtime, "worker_count"), 2);
    cr_assert_eq(u64_member(runtime, "contexts"), stats.contexts);
    cr_assert_eq(u64_member(runtime, "arenas"), stats.arenas);
    cr_assert_eq(u64_member(runtime, "pools"), 1);
    cr_assert_eq(u64_member(runtime, "api_errors"), 0);
    const json_value *blocks = member(root, "block_pool", JSON_OBJECT);
    cr_assert_eq(u64_member(blocks, "block_size"), stats.blocks.block_size);
    cr_assert_eq(u64_member(blocks, "blocks_reserved"), stats.blocks.blocks_reserved);
    cr_assert_eq(u64_member(blocks, "memory_limit"), 0);

    const json_value *arenas = member(root, "arenas", JSON_ARRAY);
    cr_assert_eq(arenas->count, stats.arenas);
    kiln_arena_stats level_stats;
    cr_assert(kiln_arena_stats_get(level, &level_stats));
    bool found_level = false;
    for (size_t i = 0; i < arenas->count; i++) {
        const json_value *a = &arenas->items[i];
        if (!json_is_string(json_get(a, "name"), "level \"one\"")) continue;
        found_level = true;
        cr_assert_eq(u64_member(a, "bytes_in_use"), level_stats.bytes_in_use);
        cr_assert_eq(u64_member(a, "allocs"), 1);
        cr_assert_eq(u64_member(a, "blocks_taken"), level_stats.blocks_taken);
    }
    cr_assert(found_level, "the arena 'level \"one\"' is not listed (name escaped wrongly?)");

    const json_value *pools = member(root, "pools", JSON_ARRAY);
    cr_assert_eq(pools->count, 1);
    cr_assert(json_is_string(json_get(&pools->items[0], "name"), "bullets"));
    cr_assert_eq(u64_member(&pools->items[0], "live"), 3);
    cr_assert_eq(u64_member(&pools->items[0], "object_size"), 48);
    cr_assert_eq(member(&pools->items[0], "alive", JSON_BOOL)->boolean, true);

    const json_value *handles = member(root, "handles", JSON_ARRAY);
    cr_assert_eq(handles->count, 1);
    cr_assert(json_is_string(json_get(&handles->items[0], "name"), "enemies"));
    cr_assert_eq(u64_member(&handles->items[0], "live"), 1);
    cr_assert_eq(u64_member(&handles->items[0], "capacity"), 64);

    const json_value *contexts = member(root, "contexts", JSON_ARRAY);
    kiln_ctx_stats ctx_stats[8];
    size_t n = kiln_stats_contexts(rt, ctx_stats, 8);
    cr_assert_eq(contexts->count, n);
    uint64_t json_run = 0, stats_run = 0, workers = 0;
    for (size_t i = 0; i < n; i++) {   /* both newest first */
        cr_assert_eq(u64_member(&contexts->items[i], "id"), ctx_stats[i].id);
        workers += member(&contexts->items[i], "is_worker", JSON_BOOL)->boolean;
        json_run += u64_member(&contexts->items[i], "jobs_run");
        stats_run += ctx_stats[i].jobs_run;
    }
    cr_assert_eq(workers, 2);
    cr_assert_eq(json_run, stats_run);
    cr_assert_eq(json_run, 32);

    const json_value *trace = member(root, "trace", JSON_OBJECT);
    cr_assert_eq(member(trace, "enabled", JSON_BOOL)->boolean, false);
    cr_assert_eq(u64_member(trace, "ring_events"), KILN_TRACE_RING_EVENTS);
    json_free(root);
    free(text);
    depopulate();
    assert_no_log();
}

Test(observe_stats, json_checker_rejects_bad_json) {   /* the checker itself is strict */
    const char *bad[] = { "{\"a\":1,}", "[1,2,]", "{a:1}", "[01]", "[1.]", "\"\\x\"", "[1] 2",
                          "{\"a\" 1}", "[\"tab\there\"]", "nul", "", "[\"\xc3\"]", "[\"\xff\"]" };
    char error[100];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_value *v = json_parse(bad[i], error, sizeof error);
        cr_assert_null(v, "accepted: %s", bad[i]);
    }
    json_value *v = json_parse(" {\"a\":[1,-2.5e3,true,null,\"\\u00e9\\ud83d\\ude00\"]} ", error,
                               sizeof error);
    cr_assert_not_null(v, "%s", error);
    const json_value *a = json_get(v, "a");
    cr_assert_eq(a->count, 5);
    cr_assert_eq(a->items[0].u64, 1);
    cr_assert_eq(a->items[1].number, -2500.0);
    cr_assert_str_eq(a->items[4].string, "\xc3\xa9\xf0\x9f\x98\x80");
    json_free(v);
}

/* ---------- history ---------- */

Test(observe_history, empty_before_the_first_frame_end) {
    start(KILN_NO_WORKERS);
    kiln_frame_record records[4];
    cr_assert_eq(kiln_history_read(rt, records, 4), 0);
    kiln_frame_begin(main_ctx);
    cr_assert_eq(kiln_history_read(rt, records, 4), 0, "a frame is recorded at its end");
    kiln_frame_end(main_ctx);
    cr_assert_eq(kiln_history_read(rt, records, 4), 1);
    cr_assert_eq(records[0].frame, 1);
    cr_assert_eq(kiln_history_read(rt, NULL, 0), 0);
    stderr_capture cap;
    stderr_capture_begin(&cap);
    cr_assert_eq(kiln_history_read(NULL, records, 4), 0);
    free(stderr_capture_end(&cap));
}

/* Jobs per frame: the frame number times 7 mod 61, so no two neighbours match. */
static size_t jobs_in_frame(uint64_t frame) { return (size_t)(frame * 7 % 61); }

Test(observe_history, wraps_after_300_frames_in_order) {
    start(2);
    uint64_t stolen_in[301];
    for (uint64_t f = 1; f <= 300; f++) {
        uint64_t before = total_stolen();
        cr_assert_eq(frame_with_jobs(jobs_in_frame(f), 128), f);
        stolen_in[f] = total_stolen() - before;
    }
    static kiln_frame_record records[KILN_HISTORY_FRAMES + 10];
    size_t n = kiln_history_read(rt, records, KILN_HISTORY_FRAMES + 10);
    cr_assert_eq(n, KILN_HISTORY_FRAMES, "the ring keeps the newest 256");
    for (size_t i = 0; i < n; i++) {
        const kiln_frame_record *r = &records[i];
        uint64_t f = 300 - KILN_HISTORY_FRAMES + 1 + i;   /* 45 .. 300, oldest first */
        cr_assert_eq(r->frame, f, "record %zu is frame %" PRIu64 ", not %" PRIu64, i, r->frame, f);
        cr_assert_eq(r->jobs_run, jobs_in_frame(f), "frame %" PRIu64 ": %" PRIu64 " jobs run, %zu "
                     "submitted", f, r->jobs_run, jobs_in_frame(f));
        cr_assert_eq(r->steals, stolen_in[f]);
        cr_assert_leq(r->steals, r->jobs_run);
        cr_assert_gt(r->duration_ns, 0);
        if (i > 0) cr_assert_geq(r->begin_ns, records[i - 1].begin_ns + records[i - 1].duration_ns);
        cr_assert_eq(r->contexts, 3, "the driver and the two workers");
        cr_assert_eq(r->contexts_omitted, 0);
        cr_assert_eq(r->ctx_ids[0], kiln_stats_contexts(rt, NULL, 0) == 3 ? 3u : 0u,
                     "the driver first (attached after the two workers: id 3)");
        uint64_t sum = 0;
        for (uint32_t k = 0; k < r->contexts; k++) sum += r->ctx_frame_bytes[k];
        cr_assert_eq(r->frame_bytes, sum);
        /* each job took 128 bytes at 64-byte alignment from the arena of whoever ran it */
        cr_assert_geq(r->frame_bytes, 128 * r->jobs_run);
        cr_assert_leq(r->frame_bytes, 128 * r->jobs_run + 3 * 64);
    }
    kiln_frame_record newest[10];
    cr_assert_eq(kiln_history_read(rt, newest, 10), 10, "the newest 10");
    for (size_t i = 0; i < 10; i++) cr_assert_eq(newest[i].frame, 291 + i);
    cr_assert_eq(memcmp(newest, &records[KILN_HISTORY_FRAMES - 10], sizeof newest), 0);
    assert_no_log();
}

Test(observe_history, frame_bytes_of_the_driver) {
    start(KILN_NO_WORKERS);
    kiln_frame_begin(main_ctx);
    cr_assert_not_null(kiln_frame_alloc(main_ctx, 5000, 64));
    cr_assert_not_null(kiln_frame_alloc(main_ctx, 3000, 64));
    kiln_frame_end(main_ctx);
    frame_with_jobs(0, 0);   /* an empty frame */
    kiln_frame_record r[2];
    cr_assert_eq(kiln_history_read(rt, r, 2), 2);
    cr_assert_eq(r[0].contexts, 1);
    cr_assert_eq(r[0].ctx_ids[0], 1);
    cr_assert_geq(r[0].ctx_frame_bytes[0], 8000);
    cr_assert_leq(r[0].ctx_frame_bytes[0], 8000 + 64 + 56, "the two allocations and padding");
    kiln_arena_stats fa;
    cr_assert(kiln_arena_stats_get(kiln_frame_arena(main_ctx), &fa));
    cr_assert_eq(r[1].frame_bytes, 0);
    cr_assert_eq(fa.peak_last_frame, r[1].ctx_frame_bytes[0]);
    cr_assert_eq(r[0].jobs_run, 0);
    assert_no_log();
}

/* ---------- allocations per frame: the history and desc.frame_alloc_budget ---------- */

/* On main_ctx, in one frame: frame allocations, pool objects and handle items. */
static kiln_pool    *count_pool;
static kiln_handles *count_table;
static void         *count_objects[16];
static kiln_handle   count_handles[16];

static void make_allocators(void) {
    count_pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "shots", .size = 40 });
    count_table = kiln_handles_create(rt, &(kiln_handles_desc){ .name = "units", .item_size = 24,
                                                               .capacity = 64 });
    cr_assert(count_pool && count_table);
}

static void frame_of(int frame_allocs, int objects, int items) {
    kiln_frame_begin(main_ctx);
    for (int i = 0; i < frame_allocs; i++) cr_assert_not_null(kiln_frame_alloc(main_ctx, 32, 16));
    for (int i = 0; i < objects; i++)
        cr_assert_not_null(count_objects[i] = kiln_pool_alloc(main_ctx, count_pool));
    for (int i = 0; i < items; i++)
        cr_assert_neq((count_handles[i] = kiln_handle_alloc(main_ctx, count_table, NULL)).bits, 0);
    kiln_frame_end(main_ctx);
}

Test(observe_count, history_has_allocations_live_objects_and_reserved_bytes) {
    start(KILN_NO_WORKERS);
    make_allocators();
    frame_of(5, 3, 2);
    kiln_frame_begin(main_ctx);   /* frees only: nothing allocated, nothing live after */
    for (int i = 0; i < 3; i++) kiln_pool_free(main_ctx, count_pool, count_objects[i]);
    for (int i = 0; i < 2; i++) cr_assert(kiln_handle_free(main_ctx, count_table, count_handles[i]));
    kiln_frame_end(main_ctx);
    frame_of(1, 4, 0);
    kiln_frame_record r[3];
    cr_assert_eq(kiln_history_read(rt, r, 3), 3);
    kiln_stats stats;
    cr_assert(kiln_stats_get(rt, &stats));
    cr_assert_eq(r[0].allocs, 10);
    cr_assert_eq(r[0].ctx_allocs[0], 10, "the driver is listed first");
    cr_assert_eq(r[0].pool_live, 3);
    cr_assert_eq(r[0].handles_live, 2);
    cr_assert_eq(r[1].allocs, 0);
    cr_assert_eq(r[1].pool_live, 0);
    cr_assert_eq(r[1].handles_live, 0);
    cr_assert_eq(r[2].allocs, 5);
    cr_assert_eq(r[2].pool_live, 4);
    for (int i = 0; i < 3; i++) {
        cr_assert_gt(r[i].reserved_bytes, 0);
        cr_assert_leq(r[i].reserved_bytes, stats.blocks.peak_reserved_bytes);
    }
    cr_assert_eq(r[2].reserved_bytes, stats.blocks.reserved_bytes, "nothing reserved since");
    for (int i = 0; i < 4; i++) kiln_pool_free(main_ctx, count_pool, count_objects[i]);
    assert_no_log();
}

Test(observe_count, allocations_of_workers_are_counted) {
    start(2);
    frame_with_jobs(40, 64);   /* each job takes frame memory once on the context running it */
    kiln_frame_record r;
    cr_assert_eq(kiln_history_read(rt, &r, 1), 1);
    cr_assert_eq(r.allocs, 40);
    uint64_t listed = 0;
    for (uint32_t i = 0; i < r.contexts; i++) listed += r.ctx_allocs[i];
    cr_assert_eq(listed, 40, "every context that ran a job is listed");
    assert_no_log();
}

Test(observe_count, budget_warns_once_per_context_and_frame_over_it) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = KILN_NO_WORKERS;
    desc.frame_alloc_budget = 6;
    start_with(desc);
    make_allocators();
    frame_of(2, 2, 2);   /* 6: at the budget, not over it */
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_ALLOC_BUDGET_EXCEEDED), 0);
    frame_of(3, 2, 2);   /* 7 */
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_ALLOC_BUDGET_EXCEEDED), 1);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_FRAME_ALLOC_BUDGET_EXCEEDED, KILN_LOG_WARN), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_FRAME_ALLOC_BUDGET_EXCEEDED,
                                  "frame 2: context 1 made 7 allocations"), 1,
                 "%s", recorded_summary(rec));
    frame_of(0, 0, 0);   /* the next frame starts from zero */
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_ALLOC_BUDGET_EXCEEDED), 1);
    kiln_stats stats;
    cr_assert(kiln_stats_get(rt, &stats));
    cr_assert_eq(stats.api_errors, 0, "a warning, not a misuse");
    for (int i = 0; i < 2; i++) kiln_pool_free(main_ctx, count_pool, count_objects[i]);
    cr_assert_eq(kiln_runtime_desc(rt).frame_alloc_budget, 6, "read back as given");
}

Test(observe_count, no_budget_no_warning) {
    start(KILN_NO_WORKERS);
    make_allocators();
    frame_of(16, 16, 16);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_ALLOC_BUDGET_EXCEEDED), 0);
    for (int i = 0; i < 16; i++) kiln_pool_free(main_ctx, count_pool, count_objects[i]);
    assert_no_log();
}

/* ---------- allocation sites (KILN_DEBUG_SITES) ---------- */

static void start_sites(void) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = KILN_NO_WORKERS;
    desc.debug = KILN_DEBUG_SITES;
    start_with(desc);
}

static const char *const here = __FILE__;

static const kiln_site_stats *site_at(const kiln_site_stats *s, size_t n, int line) {
    for (size_t i = 0; i < n; i++)
        if (s[i].file && strcmp(s[i].file, here) == 0 && s[i].line == line) return &s[i];
    return NULL;
}

Test(observe_sites, ranked_across_arenas_pools_and_tables_at_any_time) {
    start_sites();
    make_allocators();
    kiln_arena *arena = kiln_arena_create(rt, "level");
    cr_assert_not_null(arena);
    enum { ARENA_LINE = 1001, POOL_LINE = 1002, TABLE_LINE = 1003, FRAME_LINE = 1004 };
    kiln_frame_begin(main_ctx);
    for (int i = 0; i < 3; i++) cr_assert_not_null(kiln_arena_alloc_at(arena, 100, 8, here, ARENA_LINE));
    for (int i = 0; i < 5; i++)
        cr_assert_not_null(count_objects[i] = kiln_pool_alloc_at(main_ctx, count_pool, here, POOL_LINE));
    for (int i = 0; i < 2; i++)
        cr_assert_neq((count_handles[i] = kiln_handle_alloc_at(main_ctx, count_table, NULL, here,
                                                             TABLE_LINE)).bits, 0);
    for (int i = 0; i < 4; i++) cr_assert_not_null(kiln_frame_alloc_at(main_ctx, 10, 8, here, FRAME_LINE));

    kiln_site_stats s[8];
    size_t n = kiln_sites_top(rt, s, 8);   /* mid-frame: not only at destroy */
    cr_assert_eq(n, 4, "four sites");
    cr_assert_eq(s[0].line, POOL_LINE);
    cr_assert_eq(s[1].line, FRAME_LINE);
    cr_assert_eq(s[2].line, ARENA_LINE);
    cr_assert_eq(s[3].line, TABLE_LINE);
    const kiln_site_stats *pool_site = site_at(s, n, POOL_LINE), *table_site = site_at(s, n, TABLE_LINE);
    const kiln_site_stats *arena_site = site_at(s, n, ARENA_LINE), *frame_site = site_at(s, n, FRAME_LINE);
    cr_assert(pool_site && table_site && arena_site && frame_site);
    cr_assert_eq(pool_site->allocs, 5);
    cr_assert_eq(pool_site->bytes, 5 * 40);
    cr_assert_eq(pool_site->live, 5);
    cr_assert_eq(arena_site->bytes, 300);
    cr_assert_eq(arena_site->live, 3);
    cr_assert_eq(table_site->allocs, 2);
    cr_assert_eq(table_site->bytes, 2 * 24);
    cr_assert_eq(table_site->live, 2);
    cr_assert_eq(frame_site->live, 4);

    cr_assert_eq(kiln_sites_top(rt, s, 2), 2, "cap cuts the list");
    cr_assert_eq(s[0].line, POOL_LINE);
    cr_assert_eq(s[1].line, FRAME_LINE);

    /* Frees and resets: allocations stay counted, live ones go. */
    kiln_frame_end(main_ctx);
    for (int i = 0; i < 2; i++) kiln_pool_free(main_ctx, count_pool, count_objects[i]);
    cr_assert(kiln_handle_free(main_ctx, count_table, count_handles[0]));
    kiln_arena_reset(arena);
    n = kiln_sites_top(rt, s, 8);
    cr_assert_eq(n, 4);
    cr_assert_eq(site_at(s, n, POOL_LINE)->live, 3);
    cr_assert_eq(site_at(s, n, POOL_LINE)->allocs, 5);
    cr_assert_eq(site_at(s, n, FRAME_LINE)->live, 0);
    cr_assert_eq(site_at(s, n, ARENA_LINE)->live, 0);
    cr_assert_eq(site_at(s, n, TABLE_LINE)->live, 1);
    for (int i = 2; i < 5; i++) kiln_pool_free(main_ctx, count_pool, count_objects[i]);
    cr_assert(kiln_handle_free(main_ctx, count_table, count_handles[1]));
    kiln_arena_destroy(arena);
    assert_no_log();
}

Test(observe_sites, allocations_without_a_site_and_a_destroyed_pool) {
    start_sites();
    make_allocators();
    void *a = kiln_pool_alloc(main_ctx, count_pool);   /* no site */
    void *b = kiln_pool_alloc_at(main_ctx, count_pool, here, 2001);
    cr_assert(a && b);
    kiln_site_stats s[4];
    size_t n = kiln_sites_top(rt, s, 4);
    cr_assert_eq(n, 2);
    bool none_seen = false;
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(s[i].allocs, 1);
        cr_assert_eq(s[i].live, 1);
        if (!s[i].file) none_seen = true;
    }
    cr_assert(none_seen, "the allocation without a site has an entry of its own");
    kiln_pool_free(main_ctx, count_pool, a);
    kiln_pool_free(main_ctx, count_pool, b);
    kiln_pool_destroy(count_pool);
    n = kiln_sites_top(rt, s, 4);
    cr_assert_eq(n, 2, "a destroyed pool's sites keep their counts");
    cr_assert_eq(s[0].live + s[1].live, 0);
    assert_no_log();
}

Test(observe_sites, stats_print_lists_the_top_sites) {
    start_sites();
    make_allocators();
    for (int i = 0; i < 3; i++) count_objects[i] = kiln_pool_alloc_at(main_ctx, count_pool, here, 3001);
    capture c;
    kiln_stats_print(rt, capture_begin(&c));
    char *text = capture_end(&c);
    cr_assert_not_null(strstr(text, "== sites (top 1) =="), "%s", text);
    char row[200];
    snprintf(row, sizeof row, "%s:3001", here);
    cr_assert_not_null(strstr(text, row), "%s", text);
    free(text);
    for (int i = 0; i < 3; i++) kiln_pool_free(main_ctx, count_pool, count_objects[i]);
    assert_no_log();
}

Test(observe_sites, stats_print_without_the_bit_has_no_sites) {
    start(KILN_NO_WORKERS);
    capture c;
    kiln_stats_print(rt, capture_begin(&c));
    char *text = capture_end(&c);
    cr_assert_null(strstr(text, "== sites"), "%s", text);
    free(text);
    assert_no_log();
}

Test(observe_sites, bad_input) {
    start_sites();
    kiln_site_stats s[2];
    cr_assert_eq(kiln_sites_top(rt, NULL, 2), 0);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_STATS_NULL_OUT), 1);
    cr_assert_eq(kiln_sites_top(rt, NULL, 0), 0);
    cr_assert_eq(kiln_sites_top(rt, s, 0), 0);
    cr_assert_eq(recorded_count(rec), 1, "cap 0 is legal:%s", recorded_summary(rec));
    cr_assert_eq(kiln_sites_top(NULL, s, 2), 0);   /* on stderr */
    kiln_stats stats;
    cr_assert(kiln_stats_get(rt, &stats));
    cr_assert_eq(stats.api_errors, 1);

    kiln_desc desc = recording_desc(rec);
    desc.worker_count = KILN_NO_WORKERS;
    kiln_runtime *plain = kiln_create(&desc);   /* the bit off */
    cr_assert_not_null(plain);
    cr_assert_eq(kiln_sites_top(plain, s, 2), 0);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_SITES_OFF), 1);
    cr_assert(kiln_stats_get(plain, &stats));
    cr_assert_eq(stats.api_errors, 1);
    kiln_destroy(plain);
    cr_assert_eq(kiln_sites_top(plain, s, 2), 0, "destroyed: refused, never read");
}

Test(observe_sites, no_heap_for_the_site_counts_refuses_create) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = KILN_NO_WORKERS;
    desc.debug = KILN_DEBUG_SITES;
    bool refused = false;
    for (unsigned long n = 1; n <= 8 && !refused; n++) {   /* the counts are among the first */
        recording_log_clear(rec);
        kiln_sys_fail_nth(n);
        kiln_runtime *made = kiln_create(&desc);
        kiln_sys_fail_nth(0);
        refused = count_items(rec, KILN_LOGITEM_SITES_OUT_OF_MEMORY) == 1;
        if (refused) cr_assert_null(made, "a runtime without its site counts");
        kiln_destroy(made);
    }
    cr_assert(refused, "no allocation of the first 8 was the site counts'");
}

/* ---------- tracing ---------- */

static kiln_trace_stats trace_stats(void) {
    kiln_trace_stats s;
    cr_assert(kiln_trace_stats_get(rt, &s));
    return s;
}

static json_value *trace_json(void) {
    capture c;
    cr_assert(kiln_trace_write_file(rt, capture_begin(&c)), "%s", recorded_summary(rec));
    char *text = capture_end(&c);
    json_value *root = parse_or_fail(text);
    free(text);
    cr_assert_eq(root->type, JSON_OBJECT);
    member(root, "traceEvents", JSON_ARRAY);
    return root;
}

/* Events of the trace whose ph is ph (and whose name is name, when not NULL). */
static size_t count_events(const json_value *root, const char *ph, const char *name) {
    const json_value *events = json_get(root, "traceEvents");
    size_t n = 0;
    for (size_t i = 0; i < events->count; i++) {
        const json_value *e = &events->items[i];
        if (json_is_string(json_get(e, "ph"), ph) && (!name || json_is_string(json_get(e, "name"), name)))
            n++;
    }
    return n;
}

static double number_member(const json_value *object, const char *key) {
    const json_value *v = json_get(object, key);
    cr_assert(v && v->type == JSON_NUMBER, "no number '%s'", key);
    return v->number;
}

Test(observe_trace, off_records_nothing) {
    start(2);
    for (int i = 0; i < 5; i++) frame_with_jobs(40, 64);
    kiln_trace_stats s = trace_stats();
    cr_assert(!s.enabled);
    cr_assert_eq(s.recorded, 0);
    cr_assert_eq(s.rings, 0, "no ring is allocated while tracing is off");
    json_value *root = trace_json();
    const json_value *events = json_get(root, "traceEvents");
    cr_assert_eq(events->count, 1, "only the process name");
    cr_assert_eq(count_events(root, "M", "process_name"), 1);
    cr_assert_eq(u64_member(member(root, "otherData", JSON_OBJECT), "recorded"), 0);
    json_free(root);
    assert_no_log();
}

Test(observe_trace, jobs_frames_counters_and_thread_names) {
    start(2);
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "sparks", .size = 16 });
    void *objects[5];
    for (int i = 0; i < 5; i++) objects[i] = kiln_pool_alloc(main_ctx, pool);
    frame_with_jobs(10, 0);   /* before tracing: not recorded */
    kiln_trace_enable(rt, true);
    enum { FRAMES = 6, JOBS = 50 };
    for (int i = 0; i < FRAMES; i++) frame_with_jobs(JOBS, 64);
    kiln_trace_enable(rt, false);
    frame_with_jobs(10, 0);   /* after: not recorded */

    kiln_trace_stats s = trace_stats();
    cr_assert(!s.enabled);
    cr_assert_eq(s.dropped, 0);
    cr_assert_geq(s.rings, 1);
    json_value *root = trace_json();
    const json_value *events = json_get(root, "traceEvents");
    char fn[32];
    snprintf(fn, sizeof fn, "0x%" PRIxPTR, (uintptr_t)count_job);

    /* the frames: begin and end instants, and a span per frame, on the driver */
    cr_assert_eq(count_events(root, "i", "frame begin"), FRAMES);
    cr_assert_eq(count_events(root, "i", "frame end"), FRAMES);
    double frame_begin[FRAMES + 3] = { 0 }, frame_end[FRAMES + 3] = { 0 };
    for (size_t i = 0; i < events->count; i++) {
        const json_value *e = &events->items[i];
        const json_value *name = json_get(e, "name");
        if (!json_is_string(json_get(e, "ph"), "X") || strncmp(name->string, "frame ", 6) != 0)
            continue;
        uint64_t f = u64_member(member(e, "args", JSON_OBJECT), "frame");
        cr_assert(f >= 2 && f <= FRAMES + 1, "frame %" PRIu64 " was not traced", f);
        cr_assert_eq(u64_member(e, "tid"), 3, "frames are on the driver's thread");
        frame_begin[f] = number_member(e, "ts");
        frame_end[f] = frame_begin[f] + number_member(e, "dur");
    }
    for (int f = 2; f <= FRAMES + 1; f++) cr_assert_gt(frame_end[f], 0, "no span for frame %d", f);

    /* the jobs: one complete event each, inside the span of a frame */
    size_t jobs = 0;
    for (size_t i = 0; i < events->count; i++) {
        const json_value *e = &events->items[i];
        if (!json_is_string(json_get(e, "cat"), "job")) continue;
        jobs++;
        cr_assert(json_is_string(json_get(e, "ph"), "X"));
        cr_assert(json_is_string(json_get(member(e, "args", JSON_OBJECT), "fn"), fn));
        uint64_t tid = u64_member(e, "tid");
        cr_assert(tid >= 1 && tid <= 3, "tid %" PRIu64 " is not a context id", tid);
        double ts = number_member(e, "ts"), end = ts + number_member(e, "dur");
        bool inside = false;
        for (int f = 2; f <= FRAMES + 1; f++) inside |= ts >= frame_begin[f] && end <= frame_end[f];
        cr_assert(inside, "a job at %.3f us lies outside every traced frame", ts);
    }
    cr_assert_eq(jobs, FRAMES * JOBS, "one event per job run");
    cr_assert_eq(count_events(root, "X", NULL), FRAMES * JOBS + FRAMES);

    /* the counters at each frame end */
    cr_assert_eq(count_events(root, "C", "frame bytes ctx 3"), FRAMES);
    cr_assert_eq(count_events(root, "C", "frame bytes ctx 1"), FRAMES);
    cr_assert_eq(count_events(root, "C", "jobs per frame"), FRAMES);
    cr_assert_eq(count_events(root, "C", "pool live sparks"), FRAMES);
    for (size_t i = 0; i < events->count; i++) {
        const json_value *e = &events->items[i];
        if (json_is_string(json_get(e, "name"), "pool live sparks"))
            cr_assert_eq(u64_member(member(e, "args", JSON_OBJECT), "live"), 5);
        if (json_is_string(json_get(e, "name"), "jobs per frame"))
            cr_assert_eq(u64_member(member(e, "args", JSON_OBJECT), "jobs"), JOBS);
    }

    /* the threads' names: the driver is "main ctx 3", every worker that ran a job
     * "worker N" */
    size_t named_main = 0;
    for (size_t i = 0; i < events->count; i++) {
        const json_value *e = &events->items[i];
        if (!json_is_string(json_get(e, "name"), "thread_name")) continue;
        const json_value *name = json_get(member(e, "args", JSON_OBJECT), "name");
        uint64_t tid = u64_member(e, "tid");
        char expected[32];
        snprintf(expected, sizeof expected, tid == 3 ? "main ctx %" PRIu64 : "worker %" PRIu64, tid);
        cr_assert(json_is_string(name, expected), "thread %" PRIu64 " is named '%s'", tid,
                  name ? name->string : "(none)");
        named_main += tid == 3;
    }
    cr_assert_eq(named_main, 1);
    json_free(root);
    for (int i = 0; i < 5; i++) kiln_pool_free(main_ctx, pool, objects[i]);
    kiln_pool_destroy(pool);
    assert_no_log();
}

static void noop_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
}

Test(observe_trace, the_ring_keeps_the_newest_events) {
    start(KILN_NO_WORKERS);   /* every job on the main context: one ring */
    kiln_trace_enable(rt, true);
    enum { BATCH = 1000, JOBS = 70 * BATCH };   /* more than the ring holds */
    _Static_assert(JOBS > KILN_TRACE_RING_EVENTS, "the ring must overflow");
    kiln_frame_begin(main_ctx);
    kiln_job batch[BATCH];
    for (int i = 0; i < BATCH; i++) batch[i] = (kiln_job){ noop_job, NULL };
    for (int done = 0; done < JOBS; done += BATCH) kiln_run(main_ctx, batch, BATCH, NULL);
    kiln_frame_end(main_ctx);
    /* 1 frame begin, the jobs, then the frame span, one frame-bytes and one jobs counter */
    uint64_t recorded = 1 + JOBS + 3;
    kiln_trace_stats s = trace_stats();
    cr_assert_eq(s.rings, 1);
    cr_assert_eq(s.recorded, recorded, "%" PRIu64 " events recorded, %" PRIu64 " expected",
                 s.recorded, recorded);
    cr_assert_eq(s.dropped, recorded - KILN_TRACE_RING_EVENTS);
    json_value *root = trace_json();
    cr_assert_eq(count_events(root, "X", NULL), KILN_TRACE_RING_EVENTS - 2, "all but 3 newest are "
                 "jobs, one of the 3 the frame span");
    cr_assert_eq(count_events(root, "i", "frame begin"), 0, "the oldest event was dropped");
    cr_assert_eq(count_events(root, "i", "frame end"), 1);
    const json_value *other = member(root, "otherData", JSON_OBJECT);
    cr_assert_eq(u64_member(other, "dropped"), s.dropped);
    cr_assert_eq(u64_member(other, "ring_events"), KILN_TRACE_RING_EVENTS);
    json_free(root);
    assert_no_log();
}

Test(observe_trace, write_to_a_path_and_bad_input) {
    start(1);
    kiln_trace_enable(rt, true);
    frame_with_jobs(8, 0);
    char path[] = "/tmp/kiln-trace-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert(kiln_trace_write(rt, path));
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    static char text[1 << 20];
    size_t size = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    unlink(path);
    text[size] = '\0';
    json_value *root = parse_or_fail(text);
    cr_assert_eq(count_events(root, "X", NULL), 8 + 1);
    json_free(root);
    assert_no_log();

    cr_assert(!kiln_trace_write(rt, "/nonexistent-dir/trace.json"));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_TRACE_WRITE_FAILED), 1, "%s", recorded_summary(rec));
    cr_assert(!kiln_trace_write(rt, NULL));
    cr_assert(!kiln_trace_write_file(rt, NULL));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_TRACE_NULL_PATH), 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_TRACE_NULL_FILE), 1);
    kiln_trace_stats s;
    cr_assert(!kiln_trace_stats_get(rt, NULL));
    stderr_capture cap;
    stderr_capture_begin(&cap);
    cr_assert(!kiln_trace_stats_get(NULL, &s));
    kiln_trace_enable(NULL, true);
    cr_assert(!kiln_trace_write(NULL, "x"));
    free(stderr_capture_end(&cap));
}
