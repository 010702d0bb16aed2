/* stress/stress_observe.c — the per-frame history and the tracer read by other threads
 * while frames run. The main thread drives --iterations frames on a runtime with
 * --threads workers; each frame runs a number of jobs drawn from (seed, frame): top
 * jobs that each run 0-3 children and wait for them (nested waits), every job taking
 * a drawn multiple of 64 bytes of frame memory from the context running it. Now and
 * then it also submits background jobs, which run across frame boundaries. Meanwhile:
 *   - two history readers call kiln_history_read without pause (one for the whole ring,
 *     one with a random cap) and check every copy against what the driver must have
 *     recorded: records oldest first with consecutive frame numbers, the newest frame
 *     never going backwards, as many records as frames ended (up to the cap and the
 *     ring's 256), jobs_run equal to the frame's planned job count (plus at most the
 *     background jobs run so far), steals <= jobs_run, frame_bytes the sum of the
 *     per-context figures and between the planned bytes and that plus one alignment
 *     pad per context, frames that do not overlap in time;
 *   - a trace thread switches tracing on and off, writes the trace (to /dev/null, and
 *     every 8th time into memory, parsed strictly: whole events, never half), writes
 *     the stats as JSON (parsed likewise) and as tables, and reads the tracer's figures;
 *   - a sites reader calls kiln_sites_top without pause (KILN_DEBUG_SITES is on): every
 *     job's frame memory, and a pool object and a handle item that each top job takes
 *     and gives back, are allocated at sites of their own; a reading lists only those,
 *     ranked, and no site's count goes back.
 * The history's allocation figures are checked too: each frame's allocations are the
 * planned jobs' frame allocations plus each top job's object and item, and nothing is
 * live in the pool or the table at a frame end. Once quiet, every site's totals.
 * Usage: stress-observe [--threads N] [--iterations N] [--seed S]; --threads is the
 * worker count, --iterations the number of frames. Exit status 0 when every check
 * held. */
#include "stress_common.h"   /* first: it sets the feature macros */

#include <kiln/kiln.h>
#include <pthread.h>
#include <sched.h>

#include "../tests/json_check.h"

enum {
    MAX_TOP      = 48,    /* top jobs per frame: 1 to 48 */
    MAX_CHILDREN = 3,     /* children of a top job: 0 to 3 */
    UNIT         = 64,    /* frame memory comes in 1 to 8 units, 64-byte aligned */
    BG_EVERY     = 16,    /* frames between two background submissions */
    BG_JOBS      = 2,
    BLOCK        = 16 << 10,   /* small blocks: frames spill into more than one */
};

/* The allocation sites (KILN_DEBUG_SITES): file and lines of their own. */
static const char *const SITE_FILE = "stress_observe";
enum { SITE_TOP = 1, SITE_CHILD = 2, SITE_POOL = 3, SITE_ITEM = 4, SITES = 4 };
enum { OBJECT_SIZE = 40, ITEM_SIZE = 24 };

static stress_options    opt;
static kiln_runtime     *rt;
static kiln_pool        *objects;
static kiln_handles     *items;
static _Atomic bool      finished;
static _Atomic uint64_t  bg_run;        /* background jobs finished so far */
static _Atomic uint64_t  reads, trace_writes;

/* ---- the plan: what frame f runs, known to the driver and to every checker --------- */

static uint64_t draw(uint64_t frame, uint64_t what) {
    return stress_mix(opt.seed ^ stress_mix(frame * 1000003u + what));
}
static uint32_t top_jobs(uint64_t f) { return 1 + (uint32_t)(draw(f, 0) % MAX_TOP); }
static uint32_t children_of(uint64_t f, uint32_t top) {
    return (uint32_t)(draw(f, 1 + top) % (MAX_CHILDREN + 1));
}
/* child 0 is the top job itself */
static size_t bytes_of(uint64_t f, uint32_t top, uint32_t child) {
    return UNIT * (1 + draw(f, 1000 + top * 8 + child) % 8);
}

typedef struct plan { uint64_t jobs, bytes; } plan;

static plan plan_of(uint64_t f) {
    plan p = { 0, 0 };
    for (uint32_t t = 0, n = top_jobs(f); t < n; t++) {
        uint32_t children = children_of(f, t);
        p.jobs += 1 + children;
        for (uint32_t c = 0; c <= children; c++) p.bytes += bytes_of(f, t, c);
    }
    return p;
}

/* ---- the jobs ---------------------------------------------------------------------- */

typedef struct job_arg { uint64_t frame; uint32_t top, child; } job_arg;
static job_arg top_args[MAX_TOP], child_args[MAX_TOP][MAX_CHILDREN];   /* the driver's, per frame */

static void use_frame_memory(kiln_ctx *ctx, const job_arg *a) {
    size_t bytes = bytes_of(a->frame, a->top, a->child);
    uint64_t *p = kiln_frame_alloc_at(ctx, bytes, UNIT, SITE_FILE, a->child ? SITE_CHILD : SITE_TOP);
    STRESS_CHECK(p != NULL, "frame %" PRIu64 ": %zu bytes of frame memory refused", a->frame, bytes);
    if (p)
        for (size_t k = 0; k < bytes / sizeof *p; k++) p[k] = a->frame ^ k;
}

static void child_job(kiln_ctx *ctx, void *arg) { use_frame_memory(ctx, arg); }

/* A pool object and a handle item, taken and given back within the top job. */
static void use_object_and_item(kiln_ctx *ctx) {
    void *obj = kiln_pool_alloc_at(ctx, objects, SITE_FILE, SITE_POOL);
    STRESS_CHECK(obj != NULL, "a pool object refused");
    kiln_handle h = kiln_handle_alloc_at(ctx, items, NULL, SITE_FILE, SITE_ITEM);
    STRESS_CHECK(h.bits != 0, "a handle item refused");
    kiln_pool_free(ctx, objects, obj);
    if (h.bits) STRESS_CHECK(kiln_handle_free(ctx, items, h), "a handle free refused");
}

static void top_job(kiln_ctx *ctx, void *arg) {
    const job_arg *a = arg;
    use_frame_memory(ctx, a);
    use_object_and_item(ctx);
    uint32_t n = children_of(a->frame, a->top);
    if (n == 0) return;
    kiln_job jobs[MAX_CHILDREN];
    for (uint32_t c = 0; c < n; c++) jobs[c] = (kiln_job){ child_job, &child_args[a->top][c] };
    kiln_counter done = { { 0, 0 } };
    kiln_run(ctx, jobs, n, &done);
    kiln_wait(ctx, &done);
}

static void background_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
    for (volatile int i = 0; i < 2000; i++) {
    }
    atomic_fetch_add(&bg_run, 1);
}

static void run_frame(kiln_ctx *ctx, uint64_t f, kiln_counter *background) {
    STRESS_CHECK(kiln_frame_begin(ctx) == f, "frame number");
    uint32_t n = top_jobs(f);
    kiln_job jobs[MAX_TOP];
    for (uint32_t t = 0; t < n; t++) {
        top_args[t] = (job_arg){ f, t, 0 };
        for (uint32_t c = 0; c < MAX_CHILDREN; c++) child_args[t][c] = (job_arg){ f, t, c + 1 };
        jobs[t] = (kiln_job){ top_job, &top_args[t] };
    }
    if (f % BG_EVERY == 0) {
        kiln_job bg[BG_JOBS];
        for (int i = 0; i < BG_JOBS; i++) bg[i] = (kiln_job){ background_job, NULL };
        kiln_run_ex(ctx, bg, BG_JOBS, background, &(kiln_run_desc){ .background = true });
    }
    kiln_run(ctx, jobs, n, NULL);   /* frame end waits for them */
    kiln_frame_end(ctx);
}

/* ---- history readers ------------------------------------------------------------------ */

static void check_records(const kiln_frame_record *r, size_t n, size_t cap, uint64_t *newest) {
    uint64_t background = atomic_load(&bg_run);   /* after the read: counts every one it saw */
    STRESS_CHECK(n <= cap && n <= KILN_HISTORY_FRAMES, "%zu records for a cap of %zu", n, cap);
    if (n == 0) {
        STRESS_CHECK(*newest == 0, "no record after frame %" PRIu64 " was seen", *newest);
        return;
    }
    uint64_t last = r[n - 1].frame;
    STRESS_CHECK(last >= *newest, "the newest frame went back from %" PRIu64 " to %" PRIu64,
                 *newest, last);
    *newest = last;
    size_t expected = last < KILN_HISTORY_FRAMES ? (size_t)last : KILN_HISTORY_FRAMES;
    if (cap < expected) expected = cap;
    STRESS_CHECK(n == expected, "%zu records, %zu expected (newest frame %" PRIu64 ")", n,
                 expected, last);
    for (size_t i = 0; i < n; i++) {
        const kiln_frame_record *x = &r[i];
        plan p = plan_of(x->frame);
        if (i > 0) {
            STRESS_CHECK(x->frame == r[i - 1].frame + 1, "frame %" PRIu64 " after %" PRIu64,
                         x->frame, r[i - 1].frame);
            STRESS_CHECK(x->begin_ns >= r[i - 1].begin_ns + r[i - 1].duration_ns,
                         "frame %" PRIu64 " begins before the one before it ended", x->frame);
        }
        STRESS_CHECK(x->jobs_run >= p.jobs && x->jobs_run <= p.jobs + background,
                     "frame %" PRIu64 ": %" PRIu64 " jobs run, %" PRIu64 " planned (+ up to %"
                     PRIu64 " background)", x->frame, x->jobs_run, p.jobs, background);
        STRESS_CHECK(x->steals <= x->jobs_run, "frame %" PRIu64 ": more steals than jobs", x->frame);
        uint64_t allocs = p.jobs + 2 * top_jobs(x->frame);   /* + an object and an item per top */
        STRESS_CHECK(x->allocs == allocs, "frame %" PRIu64 ": %" PRIu64 " allocations, %" PRIu64
                     " planned", x->frame, x->allocs, allocs);
        STRESS_CHECK(x->pool_live == 0 && x->handles_live == 0,
                     "frame %" PRIu64 ": %" PRIu64 " objects and %" PRIu64 " items live at its end",
                     x->frame, x->pool_live, x->handles_live);
        STRESS_CHECK(x->reserved_bytes > 0, "frame %" PRIu64 ": nothing reserved", x->frame);
        STRESS_CHECK(x->contexts + x->contexts_omitted == opt.threads + 1,
                     "frame %" PRIu64 ": %u contexts", x->frame, x->contexts + x->contexts_omitted);
        uint64_t sum = 0;
        for (uint32_t c = 0; c < x->contexts && c < KILN_HISTORY_MAX_CONTEXTS; c++)
            sum += x->ctx_frame_bytes[c];
        STRESS_CHECK(x->contexts_omitted ? sum <= x->frame_bytes : sum == x->frame_bytes,
                     "frame %" PRIu64 ": bytes per context sum to %" PRIu64 ", not %" PRIu64,
                     x->frame, sum, x->frame_bytes);
        /* alignment pads: at most one unit at the start of each block an arena used */
        uint64_t pads = 2 * (opt.threads + 1) + p.bytes / (BLOCK - 1024);
        STRESS_CHECK(x->frame_bytes >= p.bytes && x->frame_bytes <= p.bytes + UNIT * pads,
                     "frame %" PRIu64 ": %" PRIu64 " frame bytes, %" PRIu64 " planned", x->frame,
                     x->frame_bytes, p.bytes);
    }
}

static void *history_reader(void *arg) {
    bool whole = arg != NULL;
    stress_rng rng = stress_rng_make(opt.seed, whole ? 1 : 2);
    kiln_frame_record *records = malloc((KILN_HISTORY_FRAMES + 44) * sizeof *records);
    STRESS_CHECK(records != NULL, "no memory");
    uint64_t newest = 0;
    while (records && !atomic_load(&finished)) {
        size_t cap = whole ? KILN_HISTORY_FRAMES + 44 : 1 + (size_t)stress_below(&rng, 300);
        size_t n = kiln_history_read(rt, records, cap);
        check_records(records, n, cap, &newest);
        atomic_fetch_add_explicit(&reads, 1, memory_order_relaxed);
        if (!whole) sched_yield();
    }
    free(records);
    return NULL;
}

/* ---- the sites reader ----------------------------------------------------------------- */

static _Atomic uint64_t site_reads;

/* Which of the stress's sites s is (1 to SITES), or 0 for none of them. */
static int site_of(const kiln_site_stats *s) {
    if (!s->file || strcmp(s->file, SITE_FILE) != 0 || s->line < 1 || s->line > SITES) return 0;
    return s->line;
}

static void *sites_reader(void *arg) {
    (void)arg;
    stress_rng rng = stress_rng_make(opt.seed, 4);
    uint64_t seen[SITES + 1] = { 0 };   /* each site's allocations at the last reading */
    kiln_site_stats s[SITES + 2];
    while (!atomic_load(&finished)) {
        size_t cap = 1 + (size_t)stress_below(&rng, SITES + 2);
        size_t n = kiln_sites_top(rt, s, cap);
        STRESS_CHECK(n <= cap && n <= SITES + 1, "%zu sites for a cap of %zu", n, cap);
        for (size_t i = 0; i < n; i++) {
            int site = site_of(&s[i]);
            /* A pool object gets its site right after its allocation, which counts it under
             * no site meanwhile: at most one such object per context at a time. */
            STRESS_CHECK(site != 0 || (!s[i].file && s[i].allocs <= opt.threads + 1u),
                         "a site that is none of the stress's: %s:%d, %" PRIu64 " allocations",
                         s[i].file ? s[i].file : "(none)", s[i].line, s[i].allocs);
            if (i > 0)
                STRESS_CHECK(s[i].allocs <= s[i - 1].allocs, "sites out of rank order");
            if (site == 0) continue;
            STRESS_CHECK(s[i].allocs >= seen[site], "site %d: allocations went back from %" PRIu64
                         " to %" PRIu64, site, seen[site], s[i].allocs);
            seen[site] = s[i].allocs;
        }
        atomic_fetch_add_explicit(&site_reads, 1, memory_order_relaxed);
        sched_yield();
    }
    return NULL;
}

/* Quiet, after frames 1 to last: every site's figures, exact. */
static void check_sites(uint64_t last) {
    uint64_t tops = 0, children = 0, top_bytes = 0, child_bytes = 0;
    for (uint64_t f = 1; f <= last; f++)
        for (uint32_t t = 0, n = top_jobs(f); t < n; t++) {
            tops++;
            top_bytes += bytes_of(f, t, 0);
            for (uint32_t c = 1, k = children_of(f, t); c <= k; c++, children++)
                child_bytes += bytes_of(f, t, c);
        }
    kiln_site_stats s[SITES + 1];
    size_t n = kiln_sites_top(rt, s, SITES + 1);
    STRESS_CHECK(n == SITES, "%zu sites once quiet", n);
    uint64_t allocs[SITES + 1] = { 0 }, bytes[SITES + 1] = { 0 }, live[SITES + 1] = { 0 };
    for (size_t i = 0; i < n; i++) {
        int site = site_of(&s[i]);
        allocs[site] = s[i].allocs, bytes[site] = s[i].bytes, live[site] = s[i].live;
    }
    STRESS_CHECK(allocs[SITE_TOP] == tops && bytes[SITE_TOP] == top_bytes, "the top jobs' site");
    STRESS_CHECK(allocs[SITE_CHILD] == children && bytes[SITE_CHILD] == child_bytes,
                 "the children's site");
    STRESS_CHECK(allocs[SITE_POOL] == tops && bytes[SITE_POOL] == tops * OBJECT_SIZE &&
                 live[SITE_POOL] == 0, "the pool's site: %" PRIu64 " allocs, %" PRIu64 " live",
                 allocs[SITE_POOL], live[SITE_POOL]);
    STRESS_CHECK(allocs[SITE_ITEM] == tops && bytes[SITE_ITEM] == tops * ITEM_SIZE &&
                 live[SITE_ITEM] == 0, "the table's site: %" PRIu64 " allocs, %" PRIu64 " live",
                 allocs[SITE_ITEM], live[SITE_ITEM]);
}

/* ---- the trace thread ----------------------------------------------------------------- */

/* Writes with write_fn into memory and parses the text: it must be whole JSON. */
static void check_json_output(bool (*write_fn)(kiln_runtime *, FILE *), const char *what) {
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f) return;
    bool ok = write_fn(rt, f);
    fclose(f);
    STRESS_CHECK(ok, "%s failed", what);
    char error[160] = "";
    json_value *v = json_parse(text, error, sizeof error);
    STRESS_CHECK(v != NULL, "%s wrote bad JSON: %s", what, error);
    json_free(v);
    free(text);
}

static void *trace_thread(void *arg) {
    (void)arg;
    stress_rng rng = stress_rng_make(opt.seed, 3);
    FILE *null = fopen("/dev/null", "w");
    STRESS_CHECK(null != NULL, "/dev/null cannot be opened");
    uint64_t n = 0;
    while (!atomic_load(&finished) && null) {
        if (stress_below(&rng, 4) == 0) kiln_trace_enable(rt, stress_below(&rng, 3) != 0);
        STRESS_CHECK(kiln_trace_write_file(rt, null), "kiln_trace_write_file failed");
        kiln_stats_print(rt, null);
        STRESS_CHECK(kiln_stats_write_json(rt, null), "kiln_stats_write_json failed");
        if (++n % 8 == 0) {
            check_json_output(kiln_trace_write_file, "kiln_trace_write_file");
            check_json_output(kiln_stats_write_json, "kiln_stats_write_json");
        }
        kiln_trace_stats s;
        STRESS_CHECK(kiln_trace_stats_get(rt, &s) && s.dropped <= s.recorded, "trace figures");
        atomic_fetch_add_explicit(&trace_writes, 1, memory_order_relaxed);
        struct timespec pause = { 0, 200000 };   /* leave the cores to the frames */
        nanosleep(&pause, NULL);
    }
    if (null) fclose(null);
    return NULL;
}

int main(int argc, char **argv) {
    opt = (stress_options){ .threads = 4, .iterations = 3000, .seed = 1 };
    if (!stress_parse(argc, argv, &opt)) return 2;
    stress_log log = { .expected = NULL };
    rt = kiln_create(&(kiln_desc){ .worker_count = opt.threads, .block_size = BLOCK,
                                   .debug = KILN_DEBUG_SITES,
                                   .log = stress_log_fn, .log_user = &log,
                                   .log_every_repeat = true });   /* counted one by one */
    if (!rt) return 1;
    kiln_ctx *ctx = kiln_attach(rt);
    if (!ctx) return 1;
    objects = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "objects", .size = OBJECT_SIZE });
    items = kiln_handles_create(rt, &(kiln_handles_desc){ .name = "items", .item_size = ITEM_SIZE,
                                                          .capacity = 1u << 14 });
    if (!objects || !items) return 1;
    pthread_t readers[2], tracer, sites;
    pthread_create(&readers[0], NULL, history_reader, (void *)1);
    pthread_create(&readers[1], NULL, history_reader, NULL);
    pthread_create(&tracer, NULL, trace_thread, NULL);
    pthread_create(&sites, NULL, sites_reader, NULL);

    double start = stress_seconds();
    kiln_counter background = { { 0, 0 } };
    for (uint64_t f = 1; f <= opt.iterations; f++) run_frame(ctx, f, &background);
    double seconds = stress_seconds() - start;
    atomic_store(&finished, true);
    pthread_join(readers[0], NULL);
    pthread_join(readers[1], NULL);
    pthread_join(tracer, NULL);
    pthread_join(sites, NULL);
    kiln_wait(ctx, &background);
    check_sites(opt.iterations);

    /* quiet now: the whole ring, and a trace that parses */
    static kiln_frame_record records[KILN_HISTORY_FRAMES];
    uint64_t newest = 0;
    size_t n = kiln_history_read(rt, records, KILN_HISTORY_FRAMES);
    check_records(records, n, KILN_HISTORY_FRAMES, &newest);
    STRESS_CHECK(newest == opt.iterations, "the newest record is frame %" PRIu64, newest);
    kiln_trace_enable(rt, true);
    run_frame(ctx, opt.iterations + 1, &background);
    check_json_output(kiln_trace_write_file, "kiln_trace_write_file (quiet)");
    kiln_wait(ctx, &background);

    printf("stress-observe: %" PRIu64 " frames in %.2f s (%.1f us per frame), %" PRIu64
           " history reads, %" PRIu64 " site readings, %" PRIu64 " trace and stats writes, %"
           PRIu64 " background jobs\n", opt.iterations, seconds,
           seconds * 1e6 / (double)opt.iterations, atomic_load(&reads), atomic_load(&site_reads),
           atomic_load(&trace_writes), atomic_load(&bg_run));
    kiln_pool_destroy(objects);
    kiln_handles_destroy(items);
    kiln_detach(ctx);
    kiln_destroy(rt);
    uint64_t failures = stress_failure_count();
    if (failures) fprintf(stderr, "stress-observe: %" PRIu64 " checks failed\n", failures);
    return failures ? 1 : 0;
}
