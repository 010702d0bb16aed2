/* tests/test_pool_plan.c — memory a game plans: kiln_pool_reserve and desc.reserve,
 * kiln_pool_flush and kiln_pool_trim (a level allocated from two threads, then given
 * back), KILN_POOL_CLEAR_ON_FREE with and without the debug layer, the capacity-near
 * warnings of pools and handle tables, and handle tables' desc.reserve. The bad inputs
 * of each call are rows of tests/misuse_cases.h; those that need a runtime of their own
 * (memory_limit) are here. */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "alloc/pool.h"   /* slots_per_block, for the blocks a reserve needs */
#include "recording_log.h"

static recording_log *rec;
static kiln_runtime  *rt;
static kiln_ctx      *ctx;

static void start(kiln_desc desc) {
    rt = kiln_create(&desc);
    cr_assert_not_null(rt, "kiln_create failed:%s", recorded_summary(rec));
    ctx = kiln_attach(rt);
    cr_assert_not_null(ctx);
}

static void setup(void) {
    rec = recording_log_new();
    start(recording_desc(rec));
}

static void teardown(void) {
    kiln_detach(ctx);
    kiln_destroy(rt);
    recording_log_free(rec);
}

TestSuite(pool_plan, .init = setup, .fini = teardown);

static kiln_pool_stats stats_of(kiln_pool *pool) {
    kiln_pool_stats s;
    cr_assert(kiln_pool_stats_get(pool, &s));
    return s;
}

static size_t object_blocks(kiln_pool *pool) {
    kiln_pool_stats s = stats_of(pool);
    return s.blocks_held - s.magazine_blocks;
}

/* ---- reserve ---- */

Test(pool_plan, reserve_carves_into_the_depot_and_alloc_takes_no_block) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "shots", .size = 48 });
    size_t got = kiln_pool_reserve(pool, 1000);
    cr_assert_geq(got, 1000);
    kiln_pool_stats s = stats_of(pool);
    cr_assert_geq(s.in_depot + (s.blocks_held - s.magazine_blocks) * pool->slots_per_block - s.carved, 1000,
                  "the depot and the room of the block being carved");
    kiln_block_pool_stats before;
    kiln_stats rs;
    cr_assert(kiln_stats_get(rt, &rs));
    before = rs.blocks;
    void *objs[1000];
    for (int i = 0; i < 1000; i++) cr_assert_not_null(objs[i] = kiln_pool_alloc(ctx, pool));
    cr_assert(kiln_stats_get(rt, &rs));
    cr_assert_eq(rs.blocks.blocks_in_use, before.blocks_in_use, "the reserved objects took no block");
    for (int i = 0; i < 1000; i++) kiln_pool_free(ctx, pool, objs[i]);
    cr_assert_geq(kiln_pool_reserve(pool, 0), 1, "count 0 returns the figure");
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
    kiln_pool_destroy(pool);
}

Test(pool_plan, desc_reserve_is_carved_at_create_and_kept_by_trim) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "kept", .size = 64, .reserve = 3000 });
    cr_assert_not_null(pool);
    kiln_pool_stats s = stats_of(pool);
    cr_assert_geq(object_blocks(pool) * pool->slots_per_block, 3000);
    cr_assert_eq(s.reserve, 3000);
    size_t need = (3000 + pool->slots_per_block - 1) / pool->slots_per_block;
    cr_assert_eq(object_blocks(pool), need);
    cr_assert_eq(kiln_pool_trim(pool), 0, "nothing beyond the reserve to give back");
    cr_assert_eq(object_blocks(pool), need);
    kiln_pool_destroy(pool);
}

Test(pool_plan, reserve_at_memory_limit_carves_what_it_can) {
    teardown();
    rec = recording_log_new();
    kiln_desc desc = recording_desc(rec);
    desc.memory_limit = (size_t)4 << 20;
    desc.reserve_size = (size_t)1 << 20;
    start(desc);
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "big", .size = 1024 });
    size_t got = kiln_pool_reserve(pool, (size_t)1 << 20);   /* 1 GiB of objects */
    cr_assert_gt(got, 0);
    cr_assert_lt(got, (size_t)1 << 20);
    cr_assert_eq(stats_of(pool).in_depot, got, "what it says is in the depot");
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_RESERVE_SHORT, "pool 'big'"), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_RESERVE_SHORT, "memory_limit"), 1);
    /* Everything reserved is usable. */
    void *o = kiln_pool_alloc(ctx, pool);
    cr_assert_not_null(o);
    kiln_pool_free(ctx, pool, o);
    kiln_pool_destroy(pool);
}

/* ---- the level: two threads allocate 40 000 particles and free them ---- */

#define LEVEL 40000
#define KEEP  2000

struct particle { float pos[3], vel[3]; void *owner; };

typedef struct level_half {
    kiln_pool *pool;
    void     **objs;
    pthread_barrier_t *allocated;
} level_half;

static void *level_thread(void *arg) {
    level_half *h = arg;
    kiln_ctx *c = kiln_attach(rt);
    for (int i = 0; i < LEVEL / 2; i++) h->objs[i] = kiln_pool_alloc(c, h->pool);
    pthread_barrier_wait(h->allocated);
    pthread_barrier_wait(h->allocated);   /* the main thread counted them */
    /* Its own objects; the frees land in its cache and spill to the depot. */
    for (int i = 0; i < LEVEL / 2; i++) kiln_pool_free(c, h->pool, h->objs[i]);
    kiln_pool_flush(c, h->pool);
    pthread_barrier_wait(h->allocated);   /* stay attached until the main thread trimmed */
    pthread_barrier_wait(h->allocated);
    kiln_detach(c);
    return NULL;
}

Test(pool_plan, level_freed_then_flush_and_trim_return_to_the_reserve) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){
        .name = "particles", .size = sizeof(struct particle), .reserve = KEEP });
    size_t reserve_blocks = object_blocks(pool);
    kiln_pool_stats st;
    cr_assert(kiln_pool_stats_get(pool, &st));
    /* The reserve carves whole magazines into the depot: KEEP, rounded up to one. */
    cr_assert(st.carved >= KEEP && st.carved < KEEP + st.magazine_size, "carved %llu",
              (unsigned long long)st.carved);
    cr_assert_eq(reserve_blocks, (st.carved + pool->slots_per_block - 1) / pool->slots_per_block);
    pthread_barrier_t b;
    pthread_barrier_init(&b, NULL, 2);
    void **objs = malloc(LEVEL * sizeof *objs);
    level_half halves[2] = { { pool, objs, &b }, { pool, objs + LEVEL / 2, &b } };
    pthread_t t;
    pthread_create(&t, NULL, level_thread, &halves[0]);
    kiln_ctx *main_ctx = ctx;
    for (int i = 0; i < LEVEL / 2; i++) cr_assert_not_null(halves[1].objs[i] = kiln_pool_alloc(main_ctx, pool));
    pthread_barrier_wait(&b);
    cr_assert_eq(stats_of(pool).live, LEVEL, "live %llu", (unsigned long long)stats_of(pool).live);
    size_t level_blocks = object_blocks(pool);
    cr_assert_geq(level_blocks, LEVEL / pool->slots_per_block);
    pthread_barrier_wait(&b);
    for (int i = 0; i < LEVEL / 2; i++) kiln_pool_free(main_ctx, pool, halves[1].objs[i]);
    kiln_pool_flush(main_ctx, pool);
    pthread_barrier_wait(&b);   /* the other thread flushed */
    size_t trimmed = kiln_pool_trim(pool);
    kiln_pool_stats s = stats_of(pool);
    cr_assert_eq(s.live, 0);
    cr_assert_eq(s.cached, 0, "both caches were flushed");
    /* What desc.reserve needs: its objects' blocks, not the magazine the reserve rounded
     * up to. */
    size_t needed_blocks = (KEEP + pool->slots_per_block - 1) / pool->slots_per_block;
    cr_assert_eq(object_blocks(pool), needed_blocks, "blocks held %zu, the reserve needs %zu",
                 object_blocks(pool), needed_blocks);
    cr_assert_eq(trimmed, level_blocks - needed_blocks);
    cr_assert_eq(s.blocks_trimmed, trimmed);
    cr_assert_eq(s.trims, 1);
    cr_assert_geq(s.carved, KEEP);
    cr_assert_eq(s.carved, s.in_depot);
    pthread_barrier_wait(&b);
    pthread_join(t, NULL);
    pthread_barrier_destroy(&b);
    /* The pool works on: the kept objects first, then new blocks. */
    for (int i = 0; i < LEVEL / 4; i++) cr_assert_not_null(objs[i] = kiln_pool_alloc(ctx, pool));
    for (int i = 0; i < LEVEL / 4; i++) kiln_pool_free(ctx, pool, objs[i]);
    free(objs);
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
    kiln_pool_destroy(pool);
}

Test(pool_plan, trim_keeps_blocks_with_live_or_cached_objects) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "mixed", .size = 256 });
    size_t n = 4 * pool->slots_per_block;
    void **objs = malloc(n * sizeof *objs);
    for (size_t i = 0; i < n; i++) objs[i] = kiln_pool_alloc(ctx, pool);
    for (size_t i = 1; i < n; i++) kiln_pool_free(ctx, pool, objs[i]);   /* objs[0] stays live */
    cr_assert_eq(kiln_pool_trim(pool), 2, "the live object's block and the cache's stay");
    kiln_pool_flush(ctx, pool);
    kiln_pool_trim(pool);
    cr_assert_eq(object_blocks(pool), 1, "only the live object's block");
    kiln_pool_free(ctx, pool, objs[0]);
    kiln_pool_flush(ctx, pool);
    kiln_pool_trim(pool);
    cr_assert_eq(object_blocks(pool), 0);
    cr_assert_eq(stats_of(pool).carved, 0);
    free(objs);
    kiln_pool_destroy(pool);
}

/* ---- KILN_POOL_CLEAR_ON_FREE ---- */

static void check_clear_on_free(uint32_t debug) {
    teardown();
    rec = recording_log_new();
    kiln_desc desc = recording_desc(rec);
    desc.debug = debug;
    start(desc);
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){
        .name = "cleared", .size = sizeof(struct particle), .flags = KILN_POOL_CLEAR_ON_FREE,
        .magazine_size = 4 });
    struct particle *p[8];
    for (int i = 0; i < 8; i++) {
        p[i] = kiln_pool_alloc(ctx, pool);
        cr_assert_not_null(p[i]);
        memset(p[i], 0x5a, sizeof *p[i]);
        p[i]->owner = p[i];
    }
    for (int i = 0; i < 8; i++) kiln_pool_free(ctx, pool, p[i]);
    if (!(debug & KILN_DEBUG_POISON)) {
        static const struct particle zero;
        for (int i = 0; i < 8; i++) cr_assert(memcmp(p[i], &zero, sizeof zero) == 0, "object %d", i);
    }
    for (int i = 0; i < 8; i++) {
        struct particle *q = kiln_pool_alloc(ctx, pool);
        if (!(debug & KILN_DEBUG_FILL)) cr_assert_null(q->owner, "no pointer kept from the last use");
        kiln_pool_free(ctx, pool, q);
    }
    /* A double free is still caught with the debug layer, and clears nothing twice. */
    if (debug & KILN_DEBUG_GUARDS) {
        struct particle *q = kiln_pool_alloc(ctx, pool);
        kiln_pool_free(ctx, pool, q);
        kiln_pool_free(ctx, pool, q);
        cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_DOUBLE_FREE), 1);
    }
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_GUARD_DAMAGED), 0, "log:%s", recorded_summary(rec));
    kiln_frame_begin(ctx);
    kiln_frame_end(ctx);   /* the guard audit */
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_GUARD_DAMAGED), 0, "log:%s", recorded_summary(rec));
    kiln_pool_destroy(pool);
}

Test(pool_plan, clear_on_free_zeroes_freed_objects) { check_clear_on_free(0); }
Test(pool_plan, clear_on_free_with_checks) { check_clear_on_free(KILN_DEBUG_CHECKS); }
Test(pool_plan, clear_on_free_with_guards_and_fill) { check_clear_on_free(KILN_DEBUG_GUARDS | KILN_DEBUG_FILL); }
Test(pool_plan, clear_on_free_with_poison_and_sites) { check_clear_on_free(KILN_DEBUG_POISON | KILN_DEBUG_SITES); }

/* ---- the capacity warnings ---- */

Test(pool_plan, capacity_near_warns_once_per_episode) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "capped", .size = 32,
                                                              .capacity = 100, .magazine_size = 4 });
    void *objs[100];
    for (int i = 0; i < 90; i++) objs[i] = kiln_pool_alloc(ctx, pool);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_CAPACITY_NEAR, "pool 'capped'"), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_CAPACITY_NEAR, "capacity of 100"), 1);
    for (int i = 75; i < 90; i++) kiln_pool_free(ctx, pool, objs[i]);   /* hovers at 75% */
    for (int i = 75; i < 90; i++) objs[i] = kiln_pool_alloc(ctx, pool);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_CAPACITY_NEAR), 1, "one episode");
    for (int i = 0; i < 90; i++) kiln_pool_free(ctx, pool, objs[i]);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_CAPACITY_NEAR), 1,
                 "an estimate (a magazine exchange) never ends an episode");
    cr_assert_eq(stats_of(pool).live, 0);   /* an exact reading, as every frame end makes: ends it */
    for (int i = 0; i < 90; i++) objs[i] = kiln_pool_alloc(ctx, pool);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_CAPACITY_NEAR), 2, "a second episode");
    for (int i = 0; i < 90; i++) kiln_pool_free(ctx, pool, objs[i]);
    kiln_pool_destroy(pool);
}

/* A pool that sits over the share between exchanges is judged at every frame end: the
 * warning comes at the first one, even at warn_percent 100 (a full pool). */
Test(pool_plan, capacity_near_is_judged_at_frame_end_too) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = KILN_NO_WORKERS;
    desc.warn_percent = 100;
    kiln_runtime *full_rt = kiln_create(&desc);
    kiln_ctx *c = kiln_attach(full_rt);
    kiln_pool *pool = kiln_pool_create(full_rt, &(kiln_pool_desc){ .name = "enemies", .size = 16,
                                                                   .capacity = 1000 });
    void *objs[1000];
    kiln_frame_begin(c);
    for (int i = 0; i < 1000; i++) objs[i] = kiln_pool_alloc(c, pool);
    kiln_frame_end(c);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_CAPACITY_NEAR, "1000 of its capacity of 1000"), 1,
                 "log:%s", recorded_summary(rec));
    for (int f = 0; f < 5; f++) {
        kiln_frame_begin(c);
        kiln_frame_end(c);
    }
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_CAPACITY_NEAR), 1, "one per episode");
    for (int i = 0; i < 1000; i++) kiln_pool_free(c, pool, objs[i]);
    kiln_pool_destroy(pool);
    kiln_detach(c);
    kiln_destroy(full_rt);
}

Test(pool_plan, handles_capacity_near_warns_at_frame_end) {
    kiln_handles *t = kiln_handles_create(rt, &(kiln_handles_desc){ .name = "units", .item_size = 16,
                                                                    .capacity = 100, .reserve = 100 });
    cr_assert_not_null(t);
    kiln_handle h[100];
    kiln_frame_begin(ctx);
    for (int i = 0; i < 85; i++) h[i] = kiln_handle_alloc(ctx, t, NULL);
    kiln_frame_end(ctx);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_CAPACITY_NEAR, "'units': 85 of its capacity of 100"), 1,
                 "log:%s", recorded_summary(rec));
    kiln_frame_begin(ctx);
    kiln_frame_end(ctx);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_CAPACITY_NEAR), 1, "one per episode");
    for (int i = 0; i < 85; i++) kiln_handle_free(ctx, t, h[i]);
    kiln_handles_destroy(t);
}

Test(pool_plan, handles_reserve_over_default_capacity_is_refused) {
    cr_assert_null(kiln_handles_create(rt, &(kiln_handles_desc){ .item_size = 8, .reserve = 65537 }));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_BAD_RESERVE), 1);
    kiln_handles *t = kiln_handles_create(rt, &(kiln_handles_desc){ .item_size = 8, .reserve = 65536 });
    cr_assert_not_null(t);
    kiln_handles_destroy(t);
}
