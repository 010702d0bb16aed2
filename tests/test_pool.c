/* tests/test_pool.c — pools: desc defaults and refusals, alloc/free and the object
 * accounting (carved == live + cached + in_depot), steady state under churn, the
 * capacity limit and its warning per episode, frees from other threads landing in the
 * freeing context's cache, the bound of two magazines per context, detach flushing,
 * sizes and alignments, zeroing, every misuse with its exact log item (the pool still
 * usable after each), destroyed pools and a new pool in the same slot. */
#define _DEFAULT_SOURCE   /* pthread barriers */
#include <criterion/criterion.h>
#include <time.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/pool.h"   /* kiln_pool_block and the pool's layout, for edge pointers */
#include "recording_log.h"

#define BS ((size_t)64 << 10)   /* the default block size */
#define DEFAULT_ALIGN (_Alignof(max_align_t))

static recording_log *rec;
static kiln_runtime  *rt;
static kiln_ctx      *ctx;

static void setup(void) {
    rec = recording_log_new();
    kiln_desc desc = recording_desc(rec);
    rt = kiln_create(&desc);
    cr_assert_not_null(rt, "kiln_create failed:%s", recorded_summary(rec));
    ctx = kiln_attach(rt);
    cr_assert_not_null(ctx, "kiln_attach failed:%s", recorded_summary(rec));
}

static void teardown(void) {
    kiln_detach(ctx);
    ctx = NULL;
    kiln_destroy(rt);
    rt = NULL;
    recording_log_free(rec);
    rec = NULL;
}

TestSuite(pool, .init = setup, .fini = teardown);

/* ---- helpers ---- */

static kiln_pool_stats pool_stats(kiln_pool *pool) {
    kiln_pool_stats s;
    cr_assert(kiln_pool_stats_get(pool, &s), "kiln_pool_stats_get failed");
    return s;
}

static kiln_stats runtime_stats(kiln_runtime *r) {
    kiln_stats s;
    cr_assert(kiln_stats_get(r, &s), "kiln_stats_get failed");
    return s;
}

/* The accounting equations of alloc/pool.h, exact while no thread works on the pool. */
static void assert_accounting(kiln_pool *pool, const char *when) {
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.live, s.allocs - s.frees, "%s: live %llu, allocs %llu, frees %llu", when,
                 (unsigned long long)s.live, (unsigned long long)s.allocs,
                 (unsigned long long)s.frees);
    cr_assert_eq(s.carved, s.live + s.cached + s.in_depot,
                 "%s: carved %llu != live %llu + cached %llu + in_depot %llu", when,
                 (unsigned long long)s.carved, (unsigned long long)s.live,
                 (unsigned long long)s.cached, (unsigned long long)s.in_depot);
    cr_assert_eq(s.cached_bytes, s.cached * s.slot_size, "%s", when);
    if (s.capacity) cr_assert_leq(s.carved, s.capacity, "%s", when);
    cr_assert_geq(s.peak_live, s.live, "%s", when);
}

static bool is_aligned(const void *p, size_t align) { return ((uintptr_t)p & (align - 1)) == 0; }

static int compare_ptrs(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return x < y ? -1 : x > y;
}

/* Whether p is one of the n sorted pointers. */
static bool in_sorted(void **sorted, size_t n, const void *p) {
    return bsearch(&p, sorted, n, sizeof *sorted, compare_ptrs) != NULL;
}

/* All n pointers distinct and at least gap bytes apart (sorts a copy). */
static bool disjoint(void *const *ptrs, size_t n, size_t gap) {
    void **copy = malloc((n ? n : 1) * sizeof *copy);
    cr_assert_not_null(copy);
    memcpy(copy, ptrs, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, compare_ptrs);
    bool ok = true;
    for (size_t i = 1; i < n && ok; i++) ok = (uintptr_t)copy[i] - (uintptr_t)copy[i - 1] >= gap;
    free(copy);
    return ok;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rng(void) {   /* xorshift64*: same sequence in every build */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

/* ---- creation, defaults, statistics ---- */

Test(pool, create_fills_defaults) {
    kiln_pool *bullets = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "bullets", .size = 24 });
    kiln_pool *unnamed = kiln_pool_create(rt, &(kiln_pool_desc){ .size = 128 });
    char long_name[100];
    memset(long_name, 'p', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    kiln_pool *longer = kiln_pool_create(rt, &(kiln_pool_desc){ .name = long_name, .size = 129 });
    kiln_pool *big = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "big", .size = 1000,
                                                             .capacity = 77 });
    kiln_pool *huge = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "huge", .size = BS / 4 });
    cr_assert(bullets && unnamed && longer && big && huge, "log:%s", recorded_summary(rec));

    kiln_pool_stats s = pool_stats(bullets);
    cr_assert_str_eq(s.name, "bullets");
    cr_assert_eq(s.object_size, 24);
    cr_assert_eq(s.align, DEFAULT_ALIGN, "align 0 means alignof(max_align_t)");
    cr_assert_eq(s.slot_size, (24 + DEFAULT_ALIGN - 1) / DEFAULT_ALIGN * DEFAULT_ALIGN);
    cr_assert_eq(s.capacity, 0);
    cr_assert_eq(s.magazine_size, 64, "64 objects for objects up to 128 bytes");
    cr_assert(s.alive);
    cr_assert_eq(s.blocks_held, 0, "nothing is carved before the first alloc");
    cr_assert_eq(s.carved + s.live + s.allocs + s.frees + s.failures + s.cached + s.in_depot +
                 s.depot_exchanges + s.bad_frees + s.double_frees + s.peak_live, 0);

    cr_assert_str_eq(pool_stats(unnamed).name, "pool");
    cr_assert_eq(pool_stats(unnamed).magazine_size, 64);
    s = pool_stats(longer);
    cr_assert_eq(strlen(s.name), 47, "at most 47 bytes of the name are kept");
    cr_assert_eq(strncmp(s.name, long_name, 47), 0);
    cr_assert_eq(s.slot_size, 144);
    cr_assert_eq(s.magazine_size, 8192 / 144, "about 8 KiB of objects per magazine");
    s = pool_stats(big);
    cr_assert_eq(s.slot_size, 1008);
    cr_assert_eq(s.magazine_size, 8);
    cr_assert_eq(s.capacity, 77);
    s = pool_stats(huge);
    cr_assert_eq(s.slot_size, BS / 4);
    cr_assert_eq(s.magazine_size, 4, "at least 4 objects per magazine");

    kiln_stats rs = runtime_stats(rt);
    cr_assert_eq(rs.pools, 5);
    cr_assert_eq(rs.api_errors, 0);
    kiln_pool_destroy(bullets);
    kiln_pool_destroy(unnamed);
    kiln_pool_destroy(longer);
    kiln_pool_destroy(big);
    kiln_pool_destroy(huge);
    cr_assert_eq(runtime_stats(rt).pools, 0);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

Test(pool, explicit_magazine_size_is_kept) {
    kiln_pool *two = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "two", .size = 8,
                                                             .magazine_size = 2 });
    kiln_pool *most = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "most", .size = 8,
                                                              .magazine_size = 256 });
    cr_assert(two && most, "log:%s", recorded_summary(rec));
    cr_assert_eq(pool_stats(two).magazine_size, 2);
    cr_assert_eq(pool_stats(most).magazine_size, 256);
    void *p[600];
    for (int i = 0; i < 600; i++) {
        p[i] = kiln_pool_alloc(ctx, i % 2 ? two : most);
        cr_assert_not_null(p[i]);
    }
    cr_assert_eq(pool_stats(two).carved, 300, "magazines of 2 carve exactly what is asked");
    cr_assert_eq(pool_stats(most).carved, 512);
    for (int i = 0; i < 600; i++) kiln_pool_free(ctx, i % 2 ? two : most, p[i]);
    assert_accounting(two, "two");
    assert_accounting(most, "most");
    cr_assert_leq(pool_stats(two).cached, 4);
    cr_assert_leq(pool_stats(most).cached, 512);
    kiln_pool_destroy(two);
    kiln_pool_destroy(most);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

Test(pool, alloc_free_round_trip_and_stats) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "bullets", .size = 32 });
    cr_assert_not_null(pool);
    uint64_t blocks_before = runtime_stats(rt).blocks.blocks_in_use;
    void *p[10];
    for (int i = 0; i < 10; i++) {
        p[i] = kiln_pool_alloc(ctx, pool);
        cr_assert_not_null(p[i]);
        fill_pattern(p[i], 32, (uint32_t)i);
    }
    cr_assert(disjoint(p, 10, 32));
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.allocs, 10);
    cr_assert_eq(s.frees, 0);
    cr_assert_eq(s.live, 10);
    cr_assert_eq(s.carved, 64, "one magazine carved");
    cr_assert_eq(s.cached, 54);
    cr_assert_eq(s.in_depot, 0);
    cr_assert_eq(s.depot_exchanges, 1, "carving counts as an exchange");
    cr_assert_eq(s.blocks_held, 2, "one block of objects, one of magazines");
    cr_assert_eq(runtime_stats(rt).blocks.blocks_in_use, blocks_before + 2);
    cr_assert_geq(s.peak_live, 10);
    for (int i = 0; i < 10; i++) cr_assert(check_pattern(p[i], 32, (uint32_t)i), "object %d", i);
    assert_accounting(pool, "after allocs");

    kiln_pool_free(ctx, pool, p[3]);
    cr_assert_eq(kiln_pool_alloc(ctx, pool), p[3], "the cache is last in, first out");
    for (int i = 0; i < 10; i++) kiln_pool_free(ctx, pool, p[i]);
    s = pool_stats(pool);
    cr_assert_eq(s.allocs, 11);
    cr_assert_eq(s.frees, 11);
    cr_assert_eq(s.live, 0);
    cr_assert_eq(s.cached, 64);
    assert_accounting(pool, "after frees");
    kiln_pool_destroy(pool);
    cr_assert_eq(runtime_stats(rt).blocks.blocks_in_use, blocks_before, "blocks given back");
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

/* kiln_stats_pools lists live pools in slot order; the count may exceed cap. */
Test(pool, stats_pools_lists_live_pools) {
    kiln_pool *a = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "a", .size = 8 });
    kiln_pool *b = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "b", .size = 16 });
    kiln_pool *c = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "c", .size = 32 });
    cr_assert(a && b && c);
    void *obj = kiln_pool_alloc(ctx, b);
    cr_assert_not_null(obj);

    kiln_pool_stats out[4];
    memset(out, 0xAB, sizeof out);
    cr_assert_eq(kiln_stats_pools(rt, out, 4), 3);
    cr_assert_str_eq(out[0].name, "a");
    cr_assert_str_eq(out[1].name, "b");
    cr_assert_str_eq(out[2].name, "c");
    cr_assert_eq(out[1].live, 1);
    cr_assert_eq(out[2].object_size, 32);
    cr_assert_eq(kiln_stats_pools(rt, out, 1), 3, "the count, even when cap is smaller");
    cr_assert_eq(kiln_stats_pools(rt, NULL, 0), 3);
    cr_assert_eq(runtime_stats(rt).pools, 3);

    kiln_pool_destroy(a);
    memset(out, 0, sizeof out);
    cr_assert_eq(kiln_stats_pools(rt, out, 4), 2, "a destroyed pool is not listed");
    cr_assert_str_eq(out[0].name, "b");
    cr_assert_str_eq(out[1].name, "c");
    cr_assert_eq(runtime_stats(rt).pools, 2);
    kiln_pool_free(ctx, b, obj);
    kiln_pool_destroy(b);
    kiln_pool_destroy(c);
    cr_assert_eq(kiln_stats_pools(rt, out, 4), 0);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

/* ---- 1. churn: no more objects than the working set needs ---- */

Test(pool, churn_stays_within_working_set) {
    enum { LIVE = 100, PAIRS = 10000 };
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "particles", .size = 48 });
    cr_assert_not_null(pool);
    uint32_t mag = pool_stats(pool).magazine_size;
    void *live[LIVE];
    for (int i = 0; i < LIVE; i++) cr_assert_not_null(live[i] = kiln_pool_alloc(ctx, pool));
    kiln_pool_stats warm = pool_stats(pool);
    uint64_t blocks_warm = runtime_stats(rt).blocks.blocks_in_use;
    cr_assert_leq(warm.carved, LIVE + 2 * mag);

    int done = 0;
    while (done < PAIRS) {
        if (rng() % 8 == 0) {
            /* A burst: free k random objects, then allocate k (depot exchanges). */
            int k = 1 + (int)(rng() % LIVE);
            if (k > PAIRS - done) k = PAIRS - done;
            for (int j = 0; j < k; j++) {
                int i = (int)(rng() % (LIVE - j));
                void *t = live[i];
                live[i] = live[LIVE - 1 - j];
                live[LIVE - 1 - j] = t;
                kiln_pool_free(ctx, pool, t);
            }
            for (int j = 0; j < k; j++) {
                live[LIVE - k + j] = kiln_pool_alloc(ctx, pool);
                cr_assert_not_null(live[LIVE - k + j]);
            }
            done += k;
        } else {
            int i = (int)(rng() % LIVE);
            kiln_pool_free(ctx, pool, live[i]);
            live[i] = kiln_pool_alloc(ctx, pool);
            cr_assert_not_null(live[i]);
            done++;
        }
        if (done % 1000 == 0) {
            kiln_pool_stats s = pool_stats(pool);
            cr_assert_eq(s.carved, warm.carved, "carved grew from %llu to %llu after %d pairs",
                         (unsigned long long)warm.carved, (unsigned long long)s.carved, done);
            cr_assert_eq(s.blocks_held, warm.blocks_held);
        }
    }
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.carved, warm.carved, "no object beyond the working set is ever carved");
    cr_assert_leq(s.carved, LIVE + 2 * mag);
    cr_assert_eq(s.blocks_held, warm.blocks_held);
    cr_assert_eq(runtime_stats(rt).blocks.blocks_in_use, blocks_warm);
    cr_assert_eq(s.allocs, LIVE + PAIRS);
    cr_assert_eq(s.frees, PAIRS);
    cr_assert_eq(s.live, LIVE);
    cr_assert(disjoint(live, LIVE, s.slot_size), "live objects are distinct");
    assert_accounting(pool, "after churn");
    for (int i = 0; i < LIVE; i++) kiln_pool_free(ctx, pool, live[i]);
    assert_accounting(pool, "after freeing all");
    kiln_pool_destroy(pool);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

/* ---- 2. capacity ---- */

/* Allocates from ctx until NULL; returns how many succeeded (into out, up to max). */
static size_t alloc_until_null(kiln_ctx *c, kiln_pool *pool, void **out, size_t max) {
    size_t n = 0;
    for (;;) {
        void *p = kiln_pool_alloc(c, pool);
        if (!p) return n;
        cr_assert_lt(n, max, "more than %zu objects", max);
        out[n++] = p;
    }
}

/* Capacity 100 with magazines of 64: the second magazine is carved only partly. */
Test(pool, capacity_is_exact) {
    enum { CAP = 100 };
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "bullets", .size = 32,
                                                              .capacity = CAP, .magazine_size = 64 });
    cr_assert_not_null(pool);
    void *p[CAP + 1];
    cr_assert_eq(alloc_until_null(ctx, pool, p, CAP), CAP, "exactly capacity objects");
    cr_assert(disjoint(p, CAP, 32));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_CAPACITY_REACHED), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_POOL_CAPACITY_REACHED, KILN_LOG_WARN), 1);
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_POOL_CAPACITY_REACHED),
                     "POOL_CAPACITY_REACHED: pool 'bullets': all 100 objects of its capacity are "
                     "live or cached; alloc returns NULL");
    for (int i = 0; i < 5; i++) cr_assert_null(kiln_pool_alloc(ctx, pool));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_CAPACITY_REACHED), 1, "one warning, not one per call");
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.failures, 6);
    cr_assert_eq(s.carved, CAP);
    cr_assert_eq(s.live, CAP);
    cr_assert_eq(s.allocs, CAP);
    assert_accounting(pool, "at capacity");
    cr_assert_eq(runtime_stats(rt).api_errors, 0, "reaching the capacity is not misuse");

    /* Free one: the next alloc succeeds (the same object), the one after fails again. */
    kiln_pool_free(ctx, pool, p[42]);
    void *again = kiln_pool_alloc(ctx, pool);
    cr_assert_eq(again, p[42]);
    cr_assert_null(kiln_pool_alloc(ctx, pool));
    cr_assert_eq(pool_stats(pool).failures, 7);
    cr_assert_eq(pool_stats(pool).carved, CAP);

    /* A later episode: everything freed, everything allocated again, warned again once. */
    for (int i = 0; i < CAP; i++) kiln_pool_free(ctx, pool, p[i]);
    assert_accounting(pool, "all freed");
    void *q[CAP + 1];
    cr_assert_eq(alloc_until_null(ctx, pool, q, CAP), CAP);
    cr_assert_null(kiln_pool_alloc(ctx, pool));
    /* Three episodes: three warnings, but at most one a second (the rest are counted in
     * the next one): one, unless this machine took seconds between them. */
    size_t warned = count_items_with(rec, KILN_LOGITEM_POOL_CAPACITY_REACHED, "pool 'bullets'");
    cr_assert(warned >= 1 && warned <= 3, "three episodes, %zu warnings:%s", warned, recorded_summary(rec));
    s = pool_stats(pool);
    cr_assert_eq(s.carved, CAP, "the second episode reuses the same objects");
    cr_assert_eq(s.failures, 9);
    for (int i = 0; i < CAP; i++) kiln_pool_free(ctx, pool, q[i]);
    assert_accounting(pool, "end");
    kiln_pool_destroy(pool);
}

/* "One warning naming the pool until an alloc succeeds again": an alloc that succeeds
 * from the context's own cache (a freed object) ends the episode too. */
/* One warning per episode (an episode ends when an alloc succeeds), and at most one a
 * second: threads that keep a pool at its capacity start episodes as fast as they free
 * and alloc, and once flooded the log (4.6 million warnings in 5 s). The bound is
 * checked against the time the loop took, so a slow machine only allows more. */
Test(pool, capacity_warning_once_per_episode_at_most_once_a_second) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "sparks", .size = 16,
                                                              .capacity = 100, .magazine_size = 64 });
    cr_assert_not_null(pool);
    void *p[100];
    cr_assert_eq(alloc_until_null(ctx, pool, p, 100), 100);
    cr_assert_null(kiln_pool_alloc(ctx, pool));
    cr_assert_null(kiln_pool_alloc(ctx, pool));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_CAPACITY_REACHED), 1, "log:%s", recorded_summary(rec));
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    const int episodes = 1000;
    for (int e = 0; e < episodes; e++) {
        kiln_pool_free(ctx, pool, p[e % 100]);
        cr_assert_eq(kiln_pool_alloc(ctx, pool), p[e % 100]);
        cr_assert_null(kiln_pool_alloc(ctx, pool));
        cr_assert_null(kiln_pool_alloc(ctx, pool));
    }
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    double took = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) * 1e-9;
    size_t logged = count_items(rec, KILN_LOGITEM_POOL_CAPACITY_REACHED) - 1;
    cr_assert_leq(logged, (size_t)took + 1, "%zu warnings in %.2f s", logged, took);
    cr_assert_eq(pool_stats(pool).failures, 3 + (uint64_t)episodes * 2, "every refusal is counted");
    /* A second later, the next episode is logged with the count of those that were not. */
    struct timespec pause = { 1, 50000000 };
    nanosleep(&pause, NULL);
    kiln_pool_free(ctx, pool, p[0]);
    cr_assert_eq(kiln_pool_alloc(ctx, pool), p[0]);
    cr_assert_null(kiln_pool_alloc(ctx, pool));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_CAPACITY_REACHED), logged + 2);
    if (logged == 0)
        cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_CAPACITY_REACHED,
                                      "(and 1000 times since the last warning"), 1, "log:%s",
                     recorded_summary(rec));
    for (int i = 0; i < 100; i++) kiln_pool_free(ctx, pool, p[i]);
    kiln_pool_destroy(pool);
}

Test(pool, capacity_variants) {
    const struct { size_t cap; uint32_t mag; } cases[] = {
        { 1, 0 }, { 2, 2 }, { 10, 64 }, { 64, 64 }, { 128, 64 }, { 129, 64 }, { 1000, 16 },
        { 300, 256 }, { 65, 0 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        recording_log_clear(rec);
        kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){
            .name = "capped", .size = 40, .capacity = cases[c].cap, .magazine_size = cases[c].mag });
        cr_assert_not_null(pool);
        void *p[1001];
        size_t n = alloc_until_null(ctx, pool, p, cases[c].cap);
        cr_assert_eq(n, cases[c].cap, "capacity %zu, magazine %u: %zu allocs", cases[c].cap,
                     cases[c].mag, n);
        cr_assert_null(kiln_pool_alloc(ctx, pool));
        cr_assert(disjoint(p, n, 48));
        kiln_pool_stats s = pool_stats(pool);
        cr_assert_eq(s.carved, cases[c].cap);
        cr_assert_eq(s.failures, 2);
        cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_CAPACITY_REACHED, "pool 'capped': all"), 1,
                     "capacity %zu:%s", cases[c].cap, recorded_summary(rec));
        for (size_t i = 0; i < n; i++) kiln_pool_free(ctx, pool, p[i]);
        assert_accounting(pool, "capacity variant");
        cr_assert_eq(alloc_until_null(ctx, pool, p, cases[c].cap), cases[c].cap,
                     "the same capacity again after freeing");
        for (size_t i = 0; i < n; i++) kiln_pool_free(ctx, pool, p[i]);
        kiln_pool_destroy(pool);
    }
}

/* Documented: an alloc can be refused early by the free objects another context holds
 * in its cache; detaching that context gives them back. */
Test(pool, capacity_counts_objects_cached_elsewhere) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "cached", .size = 8,
                                                              .capacity = 10 });
    kiln_ctx *other = kiln_attach(rt);
    cr_assert(pool && other);
    void *p[11];
    cr_assert_eq(alloc_until_null(other, pool, p, 10), 10);
    for (int i = 0; i < 10; i++) kiln_pool_free(other, pool, p[i]);
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.cached, 10);
    cr_assert_null(kiln_pool_alloc(ctx, pool), "all 10 sit in the other context's cache");
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_CAPACITY_REACHED), 1, "log:%s", recorded_summary(rec));
    kiln_detach(other);
    s = pool_stats(pool);
    cr_assert_eq(s.cached, 0);
    cr_assert_eq(s.in_depot, 10);
    void *q[11];
    cr_assert_eq(alloc_until_null(ctx, pool, q, 10), 10, "the depot serves them now");
    qsort(p, 10, sizeof *p, compare_ptrs);
    for (int i = 0; i < 10; i++) cr_assert(in_sorted(p, 10, q[i]), "the same objects");
    for (int i = 0; i < 10; i++) kiln_pool_free(ctx, pool, q[i]);
    assert_accounting(pool, "end");
    kiln_pool_destroy(pool);
}

/* A memory_limit refusal: NULL, counted as a failure, no capacity warning, no misuse;
 * a freed object is allocatable again. */
Test(pool, memory_limit_refuses_allocs) {
    recording_log *lrec = recording_log_new();
    kiln_desc desc = recording_desc(lrec);
    desc.memory_limit = 4 * BS;
    desc.reserve_size = BS;
    kiln_runtime *lrt = kiln_create(&desc);
    kiln_ctx *lctx = kiln_attach(lrt);
    kiln_pool *pool = kiln_pool_create(lrt, &(kiln_pool_desc){ .name = "big", .size = 1024 });
    cr_assert(lrt && lctx && pool, "log:%s", recorded_summary(lrec));
    static void *p[1000];
    size_t n = alloc_until_null(lctx, pool, p, 1000);
    /* 4 blocks: the frame arena, the magazines, two blocks of objects. */
    size_t per_block = (BS - 64) / 1024;
    cr_assert_eq(n, 2 * per_block, "%zu objects:%s", n, recorded_summary(lrec));
    for (int i = 0; i < 3; i++) cr_assert_null(kiln_pool_alloc(lctx, pool));
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.failures, 4);
    cr_assert_eq(s.live, n);
    cr_assert_eq(count_items(lrec, KILN_LOGITEM_MEMORY_LIMIT_REACHED), 1, "log:%s", recorded_summary(lrec));
    cr_assert_eq(count_items(lrec, KILN_LOGITEM_POOL_CAPACITY_REACHED), 0, "no capacity was set");
    cr_assert_eq(runtime_stats(lrt).api_errors, 0);
    kiln_pool_free(lctx, pool, p[7]);
    cr_assert_eq(kiln_pool_alloc(lctx, pool), p[7]);
    for (size_t i = 0; i < n; i++) kiln_pool_free(lctx, pool, p[i]);
    assert_accounting(pool, "end");
    kiln_pool_destroy(pool);
    kiln_detach(lctx);
    kiln_destroy(lrt);
    cr_assert_eq(count_items(lrec, KILN_LOGITEM_MEMORY_LIMIT_NEAR), 1, "the limit was neared first");
    cr_assert_eq(recorded_count(lrec), 2, "log:%s", recorded_summary(lrec));
    recording_log_free(lrec);
}

/* ---- 3. frees from other threads ---- */

typedef struct thread_job {
    kiln_runtime      *rt;
    kiln_pool         *pool;
    pthread_barrier_t *barrier;
    void             **objs;      /* the objects this thread allocated (or frees) */
    size_t             count;
    void             **freed;     /* for the freeing thread: what the others allocated */
    size_t             freed_count;
    void             **reused;    /* for the freeing thread: its allocs after the frees */
    bool               ok;
} thread_job;

static void *alloc_then_wait(void *arg) {
    thread_job *job = arg;
    kiln_ctx *c = kiln_attach(job->rt);
    job->ok = c != NULL;
    for (size_t i = 0; c && i < job->count; i++) {
        job->objs[i] = kiln_pool_alloc(c, job->pool);
        if (!job->objs[i]) job->ok = false;
    }
    pthread_barrier_wait(job->barrier);   /* allocated */
    pthread_barrier_wait(job->barrier);   /* the third thread freed and reused */
    pthread_barrier_wait(job->barrier);   /* main read the stats */
    kiln_detach(c);
    return NULL;
}

static void *free_then_alloc(void *arg) {
    thread_job *job = arg;
    kiln_ctx *c = kiln_attach(job->rt);
    job->ok = c != NULL;
    pthread_barrier_wait(job->barrier);
    for (size_t i = 0; c && i < job->freed_count; i++) kiln_pool_free(c, job->pool, job->freed[i]);
    for (size_t i = 0; c && i < job->freed_count; i++) {
        job->reused[i] = kiln_pool_alloc(c, job->pool);
        if (!job->reused[i]) job->ok = false;
    }
    pthread_barrier_wait(job->barrier);
    pthread_barrier_wait(job->barrier);
    kiln_detach(c);
    return NULL;
}

Test(pool, cross_thread_frees_are_reused_by_the_freeing_thread) {
    enum { EACH = 50 };
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "shared", .size = 64,
                                                              .magazine_size = 64 });
    cr_assert_not_null(pool);
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, 4);
    void *objs[2 * EACH], *reused[2 * EACH];
    thread_job a = { rt, pool, &barrier, objs, EACH, NULL, 0, NULL, false };
    thread_job b = { rt, pool, &barrier, objs + EACH, EACH, NULL, 0, NULL, false };
    thread_job c = { rt, pool, &barrier, NULL, 0, objs, 2 * EACH, reused, false };
    pthread_t ta, tb, tc;
    pthread_create(&ta, NULL, alloc_then_wait, &a);
    pthread_create(&tb, NULL, alloc_then_wait, &b);
    pthread_create(&tc, NULL, free_then_alloc, &c);
    pthread_barrier_wait(&barrier);   /* A and B allocated; C frees meanwhile */
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.carved, 128, "one magazine per allocating context");
    pthread_barrier_wait(&barrier);   /* C freed all and allocated as many */

    cr_assert(a.ok && b.ok && c.ok);
    cr_assert(disjoint(objs, 2 * EACH, 64));
    void *sorted[2 * EACH];
    memcpy(sorted, objs, sizeof sorted);
    qsort(sorted, 2 * EACH, sizeof *sorted, compare_ptrs);
    for (int i = 0; i < 2 * EACH; i++)
        cr_assert(in_sorted(sorted, 2 * EACH, reused[i]),
                  "alloc %d of the freeing thread did not come from its own frees", i);
    cr_assert(disjoint(reused, 2 * EACH, 64), "each freed object handed out once");

    s = pool_stats(pool);
    cr_assert_eq(s.allocs, 4 * EACH);
    cr_assert_eq(s.frees, 2 * EACH);
    cr_assert_eq(s.live, 2 * EACH);
    cr_assert_eq(s.carved, 128, "nothing carved for the reuse");
    cr_assert_eq(s.cached, 2 * (64 - EACH), "what A and B did not use");
    cr_assert_eq(s.in_depot, 0);
    assert_accounting(pool, "threads attached");
    pthread_barrier_wait(&barrier);   /* the threads detach */
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_join(tc, NULL);
    pthread_barrier_destroy(&barrier);

    s = pool_stats(pool);
    cr_assert_eq(s.cached, 0, "detach flushed every cache");
    cr_assert_eq(s.in_depot, 2 * (64 - EACH));
    cr_assert_eq(s.allocs, 4 * EACH, "counters survive the detach");
    cr_assert_eq(s.live, 2 * EACH);
    assert_accounting(pool, "threads detached");
    for (int i = 0; i < 2 * EACH; i++) kiln_pool_free(ctx, pool, reused[i]);
    assert_accounting(pool, "all freed");
    cr_assert_eq(pool_stats(pool).live, 0);
    kiln_pool_destroy(pool);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

/* ---- 5. statistics after a multi-threaded run ---- */

enum { MT_THREADS = 4, MT_OPS = 20000, MT_SLOTS = 512 };

typedef struct mt_shared {
    kiln_runtime      *rt;
    kiln_pool         *pools[2];
    pthread_mutex_t    lock;
    void              *objs[2][MT_SLOTS];   /* live objects of each pool, any thread's */
    size_t             count[2];
    pthread_barrier_t  barrier;
} mt_shared;

typedef struct mt_thread {
    mt_shared *shared;
    uint64_t   seed;
    uint64_t   allocs[2], frees[2], failures;
} mt_thread;

static void *mt_worker(void *arg) {
    mt_thread *t = arg;
    mt_shared *sh = t->shared;
    kiln_ctx *c = kiln_attach(sh->rt);
    uint64_t x = t->seed;
    pthread_barrier_wait(&sh->barrier);
    for (int op = 0; c && op < MT_OPS; op++) {
        x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
        uint32_t r = (uint32_t)((x * 0x2545f4914f6cdd1dull) >> 32);
        int which = (int)(r & 1);
        kiln_pool *pool = sh->pools[which];
        if ((r >> 1) % 2 == 0) {
            void *obj = kiln_pool_alloc(c, pool);
            if (!obj) { t->failures++; continue; }
            t->allocs[which]++;
            memset(obj, (int)(r >> 8), which ? 100 : 24);   /* touch the whole object */
            pthread_mutex_lock(&sh->lock);
            if (sh->count[which] < MT_SLOTS) {
                sh->objs[which][sh->count[which]++] = obj;
                obj = NULL;
            }
            pthread_mutex_unlock(&sh->lock);
            if (obj) { kiln_pool_free(c, pool, obj); t->frees[which]++; }
        } else {
            void *obj = NULL;
            pthread_mutex_lock(&sh->lock);
            if (sh->count[which] > 0) {   /* a random one: often another thread's */
                size_t i = (r >> 2) % sh->count[which];
                obj = sh->objs[which][i];
                sh->objs[which][i] = sh->objs[which][--sh->count[which]];
            }
            pthread_mutex_unlock(&sh->lock);
            if (obj) { kiln_pool_free(c, pool, obj); t->frees[which]++; }
        }
    }
    pthread_barrier_wait(&sh->barrier);   /* done: main reads the stats */
    pthread_barrier_wait(&sh->barrier);   /* main read them */
    kiln_detach(c);
    return NULL;
}

Test(pool, stats_add_up_after_threads_and_detach) {
    static mt_shared sh;
    memset(&sh, 0, sizeof sh);
    sh.rt = rt;
    sh.pools[0] = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "small", .size = 24,
                                                         .magazine_size = 16 });
    sh.pools[1] = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "medium", .size = 100,
                                                         .flags = KILN_POOL_CHECKED });
    cr_assert(sh.pools[0] && sh.pools[1]);
    pthread_mutex_init(&sh.lock, NULL);
    pthread_barrier_init(&sh.barrier, NULL, MT_THREADS + 1);
    mt_thread threads[MT_THREADS];
    pthread_t tid[MT_THREADS];
    for (int i = 0; i < MT_THREADS; i++) {
        threads[i] = (mt_thread){ .shared = &sh, .seed = 0x1234567ull * (uint64_t)(i + 1) };
        pthread_create(&tid[i], NULL, mt_worker, &threads[i]);
    }
    pthread_barrier_wait(&sh.barrier);   /* start */
    pthread_barrier_wait(&sh.barrier);   /* done */

    uint64_t allocs[2] = { 0 }, frees[2] = { 0 }, failures = 0;
    for (int i = 0; i < MT_THREADS; i++) {
        for (int w = 0; w < 2; w++) { allocs[w] += threads[i].allocs[w]; frees[w] += threads[i].frees[w]; }
        failures += threads[i].failures;
    }
    cr_assert_eq(failures, 0);
    kiln_pool_stats before[2];
    for (int w = 0; w < 2; w++) {
        kiln_pool_stats s = before[w] = pool_stats(sh.pools[w]);
        cr_assert_gt(allocs[w], MT_OPS / 4, "pool %d: %llu allocs", w, (unsigned long long)allocs[w]);
        cr_assert_eq(s.allocs, allocs[w], "pool %s", s.name);
        cr_assert_eq(s.frees, frees[w], "pool %s", s.name);
        cr_assert_eq(s.live, sh.count[w], "pool %s: live %llu, held %zu", s.name,
                     (unsigned long long)s.live, sh.count[w]);
        cr_assert_leq(s.cached, (uint64_t)(MT_THREADS + 1) * 2 * s.magazine_size,
                      "at most two magazines per context");
        cr_assert_eq(s.bad_frees + s.double_frees, 0);
        cr_assert_eq(s.failures, 0);
        cr_assert_geq(s.peak_live, s.live);
        assert_accounting(sh.pools[w], "threads quiet");
    }
    cr_assert_eq(runtime_stats(rt).contexts, MT_THREADS + 1);
    pthread_barrier_wait(&sh.barrier);   /* detach */
    for (int i = 0; i < MT_THREADS; i++) pthread_join(tid[i], NULL);

    kiln_pool_stats out[2];
    cr_assert_eq(kiln_stats_pools(rt, out, 2), 2);
    for (int w = 0; w < 2; w++) {
        kiln_pool_stats s = out[w];
        cr_assert_str_eq(s.name, before[w].name);
        cr_assert_eq(s.cached, 0, "pool %s: the detached contexts' caches were flushed", s.name);
        cr_assert_eq(s.in_depot, before[w].in_depot + before[w].cached, "pool %s", s.name);
        cr_assert_eq(s.carved, before[w].carved);
        cr_assert_eq(s.allocs, before[w].allocs);
        cr_assert_eq(s.frees, before[w].frees);
        cr_assert_eq(s.live, sh.count[w]);
        assert_accounting(sh.pools[w], "threads detached");
        /* The main context frees the rest; the depot feeds it, nothing new is carved. */
        for (size_t i = 0; i < sh.count[w]; i++) kiln_pool_free(ctx, sh.pools[w], sh.objs[w][i]);
        void *again[64];
        for (int i = 0; i < 64; i++) cr_assert_not_null(again[i] = kiln_pool_alloc(ctx, sh.pools[w]));
        for (int i = 0; i < 64; i++) kiln_pool_free(ctx, sh.pools[w], again[i]);
        cr_assert_eq(pool_stats(sh.pools[w]).carved, before[w].carved);
        cr_assert_eq(pool_stats(sh.pools[w]).live, 0);
        assert_accounting(sh.pools[w], "all freed");
    }
    kiln_stats rs = runtime_stats(rt);
    cr_assert_eq(rs.pools, 2);
    cr_assert_eq(rs.contexts, 1);
    cr_assert_eq(rs.api_errors, 0);
    kiln_pool_destroy(sh.pools[0]);
    kiln_pool_destroy(sh.pools[1]);
    pthread_barrier_destroy(&sh.barrier);
    pthread_mutex_destroy(&sh.lock);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

/* Detach gives a context's magazines to the depot, in one thread. */
Test(pool, detach_flushes_the_cache) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "flushed", .size = 8,
                                                              .magazine_size = 32 });
    kiln_ctx *other = kiln_attach(rt);
    cr_assert(pool && other);
    void *p[40];
    for (int i = 0; i < 40; i++) cr_assert_not_null(p[i] = kiln_pool_alloc(other, pool));
    for (int i = 0; i < 30; i++) kiln_pool_free(other, pool, p[i]);
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.carved, 64);
    cr_assert_eq(s.cached, 54);
    cr_assert_eq(s.in_depot, 0);
    kiln_detach(other);
    s = pool_stats(pool);
    cr_assert_eq(s.cached, 0);
    cr_assert_eq(s.in_depot, 54);
    cr_assert_eq(s.live, 10);
    cr_assert_eq(s.allocs, 40);
    cr_assert_eq(s.frees, 30);
    assert_accounting(pool, "detached");
    for (int i = 30; i < 40; i++) kiln_pool_free(ctx, pool, p[i]);
    assert_accounting(pool, "end");
    kiln_pool_destroy(pool);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

/* A detached context is refused (its memory lives on until kiln_destroy): a cache it
 * bound would strand the objects it took when the next attach reuses its memory, so that
 * a pool of capacity 128 gave 64 objects. */
Test(pool, detached_context_is_refused_and_strands_nothing) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "capped", .size = 16,
                                                              .capacity = 128 });
    kiln_ctx *gone = kiln_attach(rt);
    cr_assert(pool && gone);
    kiln_detach(gone);
    cr_assert_null(kiln_pool_alloc(gone, pool));
    cr_assert_null(kiln_pool_alloc_at(gone, pool, __FILE__, __LINE__));
    void *obj = kiln_pool_alloc(ctx, pool);
    cr_assert_not_null(obj);
    kiln_pool_free(gone, pool, obj);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_CONTEXT_DETACHED, KILN_LOG_ERROR), 3, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_CONTEXT_DETACHED, "kiln_pool_alloc: pool 'capped': "
                                  "context "), 2);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_CONTEXT_DETACHED, "kiln_pool_free: pool 'capped': "
                                  "context "), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_CONTEXT_DETACHED, "has been detached; refused"), 3);
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.live, 1, "the refused free freed nothing");
    cr_assert_eq(s.allocs, 1);
    cr_assert_eq(s.frees, 0);
    cr_assert_eq(runtime_stats(rt).api_errors, 3);
    kiln_pool_free(ctx, pool, obj);
    kiln_detach(ctx);   /* every cached object back in the depot */
    ctx = NULL;

    kiln_ctx *next = kiln_attach(rt);   /* may reuse the detached context's memory */
    cr_assert_not_null(next);
    void *all[129];
    cr_assert_eq(alloc_until_null(next, pool, all, 128), 128, "the whole capacity:%s",
                 recorded_summary(rec));
    cr_assert(disjoint(all, 128, 16));
    for (int i = 0; i < 128; i++) kiln_pool_free(next, pool, all[i]);
    assert_accounting(pool, "after reattach");
    kiln_detach(next);
    kiln_pool_destroy(pool);
}

/* A context of another runtime is refused by alloc and free: its cache of the same index
 * (bound to its own runtime's pool) would hand out that pool's objects, or take this
 * pool's objects and flush them into that pool. */
Test(pool, context_of_another_runtime_is_refused) {
    recording_log *orec = recording_log_new();
    kiln_desc odesc = recording_desc(orec);
    kiln_runtime *ort = kiln_create(&odesc);
    kiln_ctx *octx = ort ? kiln_attach(ort) : NULL;
    kiln_ctx *fresh = ort ? kiln_attach(ort) : NULL;   /* binds nothing before the calls */
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "here", .size = 32 });
    kiln_pool *opool = ort ? kiln_pool_create(ort, &(kiln_pool_desc){ .name = "there", .size = 32 }) : NULL;
    cr_assert(ort && octx && fresh && pool && opool);
    cr_assert_eq(pool->index, opool->index, "the same cache index in both runtimes");
    void *theirs = kiln_pool_alloc(octx, opool);   /* binds octx's cache of that index */
    void *ours = kiln_pool_alloc(ctx, pool);
    cr_assert(theirs && ours);

    cr_assert_null(kiln_pool_alloc(octx, pool), "no object of the other runtime's pool");
    cr_assert_null(kiln_pool_alloc(fresh, pool));
    kiln_pool_free(octx, pool, ours);
    kiln_pool_free(fresh, pool, ours);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_POOL_WRONG_RUNTIME, KILN_LOG_ERROR), 4, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_WRONG_RUNTIME, "kiln_pool_alloc: pool 'here' "
                                  "belongs to another runtime than context "), 2);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_WRONG_RUNTIME, "kiln_pool_free: pool 'here'"), 2);
    cr_assert_eq(recorded_count(orec), 0, "the other runtime heard nothing:%s", recorded_summary(orec));
    cr_assert_eq(runtime_stats(rt).api_errors, 4);

    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.live, 1, "the refused free freed nothing");
    cr_assert_eq(s.frees, 0);
    s = pool_stats(opool);
    cr_assert_eq(s.allocs, 1, "the refused alloc took nothing from the other pool");
    cr_assert_eq(s.frees, 0);
    /* Nothing of this pool reached the other one: its depot and caches hold its own. */
    void *next = kiln_pool_alloc(octx, opool);
    cr_assert_neq(next, ours);
    kiln_pool_free(octx, opool, next);
    kiln_pool_free(octx, opool, theirs);
    kiln_detach(octx);
    kiln_detach(fresh);
    s = pool_stats(opool);
    cr_assert_eq(s.live, 0);
    cr_assert_eq(s.in_depot, s.carved, "the other pool got back its own objects only");
    kiln_pool_free(ctx, pool, ours);
    assert_accounting(pool, "here");
    kiln_destroy(ort);
    recording_log_free(orec);
    kiln_pool_destroy(pool);
}

/* ---- 9. the magazine bound ---- */

Test(pool, a_context_caches_at_most_two_magazines) {
    const uint32_t mags[] = { 0, 16, 2, 256 };
    for (size_t m = 0; m < sizeof mags / sizeof mags[0]; m++) {
        enum { N = 1000 };
        kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "bounded", .size = 16,
                                                                  .magazine_size = mags[m] });
        cr_assert_not_null(pool);
        uint32_t mag = pool_stats(pool).magazine_size;
        static void *p[N];
        for (int i = 0; i < N; i++) cr_assert_not_null(p[i] = kiln_pool_alloc(ctx, pool));
        cr_assert_leq(pool_stats(pool).cached, 2 * mag);
        for (int i = 0; i < N; i++) {
            kiln_pool_free(ctx, pool, p[i]);
            if (i % 37 == 0)
                cr_assert_leq(pool_stats(pool).cached, 2 * mag, "magazine %u, after %d frees", mag, i);
        }
        kiln_pool_stats s = pool_stats(pool);
        cr_assert_leq(s.cached, 2 * mag, "magazine %u: %llu cached", mag, (unsigned long long)s.cached);
        cr_assert_geq(s.in_depot, N - 2 * mag, "the rest is on the depot");
        cr_assert_eq(s.live, 0);
        cr_assert_eq(s.in_depot % mag, 0, "full magazines on the depot");
        assert_accounting(pool, "all freed");
        uint64_t carved = s.carved;

        /* Another context is served from the depot: nothing new is carved. */
        kiln_ctx *other = kiln_attach(rt);
        cr_assert_not_null(other);
        for (uint64_t i = 0; i < s.in_depot; i++) cr_assert_not_null(p[i] = kiln_pool_alloc(other, pool));
        cr_assert_eq(pool_stats(pool).carved, carved, "magazine %u", mag);
        for (uint64_t i = 0; i < s.in_depot; i++) kiln_pool_free(other, pool, p[i]);
        cr_assert_leq(pool_stats(pool).cached, 4 * mag, "two contexts, two magazines each");
        kiln_detach(other);
        assert_accounting(pool, "other detached");
        kiln_pool_destroy(pool);
    }
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

/* ---- 6. sizes and alignments ---- */

static void check_layout(size_t size, size_t align, uint32_t flags) {
    size_t eff = align ? align : DEFAULT_ALIGN;
    size_t slot = (size + eff - 1) / eff * eff;
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "layout", .size = size,
                                                              .align = align, .flags = flags });
    cr_assert_not_null(pool, "size %zu align %zu:%s", size, align, recorded_summary(rec));
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.object_size, size);
    cr_assert_eq(s.align, eff);
    cr_assert_eq(s.slot_size, slot, "size %zu align %zu: slot %zu", size, align, s.slot_size);

    size_t n = 2 * (BS / slot) + 3;   /* at least three blocks of objects */
    if (n > 3000) n = 3000;
    static void *p[3000];
    for (size_t i = 0; i < n; i++) {
        p[i] = kiln_pool_alloc(ctx, pool);
        cr_assert_not_null(p[i], "size %zu align %zu: alloc %zu", size, align, i);
        cr_assert(is_aligned(p[i], eff), "size %zu align %zu: %p", size, align, p[i]);
        uintptr_t block = (uintptr_t)p[i] & ~(uintptr_t)(BS - 1);
        cr_assert_leq((uintptr_t)p[i] + slot, block + BS, "the object lies within its block");
        fill_pattern(p[i], size, (uint32_t)(i * 31 + size));
    }
    cr_assert(disjoint(p, n, slot), "size %zu align %zu: objects overlap", size, align);
    for (size_t i = 0; i < n; i++)
        cr_assert(check_pattern(p[i], size, (uint32_t)(i * 31 + size)),
                  "size %zu align %zu: object %zu overwritten", size, align, i);
    for (size_t i = 0; i < n; i += 2) kiln_pool_free(ctx, pool, p[i]);
    for (size_t i = 0; i < n; i += 2) {   /* reused slots: still aligned, still disjoint */
        p[i] = kiln_pool_alloc(ctx, pool);
        cr_assert(p[i] && is_aligned(p[i], eff));
        fill_pattern(p[i], size, (uint32_t)(i * 31 + size));
    }
    cr_assert(disjoint(p, n, slot));
    for (size_t i = 0; i < n; i++)
        cr_assert(check_pattern(p[i], size, (uint32_t)(i * 31 + size)), "object %zu after reuse", i);
    for (size_t i = 0; i < n; i++) kiln_pool_free(ctx, pool, p[i]);
    assert_accounting(pool, "layout");
    s = pool_stats(pool);
    cr_assert_eq(s.live, 0);
    cr_assert_eq(s.bad_frees + s.double_frees, 0);
    kiln_pool_destroy(pool);
}

Test(pool, sizes_and_alignments) {
    const size_t sizes[] = { 1, 7, 8, 63, 64, 65, 1000, BS / 4 };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        check_layout(sizes[s], 0, 0);
        for (size_t align = 1; align <= 4096; align *= 2) {
            check_layout(sizes[s], align, 0);
            check_layout(sizes[s], align, KILN_POOL_CHECKED);   /* a bitmap before the slots */
        }
    }
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

/* Block size is the runtime's: a quarter of 16 KiB blocks is the largest object. */
Test(pool, size_limit_follows_block_size) {
    recording_log *brec = recording_log_new();
    kiln_desc desc = recording_desc(brec);
    desc.block_size = 16 << 10;
    kiln_runtime *brt = kiln_create(&desc);
    kiln_ctx *bctx = kiln_attach(brt);
    cr_assert(brt && bctx);
    kiln_pool *ok = kiln_pool_create(brt, &(kiln_pool_desc){ .name = "quarter", .size = 4096,
                                                             .align = 4096 });
    cr_assert_not_null(ok);
    cr_assert_null(kiln_pool_create(brt, &(kiln_pool_desc){ .name = "over", .size = 4097 }));
    cr_assert_str_eq(last_item_text(brec, KILN_LOGITEM_POOL_BAD_SIZE),
                     "POOL_BAD_SIZE: pool 'over': object size 4097 is not from 1 to a quarter "
                     "block (4096)");
    void *p[20];
    for (int i = 0; i < 20; i++) {
        cr_assert_not_null(p[i] = kiln_pool_alloc(bctx, ok));
        cr_assert(is_aligned(p[i], 4096));
        memset(p[i], i, 4096);
    }
    cr_assert(disjoint(p, 20, 4096));
    for (int i = 0; i < 20; i++) kiln_pool_free(bctx, ok, p[i]);
    assert_accounting(ok, "16 KiB blocks");
    kiln_pool_destroy(ok);
    kiln_detach(bctx);
    kiln_destroy(brt);
    cr_assert_eq(recorded_count(brec), 1, "log:%s", recorded_summary(brec));
    recording_log_free(brec);
}

/* Found by fuzz/fuzz-pool: with 4 KiB blocks, a slot aligned to 4096 leaves no room for
 * the block header, so not one object fits. The pool used to be made anyway and carved
 * "objects" past the end of its blocks, into memory that was not its own. */
Test(pool, alignment_that_leaves_no_slot_in_a_block_is_refused) {
    recording_log *brec = recording_log_new();
    kiln_desc desc = recording_desc(brec);
    desc.block_size = 4096;
    kiln_runtime *brt = kiln_create(&desc);
    cr_assert_not_null(brt);
    cr_assert_null(kiln_pool_create(brt, &(kiln_pool_desc){ .name = "page", .size = 17,
                                                            .align = 4096 }));
    cr_assert_eq(count_items_with(brec, KILN_LOGITEM_POOL_BAD_SIZE, "'page'"), 1, "log:%s",
                 recorded_summary(brec));
    kiln_pool *half = kiln_pool_create(brt, &(kiln_pool_desc){ .name = "half", .size = 17,
                                                               .align = 2048 });
    cr_assert_not_null(half, "one 2048-aligned slot still fits:%s", recorded_summary(brec));
    kiln_pool_destroy(half);
    kiln_destroy(brt);
    recording_log_free(brec);
}

/* ---- 7. zeroing ---- */

Test(pool, zero_flag_returns_zeroed_objects_after_reuse) {
    enum { N = 320, SIZE = 100 };   /* N: whole magazines of both pools, nothing left idle */
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "zeroed", .size = SIZE,
                                                              .flags = KILN_POOL_ZERO });
    kiln_pool *zc = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "zeroed-checked", .size = SIZE,
        .align = 64, .flags = KILN_POOL_ZERO | KILN_POOL_CHECKED, .magazine_size = 8 });
    cr_assert(pool && zc);
    /* Recycled blocks are not cleared by the block pool: dirty some first. */
    kiln_arena *dirt = kiln_arena_create(rt, "dirt");
    for (int i = 0; i < 6; i++) {
        void *d = kiln_arena_alloc(dirt, BS / 2, 16);
        cr_assert_not_null(d);
        memset(d, 0xEE, BS / 2);
    }
    kiln_arena_destroy(dirt);
    static const unsigned char zero[SIZE];
    kiln_pool *pools[2] = { pool, zc };
    for (int w = 0; w < 2; w++) {
        void *p[N];
        for (int i = 0; i < N; i++) {
            p[i] = kiln_pool_alloc(ctx, pools[w]);
            cr_assert_not_null(p[i]);
            cr_assert_eq(memcmp(p[i], zero, SIZE), 0, "pool %d: fresh object %d not zeroed", w, i);
            memset(p[i], 0xA5, SIZE);
        }
        cr_assert_eq(pool_stats(pools[w]).cached, 0);
        for (int round = 0; round < 3; round++) {
            /* Half freed here, half by another context that then detaches (its cache goes
             * to the depot), so every freed object is allocatable here again. */
            kiln_ctx *other = kiln_attach(rt);
            cr_assert_not_null(other);
            for (int i = 0; i < N; i++) kiln_pool_free(i % 2 ? other : ctx, pools[w], p[i]);
            kiln_detach(other);
            void *sorted[N];
            memcpy(sorted, p, sizeof sorted);
            qsort(sorted, N, sizeof *sorted, compare_ptrs);
            for (int i = 0; i < N; i++) {
                p[i] = kiln_pool_alloc(ctx, pools[w]);
                cr_assert_not_null(p[i]);
                cr_assert(in_sorted(sorted, N, p[i]), "pool %d round %d: object %d not reused",
                          w, round, i);
                cr_assert_eq(memcmp(p[i], zero, SIZE), 0, "pool %d round %d: reused object %d "
                             "not zeroed", w, round, i);
                memset(p[i], 0x5A + round, SIZE);
            }
            cr_assert(disjoint(p, N, pool_stats(pools[w]).slot_size));
        }
        cr_assert_eq(pool_stats(pools[w]).carved, N, "nothing carved for the reuse");
        for (int i = 0; i < N; i++) kiln_pool_free(ctx, pools[w], p[i]);
        assert_accounting(pools[w], "zeroing");
    }
    kiln_pool_destroy(pool);
    kiln_pool_destroy(zc);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

/* ---- 4. misuse: the exact item, the pool still usable ---- */

/* The pool still hands out and takes back objects correctly, and its counts add up. */
static void assert_still_usable(kiln_pool *pool) {
    kiln_pool_stats before = pool_stats(pool);
    void *p[200];
    for (int i = 0; i < 200; i++) {
        p[i] = kiln_pool_alloc(ctx, pool);
        cr_assert_not_null(p[i], "pool '%s' refuses allocs after misuse", before.name);
        fill_pattern(p[i], before.object_size, (uint32_t)i);
    }
    cr_assert(disjoint(p, 200, before.slot_size));
    for (int i = 0; i < 200; i++) cr_assert(check_pattern(p[i], before.object_size, (uint32_t)i));
    for (int i = 0; i < 200; i++) kiln_pool_free(ctx, pool, p[i]);
    kiln_pool_stats after = pool_stats(pool);
    cr_assert_eq(after.allocs, before.allocs + 200);
    cr_assert_eq(after.frees, before.frees + 200);
    cr_assert_eq(after.bad_frees, before.bad_frees, "good frees after misuse are accepted");
    cr_assert_eq(after.double_frees, before.double_frees);
    assert_accounting(pool, "still usable");
}

Test(pool, free_of_null_is_a_noop) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "bullets", .size = 32,
                                                              .flags = KILN_POOL_CHECKED });
    cr_assert_not_null(pool);
    void *obj = kiln_pool_alloc(ctx, pool);
    kiln_pool_stats before = pool_stats(pool);
    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_pool_free(ctx, pool, NULL);
    kiln_pool_free(NULL, pool, NULL);
    kiln_pool_free(ctx, NULL, NULL);
    kiln_pool_free(NULL, NULL, NULL);
    char *text = stderr_capture_end(&cap);
    cr_assert_str_eq(text, "", "stderr: %s", text);
    free(text);
    kiln_pool_stats after = pool_stats(pool);
    /* Field by field: memcmp would also compare the struct's padding, which is
     * indeterminate (memcheck reports the read). */
    cr_assert(before.live == after.live && before.allocs == after.allocs &&
              before.frees == after.frees && before.failures == after.failures &&
              before.bad_frees == after.bad_frees && before.double_frees == after.double_frees &&
              before.cached == after.cached && before.carved == after.carved,
              "nothing changed");
    cr_assert_eq(recorded_count(rec), 0, "nothing logged:%s", recorded_summary(rec));
    cr_assert_eq(runtime_stats(rt).api_errors, 0);
    kiln_pool_free(ctx, pool, obj);
    assert_still_usable(pool);
    kiln_pool_destroy(pool);
}

Test(pool, object_of_another_pool_is_refused_and_named) {
    kiln_pool *bullets = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "bullets", .size = 32 });
    kiln_pool *sparks = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "sparks", .size = 32 });
    cr_assert(bullets && sparks);
    void *spark = kiln_pool_alloc(ctx, sparks);
    void *bullet = kiln_pool_alloc(ctx, bullets);
    cr_assert(spark && bullet);
    kiln_pool_free(ctx, bullets, spark);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_FOREIGN_POINTER), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_POOL_FOREIGN_POINTER, KILN_LOG_ERROR), 1);
    char expected[200];
    snprintf(expected, sizeof expected, "POOL_FOREIGN_POINTER: pool 'bullets': %p is not an object "
             "of this pool (it belongs to sparks); ignored", spark);
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_POOL_FOREIGN_POINTER), expected);
    kiln_pool_stats s = pool_stats(bullets);
    cr_assert_eq(s.bad_frees, 1);
    cr_assert_eq(s.frees, 0);
    cr_assert_eq(s.live, 1);
    s = pool_stats(sparks);
    cr_assert_eq(s.live, 1, "the spark is still live in its own pool");
    cr_assert_eq(s.bad_frees, 0);
    cr_assert_eq(runtime_stats(rt).api_errors, 1);

    /* Each the other way round, with checks on: refused before any bit is touched. */
    kiln_pool *checked = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "checked", .size = 32,
                                                                 .flags = KILN_POOL_CHECKED });
    cr_assert_not_null(checked);
    kiln_pool_free(ctx, checked, bullet);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_FOREIGN_POINTER, "(it belongs to bullets)"), 1);
    cr_assert_eq(pool_stats(checked).double_frees, 0);

    kiln_pool_free(ctx, sparks, spark);
    kiln_pool_free(ctx, bullets, bullet);
    cr_assert_eq(pool_stats(sparks).live, 0);
    cr_assert_eq(pool_stats(bullets).live, 0);
    assert_still_usable(bullets);
    assert_still_usable(sparks);
    assert_still_usable(checked);
    cr_assert_eq(runtime_stats(rt).api_errors, 2);
    cr_assert_eq(recorded_count(rec), 2, "log:%s", recorded_summary(rec));
    kiln_pool_destroy(bullets);
    kiln_pool_destroy(sparks);
    kiln_pool_destroy(checked);
}

Test(pool, foreign_pointers_are_refused) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "bullets", .size = 32 });
    kiln_arena *arena = kiln_arena_create(rt, "level");
    recording_log *orec = recording_log_new();
    kiln_desc odesc = recording_desc(orec);
    kiln_runtime *ort = kiln_create(&odesc);
    kiln_ctx *octx = kiln_attach(ort);
    kiln_pool *opool = kiln_pool_create(ort, &(kiln_pool_desc){ .name = "elsewhere", .size = 32 });
    cr_assert(pool && arena && ort && octx && opool);
    void *live = kiln_pool_alloc(ctx, pool);
    cr_assert_not_null(live);

    void *heap = malloc(64);
    long stack_word = 42;
    void *in_arena = kiln_arena_alloc(arena, 32, 16);
    void *in_frame = kiln_frame_alloc(ctx, 32, 16);
    void *other_runtime = kiln_pool_alloc(octx, opool);
    void *block_header = (void *)((uintptr_t)live & ~(uintptr_t)(BS - 1));
    struct { void *ptr; const char *owner; } cases[] = {
        { heap, "no pool" },
        { &stack_word, "no pool" },
        { in_arena, "kiln memory that is no object of this pool" },
        { in_frame, "kiln memory that is no object of this pool" },
        { other_runtime, "no pool" },
        { block_header, "kiln memory that is no object of this pool" },
        { (void *)(uintptr_t)8, "no pool" },
        { (void *)~(uintptr_t)0xF, "no pool" },
    };
    size_t n = sizeof cases / sizeof cases[0];
    cr_assert(in_arena && in_frame && other_runtime && heap);
    for (size_t i = 0; i < n; i++) {
        kiln_pool_free(ctx, pool, cases[i].ptr);
        char expected[200];
        snprintf(expected, sizeof expected, "POOL_FOREIGN_POINTER: pool 'bullets': %p is not an "
                 "object of this pool (it belongs to %s); ignored", cases[i].ptr, cases[i].owner);
        cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_POOL_FOREIGN_POINTER), expected, "case %zu", i);
        cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_FOREIGN_POINTER), i + 1);
        cr_assert_eq(pool_stats(pool).bad_frees, i + 1);
    }
    cr_assert_eq(recorded_count(rec), n, "log:%s", recorded_summary(rec));
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.frees, 0);
    cr_assert_eq(s.live, 1);
    cr_assert_eq(runtime_stats(rt).api_errors, n);
    cr_assert_eq(stack_word, 42, "the refused pointer's memory is untouched");
    cr_assert_eq(recorded_count(orec), 0, "the other runtime heard nothing");
    assert_still_usable(pool);
    kiln_pool_free(ctx, pool, live);
    cr_assert_eq(pool_stats(pool).live, 0);

    free(heap);
    kiln_pool_free(octx, opool, other_runtime);
    kiln_pool_destroy(opool);
    kiln_detach(octx);
    kiln_destroy(ort);
    recording_log_free(orec);
    kiln_arena_destroy(arena);
    kiln_pool_destroy(pool);
}

/* Interior pointers, the tail of a block past its last slot, double frees, frees of
 * objects that sit free in a cache: detected with checks, each with its own item. */
static void check_interior_and_double_free(kiln_runtime *r, kiln_ctx *c, recording_log *log,
                                           uint32_t flags) {
    kiln_pool *pool = kiln_pool_create(r, &(kiln_pool_desc){ .name = "checked", .size = 24,
                                                             .flags = flags });
    cr_assert_not_null(pool);
    cr_assert_eq(pool_stats(pool).slot_size, 32);
    uint64_t errors = runtime_stats(r).api_errors;
    char *obj = kiln_pool_alloc(c, pool);
    char *keep = kiln_pool_alloc(c, pool);
    cr_assert(obj && keep);

    kiln_pool_free(c, pool, obj + 1);
    cr_assert_eq(count_items(log, KILN_LOGITEM_POOL_INTERIOR_POINTER), 1, "log:%s", recorded_summary(log));
    char expected[200];
    snprintf(expected, sizeof expected, "POOL_INTERIOR_POINTER: pool 'checked': %p points 1 bytes "
             "into an object, not at its start; ignored", (void *)(obj + 1));
    cr_assert_str_eq(last_item_text(log, KILN_LOGITEM_POOL_INTERIOR_POINTER), expected);
    kiln_pool_free(c, pool, obj + 31);
    cr_assert_eq(count_items_with(log, KILN_LOGITEM_POOL_INTERIOR_POINTER, "points 31 bytes"), 1);
    cr_assert_eq(pool_stats(pool).live, 2, "an interior pointer frees nothing");

    kiln_pool_free(c, pool, obj);
    cr_assert_eq(pool_stats(pool).live, 1);
    kiln_pool_free(c, pool, obj);
    cr_assert_eq(count_items(log, KILN_LOGITEM_POOL_DOUBLE_FREE), 1, "log:%s", recorded_summary(log));
    snprintf(expected, sizeof expected, "POOL_DOUBLE_FREE: pool 'checked': object %p is not live "
             "(freed twice?); ignored", (void *)obj);
    cr_assert_str_eq(last_item_text(log, KILN_LOGITEM_POOL_DOUBLE_FREE), expected);
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.live, 1, "the double free was ignored");
    cr_assert_eq(s.frees, 1);
    cr_assert_eq(s.double_frees, 1);
    cr_assert_eq(s.bad_frees, 2);

    /* A slot that was carved but never handed out (it sits in the cache). */
    const kiln_pool_block *block = (const kiln_pool_block *)((uintptr_t)obj & ~(uintptr_t)(BS - 1));
    char *idle = (char *)block->first;
    while (idle == obj || idle == keep) idle += 32;
    kiln_pool_free(c, pool, idle);
    cr_assert_eq(count_items_with(log, KILN_LOGITEM_POOL_DOUBLE_FREE, "is not live"), 2);

    /* The tail of the block, past the last whole slot: no object of the pool, in every
     * build (pool.tail_past_the_last_slot_is_refused_in_every_build). */
    uintptr_t tail = block->first + (uintptr_t)pool->slots_per_block * 32;
    cr_assert_leq(tail, (uintptr_t)block + BS);
    if (tail < (uintptr_t)block + BS) {
        kiln_pool_free(c, pool, (void *)tail);
        cr_assert_eq(count_items_with(log, KILN_LOGITEM_POOL_FOREIGN_POINTER, "pool 'checked'"), 1,
                     "tail %#lx:%s", (unsigned long)tail, recorded_summary(log));
        cr_assert_eq(count_items(log, KILN_LOGITEM_POOL_INTERIOR_POINTER), 2);
    }

    /* The same object allocated again is live again and frees once, cleanly. */
    char *again = kiln_pool_alloc(c, pool);
    cr_assert_eq(again, obj, "last in, first out");
    kiln_pool_free(c, pool, again);
    s = pool_stats(pool);
    cr_assert_eq(s.double_frees, 2);
    cr_assert_eq(s.frees, 2);
    cr_assert_eq(s.live, 1);

    /* A double free across contexts: freed by one context, then by another. */
    kiln_ctx *other = kiln_attach(r);
    cr_assert_not_null(other);
    kiln_pool_free(other, pool, keep);
    kiln_pool_free(c, pool, keep);
    cr_assert_eq(count_items(log, KILN_LOGITEM_POOL_DOUBLE_FREE), 3, "log:%s", recorded_summary(log));
    cr_assert_eq(pool_stats(pool).live, 0);
    kiln_detach(other);

    size_t tail_errors = tail < (uintptr_t)block + BS ? 1 : 0;
    cr_assert_eq(runtime_stats(r).api_errors, errors + 5 + tail_errors);
    cr_assert_eq(count_items_at(log, KILN_LOGITEM_POOL_DOUBLE_FREE, KILN_LOG_ERROR), 3);
    cr_assert_eq(pool_stats(pool).bad_frees, 2 + tail_errors);
    assert_accounting(pool, "checked");
    kiln_pool_destroy(pool);
}

Test(pool, checked_flag_detects_interior_pointers_and_double_frees) {
    check_interior_and_double_free(rt, ctx, rec, KILN_POOL_CHECKED);
}

Test(pool, debug_checks_detect_interior_pointers_and_double_frees) {
    teardown();
    rec = recording_log_new();
    kiln_desc desc = recording_desc(rec);
    desc.debug = KILN_DEBUG_CHECKS;
    rt = kiln_create(&desc);
    ctx = kiln_attach(rt);
    cr_assert(rt && ctx);
    check_interior_and_double_free(rt, ctx, rec, 0);
}

/* A pointer into a block's tail slack, past its last whole slot, is no object: refused
 * in every build, not handed out later as an object running past the block. Objects of
 * 3000 bytes leave a tail of thousands of bytes in a 64 KiB block. */
Test(pool, tail_past_the_last_slot_is_refused_in_every_build) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "big", .size = 3000 });
    cr_assert_not_null(pool);
    char *obj = kiln_pool_alloc(ctx, pool);
    cr_assert_not_null(obj);
    const kiln_pool_block *block = (const kiln_pool_block *)((uintptr_t)obj & ~(uintptr_t)(BS - 1));
    size_t last_start = (pool->slots_per_block - 1) * pool->slot;   /* from slot 0's object */
    uintptr_t end = (uintptr_t)block + BS, last = block->first + last_start;
    uintptr_t tail = last + pool->slot;
    cr_assert_gt(end - tail, 1000, "a tail of %zu bytes", (size_t)(end - tail));
    cr_assert(kiln_pool_owns(pool, (void *)last) && kiln_pool_owns_fully(pool, (void *)last));
    cr_assert(!kiln_pool_owns(pool, (void *)tail) && !kiln_pool_owns_fully(pool, (void *)tail),
              "both ownership checks have an upper bound");
    cr_assert(!kiln_pool_owns(pool, (void *)(end - 1)) && !kiln_pool_owns_fully(pool, (void *)(end - 1)));

    void *refused[] = { (void *)tail, (void *)(tail + 8), (void *)(end - 1) };
    size_t n = sizeof refused / sizeof refused[0];
    for (size_t i = 0; i < n; i++) {
        kiln_pool_free(ctx, pool, refused[i]);
        char expected[200];
        snprintf(expected, sizeof expected, "POOL_FOREIGN_POINTER: pool 'big': %p is not an object "
                 "of this pool (it belongs to kiln memory that is no object of this pool); "
                 "ignored", refused[i]);
        cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_POOL_FOREIGN_POINTER), expected, "case %zu", i);
        cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_FOREIGN_POINTER), i + 1, "log:%s", recorded_summary(rec));
    }
    /* Into the last slot past its object's start: an object handed out there would run
     * past the slots, so it is refused without KILN_POOL_CHECKED too. */
    kiln_pool_free(ctx, pool, (void *)(last + 8));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_INTERIOR_POINTER, "points 8 bytes"), 1,
                 "log:%s", recorded_summary(rec));
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.bad_frees, n + 1);
    cr_assert_eq(s.frees, 0);
    cr_assert_eq(s.live, 1);
    cr_assert_eq(runtime_stats(rt).api_errors, n + 1);
    cr_assert_eq(recorded_count(rec), n + 1, "log:%s", recorded_summary(rec));

    /* Every object the pool hands out now starts on a slot, inside its block's slots. */
    void *p[64];
    for (int i = 0; i < 64; i++) {
        p[i] = kiln_pool_alloc(ctx, pool);
        cr_assert_not_null(p[i]);
        uintptr_t base = (uintptr_t)p[i] & ~(uintptr_t)(BS - 1), at = (uintptr_t)p[i] - base;
        cr_assert(at >= pool->first_offset && at - pool->first_offset <= last_start &&
                  (at - pool->first_offset) % pool->slot == 0, "object %d at offset %zu", i, (size_t)at);
        cr_assert_leq(at + pool->size, BS, "object %d runs past its block", i);
    }
    for (int i = 0; i < 64; i++) kiln_pool_free(ctx, pool, p[i]);
    kiln_pool_free(ctx, pool, obj);
    assert_accounting(pool, "tail");
    kiln_pool_destroy(pool);
}

/* Frees of pointers at an object block's edges, in one pool. A slot is its object and,
 * with KILN_DEBUG_GUARDS, the guards around it; the slots lie in [slots, slots_end).
 * Outside them (the header, the tail past the last whole slot, a guard page): no object
 * of the pool, POOL_FOREIGN_POINTER. Inside a slot, not at its object's start: an
 * interior pointer, POOL_INTERIOR_POINTER, in every build for the last slot and slot 0's
 * front guard (kiln_pool_owns refuses them), elsewhere with checks. Whether the block
 * has a tail. */
static bool check_block_edges(uint32_t debug, size_t size, size_t align, uint32_t flags) {
    char label[96];
    snprintf(label, sizeof label, "debug %#x, size %zu, align %zu, flags %#x", (unsigned)debug,
             size, align, (unsigned)flags);
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "edges", .size = size,
                                                              .align = align, .flags = flags });
    cr_assert_not_null(pool, "%s:%s", label, recorded_summary(rec));
    char *obj = kiln_pool_alloc(ctx, pool);
    cr_assert_not_null(obj, "%s", label);
    const kiln_pool_block *block = (const kiln_pool_block *)((uintptr_t)obj & ~(uintptr_t)(BS - 1));
    uintptr_t base = (uintptr_t)block, end = base + BS;
    uintptr_t slots = block->first - pool->debug_front;
    uintptr_t slots_end = slots + (uintptr_t)pool->slots_per_block * pool->slot;
    uintptr_t last = block->first + (uintptr_t)(pool->slots_per_block - 1) * pool->slot;
    cr_assert_geq(slots, base + sizeof *block, "%s: the header comes first", label);
    cr_assert_leq(slots_end, end, "%s", label);

    /* The header's bytes, then the tail's, if the slots leave one. */
    uintptr_t foreign[] = { base, base + sizeof *block - 1, slots - 1,
                            slots_end, slots_end + (end - slots_end) / 2, end - 1 };
    uintptr_t interior[] = { last + 1, slots_end - 1, slots, block->first - 1 };
    size_t n_foreign = slots_end < end ? sizeof foreign / sizeof foreign[0] : 3;
    size_t n_interior = pool->debug_front ? 4 : 2;   /* slot 0's front guard with guards */
    size_t bad = 0;
    for (size_t i = 0; i < n_foreign; i++) {
        kiln_pool_free(ctx, pool, (void *)foreign[i]);
        bad++;
        cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_FOREIGN_POINTER, "pool 'edges'"), i + 1,
                     "%s: block + %zu:%s", label, (size_t)(foreign[i] - base), recorded_summary(rec));
        cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_INTERIOR_POINTER), 0, "%s", label);
    }
    for (size_t i = 0; i < n_interior; i++) {
        kiln_pool_free(ctx, pool, (void *)interior[i]);
        bad++;
        cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_INTERIOR_POINTER), i + 1,
                     "%s: block + %zu:%s", label, (size_t)(interior[i] - base), recorded_summary(rec));
    }
    if (pool->debug_front) {
        char expected[200];
        snprintf(expected, sizeof expected, "POOL_INTERIOR_POINTER: pool 'edges': %p points 1 bytes "
                 "before an object, into its front guard; ignored", (void *)(block->first - 1));
        cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_POOL_INTERIOR_POINTER), expected, "%s", label);
    }
    bool checked = (debug & KILN_DEBUG_CHECKS) || (flags & KILN_POOL_CHECKED);
    if (checked) {
        kiln_pool_free(ctx, pool, obj + 1);
        bad++;
        cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_INTERIOR_POINTER), n_interior + 1, "%s:%s", label,
                     recorded_summary(rec));
        char expected[200];
        snprintf(expected, sizeof expected, "POOL_INTERIOR_POINTER: pool 'edges': %p points 1 bytes "
                 "into an object, not at its start; ignored", (void *)(obj + 1));
        cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_POOL_INTERIOR_POINTER), expected, "%s", label);
    }
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_FOREIGN_POINTER), n_foreign, "%s", label);
    cr_assert_eq(recorded_count(rec), bad, "%s:%s", label, recorded_summary(rec));
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.bad_frees, bad, "%s: every refused free counted", label);
    cr_assert_eq(s.frees, 0, "%s", label);
    cr_assert_eq(s.live, 1, "%s", label);
    assert_still_usable(pool);
    kiln_pool_free(ctx, pool, obj);
    cr_assert_eq(pool_stats(pool).live, 0, "%s", label);
    cr_assert_eq(recorded_count(rec), bad, "%s:%s", label, recorded_summary(rec));
    kiln_pool_destroy(pool);
    return slots_end < end;
}

Test(pool, block_edges_are_foreign_and_slots_interior_in_every_debug_combination) {
    static const struct { size_t size, align; } shapes[] = {
        { 48, 0 }, { 100, 64 }, { 24, 8 }, { 3000, 0 },
    };
    const uint32_t bits[] = { KILN_DEBUG_GUARDS, KILN_DEBUG_GUARD_PAGES, KILN_DEBUG_CHECKS };
    for (uint32_t combo = 0; combo < 8; combo++) {
        uint32_t debug = 0, tails = 0;
        for (int b = 0; b < 3; b++)
            if (combo & (1u << b)) debug |= bits[b];
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            for (uint32_t flags = 0; flags <= KILN_POOL_CHECKED; flags += KILN_POOL_CHECKED) {
                teardown();
                rec = recording_log_new();
                kiln_desc desc = recording_desc(rec);
                desc.debug = debug;
                rt = kiln_create(&desc);
                ctx = rt ? kiln_attach(rt) : NULL;
                cr_assert(rt && ctx, "debug %#x:%s", (unsigned)debug, recorded_summary(rec));
                tails += check_block_edges(debug, shapes[i].size, shapes[i].align, flags);
            }
        }
        cr_assert_geq(tails, 4, "debug %#x: tails freed in %u pools", (unsigned)debug, (unsigned)tails);
    }
}

/* After an interior pointer and a double free, a checked pool goes on working. */
Test(pool, checked_pool_usable_after_misuse) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "checked", .size = 24,
                                                              .flags = KILN_POOL_CHECKED });
    cr_assert_not_null(pool);
    char *obj = kiln_pool_alloc(ctx, pool);
    kiln_pool_free(ctx, pool, obj + 8);
    kiln_pool_free(ctx, pool, obj);
    kiln_pool_free(ctx, pool, obj);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_INTERIOR_POINTER), 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_DOUBLE_FREE), 1);
    assert_still_usable(pool);
    cr_assert_eq(recorded_count(rec), 2, "log:%s", recorded_summary(rec));
    kiln_pool_destroy(pool);
}

Test(pool, destroyed_pool_refuses_use) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "gone", .size = 32 });
    kiln_pool *other = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "other", .size = 32 });
    cr_assert(pool && other);
    uint64_t blocks_before = runtime_stats(rt).blocks.blocks_in_use;
    void *obj = kiln_pool_alloc(ctx, pool);
    cr_assert_not_null(obj);
    kiln_pool_destroy(pool);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_POOL_OBJECTS_LIVE, KILN_LOG_WARN), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(runtime_stats(rt).blocks.blocks_in_use, blocks_before, "blocks given back");
    cr_assert_eq(runtime_stats(rt).pools, 1);
    cr_assert_eq(runtime_stats(rt).api_errors, 0, "live objects at destroy are a warning");

    cr_assert_null(kiln_pool_alloc(ctx, pool));
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_POOL_DESTROYED),
                     "POOL_DESTROYED: kiln_pool_alloc: pool 'gone' has been destroyed; refused");
    kiln_ctx *late = kiln_attach(rt);   /* a context that never saw the pool */
    cr_assert_null(kiln_pool_alloc(late, pool));
    kiln_pool_free(ctx, pool, obj);
    char expected[200];
    snprintf(expected, sizeof expected, "POOL_DESTROYED: kiln_pool_free: pool 'gone' has been "
             "destroyed; %p ignored", obj);
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_POOL_DESTROYED), expected);
    kiln_pool_destroy(pool);
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_POOL_DESTROYED),
                     "POOL_DESTROYED: kiln_pool_destroy: pool 'gone' was destroyed already");
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_POOL_DESTROYED, KILN_LOG_ERROR), 4);
    cr_assert_eq(runtime_stats(rt).api_errors, 4);

    kiln_pool_stats s = pool_stats(pool);
    cr_assert(!s.alive, "stats of a destroyed pool say so");
    cr_assert_str_eq(s.name, "gone");
    cr_assert_eq(s.bad_frees, 1);
    kiln_pool_stats listed[4];
    cr_assert_eq(kiln_stats_pools(rt, listed, 4), 1);
    cr_assert_str_eq(listed[0].name, "other");
    assert_still_usable(other);
    kiln_detach(late);
    kiln_pool_destroy(other);
}

/* A destroyed pool's figures stay readable until kiln_destroy, and stay what they were
 * at the destroy, even when contexts detach and attach again (context memory, with its
 * caches' old counters, is reused). */
Test(pool, destroyed_pool_keeps_its_figures) {
    kiln_ctx *x = kiln_attach(rt);
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "gone", .size = 32 });
    kiln_pool *other = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "other", .size = 32 });
    cr_assert(x && pool && other);
    void *p[10];
    for (int i = 0; i < 10; i++) cr_assert_not_null(p[i] = kiln_pool_alloc(x, pool));
    for (int i = 0; i < 4; i++) kiln_pool_free(x, pool, p[i]);
    void *q = kiln_pool_alloc(ctx, pool);
    cr_assert_not_null(q);
    kiln_detach(x);                    /* folded into the pool's totals */
    kiln_ctx *y = kiln_attach(rt);     /* may reuse x's memory and its caches */
    kiln_ctx *z = kiln_attach(rt);
    cr_assert(y && z);
    void *r = kiln_pool_alloc(y, pool);
    kiln_pool_free(y, pool, r);
    kiln_pool_stats before = pool_stats(pool);
    cr_assert_eq(before.allocs, 12);
    cr_assert_eq(before.frees, 5);
    cr_assert_eq(before.live, 7);
    assert_accounting(pool, "before destroy");
    cr_assert_eq(before.blocks_held, 2);
    uint64_t blocks_before = runtime_stats(rt).blocks.blocks_in_use;

    kiln_pool_destroy(pool);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_OBJECTS_LIVE, "still has 7 live objects"), 1, "log:%s",
                 recorded_summary(rec));
    kiln_pool_stats s = pool_stats(pool);
    cr_assert(!s.alive);
    cr_assert_str_eq(s.name, "gone");
    cr_assert_eq(s.allocs, before.allocs, "allocs %llu", (unsigned long long)s.allocs);
    cr_assert_eq(s.frees, before.frees, "frees %llu", (unsigned long long)s.frees);
    cr_assert_eq(s.live, before.live);
    cr_assert_eq(s.carved, before.carved);
    cr_assert_eq(s.blocks_held, 0, "its blocks went back");
    cr_assert_eq(runtime_stats(rt).blocks.blocks_in_use, blocks_before - 2);

    /* Contexts detach and attach again: the destroyed pool's figures do not move. */
    kiln_detach(y);
    kiln_detach(z);
    kiln_ctx *w = kiln_attach(rt);
    cr_assert_not_null(w);
    s = pool_stats(pool);
    cr_assert_eq(s.allocs, before.allocs);
    cr_assert_eq(s.frees, before.frees);
    cr_assert_eq(s.live, before.live);
    assert_still_usable(other);
    cr_assert_eq(pool_stats(other).allocs, 200, "the other pool counts only its own");
    kiln_detach(w);
    kiln_pool_destroy(other);
}

Test(pool, destroy_logs_live_count) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "leaky", .size = 32,
                                                              .magazine_size = 4 });
    kiln_pool *clean = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "clean", .size = 32 });
    kiln_ctx *other = kiln_attach(rt);
    cr_assert(pool && clean && other);
    void *p[10];
    for (int i = 0; i < 10; i++) p[i] = kiln_pool_alloc(i % 2 ? other : ctx, pool);
    for (int i = 0; i < 3; i++) kiln_pool_free(other, pool, p[i]);   /* 7 live, spread */
    void *q = kiln_pool_alloc(ctx, clean);
    kiln_pool_free(ctx, clean, q);
    kiln_pool_destroy(clean);
    cr_assert_eq(recorded_count(rec), 0, "nothing live, nothing logged:%s", recorded_summary(rec));
    kiln_pool_destroy(pool);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_OBJECTS_LIVE), 1);
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_POOL_OBJECTS_LIVE),
                     "POOL_OBJECTS_LIVE: kiln_pool_destroy: pool 'leaky' still has 7 live objects; "
                     "their memory is returned now");
    kiln_detach(other);
    cr_assert_eq(recorded_count(rec), 1, "log:%s", recorded_summary(rec));
}

Test(pool, bad_descs_are_refused) {
    struct { kiln_pool_desc desc; kiln_log_item item; const char *text; } cases[] = {
        { { .name = "zero", .size = 0 }, KILN_LOGITEM_POOL_BAD_SIZE,
          "POOL_BAD_SIZE: pool 'zero': object size 0 is not from 1 to a quarter block (16384)" },
        { { .name = "huge", .size = BS / 4 + 1 }, KILN_LOGITEM_POOL_BAD_SIZE,
          "POOL_BAD_SIZE: pool 'huge': object size 16385 is not from 1 to a quarter block (16384)" },
        { { .name = "three", .size = 8, .align = 3 }, KILN_LOGITEM_POOL_BAD_ALIGN,
          "POOL_BAD_ALIGN: pool 'three': alignment 3 is not a power of two up to 4096" },
        { { .name = "wide", .size = 8, .align = 8192 }, KILN_LOGITEM_POOL_BAD_ALIGN,
          "POOL_BAD_ALIGN: pool 'wide': alignment 8192 is not a power of two up to 4096" },
        { { .name = "odd", .size = 8, .align = 48 }, KILN_LOGITEM_POOL_BAD_ALIGN, NULL },
        { { .name = "one", .size = 8, .magazine_size = 1 }, KILN_LOGITEM_POOL_BAD_MAGAZINE_SIZE,
          "POOL_BAD_MAGAZINE_SIZE: pool 'one': magazine_size 1 is not from 2 to 256" },
        { { .name = "many", .size = 8, .magazine_size = 300 }, KILN_LOGITEM_POOL_BAD_MAGAZINE_SIZE,
          "POOL_BAD_MAGAZINE_SIZE: pool 'many': magazine_size 300 is not from 2 to 256" },
        { { .name = NULL, .size = 0 }, KILN_LOGITEM_POOL_BAD_SIZE,
          "POOL_BAD_SIZE: pool 'pool': object size 0 is not from 1 to a quarter block (16384)" },
    };
    size_t n = sizeof cases / sizeof cases[0];
    kiln_pool *good = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "good", .size = 8 });
    cr_assert_not_null(good);
    for (size_t i = 0; i < n; i++) {
        recording_log_clear(rec);
        cr_assert_null(kiln_pool_create(rt, &cases[i].desc), "case %zu", i);
        cr_assert_eq(recorded_count(rec), 1, "case %zu:%s", i, recorded_summary(rec));
        cr_assert_eq(count_items_at(rec, cases[i].item, KILN_LOG_ERROR), 1, "case %zu:%s", i,
                     recorded_summary(rec));
        if (cases[i].text) cr_assert_str_eq(last_item_text(rec, cases[i].item), cases[i].text);
        cr_assert_eq(runtime_stats(rt).api_errors, i + 1);
        cr_assert_eq(runtime_stats(rt).pools, 1, "a refused pool is not counted");
    }
    recording_log_clear(rec);
    cr_assert_null(kiln_pool_create(rt, NULL));
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_POOL_NULL_DESC), "POOL_NULL_DESC: kiln_pool_create: desc is NULL");
    cr_assert_eq(runtime_stats(rt).api_errors, n + 1);

    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln_pool *no_rt = kiln_pool_create(NULL, &(kiln_pool_desc){ .size = 8 });
    char *text = stderr_capture_end(&cap);
    cr_assert_null(no_rt);
    cr_assert_eq(count_substrings(text, "RUNTIME_NULL: kiln_pool_create: "), 1, "stderr: %s", text);
    free(text);

    /* The limits themselves are accepted, and the good pool was never disturbed. */
    kiln_pool *edge = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "edge", .size = BS / 4,
                                                              .align = 4096, .magazine_size = 256 });
    kiln_pool *tiny = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "tiny", .size = 1,
                                                              .align = 1, .magazine_size = 2 });
    cr_assert(edge && tiny);
    cr_assert_eq(runtime_stats(rt).pools, 3);
    kiln_pool_stats listed[4];
    cr_assert_eq(kiln_stats_pools(rt, listed, 4), 3);
    assert_still_usable(good);
    assert_still_usable(tiny);
    kiln_pool_destroy(good);
    kiln_pool_destroy(edge);
    kiln_pool_destroy(tiny);
}

Test(pool, null_context_and_null_pool_are_refused) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "bullets", .size = 32 });
    cr_assert_not_null(pool);
    void *obj = kiln_pool_alloc(ctx, pool);
    cr_assert_not_null(obj);

    cr_assert_null(kiln_pool_alloc(NULL, pool));
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_CONTEXT_NULL),
                     "CONTEXT_NULL: kiln_pool_alloc: the context is NULL");
    kiln_pool_free(NULL, pool, obj);
    char expected[200];
    snprintf(expected, sizeof expected, "CONTEXT_NULL: kiln_pool_free: the context is NULL; %p not "
             "freed", obj);
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_CONTEXT_NULL), expected);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_CONTEXT_NULL, KILN_LOG_ERROR), 2);
    cr_assert_eq(runtime_stats(rt).api_errors, 2, "counted: the pool leads to the runtime");

    stderr_capture cap;
    stderr_capture_begin(&cap);
    void *none = kiln_pool_alloc(ctx, NULL);
    kiln_pool_free(ctx, NULL, obj);
    kiln_pool_alloc(NULL, NULL);
    kiln_pool_destroy(NULL);
    kiln_pool_stats s;
    memset(&s, 0xFF, sizeof s);
    bool got = kiln_pool_stats_get(NULL, &s);
    bool got_null = kiln_pool_stats_get(pool, NULL);
    size_t listed = kiln_stats_pools(NULL, NULL, 0);
    char *text = stderr_capture_end(&cap);
    cr_assert_null(none);
    cr_assert(!got && !got_null);
    cr_assert_eq(listed, 0);
    kiln_pool_stats zero;
    memset(&zero, 0, sizeof zero);
    cr_assert_eq(memcmp(&s, &zero, sizeof s), 0, "stats zeroed for a NULL pool");
    /* What names its runtime (a context, a pool) reports through that runtime's log. */
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_NULL, "kiln_pool_alloc: the pool is NULL"), 1,
                 "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_NULL, "kiln_pool_free: the pool is NULL"), 1,
                 "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_STATS_NULL_OUT, "kiln_pool_stats_get"), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(runtime_stats(rt).api_errors, 5, "counted");
    cr_assert_eq(count_substrings(text, "CONTEXT_NULL: kiln_pool_alloc: the context is NULL"), 1,
                 "stderr: %s", text);
    cr_assert_eq(count_substrings(text, "POOL_NULL: kiln_pool_stats_get"), 1, "stderr: %s", text);
    cr_assert_eq(count_substrings(text, "RUNTIME_NULL: kiln_stats_pools"), 1, "stderr: %s", text);
    cr_assert_eq(count_substrings(text, "kiln error: "), 3, "stderr: %s", text);
    free(text);

    kiln_pool_stats after = pool_stats(pool);
    cr_assert_eq(after.live, 1, "the object was never freed");
    cr_assert_eq(after.frees, 0);
    cr_assert_eq(after.bad_frees, 0);
    kiln_pool_free(ctx, pool, obj);
    assert_still_usable(pool);
    cr_assert_eq(recorded_count(rec), 5, "log:%s", recorded_summary(rec));
    kiln_pool_destroy(pool);
}

Test(pool, at_most_256_live_pools) {
    static kiln_pool *pools[256];
    for (int i = 0; i < 256; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        pools[i] = kiln_pool_create(rt, &(kiln_pool_desc){ .name = name, .size = 8 });
        cr_assert_not_null(pools[i], "pool %d:%s", i, recorded_summary(rec));
    }
    cr_assert_eq(runtime_stats(rt).pools, 256);
    cr_assert_null(kiln_pool_create(rt, &(kiln_pool_desc){ .name = "one too many", .size = 8 }));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_POOL_TOO_MANY, KILN_LOG_ERROR), 1, "log:%s", recorded_summary(rec));
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_POOL_TOO_MANY),
                     "POOL_TOO_MANY: kiln_pool_create: pool 'one too many': all 256 pool slots are in use");
    cr_assert_eq(runtime_stats(rt).api_errors, 1);
    cr_assert_eq(runtime_stats(rt).pools, 256);
    /* The first and last pools work (cache slots 0 and 255). */
    void *a = kiln_pool_alloc(ctx, pools[0]), *b = kiln_pool_alloc(ctx, pools[255]);
    cr_assert(a && b);
    kiln_pool_free(ctx, pools[0], a);
    kiln_pool_free(ctx, pools[255], b);
    cr_assert_eq(pool_stats(pools[255]).frees, 1);

    kiln_pool_destroy(pools[100]);
    kiln_pool *again = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "again", .size = 8 });
    cr_assert_not_null(again, "a destroyed pool frees its slot");
    cr_assert_eq(runtime_stats(rt).pools, 256);
    cr_assert_eq(kiln_stats_pools(rt, NULL, 0), 256);
    assert_still_usable(again);
    cr_assert_null(kiln_pool_create(rt, &(kiln_pool_desc){ .name = "still too many", .size = 8 }));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_TOO_MANY), 2);
    kiln_pool_destroy(again);
    for (int i = 0; i < 256; i++) if (i != 100) kiln_pool_destroy(pools[i]);
    cr_assert_eq(runtime_stats(rt).pools, 0);
    cr_assert_eq(recorded_count(rec), 2, "log:%s", recorded_summary(rec));
}

Test(pool, runtime_destroy_reports_live_pools) {
    recording_log *drec = recording_log_new();
    size_t heap_before = heap_bytes_in_use();
    kiln_desc desc = recording_desc(drec);
    kiln_runtime *drt = kiln_create(&desc);
    kiln_ctx *dctx = kiln_attach(drt);
    kiln_pool *kept = kiln_pool_create(drt, &(kiln_pool_desc){ .name = "kept", .size = 32 });
    kiln_pool *empty = kiln_pool_create(drt, &(kiln_pool_desc){ .name = "empty", .size = 32 });
    kiln_pool *gone = kiln_pool_create(drt, &(kiln_pool_desc){ .name = "gone", .size = 32 });
    cr_assert(drt && dctx && kept && empty && gone);
    for (int i = 0; i < 3; i++) cr_assert_not_null(kiln_pool_alloc(dctx, kept));
    kiln_pool_destroy(gone);
    kiln_detach(dctx);
    kiln_destroy(drt);
    cr_assert_eq(count_items_at(drec, KILN_LOGITEM_POOL_STILL_ALIVE, KILN_LOG_WARN), 2, "log:%s",
                 recorded_summary(drec));
    cr_assert_eq(count_items_with(drec, KILN_LOGITEM_POOL_STILL_ALIVE, "pool 'kept' is still alive"), 1);
    cr_assert_eq(count_items_with(drec, KILN_LOGITEM_POOL_STILL_ALIVE, "pool 'empty' is still alive"), 1);
    cr_assert_eq(count_items_with(drec, KILN_LOGITEM_POOL_OBJECTS_LIVE, "pool 'kept' still has 3 live objects"), 1);
    cr_assert_eq(recorded_count(drec), 3, "log:%s", recorded_summary(drec));
    if (heap_accounting_exact())
        cr_assert_eq(heap_bytes_in_use(), heap_before, "kiln_destroy freed every pool");
    recording_log_free(drec);
}

/* api_errors counts every refused pool call; warnings are not misuse. */
Test(pool, api_errors_count_pool_misuse) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "p", .size = 16,
                                                              .flags = KILN_POOL_CHECKED });
    kiln_pool *capped = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "capped", .size = 16,
                                                                .capacity = 1 });
    kiln_pool *dead = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "dead", .size = 16 });
    cr_assert(pool && capped && dead);
    kiln_pool_destroy(dead);
    char *obj = kiln_pool_alloc(ctx, pool);
    void *one = kiln_pool_alloc(ctx, capped);
    long local;
    cr_assert(obj && one);
    cr_assert_null(kiln_pool_alloc(ctx, capped));                        /* capacity: a warning */
    cr_assert_null(kiln_pool_create(rt, &(kiln_pool_desc){ .size = 0 })); /* POOL_BAD_SIZE */
    cr_assert_null(kiln_pool_create(rt, &(kiln_pool_desc){ .size = 8, .align = 3 }));  /* POOL_BAD_ALIGN */
    cr_assert_null(kiln_pool_create(rt, &(kiln_pool_desc){ .size = 8, .magazine_size = 1 }));
    cr_assert_null(kiln_pool_create(rt, NULL));                          /* POOL_NULL_DESC */
    kiln_pool_free(ctx, pool, &local);                                   /* POOL_FOREIGN_POINTER */
    kiln_pool_free(ctx, pool, obj + 4);                                  /* POOL_INTERIOR_POINTER */
    kiln_pool_free(ctx, pool, obj);
    kiln_pool_free(ctx, pool, obj);                                      /* POOL_DOUBLE_FREE */
    cr_assert_null(kiln_pool_alloc(ctx, dead));                          /* POOL_DESTROYED */
    kiln_pool_free(ctx, dead, obj);                                      /* POOL_DESTROYED */
    kiln_pool_destroy(dead);                                             /* POOL_DESTROYED */
    cr_assert_null(kiln_pool_alloc(NULL, pool));                         /* CONTEXT_NULL */
    const kiln_log_item items[] = {
        KILN_LOGITEM_POOL_BAD_SIZE, KILN_LOGITEM_POOL_BAD_ALIGN, KILN_LOGITEM_POOL_BAD_MAGAZINE_SIZE,
        KILN_LOGITEM_POOL_NULL_DESC, KILN_LOGITEM_POOL_FOREIGN_POINTER, KILN_LOGITEM_POOL_INTERIOR_POINTER,
        KILN_LOGITEM_POOL_DOUBLE_FREE, KILN_LOGITEM_CONTEXT_NULL,
    };
    size_t n = sizeof items / sizeof items[0];
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(count_items_at(rec, items[i], KILN_LOG_ERROR), 1, "%s:%s",
                     kiln_log_item_name(items[i]), recorded_summary(rec));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_POOL_DESTROYED, KILN_LOG_ERROR), 3);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_POOL_CAPACITY_REACHED, KILN_LOG_WARN), 1);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_POOL_CAPACITY_NEAR, KILN_LOG_WARN), 1);
    cr_assert_eq(runtime_stats(rt).api_errors, n + 3);
    cr_assert_eq(recorded_count(rec), n + 3 + 2, "log:%s", recorded_summary(rec));
    assert_still_usable(pool);
    kiln_pool_free(ctx, capped, one);
    cr_assert_eq(kiln_pool_alloc(ctx, capped), one);
    kiln_pool_free(ctx, capped, one);
    assert_accounting(capped, "capped");
    kiln_pool_destroy(pool);
    kiln_pool_destroy(capped);
}

/* ---- 8. a new pool in a destroyed pool's slot ---- */

Test(pool, new_pool_in_a_destroyed_slot) {
    enum { N = 300 };
    kiln_ctx *other = kiln_attach(rt);
    kiln_pool *old = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "old", .size = 48 });
    cr_assert(other && old);
    uint64_t blocks_before = runtime_stats(rt).blocks.blocks_in_use;
    static void *p[N];
    for (int i = 0; i < N; i++) cr_assert_not_null(p[i] = kiln_pool_alloc(i % 3 ? ctx : other, old));
    for (int i = 0; i < N; i += 2) kiln_pool_free(i % 4 ? other : ctx, old, p[i]);  /* cached in both */
    cr_assert_gt(pool_stats(old).cached, 0);
    kiln_pool_destroy(old);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_OBJECTS_LIVE, "pool 'old' still has 150 live"), 1,
                 "log:%s", recorded_summary(rec));
    cr_assert_eq(runtime_stats(rt).blocks.blocks_in_use, blocks_before);

    kiln_pool *fresh = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "new", .size = 64,
                                                                .flags = KILN_POOL_CHECKED });
    cr_assert_not_null(fresh);
    cr_assert_neq((void *)fresh, (void *)old, "a new pool never reuses a destroyed one's bookkeeping");
    cr_assert_eq(runtime_stats(rt).pools, 1);
    /* The stale handle stays a destroyed pool although its slot now serves "new". */
    recording_log_clear(rec);
    cr_assert_null(kiln_pool_alloc(ctx, old));
    cr_assert_null(kiln_pool_alloc(other, old));
    kiln_pool_free(ctx, old, p[1]);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_DESTROYED, "pool 'old'"), 3, "log:%s",
                 recorded_summary(rec));
    cr_assert(!pool_stats(old).alive);
    kiln_pool_stats s = pool_stats(fresh);
    cr_assert_str_eq(s.name, "new");
    cr_assert(s.alive);
    cr_assert_eq(s.allocs + s.frees + s.carved + s.cached + s.in_depot + s.live, 0,
                 "nothing of the old life shows");

    /* Before the new pool carves, every old pointer is foreign to it. */
    recording_log_clear(rec);
    for (int i = 0; i < N; i++) kiln_pool_free(i % 2 ? ctx : other, fresh, p[i]);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_FOREIGN_POINTER, "pool 'new'"), N, "log:%s",
                 recorded_summary(rec));
    s = pool_stats(fresh);
    cr_assert_eq(s.bad_frees, N);
    cr_assert_eq(s.frees, 0);

    /* Contexts that cached objects of the old pool work with the new one. */
    static void *q[2 * N];
    for (int i = 0; i < 2 * N; i++) {
        q[i] = kiln_pool_alloc(i % 2 ? ctx : other, fresh);
        cr_assert_not_null(q[i]);
        cr_assert(is_aligned(q[i], DEFAULT_ALIGN));
        fill_pattern(q[i], 64, (uint32_t)i);
    }
    cr_assert(disjoint(q, 2 * N, 64));
    s = pool_stats(fresh);
    cr_assert_eq(s.allocs, 2 * N);
    cr_assert_eq(s.live, 2 * N);
    assert_accounting(fresh, "new pool");

    /* Now the new pool's blocks may be the old pool's: old pointers that are not live
     * objects of the new pool are still refused, each with its item. */
    static void *sorted[2 * N];
    memcpy(sorted, q, sizeof sorted);
    qsort(sorted, 2 * N, sizeof *sorted, compare_ptrs);
    recording_log_clear(rec);
    size_t tried = 0;
    for (int i = 0; i < N; i++) {
        if (in_sorted(sorted, 2 * N, p[i])) continue;   /* a live object of the new pool */
        kiln_pool_free(ctx, fresh, p[i]);
        tried++;
    }
    size_t refused = count_items(rec, KILN_LOGITEM_POOL_FOREIGN_POINTER) + count_items(rec, KILN_LOGITEM_POOL_INTERIOR_POINTER) +
                     count_items(rec, KILN_LOGITEM_POOL_DOUBLE_FREE);
    cr_assert_eq(refused, tried, "%zu old pointers tried, %zu refused:%s", tried, refused,
                 recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), tried);
    cr_assert_eq(pool_stats(fresh).frees, 0, "no old pointer was taken");
    for (int i = 0; i < 2 * N; i++)
        cr_assert(check_pattern(q[i], 64, (uint32_t)i), "new object %d overwritten", i);
    for (int i = 0; i < 2 * N; i++) kiln_pool_free(i % 3 ? ctx : other, fresh, q[i]);
    s = pool_stats(fresh);
    cr_assert_eq(s.live, 0);
    cr_assert_eq(s.frees, 2 * N);
    assert_accounting(fresh, "end");
    kiln_detach(other);
    assert_accounting(fresh, "other detached");
    kiln_pool_destroy(fresh);
}
