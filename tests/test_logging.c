/* tests/test_logging.c — a runtime's log as the program sees it: the threshold (desc,
 * log=, kiln_log_set_level), kiln_logf from attached and unattached threads, desc.log_file
 * (log_file=) beside or in place of the default, and their refusals. */
#define _DEFAULT_SOURCE   /* setenv, mkdtemp */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recording_log.h"

static recording_log *rec;
static char dir[64];

static void setup(void) {
    rec = recording_log_new();
    unsetenv("KILN_OPTIONS");
    strcpy(dir, "/tmp/kiln-logging-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}
static void teardown(void) {
    recording_log_free(rec);
    rec = NULL;
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    cr_expect_eq(system(command), 0);
}
TestSuite(logging, .init = setup, .fini = teardown);

static kiln_runtime *create_with(const char *options) {
    kiln_desc d = recording_desc(rec);
    d.options = options;
    kiln_runtime *rt = kiln_create(&d);
    cr_assert_not_null(rt, "%s", recorded_summary(rec));
    return rt;
}

static int hook_calls;
static void count_hook(void *user, const char *message) {
    (void)user, (void)message;
    hook_calls++;
}

Test(logging, the_threshold_drops_what_is_below_it_but_not_the_error_hook) {
    kiln_desc d = recording_desc(rec);
    d.log_level = KILN_LOG_THRESHOLD_WARN;
    d.error_hook = count_hook;
    kiln_runtime *rt = kiln_create(&d);
    cr_assert_not_null(rt);
    kiln_logf(rt, KILN_LOG_INFO, "info %d", 1);
    kiln_logf(rt, KILN_LOG_WARN, "warn %d", 2);
    cr_expect_eq(recorded_count(rec), 1, "%s", recorded_summary(rec));
    cr_expect_str_eq(last_item_text(rec, KILN_LOGITEM_APP_LOG), "APP_LOG: warn 2");
    kiln_log_set_level(rt, KILN_LOG_THRESHOLD_OFF);
    cr_expect_eq(kiln_runtime_desc(rt).log_level, KILN_LOG_THRESHOLD_OFF);
    kiln_logf(rt, KILN_LOG_ERROR, "error %d", 3);
    cr_expect_null(kiln_attach_layout(rt, 0));   /* refused: HEAD_LAYOUT_MISMATCH, an ERROR */
    cr_expect_eq(recorded_count(rec), 1, "off delivers nothing: %s", recorded_summary(rec));
    cr_expect_eq(hook_calls, 2, "each ERROR still reaches the hook");
    kiln_stats s;
    cr_assert(kiln_stats_get(rt, &s));
    cr_expect_eq(s.api_errors, 1, "a refusal is counted whatever the threshold");
    kiln_log_set_level(rt, KILN_LOG_THRESHOLD_DEFAULT);
    cr_expect_eq(kiln_runtime_desc(rt).log_level, KILN_LOG_THRESHOLD_INFO);
    kiln_logf(rt, KILN_LOG_INFO, "back");
    kiln_logf(rt, KILN_LOG_DEBUG, "not at info");
    cr_expect_eq(recorded_count(rec), 2, "%s", recorded_summary(rec));
    kiln_destroy(rt);
}

Test(logging, the_default_threshold_is_info_and_log_sets_it) {
    kiln_runtime *rt = create_with("log=debug");
    kiln_logf(rt, KILN_LOG_DEBUG, "seen");
    cr_expect_eq(count_items_at(rec, KILN_LOGITEM_APP_LOG, KILN_LOG_DEBUG), 1);
    char out[KILN_OPTION_SOURCE_MAX];
    cr_assert(kiln_option_source(rt, "log", out, sizeof out));
    cr_expect_str_eq(out, "options");
    kiln_destroy(rt);
    recording_log_clear(rec);
    rt = create_with(NULL);
    cr_expect_eq(kiln_runtime_desc(rt).log_level, KILN_LOG_THRESHOLD_INFO);
    kiln_logf(rt, KILN_LOG_DEBUG, "not seen");
    kiln_logf(rt, KILN_LOG_INFO, "seen");
    cr_expect_eq(count_items(rec, KILN_LOGITEM_APP_LOG), 1, "%s", recorded_summary(rec));
    kiln_destroy(rt);
}

static void *log_from_a_plain_thread(void *arg) {
    for (int i = 0; i < 100; i++) kiln_logf(arg, KILN_LOG_WARN, "thread message %d", i);
    return NULL;
}

Test(logging, logf_from_threads_kiln_does_not_know) {
    kiln_runtime *rt = create_with(NULL);
    pthread_t threads[3];
    for (int i = 0; i < 3; i++) pthread_create(&threads[i], NULL, log_from_a_plain_thread, rt);
    for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
    cr_expect_eq(count_items_at(rec, KILN_LOGITEM_APP_LOG, KILN_LOG_WARN), 300);
    cr_expect_eq(count_items_with(rec, KILN_LOGITEM_APP_LOG, "APP_LOG: thread message 99"), 3);
    cr_expect_eq(rec->unpaired, 0);
    kiln_destroy(rt);
}

Test(logging, logf_and_set_level_refuse_bad_arguments) {
    kiln_runtime *rt = create_with(NULL);
    kiln_logf(rt, (kiln_log_level)4, "x");
    kiln_logf(rt, (kiln_log_level)-1, "x");
    cr_expect_eq(count_items(rec, KILN_LOGITEM_LOG_LEVEL_INVALID), 2);
    kiln_logf(rt, KILN_LOG_WARN, NULL);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_LOG_FORMAT_NULL), 1);
    kiln_log_set_level(rt, (kiln_log_threshold)6);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_LOG_LEVEL_INVALID), 3);
    cr_expect_eq(kiln_runtime_desc(rt).log_level, KILN_LOG_THRESHOLD_INFO, "unchanged");
    cr_expect_eq(count_items(rec, KILN_LOGITEM_APP_LOG), 0);
    kiln_stats s;
    cr_assert(kiln_stats_get(rt, &s));
    cr_expect_eq(s.api_errors, 4);
    kiln_destroy(rt);
    kiln_desc d = recording_desc(rec);
    d.log_level = (kiln_log_threshold)9;
    cr_expect_null(kiln_create(&d));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_LOG_LEVEL_INVALID), 4);
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

Test(logging, log_file_takes_the_stderr_defaults_place) {
    char path[128], options[160];
    snprintf(path, sizeof path, "%s/kiln.log", dir);
    snprintf(options, sizeof options, "workers=none,log_file=%s", path);
    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_runtime *rt = kiln_create(&(kiln_desc){ .options = options });
    cr_assert_not_null(rt);
    kiln_logf(rt, KILN_LOG_WARN, "to the file %d", 7);
    kiln_logf(rt, KILN_LOG_ERROR, "and this");
    kiln_destroy(rt);
    char *err = stderr_capture_end(&cap);
    cr_expect(strstr(err, "to the file") == NULL, "stderr: %s", err);
    free(err);
    const char *text = read_file(path);
    cr_expect(strstr(text, "kiln warn: APP_LOG: to the file 7\nkiln error: APP_LOG: and this\n") != NULL,
              "%s", text);
}

Test(logging, log_file_beside_a_callback_and_appended_to) {
    char path[128];
    snprintf(path, sizeof path, "%s/kiln.log", dir);
    for (int run = 0; run < 2; run++) {
        kiln_desc d = recording_desc(rec);
        d.log_file = path;
        kiln_runtime *rt = kiln_create(&d);
        cr_assert_not_null(rt, "%s", recorded_summary(rec));
        cr_expect_str_eq(kiln_runtime_desc(rt).log_file, path, "a copy of the path");
        kiln_logf(rt, KILN_LOG_INFO, "run %d", run);
        kiln_destroy(rt);
    }
    cr_expect_eq(count_items(rec, KILN_LOGITEM_APP_LOG), 2, "the callback gets them too");
    const char *text = read_file(path);
    cr_expect(strstr(text, "kiln info: APP_LOG: run 0\nkiln info: APP_LOG: run 1\n") != NULL, "%s", text);
}

Test(logging, a_log_file_that_cannot_be_opened_refuses_create) {
    char path[128];
    snprintf(path, sizeof path, "%s/no/such/dir/kiln.log", dir);
    kiln_desc d = recording_desc(rec);
    d.log_file = path;
    cr_expect_null(kiln_create(&d));
    cr_expect_eq(count_items_at(rec, KILN_LOGITEM_LOG_FILE_FAILED, KILN_LOG_ERROR), 1);
    cr_expect(strstr(last_item_text(rec, KILN_LOGITEM_LOG_FILE_FAILED), path) != NULL);
    char long_path[KILN_OPTION_PATH_MAX + 8];
    memset(long_path, 'a', sizeof long_path - 1);
    long_path[sizeof long_path - 1] = '\0';
    d.log_file = long_path;
    cr_expect_null(kiln_create(&d));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_OPTION_INVALID), 1, "%s", recorded_summary(rec));
}

Test(logging, an_empty_log_file_option_means_none) {
    kiln_desc d = recording_desc(rec);
    d.log_file = "/nonexistent/dir/x.log";
    d.options = "log_file=";
    kiln_runtime *rt = kiln_create(&d);
    cr_assert_not_null(rt, "%s", recorded_summary(rec));
    cr_expect_null(kiln_runtime_desc(rt).log_file);
    kiln_destroy(rt);
}
