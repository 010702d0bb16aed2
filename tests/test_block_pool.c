/* tests/test_block_pool.c — the global block pool: blocks aligned to their size,
 * reservations, the LIFO, memory_limit (refusals logged once per episode), injected
 * OS map failures (NULL, logged, counted, nothing leaked), trim, fini's report, and
 * gets and puts from several threads. Both through the public API and directly
 * through alloc/block_pool.h. */
#define _DEFAULT_SOURCE   /* pthread barriers, sysconf */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc/block_pool.h"
#include "alloc/os.h"
#include "recording_log.h"

#define BS ((size_t)64 << 10)

static recording_log *rec;
static _Alignas(KILN_CACHE_LINE) kiln_block_pool pool;   /* for the direct tests */

static void setup(void) { rec = recording_log_new(); }
static void teardown(void) {
    kiln_os_fail_nth_map(0);   /* never leave an injection armed */
    recording_log_free(rec);
    rec = NULL;
}
TestSuite(block_pool, .init = setup, .fini = teardown);

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

static kiln_block_pool_stats pool_stats(kiln_block_pool *p) {
    kiln_block_pool_stats s;
    kiln_block_pool_stats_get(p, &s);
    return s;
}

/* The sink a runtime would give its block pool, into rec: both callbacks. */
static kiln_log_sink recording_sink(void) {
    return (kiln_log_sink){ .fn = recording_log_fn, .user = rec, .item_fn = recording_log_item_fn };
}

static void pool_init(size_t block_size, size_t reserve_bytes, size_t memory_limit) {
    kiln_block_pool_config config = {
        .block_size = block_size,
        .reserve_bytes = reserve_bytes,
        .memory_limit = memory_limit,
        .log = recording_sink(),
    };
    cr_assert(kiln_block_pool_init(&pool, &config), "init failed:%s", recorded_summary(rec));
}

static kiln_runtime *limited_runtime(size_t memory_limit, size_t reserve_size) {
    kiln_desc desc = recording_desc(rec);
    desc.memory_limit = memory_limit;
    desc.reserve_size = reserve_size;
    kiln_runtime *rt = kiln_create(&desc);
    cr_assert_not_null(rt, "log:%s", recorded_summary(rec));
    return rt;
}

/* ---- the pool itself ---- */

Test(block_pool, blocks_are_aligned_to_their_size_and_distinct) {
    pool_init(BS, 16 * BS, 0);
    enum { N = 100 };
    void *blocks[N];
    for (int i = 0; i < N; i++) {
        blocks[i] = kiln_block_get(&pool);
        cr_assert_not_null(blocks[i]);
        cr_assert_eq((uintptr_t)blocks[i] % BS, 0, "block %p is not aligned to its size", blocks[i]);
        cr_assert_eq(kiln_block_of(&pool, (char *)blocks[i] + BS - 1), blocks[i]);
        cr_assert_eq(kiln_block_of(&pool, (char *)blocks[i] + 12345), blocks[i]);
        fill_pattern(blocks[i], BS, (uint32_t)i);
    }
    for (int i = 0; i < N; i++) {
        cr_assert(check_pattern(blocks[i], BS, (uint32_t)i), "block %d overlaps another", i);
        for (int j = 0; j < i; j++) cr_assert_neq(blocks[i], blocks[j]);
    }
    kiln_block_pool_stats s = pool_stats(&pool);
    cr_assert_eq(s.blocks_in_use, N);
    cr_assert_eq(s.blocks_reserved, 112, "seven reservations of 16 blocks");
    cr_assert_eq(s.os_maps, 7);
    cr_assert_eq(s.reserved_bytes, 112 * BS);
    cr_assert_eq(s.gets, N);
    cr_assert_eq(s.blocks_free, 12);
    for (int i = 0; i < N; i++) kiln_block_put(&pool, blocks[i]);
    s = pool_stats(&pool);
    cr_assert_eq(s.blocks_in_use, 0);
    cr_assert_eq(s.blocks_free, 112);
    cr_assert_eq(s.blocks_peak, N);
    kiln_block_pool_fini(&pool);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

Test(block_pool, put_then_get_is_last_in_first_out) {
    pool_init(BS, 8 * BS, 0);
    void *a = kiln_block_get(&pool), *b = kiln_block_get(&pool), *c = kiln_block_get(&pool);
    kiln_block_put(&pool, a);
    kiln_block_put(&pool, c);
    kiln_block_put(&pool, b);
    cr_assert_eq(kiln_block_get(&pool), b);
    cr_assert_eq(kiln_block_get(&pool), c);
    cr_assert_eq(kiln_block_get(&pool), a);
    kiln_block_put(&pool, a);
    kiln_block_put(&pool, b);
    kiln_block_put(&pool, c);
    cr_assert_eq(pool_stats(&pool).os_maps, 1, "recycled blocks, one reservation");
    kiln_block_pool_fini(&pool);
}

Test(block_pool, reservation_is_rounded_to_whole_blocks) {
    pool_init(BS, 100000, 0);   /* 1.5 blocks: rounded up to 2 */
    void *a = kiln_block_get(&pool);
    kiln_block_pool_stats s = pool_stats(&pool);
    cr_assert_eq(s.blocks_reserved, 2);
    cr_assert_eq(s.reserved_bytes, 2 * BS);
    void *b = kiln_block_get(&pool);
    cr_assert_eq(pool_stats(&pool).os_maps, 1);
    void *c = kiln_block_get(&pool);
    cr_assert_eq(pool_stats(&pool).os_maps, 2);
    cr_assert_eq(pool_stats(&pool).blocks_reserved, 4);
    kiln_block_put(&pool, a);
    kiln_block_put(&pool, b);
    kiln_block_put(&pool, c);
    kiln_block_pool_fini(&pool);
}

/* A large reservation is address space: its blocks go onto the free list a batch at a
 * time as they are needed, so only the pages of handed-out batches are ever touched
 * (the free list's link word is the first word of each free block). Its counts add up
 * all the while, and every block comes out exactly once. */
Test(block_pool, a_large_reservation_touches_only_the_blocks_handed_out) {
    const size_t blocks = 4096;
    pool_init(BS, blocks * BS, 0);
    void *first = kiln_block_get(&pool);
    cr_assert_not_null(first);
    kiln_block_pool_stats s = pool_stats(&pool);
    cr_assert_eq(s.blocks_reserved, blocks);
    cr_assert_eq(s.blocks_in_use, 1);
    cr_assert_eq(s.blocks_free, blocks - 1);
    char *base = (char *)((uintptr_t)first & ~(uintptr_t)(BS - 1));
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t touched = 0;
    for (size_t b = 0; b < blocks; b++) touched += resident_pages(base + b * BS, page);
    cr_assert_leq(touched, 64, "%zu of %zu blocks' first pages are resident", touched, blocks);
    /* Every block, once: the batches carve the whole reservation and then it is empty. */
    static void *got[4096];
    got[0] = first;
    for (size_t i = 1; i < blocks; i++) {
        got[i] = kiln_block_get(&pool);
        cr_assert_not_null(got[i]);
        cr_assert_eq(((uintptr_t)got[i] - (uintptr_t)base) % BS, 0);
    }
    cr_assert_eq(pool_stats(&pool).os_maps, 1, "one reservation served them all");
    cr_assert_eq(pool_stats(&pool).blocks_in_use, blocks);
    for (size_t i = 0; i < blocks; i++) kiln_block_put(&pool, got[i]);
    cr_assert_eq(pool_stats(&pool).blocks_in_use, 0);
    kiln_block_pool_fini(&pool);
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

Test(block_pool, init_refuses_bad_config) {
    kiln_block_pool_config config = { .block_size = 0, .log = recording_sink() };
    cr_assert(!kiln_block_pool_init(&pool, &config));
    config.block_size = 12288;
    cr_assert(!kiln_block_pool_init(&pool, &config));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_BLOCK_SIZE_INVALID), 2, "log:%s", recorded_summary(rec));
    config.block_size = BS;
    config.memory_limit = BS / 2;
    cr_assert(!kiln_block_pool_init(&pool, &config));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_INVALID), 1, "log:%s", recorded_summary(rec));
}

Test(block_pool, fini_reports_blocks_still_in_use) {
    pool_init(BS, 4 * BS, 0);
    void *a = kiln_block_get(&pool);
    void *b = kiln_block_get(&pool);
    kiln_block_put(&pool, a);
    kiln_block_pool_fini(&pool);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_BLOCK_POOL_BLOCKS_LIVE), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_BLOCK_POOL_BLOCKS_LIVE, "1 blocks still in use"), 1);
    cr_assert(!range_is_mapped(b, BS), "fini unmaps every reservation");
}

Test(block_pool, large_mappings_are_counted) {
    pool_init(BS, 4 * BS, 0);
    void *p = kiln_block_pool_map_large(&pool, 100000, 8192, true);
    cr_assert_not_null(p);
    cr_assert_eq((uintptr_t)p % 8192, 0);
    memset(p, 1, 100000);
    kiln_block_pool_stats s = pool_stats(&pool);
    cr_assert_eq(s.large_mappings, 1);
    cr_assert_eq(s.reserved_bytes, 102400, "rounded up to pages");
    cr_assert_eq(s.blocks_reserved, 0);
    kiln_block_pool_unmap_large(&pool, p, 100000);
    s = pool_stats(&pool);
    cr_assert_eq(s.large_mappings, 0);
    cr_assert_eq(s.reserved_bytes, 0);
    cr_assert_eq(s.peak_reserved_bytes, 102400);
    cr_assert(!range_is_mapped(p, 100000));
    kiln_block_pool_fini(&pool);
}

Test(block_pool, trim_decommits_free_blocks) {
    pool_init(BS, 8 * BS, 0);
    void *blocks[8];
    uintptr_t low = UINTPTR_MAX;
    for (int i = 0; i < 8; i++) {
        blocks[i] = kiln_block_get(&pool);
        memset(blocks[i], 0x3C, BS);
        if ((uintptr_t)blocks[i] < low) low = (uintptr_t)blocks[i];
    }
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t pages_per_block = BS / page;
    cr_assert_eq(resident_pages((void *)low, 8 * BS), 8 * pages_per_block, "written blocks are resident");
    for (int i = 0; i < 8; i++) kiln_block_put(&pool, blocks[i]);
    cr_assert_eq(kiln_block_pool_trim(&pool), 8 * BS);
    /* Only the page holding each block's free-list link is touched again. */
    cr_assert_leq(resident_pages((void *)low, 8 * BS), 8, "trim left pages resident");
    for (int i = 0; i < 8; i++) {
        unsigned char *b = kiln_block_get(&pool);
        cr_assert_not_null(b);
        cr_assert_eq(b[BS - 1], 0, "a trimmed page reads as zero");
        cr_assert_eq(b[page], 0);
        memset(b, 0x4D, BS);
        cr_assert_eq(b[BS / 2], 0x4D);
        blocks[i] = b;
    }
    cr_assert_eq(pool_stats(&pool).blocks_reserved, 8, "trimmed blocks came back, nothing new");
    for (int i = 0; i < 8; i++) kiln_block_put(&pool, blocks[i]);
    kiln_block_pool_fini(&pool);
}

/* ---- memory_limit ---- */

/* The case: allocate until NULL; one log line however many refusals follow. */
Test(block_pool, memory_limit_reached_logs_once) {
    kiln_runtime *rt = limited_runtime(4 * BS, 4096);
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert_not_null(a);
    int ok = 0;
    while (kiln_arena_alloc(a, 1000, 8) != NULL) {
        ok++;
        cr_assert_lt(ok, 1000, "memory_limit never reached");
    }
    cr_assert_geq(ok, 4 * 60, "four blocks' worth succeeded (%d)", ok);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_REACHED), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_MEMORY_LIMIT_REACHED, KILN_LOG_ERROR), 1);
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_MEMORY_LIMIT_REACHED),
                     "MEMORY_LIMIT_REACHED: block pool: memory_limit of 262144 bytes reached "
                     "(262144 reserved, 65536 more asked)");
    for (int i = 0; i < 5; i++) cr_assert_null(kiln_arena_alloc(a, 1000, 8));
    cr_assert_null(kiln_arena_alloc(a, 3 * BS, 8), "a large mapping is refused too");
    cr_assert_null(kiln_arena_create(rt, "more"), "and a new arena");
    cr_assert_eq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_REACHED), 1, "still one line:%s", recorded_summary(rec));

    kiln_arena_stats as = arena_stats(a);
    cr_assert_eq(as.failures, 7);
    cr_assert_eq(as.allocs, (uint64_t)ok);
    cr_assert_eq(as.blocks_held, 4);
    kiln_stats s = runtime_stats(rt);
    cr_assert_eq(s.blocks.failures, 8);
    cr_assert_eq(s.blocks.reserved_bytes, 4 * BS);
    cr_assert_eq(s.blocks.blocks_reserved, 4);
    cr_assert_eq(s.blocks.os_maps, 4);
    cr_assert_eq(s.blocks.large_mappings, 0);
    cr_assert_eq(s.api_errors, 0, "reaching the limit is not misuse");
    cr_assert_eq(s.arenas, 1);

    /* After a reset the arena's kept blocks serve it again. */
    kiln_arena_reset(a);
    for (int i = 0; i < ok; i++) cr_assert_not_null(kiln_arena_alloc(a, 1000, 8), "after reset, %d", i);
    cr_assert_eq(runtime_stats(rt).blocks.failures, 8);

    /* Blocks back in the pool: a get succeeds, and the next episode is logged again, once. */
    kiln_arena_destroy(a);
    kiln_arena *b = kiln_arena_create(rt, "second");
    cr_assert_not_null(b, "log:%s", recorded_summary(rec));
    int ok2 = 0;
    while (kiln_arena_alloc(b, 1000, 8) != NULL) {
        ok2++;
        cr_assert_lt(ok2, 1000);
    }
    cr_assert_eq(ok2, ok);
    for (int i = 0; i < 3; i++) cr_assert_null(kiln_arena_alloc(b, 1000, 8));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_REACHED), 2, "log:%s", recorded_summary(rec));
    cr_assert_eq(arena_stats(b).failures, 4);
    cr_assert_eq(runtime_stats(rt).blocks.failures, 12);
    kiln_arena_destroy(b);
    kiln_destroy(rt);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_MEMORY_LIMIT_NEAR, KILN_LOG_WARN), 1);
    cr_assert_eq(recorded_count(rec), 3, "log:%s", recorded_summary(rec));
}

Test(block_pool, memory_limit_counts_large_mappings) {
    kiln_runtime *rt = limited_runtime(8 * BS, 4096);
    kiln_arena *a = kiln_arena_create(rt, "level");
    void *big = kiln_arena_alloc(a, 5 * BS, 16);   /* 5 blocks + a page */
    cr_assert_not_null(big);
    cr_assert_null(kiln_arena_alloc(a, 2 * BS, 16), "5 + 2 blocks and two pages do not fit in 8 - 1");
    cr_assert_eq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_REACHED), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_MEMORY_LIMIT_REACHED, "memory_limit of 524288 bytes reached"), 1);
    void *fits = kiln_arena_alloc(a, BS, 16);
    cr_assert_not_null(fits, "one more block and a page still fit:%s", recorded_summary(rec));
    kiln_stats s = runtime_stats(rt);
    cr_assert_leq(s.blocks.reserved_bytes, 8 * BS);
    cr_assert_eq(s.blocks.large_mappings, 2);
    cr_assert_eq(s.blocks.failures, 1);
    kiln_arena_destroy(a);
    cr_assert_eq(runtime_stats(rt).blocks.reserved_bytes, BS, "large mappings unmapped; the block stays");
    kiln_destroy(rt);
}

Test(block_pool, memory_limit_refuses_contexts_and_arenas) {
    kiln_runtime *rt = limited_runtime(2 * BS, 0);
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert(ctx && a, "log:%s", recorded_summary(rec));
    cr_assert_eq(runtime_stats(rt).blocks.blocks_reserved, 2, "the reservation is capped by the limit");
    cr_assert_null(kiln_arena_create(rt, "more"));
    cr_assert_null(kiln_attach(rt));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_REACHED), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_CONTEXT_OUT_OF_MEMORY), 1, "the refused attach says so");
    kiln_stats s = runtime_stats(rt);
    cr_assert_eq(s.contexts, 1);
    cr_assert_eq(s.arenas, 2);
    cr_assert_eq(s.blocks.failures, 2);
    kiln_arena_destroy(a);
    kiln_ctx *second = kiln_attach(rt);
    cr_assert_not_null(second, "room again after a destroy");
    kiln_detach(second);
    kiln_detach(ctx);
    kiln_destroy(rt);
    /* and one MEMORY_LIMIT_NEAR: the pool reached warn_percent of its limit first */
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_MEMORY_LIMIT_NEAR, KILN_LOG_WARN), 1);
    cr_assert_eq(recorded_count(rec), 3, "log:%s", recorded_summary(rec));
}

/* ---- injected OS failures ---- */

/* The case: the growth's map fails; NULL, logged once, counted, nothing
 * leaked; the next allocation succeeds. */
Test(block_pool, injected_map_failure_on_growth) {
    kiln_runtime *rt = limited_runtime(0, 4096);   /* one block per reservation */
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert_not_null(kiln_arena_alloc(a, 40000, 8));
    kiln_stats s0 = runtime_stats(rt);
    unsigned long injected0 = kiln_os_injected_failures();

    size_t heap0 = heap_bytes_in_use();
    kiln_os_fail_nth_map(1);
    void *refused = kiln_arena_alloc(a, 40000, 8);
    size_t heap1 = heap_bytes_in_use();
    cr_assert_null(refused, "needs a new block: the map fails");
    if (heap_accounting_exact())
        cr_assert_eq(heap1, heap0, "the failed growth left %zd heap bytes", (ssize_t)(heap1 - heap0));
    cr_assert_eq(kiln_os_injected_failures(), injected0 + 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_OS_MAP_FAILED), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_OS_MAP_FAILED, KILN_LOG_ERROR), 1);
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_OS_MAP_FAILED),
                     "OS_MAP_FAILED: block pool: the OS refused a mapping of 65536 bytes (65536 reserved)");
    kiln_stats s1 = runtime_stats(rt);
    cr_assert_eq(s1.blocks.failures, s0.blocks.failures + 1);
    cr_assert_eq(s1.blocks.reserved_bytes, s0.blocks.reserved_bytes, "nothing leaked");
    cr_assert_eq(s1.blocks.blocks_reserved, s0.blocks.blocks_reserved);
    cr_assert_eq(s1.blocks.os_maps, s0.blocks.os_maps);
    cr_assert_eq(s1.blocks.blocks_in_use, s0.blocks.blocks_in_use);
    cr_assert_eq(arena_stats(a).failures, 1);
    cr_assert_eq(s1.api_errors, 0);

    void *p = kiln_arena_alloc(a, 40000, 8);
    cr_assert_not_null(p, "the next allocation succeeds");
    memset(p, 1, 40000);
    kiln_stats s2 = runtime_stats(rt);
    cr_assert_eq(s2.blocks.os_maps, s0.blocks.os_maps + 1);
    cr_assert_eq(s2.blocks.blocks_reserved, s0.blocks.blocks_reserved + 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_OS_MAP_FAILED), 1);

    /* Two failures in a row: one line; after a success, a new failure logs again. */
    kiln_os_fail_nth_map(1);
    cr_assert_null(kiln_arena_alloc(a, 40000, 8));
    kiln_os_fail_nth_map(1);
    cr_assert_null(kiln_arena_alloc(a, 40000, 8));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_OS_MAP_FAILED), 2, "a new episode after the success:%s",
                 recorded_summary(rec));
    kiln_os_fail_nth_map(1);
    cr_assert_null(kiln_arena_alloc(a, 40000, 8));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_OS_MAP_FAILED), 2, "the same episode:%s", recorded_summary(rec));
    cr_assert_eq(arena_stats(a).failures, 4);
    cr_assert_not_null(kiln_arena_alloc(a, 40000, 8));
    kiln_arena_destroy(a);
    kiln_destroy(rt);
}

Test(block_pool, injected_map_failure_on_large_mapping) {
    kiln_runtime *rt = limited_runtime(0, 0);
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert_not_null(kiln_arena_alloc(a, 100, 8));
    kiln_stats s0 = runtime_stats(rt);
    kiln_os_fail_nth_map(1);
    cr_assert_null(kiln_arena_alloc(a, 10 * BS, 16));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_OS_MAP_FAILED), 1, "log:%s", recorded_summary(rec));
    kiln_stats s1 = runtime_stats(rt);
    cr_assert_eq(s1.blocks.large_mappings, s0.blocks.large_mappings);
    cr_assert_eq(s1.blocks.reserved_bytes, s0.blocks.reserved_bytes);
    cr_assert_eq(s1.blocks.failures, 1);
    kiln_arena_stats as = arena_stats(a);
    cr_assert_eq(as.failures, 1);
    cr_assert_eq(as.large_allocs, 0);
    cr_assert_eq(as.bytes_in_use, 100);
    unsigned char *p = kiln_arena_alloc(a, 10 * BS, 16);
    cr_assert_not_null(p);
    memset(p, 2, 10 * BS);
    cr_assert_eq(runtime_stats(rt).blocks.large_mappings, 1);
    kiln_arena_destroy(a);
    kiln_destroy(rt);
}

Test(block_pool, injected_map_failure_before_first_attach) {
    kiln_runtime *rt = limited_runtime(0, 0);
    size_t heap0 = heap_bytes_in_use();
    kiln_os_fail_nth_map(1);
    kiln_ctx *refused = kiln_attach(rt);
    size_t heap1 = heap_bytes_in_use();
    cr_assert_null(refused, "the first block cannot be had");
    if (heap_accounting_exact())
        cr_assert_eq(heap1, heap0, "the refused attach left %zd heap bytes", (ssize_t)(heap1 - heap0));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_OS_MAP_FAILED), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_CONTEXT_OUT_OF_MEMORY), 1, "the refused attach says so");
    kiln_stats s = runtime_stats(rt);
    cr_assert_eq(s.contexts, 0);
    cr_assert_eq(s.arenas, 0);
    cr_assert_eq(s.blocks.reserved_bytes, 0);
    cr_assert_eq(s.blocks.blocks_reserved, 0);
    cr_assert_eq(s.blocks.failures, 1);
    kiln_ctx *ctx = kiln_attach(rt);
    cr_assert_not_null(ctx, "attach works once the OS gives memory");
    kiln_frame_begin(ctx);
    cr_assert_not_null(kiln_frame_alloc(ctx, 1000, 8));
    kiln_frame_end(ctx);
    cr_assert_eq(runtime_stats(rt).contexts, 1);
    kiln_detach(ctx);
    kiln_destroy(rt);
    cr_assert_eq(recorded_count(rec), 2, "log:%s", recorded_summary(rec));
}

Test(block_pool, injected_map_failure_on_arena_create) {
    kiln_runtime *rt = limited_runtime(0, 0);
    kiln_os_fail_nth_map(1);
    cr_assert_null(kiln_arena_create(rt, "level"));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_OS_MAP_FAILED), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(runtime_stats(rt).arenas, 0);
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert_not_null(a);
    kiln_arena_destroy(a);
    kiln_destroy(rt);
}

/* The second map from now fails, not the first: a failure in the middle of a run of
 * growths leaves everything before it intact. */
Test(block_pool, injected_failure_in_a_run_of_growths) {
    kiln_runtime *rt = limited_runtime(0, 4096);
    kiln_arena *a = kiln_arena_create(rt, "level");
    kiln_os_fail_nth_map(3);
    enum { N = 300 };
    static unsigned char *ptrs[N];
    int failed = -1;
    for (int i = 0; i < N; i++) {
        ptrs[i] = kiln_arena_alloc(a, 1000, 8);
        if (!ptrs[i]) {
            cr_assert_eq(failed, -1, "only one allocation fails");
            failed = i;
            continue;
        }
        fill_pattern(ptrs[i], 1000, (uint32_t)i);
    }
    cr_assert_neq(failed, -1, "the third map failed");
    for (int i = 0; i < N; i++)
        if (ptrs[i]) cr_assert(check_pattern(ptrs[i], 1000, (uint32_t)i), "allocation %d", i);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_OS_MAP_FAILED), 1, "log:%s", recorded_summary(rec));
    kiln_stats s = runtime_stats(rt);
    cr_assert_eq(s.blocks.blocks_in_use + s.blocks.blocks_free, s.blocks.blocks_reserved);
    cr_assert_eq(s.blocks.reserved_bytes, s.blocks.blocks_reserved * BS);
    cr_assert_eq(s.blocks.os_maps, s.blocks.blocks_reserved);
    kiln_arena_destroy(a);
    kiln_destroy(rt);
}

/* ---- threads ---- */

typedef struct pool_thread {
    int id;
    int errors;
} pool_thread;

static void *pool_thread_main(void *arg) {
    pool_thread *t = arg;
    void *held[8];
    for (int round = 0; round < 3000; round++) {
        int n = 1 + (round + t->id) % 8;
        for (int i = 0; i < n; i++) {
            held[i] = kiln_block_get(&pool);
            if (!held[i]) {
                t->errors++;
                n = i;
                break;
            }
            uint64_t *words = held[i];
            words[1] = (uint64_t)t->id << 32 | (uint64_t)round;   /* word 0 is the free-list link */
            words[BS / 8 - 1] = (uint64_t)t->id << 32 | (uint64_t)i;
        }
        for (int i = 0; i < n; i++) {
            uint64_t *words = held[i];
            if (words[1] != ((uint64_t)t->id << 32 | (uint64_t)round) ||
                words[BS / 8 - 1] != ((uint64_t)t->id << 32 | (uint64_t)i))
                t->errors++;   /* another thread had the same block */
            kiln_block_put(&pool, held[i]);
        }
    }
    return NULL;
}

Test(block_pool, gets_and_puts_from_threads) {
    pool_init(BS, 16 * BS, 0);
    enum { THREADS = 6 };
    pool_thread threads[THREADS];
    pthread_t ids[THREADS];
    for (int i = 0; i < THREADS; i++) {
        threads[i] = (pool_thread){ .id = i };
        cr_assert_eq(pthread_create(&ids[i], NULL, pool_thread_main, &threads[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(ids[i], NULL);
        cr_assert_eq(threads[i].errors, 0, "thread %d saw %d errors", i, threads[i].errors);
    }
    kiln_block_pool_stats s = pool_stats(&pool);
    cr_assert_eq(s.blocks_in_use, 0);
    cr_assert_eq(s.blocks_free, s.blocks_reserved);
    cr_assert_leq(s.blocks_peak, THREADS * 8);
    cr_assert_leq(s.blocks_reserved, THREADS * 8 + 16, "growth only when every block was taken");
    cr_assert_eq(s.failures, 0);
    /* Every block is on the LIFO exactly once: take them all, all distinct. */
    uint64_t total = s.blocks_reserved;
    void **all = calloc(total, sizeof *all);
    for (uint64_t i = 0; i < total; i++) {
        all[i] = kiln_block_get(&pool);
        cr_assert_not_null(all[i]);
        ((uint64_t *)all[i])[2] = i;
    }
    for (uint64_t i = 0; i < total; i++) cr_assert_eq(((uint64_t *)all[i])[2], i, "a block came twice");
    cr_assert_eq(pool_stats(&pool).blocks_reserved, total, "no growth: the LIFO held them all");
    for (uint64_t i = 0; i < total; i++) kiln_block_put(&pool, all[i]);
    free(all);
    kiln_block_pool_fini(&pool);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

typedef struct limit_thread {
    kiln_runtime      *rt;
    pthread_barrier_t *barrier;
    int                nulls;
    int                ok;
    int                attach_failed;
} limit_thread;

static void *limit_thread_main(void *arg) {
    limit_thread *t = arg;
    kiln_ctx *c = kiln_attach(t->rt);
    pthread_barrier_wait(t->barrier);   /* everyone holds a block before anyone allocates */
    if (!c) {
        t->attach_failed = 1;
        pthread_barrier_wait(t->barrier);
        return NULL;
    }
    for (int f = 0; f < 50; f++) {
        for (int i = 0; i < 100; i++) {
            if (kiln_frame_alloc(c, 1000, 8)) t->ok++;
            else t->nulls++;
        }
        kiln_arena_reset(kiln_frame_arena(c));
    }
    pthread_barrier_wait(t->barrier);   /* and nobody gives its blocks back before the end */
    kiln_detach(c);
    return NULL;
}

/* Several threads hit the limit together: the pool never reserves past it, the log
 * stays at a line per episode, and every block comes back. */
Test(block_pool, memory_limit_under_contention) {
    kiln_runtime *rt = limited_runtime(6 * BS, 4096);
    enum { THREADS = 4 };
    limit_thread threads[THREADS];
    pthread_t ids[THREADS];
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        threads[i] = (limit_thread){ .rt = rt, .barrier = &barrier };
        cr_assert_eq(pthread_create(&ids[i], NULL, limit_thread_main, &threads[i]), 0);
    }
    int nulls = 0, ok = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(ids[i], NULL);
        cr_assert_eq(threads[i].attach_failed, 0, "four contexts fit in six blocks");
        nulls += threads[i].nulls;
        ok += threads[i].ok;
    }
    pthread_barrier_destroy(&barrier);
    kiln_stats s = runtime_stats(rt);
    cr_assert_gt(nulls, 0, "four threads wanting two blocks each cannot fit in six");
    cr_assert_gt(ok, 0);
    cr_assert_leq(s.blocks.peak_reserved_bytes, 6 * BS);
    cr_assert_eq(s.blocks.blocks_in_use, 0);
    cr_assert_eq(s.contexts, 0);
    cr_assert_geq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_REACHED), 1);
    cr_assert_leq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_REACHED), s.blocks.failures);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_NEAR), 1, "one near-limit episode");
    cr_assert_eq(recorded_count(rec), count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_REACHED) + 1, "log:%s",
                 recorded_summary(rec));
    kiln_destroy(rt);
}
