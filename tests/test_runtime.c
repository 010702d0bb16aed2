/* tests/test_runtime.c — the runtime: kiln_create and its desc defaults, refused
 * descs, NULL arguments to every call that takes a runtime, the api_errors count,
 * kiln_destroy with live objects, contexts, trim, and statistics that add up. */
#define _DEFAULT_SOURCE   /* pthread barriers, sysconf */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/sys_alloc.h"
#include "base/near_limit.h"
#include "jobs/scheduler.h"   /* KILN_IDLE_SPIN_US_DEFAULT */
#include "recording_log.h"

#define BS ((size_t)64 << 10)

static recording_log *rec;

static void setup(void) { rec = recording_log_new(); }
static void teardown(void) { recording_log_free(rec); rec = NULL; }
TestSuite(runtime, .init = setup, .fini = teardown);

static kiln_stats runtime_stats(kiln_runtime *r) {
    kiln_stats s;
    cr_assert(kiln_stats_get(r, &s));
    return s;
}

static kiln_arena_stats arena_stats(const kiln_arena *arena) {
    kiln_arena_stats s;
    cr_assert(kiln_arena_stats_get(arena, &s));
    return s;
}

static uint32_t expected_workers(void) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 1 ? (uint32_t)(cpus - 1) : 0;
}

static void assert_default_desc(kiln_desc d) {
    cr_assert_eq(d.block_size, BS);
    cr_assert_eq(d.worker_count, expected_workers(), "worker_count %u, want online CPUs - 1 = %u",
                 d.worker_count, expected_workers());
    cr_assert_eq(d.memory_limit, 0);
    cr_assert_eq(d.frame_budget, 0);
    cr_assert_eq(d.debug, 0);
    cr_assert_eq(d.reserve_size, 64 * BS);
    cr_assert_eq(d.idle_spin_us, KILN_IDLE_SPIN_US_DEFAULT);
    cr_assert_not_null(d.log, "the default log is filled in");
}

Test(runtime, create_with_null_desc) {
    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_runtime *rt = kiln_create(NULL);
    cr_assert_not_null(rt);
    assert_default_desc(kiln_runtime_desc(rt));
    kiln_stats s = runtime_stats(rt);
    cr_assert_eq(s.worker_count, expected_workers());
    cr_assert_eq(s.blocks.block_size, BS);
    cr_assert_eq(s.blocks.memory_limit, 0);
    cr_assert_eq(s.frame, 0);
    /* The workers are running: a context and a frame arena each, and their first
     * blocks come from the first reservation (64 blocks by default). */
    cr_assert_eq(s.contexts, expected_workers());
    cr_assert_eq(s.arenas, expected_workers());
    cr_assert_eq(s.blocks.blocks_in_use, expected_workers());
    cr_assert_eq(s.blocks.reserved_bytes, expected_workers() ? 64 * BS : 0);
    kiln_ctx *ctx = kiln_attach(rt);
    cr_assert_not_null(ctx);
    kiln_detach(ctx);
    kiln_destroy(rt);
    char *text = stderr_capture_end(&cap);
    cr_assert_str_eq(text, "", "a clean run logs nothing: %s", text);
    free(text);
}

Test(runtime, create_with_zero_desc) {
    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_runtime *rt = kiln_create(&(kiln_desc){ 0 });
    cr_assert_not_null(rt);
    assert_default_desc(kiln_runtime_desc(rt));
    kiln_destroy(rt);
    char *text = stderr_capture_end(&cap);
    cr_assert_str_eq(text, "", "a clean run logs nothing: %s", text);
    free(text);
}

Test(runtime, desc_fields_are_kept) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = 3;
    desc.block_size = (size_t)1 << 20;
    desc.memory_limit = (size_t)64 << 20;
    desc.frame_budget = 12345;
    desc.reserve_size = (size_t)3 << 20;
    kiln_runtime *rt = kiln_create(&desc);
    cr_assert_not_null(rt, "log:%s", recorded_summary(rec));
    kiln_desc d = kiln_runtime_desc(rt);
    cr_assert_eq(d.worker_count, 3);
    cr_assert_eq(d.block_size, (size_t)1 << 20);
    cr_assert_eq(d.memory_limit, (size_t)64 << 20);
    cr_assert_eq(d.frame_budget, 12345);
    cr_assert_eq(d.reserve_size, (size_t)3 << 20);
    cr_assert_eq(d.log, recording_log_fn);
    cr_assert_eq(d.log_user, rec);
    kiln_stats s = runtime_stats(rt);
    cr_assert_eq(s.worker_count, 3);
    cr_assert_eq(s.blocks.block_size, (size_t)1 << 20);
    cr_assert_eq(s.blocks.memory_limit, (size_t)64 << 20);
    cr_assert_eq(s.contexts, 3, "three workers, each with its context");
    cr_assert_eq(s.blocks.reserved_bytes, (size_t)3 << 20, "one reservation of reserve_size");
    cr_assert_eq(s.blocks.blocks_reserved, 3);
    cr_assert_eq(s.blocks.blocks_in_use, 3, "one frame-arena block per worker");
    kiln_ctx *ctx = kiln_attach(rt);
    cr_assert_eq(arena_stats(kiln_frame_arena(ctx)).budget, 12345);
    s = runtime_stats(rt);
    cr_assert_eq(s.blocks.reserved_bytes, (size_t)6 << 20, "a second reservation of reserve_size");
    cr_assert_eq(s.blocks.blocks_reserved, 6);
    kiln_detach(ctx);
    kiln_destroy(rt);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

Test(runtime, bad_block_size_is_refused) {
    const size_t bad[] = { 3000, 2048, 1024, BS + 1, 3 * BS, (size_t)1 << 31, (size_t)1 << 40 };
    size_t n = sizeof bad / sizeof bad[0];
    for (size_t i = 0; i < n; i++) {
        kiln_desc desc = recording_desc(rec);
        desc.block_size = bad[i];
        cr_assert_null(kiln_create(&desc), "block_size %zu accepted", bad[i]);
        char figure[64];
        snprintf(figure, sizeof figure, "block_size %zu is not a power of two", bad[i]);
        cr_assert_eq(count_items_with(rec, KILN_LOGITEM_BLOCK_SIZE_INVALID, figure), 1, "block_size %zu:%s", bad[i],
                     recorded_summary(rec));
    }
    cr_assert_eq(count_items(rec, KILN_LOGITEM_BLOCK_SIZE_INVALID), n);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_BLOCK_SIZE_INVALID, KILN_LOG_ERROR), n);
    cr_assert_eq(recorded_count(rec), n, "log:%s", recorded_summary(rec));
    /* The edges that are fine: the page size and 1 GiB. */
    const size_t good[] = { 4096, (size_t)1 << 30 };
    for (size_t i = 0; i < 2; i++) {
        kiln_desc desc = recording_desc(rec);
        desc.block_size = good[i];
        kiln_runtime *rt = kiln_create(&desc);
        cr_assert_not_null(rt, "block_size %zu refused:%s", good[i], recorded_summary(rec));
        cr_assert_eq(kiln_runtime_desc(rt).block_size, good[i]);
        kiln_destroy(rt);
    }
    cr_assert_eq(recorded_count(rec), n);
}

Test(runtime, memory_limit_below_a_block_is_refused) {
    kiln_desc desc = recording_desc(rec);
    desc.memory_limit = 1000;
    cr_assert_null(kiln_create(&desc));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_INVALID), 1, "log:%s", recorded_summary(rec));
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_MEMORY_LIMIT_INVALID),
                     "MEMORY_LIMIT_INVALID: block pool: memory_limit 1000 is smaller than one block "
                     "(65536 bytes)");
    desc.memory_limit = BS - 1;
    cr_assert_null(kiln_create(&desc));
    desc.block_size = (size_t)1 << 20;
    desc.memory_limit = BS;   /* fine for 64 KiB blocks, not for 1 MiB ones */
    cr_assert_null(kiln_create(&desc));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_INVALID), 3, "log:%s", recorded_summary(rec));
    desc.block_size = 0;
    desc.memory_limit = BS;   /* exactly one block: allowed */
    kiln_runtime *rt = kiln_create(&desc);
    cr_assert_not_null(rt, "log:%s", recorded_summary(rec));
    kiln_ctx *ctx = kiln_attach(rt);
    cr_assert_not_null(ctx, "one block is enough for one context:%s", recorded_summary(rec));
    kiln_detach(ctx);
    kiln_destroy(rt);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_NEAR), 1, "one block is the whole limit");
    cr_assert_eq(recorded_count(rec), 4, "log:%s", recorded_summary(rec));
}

/* Once an arena holds every block memory_limit allows, an attach (here, a second one
 * on this thread after the first detached: its context's frame arena needs a block)
 * fails, and says why, however long ago the block pool logged its limit. */
Test(runtime, attach_refused_at_the_memory_limit_says_so) {
    kiln_desc desc = recording_desc(rec);
    desc.memory_limit = 4 * BS;
    kiln_runtime *rt = kiln_create(&desc);
    cr_assert_not_null(rt, "log:%s", recorded_summary(rec));
    kiln_arena *hog = kiln_arena_create(rt, "hog");
    cr_assert_not_null(hog);
    while (kiln_arena_alloc(hog, BS / 2, 16)) {
    }
    size_t before = count_items(rec, KILN_LOGITEM_CONTEXT_OUT_OF_MEMORY);
    cr_assert_null(kiln_attach(rt), "no block left for a frame arena");
    cr_assert_null(kiln_attach(rt));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_CONTEXT_OUT_OF_MEMORY), before + 2,
                 "each refused attach says so:%s", recorded_summary(rec));
    kiln_arena_destroy(hog);
    kiln_ctx *ctx = kiln_attach(rt);
    cr_assert_not_null(ctx, "blocks are back: attach works again:%s", recorded_summary(rec));
    kiln_detach(ctx);
    kiln_destroy(rt);
}

Test(runtime, null_runtime_calls_are_safe) {
    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_destroy(NULL);
    kiln_ctx *ctx = kiln_attach(NULL);
    uint64_t frame = kiln_frame_number(NULL);
    kiln_desc d = kiln_runtime_desc(NULL);
    size_t trimmed = kiln_trim(NULL);
    kiln_arena *arena = kiln_arena_create(NULL, "level");
    kiln_stats s;
    memset(&s, 0xFF, sizeof s);
    bool got = kiln_stats_get(NULL, &s);
    kiln_arena_stats as[2];
    size_t count = kiln_stats_arenas(NULL, as, 2);
    bool got_null = kiln_stats_get(NULL, NULL);
    char *text = stderr_capture_end(&cap);

    cr_assert_null(ctx);
    cr_assert_eq(frame, 0);
    kiln_desc zero_desc;
    memset(&zero_desc, 0, sizeof zero_desc);
    cr_assert_eq(memcmp(&d, &zero_desc, sizeof d), 0, "a NULL runtime's desc is all zero");
    cr_assert_eq(trimmed, 0);
    cr_assert_null(arena);
    cr_assert(!got);
    kiln_stats zero;
    memset(&zero, 0, sizeof zero);
    cr_assert_eq(memcmp(&s, &zero, sizeof s), 0, "stats not zeroed for a NULL runtime");
    cr_assert_eq(count, 0);
    cr_assert(!got_null);
    cr_assert_eq(count_substrings(text, "kiln error: RUNTIME_NULL: "), 8, "stderr: %s", text);
    const char *callers[] = { "kiln_attach", "kiln_frame_number", "kiln_runtime_desc", "kiln_trim",
                              "kiln_arena_create", "kiln_stats_get", "kiln_stats_arenas" };
    for (size_t i = 0; i < sizeof callers / sizeof callers[0]; i++) {
        char line[96];
        snprintf(line, sizeof line, "RUNTIME_NULL: %s: the runtime is NULL", callers[i]);
        size_t want = strcmp(callers[i], "kiln_stats_get") == 0 ? 2 : 1;   /* out given, and not */
        cr_assert_eq(count_substrings(text, line), want, "no '%s' in: %s", line, text);
    }
    cr_assert_eq(count_substrings(text, "STATS_NULL_OUT: "), 0, "the runtime is checked first: %s", text);
    free(text);
}

/* Misuse that reaches a runtime is counted in api_errors, and logged as an error with
 * its item; NULL objects cannot reach one; warnings and refusals of memory are not
 * misuse. */
Test(runtime, api_errors_count_misuse) {
    kiln_desc desc = recording_desc(rec);
    desc.frame_budget = 100;
    kiln_runtime *rt = kiln_create(&desc);
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_ctx *other = kiln_attach(rt);
    kiln_arena *level = kiln_arena_create(rt, "level");
    kiln_arena *other_arena = kiln_arena_create(rt, "other");
    cr_assert(rt && ctx && other && level && other_arena);

    cr_assert_null(kiln_arena_alloc(level, 8, 24));                    /* ARENA_BAD_ALIGN */
    cr_assert_not_null(kiln_arena_alloc(other_arena, 8, 8));
    kiln_arena_release(level, kiln_arena_mark(other_arena));           /* ARENA_BAD_MARK */
    kiln_frame_end(ctx);                                               /* FRAME_END_WITHOUT_BEGIN */
    kiln_frame_begin(ctx);
    kiln_frame_begin(ctx);                                             /* FRAME_ALREADY_OPEN */
    kiln_frame_begin(other);                                           /* FRAME_NOT_DRIVER */
    kiln_arena_destroy(kiln_frame_arena(ctx));                         /* ARENA_IS_FRAME_ARENA */
    cr_assert(!kiln_stats_get(rt, NULL));                              /* STATS_NULL_OUT */
    cr_assert_not_null(kiln_frame_alloc(ctx, 1000, 8));                /* a warning, not misuse */
    kiln_frame_end(ctx);

    const kiln_log_item items[] = {
        KILN_LOGITEM_ARENA_BAD_ALIGN, KILN_LOGITEM_ARENA_BAD_MARK, KILN_LOGITEM_FRAME_END_WITHOUT_BEGIN,
        KILN_LOGITEM_FRAME_ALREADY_OPEN, KILN_LOGITEM_FRAME_NOT_DRIVER, KILN_LOGITEM_ARENA_IS_FRAME_ARENA,
        KILN_LOGITEM_STATS_NULL_OUT,
    };
    size_t n = sizeof items / sizeof items[0];
    for (size_t i = 0; i < n; i++) {
        const char *name = kiln_log_item_name(items[i]);
        cr_assert_eq(count_items(rec, items[i]), 1, "%s:%s", name, recorded_summary(rec));
        cr_assert_eq(count_items_at(rec, items[i], KILN_LOG_ERROR), 1, "%s is an error", name);
    }
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED, KILN_LOG_WARN), 1);
    cr_assert_eq(runtime_stats(rt).api_errors, n);

    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_arena_alloc(NULL, 8, 8);
    kiln_frame_alloc(NULL, 8, 8);
    kiln_attach(NULL);
    char *text = stderr_capture_end(&cap);
    free(text);
    cr_assert_eq(runtime_stats(rt).api_errors, n, "NULL objects cannot reach the runtime");
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_FRAME_BUDGET_NEAR, KILN_LOG_WARN), 1);
    cr_assert_eq(recorded_count(rec), n + 2, "log:%s", recorded_summary(rec));

    kiln_arena_destroy(level);
    kiln_arena_destroy(other_arena);
    kiln_detach(other);
    kiln_detach(ctx);
    kiln_destroy(rt);
}

Test(runtime, destroy_reports_and_frees_live_objects) {
    kiln_desc desc = recording_desc(rec);
    kiln_runtime *rt = kiln_create(&desc);
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_arena *level = kiln_arena_create(rt, "level");
    cr_assert(ctx && level);
    unsigned char *p = kiln_arena_alloc(level, 5000, 8);
    unsigned char *many = NULL;
    for (int i = 0; i < 200; i++) many = kiln_arena_alloc(level, 1000, 8);
    unsigned char *large = kiln_arena_alloc(level, 3 * BS, 16);
    unsigned char *scratch = kiln_frame_alloc(ctx, 2 * BS, 16);
    cr_assert(p && many && large && scratch);
    memset(large, 1, 3 * BS);
    memset(scratch, 2, 2 * BS);
    size_t used = arena_stats(level).bytes_in_use;

    kiln_destroy(rt);

    cr_assert_eq(count_items(rec, KILN_LOGITEM_CONTEXT_STILL_ATTACHED), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_CONTEXT_STILL_ATTACHED, "context 1 "), 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_STILL_ALIVE), 1, "the frame arena goes with its context:%s",
                 recorded_summary(rec));
    char figures[128];
    snprintf(figures, sizeof figures, "arena 'level' is still alive (%zu bytes in use)", used);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_STILL_ALIVE, figures), 1, "want '%s':%s", figures,
                 recorded_summary(rec));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_ARENA_STILL_ALIVE, KILN_LOG_WARN), 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_BLOCK_POOL_BLOCKS_LIVE), 0, "everything was handed back first");
    cr_assert_eq(recorded_count(rec), 2, "log:%s", recorded_summary(rec));
    cr_assert(!range_is_mapped(p, 5000), "arena memory still mapped after destroy");
    cr_assert(!range_is_mapped(many, 1000), "arena memory still mapped after destroy");
    cr_assert(!range_is_mapped(large, 3 * BS), "large mapping still mapped after destroy");
    cr_assert(!range_is_mapped(scratch, 2 * BS), "frame memory still mapped after destroy");
}

Test(runtime, destroy_with_nothing_live_logs_nothing) {
    kiln_desc desc = recording_desc(rec);
    kiln_runtime *rt = kiln_create(&desc);
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert_not_null(kiln_arena_alloc(a, 100000, 8));
    kiln_arena_destroy(a);
    kiln_detach(ctx);
    kiln_destroy(rt);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

Test(runtime, stats_arenas_lists_newest_first) {
    kiln_desc desc = recording_desc(rec);
    kiln_runtime *rt = kiln_create(&desc);
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_arena *a = kiln_arena_create(rt, "a");
    kiln_arena *b = kiln_arena_create(rt, "b");
    kiln_arena *c = kiln_arena_create(rt, "c");
    cr_assert_not_null(kiln_arena_alloc(b, 777, 1));

    cr_assert_eq(kiln_stats_arenas(rt, NULL, 0), 4);
    cr_assert_eq(kiln_stats_arenas(rt, NULL, 5), 0, "out may be NULL only with cap 0");
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_STATS_NULL_OUT, KILN_LOG_ERROR), 1, "log:%s", recorded_summary(rec));
    kiln_arena_stats out[6];
    memset(out, 0xAB, sizeof out);
    cr_assert_eq(kiln_stats_arenas(rt, out, 6), 4);
    cr_assert_str_eq(out[0].name, "c");
    cr_assert_str_eq(out[1].name, "b");
    cr_assert_str_eq(out[2].name, "a");
    cr_assert_str_eq(out[3].name, "frame ctx 1");
    cr_assert_eq(out[1].bytes_in_use, 777);
    unsigned char untouched[sizeof out[4]];
    memset(untouched, 0xAB, sizeof untouched);
    cr_assert_eq(memcmp(&out[4], untouched, sizeof untouched), 0, "wrote past the live arenas");

    memset(out, 0xAB, sizeof out);
    cr_assert_eq(kiln_stats_arenas(rt, out, 2), 4, "the count may exceed cap");
    cr_assert_str_eq(out[1].name, "b");
    cr_assert_eq(memcmp(&out[2], untouched, sizeof untouched), 0, "wrote past cap");

    kiln_arena_destroy(b);
    cr_assert_eq(kiln_stats_arenas(rt, out, 6), 3);
    cr_assert_str_eq(out[0].name, "c");
    cr_assert_str_eq(out[1].name, "a");
    cr_assert_eq(runtime_stats(rt).arenas, 3);
    kiln_arena_destroy(a);
    kiln_arena_destroy(c);
    kiln_detach(ctx);
    cr_assert_eq(kiln_stats_arenas(rt, out, 6), 0);
    kiln_destroy(rt);
}

Test(runtime, stats_add_up) {
    kiln_desc desc = recording_desc(rec);
    kiln_runtime *rt = kiln_create(&desc);
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_arena *a = kiln_arena_create(rt, "a");
    kiln_arena *b = kiln_arena_create(rt, "b");
    for (int i = 0; i < 300; i++) cr_assert_not_null(kiln_arena_alloc(a, 1000, 8));
    for (int i = 0; i < 100; i++) cr_assert_not_null(kiln_arena_alloc(b, 1000, 8));
    cr_assert_not_null(kiln_arena_alloc(b, 100000, 16));   /* maps 100000 + header, in pages */
    kiln_frame_begin(ctx);
    for (int i = 0; i < 150; i++) cr_assert_not_null(kiln_frame_alloc(ctx, 1000, 8));

    kiln_stats s = runtime_stats(rt);
    kiln_arena_stats fa = arena_stats(kiln_frame_arena(ctx));
    kiln_arena_stats as = arena_stats(a), bs = arena_stats(b);
    cr_assert_eq(s.blocks.blocks_in_use + s.blocks.blocks_free, s.blocks.blocks_reserved);
    cr_assert_eq(s.blocks.blocks_in_use, (uint64_t)fa.blocks_held + as.blocks_held + bs.blocks_held);
    cr_assert_eq(s.blocks.gets, fa.blocks_taken + as.blocks_taken + bs.blocks_taken);
    cr_assert_eq(s.blocks.blocks_reserved, 64, "one reservation of 64 blocks so far");
    cr_assert_eq(s.blocks.large_mappings, 1);
    cr_assert_eq(s.blocks.os_maps, 2);
    cr_assert_eq(s.blocks.reserved_bytes, 64 * BS + 102400, "reserved %zu", s.blocks.reserved_bytes);
    cr_assert_eq(s.blocks.peak_reserved_bytes, s.blocks.reserved_bytes);
    cr_assert_eq(s.blocks.blocks_peak, s.blocks.blocks_in_use);
    cr_assert_eq(s.blocks.failures, 0);
    cr_assert_eq(s.contexts, 1);
    cr_assert_eq(s.arenas, 3);
    cr_assert_eq(s.frame, 1);
    cr_assert_eq(as.allocs, 300);
    cr_assert_eq(bs.allocs, 101);
    cr_assert_eq(bs.large_allocs, 1);
    cr_assert_eq(bs.bytes_in_use, 100 * 1000 + 100000);
    cr_assert_eq(fa.bytes_in_use, 150 * 1000);

    kiln_frame_end(ctx);
    uint64_t peak = s.blocks.blocks_peak;
    kiln_arena_destroy(a);
    s = runtime_stats(rt);
    fa = arena_stats(kiln_frame_arena(ctx));
    bs = arena_stats(b);
    cr_assert_eq(s.blocks.blocks_in_use + s.blocks.blocks_free, s.blocks.blocks_reserved);
    cr_assert_eq(s.blocks.blocks_in_use, (uint64_t)fa.blocks_held + bs.blocks_held);
    cr_assert_eq(s.blocks.blocks_peak, peak, "the peak stays");
    kiln_arena_destroy(b);
    s = runtime_stats(rt);
    cr_assert_eq(s.blocks.reserved_bytes, 64 * BS, "the large mapping went with its arena");
    cr_assert_eq(s.blocks.peak_reserved_bytes, 64 * BS + 102400);
    cr_assert_eq(s.blocks.large_mappings, 0);
    kiln_detach(ctx);
    s = runtime_stats(rt);
    cr_assert_eq(s.blocks.blocks_in_use, 0);
    cr_assert_eq(s.blocks.blocks_free, s.blocks.blocks_reserved);
    kiln_destroy(rt);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

Test(runtime, contexts_attach_and_detach) {
    kiln_desc desc = recording_desc(rec);
    kiln_runtime *rt = kiln_create(&desc);
    enum { N = 40 };
    kiln_ctx *ctxs[N];
    for (int i = 0; i < N; i++) {
        ctxs[i] = kiln_attach(rt);
        cr_assert_not_null(ctxs[i]);
        cr_assert_eq(kiln_ctx_runtime(ctxs[i]), rt);
        char name[32];
        snprintf(name, sizeof name, "frame ctx %d", i + 1);
        cr_assert_str_eq(arena_stats(kiln_frame_arena(ctxs[i])).name, name);
        cr_assert_not_null(kiln_frame_alloc(ctxs[i], 100, 8));
    }
    cr_assert_eq(runtime_stats(rt).contexts, N);
    cr_assert_eq(runtime_stats(rt).arenas, N);
    for (int i = 0; i < N; i += 2) kiln_detach(ctxs[i]);
    kiln_stats s = runtime_stats(rt);
    cr_assert_eq(s.contexts, N / 2);
    cr_assert_eq(s.arenas, N / 2);
    cr_assert_eq(s.blocks.blocks_in_use, N / 2);
    kiln_ctx *again = kiln_attach(rt);
    cr_assert_str_eq(arena_stats(kiln_frame_arena(again)).name, "frame ctx 41", "ids are not reused");
    kiln_detach(again);
    for (int i = 1; i < N; i += 2) kiln_detach(ctxs[i]);
    s = runtime_stats(rt);
    cr_assert_eq(s.contexts, 0);
    cr_assert_eq(s.arenas, 0);
    cr_assert_eq(s.blocks.blocks_in_use, 0);
    kiln_destroy(rt);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

Test(runtime, runtimes_are_independent) {
    kiln_desc desc = recording_desc(rec);
    kiln_runtime *one = kiln_create(&desc);
    desc.block_size = (size_t)128 << 10;
    kiln_runtime *two = kiln_create(&desc);
    kiln_arena *a = kiln_arena_create(one, "one");
    kiln_arena *b = kiln_arena_create(two, "two");
    cr_assert_not_null(kiln_arena_alloc(a, 40000, 8));
    cr_assert_not_null(kiln_arena_alloc(a, 40000, 8));   /* a second block */
    kiln_stats s1 = runtime_stats(one), s2 = runtime_stats(two);
    cr_assert_eq(s1.arenas, 1);
    cr_assert_eq(s2.arenas, 1);
    cr_assert_eq(s1.blocks.blocks_in_use, 2);
    cr_assert_eq(s2.blocks.blocks_in_use, 1);
    cr_assert_eq(s2.blocks.block_size, (size_t)128 << 10);
    kiln_destroy(one);   /* reports 'one' only */
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_STILL_ALIVE, "'one'"), 1, "log:%s", recorded_summary(rec));
    cr_assert_not_null(kiln_arena_alloc(b, 100000, 8), "the other runtime is untouched");
    kiln_arena_destroy(b);
    kiln_destroy(two);
    cr_assert_eq(recorded_count(rec), 1, "log:%s", recorded_summary(rec));
}

Test(runtime, trim_gives_free_blocks_back) {
    kiln_desc desc = recording_desc(rec);
    kiln_runtime *rt = kiln_create(&desc);
    kiln_arena *a = kiln_arena_create(rt, "level");
    enum { N = 600 };
    for (int i = 0; i < N; i++) {
        unsigned char *p = kiln_arena_alloc(a, 1000, 8);
        cr_assert_not_null(p);
        memset(p, 0x6B, 1000);
    }
    kiln_arena_stats as;
    cr_assert(kiln_arena_stats_get(a, &as));
    size_t used = as.blocks_held;
    kiln_arena_destroy(a);   /* its ten blocks go back to the pool */
    kiln_stats s = runtime_stats(rt);
    cr_assert_eq(s.blocks.blocks_in_use, 0);
    cr_assert_eq(s.blocks.blocks_free, 64);

    size_t trimmed = kiln_trim(rt);
    cr_assert_gt(trimmed, 0);
    cr_assert_eq(trimmed, used * BS, "every block that was used is given back; the never used "
                 "ones hold no page to give");
    s = runtime_stats(rt);
    cr_assert_eq(s.blocks.trims, 1);
    cr_assert_eq(s.blocks.trimmed_bytes, used * BS);
    cr_assert_eq(s.blocks.reserved_bytes, 64 * BS, "trim keeps the address space");
    cr_assert_eq(s.blocks.blocks_free, 64);

    /* The blocks stay usable: the same work again, written and read back. */
    kiln_arena *b = kiln_arena_create(rt, "again");
    static unsigned char *ptrs[N];
    for (int i = 0; i < N; i++) {
        ptrs[i] = kiln_arena_alloc(b, 1000, 8);
        cr_assert_not_null(ptrs[i]);
        fill_pattern(ptrs[i], 1000, (uint32_t)i);
    }
    for (int i = 0; i < N; i++) cr_assert(check_pattern(ptrs[i], 1000, (uint32_t)i), "allocation %d", i);
    s = runtime_stats(rt);
    cr_assert_eq(s.blocks.blocks_reserved, 64, "trimmed blocks were reused, nothing new reserved");
    cr_assert_eq(s.blocks.os_maps, 1);
    size_t second = kiln_trim(rt);
    cr_assert_eq(second, 0, "the free blocks were trimmed already and not used since");
    cr_assert_eq(runtime_stats(rt).blocks.trims, 2);
    for (int i = 0; i < N; i++)
        cr_assert(check_pattern(ptrs[i], 1000, (uint32_t)i), "trim touched a block in use (%d)", i);
    kiln_arena_destroy(b);
    kiln_destroy(rt);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

Test(runtime, trim_with_nothing_free_returns_zero) {
    kiln_desc desc = recording_desc(rec);
    desc.reserve_size = BS;   /* one block per reservation: nothing spare */
    kiln_runtime *rt = kiln_create(&desc);
    cr_assert_eq(kiln_trim(rt), 0, "nothing reserved yet");
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert_eq(runtime_stats(rt).blocks.blocks_free, 0);
    cr_assert_eq(kiln_trim(rt), 0);
    cr_assert_eq(runtime_stats(rt).blocks.trims, 2);
    kiln_arena_destroy(a);
    cr_assert_eq(kiln_trim(rt), BS);
    kiln_destroy(rt);
}

/* Contexts come and go on several threads at once; each thread checks its own frame
 * memory; the registry and the block counts add up afterwards. */
typedef struct churn_thread {
    kiln_runtime *rt;
    int           index;
    int           errors;
} churn_thread;

static void *churn_main(void *arg) {
    churn_thread *t = arg;
    for (int round = 0; round < 60; round++) {
        kiln_ctx *c = kiln_attach(t->rt);
        if (!c) {
            t->errors++;
            continue;
        }
        unsigned char *ptrs[40];
        for (int i = 0; i < 40; i++) {
            ptrs[i] = kiln_frame_alloc(c, 1500, 16);
            if (!ptrs[i]) {
                t->errors++;
                continue;
            }
            fill_pattern(ptrs[i], 1500, (uint32_t)(t->index * 1000 + i));
        }
        for (int i = 0; i < 40; i++)
            if (ptrs[i] && !check_pattern(ptrs[i], 1500, (uint32_t)(t->index * 1000 + i))) t->errors++;
        kiln_arena_reset(kiln_frame_arena(c));
        kiln_detach(c);
    }
    return NULL;
}

Test(runtime, contexts_churn_on_threads) {
    kiln_desc desc = recording_desc(rec);
    kiln_runtime *rt = kiln_create(&desc);
    enum { THREADS = 6 };
    churn_thread threads[THREADS];
    pthread_t ids[THREADS];
    for (int i = 0; i < THREADS; i++) {
        threads[i] = (churn_thread){ .rt = rt, .index = i };
        cr_assert_eq(pthread_create(&ids[i], NULL, churn_main, &threads[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(ids[i], NULL);
        cr_assert_eq(threads[i].errors, 0, "thread %d: %d errors", i, threads[i].errors);
    }
    kiln_stats s = runtime_stats(rt);
    cr_assert_eq(s.contexts, 0);
    cr_assert_eq(s.arenas, 0);
    cr_assert_eq(s.blocks.blocks_in_use, 0);
    cr_assert_eq(s.blocks.blocks_free, s.blocks.blocks_reserved);
    cr_assert_leq(s.blocks.blocks_peak, THREADS * 2, "at most two blocks per live context");
    kiln_ctx *last = kiln_attach(rt);
    cr_assert_str_eq(arena_stats(kiln_frame_arena(last)).name, "frame ctx 361", "ids are unique");
    kiln_detach(last);
    kiln_destroy(rt);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

/* The log callback gets log_user unchanged, from whichever thread logs. */
typedef struct user_check {
    _Atomic int calls;
    _Atomic int wrong_user;
} user_check;

static user_check the_user;

static void checking_log(void *user, kiln_log_level level, const char *message) {
    (void)level;
    (void)message;
    atomic_fetch_add(&the_user.calls, 1);
    if (user != &the_user) atomic_fetch_add(&the_user.wrong_user, 1);
}

Test(runtime, log_user_is_passed_unchanged) {
    kiln_desc desc = { .log = checking_log, .log_user = &the_user };
    kiln_runtime *rt = kiln_create(&desc);
    kiln_arena *a = kiln_arena_create(rt, "level");
    kiln_arena_alloc(a, 8, 3);
    kiln_arena_destroy(kiln_arena_create(rt, "x"));
    kiln_destroy(rt);   /* 'level' still alive: one more message */
    cr_assert_eq(atomic_load(&the_user.calls), 2);
    cr_assert_eq(atomic_load(&the_user.wrong_user), 0);
}

/* kiln_destroy frees every byte kiln malloc'd, with contexts and arenas still live
 * (the runtime, the contexts, the reservation records), and a refused kiln_create
 * frees what it took. Measured on the heap itself: exact in the ASan build only
 * (see heap_accounting_exact); the default build checks the rest. */
Test(runtime, destroy_frees_all_heap_memory) {
    size_t heap0 = heap_bytes_in_use();
    for (int round = 0; round < 3; round++) {
        kiln_desc desc = recording_desc(rec);
        kiln_runtime *rt = kiln_create(&desc);
        kiln_ctx *a = kiln_attach(rt), *b = kiln_attach(rt);
        kiln_arena *level = kiln_arena_create(rt, "level");
        kiln_arena_alloc(level, 10 * BS, 16);
        for (int i = 0; i < 70 * 65; i++) kiln_arena_alloc(level, 1000, 8);   /* two reservations */
        kiln_frame_begin(a);
        kiln_frame_alloc(a, 3 * BS, 16);
        kiln_detach(b);
        kiln_destroy(rt);   /* a and level are still live */
    }
    size_t heap1 = heap_bytes_in_use();
    if (heap_accounting_exact())
        cr_assert_eq(heap1, heap0, "kiln_destroy left %zd heap bytes behind", (ssize_t)(heap1 - heap0));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_CONTEXT_STILL_ATTACHED), 3, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_STILL_ALIVE), 3);
    cr_assert_eq(recorded_count(rec), 6, "log:%s", recorded_summary(rec));
}

Test(runtime, refused_create_frees_what_it_took) {
    size_t heap0 = heap_bytes_in_use();
    kiln_desc desc = recording_desc(rec);
    desc.block_size = 3000;
    kiln_runtime *r1 = kiln_create(&desc);
    desc.block_size = 0;
    desc.memory_limit = 10;
    kiln_runtime *r2 = kiln_create(&desc);
    size_t heap1 = heap_bytes_in_use();
    cr_assert_null(r1);
    cr_assert_null(r2);
    if (heap_accounting_exact())
        cr_assert_eq(heap1, heap0, "a refused kiln_create left %zd heap bytes", (ssize_t)(heap1 - heap0));
    cr_assert_eq(recorded_count(rec), 2, "log:%s", recorded_summary(rec));
}

/* ---- refused descs and the failures of kiln_create, each logged ---- */

/* A desc kiln_create must refuse, and a fragment of the one message it must log. */
typedef struct refused_desc {
    kiln_desc desc;
    char      figure[64];
} refused_desc;

/* Each desc is refused (NULL) with exactly one ERROR item that names its figure, and
 * nothing else is logged. */
static void assert_each_refused(const refused_desc *cases, size_t n, kiln_log_item item) {
    for (size_t i = 0; i < n; i++) {
        cr_assert_null(kiln_create(&cases[i].desc), "accepted: %s", cases[i].figure);
        cr_assert_eq(count_items_with(rec, item, cases[i].figure), 1, "%s:%s", cases[i].figure,
                     recorded_summary(rec));
    }
    cr_assert_eq(count_items_at(rec, item, KILN_LOG_ERROR), n);
    cr_assert_eq(recorded_count(rec), n, "log:%s", recorded_summary(rec));
}

/* Three values of the uint32_t desc field at offset, named name, each refused with item
 * and a message "<name> <value> <says>". */
static void assert_u32_refused(size_t offset, const char *name, const uint32_t bad[3], const char *says,
                               kiln_log_item item) {
    refused_desc cases[3];
    for (size_t i = 0; i < 3; i++) {
        cases[i].desc = recording_desc(rec);
        memcpy((char *)&cases[i].desc + offset, &bad[i], sizeof bad[i]);
        snprintf(cases[i].figure, sizeof cases[i].figure, "%s %u %s", name, bad[i], says);
    }
    assert_each_refused(cases, 3, item);
}
#define ASSERT_U32_REFUSED(field, bad, says, item) \
    assert_u32_refused(offsetof(kiln_desc, field), #field, bad, says, item)

/* A worker count the job system has no queues for is refused up front, with its item;
 * it used to reach the worker table's calloc, which failed without a word. */
Test(runtime, absurd_worker_count_is_refused) {
    const uint32_t bad[] = { UINT32_MAX - 1, KILN_MAX_WORKERS + 1, 1000 };
    ASSERT_U32_REFUSED(worker_count, bad, "is more than the 63 workers",
                       KILN_LOGITEM_WORKER_COUNT_INVALID);
}

/* desc.warn_percent is a share of a limit: over 100 is refused with its item; 100 and
 * the default are accepted. */
Test(runtime, warn_percent_over_100_is_refused) {
    const uint32_t bad[] = { 101, 1000, UINT32_MAX };
    ASSERT_U32_REFUSED(warn_percent, bad, "is over 100", KILN_LOGITEM_WARN_PERCENT_INVALID);
    kiln_desc desc = recording_desc(rec);
    desc.warn_percent = 100;
    kiln_runtime *rt = kiln_create(&desc);
    cr_assert_not_null(rt);
    kiln_destroy(rt);
}

/* desc.idle_spin_us past one second is refused with its item; the most is accepted and
 * read back. */
Test(runtime, idle_spin_over_max_is_refused) {
    const uint32_t bad[] = { KILN_MAX_IDLE_SPIN_US + 1, 10 * KILN_MAX_IDLE_SPIN_US, UINT32_MAX };
    ASSERT_U32_REFUSED(idle_spin_us, bad, "is more than KILN_MAX_IDLE_SPIN_US",
                       KILN_LOGITEM_IDLE_SPIN_INVALID);
    kiln_desc desc = recording_desc(rec);
    desc.idle_spin_us = KILN_MAX_IDLE_SPIN_US;
    kiln_runtime *rt = kiln_create(&desc);
    cr_assert_not_null(rt);
    cr_assert_eq(kiln_runtime_desc(rt).idle_spin_us, KILN_MAX_IDLE_SPIN_US);
    kiln_destroy(rt);
}

/* The episode rule every "near its limit" warning shares (base/near_limit.h): the
 * threshold is exact at the rounding edge and at sizes near SIZE_MAX, and an episode
 * ends only 10 points under it. */
Test(runtime, near_limit_episodes_have_hysteresis) {
    cr_assert(!kiln_near_limit_over(79, 100, 80));
    cr_assert(kiln_near_limit_over(80, 100, 80));
    cr_assert(!kiln_near_limit_over(7, 9, 80), "7.2 is the threshold of 80%% of 9");
    cr_assert(kiln_near_limit_over(8, 9, 80));
    cr_assert(!kiln_near_limit_over(UINT64_MAX - 1, UINT64_MAX, 100));
    cr_assert(kiln_near_limit_over(UINT64_MAX, UINT64_MAX, 100));
    cr_assert(!kiln_near_limit_over(UINT64_MAX, 0, 80), "limit 0 is no limit");
    cr_assert_eq(kiln_near_limit_next(false, 80, 100, 80), KILN_NEAR_LIMIT_START);
    cr_assert_eq(kiln_near_limit_next(true, 95, 100, 80), KILN_NEAR_LIMIT_STAY);
    cr_assert_eq(kiln_near_limit_next(true, 75, 100, 80), KILN_NEAR_LIMIT_STAY, "hovering at the line");
    cr_assert_eq(kiln_near_limit_next(true, 70, 100, 80), KILN_NEAR_LIMIT_STAY, "exactly 10 points under");
    cr_assert_eq(kiln_near_limit_next(true, 69, 100, 80), KILN_NEAR_LIMIT_END);
    cr_assert_eq(kiln_near_limit_next(false, 69, 100, 80), KILN_NEAR_LIMIT_STAY);
    cr_assert_eq(kiln_near_limit_next(true, 1, 100, 5), KILN_NEAR_LIMIT_STAY, "a low share ends at zero");
    cr_assert_eq(kiln_near_limit_next(true, 0, 100, 5), KILN_NEAR_LIMIT_END);
}

/* The worker table is the first allocation a runtime with workers makes beyond those of
 * a runtime without: failing it is logged, and the runtime is not made. */
Test(runtime, worker_table_failure_is_logged) {
    kiln_desc desc = recording_desc(rec);
    unsigned long before = kiln_sys_allocations();
    kiln_destroy(kiln_create(&desc));
    unsigned long without_workers = kiln_sys_allocations() - before;
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
    desc.worker_count = 1;
    kiln_sys_fail_nth(without_workers + 1);
    unsigned long injected = kiln_sys_injected_failures();
    kiln_runtime *rt = kiln_create(&desc);
    kiln_sys_fail_nth(0);
    cr_assert_null(rt);
    cr_assert_eq(kiln_sys_injected_failures(), injected + 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_RUNTIME_OUT_OF_MEMORY, "the table of 1 workers"), 1,
                 "log:%s", recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 1, "log:%s", recorded_summary(rec));
}

/* reserve_size is checked at create: SIZE_MAX used to make a runtime whose every block
 * request failed ("the OS refused a mapping of 0 bytes": blocks * block_size overflowed). */
Test(runtime, reserve_size_beyond_the_limit_is_refused) {
    size_t most = (size_t)((1u << 24) - 1) * BS;   /* the free list counts 2^24 - 1 blocks */
    const size_t bad[] = { SIZE_MAX, SIZE_MAX - BS, (size_t)1 << 47, most + 1 };
    refused_desc cases[4];
    for (size_t i = 0; i < 4; i++) {
        cases[i].desc = recording_desc(rec);
        cases[i].desc.reserve_size = bad[i];
        snprintf(cases[i].figure, sizeof cases[i].figure, "reserve_size %zu is more than", bad[i]);
    }
    assert_each_refused(cases, 4, KILN_LOGITEM_RESERVE_SIZE_INVALID);
    /* The edge is fine, and so is a huge reserve_size under a memory_limit that cuts it. */
    kiln_desc desc = recording_desc(rec);
    desc.reserve_size = most;
    kiln_runtime *rt = kiln_create(&desc);
    cr_assert_not_null(rt, "log:%s", recorded_summary(rec));
    kiln_destroy(rt);
    desc.reserve_size = most;
    desc.memory_limit = 4 * BS;
    rt = kiln_create(&desc);
    kiln_ctx *ctx = kiln_attach(rt);
    cr_assert(rt && ctx, "log:%s", recorded_summary(rec));
    cr_assert_eq(runtime_stats(rt).blocks.reserved_bytes, 4 * BS, "the reservation is cut to the limit");
    kiln_detach(ctx);
    kiln_destroy(rt);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_NEAR), 1, "the cut reservation is the whole limit");
    cr_assert_eq(recorded_count(rec), 5, "nothing more logged:%s", recorded_summary(rec));
}

/* Unknown debug bits: one warning at create, and dropped from the desc the runtime runs with. */
Test(runtime, unknown_debug_bits_are_dropped_with_a_warning) {
    kiln_desc desc = recording_desc(rec);
    desc.debug = KILN_DEBUG_FILL | 0x80u | 0x10000u;
    kiln_runtime *rt = kiln_create(&desc);
    cr_assert_not_null(rt, "log:%s", recorded_summary(rec));
    cr_assert_eq(kiln_runtime_desc(rt).debug, KILN_DEBUG_FILL);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_DEBUG_UNKNOWN_BITS, KILN_LOG_WARN), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_DEBUG_UNKNOWN_BITS),
                     "DEBUG_UNKNOWN_BITS: kiln_create: debug bits 0x10080 are not KILN_DEBUG_* "
                     "bits; ignored");
    cr_assert_eq(runtime_stats(rt).api_errors, 0, "a warning, not misuse");
    kiln_destroy(rt);
    cr_assert_eq(recorded_count(rec), 1, "log:%s", recorded_summary(rec));
}

/* A context detached twice (or used after its detach) names its runtime: the report goes
 * through that runtime's log and counts in api_errors; only a pointer that was never a
 * context goes to stderr. */
Test(runtime, detached_context_is_reported_through_its_runtime) {
    kiln_desc desc = recording_desc(rec);
    kiln_runtime *rt = kiln_create(&desc);
    kiln_ctx *ctx = kiln_attach(rt);
    cr_assert(rt && ctx);
    kiln_detach(ctx);
    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_detach(ctx);
    uint64_t frame = kiln_frame_begin(ctx);
    char *text = stderr_capture_end(&cap);
    cr_assert_str_eq(text, "", "stderr: %s", text);
    free(text);
    cr_assert_eq(frame, 0);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_CONTEXT_DETACHED, KILN_LOG_ERROR), 2, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_CONTEXT_DETACHED, "kiln_detach: context 1 has been detached"),
                 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_CONTEXT_DETACHED, "kiln_frame_begin: context 1"), 1);
    cr_assert_eq(runtime_stats(rt).api_errors, 2);
    /* The memory is reused by the next attach, which is a context again. */
    kiln_ctx *again = kiln_attach(rt);
    cr_assert_not_null(again);
    cr_assert_eq(kiln_frame_begin(again), 1);
    kiln_frame_end(again);
    kiln_detach(again);
    kiln_destroy(rt);
    cr_assert_eq(recorded_count(rec), 2, "log:%s", recorded_summary(rec));
}

Test(runtime, non_context_pointer_is_reported_on_stderr) {
    static _Alignas(64) unsigned char junk[1 << 16];   /* zeroed: no magic at all */
    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_detach((kiln_ctx *)(void *)junk);
    char *text = stderr_capture_end(&cap);
    cr_assert_eq(count_substrings(text, "kiln error: CONTEXT_INVALID: kiln_detach: "), 1, "stderr: %s", text);
    cr_assert_eq(count_substrings(text, "is not a kiln context"), 1, "stderr: %s", text);
    free(text);
}

/* kiln_runtime_desc gives a desc kiln_create takes back to the same effect: no workers
 * reads KILN_NO_WORKERS (0 would mean one per CPU minus one), and reserve_size the whole
 * blocks asked of the OS. */
Test(runtime, runtime_desc_reads_back_as_kiln_create_takes_it) {
    kiln_desc desc = recording_desc(rec);   /* KILN_NO_WORKERS */
    desc.reserve_size = 1;
    kiln_runtime *rt = kiln_create(&desc);
    cr_assert_not_null(rt);
    kiln_desc d = kiln_runtime_desc(rt);
    cr_assert_eq(d.worker_count, KILN_NO_WORKERS);
    cr_assert_eq(d.reserve_size, d.block_size, "one byte rounds up to one block");
    kiln_runtime *again = kiln_create(&d);
    cr_assert_not_null(again);
    cr_assert_eq(kiln_runtime_desc(again).worker_count, KILN_NO_WORKERS);
    kiln_stats s = runtime_stats(again);
    cr_assert_eq(s.worker_count, 0);
    kiln_destroy(again);
    kiln_destroy(rt);
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

/* A pointer that is no live runtime is refused without kiln reading it: a destroyed
 * runtime (its memory freed), a small object aligned as a runtime is, an unreadable
 * page. ASan would report a read of the first two; the page would fault. */
Test(runtime, a_pointer_that_is_no_live_runtime_is_never_read) {
    kiln_runtime *dead = kiln_create(&(kiln_desc){ .worker_count = KILN_NO_WORKERS });
    cr_assert_not_null(dead);
    kiln_destroy(dead);
    void *small = NULL;
    cr_assert_eq(posix_memalign(&small, 64, 8), 0);
    memset(small, 0, 8);
    long page = sysconf(_SC_PAGESIZE);
    void *unreadable = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(unreadable, MAP_FAILED);
    kiln_runtime *bad[] = { dead, small, unreadable };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        stderr_capture cap;
        stderr_capture_begin(&cap);
        kiln_stats s;
        cr_assert_not(kiln_stats_get(bad[i], &s));
        cr_assert_eq(kiln_frame_number(bad[i]), 0);
        cr_assert_null(kiln_attach(bad[i]));
        cr_assert_null(kiln_pool_create(bad[i], &(kiln_pool_desc){ .size = 16 }));
        cr_assert_eq(kiln_stats_pools(bad[i], NULL, 0), 0);
        kiln_destroy(bad[i]);
        char *err = stderr_capture_end(&cap);
        cr_assert_eq(count_substrings(err, "RUNTIME_INVALID: "), 6, "case %zu: %s", i, err);
        free(err);
    }
    munmap(unreadable, (size_t)page);
    free(small);
}
