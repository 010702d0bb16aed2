/* tests/test_options.c — run-time options: desc.options and KILN_OPTIONS over the desc,
 * each value's layer (kiln_option_source, kiln_stats_print), every kind's values and
 * refusals, unknown keys, stats=exit and stats=frame:N, and README.md's options table
 * against KILN_DESC_FIELDS. */
#define _DEFAULT_SOURCE   /* setenv, open_memstream */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys_alloc.h"
#include "recording_log.h"

static recording_log *rec;

static void setup(void) {
    rec = recording_log_new();
    unsetenv("KILN_OPTIONS");
}
static void teardown(void) {
    recording_log_free(rec);
    rec = NULL;
}
TestSuite(options, .init = setup, .fini = teardown);

/* A runtime with no workers (unless the options say otherwise) and these options. */
static kiln_runtime *create_with(const char *options) {
    kiln_desc d = recording_desc(rec);
    d.options = options;
    return kiln_create(&d);
}

static const char *source_of(kiln_runtime *rt, const char *key) {
    static char out[KILN_OPTION_SOURCE_MAX];
    cr_assert(kiln_option_source(rt, key, out, sizeof out), "kiln_option_source(%s): %s", key,
              recorded_summary(rec));
    return out;
}

Test(options, every_key_starts_at_default_or_desc) {
    kiln_desc d = recording_desc(rec);
    d.memory_limit = 64u << 20;
    d.debug = KILN_DEBUG_FILL;
    kiln_runtime *rt = kiln_create(&d);
    cr_assert_not_null(rt, "%s", recorded_summary(rec));
    cr_expect_str_eq(source_of(rt, "memory_limit"), "desc");
    cr_expect_str_eq(source_of(rt, "debug"), "desc");
    cr_expect_str_eq(source_of(rt, "workers"), "desc", "recording_desc asks for no workers");
    cr_expect_str_eq(source_of(rt, "block_size"), "default");
    cr_expect_str_eq(source_of(rt, "stats"), "default");
    kiln_destroy(rt);
}

Test(options, options_string_sets_fields_of_every_kind) {
    kiln_runtime *rt = create_with(
        " workers = none , block_size=128k,memory_limit=512M,frame_budget=3K,debug=guards+fill,"
        "reserve_size=1G,audit_sample=7,warn_percent=70,frame_reserve=64K,"
        "frame_budget_policy=refuse,frame_fallback=on,frame_alloc_budget=123456789012,"
        "idle_spin_us=1000000,stuck_wait_ms=5000,stats=exit+frame:30,");
    cr_assert_not_null(rt, "%s", recorded_summary(rec));
    kiln_desc d = kiln_runtime_desc(rt);
    cr_expect_eq(d.worker_count, KILN_NO_WORKERS);
    cr_expect_eq(d.block_size, (size_t)128 << 10);
    cr_expect_eq(d.memory_limit, (size_t)512 << 20);
    cr_expect_eq(d.frame_budget, (size_t)3 << 10);
    cr_expect_eq(d.debug, (uint32_t)(KILN_DEBUG_GUARDS | KILN_DEBUG_FILL));
    cr_expect_eq(d.reserve_size, (size_t)1 << 30);
    cr_expect_eq(d.audit_sample, 7u);
    cr_expect_eq(d.warn_percent, 70u);
    cr_expect_eq(d.frame_reserve, (size_t)64 << 10);
    cr_expect_eq(d.frame_budget_policy, KILN_BUDGET_REFUSE);
    cr_expect(d.frame_fallback);
    cr_expect_eq(d.frame_alloc_budget, 123456789012ull);
    cr_expect_eq(d.idle_spin_us, 1000000u);
    cr_expect_eq(d.stuck_wait_ms, 5000u);
    cr_expect(d.stats.at_exit);
    cr_expect_eq(d.stats.every_frames, 30u);
    cr_expect_null(d.options, "the options string is read at create only");
    cr_expect_str_eq(source_of(rt, "workers"), "options");
    cr_expect_str_eq(source_of(rt, "stats"), "options");
    cr_expect_eq(count_items(rec, KILN_LOGITEM_OPTION_UNKNOWN), 0);
    kiln_destroy(rt);
}

Test(options, layers_override_in_order_and_the_last_pair_wins) {
    setenv("KILN_OPTIONS", "warn_percent=90,audit_sample=9", 1);
    kiln_desc d = recording_desc(rec);
    d.worker_count = KILN_NO_WORKERS;
    d.warn_percent = 50;
    d.audit_sample = 5;
    d.frame_budget = 1000;
    d.memory_limit = 1u << 30;
    d.options = "warn_percent=60,frame_budget=2000,frame_budget=3000";
    kiln_runtime *rt = kiln_create(&d);
    cr_assert_not_null(rt, "%s", recorded_summary(rec));
    kiln_desc got = kiln_runtime_desc(rt);
    cr_expect_eq(got.warn_percent, 90u, "env over options over desc");
    cr_expect_eq(got.audit_sample, 9u, "env over desc");
    cr_expect_eq(got.frame_budget, 3000u, "options over desc; the last pair wins");
    cr_expect_eq(got.memory_limit, (size_t)1 << 30);
    cr_expect_str_eq(source_of(rt, "warn_percent"), "env");
    cr_expect_str_eq(source_of(rt, "audit_sample"), "env");
    cr_expect_str_eq(source_of(rt, "frame_budget"), "options");
    cr_expect_str_eq(source_of(rt, "memory_limit"), "desc");
    cr_expect_str_eq(source_of(rt, "block_size"), "default");
    kiln_destroy(rt);
}

Test(options, a_program_that_ignores_the_environment_is_not_overridden) {
    setenv("KILN_OPTIONS", "warn_percent=90,no_such_key=1,debug=nonsense", 1);
    kiln_desc d = recording_desc(rec);
    d.worker_count = KILN_NO_WORKERS;
    d.warn_percent = 50;
    d.options_env = KILN_OPTIONS_ENV_IGNORE;
    kiln_runtime *rt = kiln_create(&d);
    cr_assert_not_null(rt, "a bad KILN_OPTIONS is not read at all: %s", recorded_summary(rec));
    cr_expect_eq(kiln_runtime_desc(rt).warn_percent, 50u);
    cr_expect_str_eq(source_of(rt, "warn_percent"), "desc");
    cr_expect_eq(recorded_count(rec), 0, "%s", recorded_summary(rec));
    kiln_destroy(rt);
}

Test(options, an_unknown_key_is_warned_with_the_nearest_and_create_goes_on) {
    kiln_runtime *rt = create_with("workers=none,memory_limt=64M,warn_percent=75");
    cr_assert_not_null(rt, "%s", recorded_summary(rec));
    cr_expect_eq(count_items_at(rec, KILN_LOGITEM_OPTION_UNKNOWN, KILN_LOG_WARN), 1);
    const char *text = last_item_text(rec, KILN_LOGITEM_OPTION_UNKNOWN);
    cr_expect(strstr(text, "'memory_limt'") && strstr(text, "'memory_limit'") &&
              strstr(text, "desc.options"), "%s", text);
    cr_expect_eq(kiln_runtime_desc(rt).warn_percent, 75u, "the pairs after it apply");
    cr_expect_eq(kiln_runtime_desc(rt).memory_limit, 0u);
    kiln_destroy(rt);
}

/* Each refused: NULL, one OPTION_INVALID naming the pair, the layer and what is
 * allowed, and no heap allocation made (checking comes before anything is created). */
static void expect_refused(const char *options, const char *allowed_fragment) {
    recording_log_clear(rec);
    unsigned long before = kiln_sys_allocations();
    kiln_runtime *rt = create_with(options);
    cr_expect_null(rt, "'%s' was taken", options);
    if (rt) kiln_destroy(rt);
    cr_expect_eq(kiln_sys_allocations(), before, "'%s': a refused create allocated", options);
    cr_expect_eq(count_items_at(rec, KILN_LOGITEM_OPTION_INVALID, KILN_LOG_ERROR), 1,
                 "'%s': %s", options, recorded_summary(rec));
    const char *text = last_item_text(rec, KILN_LOGITEM_OPTION_INVALID);
    cr_expect(strstr(text, "desc.options") && strstr(text, allowed_fragment),
              "'%s': %s", options, text);
}

Test(options, a_bad_value_of_every_kind_refuses_create) {
    expect_refused("workers=64", "from 0 to 63");
    expect_refused("workers=-1", "from 0 to 63");
    expect_refused("workers=", "from 0 to 63");
    expect_refused("block_size=3000", "power of two");
    expect_refused("block_size=2G", "power of two");
    expect_refused("memory_limit=12Q", "K, M, G or T");
    expect_refused("memory_limit=99999999999999999999", "K, M, G or T");
    expect_refused("memory_limit=17179869184G", "K, M, G or T");
    expect_refused("memory_limit=K", "K, M, G or T");
    expect_refused("memory_limit=0x10", "K, M, G or T");
    expect_refused("debug=guards+nope", "guard_pages");
    expect_refused("debug=guards+", "guard_pages");
    expect_refused("debug=+fill", "guard_pages");
    expect_refused("debug=fill++guards", "guard_pages");
    expect_refused("stats=exit+", "frame:N");
    expect_refused("warn_percent=101", "0 to 100");
    expect_refused("audit_sample=4294967296", "4294967295");
    expect_refused("frame_alloc_budget=18446744073709551616", "18446744073709551615");
    expect_refused("idle_spin_us=1000001", "1000000");
    expect_refused("frame_budget_policy=maybe", "warn or refuse");
    expect_refused("frame_fallback=2", "on, off");
    expect_refused("stats=frame:0", "frame:N");
    expect_refused("stats=exit+never", "frame:N");
    expect_refused("workers=none,debug", "key=value");
    expect_refused("=3", "key=value");
}

Test(options, a_bad_value_in_the_environment_names_its_layer) {
    setenv("KILN_OPTIONS", "warn_percent=170", 1);
    kiln_runtime *rt = create_with("workers=none");
    cr_expect_null(rt);
    const char *text = last_item_text(rec, KILN_LOGITEM_OPTION_INVALID);
    cr_expect(strstr(text, "warn_percent=170") && strstr(text, "KILN_OPTIONS"), "%s", text);
}

Test(options, sizes_take_binary_multiples_in_either_case) {
    kiln_runtime *rt = create_with("workers=none,memory_limit=2g,frame_budget=5k,reserve_size=8M");
    cr_assert_not_null(rt, "%s", recorded_summary(rec));
    kiln_desc d = kiln_runtime_desc(rt);
    cr_expect_eq(d.memory_limit, (size_t)2 << 30);
    cr_expect_eq(d.frame_budget, (size_t)5 << 10);
    cr_expect_eq(d.reserve_size, (size_t)8 << 20);
    kiln_destroy(rt);
}

Test(options, a_value_checked_against_another_field_is_refused_whatever_its_layer) {
    kiln_runtime *rt = create_with("workers=none,memory_limit=1M,frame_reserve=2M");
    cr_expect_null(rt);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_FRAME_RESERVE_INVALID), 1, "%s", recorded_summary(rec));
}

Test(options, option_source_refuses_bad_arguments) {
    kiln_runtime *rt = create_with("workers=none");
    cr_assert_not_null(rt);
    char out[KILN_OPTION_SOURCE_MAX] = "x";
    cr_expect_not(kiln_option_source(rt, "no_such_key", out, sizeof out));
    cr_expect_str_eq(out, "");
    cr_expect_eq(count_items(rec, KILN_LOGITEM_OPTION_KEY_UNKNOWN), 1);
    cr_expect_not(kiln_option_source(rt, "error_hook", out, sizeof out), "a callback has no key");
    cr_expect_not(kiln_option_source(rt, NULL, out, sizeof out));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_OPTION_KEY_UNKNOWN), 3);
    cr_expect_not(kiln_option_source(rt, "workers", out, 7), "'options' takes 8 bytes");
    cr_expect_str_eq(out, "");
    cr_expect_eq(count_items(rec, KILN_LOGITEM_OPTION_OUT_TOO_SMALL), 1);
    cr_expect_not(kiln_option_source(rt, "workers", NULL, 8));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_STATS_NULL_OUT), 1);
    cr_expect(kiln_option_source(rt, "workers", out, 8));
    cr_expect_str_eq(out, "options");
    kiln_stats s;
    cr_assert(kiln_stats_get(rt, &s));
    cr_expect_eq(s.api_errors, 5);
    kiln_destroy(rt);
}

static char *stats_text(kiln_runtime *rt) {
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    cr_assert_not_null(out);
    kiln_stats_print(rt, out);
    fclose(out);
    return text;
}

Test(options, stats_print_shows_every_value_with_its_layer) {
    setenv("KILN_OPTIONS", "debug=fill+sites", 1);
    kiln_desc d = recording_desc(rec);
    d.memory_limit = 256u << 20;
    d.options = "workers=none,frame_budget_policy=refuse";
    kiln_runtime *rt = kiln_create(&d);
    cr_assert_not_null(rt, "%s", recorded_summary(rec));
    char *text = stats_text(rt);
    cr_expect(strstr(text, "  workers = none (options)\n"), "%s", text);
    cr_expect(strstr(text, "  memory_limit = 256M (desc)\n"), "%s", text);
    cr_expect(strstr(text, "  debug = fill+sites (env)\n"), "%s", text);
    cr_expect(strstr(text, "  frame_budget_policy = refuse (options)\n"), "%s", text);
    cr_expect(strstr(text, "  block_size = 64K (default)\n"), "%s", text);
    cr_expect(strstr(text, "  stats = off (default)\n"), "%s", text);
    free(text);
    kiln_destroy(rt);
}

Test(options, stats_exit_logs_the_report_at_destroy) {
    kiln_runtime *rt = create_with("workers=none,stats=exit");
    cr_assert_not_null(rt);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_STATS_REPORT), 0);
    kiln_destroy(rt);
    cr_expect_gt(count_items(rec, KILN_LOGITEM_STATS_REPORT), 10, "%s", recorded_summary(rec));
    cr_expect_eq(count_items_with(rec, KILN_LOGITEM_STATS_REPORT, "kiln stats, frame 0"), 1);
    cr_expect_eq(count_items_with(rec, KILN_LOGITEM_STATS_REPORT, "stats = exit (options)"), 1);
    cr_expect_eq(count_items_at(rec, KILN_LOGITEM_STATS_REPORT, KILN_LOG_INFO),
                 count_items(rec, KILN_LOGITEM_STATS_REPORT));
}

Test(options, stats_every_n_frames_logs_at_each_nth_frame_end) {
    kiln_runtime *rt = create_with("workers=none,stats=frame:2");
    cr_assert_not_null(rt);
    kiln_ctx *ctx = kiln_attach(rt);
    for (int i = 0; i < 5; i++) {
        kiln_frame_begin(ctx);
        kiln_frame_end(ctx);
    }
    cr_expect_eq(count_items_with(rec, KILN_LOGITEM_STATS_REPORT, "kiln stats, frame "), 2,
                 "%s", recorded_summary(rec));
    cr_expect_eq(count_items_with(rec, KILN_LOGITEM_STATS_REPORT, "kiln stats, frame 2"), 1);
    cr_expect_eq(count_items_with(rec, KILN_LOGITEM_STATS_REPORT, "kiln stats, frame 4"), 1);
    kiln_detach(ctx);
    kiln_destroy(rt);
    cr_expect_eq(count_items_with(rec, KILN_LOGITEM_STATS_REPORT, "kiln stats, frame "), 2,
                 "no report at destroy without exit");
}

/* ---- README.md's options table, against KILN_DESC_FIELDS ---- */

static char *read_readme(void) {
    FILE *f = fopen(KILN_SOURCE_DIR "/README.md", "r");
    cr_assert_not_null(f, "README.md not found under " KILN_SOURCE_DIR);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    int c;
    while ((c = fgetc(f)) != EOF) fputc(c, out);
    fclose(f);
    fclose(out);
    return text;
}

/* The kind's name in lower case, as the table's type column writes it. */
static const char *lower(const char *kind) {
    static char buf[32];
    size_t i = 0;
    for (; kind[i] && i + 1 < sizeof buf; i++) buf[i] = (char)(kind[i] >= 'A' && kind[i] <= 'Z' ? kind[i] | 0x20 : kind[i]);
    buf[i] = '\0';
    return buf;
}

#define TABLE_ROW(type, field, key, kind, default_text, meaning) \
    if (key[0]) fprintf(out, "| `%s` | %s | %s | %s |\n", key, lower(#kind), default_text, meaning);

Test(options, readme_table_lists_every_key_as_the_list_does) {
    char *want = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&want, &size);
    fputs("| key | type | default | meaning |\n| --- | --- | --- | --- |\n", out);
    KILN_DESC_FIELDS(TABLE_ROW)
    fclose(out);
    char *readme = read_readme();
    cr_expect(strstr(readme, want) != NULL,
              "README.md's options table differs from KILN_DESC_FIELDS (kiln/core.h); "
              "it should read:\n%s", want);
    free(readme);
    free(want);
}

Test(options, a_config_files_line_ends_are_white_space_and_defaults_are_filled_in) {
    kiln_runtime *rt = create_with("workers=none,\r\nmemory_limit=1G\n");
    cr_assert_not_null(rt, "%s", recorded_summary(rec));
    kiln_desc d = kiln_runtime_desc(rt);
    cr_expect_eq(d.memory_limit, (size_t)1 << 30);
    cr_expect_eq(d.stuck_wait_ms, 2000u, "every default filled in");
    kiln_destroy(rt);
}
