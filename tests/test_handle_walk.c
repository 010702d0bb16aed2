/* tests/test_handle_walk.c — the live-item walk of handle tables: kiln_handles_foreach
 * visits exactly the live items in slot order with their handles and addresses; items
 * freed or allocated by the visit itself; a walk inside a walk; destroy refused while a
 * walk runs; kiln_handles_parallel_for on workers, each item once, from the main thread
 * and from inside a job; the typed walks of KILN_HANDLE_TYPE; and every bad argument.
 *
 * The suite's runtime has two workers and its main context drives the frame clock, with
 * a frame open. Visits on workers record what they saw in atomics; the test asserts on
 * its own thread afterwards. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include <kiln/jobs.h>

#include "recording_log.h"

static recording_log *rec;
static kiln_runtime  *rt;
static kiln_ctx      *ctx;

static void setup(void) {
    rec = recording_log_new();
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = 2;
    rt = kiln_create(&desc);
    ctx = rt ? kiln_attach(rt) : NULL;
    cr_assert(rt && ctx, "no runtime:%s", recorded_summary(rec));
    kiln_frame_begin(ctx);
}

static void teardown(void) {
    if (ctx) {
        kiln_frame_end(ctx);
        kiln_detach(ctx);
    }
    kiln_destroy(rt);
    recording_log_free(rec);
}

/* The timeout only turns a deadlock into a failed test; nothing passes or fails by it. */
TestSuite(handle_walk, .init = setup, .fini = teardown, .timeout = 120);

#define assert_no_log() \
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec))

typedef struct entity {
    uint32_t     id;
    _Atomic int  visits;
} entity;

static kiln_handles *make_table(uint32_t capacity) {
    kiln_handles *t = kiln_handles_create(rt, &(kiln_handles_desc){
        .name = "entities", .item_size = sizeof(entity), .capacity = capacity });
    cr_assert_not_null(t, "%s", recorded_summary(rec));
    return t;
}

static void destroy_table(kiln_handles *t);

/* n items with ids 0..n-1; handles in hs. */
static void fill(kiln_handles *t, kiln_handle *hs, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        entity *e;
        hs[i] = kiln_handle_alloc(ctx, t, (void **)&e);
        cr_assert(!kiln_handle_is_null(hs[i]) && e, "alloc %u:%s", i, recorded_summary(rec));
        e->id = i;
    }
}

/* ---- foreach ---- */

#define MAX_SEEN 4096

typedef struct seen {
    kiln_handles *table;
    size_t        count;
    kiln_handle   handles[MAX_SEEN];
    void         *items[MAX_SEEN];
} seen;

static void record_visit(void *user, kiln_handle h, void *item) {
    seen *s = user;
    if (s->count < MAX_SEEN) {
        s->handles[s->count] = h;
        s->items[s->count] = item;
    }
    s->count++;
}

Test(handle_walk, foreach_visits_exactly_the_live_items_in_slot_order) {
    kiln_handles *t = make_table(1024);
    static kiln_handle hs[1000];
    fill(t, hs, 1000);
    for (uint32_t i = 0; i < 1000; i += 3) cr_assert(kiln_handle_free(ctx, t, hs[i]));
    static seen s;
    memset(&s, 0, sizeof s);
    kiln_handles_foreach(t, record_visit, &s);
    cr_assert_eq(s.count, 1000 - 334, "visited %zu", s.count);
    size_t k = 0;
    for (uint32_t i = 0; i < 1000; i++) {
        if (i % 3 == 0) continue;
        cr_assert(kiln_handle_equal(s.handles[k], hs[i]), "visit %zu is not item %u's handle", k, i);
        cr_assert_eq(s.items[k], kiln_handle_get(t, hs[i]), "visit %zu's address is not get's", k);
        cr_assert_eq(((entity *)s.items[k])->id, i);
        k++;
    }
    for (size_t v = 1; v < s.count; v++)
        cr_assert_lt(kiln_handle_index(s.handles[v - 1]), kiln_handle_index(s.handles[v]), "slot order");
    destroy_table(t);
    assert_no_log();
}

Test(handle_walk, foreach_of_an_empty_or_emptied_table_visits_nothing) {
    kiln_handles *t = make_table(0);
    static seen s;
    memset(&s, 0, sizeof s);
    kiln_handles_foreach(t, record_visit, &s);
    cr_assert_eq(s.count, 0);
    kiln_handle hs[40];
    fill(t, hs, 40);
    for (int i = 0; i < 40; i++) kiln_handle_free(ctx, t, hs[i]);
    kiln_handles_foreach(t, record_visit, &s);
    cr_assert_eq(s.count, 0, "a freed item was visited");
    kiln_handles_destroy(t);
    assert_no_log();
}

/* The game loop's "despawn what died": the visit frees its own item with its context;
 * every item is still visited once, the pointer stays usable for the rest of the visit,
 * and nothing is live afterwards. */
typedef struct despawn {
    kiln_handles *table;
    size_t        visits;
    size_t        refused;
} despawn;

static void free_visited(void *user, kiln_handle h, void *item) {
    despawn *d = user;
    d->visits++;
    if (!kiln_handle_free(ctx, d->table, h)) d->refused++;
    ((entity *)item)->id = 0xdead;   /* still this thread's until the reuse rule allows */
}

/* Frees every live item (with the walk itself) and destroys the table. */
static void destroy_table(kiln_handles *t) {
    despawn d = { t, 0, 0 };
    kiln_handles_foreach(t, free_visited, &d);
    kiln_handles_destroy(t);
}

Test(handle_walk, a_visit_may_free_its_item) {
    kiln_handles *t = make_table(512);
    kiln_handle hs[500];
    fill(t, hs, 500);
    despawn d = { t, 0, 0 };
    kiln_handles_foreach(t, free_visited, &d);
    cr_assert_eq(d.visits, 500);
    cr_assert_eq(d.refused, 0);
    kiln_handles_stats st;
    cr_assert(kiln_handles_stats_get(t, &st));
    cr_assert_eq(st.live, 0);
    for (int i = 0; i < 500; i++) cr_assert_null(kiln_handle_get(t, hs[i]));
    kiln_handles_destroy(t);
    assert_no_log();
}

/* Allocations from inside a visit may or may not be visited (the contract), but the walk
 * ends, visits every item that was live before it, and the new items are live after. */
typedef struct spawner {
    kiln_handles *table;
    size_t        visits;
    size_t        spawned;
} spawner;

static void spawn_one_per_visit(void *user, kiln_handle h, void *item) {
    (void)h;
    spawner *s = user;
    s->visits++;
    if (((entity *)item)->id >= 1000) return;   /* a child: spawns nothing */
    entity *child;
    if (!kiln_handle_is_null(kiln_handle_alloc(ctx, s->table, (void **)&child))) {
        child->id = 1000 + ((entity *)item)->id;
        s->spawned++;
    }
}

Test(handle_walk, a_visit_may_allocate) {
    kiln_handles *t = make_table(1024);
    kiln_handle hs[300];
    fill(t, hs, 300);
    spawner s = { t, 0, 0 };
    kiln_handles_foreach(t, spawn_one_per_visit, &s);
    cr_assert_eq(s.spawned, 300);
    cr_assert_geq(s.visits, 300);
    cr_assert_leq(s.visits, 600);
    kiln_handles_stats st;
    cr_assert(kiln_handles_stats_get(t, &st));
    cr_assert_eq(st.live, 600);
    destroy_table(t);
    assert_no_log();
}

/* Pairs: a walk inside a walk sees the same items. */
typedef struct nested {
    kiln_handles *table;
    size_t        pairs;
} nested;

static void count_pair(void *user, kiln_handle h, void *item) {
    (void)h;
    (void)item;
    ((nested *)user)->pairs++;
}

static void walk_again(void *user, kiln_handle h, void *item) {
    (void)h;
    (void)item;
    nested *n = user;
    kiln_handles_foreach(n->table, count_pair, n);
}

Test(handle_walk, a_walk_inside_a_walk) {
    kiln_handles *t = make_table(64);
    kiln_handle hs[20];
    fill(t, hs, 20);
    nested n = { t, 0 };
    kiln_handles_foreach(t, walk_again, &n);
    cr_assert_eq(n.pairs, 400);
    destroy_table(t);
    assert_no_log();
}

/* A destroy from inside a visit would unmap the slots the walk reads next: refused,
 * logged, and the walk finishes; once it has, the destroy goes through. */
static void destroy_during_visit(void *user, kiln_handle h, void *item) {
    (void)h;
    (void)item;
    kiln_handles_destroy(user);
}

Test(handle_walk, destroy_during_a_walk_is_refused) {
    kiln_handles *t = make_table(64);
    kiln_handle hs[10];
    fill(t, hs, 10);
    kiln_handles_foreach(t, destroy_during_visit, t);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_WALK_ACTIVE, "'entities' is being walked"), 10,
                 "%s", recorded_summary(rec));
    cr_assert_not_null(kiln_handle_get(t, hs[9]), "the table was destroyed under the walk");
    size_t logged = recorded_count(rec);
    for (int i = 0; i < 10; i++) kiln_handle_free(ctx, t, hs[i]);
    kiln_handles_destroy(t);
    cr_assert_eq(recorded_count(rec), logged, "%s", recorded_summary(rec));
    kiln_handles_stats st;
    cr_assert(kiln_handles_stats_get(t, &st));
    cr_assert_eq(st.capacity, 64);
    kiln_handle_get(t, hs[0]);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_DESTROYED), 1, "destroyed after the walk");
}

static void must_not_run(void *user, kiln_handle h, void *item) {
    (void)h;
    (void)item;
    (*(int *)user)++;
}

Test(handle_walk, foreach_refuses_bad_arguments) {
    int visits = 0;
    kiln_handles_foreach(NULL, must_not_run, &visits);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_NULL, "kiln_handles_foreach"), 0,
                 "a NULL table has no runtime to log through: stderr");
    kiln_handles *t = make_table(16);
    kiln_handle hs[4];
    fill(t, hs, 4);
    kiln_handles_foreach(t, NULL, &visits);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_NULL_VISIT, "'entities': fn is NULL"), 1,
                 "%s", recorded_summary(rec));
    for (int i = 0; i < 4; i++) kiln_handle_free(ctx, t, hs[i]);
    kiln_handles_destroy(t);
    kiln_handles_foreach(t, must_not_run, &visits);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_DESTROYED, "kiln_handles_foreach"), 1,
                 "%s", recorded_summary(rec));
    cr_assert_eq(visits, 0);
    cr_assert_eq(recorded_count(rec), 2, "%s", recorded_summary(rec));
}

/* ---- parallel_for ---- */

static _Atomic size_t parallel_visits;

static void count_visit(void *user, kiln_handle h, void *item) {
    entity *e = item;
    atomic_fetch_add_explicit(&e->visits, 1, memory_order_relaxed);
    if (kiln_handle_get(user, h) != item) atomic_fetch_add_explicit(&e->visits, 1000, memory_order_relaxed);
    atomic_fetch_add_explicit(&parallel_visits, 1, memory_order_relaxed);
}

/* Every live item exactly once (a double visit or a wrong address shows in the item's
 * own count), whichever threads ran the ranges, at every grain. */
static void assert_each_visited_once(kiln_handles *t, kiln_handle *hs, uint32_t n, size_t grain) {
    for (uint32_t i = 0; i < n; i++) {
        entity *e = kiln_handle_get(t, hs[i]);
        if (e) atomic_store(&e->visits, 0);
    }
    atomic_store(&parallel_visits, 0);
    kiln_handles_parallel_for(ctx, t, grain, count_visit, t);
    size_t live = 0;
    for (uint32_t i = 0; i < n; i++) {
        entity *e = kiln_handle_get(t, hs[i]);
        if (!e) continue;
        live++;
        cr_assert_eq(atomic_load(&e->visits), 1, "item %u visited %d times (grain %zu)", i,
                     atomic_load(&e->visits), grain);
    }
    cr_assert_eq(atomic_load(&parallel_visits), live, "grain %zu", grain);
}

Test(handle_walk, parallel_for_visits_each_live_item_once) {
    kiln_handles *t = make_table(20000);
    static kiln_handle hs[20000];
    fill(t, hs, 20000);
    for (uint32_t i = 0; i < 20000; i += 7) kiln_handle_free(ctx, t, hs[i]);
    const size_t grains[] = { 0, 1, 64, 1000, 50000 };
    for (size_t g = 0; g < sizeof grains / sizeof grains[0]; g++)
        assert_each_visited_once(t, hs, 20000, grains[g]);
    for (uint32_t i = 0; i < 20000; i++)
        if (i % 7) kiln_handle_free(ctx, t, hs[i]);
    kiln_handles_destroy(t);
    assert_no_log();
}

/* A job walks the table over the workers with the context it was given. */
static void walk_in_job(kiln_ctx *job_ctx, void *arg) {
    kiln_handles_parallel_for(job_ctx, arg, 16, count_visit, arg);
}

Test(handle_walk, parallel_for_from_inside_a_job) {
    kiln_handles *t = make_table(4096);
    static kiln_handle hs[4000];
    fill(t, hs, 4000);
    atomic_store(&parallel_visits, 0);
    kiln_counter done = { 0 };
    kiln_job jobs[2] = { { walk_in_job, t }, { walk_in_job, t } };
    kiln_run(ctx, jobs, 2, &done);
    kiln_wait(ctx, &done);
    cr_assert_eq(atomic_load(&parallel_visits), 8000);
    for (uint32_t i = 0; i < 4000; i++) {
        entity *e = kiln_handle_get(t, hs[i]);
        cr_assert_eq(atomic_load(&e->visits), 2, "item %u: %d visits", i, atomic_load(&e->visits));
    }
    for (uint32_t i = 0; i < 4000; i++) kiln_handle_free(ctx, t, hs[i]);
    kiln_handles_destroy(t);
    assert_no_log();
}

/* A destroy from a visit on a worker is refused as on the walking thread. */
Test(handle_walk, destroy_during_a_parallel_walk_is_refused) {
    kiln_handles *t = make_table(256);
    kiln_handle hs[200];
    fill(t, hs, 200);
    kiln_handles_parallel_for(ctx, t, 8, destroy_during_visit, t);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_WALK_ACTIVE), 200, "%s", recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 200, "%s", recorded_summary(rec));
    for (int i = 0; i < 200; i++) cr_assert(kiln_handle_free(ctx, t, hs[i]));
    kiln_handles_destroy(t);
    cr_assert_eq(recorded_count(rec), 200, "%s", recorded_summary(rec));
}

Test(handle_walk, parallel_for_refuses_bad_arguments) {
    kiln_handles *t = make_table(64);
    kiln_handle hs[8];
    fill(t, hs, 8);
    atomic_store(&parallel_visits, 0);
    kiln_handles_parallel_for(NULL, t, 0, count_visit, t);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_CONTEXT_NULL, "kiln_handles_parallel_for"), 1,
                 "%s", recorded_summary(rec));
    kiln_handles_parallel_for(ctx, NULL, 0, count_visit, t);   /* ctx names the runtime */
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_NULL, "kiln_handles_parallel_for"), 1,
                 "%s", recorded_summary(rec));
    kiln_handles_parallel_for(ctx, t, 0, NULL, t);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_NULL_VISIT, "kiln_handles_parallel_for"), 1,
                 "%s", recorded_summary(rec));

    kiln_desc other_desc = recording_desc(rec);
    other_desc.worker_count = KILN_NO_WORKERS;
    kiln_runtime *other = kiln_create(&other_desc);
    kiln_ctx *other_ctx = kiln_attach(other);
    kiln_handles_parallel_for(other_ctx, t, 0, count_visit, t);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_WRONG_RUNTIME, "'entities'"), 1,
                 "%s", recorded_summary(rec));
    kiln_detach(other_ctx);
    kiln_handles_parallel_for(other_ctx, t, 0, count_visit, t);
    kiln_destroy(other);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_CONTEXT_DETACHED), 1, "%s", recorded_summary(rec));

    for (int i = 0; i < 8; i++) kiln_handle_free(ctx, t, hs[i]);
    kiln_handles_destroy(t);
    kiln_handles_parallel_for(ctx, t, 0, count_visit, t);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_DESTROYED, "kiln_handles_parallel_for"), 1,
                 "%s", recorded_summary(rec));
    cr_assert_eq(atomic_load(&parallel_visits), 0, "a refused walk visited");
    cr_assert_eq(recorded_count(rec), 6, "%s", recorded_summary(rec));
}

/* ---- the typed walks ---- */

struct unit {
    int hp;
};
KILN_HANDLE_TYPE(unit, struct unit)

static void heal(void *user, unit_handle h, struct unit *u) {
    (void)h;
    u->hp += *(int *)user;
}

static _Atomic int typed_hp_sum;

static void sum_hp(void *user, unit_handle h, struct unit *u) {
    unit_table *t = user;
    if (unit_get(*t, h) == u) atomic_fetch_add_explicit(&typed_hp_sum, u->hp, memory_order_relaxed);
}

Test(handle_walk, typed_walks_pass_typed_handles_and_items) {
    unit_table t = unit_table_create(rt, "units", 128);
    cr_assert_not_null(t.raw);
    unit_handle hs[100];
    for (int i = 0; i < 100; i++) {
        struct unit *u;
        hs[i] = unit_alloc(ctx, t, &u);
        u->hp = i;
    }
    int amount = 10;
    unit_foreach(t, heal, &amount);
    atomic_store(&typed_hp_sum, 0);
    unit_parallel_for(ctx, t, 4, sum_hp, &t);
    cr_assert_eq(atomic_load(&typed_hp_sum), 99 * 100 / 2 + 100 * 10);
    unit_foreach(t, NULL, NULL);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_NULL_VISIT), 1, "%s", recorded_summary(rec));
    for (int i = 0; i < 100; i++) unit_free(ctx, t, hs[i]);
    unit_table_destroy(t);
    cr_assert_eq(recorded_count(rec), 1, "%s", recorded_summary(rec));
}
