/* tests/test_log.c — base/log and the item list: every message is "ITEM: details" at
 * its item's level, long messages are cut at 511 bytes, misuse is an error and counted,
 * with no sink a message goes to stderr as one "kiln <level>: ..." line, every item of
 * KILN_LOG_ITEMS has a unique name that round-trips and a valid level, and desc.log_item
 * receives each message with its id. */
#define _DEFAULT_SOURCE   /* pthread barriers, sysconf */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "recording_log.h"

static recording_log *rec;

static void setup(void) { rec = recording_log_new(); }
static void teardown(void) { recording_log_free(rec); rec = NULL; }
TestSuite(log, .init = setup, .fini = teardown);

/* A sink into rec, as a runtime's is: both callbacks, user rec. */
static kiln_log_sink recording_sink(_Atomic uint64_t *misuse) {
    return (kiln_log_sink){ .fn = recording_log_fn, .user = rec, .misuse = misuse,
                            .item_fn = recording_log_item_fn };
}

Test(log, message_is_item_colon_details) {
    kiln_log_sink sink = recording_sink(NULL);
    kiln_log(&sink, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED, "arena '%s': %d bytes", "level", 42);
    cr_assert_eq(recorded_count(rec), 1);
    cr_assert_str_eq(rec->messages[0].text, "FRAME_BUDGET_EXCEEDED: arena 'level': 42 bytes");
    cr_assert_eq(rec->messages[0].level, KILN_LOG_WARN, "the item's level in the list");
    cr_assert_eq(rec->messages[0].item, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 1);
    kiln_log(&sink, KILN_LOGITEM_OS_MAP_FAILED, "%s", "");
    cr_assert_str_eq(rec->messages[1].text, "OS_MAP_FAILED: ");
    cr_assert_eq(rec->messages[1].level, KILN_LOG_ERROR);
    cr_assert_eq(rec->unpaired, 0);
}

Test(log, long_messages_are_cut_at_511_bytes) {
    kiln_log_sink sink = recording_sink(NULL);
    char details[2000];
    memset(details, 'x', sizeof details - 1);
    details[sizeof details - 1] = '\0';
    kiln_log(&sink, KILN_LOGITEM_TRACE_WRITE_FAILED, "%s", details);
    cr_assert_eq(recorded_count(rec), 1);
    cr_assert_eq(strlen(rec->messages[0].text), 511);
    cr_assert_eq(strncmp(rec->messages[0].text, "TRACE_WRITE_FAILED: xxx", 23), 0);
    cr_assert_eq(rec->messages[0].item, KILN_LOGITEM_TRACE_WRITE_FAILED,
                 "log_item gets the same cut text");
}

Test(log, misuse_is_an_error_and_counted) {
    _Atomic uint64_t misuse = 0;
    kiln_log_sink sink = recording_sink(&misuse);
    kiln_log_misuse(&sink, KILN_LOGITEM_POOL_NULL, "call %d", 1);
    kiln_log_misuse(&sink, KILN_LOGITEM_POOL_NULL, "call %d", 2);
    kiln_log(&sink, KILN_LOGITEM_POOL_OUT_OF_MEMORY, "refused");
    cr_assert_eq(atomic_load(&misuse), 2);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_POOL_NULL, KILN_LOG_ERROR), 2);
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_POOL_NULL), "POOL_NULL: call 2");
    kiln_log_sink uncounted = recording_sink(NULL);
    kiln_log_misuse(&uncounted, KILN_LOGITEM_POOL_NULL, "not counted");
    cr_assert_eq(atomic_load(&misuse), 2);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_NULL), 3);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_OUT_OF_MEMORY), 1);
}

Test(log, no_sink_writes_one_stderr_line) {
    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_log(NULL, KILN_LOGITEM_HANDLES_FULL, "details %d", 7);
    kiln_log_misuse(NULL, KILN_LOGITEM_ARENA_NULL, "more");
    kiln_log_sink no_fn = { 0 };
    kiln_log(&no_fn, KILN_LOGITEM_OS_MAP_FAILED, "x");
    kiln_log_stderr(NULL, KILN_LOG_INFO, "THIRD: y");
    kiln_log_stderr(NULL, KILN_LOG_DEBUG, "FOURTH: z");
    char *text = stderr_capture_end(&cap);
    cr_assert_str_eq(text, "kiln warn: HANDLES_FULL: details 7\nkiln error: ARENA_NULL: more\n"
                           "kiln error: OS_MAP_FAILED: x\nkiln info: THIRD: y\n"
                           "kiln debug: FOURTH: z\n");
    free(text);
}

/* Without fn, a sink still has its item_fn called, after the stderr line. */
Test(log, item_fn_without_fn_follows_stderr) {
    kiln_log_sink sink = { .user = rec, .item_fn = recording_log_item_fn };
    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_log(&sink, KILN_LOGITEM_HANDLES_FULL, "full");
    char *text = stderr_capture_end(&cap);
    cr_assert_str_eq(text, "kiln warn: HANDLES_FULL: full\n");
    free(text);
    cr_assert_eq(recorded_count(rec), 0, "recording_log_item_fn only names what log kept");
    cr_assert_eq(rec->unpaired, 1, "the call came, with nothing logged to pair it with");
}

/* ---------- the list ---------- */

/* Every item's name round-trips, is unique, is the spelling of its enum constant, and
 * its level is one of kiln_log_level's; NONE and values out of range have none. */
Test(log, every_item_name_round_trips) {
#define ITEM_SPELLING(name, level, meaning) #name,
    static const char *const spelled[] = { KILN_LOG_ITEMS(ITEM_SPELLING) };
#undef ITEM_SPELLING
    size_t count = sizeof spelled / sizeof spelled[0];
    cr_assert_eq(count, (size_t)KILN_LOGITEM_COUNT - 1, "one constant per item, and NONE");
    for (int i = KILN_LOGITEM_NONE + 1; i < KILN_LOGITEM_COUNT; i++) {
        kiln_log_item item = (kiln_log_item)i;
        const char *name = kiln_log_item_name(item);
        cr_assert_not_null(name, "item %d has no name", i);
        cr_expect_str_eq(name, spelled[i - 1], "item %d", i);
        kiln_log_level level = kiln_log_item_level(item);
        cr_expect(level == KILN_LOG_DEBUG || level == KILN_LOG_INFO || level == KILN_LOG_WARN ||
                  level == KILN_LOG_ERROR, "%s: level %d", name, (int)level);
        cr_expect_gt(strlen(name), 0);
        for (const char *c = name; *c; c++)
            cr_expect((*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_',
                      "%s: a name is capitals, digits and _", name);
        for (int j = KILN_LOGITEM_NONE + 1; j < i; j++)
            cr_expect_str_neq(name, kiln_log_item_name((kiln_log_item)j), "%s twice", name);
    }
    cr_expect_str_eq(kiln_log_item_name(KILN_LOGITEM_ARENA_NULL), "ARENA_NULL");
    cr_expect_eq(kiln_log_item_level(KILN_LOGITEM_ARENA_NULL), KILN_LOG_ERROR);
    cr_expect_eq(kiln_log_item_level(KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), KILN_LOG_WARN);
    cr_expect_null(kiln_log_item_name(KILN_LOGITEM_NONE));
    cr_expect_null(kiln_log_item_name(KILN_LOGITEM_COUNT));
    cr_expect_null(kiln_log_item_name((kiln_log_item)-1));
    cr_expect_eq(kiln_log_item_level(KILN_LOGITEM_NONE), KILN_LOG_DEBUG);
    cr_expect_eq(kiln_log_item_level(KILN_LOGITEM_COUNT), KILN_LOG_DEBUG);
}

/* Every item's message carries its name and its level, through a real sink. */
Test(log, every_item_is_delivered_with_its_name_and_level) {
    kiln_log_sink sink = recording_sink(NULL);
    for (int i = KILN_LOGITEM_NONE + 1; i < KILN_LOGITEM_COUNT; i++)
        kiln_log(&sink, (kiln_log_item)i, "details");
    cr_assert_eq(recorded_count(rec), (size_t)KILN_LOGITEM_COUNT - 1);
    cr_assert_eq(rec->unpaired, 0);
    for (int i = KILN_LOGITEM_NONE + 1; i < KILN_LOGITEM_COUNT; i++) {
        const recorded_message *m = &rec->messages[i - 1];
        char want[128];
        snprintf(want, sizeof want, "%s: details", kiln_log_item_name((kiln_log_item)i));
        cr_expect_str_eq(m->text, want);
        cr_expect_eq(m->item, (kiln_log_item)i);
        cr_expect_eq(m->level, kiln_log_item_level((kiln_log_item)i), "%s", want);
    }
}

/* ---------- desc.log_item ---------- */

typedef struct item_seen {
    _Atomic int         calls;
    _Atomic int         wrong_user;
    kiln_log_item       item;
    kiln_log_level      level;
    char                text[600];
    const char         *order[4];   /* which callback ran, in order */
    int                 order_count;
} item_seen;

static item_seen seen;

static void seen_log(void *user, kiln_log_level level, const char *message) {
    (void)level;
    (void)message;
    if (user != &seen) atomic_fetch_add(&seen.wrong_user, 1);
    if (seen.order_count < 4) seen.order[seen.order_count++] = "log";
}

static void seen_item(void *user, kiln_log_level level, kiln_log_item item, const char *message) {
    if (user != &seen) atomic_fetch_add(&seen.wrong_user, 1);
    atomic_fetch_add(&seen.calls, 1);
    seen.item = item;
    seen.level = level;
    snprintf(seen.text, sizeof seen.text, "%s", message);
    if (seen.order_count < 4) seen.order[seen.order_count++] = "log_item";
}

static void seen_hook(void *user, const char *message) {
    (void)user;
    (void)message;
    if (seen.order_count < 4) seen.order[seen.order_count++] = "error_hook";
}

/* A refused call reaches desc.log_item with its id, the level and the text desc.log
 * gets, with desc.log_user; the order is log, log_item, error_hook. */
Test(log, desc_log_item_receives_the_id_of_a_refused_call) {
    memset(&seen, 0, sizeof seen);
    kiln_desc desc = { .worker_count = KILN_NO_WORKERS, .log = seen_log, .log_user = &seen,
                       .log_item = seen_item, .error_hook = seen_hook };
    kiln_runtime *rt = kiln_create(&desc);
    cr_assert_not_null(rt);
    cr_assert_eq(kiln_runtime_desc(rt).log_item, seen_item);
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert_null(kiln_arena_alloc(a, 8, 24));
    cr_assert_eq(atomic_load(&seen.calls), 1);
    cr_assert_eq(seen.item, KILN_LOGITEM_ARENA_BAD_ALIGN);
    cr_assert_eq(seen.level, KILN_LOG_ERROR);
    cr_assert_str_eq(seen.text, "ARENA_BAD_ALIGN: arena 'level': alignment 24 is not a power "
                                "of two from 1 to 65536");
    cr_assert_eq(seen.order_count, 3);
    cr_assert_str_eq(seen.order[0], "log");
    cr_assert_str_eq(seen.order[1], "log_item");
    cr_assert_str_eq(seen.order[2], "error_hook");
    kiln_arena_destroy(a);
    kiln_destroy(rt);
    cr_assert_eq(atomic_load(&seen.wrong_user), 0);
}

/* With desc.log NULL the stderr default still writes the line, and log_item gets the
 * message too: log_item adds to desc.log, it does not replace it. */
Test(log, desc_log_item_keeps_the_stderr_default) {
    memset(&seen, 0, sizeof seen);
    kiln_desc desc = { .worker_count = KILN_NO_WORKERS, .log_user = &seen, .log_item = seen_item };
    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_runtime *rt = kiln_create(&desc);
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_frame_end(ctx);
    kiln_detach(ctx);
    kiln_destroy(rt);
    char *text = stderr_capture_end(&cap);
    cr_assert_str_eq(text, "kiln error: FRAME_END_WITHOUT_BEGIN: kiln_frame_end: context 1 has no "
                           "open frame; ignored\n");
    free(text);
    cr_assert_eq(atomic_load(&seen.calls), 1);
    cr_assert_eq(seen.item, KILN_LOGITEM_FRAME_END_WITHOUT_BEGIN);
}

/* kiln_create's own refusals (before the runtime exists) reach log_item too. */
Test(log, desc_log_item_receives_create_refusals) {
    kiln_desc desc = recording_desc(rec);
    desc.block_size = 3;
    cr_assert_null(kiln_create(&desc));
    desc.block_size = 0;
    desc.worker_count = KILN_MAX_WORKERS + 1;
    cr_assert_null(kiln_create(&desc));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_BLOCK_SIZE_INVALID), 1, "%s", recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_WORKER_COUNT_INVALID), 1, "%s", recorded_summary(rec));
    cr_assert_eq(rec->unpaired, 0);
}

Test(log, runtime_messages_go_to_desc_log) {
    kiln_desc desc = recording_desc(rec);
    kiln_runtime *rt = kiln_create(&desc);
    kiln_arena *a = kiln_arena_create(rt, "level");
    stderr_capture cap;
    stderr_capture_begin(&cap);
    cr_assert_null(kiln_arena_alloc(a, 8, 3));
    char *text = stderr_capture_end(&cap);
    cr_assert_str_eq(text, "", "a runtime with a log writes nothing to stderr");
    free(text);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_BAD_ALIGN), 1);
    kiln_arena_destroy(a);
    kiln_destroy(rt);
}

Test(log, default_sink_is_stderr) {
    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_runtime *rt = kiln_create(NULL);
    kiln_arena *a = kiln_arena_create(rt, "level");
    kiln_arena_alloc(a, 8, 24);
    kiln_arena_destroy(a);
    kiln_destroy(rt);
    char *text = stderr_capture_end(&cap);
    cr_assert_str_eq(text, "kiln error: ARENA_BAD_ALIGN: arena 'level': alignment 24 is not a power "
                           "of two from 1 to 65536\n");
    free(text);
}

/* ---------- a log callback may read kiln's figures ---------- */

/* The logger of these tests reads every figure kiln has, from inside the callback:
 * kiln_stats_print walks the runtime, every arena, pool, handle table and context. Each
 * message it sees is counted by item. */
static kiln_runtime *reading_rt;
static FILE        *reading_sink;
static _Atomic int  reading_seen[KILN_LOGITEM_COUNT];

static void reading_log(void *user, kiln_log_level level, kiln_log_item item, const char *message) {
    (void)user;
    (void)level;
    (void)message;
    if (item > KILN_LOGITEM_NONE && item < KILN_LOGITEM_COUNT) atomic_fetch_add(&reading_seen[item], 1);
    kiln_stats s;
    kiln_stats_get(reading_rt, &s);
    kiln_stats_print(reading_rt, reading_sink);
}

static kiln_runtime *reading_runtime(uint32_t debug, size_t memory_limit) {
    memset(reading_seen, 0, sizeof reading_seen);
    reading_sink = fopen("/dev/null", "w");
    cr_assert_not_null(reading_sink);
    kiln_desc desc = { .worker_count = KILN_NO_WORKERS, .debug = debug, .memory_limit = memory_limit,
                       .log = recording_log_fn, .log_user = rec, .log_item = reading_log };
    reading_rt = kiln_create(&desc);
    cr_assert_not_null(reading_rt);
    return reading_rt;
}

static void reading_done(void) {
    kiln_destroy(reading_rt);
    reading_rt = NULL;
    fclose(reading_sink);
}

/* Every message that kiln logs while it holds its registry (destroying a pool or a
 * table with live objects, the frame-end guard audit, the leak lists by site) reaches a
 * callback that reads the stats, and the call returns. A deadlock fails by the timeout. */
Test(log, a_callback_may_read_stats_while_kiln_destroys_and_audits, .timeout = 120) {
    kiln_runtime *rt = reading_runtime(KILN_DEBUG_GUARDS | KILN_DEBUG_SITES, 0);
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "live", .size = 48 });
    char *obj = kiln_pool_alloc_at(ctx, pool, "site.c", 1);
    cr_assert_not_null(obj);
    kiln_pool_destroy(pool);   /* POOL_OBJECTS_LIVE, POOL_LEAK_SITE under the registry */
    cr_assert_geq(atomic_load(&reading_seen[KILN_LOGITEM_POOL_OBJECTS_LIVE]), 1);
    cr_assert_geq(atomic_load(&reading_seen[KILN_LOGITEM_POOL_LEAK_SITE]), 1);

    kiln_handles *table = kiln_handles_create(rt, &(kiln_handles_desc){ .name = "live", .item_size = 16,
                                                                        .capacity = 8 });
    cr_assert_not_null(table);
    void *item;
    kiln_handle h = kiln_handle_alloc(ctx, table, &item);
    cr_assert_neq(h.bits, 0);
    kiln_handles_destroy(table);   /* HANDLES_ITEMS_LIVE */
    cr_assert_geq(atomic_load(&reading_seen[KILN_LOGITEM_HANDLES_ITEMS_LIVE]), 1);

    /* The frame-end audit finds a damaged guard of a pool object and of an arena
     * allocation the driver owns. */
    pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "audited", .size = 48 });
    kiln_arena *arena = kiln_arena_create(rt, "audited");
    kiln_frame_begin(ctx);
    obj = kiln_pool_alloc(ctx, pool);
    char *bytes = kiln_arena_alloc(arena, 40, 8);
    cr_assert(obj && bytes);
    obj[48] = 0x55;     /* past the object: its back guard */
    bytes[40] = 0x55;
    kiln_frame_end(ctx);
    cr_assert_geq(atomic_load(&reading_seen[KILN_LOGITEM_POOL_GUARD_DAMAGED]), 1);
    cr_assert_geq(atomic_load(&reading_seen[KILN_LOGITEM_ARENA_GUARD_DAMAGED]), 1);
    kiln_pool_free(ctx, pool, obj);
    kiln_arena_destroy(arena);
    kiln_pool_destroy(pool);
    kiln_detach(ctx);
    reading_done();
}

/* The limits and refusals an engine meets in a frame reach the same callback. */
Test(log, a_callback_may_read_stats_at_limits_and_refusals, .timeout = 120) {
    kiln_runtime *rt = reading_runtime(0, (size_t)16 << 20);
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_arena *arena = kiln_arena_create(rt, "big");
    cr_assert_null(kiln_arena_alloc(arena, (size_t)64 << 20, 8));  /* MEMORY_LIMIT_REACHED */
    cr_assert_geq(atomic_load(&reading_seen[KILN_LOGITEM_MEMORY_LIMIT_REACHED]), 1);
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "one", .size = 16, .capacity = 1 });
    void *a = kiln_pool_alloc(ctx, pool);
    cr_assert_not_null(a);
    cr_assert_null(kiln_pool_alloc(ctx, pool));                    /* POOL_CAPACITY_REACHED */
    cr_assert_geq(atomic_load(&reading_seen[KILN_LOGITEM_POOL_CAPACITY_REACHED]), 1);
    kiln_handles *table = kiln_handles_create(rt, &(kiln_handles_desc){ .name = "one", .item_size = 8,
                                                                        .capacity = 1 });
    void *item;
    kiln_handle h = kiln_handle_alloc(ctx, table, &item);
    cr_assert_neq(h.bits, 0);
    cr_assert_eq(kiln_handle_alloc(ctx, table, &item).bits, 0);    /* HANDLES_FULL */
    cr_assert_geq(atomic_load(&reading_seen[KILN_LOGITEM_HANDLES_FULL]), 1);
    kiln_handle_free(ctx, table, h);
    kiln_handles_destroy(table);
    kiln_pool_free(ctx, pool, a);
    kiln_pool_destroy(pool);
    kiln_arena_destroy(arena);
    kiln_detach(ctx);
    reading_done();
}

/* What a callback that changes kiln meets: every call that creates, destroys,
 * attaches, detaches or drives the frame clock is refused with LOG_CALLBACK_CALL (on
 * stderr, never back into the callback), counted, with its safe return; the call that
 * logged finishes, and everything works again once the callback has returned. */
static struct {
    kiln_runtime *rt;
    kiln_ctx     *ctx;
    kiln_pool    *pool;
    kiln_arena   *arena;
    kiln_handles *table;
    bool          done;
    bool          all_refused;
} changer;

static void changing_log(void *user, kiln_log_level level, kiln_log_item item, const char *message) {
    (void)user;
    (void)level;
    (void)item;
    (void)message;
    if (changer.done) return;
    changer.done = true;
    uint64_t frame = kiln_frame_number(changer.rt);
    bool refused = kiln_pool_create(changer.rt, &(kiln_pool_desc){ .name = "new", .size = 8 }) == NULL;
    refused &= kiln_arena_create(changer.rt, "new") == NULL;
    refused &= kiln_handles_create(changer.rt, &(kiln_handles_desc){ .item_size = 8, .capacity = 4 }) == NULL;
    refused &= kiln_attach(changer.rt) == NULL;
    kiln_pool_destroy(changer.pool);
    kiln_arena_destroy(changer.arena);
    kiln_handles_destroy(changer.table);
    refused &= kiln_frame_begin(changer.ctx) == frame;
    kiln_frame_end(changer.ctx);
    kiln_detach(changer.ctx);
    kiln_destroy(changer.rt);
    refused &= kiln_create(&(kiln_desc){ .worker_count = KILN_NO_WORKERS }) == NULL;
    changer.all_refused = refused;
}

Test(log, a_callback_that_changes_kiln_is_refused, .timeout = 120) {
    memset(&changer, 0, sizeof changer);
    kiln_desc desc = { .worker_count = KILN_NO_WORKERS, .log = recording_log_fn, .log_user = rec,
                       .log_item = changing_log };
    changer.rt = kiln_create(&desc);
    cr_assert_not_null(changer.rt);
    changer.ctx = kiln_attach(changer.rt);
    changer.pool = kiln_pool_create(changer.rt, &(kiln_pool_desc){ .name = "kept", .size = 8 });
    changer.arena = kiln_arena_create(changer.rt, "kept");
    changer.table = kiln_handles_create(changer.rt, &(kiln_handles_desc){ .item_size = 8, .capacity = 4 });
    cr_assert(changer.ctx && changer.pool && changer.arena && changer.table);
    kiln_stats before;
    cr_assert(kiln_stats_get(changer.rt, &before));

    stderr_capture cap;
    stderr_capture_begin(&cap);
    cr_assert_null(kiln_arena_alloc(changer.arena, 8, 3));   /* ARENA_BAD_ALIGN: the callback runs */
    char *err = stderr_capture_end(&cap);
    cr_assert(changer.done);
    cr_assert(changer.all_refused, "a create, attach or frame_begin went ahead: %s", err);
    cr_assert_eq(count_substrings(err, "LOG_CALLBACK_CALL: "), 12, "%s", err);
    free(err);

    kiln_stats after;
    cr_assert(kiln_stats_get(changer.rt, &after));
    /* kiln_create's refusal names no runtime: counted nowhere. */
    cr_assert_eq(after.api_errors, before.api_errors + 12, "the bad align and the 11 refusals");
    cr_assert_eq(after.pools, before.pools);
    cr_assert_eq(after.arenas, before.arenas);
    cr_assert_eq(after.handle_tables, before.handle_tables);
    cr_assert_eq(after.contexts, before.contexts);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_LOG_CALLBACK_CALL), 0, "refusals never reach desc.log");

    /* Outside the callback everything works. */
    cr_assert_not_null(kiln_arena_alloc(changer.arena, 8, 8));
    kiln_frame_begin(changer.ctx);
    kiln_frame_end(changer.ctx);
    kiln_handles_destroy(changer.table);
    kiln_arena_destroy(changer.arena);
    kiln_pool_destroy(changer.pool);
    kiln_detach(changer.ctx);
    kiln_destroy(changer.rt);
}

/* A callback that reads the figures of the objects kiln_destroy is tearing down, at each
 * of its messages, reads records that still exist (ASan reports a read of freed ones). */
static struct {
    kiln_pool    *pool;
    kiln_handles *table;
    kiln_arena   *arena;
    int           reads;
} teardown_reader;

static void teardown_log(void *user, kiln_log_level level, kiln_log_item item, const char *message) {
    recording_log_item_fn(user, level, item, message);   /* rec pairs it with desc.log's */
    kiln_pool_stats ps;
    kiln_handles_stats hs;
    kiln_arena_stats as;
    kiln_pool_stats_get(teardown_reader.pool, &ps);
    kiln_handles_stats_get(teardown_reader.table, &hs);
    kiln_arena_stats_get(teardown_reader.arena, &as);
    teardown_reader.reads++;
}

Test(log, a_callback_may_read_objects_kiln_destroy_tears_down) {
    memset(&teardown_reader, 0, sizeof teardown_reader);
    kiln_desc desc = { .worker_count = KILN_NO_WORKERS, .debug = KILN_DEBUG_SITES,
                       .log = recording_log_fn, .log_user = rec, .log_item = teardown_log };
    kiln_runtime *rt = kiln_create(&desc);
    cr_assert_not_null(rt);
    kiln_ctx *ctx = kiln_attach(rt);
    teardown_reader.pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "left", .size = 16 });
    teardown_reader.table = kiln_handles_create(rt, &(kiln_handles_desc){ .name = "left", .item_size = 8,
                                                                          .capacity = 16 });
    teardown_reader.arena = kiln_arena_create(rt, "left");
    cr_assert(teardown_reader.pool && teardown_reader.table && teardown_reader.arena);
    cr_assert_not_null(kiln_pool_alloc(ctx, teardown_reader.pool));
    cr_assert_not_null(kiln_arena_alloc(teardown_reader.arena, 64, 8));
    kiln_destroy(rt);   /* the context, the pool, the table and the arena are all still alive */
    cr_assert_geq(teardown_reader.reads, 4, "a message for each of them");
    cr_assert_eq(count_items(rec, KILN_LOGITEM_CONTEXT_STILL_ATTACHED), 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_STILL_ALIVE), 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_STILL_ALIVE), 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_STILL_ALIVE), 1);
}

/* An error hook that makes a refused call again and again returns: the message of the
 * call inside the hook goes to stderr only, never back into the hook. */
static kiln_runtime *nesting_rt;
static int           nesting_depth, nesting_deepest, nesting_calls;

static void nesting_hook(void *user, const char *message) {
    (void)user;
    (void)message;
    nesting_calls++;
    if (++nesting_depth > nesting_deepest) nesting_deepest = nesting_depth;
    kiln_stats_pools(nesting_rt, NULL, 1);   /* STATS_NULL_OUT, every time */
    nesting_depth--;
}

Test(log, a_refusal_inside_a_callback_never_reenters_it) {
    nesting_depth = nesting_deepest = nesting_calls = 0;
    kiln_desc desc = { .worker_count = KILN_NO_WORKERS, .log = recording_log_fn, .log_user = rec,
                       .log_item = recording_log_item_fn, .error_hook = nesting_hook,
                       .log_every_repeat = true };   /* the inner refusal repeats the outer */
    nesting_rt = kiln_create(&desc);
    cr_assert_not_null(nesting_rt);
    stderr_capture cap;
    stderr_capture_begin(&cap);
    cr_assert_eq(kiln_stats_pools(nesting_rt, NULL, 1), 0);
    char *err = stderr_capture_end(&cap);
    cr_assert_eq(nesting_calls, 1);
    cr_assert_eq(nesting_deepest, 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_STATS_NULL_OUT), 1, "the outer refusal only");
    cr_assert_eq(count_substrings(err, "STATS_NULL_OUT: "), 1, "the inner one, on stderr: %s", err);
    free(err);
    kiln_stats s;
    cr_assert(kiln_stats_get(nesting_rt, &s));
    cr_assert_eq(s.api_errors, 2, "both counted");
    kiln_destroy(nesting_rt);
}
