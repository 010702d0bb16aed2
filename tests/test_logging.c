/* tests/test_logging.c — a runtime's log as the program sees it: the threshold (desc,
 * log=, kiln_log_set_level), kiln_logf from attached and unattached threads, desc.log_file
 * (log_file=) beside or in place of the default, and their refusals. */
#define _DEFAULT_SOURCE   /* setenv, mkdtemp */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log_ring.h"   /* KILN_LOG_RING_MESSAGES */
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

/* The file's text; the test fails when it cannot be read. */
static const char *read_file(const char *path) {
    const char *text = read_text_file(path);
    cr_assert_not_null(text, "%s cannot be opened", path);
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

/* ---- KILN_LOG_ASYNC ---- */

static kiln_runtime *create_async(kiln_desc d) {
    d.log_mode = KILN_LOG_ASYNC;
    kiln_runtime *rt = kiln_create(&d);
    cr_assert_not_null(rt, "%s", recorded_summary(rec));
    return rt;
}

static pthread_t logging_thread;
static _Atomic int off_thread_deliveries;
static void note_thread(void *user, kiln_log_level level, const char *message) {
    if (!pthread_equal(pthread_self(), logging_thread)) off_thread_deliveries++;
    recording_log_fn(user, level, message);
}

Test(logging, async_delivers_in_order_on_the_log_thread_and_flush_waits_for_it) {
    kiln_desc d = recording_desc(rec);
    d.log = note_thread;
    d.error_hook = count_hook;
    logging_thread = pthread_self();
    kiln_runtime *rt = create_async(d);
    for (int i = 0; i < 50; i++) kiln_logf(rt, KILN_LOG_WARN, "message %d", i);
    kiln_logf(rt, KILN_LOG_ERROR, "an error");
    cr_expect_eq(hook_calls, 1, "the hook runs on the thread that hit the error, at once");
    /* kiln_log_flush on this thread delivers what the log thread has not: either may
     * deliver each message, never both, and in order. */
    kiln_log_flush(rt);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_APP_LOG), 51, "%s", recorded_summary(rec));
    for (int i = 0; i < 50; i++) {
        char want[32];
        snprintf(want, sizeof want, "APP_LOG: message %d", i);
        cr_expect_str_eq(rec->messages[i].text, want);
    }
    kiln_stats s;
    cr_assert(kiln_stats_get(rt, &s));
    cr_expect_eq(s.log_dropped, 0);
    kiln_destroy(rt);
}

Test(logging, async_log_thread_delivers_without_a_flush) {
    kiln_desc d = recording_desc(rec);
    d.log = note_thread;
    logging_thread = pthread_self();
    kiln_runtime *rt = create_async(d);
    off_thread_deliveries = 0;
    kiln_logf(rt, KILN_LOG_WARN, "by the log thread");
    while (off_thread_deliveries == 0) usleep(1000);   /* about 10 ms; no bound on a loaded machine */
    cr_expect_eq(count_items(rec, KILN_LOGITEM_APP_LOG), 1);
    kiln_destroy(rt);
}

/* The log thread is held inside the first message's delivery, so the ring fills: 255
 * more fit (the held one keeps its slot until it is delivered), the rest are dropped,
 * counted and told. */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static bool hold_entered, hold_released;
static void hold_first(void *user, kiln_log_level level, const char *message) {
    pthread_mutex_lock(&hold_lock);
    if (!hold_entered) {
        hold_entered = true;
        pthread_cond_broadcast(&hold_cond);
        while (!hold_released) pthread_cond_wait(&hold_cond, &hold_lock);
    }
    pthread_mutex_unlock(&hold_lock);
    recording_log_fn(user, level, message);
}

Test(logging, async_full_ring_drops_counts_and_tells) {
    kiln_desc d = recording_desc(rec);
    d.log = hold_first;
    kiln_runtime *rt = create_async(d);
    kiln_logf(rt, KILN_LOG_WARN, "first");
    pthread_mutex_lock(&hold_lock);
    while (!hold_entered) pthread_cond_wait(&hold_cond, &hold_lock);
    pthread_mutex_unlock(&hold_lock);
    for (int i = 0; i < 1000; i++) kiln_logf(rt, KILN_LOG_WARN, "burst %d", i);
    kiln_stats s;
    cr_assert(kiln_stats_get(rt, &s));
    cr_expect_eq(s.log_dropped, 1000 - (KILN_LOG_RING_MESSAGES - 1));
    pthread_mutex_lock(&hold_lock);
    hold_released = true;
    pthread_cond_broadcast(&hold_cond);
    pthread_mutex_unlock(&hold_lock);
    kiln_log_flush(rt);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_APP_LOG), KILN_LOG_RING_MESSAGES);
    cr_expect_eq(count_items_at(rec, KILN_LOGITEM_LOG_DROPPED, KILN_LOG_WARN), 1, "%s", recorded_summary(rec));
    cr_expect(strstr(last_item_text(rec, KILN_LOGITEM_LOG_DROPPED), "745 messages dropped") != NULL,
              "%s", last_item_text(rec, KILN_LOGITEM_LOG_DROPPED));
    kiln_logf(rt, KILN_LOG_WARN, "after");
    kiln_log_flush(rt);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_LOG_DROPPED), 1, "told once per round that saw drops");
    kiln_destroy(rt);
}

static void *log_burst(void *arg) {
    for (int i = 0; i < 2000; i++) kiln_logf(arg, KILN_LOG_WARN, "burst %d", i);
    return NULL;
}

static _Atomic size_t app_messages;
static void count_app(void *user, kiln_log_level level, kiln_log_item item, const char *message) {
    (void)user, (void)level, (void)message;
    if (item == KILN_LOGITEM_APP_LOG) app_messages++;
}

Test(logging, async_from_many_threads_loses_nothing_uncounted) {
    kiln_desc d = recording_desc(rec);
    d.worker_count = 2;
    d.log_item = count_app;
    kiln_runtime *rt = create_async(d);
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) pthread_create(&threads[i], NULL, log_burst, rt);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    kiln_log_flush(rt);
    kiln_stats s;
    cr_assert(kiln_stats_get(rt, &s));
    size_t delivered = app_messages;
    cr_expect_eq(delivered + s.log_dropped, 8000, "delivered %zu, dropped %llu", delivered,
                 (unsigned long long)s.log_dropped);
    kiln_destroy(rt);
}

Test(logging, async_by_option_with_a_file_and_the_exit_report) {
    char path[128], options[200];
    snprintf(path, sizeof path, "%s/async.log", dir);
    snprintf(options, sizeof options, "log_mode=async,log_file=%s,stats=exit", path);
    kiln_runtime *rt = create_with(options);
    cr_expect_eq(kiln_runtime_desc(rt).log_mode, KILN_LOG_ASYNC);
    kiln_logf(rt, KILN_LOG_WARN, "into the file");
    kiln_destroy(rt);   /* delivers everything left before it returns */
    const char *text = read_file(path);
    cr_expect(strstr(text, "kiln warn: APP_LOG: into the file\n") != NULL, "%s", text);
    cr_expect(strstr(text, "STATS_REPORT: kiln stats, frame 0") != NULL, "%s", text);
    cr_expect(strstr(text, "log_mode = async (options)") != NULL, "%s", text);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_STATS_REPORT), count_items_with(rec, KILN_LOGITEM_STATS_REPORT, ""));
}

static kiln_runtime *flushing_rt;
static void flush_from_callback(void *user, kiln_log_level level, const char *message) {
    recording_log_fn(user, level, message);
    if (strstr(message, "call flush")) kiln_log_flush(flushing_rt);   /* refused, no deadlock */
}

Test(logging, async_flush_from_a_callback_is_refused) {
    kiln_desc d = recording_desc(rec);
    d.log = flush_from_callback;
    kiln_runtime *rt = flushing_rt = create_async(d);
    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_logf(rt, KILN_LOG_WARN, "call flush");
    kiln_log_flush(rt);
    char *err = stderr_capture_end(&cap);
    cr_expect(strstr(err, "LOG_CALLBACK_CALL") != NULL, "%s", err);
    free(err);
    kiln_destroy(rt);
}

Test(logging, a_bad_log_mode_refuses_create) {
    kiln_desc d = recording_desc(rec);
    d.log_mode = (kiln_log_mode)2;
    cr_expect_null(kiln_create(&d));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_LOG_MODE_INVALID), 1);
}

/* ---- repeats folded ---- */

static kiln_runtime *create_folding(kiln_log_mode mode) {
    kiln_desc d = recording_desc(rec);
    d.log_every_repeat = false;   /* the default: recording_desc turns it on */
    d.log_mode = mode;
    kiln_runtime *rt = kiln_create(&d);
    cr_assert_not_null(rt, "%s", recorded_summary(rec));
    return rt;
}

/* One refused call, repeated: OPTION_OUT_TOO_SMALL names the cap, so the texts differ
 * only in their figures. */
static void refuse(kiln_runtime *rt, size_t cap, const char *key) {
    char out[8];
    cr_assert_not(kiln_option_source(rt, key, out, cap));
}

static void folds_within_a_frame(kiln_log_mode mode) {
    kiln_runtime *rt = create_folding(mode);
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_frame_begin(ctx);
    for (int i = 0; i < 100; i++) refuse(rt, 1 + (size_t)i % 4, "workers");
    kiln_log_flush(rt);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_OPTION_OUT_TOO_SMALL), 1, "%s", recorded_summary(rec));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_LOG_REPEATS), 0, "told when the frame ends");
    kiln_frame_end(ctx);
    kiln_log_flush(rt);
    cr_expect_eq(count_items_at(rec, KILN_LOGITEM_LOG_REPEATS, KILN_LOG_INFO), 1, "%s", recorded_summary(rec));
    const char *text = last_item_text(rec, KILN_LOGITEM_LOG_REPEATS);
    cr_expect(strstr(text, "99 more like the last OPTION_OUT_TOO_SMALL message") != NULL, "%s", text);
    kiln_stats s;
    cr_assert(kiln_stats_get(rt, &s));
    cr_expect_eq(s.api_errors, 100, "every refusal is counted, folded or not");
    kiln_frame_begin(ctx);   /* a new frame: the first one is delivered again */
    refuse(rt, 2, "workers");
    refuse(rt, 3, "workers");
    kiln_log_flush(rt);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_OPTION_OUT_TOO_SMALL), 2);
    kiln_frame_end(ctx);
    kiln_detach(ctx);
    kiln_destroy(rt);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_LOG_REPEATS), 2, "%s", recorded_summary(rec));
    cr_expect(strstr(last_item_text(rec, KILN_LOGITEM_LOG_REPEATS), "1 more like") != NULL);
}

Test(logging, repeats_fold_within_a_frame_and_are_told_at_its_end) { folds_within_a_frame(KILN_LOG_SYNC); }
Test(logging, repeats_fold_in_async_mode_too) { folds_within_a_frame(KILN_LOG_ASYNC); }

Test(logging, other_objects_and_other_items_are_not_folded_together) {
    kiln_runtime *rt = create_folding(KILN_LOG_SYNC);
    for (int i = 0; i < 3; i++) {
        refuse(rt, 1, "workers");        /* "desc" */
        refuse(rt, 1, "block_size");     /* "default": another text */
        char out[8];
        kiln_option_source(rt, "no_such_key", out, sizeof out);   /* another item */
        kiln_option_source(rt, "other_key", out, sizeof out);     /* another name */
    }
    cr_expect_eq(count_items(rec, KILN_LOGITEM_OPTION_OUT_TOO_SMALL), 2, "%s", recorded_summary(rec));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_OPTION_KEY_UNKNOWN), 2, "%s", recorded_summary(rec));
    kiln_destroy(rt);   /* no frame ever ended: told at destroy */
    cr_expect_eq(count_items(rec, KILN_LOGITEM_LOG_REPEATS), 4, "%s", recorded_summary(rec));
    cr_expect_eq(count_items_with(rec, KILN_LOGITEM_LOG_REPEATS, "2 more like"), 4);
}

Test(logging, the_programs_messages_and_every_repeat_mode_are_not_folded) {
    kiln_runtime *rt = create_folding(KILN_LOG_SYNC);
    for (int i = 0; i < 5; i++) kiln_logf(rt, KILN_LOG_WARN, "same %d", i % 2);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_APP_LOG), 5, "APP_LOG is the program's");
    kiln_destroy(rt);
    recording_log_clear(rec);
    kiln_desc d = recording_desc(rec);   /* log_every_repeat */
    rt = kiln_create(&d);
    for (int i = 0; i < 5; i++) refuse(rt, 1, "workers");
    cr_expect_eq(count_items(rec, KILN_LOGITEM_OPTION_OUT_TOO_SMALL), 5);
    kiln_destroy(rt);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_LOG_REPEATS), 0);
}

static void *refuse_from_a_thread(void *arg) {
    char out[8];
    for (int i = 0; i < 1000; i++) kiln_option_source(arg, "workers", out, 1 + (size_t)i % 4);
    return NULL;
}

Test(logging, repeats_from_many_threads_are_each_delivered_or_counted_once) {
    kiln_runtime *rt = create_folding(KILN_LOG_SYNC);
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) pthread_create(&threads[i], NULL, refuse_from_a_thread, rt);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    kiln_destroy(rt);
    /* Windows may turn (about a second) while the threads run: then more than one is
     * delivered, and the summaries count the rest. */
    size_t delivered = count_items(rec, KILN_LOGITEM_OPTION_OUT_TOO_SMALL);
    size_t folded = 0;
    for (size_t i = 0; i < rec->count; i++) {
        unsigned long long n;
        if (rec->messages[i].item == KILN_LOGITEM_LOG_REPEATS &&
            sscanf(rec->messages[i].text, "LOG_REPEATS: %llu", &n) == 1)
            folded += n;
    }
    cr_expect_geq(delivered, 1);
    cr_expect_eq(delivered + folded, 4000, "delivered %zu, folded %zu: %s", delivered, folded,
                 recorded_summary(rec));
}

/* ---- what the fourth review of the log found ---- */

Test(logging, objects_whose_names_differ_only_in_digits_are_not_folded_together) {
    kiln_runtime *rt = create_folding(KILN_LOG_SYNC);
    char out[8];
    for (int i = 0; i < 3; i++) {
        kiln_option_source(rt, "layer1", out, sizeof out);
        kiln_option_source(rt, "layer2", out, sizeof out);
        kiln_option_source(rt, "a1bad", out, sizeof out);
        kiln_option_source(rt, "a1cafe", out, sizeof out);
    }
    cr_expect_eq(count_items(rec, KILN_LOGITEM_OPTION_KEY_UNKNOWN), 4, "%s", recorded_summary(rec));
    kiln_destroy(rt);
    cr_expect_eq(count_items_with(rec, KILN_LOGITEM_LOG_REPEATS, "2 more like"), 4, "%s",
                 recorded_summary(rec));
}

Test(logging, a_message_below_the_threshold_is_not_the_first_of_its_kind) {
    kiln_runtime *rt = create_folding(KILN_LOG_SYNC);
    kiln_log_set_level(rt, KILN_LOG_THRESHOLD_OFF);
    refuse(rt, 1, "workers");
    kiln_log_set_level(rt, KILN_LOG_THRESHOLD_DEBUG);
    refuse(rt, 2, "workers");
    cr_expect_eq(count_items(rec, KILN_LOGITEM_OPTION_OUT_TOO_SMALL), 1, "delivered: %s",
                 recorded_summary(rec));
    kiln_destroy(rt);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_LOG_REPEATS), 0, "%s", recorded_summary(rec));
}

Test(logging, a_summary_the_full_ring_drops_counts_the_repeats_it_told_of) {
    hold_entered = hold_released = false;
    kiln_desc d = recording_desc(rec);
    d.log = hold_first;
    d.log_every_repeat = false;
    kiln_runtime *rt = create_async(d);
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_frame_begin(ctx);
    kiln_logf(rt, KILN_LOG_WARN, "first");
    pthread_mutex_lock(&hold_lock);
    while (!hold_entered) pthread_cond_wait(&hold_cond, &hold_lock);
    pthread_mutex_unlock(&hold_lock);
    for (int i = 0; i < KILN_LOG_RING_MESSAGES - 1; i++) kiln_logf(rt, KILN_LOG_WARN, "fill %d", i);
    kiln_stats s;
    cr_assert(kiln_stats_get(rt, &s));
    cr_assert_eq(s.log_dropped, 0, "the ring is full, nothing dropped yet");
    for (int i = 0; i < 10; i++) refuse(rt, 1 + (size_t)i % 4, "workers");   /* 1 dropped, 9 folded */
    kiln_frame_end(ctx);   /* the summary of 9: dropped too */
    cr_assert(kiln_stats_get(rt, &s));
    cr_expect_eq(s.log_dropped, 10, "every refusal the log lost is counted");
    pthread_mutex_lock(&hold_lock);
    hold_released = true;
    pthread_cond_broadcast(&hold_cond);
    pthread_mutex_unlock(&hold_lock);
    kiln_detach(ctx);
    kiln_destroy(rt);
}

Test(logging, an_async_exit_report_longer_than_the_ring_arrives_whole) {
    size_t lines[2];
    for (int mode = 0; mode < 2; mode++) {
        recording_log_clear(rec);
        kiln_desc d = recording_desc(rec);
        d.options = mode ? "stats=exit,log_mode=async" : "stats=exit";
        kiln_runtime *rt = kiln_create(&d);
        cr_assert_not_null(rt);
        kiln_arena *arenas[300];
        for (int i = 0; i < 300; i++) {
            char name[16];
            snprintf(name, sizeof name, "a%d", i);
            arenas[i] = kiln_arena_create(rt, name);
        }
        kiln_destroy(rt);   /* destroys the arenas too (ARENA_STILL_ALIVE each) */
        (void)arenas;
        lines[mode] = count_items(rec, KILN_LOGITEM_STATS_REPORT);
        cr_expect_eq(count_items(rec, KILN_LOGITEM_LOG_DROPPED), 0, "%s", recorded_summary(rec));
    }
    cr_expect_gt(lines[0], 300);
    cr_expect_eq(lines[1], lines[0], "async %zu lines, sync %zu", lines[1], lines[0]);
}
