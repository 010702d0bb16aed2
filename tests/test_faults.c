/* tests/test_faults.c — every heap allocation kiln makes can fail (base/sys_alloc.h): each
 * scenario is run once to count its allocations, then once per allocation with that one
 * failing. Every run must end without a crash, log the failure as an ERROR naming the
 * memory it lacked, return safely (NULL, false, or the work done another way: a job that
 * finds no room in its deque runs inline) and leave no heap byte behind (exact in the
 * ASan build, see heap_accounting_exact). Scenarios run without workers, so the sequence
 * of allocations is the same on every run, except the one with workers, which walks the
 * allocations of kiln_create only. Only kiln's own calls go through kiln_sys_*, so the
 * counts are kiln's alone (Criterion and the recorder allocate with malloc). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "base/sys_alloc.h"
#include "recording_log.h"

#define BS ((size_t)64 << 10)

static recording_log *rec;

/* One stream for the trace and stats writers, opened once with a buffer of its own, so
 * that writing to it never mallocs inside a measured run. */
static FILE *sink;
static char sink_buffer[1 << 16];

static void setup(void) {
    rec = recording_log_new();
    sink = tmpfile();
    cr_assert_not_null(sink);
    setvbuf(sink, sink_buffer, _IOFBF, sizeof sink_buffer);
}

static void teardown(void) {
    kiln_sys_fail_nth(0);
    fclose(sink);
    recording_log_free(rec);
    rec = NULL;
}

TestSuite(faults, .init = setup, .fini = teardown);

/* ERROR messages that say which memory was missing (every *_OUT_OF_MEMORY item, and
 * TRACE_WRITE_FAILED's "no memory to ..."), and ERROR messages in all. */
static size_t errors_naming_memory(size_t *all_errors) {
    size_t naming = 0, all = 0;
    pthread_mutex_lock(&rec->lock);
    for (size_t i = 0; i < rec->count; i++) {
        if (rec->messages[i].level != KILN_LOG_ERROR) continue;
        all++;
        const char *text = rec->messages[i].text;
        if (strstr(text, "OUT_OF_MEMORY: ") || strstr(text, "memory")) naming++;
    }
    pthread_mutex_unlock(&rec->lock);
    *all_errors = all;
    return naming;
}

static kiln_desc fault_desc(uint32_t debug) {
    kiln_desc desc = recording_desc(rec);   /* no workers */
    desc.debug = debug;
    return desc;
}

/* A runtime and an attached context, or NULL for both (the failure logged). */
static kiln_ctx *runtime_and_context(kiln_runtime **rt, uint32_t debug) {
    kiln_desc desc = fault_desc(debug);
    *rt = kiln_create(&desc);
    kiln_ctx *ctx = *rt ? kiln_attach(*rt) : NULL;
    if (*rt && !ctx) {
        kiln_destroy(*rt);
        *rt = NULL;
    }
    return ctx;
}

static void end(kiln_runtime *rt, kiln_ctx *ctx) {
    if (ctx) kiln_detach(ctx);
    kiln_destroy(rt);
}

/* ---- the scenarios: each makes and destroys its runtime, and checks what it got ---- */

static void scenario_create(void) {
    kiln_desc desc = fault_desc(0);
    kiln_destroy(kiln_create(&desc));
}

static void scenario_attach(void) {
    kiln_runtime *rt;
    kiln_ctx *ctx = runtime_and_context(&rt, 0);
    if (!ctx) return;
    kiln_ctx *second = kiln_attach(rt);   /* a second context: its own block and deques */
    cr_assert_not_null(kiln_frame_alloc(ctx, 64, 8), "an attached context has frame memory");
    if (second) kiln_detach(second);
    end(rt, ctx);
}

/* The frame arena outgrows the first reservation: a second one (its record, perhaps a
 * new leaf of the address map). */
static void scenario_block_growth(void) {
    kiln_runtime *rt;
    kiln_ctx *ctx = runtime_and_context(&rt, 0);
    if (!ctx) return;
    kiln_frame_begin(ctx);
    for (int i = 0; i < 70; i++) kiln_frame_alloc(ctx, BS / 2, 16);   /* NULL when refused */
    kiln_frame_end(ctx);
    end(rt, ctx);
}

static void scenario_pool(void) {
    kiln_runtime *rt;
    kiln_ctx *ctx = runtime_and_context(&rt, 0);
    if (!ctx) return;
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "bullets", .size = 48 });
    if (pool) {
        void *obj = kiln_pool_alloc(ctx, pool);
        cr_assert_not_null(obj);
        kiln_pool_free(ctx, pool, obj);
        kiln_pool_destroy(pool);
    }
    end(rt, ctx);
}

/* A tag and a pool under it: the tag's account. A tag refused for memory leaves the
 * pool untagged, never half made. */
static void scenario_tag(void) {
    kiln_runtime *rt;
    kiln_ctx *ctx = runtime_and_context(&rt, 0);
    if (!ctx) return;
    kiln_tag fx = kiln_tag_create(rt, &(kiln_tag_desc){ .name = "FX", .budget = 1 << 20 });
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "sparks", .size = 48, .tag = fx });
    if (pool) {
        void *obj = kiln_pool_alloc(ctx, pool);
        cr_assert_not_null(obj);
        kiln_tag_stats s;
        if (fx.id) cr_assert(kiln_tag_stats_get(rt, fx, &s) && s.live_bytes > 0);
        kiln_pool_free(ctx, pool, obj);
        kiln_pool_destroy(pool);
    }
    end(rt, ctx);
}

/* Objects still live at kiln_pool_destroy under KILN_DEBUG_SITES: the leak report's
 * site table (alloc/debug.c). */
static void scenario_pool_leak_report(void) {
    kiln_runtime *rt;
    kiln_ctx *ctx = runtime_and_context(&rt, KILN_DEBUG_SITES);
    if (!ctx) return;
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "leaky", .size = 32 });
    if (pool) {
        for (int i = 0; i < 3; i++) kiln_pool_alloc_at(ctx, pool, "leak.c", 10 + i);
        kiln_pool_destroy(pool);   /* warns, by site */
    }
    end(rt, ctx);
}

static void scenario_handles(void) {
    kiln_runtime *rt;
    kiln_ctx *ctx = runtime_and_context(&rt, 0);
    if (!ctx) return;
    kiln_handles *table = kiln_handles_create(rt, &(kiln_handles_desc){ .name = "enemies",
                                                                         .item_size = 16,
                                                                         .capacity = 256 });
    if (table) {
        void *item = NULL;
        kiln_handle h = kiln_handle_alloc(ctx, table, &item);
        cr_assert(h.bits != 0 && item);
        cr_assert(kiln_handle_free(ctx, table, h));
        kiln_handles_destroy(table);
    }
    end(rt, ctx);
}

static int jobs_ran;
static void count_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
    jobs_ran++;   /* no workers: every job runs on the test's thread */
}

/* 1000 jobs on a deque made for 256: it grows twice; a growth that fails runs its job
 * inline (logged), so every job still runs exactly once. */
static void scenario_job_growth(void) {
    kiln_runtime *rt;
    kiln_ctx *ctx = runtime_and_context(&rt, 0);
    if (!ctx) return;
    static kiln_job jobs[1000];
    for (int i = 0; i < 1000; i++) jobs[i] = (kiln_job){ count_job, NULL };
    jobs_ran = 0;
    kiln_frame_begin(ctx);
    kiln_counter done = { { 0, 0 } };
    kiln_run(ctx, jobs, 1000, &done);
    kiln_wait(ctx, &done);
    kiln_frame_end(ctx);
    cr_assert_eq(jobs_ran, 1000, "every job runs once, inline when its deque could not grow");
    end(rt, ctx);
}

/* Tracing: the context's ring when it first records, then the writer's buffers. */
static void scenario_trace(void) {
    kiln_runtime *rt;
    kiln_ctx *ctx = runtime_and_context(&rt, 0);
    if (!ctx) return;
    kiln_trace_enable(rt, true);
    kiln_frame_begin(ctx);
    kiln_job job = { count_job, NULL };
    kiln_counter done = { { 0, 0 } };
    kiln_run(ctx, &job, 1, &done);
    kiln_wait(ctx, &done);
    kiln_frame_end(ctx);
    kiln_trace_write_file(rt, sink);   /* false when its memory failed (logged) */
    end(rt, ctx);
}

static void scenario_stats(void) {
    kiln_runtime *rt;
    kiln_ctx *ctx = runtime_and_context(&rt, 0);
    if (!ctx) return;
    kiln_stats_print(rt, sink);
    kiln_stats_write_json(rt, sink);
    end(rt, ctx);
}

/* A runtime configured by an options string (sites' registry, a frame reserve, the stats
 * report at every frame end and at destroy), one frame: a refused create leaks nothing,
 * whichever allocation fails (a refused options string makes none: test_options.c). */
static void scenario_options(void) {
    kiln_desc desc = fault_desc(0);
    desc.options = "debug=sites,frame_reserve=64K,stats=exit+frame:1";
    desc.options_env = KILN_OPTIONS_ENV_IGNORE;
    kiln_runtime *rt = kiln_create(&desc);
    kiln_ctx *ctx = rt ? kiln_attach(rt) : NULL;
    if (ctx) {
        kiln_frame_begin(ctx);
        kiln_frame_alloc(ctx, 100, 16);
        kiln_frame_end(ctx);
        kiln_detach(ctx);
    }
    kiln_destroy(rt);
}

/* The general heap: a class allocation, large ones (the registry grows), a realloc and
 * frees. A large allocation the registry has no room for is NULL, its mapping gone. */
static void scenario_heap(void) {
    kiln_runtime *rt;
    kiln_ctx *ctx = runtime_and_context(&rt, 0);
    if (!ctx) return;
    void *small = kiln_heap_alloc(ctx, (kiln_tag){ 0 }, 100, 0);
    cr_assert_not_null(small, "a class allocation takes no system memory");
    void *large[40];
    for (int i = 0; i < 40; i++) large[i] = kiln_heap_alloc(ctx, (kiln_tag){ 0 }, 20000 + (size_t)i, 0);
    large[0] = large[0] ? kiln_heap_realloc(ctx, large[0], 100000, 0) : NULL;
    for (int i = 0; i < 40; i++) kiln_heap_free(ctx, large[i]);
    kiln_heap_free(ctx, small);
    kiln_heap_stats s;
    cr_assert(kiln_stats_heap(rt, &s));
    cr_assert_eq(s.live_objects, 0u);
    end(rt, ctx);
}

/* ---- the walk ---- */

typedef void (*scenario_fn)(void);

/* Runs scenario once to count its allocations (and to make whatever a first run makes
 * once, so the measured runs start from the same heap), then once per allocation with
 * that one failing. Returns the count. */
static unsigned long walk(const char *name, scenario_fn scenario) {
    unsigned long before = kiln_sys_allocations();
    scenario();
    unsigned long total = kiln_sys_allocations() - before;
    size_t all;
    cr_assert_eq(errors_naming_memory(&all), 0, "%s: a clean run logs no error:%s", name,
                 recorded_summary(rec));
    cr_assert_eq(all, 0, "%s: a clean run logs no error:%s", name, recorded_summary(rec));
    cr_assert_gt(total, 0, "%s allocates nothing from the heap", name);
    cr_log_info("%s: %lu heap allocations, each failed in turn (leaks counted %s)", name, total,
                heap_accounting_exact() ? "exactly" : "only in the ASan build");
    for (unsigned long n = 1; n <= total; n++) {
        recording_log_clear(rec);
        size_t heap0 = heap_bytes_in_use();
        unsigned long injected = kiln_sys_injected_failures();
        kiln_sys_fail_nth(n);
        scenario();
        kiln_sys_fail_nth(0);
        size_t heap1 = heap_bytes_in_use();
        bool fired = kiln_sys_injected_failures() != injected;
        size_t naming = errors_naming_memory(&all);
        /* A run may make fewer allocations than the counting run (a reservation that
         * straddles a 4 GiB region needs one more leaf of the address map): then nothing
         * failed and nothing may be logged. */
        if (fired)
            cr_assert_geq(naming, 1, "%s: allocation %lu of %lu failed without an ERROR naming "
                          "the memory:%s", name, n, total, recorded_summary(rec));
        else
            cr_assert_eq(all, 0, "%s: run %lu: nothing failed, yet:%s", name, n, recorded_summary(rec));
        if (heap_accounting_exact())
            cr_assert_eq(heap1, heap0, "%s: allocation %lu of %lu failed and %zd heap bytes stayed "
                         "behind:%s", name, n, total, (ssize_t)(heap1 - heap0), recorded_summary(rec));
    }
    return total;
}

Test(faults, create_and_destroy) { walk("kiln_create", scenario_create); }
Test(faults, attach) { walk("kiln_attach", scenario_attach); }
Test(faults, block_pool_growth) { walk("block pool growth", scenario_block_growth); }
Test(faults, pool_create) { walk("kiln_pool_create", scenario_pool); }
Test(faults, pool_leak_report) { walk("pool leak report", scenario_pool_leak_report); }
Test(faults, handles_create) { walk("kiln_handles_create", scenario_handles); }
Test(faults, tag_create) { walk("kiln_tag_create", scenario_tag); }
Test(faults, heap_large_registry) { walk("the heap's large allocations", scenario_heap); }
Test(faults, job_deque_growth) { walk("job deque growth", scenario_job_growth); }
Test(faults, trace_record_and_write) { walk("trace", scenario_trace); }
Test(faults, stats_print_and_json) { walk("stats print", scenario_stats); }
Test(faults, create_from_options) { walk("kiln_create from options", scenario_options); }

/* Each walk reaches the sites it is about: the counts are kiln's own, and these floors
 * say which allocations each scenario must at least contain. */
Test(faults, scenarios_reach_their_sites) {
    unsigned long before = kiln_sys_allocations();
    scenario_create();
    unsigned long create = kiln_sys_allocations() - before;
    cr_assert_eq(create, 2, "the runtime and the address map, got %lu", create);
    before = kiln_sys_allocations();
    scenario_job_growth();
    unsigned long jobs = kiln_sys_allocations() - before;
    before = kiln_sys_allocations();
    scenario_attach();
    unsigned long attach = kiln_sys_allocations() - before;
    /* One context: its memory, three deques, the first reservation's record and leaf. */
    cr_assert_geq(attach, create + 2 * 4 + 2, "attach: %lu", attach);
    cr_assert_geq(jobs, create + 4 + 2 + 2, "two deque growths: %lu", jobs);
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

/* ---- with workers: the allocations of kiln_create, made on the creating thread ---- */

static kiln_runtime *create_with_workers(void) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = 2;
    return kiln_create(&desc);
}

Test(faults, create_with_workers) {
    kiln_destroy(create_with_workers());   /* the first thread stacks are cached after this */
    recording_log_clear(rec);
    unsigned long before = kiln_sys_allocations();
    kiln_runtime *rt = create_with_workers();
    unsigned long total = kiln_sys_allocations() - before;
    cr_assert_not_null(rt, "log:%s", recorded_summary(rec));
    kiln_destroy(rt);
    /* The worker table, and per worker a context and three deques. */
    cr_assert_geq(total, 2 + 1 + 2 * 4, "kiln_create with 2 workers: %lu", total);
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
    for (unsigned long n = 1; n <= total; n++) {
        recording_log_clear(rec);
        size_t heap0 = heap_bytes_in_use();
        unsigned long injected = kiln_sys_injected_failures();
        kiln_sys_fail_nth(n);
        rt = create_with_workers();
        kiln_sys_fail_nth(0);   /* idle workers allocate nothing meanwhile */
        bool fired = kiln_sys_injected_failures() != injected;
        kiln_destroy(rt);
        size_t heap1 = heap_bytes_in_use();
        size_t all, naming = errors_naming_memory(&all);
        if (fired) {
            cr_assert_null(rt, "allocation %lu of %lu failed, yet kiln_create succeeded", n, total);
            cr_assert_geq(naming, 1, "allocation %lu of %lu failed without an ERROR naming the "
                          "memory:%s", n, total, recorded_summary(rec));
        } else {
            cr_assert_eq(all, 0, "run %lu: nothing failed, yet:%s", n, recorded_summary(rec));
        }
        if (heap_accounting_exact())
            cr_assert_eq(heap1, heap0, "allocation %lu of %lu failed and %zd heap bytes stayed behind",
                         n, total, (ssize_t)(heap1 - heap0));
    }
}
