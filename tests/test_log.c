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
