/* tests/test_arena_plan.c — memory an engine can plan: kiln_arena_reserve and
 * desc.frame_reserve, the keep policy's bound after a spike, kiln_trim_step, the
 * near-limit warnings (FRAME_BUDGET_NEAR, MEMORY_LIMIT_NEAR), KILN_BUDGET_REFUSE and
 * desc.frame_fallback, with their refusals. */
#define _DEFAULT_SOURCE   /* sysconf */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "alloc/os.h"
#include "recording_log.h"

#define BS ((size_t)64 << 10)   /* the default block size */

static recording_log *rec;

static void setup(void) { rec = recording_log_new(); }
static void teardown(void) {
    kiln_os_fail_nth_map(0);   /* never leave an injection armed */
    recording_log_free(rec);
    rec = NULL;
}
TestSuite(arena_plan, .init = setup, .fini = teardown);

static kiln_arena_stats arena_stats(const kiln_arena *arena) {
    kiln_arena_stats s;
    cr_assert(kiln_arena_stats_get(arena, &s), "kiln_arena_stats_get failed");
    return s;
}

static kiln_stats runtime_stats(kiln_runtime *r) {
    kiln_stats s;
    cr_assert(kiln_stats_get(r, &s), "kiln_stats_get failed");
    return s;
}

/* A runtime without workers (frame tests stay on this thread), changed by the caller. */
static kiln_desc plan_desc(void) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = KILN_NO_WORKERS;
    return desc;
}

static kiln_runtime *create(const kiln_desc *desc) {
    kiln_runtime *rt = kiln_create(desc);
    cr_assert_not_null(rt, "kiln_create failed:%s", recorded_summary(rec));
    return rt;
}

/* Block space per block: the block less its header (two words). */
#define SPACE (BS - 2 * sizeof(void *))

/* ---- kiln_arena_reserve ---------------------------------------------------------- */

Test(arena_plan, reserve_takes_touched_blocks_the_frame_then_uses) {
    kiln_desc desc = plan_desc();
    kiln_runtime *rt = create(&desc);
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert(kiln_arena_reserve(a, 10 * BS), "log:%s", recorded_summary(rec));
    kiln_arena_stats s = arena_stats(a);
    cr_assert_eq(s.reserved_blocks, 11, "10 blocks' bytes need 11 blocks of block space");
    cr_assert_geq(s.blocks_held, 11);
    uint64_t taken = s.blocks_taken;

    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t used = 0;
    while (used + 1000 <= 10 * BS - BS / 8) {   /* less than reserved: a block's tail is lost */
        unsigned char *p = kiln_arena_alloc(a, 1000, 8);
        cr_assert_not_null(p);
        void *block = (void *)((uintptr_t)p & ~(uintptr_t)(BS - 1));
        if ((uintptr_t)p - (uintptr_t)block < 64)   /* the first allocation of a block */
            cr_assert_eq(resident_pages(block, BS), BS / page,
                         "a reserved block's pages are resident before use");
        memset(p, 0x5A, 1000);
        used += 1000;
    }
    cr_assert_eq(arena_stats(a).blocks_taken, taken, "the reserve served the frame: no block taken");
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
    kiln_arena_destroy(a);
    kiln_destroy(rt);
}

/* The debug bits that keep a record of every allocation (FILL, POISON, SITES) cost no
 * block the reserve did not take: 400 KiB reserved serves 400 allocations of 1 KiB, in a
 * user arena and in the first frame of a frame_reserve arena. */
static const uint32_t record_bits[] = { KILN_DEBUG_FILL, KILN_DEBUG_POISON, KILN_DEBUG_SITES };

Test(arena_plan, reserve_holds_under_record_debug_bits) {
    for (size_t b = 0; b < sizeof record_bits / sizeof record_bits[0]; b++) {
        kiln_desc desc = plan_desc();
        desc.debug = record_bits[b];
        kiln_runtime *rt = create(&desc);
        kiln_arena *a = kiln_arena_create(rt, "level");
        cr_assert(kiln_arena_reserve(a, 400 << 10), "log:%s", recorded_summary(rec));
        uint64_t taken = arena_stats(a).blocks_taken;
        for (int i = 0; i < 400; i++) cr_assert_not_null(kiln_arena_alloc(a, 1024, 8));
        cr_assert_eq(arena_stats(a).blocks_taken, taken, "debug bits 0x%x: a block past the reserve",
                     (unsigned)record_bits[b]);
        kiln_arena_destroy(a);
        kiln_destroy(rt);
    }
}

Test(arena_plan, frame_reserve_holds_under_record_debug_bits) {
    for (size_t b = 0; b < sizeof record_bits / sizeof record_bits[0]; b++) {
        kiln_desc desc = plan_desc();
        desc.debug = record_bits[b];
        desc.frame_reserve = 400 << 10;
        kiln_runtime *rt = create(&desc);
        kiln_ctx *ctx = kiln_attach(rt);
        cr_assert_not_null(ctx);
        uint64_t taken = arena_stats(kiln_frame_arena(ctx)).blocks_taken;
        kiln_frame_begin(ctx);
        for (int i = 0; i < 400; i++) cr_assert_not_null(kiln_frame_alloc(ctx, 1024, 8));
        kiln_frame_end(ctx);
        cr_assert_eq(arena_stats(kiln_frame_arena(ctx)).blocks_taken, taken,
                     "debug bits 0x%x: the first frame took a block past the reserve",
                     (unsigned)record_bits[b]);
        kiln_detach(ctx);
        kiln_destroy(rt);
    }
}

Test(arena_plan, reserve_is_kept_across_resets) {
    kiln_desc desc = plan_desc();
    kiln_runtime *rt = create(&desc);
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert(kiln_arena_reserve(a, 4 * SPACE));
    cr_assert_eq(arena_stats(a).reserved_blocks, 4);
    cr_assert(kiln_arena_reserve(a, SPACE), "a smaller reserve lowers nothing");
    uint64_t taken = arena_stats(a).blocks_taken;
    for (int frame = 0; frame < 20; frame++) {
        cr_assert_not_null(kiln_arena_alloc(a, 100, 8));   /* small frames: the keep decays */
        kiln_arena_reset(a);
        cr_assert_geq(arena_stats(a).blocks_held, 4, "frame %d", frame);
    }
    for (size_t i = 0; i < 4 * (SPACE / 1024); i++) cr_assert_not_null(kiln_arena_alloc(a, 1024, 8));
    kiln_arena_stats s = arena_stats(a);
    cr_assert_eq(s.blocks_taken, taken, "after twenty small frames the reserve still serves");
    cr_assert_eq(s.reserved_blocks, 4);
    kiln_arena_destroy(a);
    kiln_destroy(rt);
}

Test(arena_plan, frame_reserve_for_every_context) {
    kiln_desc desc = plan_desc();
    desc.worker_count = 1;
    desc.frame_reserve = 4 * SPACE;
    kiln_runtime *rt = create(&desc);
    kiln_ctx *ctx = kiln_attach(rt);
    cr_assert_not_null(ctx);
    kiln_arena_stats s = arena_stats(kiln_frame_arena(ctx));
    cr_assert_eq(s.reserved_blocks, 4);
    cr_assert_geq(s.blocks_held, 4);
    cr_assert_geq(runtime_stats(rt).blocks.blocks_in_use, 8, "the worker's frame arena reserved too");
    for (int i = 0; i < 10; i++) {
        kiln_frame_begin(ctx);
        cr_assert_not_null(kiln_frame_alloc(ctx, 64, 8));
        kiln_frame_end(ctx);
    }
    s = arena_stats(kiln_frame_arena(ctx));
    cr_assert_geq(s.blocks_held, 4, "never decays below the reserve");
    uint64_t taken = s.blocks_taken;
    kiln_frame_begin(ctx);
    for (size_t i = 0; i < 4 * (SPACE / 4096); i++) cr_assert_not_null(kiln_frame_alloc(ctx, 4096, 8));
    kiln_frame_end(ctx);
    cr_assert_eq(arena_stats(kiln_frame_arena(ctx)).blocks_taken, taken);
    kiln_detach(ctx);
    kiln_destroy(rt);
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

Test(arena_plan, reserve_at_memory_limit_is_refused_and_logged) {
    kiln_desc desc = plan_desc();
    desc.memory_limit = 8 * BS;
    kiln_runtime *rt = create(&desc);
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert(!kiln_arena_reserve(a, 20 * BS));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_ARENA_RESERVE_FAILED, KILN_LOG_ERROR), 1,
                 "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_RESERVE_FAILED, "arena 'level'"), 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_REACHED), 1);
    kiln_arena_stats s = arena_stats(a);
    cr_assert_eq(s.reserved_blocks, 0, "a failed reserve raises no floor");
    cr_assert_eq(s.blocks_held, 8, "it keeps what it took");
    cr_assert_eq(runtime_stats(rt).api_errors, 0, "a refusal by the pool is no misuse");
    kiln_arena_reset(a);
    cr_assert_eq(arena_stats(a).blocks_held, 1, "and resets give it back");
    cr_assert_not_null(kiln_arena_alloc(a, 1000, 8), "the arena stays usable");
    kiln_arena_destroy(a);
    kiln_destroy(rt);
}

Test(arena_plan, reserve_when_the_os_refuses) {
    kiln_desc desc = plan_desc();
    desc.reserve_size = BS;   /* every new block is a mapping */
    kiln_runtime *rt = create(&desc);
    kiln_arena *a = kiln_arena_create(rt, "level");
    kiln_os_fail_nth_map(2);   /* the second block of the reserve */
    cr_assert(!kiln_arena_reserve(a, 3 * SPACE));
    cr_assert_eq(kiln_os_injected_failures() > 0, true);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_OS_MAP_FAILED), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_RESERVE_FAILED), 1);
    cr_assert(kiln_arena_reserve(a, 3 * SPACE), "the OS gives again: the reserve succeeds");
    cr_assert_eq(arena_stats(a).reserved_blocks, 3);
    kiln_arena_destroy(a);
    kiln_destroy(rt);
}

/* A frame_reserve that memory_limit cannot hold for every context is refused at create;
 * one that fits, but no longer does once other memory is taken, refuses the context. */
Test(arena_plan, frame_reserve_the_pool_refuses_makes_no_context) {
    kiln_desc desc = plan_desc();
    desc.memory_limit = 8 * BS;
    desc.frame_reserve = 8 * BS;   /* 9 blocks of block space for a context: never satisfied */
    cr_assert_null(kiln_create(&desc));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_FRAME_RESERVE_INVALID, "more than memory_limit"), 1,
                 "log:%s", recorded_summary(rec));
    desc.frame_reserve = 3 * BS;
    kiln_runtime *rt = create(&desc);
    kiln_ctx *first = kiln_attach(rt);
    cr_assert_not_null(first, "log:%s", recorded_summary(rec));
    kiln_arena *level = kiln_arena_create(rt, "level");
    cr_assert(kiln_arena_reserve(level, 2 * BS), "log:%s", recorded_summary(rec));   /* 3 blocks: 7 of 8 in use */
    uint64_t in_use = runtime_stats(rt).blocks.blocks_in_use;
    cr_assert_null(kiln_attach(rt), "no room is left for a second context's reserve");
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_RESERVE_FAILED), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_CONTEXT_OUT_OF_MEMORY, "the context is not made"), 1,
                 "log:%s", recorded_summary(rec));
    kiln_stats s = runtime_stats(rt);
    cr_assert_eq(s.contexts, 1);
    cr_assert_eq(s.blocks.blocks_in_use, in_use, "the refused context's blocks went back");
    kiln_arena_destroy(level);
    kiln_detach(first);
    kiln_destroy(rt);
}

Test(arena_plan, reserve_bad_input_is_refused) {
    kiln_desc desc = plan_desc();
    kiln_runtime *rt = create(&desc);
    kiln_arena *a = kiln_arena_create(rt, "level");
    kiln_arena *dead = kiln_arena_create(rt, "dead");
    kiln_arena_destroy(dead);
    cr_assert(!kiln_arena_reserve(a, SIZE_MAX));
    cr_assert(!kiln_arena_reserve(a, ((size_t)1 << 47) + 1));
    cr_assert(!kiln_arena_reserve(dead, 4096));
    stderr_capture cap;
    stderr_capture_begin(&cap);
    cr_assert(!kiln_arena_reserve(NULL, 4096));
    char *text = stderr_capture_end(&cap);
    cr_assert_eq(count_substrings(text, "ARENA_NULL"), 1, "%s", text);
    free(text);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_RESERVE_TOO_LARGE, "arena 'level'"), 2);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_DESTROYED, "arena 'dead'"), 1);
    cr_assert_eq(runtime_stats(rt).api_errors, 3);
    cr_assert_eq(arena_stats(a).reserved_blocks, 0);
    cr_assert(kiln_arena_reserve(a, 0), "0 bytes: nothing to take");
    kiln_arena_destroy(a);
    kiln_destroy(rt);
}

static void *reserve_elsewhere(void *arena) {
    return kiln_arena_reserve(arena, 2 * SPACE) ? arena : NULL;
}

Test(arena_plan, reserve_from_a_thread_not_owning_the_arena_is_reported) {
    kiln_desc desc = plan_desc();
    desc.debug = KILN_DEBUG_OWNERSHIP;
    kiln_runtime *rt = create(&desc);
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert_not_null(kiln_arena_alloc(a, 64, 8));   /* this thread owns it */
    pthread_t other;
    void *result = NULL;
    cr_assert_eq(pthread_create(&other, NULL, reserve_elsewhere, a), 0);
    pthread_join(other, &result);
    cr_assert_eq(result, a, "the call proceeds");
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_WRONG_THREAD, "kiln_arena_reserve"), 1,
                 "log:%s", recorded_summary(rec));
    cr_assert_eq(arena_stats(a).wrong_thread, 1);
    cr_assert_eq(arena_stats(a).reserved_blocks, 2);
    kiln_arena_destroy(a);
    kiln_destroy(rt);
}

/* ---- the keep policy's bound ----------------------------------------------------- */

Test(arena_plan, kept_memory_falls_back_after_a_spike) {
    kiln_desc desc = plan_desc();
    kiln_runtime *rt = create(&desc);
    kiln_arena *a = kiln_arena_create(rt, "level");
    size_t base = runtime_stats(rt).blocks.reserved_bytes;
    /* The spike: 40 blocks of small allocations and an 8 MiB large one. */
    for (size_t i = 0; i < 40 * (SPACE / 4096); i++) cr_assert_not_null(kiln_arena_alloc(a, 4096, 8));
    cr_assert_not_null(kiln_arena_alloc(a, (size_t)8 << 20, 16));
    cr_assert_geq(arena_stats(a).blocks_held, 40);
    kiln_arena_reset(a);
    for (int frame = 0; frame < 60; frame++) {
        for (int i = 0; i < 10; i++) cr_assert_not_null(kiln_arena_alloc(a, 1000, 8));
        cr_assert_not_null(kiln_arena_alloc(a, 200000, 16));   /* a small large allocation */
        kiln_arena_reset(a);
    }
    kiln_stats s = runtime_stats(rt);
    cr_assert_eq(arena_stats(a).blocks_held, 1, "one block is what the last frames used");
    cr_assert_eq(s.blocks.large_mappings, 1, "one mapping kept: the 200 kB one");
    cr_assert_lt(s.blocks.reserved_bytes, base + 64 * BS + ((size_t)1 << 20),
                 "the 8 MiB mapping went back (%zu reserved)", s.blocks.reserved_bytes);
    kiln_arena_destroy(a);
    kiln_destroy(rt);
}

/* ---- kiln_trim_step ---------------------------------------------------------------- */

Test(arena_plan, trim_step_gives_back_a_bounded_slice) {
    kiln_desc desc = plan_desc();
    kiln_runtime *rt = create(&desc);
    kiln_arena *a = kiln_arena_create(rt, "level");
    for (size_t i = 0; i < 20 * (SPACE / 4096); i++) {
        unsigned char *p = kiln_arena_alloc(a, 4096, 8);
        cr_assert_not_null(p);
        memset(p, 0x3C, 4096);
    }
    kiln_arena_stats as;
    cr_assert(kiln_arena_stats_get(a, &as));
    kiln_arena_destroy(a);
    kiln_stats s = runtime_stats(rt);
    /* The blocks the arena used hold pages; blocks never handed out hold none. */
    uint64_t free_blocks = as.blocks_held, all_free = s.blocks.blocks_free;
    cr_assert_geq(free_blocks, 20);
    cr_assert_geq(all_free, free_blocks);
    cr_assert_eq(kiln_trim_step(rt, 0), free_blocks, "0: nothing done, the count returned");
    cr_assert_eq(runtime_stats(rt).blocks.trims, 0);
    cr_assert_eq(runtime_stats(rt).blocks.trimmed_bytes, 0);

    cr_assert_eq(kiln_trim_step(rt, 7), free_blocks - 7);
    s = runtime_stats(rt);
    cr_assert_eq(s.blocks.trimmed_bytes, 7 * BS);
    cr_assert_eq(s.blocks.trims, 1);
    cr_assert_eq(s.blocks.blocks_free, all_free, "trimmed blocks stay free");
    size_t left = free_blocks - 7, steps = 1;
    while (left > 0) {
        size_t now = kiln_trim_step(rt, 7);
        cr_assert_eq(now, left > 7 ? left - 7 : 0);
        left = now;
        steps++;
    }
    s = runtime_stats(rt);
    cr_assert_eq(s.blocks.trimmed_bytes, free_blocks * BS, "every free block given back once");
    cr_assert_eq(s.blocks.trims, steps);
    cr_assert_eq(kiln_trim(rt), 0, "nothing left for a full trim");
    cr_assert_eq(kiln_trim_step(rt, 5), 0);

    /* The blocks stay usable and read as zero; one put back holds pages again. */
    kiln_arena *b = kiln_arena_create(rt, "again");
    unsigned char *p = kiln_arena_alloc(b, 4096, 8);
    cr_assert_not_null(p);
    cr_assert_eq(p[4095], 0);
    kiln_arena_destroy(b);
    cr_assert_eq(kiln_trim_step(rt, 0), 1, "the block put back holds pages");
    cr_assert_eq(kiln_trim(rt), BS);
    s = runtime_stats(rt);
    cr_assert_eq(s.blocks.blocks_in_use, 0);
    cr_assert_eq(s.blocks.blocks_free, all_free);
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
    kiln_destroy(rt);
}

/* ---- near-limit warnings ----------------------------------------------------------- */

static void frame_of(kiln_ctx *ctx, size_t bytes) {
    kiln_frame_begin(ctx);
    for (size_t done = 0; done < bytes; done += 1000) cr_assert_not_null(kiln_frame_alloc(ctx, 1000, 8));
    kiln_frame_end(ctx);
}

Test(arena_plan, frame_budget_near_warns_once_per_episode) {
    kiln_desc desc = plan_desc();
    desc.frame_budget = 100000;   /* warn_percent: the default, 80 */
    kiln_runtime *rt = create(&desc);
    kiln_ctx *ctx = kiln_attach(rt);
    frame_of(ctx, 50000);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_NEAR), 0);
    frame_of(ctx, 85000);   /* 85%: the episode starts */
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_FRAME_BUDGET_NEAR, KILN_LOG_WARN), 1);
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_FRAME_BUDGET_NEAR),
                     "FRAME_BUDGET_NEAR: arena 'frame ctx 1': frame 2 reached 85000 bytes, 80% or "
                     "more of its budget of 100000 bytes; warned once until a frame stays under 70%");
    frame_of(ctx, 90000);
    frame_of(ctx, 75000);   /* under 80, not 10 points under: the episode goes on */
    frame_of(ctx, 85000);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_NEAR), 1, "log:%s", recorded_summary(rec));
    frame_of(ctx, 60000);   /* 60%: it ends */
    frame_of(ctx, 80000);   /* at the line: a new episode */
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_NEAR), 2);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 0);
    cr_assert_eq(recorded_count(rec), 2, "log:%s", recorded_summary(rec));
    kiln_detach(ctx);
    kiln_destroy(rt);
}

Test(arena_plan, memory_limit_near_warns_once_per_episode) {
    kiln_desc desc = plan_desc();
    desc.memory_limit = 20 * BS;
    desc.reserve_size = BS;
    desc.warn_percent = 50;
    kiln_runtime *rt = create(&desc);
    kiln_arena *a = kiln_arena_create(rt, "level");
    for (int i = 0; i < 4; i++) cr_assert_not_null(kiln_arena_alloc(a, 40000, 8));   /* 4 blocks: 20% */
    cr_assert_eq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_NEAR), 0);
    void *big = kiln_arena_alloc(a, 6 * BS, 16);   /* + 6 blocks and a page: 50% and more */
    cr_assert_not_null(big);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_MEMORY_LIMIT_NEAR, KILN_LOG_WARN), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_MEMORY_LIMIT_NEAR, "of memory_limit (1310720 bytes)"), 1);
    for (int i = 0; i < 3; i++) cr_assert_not_null(kiln_arena_alloc(a, 40000, 8));   /* more blocks */
    cr_assert_eq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_NEAR), 1, "one warning per episode");
    kiln_arena_destroy(a);   /* the mapping goes: 7 of 20 blocks reserved, 35%: the episode ends */
    kiln_arena *b = kiln_arena_create(rt, "again");
    cr_assert_not_null(kiln_arena_alloc(b, 6 * BS, 16));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_NEAR), 2, "log:%s", recorded_summary(rec));
    kiln_arena_destroy(b);
    kiln_destroy(rt);
}

/* ---- KILN_BUDGET_REFUSE ------------------------------------------------------------ */

Test(arena_plan, budget_refuse_returns_null_past_the_budget) {
    kiln_desc desc = plan_desc();
    desc.frame_budget = 10000;
    desc.frame_budget_policy = KILN_BUDGET_REFUSE;
    desc.warn_percent = 100;
    kiln_runtime *rt = create(&desc);
    kiln_ctx *ctx = kiln_attach(rt);
    for (int frame = 1; frame <= 2; frame++) {
        kiln_frame_begin(ctx);
        for (int i = 0; i < 10; i++) cr_assert_not_null(kiln_frame_alloc(ctx, 1000, 8), "%d", i);
        cr_assert_null(kiln_frame_alloc(ctx, 1, 1), "one byte past the budget");
        cr_assert_null(kiln_frame_alloc(ctx, 1000, 8));
        cr_assert_null(kiln_frame_alloc(ctx, 1u << 20, 16), "a large one too");
        cr_assert_not_null(kiln_frame_alloc(ctx, 0, 1), "nothing more: fits");
        kiln_frame_end(ctx);
        cr_assert_eq(count_items_at(rec, KILN_LOGITEM_FRAME_BUDGET_REFUSED, KILN_LOG_WARN), (size_t)frame,
                     "once per frame:%s", recorded_summary(rec));
    }
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_FRAME_BUDGET_REFUSED),
                     "FRAME_BUDGET_REFUSED: arena 'frame ctx 1': an allocation of 1 bytes in frame 2 "
                     "would bring it to 10001 bytes, over its budget of 10000 bytes; refused "
                     "(KILN_BUDGET_REFUSE; logged once per frame)");
    kiln_arena_stats s = arena_stats(kiln_frame_arena(ctx));
    cr_assert_eq(s.budget_refusals, 6);
    cr_assert_eq(s.failures, 6);
    cr_assert_eq(s.budget_warnings, 0);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 0);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_NEAR), 1, "100%% of the budget, once");
    cr_assert_eq(runtime_stats(rt).api_errors, 0);
    kiln_detach(ctx);
    kiln_destroy(rt);
}

Test(arena_plan, budget_warn_is_todays_behaviour) {
    kiln_desc desc = plan_desc();
    desc.frame_budget = 10000;
    kiln_runtime *rt = create(&desc);
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_frame_begin(ctx);
    for (int i = 0; i < 20; i++) cr_assert_not_null(kiln_frame_alloc(ctx, 1000, 8));
    kiln_frame_end(ctx);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_REFUSED), 0);
    cr_assert_eq(arena_stats(kiln_frame_arena(ctx)).budget_refusals, 0);
    kiln_detach(ctx);
    kiln_destroy(rt);
}

/* ---- desc.frame_fallback ----------------------------------------------------------- */

/* A runtime whose block pool holds two blocks, with frame_fallback on. */
static kiln_runtime *fallback_runtime(uint32_t debug) {
    kiln_desc desc = plan_desc();
    desc.memory_limit = 2 * BS;
    desc.reserve_size = BS;
    desc.frame_fallback = true;
    desc.debug = debug;
    return create(&desc);
}

Test(arena_plan, fallback_serves_what_memory_limit_refuses) {
    kiln_runtime *rt = fallback_runtime(0);
    kiln_ctx *ctx = kiln_attach(rt);
    for (int frame = 1; frame <= 2; frame++) {
        kiln_frame_begin(ctx);
        unsigned char *p[6];
        for (int i = 0; i < 6; i++) {   /* 40 kB each: blocks 1 and 2, then the system allocator */
            p[i] = kiln_frame_alloc(ctx, 40000, 64);
            cr_assert_not_null(p[i], "%d:%s", i, recorded_summary(rec));
            cr_assert_eq((uintptr_t)p[i] % 64, 0);
            memset(p[i], i, 40000);
        }
        unsigned char *big = kiln_frame_alloc(ctx, 1u << 20, 4096);   /* a mapping: refused too */
        cr_assert_not_null(big);
        cr_assert_eq((uintptr_t)big % 4096, 0);
        memset(big, 0x77, 1u << 20);
        for (int i = 0; i < 6; i++) cr_assert_eq(p[i][39999], i);
        kiln_arena_stats s = arena_stats(kiln_frame_arena(ctx));
        cr_assert_eq(s.fallback_allocs, (uint64_t)frame * 5);
        cr_assert_eq(s.fallback_bytes, 4 * 40000 + (1u << 20));
        kiln_frame_end(ctx);
        cr_assert_eq(arena_stats(kiln_frame_arena(ctx)).fallback_bytes, 0, "freed at reset");
        cr_assert_eq(count_items_at(rec, KILN_LOGITEM_FRAME_FALLBACK, KILN_LOG_WARN), (size_t)frame,
                     "once per frame:%s", recorded_summary(rec));
    }
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_FRAME_FALLBACK, "arena 'frame ctx 1'"), 2);
    cr_assert_eq(arena_stats(kiln_frame_arena(ctx)).failures, 0);
    kiln_frame_begin(ctx);
    cr_assert_not_null(kiln_frame_alloc(ctx, 40000, 8));
    cr_assert_not_null(kiln_frame_alloc(ctx, 40000, 8));
    cr_assert_not_null(kiln_frame_alloc(ctx, 40000, 8));   /* left to detach to free */
    kiln_detach(ctx);
    kiln_destroy(rt);
}

/* Memory the system allocator served is the arena's too: under KILN_DEBUG_CHECKS,
 * kiln_arena_grow of it copies (it cannot grow in place) instead of calling it foreign. */
Test(arena_plan, fallback_memory_grows_under_checks) {
    kiln_runtime *rt = fallback_runtime(KILN_DEBUG_CHECKS);
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_frame_begin(ctx);
    unsigned char *p = NULL;
    for (int i = 0; i < 5; i++) p = kiln_frame_alloc(ctx, 40000, 8);   /* the last: fallback */
    cr_assert_geq(arena_stats(kiln_frame_arena(ctx)).fallback_allocs, 1, "%s", recorded_summary(rec));
    memset(p, 0x5A, 40000);
    unsigned char *grown = kiln_arena_grow(kiln_frame_arena(ctx), p, 40000, 80000, 8);
    cr_assert_not_null(grown, "%s", recorded_summary(rec));
    cr_assert_eq(grown[39999], 0x5A);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_GROW_FOREIGN), 0, "%s", recorded_summary(rec));
    kiln_frame_end(ctx);
    kiln_detach(ctx);
    kiln_destroy(rt);
}

Test(arena_plan, fallback_serves_what_the_os_refuses) {
    kiln_desc desc = plan_desc();
    desc.reserve_size = BS;
    desc.frame_fallback = true;
    kiln_runtime *rt = create(&desc);
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_frame_begin(ctx);
    cr_assert_not_null(kiln_frame_alloc(ctx, 40000, 8));
    kiln_os_fail_nth_map(1);
    unsigned char *p = kiln_frame_alloc(ctx, 40000, 8);   /* needs a block: the map fails */
    cr_assert_not_null(p);
    memset(p, 1, 40000);
    cr_assert_eq(kiln_os_injected_failures() > 0, true);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_OS_MAP_FAILED), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_FALLBACK), 1);
    cr_assert_not_null(kiln_frame_alloc(ctx, 40000, 8), "the OS gives again: a block");
    kiln_frame_end(ctx);
    kiln_arena_stats s = arena_stats(kiln_frame_arena(ctx));
    cr_assert_eq(s.fallback_allocs, 1);
    cr_assert_eq(s.fallback_bytes, 0);
    kiln_detach(ctx);
    kiln_destroy(rt);
}

Test(arena_plan, no_fallback_without_the_flag_or_under_a_debug_bit) {
    for (int variant = 0; variant < 2; variant++) {
        recording_log_clear(rec);
        kiln_desc desc = plan_desc();
        desc.memory_limit = 2 * BS;
        desc.reserve_size = BS;
        desc.frame_fallback = variant == 1;
        desc.debug = variant == 1 ? KILN_DEBUG_FILL : 0;
        kiln_runtime *rt = create(&desc);
        kiln_ctx *ctx = kiln_attach(rt);
        kiln_frame_begin(ctx);
        void *last = NULL;
        for (int i = 0; i < 3; i++) last = kiln_frame_alloc(ctx, 40000, 8);
        cr_assert_null(last, "variant %d", variant);
        cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_FALLBACK), 0);
        cr_assert_eq(arena_stats(kiln_frame_arena(ctx)).fallback_allocs, 0);
        kiln_frame_end(ctx);
        kiln_detach(ctx);
        kiln_destroy(rt);
    }
}
