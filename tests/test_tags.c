/* tests/test_tags.c — tags (kiln/heap.h): made and found, a thread's current tag, what
 * tagged pools, arenas and handle tables charge (exactly what they hold from the block
 * pool), children rolled up into parents, WARN and REFUSE budgets with their messages,
 * and the figures after threads charged at once. */
#define _GNU_SOURCE   /* open_memstream */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recording_log.h"

static recording_log *rec;
static kiln_runtime  *rt;
static kiln_ctx      *ctx;
static size_t         block;   /* the block size */

static void setup(void) {
    rec = recording_log_new();
    kiln_desc d = recording_desc(rec);
    d.worker_count = KILN_NO_WORKERS;
    d.warn_percent = 80;
    rt = kiln_create(&d);
    cr_assert_not_null(rt);
    ctx = kiln_attach(rt);
    block = kiln_runtime_desc(rt).block_size;
}
static void teardown(void) { recording_fixture_end(&ctx, &rt, &rec); }
TestSuite(tags, .init = setup, .fini = teardown);

static kiln_tag make(const char *name, kiln_tag parent, size_t budget, kiln_budget_policy policy) {
    kiln_tag tag = kiln_tag_create(rt, &(kiln_tag_desc){ .name = name, .parent = parent,
                                                         .budget = budget, .policy = policy });
    cr_assert_neq(tag.id, 0u, "tag '%s'", name);
    return tag;
}

static kiln_tag_stats stats_of(kiln_tag tag) {
    kiln_tag_stats s;
    cr_assert(kiln_tag_stats_get(rt, tag, &s));
    return s;
}

static kiln_pool_stats pool_stats(kiln_pool *pool) {
    kiln_pool_stats s;
    cr_assert(kiln_pool_stats_get(pool, &s));
    return s;
}

Test(tags, made_found_and_listed_in_creation_order) {
    kiln_tag audio = make("Audio", (kiln_tag){ 0 }, 0, KILN_BUDGET_WARN);
    kiln_tag stream = make("Audio/Streaming", audio, 0, KILN_BUDGET_WARN);
    cr_expect_neq(audio.id, stream.id);
    cr_expect_eq(kiln_tag_find(rt, "Audio").id, audio.id);
    cr_expect_eq(kiln_tag_find(rt, "Audio/Streaming").id, stream.id);
    cr_expect_eq(kiln_tag_find(rt, "audio").id, 0u, "names compare whole, case and all");
    char longer[80];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    kiln_tag cut = make(longer, (kiln_tag){ 0 }, 0, KILN_BUDGET_WARN);
    cr_expect_eq(kiln_tag_find(rt, longer).id, cut.id, "found by the name it was made with");
    kiln_tag_stats list[2];
    cr_expect_eq(kiln_stats_tags(rt, list, 2), 3u, "the count, though cap is 2");
    cr_expect_str_eq(list[0].name, "Audio");
    cr_expect_str_eq(list[1].name, "Audio/Streaming");
    cr_expect_eq(list[1].parent, audio.id);
    cr_expect_eq(stats_of(cut).name[47], '\0');
    cr_expect_eq(strlen(stats_of(cut).name), 47u);
}

static void *current_elsewhere(void *arg) {
    kiln_ctx *mine = kiln_attach(rt);
    kiln_tag seen = kiln_tag_current(mine);
    kiln_detach(mine);
    *(kiln_tag *)arg = seen;
    return NULL;
}

Test(tags, push_and_pop_nest_per_thread) {
    kiln_tag a = make("a", (kiln_tag){ 0 }, 0, KILN_BUDGET_WARN);
    kiln_tag b = make("b", (kiln_tag){ 0 }, 0, KILN_BUDGET_WARN);
    cr_expect_eq(kiln_tag_current(ctx).id, 0u);
    kiln_tag outer = kiln_tag_push(ctx, a);
    kiln_tag inner = kiln_tag_push(ctx, b);
    cr_expect_eq(outer.id, 0u);
    cr_expect_eq(inner.id, a.id);
    cr_expect_eq(kiln_tag_current(ctx).id, b.id);
    pthread_t t;
    kiln_tag seen = { 99 };
    pthread_create(&t, NULL, current_elsewhere, &seen);
    pthread_join(t, NULL);
    cr_expect_eq(seen.id, 0u, "another thread's current tag is its own");
    kiln_tag_pop(ctx, inner);
    cr_expect_eq(kiln_tag_current(ctx).id, a.id);
    kiln_tag_pop(ctx, outer);
    cr_expect_eq(kiln_tag_current(ctx).id, 0u);
    cr_expect_eq(recorded_count(rec), 0u);
}

Test(tags, a_pool_charges_its_blocks_and_the_parent_rolls_them_up) {
    kiln_tag game = make("Game", (kiln_tag){ 0 }, 0, KILN_BUDGET_WARN);
    kiln_tag fx = make("Game/FX", game, 0, KILN_BUDGET_WARN);
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "sparks", .size = 64, .tag = fx });
    cr_assert_not_null(pool);
    void *objects[3000];
    for (int i = 0; i < 3000; i++) cr_assert_not_null(objects[i] = kiln_pool_alloc(ctx, pool));
    uint64_t held = (uint64_t)pool_stats(pool).blocks_held * block;
    cr_expect_gt(held, 2 * block, "3000 objects of 64 bytes take several blocks");
    cr_expect_eq(stats_of(fx).live_bytes, held);
    cr_expect_eq(stats_of(fx).own_bytes, held);
    cr_expect_eq(stats_of(game).live_bytes, held, "the child's bytes count toward the parent");
    cr_expect_eq(stats_of(game).own_bytes, 0u);
    cr_expect_eq(stats_of(fx).allocs, (uint64_t)pool_stats(pool).blocks_held);
    for (int i = 0; i < 3000; i++) kiln_pool_free(ctx, pool, objects[i]);
    kiln_pool_destroy(pool);
    cr_expect_eq(stats_of(fx).live_bytes, 0u);
    cr_expect_eq(stats_of(game).live_bytes, 0u);
    cr_expect_eq(stats_of(game).peak_bytes, held);
    cr_expect_eq(stats_of(fx).frees, stats_of(fx).allocs);
}

Test(tags, an_arena_moves_what_it_holds_between_tags) {
    kiln_tag level = make("Level", (kiln_tag){ 0 }, 0, KILN_BUDGET_WARN);
    kiln_tag other = make("Other", (kiln_tag){ 0 }, 0, KILN_BUDGET_WARN);
    kiln_arena *arena = kiln_arena_create(rt, "geometry");
    kiln_arena_set_tag(arena, level);
    cr_expect_eq(kiln_arena_tag(arena).id, level.id);
    cr_expect_eq(stats_of(level).live_bytes, block, "its first block, held since create");
    for (int i = 0; i < 10; i++) cr_assert_not_null(kiln_arena_alloc(arena, block / 3, 16));
    void *large = kiln_arena_alloc(arena, 5 * block, 16);   /* a mapping of its own */
    cr_assert_not_null(large);
    kiln_arena_stats as;
    kiln_arena_stats_get(arena, &as);
    uint64_t live = stats_of(level).live_bytes;
    cr_expect_geq(live, (uint64_t)as.blocks_held * block + 5 * block);
    cr_expect_lt(live, (uint64_t)as.blocks_held * block + 6 * block, "the mapping's own size");
    kiln_arena_set_tag(arena, other);
    cr_expect_eq(stats_of(level).live_bytes, 0u);
    cr_expect_eq(stats_of(other).live_bytes, live);
    kiln_arena_set_tag(arena, (kiln_tag){ 0 });
    cr_expect_eq(stats_of(other).live_bytes, 0u);
    kiln_arena_set_tag(arena, level);
    kiln_arena_destroy(arena);
    cr_expect_eq(stats_of(level).live_bytes, 0u, "everything given back at destroy");
    cr_expect_eq(recorded_count(rec), 0u);
}

Test(tags, a_handle_table_charges_its_slots_while_it_lives) {
    kiln_tag ents = make("Entities", (kiln_tag){ 0 }, 0, KILN_BUDGET_WARN);
    kiln_handles *table = kiln_handles_create(rt, &(kiln_handles_desc){ .item_size = 64, .capacity = 1000,
                                                                        .tag = ents });
    cr_assert_not_null(table);
    cr_expect_geq(stats_of(ents).live_bytes, 64u * 1000, "the slots' mapping");
    kiln_handles_destroy(table);
    cr_expect_eq(stats_of(ents).live_bytes, 0u);
}

Test(tags, a_refuse_budget_is_never_passed_and_refusals_are_logged_once_a_frame) {
    kiln_tag tight = make("Tight", (kiln_tag){ 0 }, 2 * block, KILN_BUDGET_REFUSE);
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "p", .size = 256, .tag = tight });
    kiln_frame_begin(ctx);
    size_t got = 0;
    while (kiln_pool_alloc(ctx, pool) && got < 100000) {
        got++;
        cr_assert_leq(stats_of(tight).live_bytes, 2 * block);
    }
    cr_expect_gt(got, 0u);
    cr_expect_lt(got, 100000u, "the budget stops it");
    for (int i = 0; i < 5; i++) cr_expect_null(kiln_pool_alloc(ctx, pool));
    cr_expect_leq(stats_of(tight).live_bytes, 2 * block);
    cr_expect_geq(stats_of(tight).refusals, 2u);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_TAG_BUDGET_REFUSED), 1u, "once this frame");
    cr_expect_geq(pool_stats(pool).failures, 5u);
    kiln_frame_end(ctx);
    kiln_frame_begin(ctx);
    cr_expect_null(kiln_pool_alloc(ctx, pool));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_TAG_BUDGET_REFUSED), 2u, "and once the next");
    kiln_frame_end(ctx);
    kiln_pool_destroy(pool);
}

Test(tags, a_parents_refuse_budget_stops_a_child_and_rolls_the_child_back) {
    kiln_tag parent = make("Parent", (kiln_tag){ 0 }, block, KILN_BUDGET_REFUSE);
    kiln_tag child = make("Child", parent, 0, KILN_BUDGET_WARN);
    kiln_arena *arena = kiln_arena_create(rt, "a");
    kiln_arena_set_tag(arena, child);   /* its first block: the whole budget */
    cr_expect_eq(stats_of(parent).live_bytes, block);
    cr_expect_not_null(kiln_arena_alloc(arena, block / 2, 16), "in the first block");
    cr_expect_null(kiln_arena_alloc(arena, block / 2, 16), "a second block would pass the parent's budget");
    cr_expect_null(kiln_arena_alloc(arena, 3 * block, 16), "and so would a mapping");
    cr_expect_eq(stats_of(child).live_bytes, block, "nothing stays charged to the child");
    cr_expect_eq(stats_of(parent).refusals, 2u);
    cr_expect_eq(stats_of(child).refusals, 0u);
    kiln_arena_destroy(arena);
    cr_expect_eq(stats_of(parent).live_bytes, 0u);
}

Test(tags, a_move_a_refuse_budget_cannot_take_is_refused) {
    kiln_tag small = make("Small", (kiln_tag){ 0 }, block / 2, KILN_BUDGET_REFUSE);
    kiln_arena *arena = kiln_arena_create(rt, "a");
    kiln_arena_set_tag(arena, small);
    cr_expect_eq(kiln_arena_tag(arena).id, 0u, "its first block does not fit: it keeps no tag");
    cr_expect_eq(stats_of(small).live_bytes, 0u);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_TAG_BUDGET_REFUSED), 1u);
    kiln_arena_destroy(arena);
}

Test(tags, a_warn_budget_warns_near_and_over_once_an_episode) {
    kiln_tag soft = make("Soft", (kiln_tag){ 0 }, 2 * block, KILN_BUDGET_WARN);
    kiln_arena *arena = kiln_arena_create(rt, "a");
    kiln_arena_set_tag(arena, soft);
    for (int i = 0; i < 8; i++) cr_assert_not_null(kiln_arena_alloc(arena, block / 2, 16));
    cr_expect_gt(stats_of(soft).live_bytes, 2 * block, "WARN lets it pass");
    cr_expect_eq(count_items(rec, KILN_LOGITEM_TAG_BUDGET_NEAR), 1u);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_TAG_BUDGET_EXCEEDED), 1u);
    cr_expect_eq(stats_of(soft).budget_warnings, 1u);
    kiln_arena_set_tag(arena, (kiln_tag){ 0 });   /* all of it released: the episodes end */
    kiln_arena_set_tag(arena, soft);              /* and a new one starts */
    cr_expect_eq(count_items(rec, KILN_LOGITEM_TAG_BUDGET_EXCEEDED), 2u);
    cr_expect_eq(stats_of(soft).budget_warnings, 2u);
    kiln_arena_destroy(arena);
}

Test(tags, a_handle_table_a_refuse_budget_cannot_take_is_not_made) {
    kiln_tag small = make("Small", (kiln_tag){ 0 }, 4096, KILN_BUDGET_REFUSE);
    cr_expect_null(kiln_handles_create(rt, &(kiln_handles_desc){ .item_size = 64, .capacity = 1000,
                                                                 .tag = small }));
    cr_expect_eq(stats_of(small).live_bytes, 0u);
    cr_expect_eq(stats_of(small).refusals, 1u);
}

/* ---- several threads at once ---- */

typedef struct churn_arg {
    kiln_pool *pool;
    int        rounds;
} churn_arg;

static void *churn(void *arg) {
    churn_arg *c = arg;
    kiln_ctx *mine = kiln_attach(rt);
    void *held[500];
    for (int r = 0; r < c->rounds; r++) {
        int n = 0;
        while (n < 500 && (held[n] = kiln_pool_alloc(mine, c->pool)) != NULL) n++;
        while (n > 0) kiln_pool_free(mine, c->pool, held[--n]);
    }
    kiln_detach(mine);
    return NULL;
}

Test(tags, threads_charging_at_once_leave_exact_figures_under_the_budget) {
    kiln_tag shared = make("Shared", (kiln_tag){ 0 }, 6 * block, KILN_BUDGET_REFUSE);
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "p", .size = 512, .tag = shared });
    churn_arg arg = { pool, 50 };
    pthread_t threads[3];
    for (int i = 0; i < 3; i++) pthread_create(&threads[i], NULL, churn, &arg);
    for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
    kiln_tag_stats s = stats_of(shared);
    cr_expect_eq(s.live_bytes, (uint64_t)pool_stats(pool).blocks_held * block, "exact when quiet");
    cr_expect_leq(s.peak_bytes, 6 * block, "never past the budget");
    cr_expect_eq(s.allocs - s.frees, (uint64_t)pool_stats(pool).blocks_held);
    kiln_pool_destroy(pool);
    cr_expect_eq(stats_of(shared).live_bytes, 0u);
}

/* ---- what the hostile review of tags found ---- */

Test(tags, mappings_are_charged_what_they_reserve_whole_pages) {
    kiln_tag t = make("T", (kiln_tag){ 0 }, 0, KILN_BUDGET_WARN);
    kiln_handles *table = kiln_handles_create(rt, &(kiln_handles_desc){ .item_size = 1, .capacity = 1,
                                                                        .tag = t });
    cr_assert_not_null(table);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    cr_expect_eq(stats_of(t).live_bytes % page, 0u, "whole pages: %llu", (unsigned long long)stats_of(t).live_bytes);
    cr_expect_gt(stats_of(t).live_bytes, 0u);
    kiln_handles_destroy(table);
    kiln_tag tiny = make("Tiny", (kiln_tag){ 0 }, 100, KILN_BUDGET_REFUSE);
    cr_expect_null(kiln_handles_create(rt, &(kiln_handles_desc){ .item_size = 1, .capacity = 1, .tag = tiny }),
                   "a page passes a budget of 100 bytes");
    kiln_arena *arena = kiln_arena_create(rt, "a");
    kiln_arena_set_tag(arena, t);
    kiln_stats before, after;
    kiln_stats_get(rt, &before);
    cr_assert_not_null(kiln_arena_alloc(arena, block + 1, 16));   /* a mapping of its own */
    kiln_stats_get(rt, &after);
    cr_expect_eq(stats_of(t).live_bytes - block, after.blocks.reserved_bytes - before.blocks.reserved_bytes,
                 "the tag is charged what the block pool reserved for it");
    kiln_arena_destroy(arena);
    cr_expect_eq(stats_of(t).live_bytes, 0u);
}

Test(tags, a_move_inside_a_refuse_subtree_changes_nothing_at_the_top) {
    kiln_tag top = make("Top", (kiln_tag){ 0 }, 3 * block, KILN_BUDGET_REFUSE);
    kiln_tag a = make("A", top, 0, KILN_BUDGET_WARN);
    kiln_tag b = make("B", top, 0, KILN_BUDGET_WARN);
    kiln_arena *arena = kiln_arena_create(rt, "a");
    kiln_arena_set_tag(arena, a);
    while (stats_of(top).live_bytes < 3 * block) cr_assert_not_null(kiln_arena_alloc(arena, block / 2, 16));
    kiln_arena_set_tag(arena, b);
    cr_expect_eq(kiln_arena_tag(arena).id, b.id, "to a sibling");
    kiln_arena_set_tag(arena, top);
    cr_expect_eq(kiln_arena_tag(arena).id, top.id, "to the parent");
    cr_expect_eq(stats_of(top).live_bytes, 3 * block);
    cr_expect_eq(stats_of(a).live_bytes + stats_of(b).live_bytes, 0u);
    cr_expect_eq(stats_of(top).refusals, 0u);
    kiln_arena_destroy(arena);
    kiln_tag_stats s[3];
    cr_assert_eq(kiln_stats_tags(rt, s, 3), 3u);
    for (int i = 0; i < 3; i++)
        cr_expect_eq(s[i].allocs, s[i].frees, "tag %s: %llu charges, %llu given back", s[i].name,
                     (unsigned long long)s[i].allocs, (unsigned long long)s[i].frees);
}

static void *push_and_detach(void *arg) {
    kiln_ctx *mine = kiln_attach(rt);
    kiln_tag_push(mine, *(kiln_tag *)arg);
    kiln_detach(mine);
    return NULL;
}

Test(tags, a_reattached_context_starts_untagged) {
    kiln_tag t = make("T", (kiln_tag){ 0 }, 0, KILN_BUDGET_WARN);
    pthread_t first, second;
    pthread_create(&first, NULL, push_and_detach, &t);
    pthread_join(first, NULL);
    kiln_tag seen = { 99 };
    pthread_create(&second, NULL, current_elsewhere, &seen);   /* reuses the context */
    pthread_join(second, NULL);
    cr_expect_eq(seen.id, 0u);
}

Test(tags, a_charge_a_parent_refuses_leaves_no_warning_below) {
    kiln_tag top = make("Top", (kiln_tag){ 0 }, 4 * block, KILN_BUDGET_REFUSE);
    kiln_tag soft = make("Soft", top, 2 * block, KILN_BUDGET_WARN);
    kiln_arena *arena = kiln_arena_create(rt, "a");
    kiln_arena_set_tag(arena, soft);
    cr_expect_null(kiln_arena_alloc(arena, 8 * block, 16), "past the top's budget");
    cr_expect_eq(count_items(rec, KILN_LOGITEM_TAG_BUDGET_EXCEEDED), 0u);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_TAG_BUDGET_NEAR), 0u);
    cr_expect_eq(stats_of(soft).budget_warnings, 0u);
    cr_expect_eq(stats_of(soft).live_bytes, block);
    while (stats_of(soft).live_bytes < 3 * block) cr_assert_not_null(kiln_arena_alloc(arena, block / 2, 16));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_TAG_BUDGET_EXCEEDED), 1u, "a real pass is told");
    kiln_arena_destroy(arena);
}

Test(tags, a_refused_alloc_leaves_nothing_charged) {
    kiln_tag one = make("One byte", (kiln_tag){ 0 }, 1, KILN_BUDGET_REFUSE);
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "p", .size = 64, .tag = one });
    cr_expect_null(kiln_pool_alloc(ctx, pool));
    cr_expect_eq(stats_of(one).live_bytes, 0u, "no magazine block kept for an alloc refused");
    kiln_pool_destroy(pool);
}

Test(tags, odd_names_in_the_table_and_the_json) {
    make("line\nbreak\xff", (kiln_tag){ 0 }, 0, KILN_BUDGET_WARN);
    char *text = NULL, *json = NULL;
    size_t size;
    FILE *out = open_memstream(&text, &size);
    kiln_stats_print(rt, out);
    fclose(out);
    out = open_memstream(&json, &size);
    kiln_stats_write_json(rt, out);
    fclose(out);
    cr_expect(strstr(text, "line?break") != NULL, "%s", text);
    cr_expect(strstr(json, "line\\u000abreak\\ufffd") != NULL, "%s", json);
    free(text);
    free(json);
    cr_expect_eq(kiln_tag_find(rt, "").id, 0u);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_TAG_NAME_NULL), 1u);
}

Test(tags, the_history_lists_the_tags_with_the_most_live_bytes) {
    kiln_tag small = make("Small", (kiln_tag){ 0 }, 0, KILN_BUDGET_WARN);
    kiln_tag none = make("None", (kiln_tag){ 0 }, 0, KILN_BUDGET_WARN);
    kiln_tag big = make("Big", (kiln_tag){ 0 }, 0, KILN_BUDGET_WARN);
    kiln_arena *a = kiln_arena_create(rt, "a"), *b = kiln_arena_create(rt, "b");
    kiln_arena_set_tag(a, small);
    kiln_arena_set_tag(b, big);
    for (int i = 0; i < 6; i++) cr_assert_not_null(kiln_arena_alloc(b, block / 2, 16));
    kiln_tag extra[5];
    kiln_arena *more[5];
    for (int i = 0; i < 5; i++) {   /* one block each: ties, listed oldest first */
        char name[8] = { 'x', (char)('0' + i), 0 };
        extra[i] = make(name, (kiln_tag){ 0 }, 0, KILN_BUDGET_WARN);
        more[i] = kiln_arena_create(rt, name);
        kiln_arena_set_tag(more[i], extra[i]);
    }
    kiln_frame_begin(ctx);
    kiln_frame_end(ctx);
    kiln_frame_record r;
    cr_assert_eq(kiln_history_read(rt, &r, 1), 1u);
    cr_expect_eq(r.tags, KILN_HISTORY_TOP_TAGS);
    cr_expect_eq(r.tags_omitted, 7u - KILN_HISTORY_TOP_TAGS, "7 tags hold bytes, 'None' none");
    cr_expect_eq(r.tag_ids[0], big.id);
    cr_expect_eq(r.tag_live_bytes[0], stats_of(big).live_bytes);
    cr_expect_eq(r.tag_ids[1], small.id, "ties: the oldest first");
    cr_expect_eq(r.tag_ids[2], extra[0].id);
    cr_expect_eq(r.tag_ids[3], extra[1].id);
    for (uint32_t i = 0; i < r.tags; i++) cr_expect_neq(r.tag_ids[i], none.id);
    for (int i = 0; i < 5; i++) kiln_arena_destroy(more[i]);
    kiln_arena_destroy(a);
    kiln_arena_destroy(b);
}

/* KILN_DEBUG_OWNERSHIP: a move of an arena to a tag from a thread that does not own it is
 * counted and logged like its other owner-only calls (the move still happens). */
static kiln_arena *shared_arena;
static kiln_tag    shared_tag;
static void *retag_elsewhere(void *arg) {
    (void)arg;
    kiln_arena_set_tag(shared_arena, shared_tag);
    return NULL;
}

Test(tags, arena_set_tag_from_another_thread_is_counted_under_ownership) {
    kiln_desc d = recording_desc(rec);
    d.worker_count = KILN_NO_WORKERS;
    d.debug = KILN_DEBUG_OWNERSHIP;
    kiln_runtime *owned = kiln_create(&d);
    shared_arena = kiln_arena_create(owned, "owned");
    shared_tag = kiln_tag_create(owned, &(kiln_tag_desc){ .name = "Level" });
    pthread_t t;
    pthread_create(&t, NULL, retag_elsewhere, NULL);
    pthread_join(t, NULL);
    kiln_arena_stats s;
    cr_assert(kiln_arena_stats_get(shared_arena, &s));
    cr_expect_eq(s.wrong_thread, 1u);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_ARENA_WRONG_THREAD), 1u, "%s", recorded_summary(rec));
    cr_expect_eq(kiln_arena_tag(shared_arena).id, shared_tag.id, "the move happened");
    kiln_arena_set_tag(shared_arena, (kiln_tag){ 0 });   /* the owner: not counted */
    cr_assert(kiln_arena_stats_get(shared_arena, &s));
    cr_expect_eq(s.wrong_thread, 1u);
    kiln_arena_destroy(shared_arena);
    kiln_destroy(owned);
}
