/* tests/test_log.c — base/log: every message is "ITEM: details", long messages are
 * cut at 511 bytes, misuse is an error and counted, and with no sink a message goes
 * to stderr as one "kiln <level>: ..." line. */
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

Test(log, message_is_item_colon_details) {
    kiln_log_sink sink = { recording_log_fn, rec, NULL, NULL, NULL };
    kiln_log(&sink, KILN_LOG_WARN, "SOME_ITEM", "arena '%s': %d bytes", "level", 42);
    cr_assert_eq(recorded_count(rec), 1);
    cr_assert_str_eq(rec->messages[0].text, "SOME_ITEM: arena 'level': 42 bytes");
    cr_assert_eq(rec->messages[0].level, KILN_LOG_WARN);
    cr_assert_eq(count_items(rec, "SOME_ITEM"), 1);
    cr_assert_eq(count_items(rec, "SOME"), 0, "items match whole, not as a prefix");
    kiln_log(&sink, KILN_LOG_DEBUG, "A", "%s", "");
    cr_assert_str_eq(rec->messages[1].text, "A: ");
    cr_assert_eq(rec->messages[1].level, KILN_LOG_DEBUG);
}

Test(log, long_messages_are_cut_at_511_bytes) {
    kiln_log_sink sink = { recording_log_fn, rec, NULL, NULL, NULL };
    char details[2000];
    memset(details, 'x', sizeof details - 1);
    details[sizeof details - 1] = '\0';
    kiln_log(&sink, KILN_LOG_INFO, "LONG", "%s", details);
    cr_assert_eq(recorded_count(rec), 1);
    cr_assert_eq(strlen(rec->messages[0].text), 511);
    cr_assert_eq(strncmp(rec->messages[0].text, "LONG: xxx", 9), 0);
}

Test(log, misuse_is_an_error_and_counted) {
    _Atomic uint64_t misuse = 0;
    kiln_log_sink sink = { recording_log_fn, rec, &misuse, NULL, NULL };
    kiln_log_misuse(&sink, "BAD_THING", "call %d", 1);
    kiln_log_misuse(&sink, "BAD_THING", "call %d", 2);
    kiln_log(&sink, KILN_LOG_ERROR, "NOT_MISUSE", "refused");
    cr_assert_eq(atomic_load(&misuse), 2);
    cr_assert_eq(count_items_at(rec, "BAD_THING", KILN_LOG_ERROR), 2);
    cr_assert_str_eq(last_item_text(rec, "BAD_THING"), "BAD_THING: call 2");
    kiln_log_sink uncounted = { recording_log_fn, rec, NULL, NULL, NULL };
    kiln_log_misuse(&uncounted, "BAD_THING", "not counted");
    cr_assert_eq(atomic_load(&misuse), 2);
    cr_assert_eq(count_items(rec, "BAD_THING"), 3);
}

Test(log, no_sink_writes_one_stderr_line) {
    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_log(NULL, KILN_LOG_WARN, "FIRST", "details %d", 7);
    kiln_log_misuse(NULL, "SECOND", "more");
    kiln_log_sink no_fn = { NULL, NULL, NULL, NULL, NULL };
    kiln_log(&no_fn, KILN_LOG_INFO, "THIRD", "x");
    kiln_log(&no_fn, KILN_LOG_DEBUG, "FOURTH", "y");
    char *text = stderr_capture_end(&cap);
    cr_assert_str_eq(text, "kiln warn: FIRST: details 7\nkiln error: SECOND: more\n"
                           "kiln info: THIRD: x\nkiln debug: FOURTH: y\n");
    free(text);
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
    cr_assert_eq(count_items(rec, "ARENA_BAD_ALIGN"), 1);
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
