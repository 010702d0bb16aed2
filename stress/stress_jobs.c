/* stress/stress_jobs.c — the job scheduler on a real runtime under load, tied to the
 * frame clock. The main thread drives frames; in each one it submits random trees of
 * nested jobs (a job kiln_runs its children with a counter and kiln_waits on them;
 * random fan-out and depth, some children high-priority, some pinned to the main
 * context), jobs run parallel_for, and jobs submit children without a counter that
 * only kiln_frame_end waits for. Meanwhile: a background job with a counter that spans
 * frames (with background children and a background parallel_for), a render thread
 * that submits and waits on its own jobs while frames advance (and now and then
 * detaches and attaches again), and a stats reader. More threads than cores.
 *
 * What is checked:
 *   - every job ran exactly once: tree jobs by a per-job run count in the frame's
 *     registry (checked by the parent after its wait and by phase two), each tree's
 *     job count (checked by the driver after phase one), and by per-frame totals against the totals the driver computes
 *     from the trees' shapes (tree jobs, counter-less jobs, parallel_for indices)
 *     right after kiln_frame_end, which must have waited for every one of them;
 *   - frame memory: every job writes a pattern into kiln_frame_alloc(its own ctx);
 *     children check their parent's buffer while the parent waits, the parent checks
 *     its children's buffers and its own after the wait, counter-less jobs check the
 *     buffer of whoever submitted them (possibly after that job finished), and phase
 *     two (jobs submitted after phase one's counter reached zero) checks every tree
 *     job's buffer; parallel_for covers [0, count) exactly once;
 *   - pinned jobs run on the main context; frame jobs see their own frame number;
 *     background jobs are refused frame memory (JOB_BACKGROUND_FRAME_ALLOC) and their
 *     results match a sequential replay; the stats never go backwards, and a context
 *     attached again starts from zero;
 *   - sleep/wake: now and then the driver submits one job after a pause and, without
 *     helping, times how long a worker takes to start it; a lost wake-up would show as
 *     the sleepers' 50 ms timeout. Frame times are reported.
 *
 * Frame memory of a frame job comes from the arena of the thread that runs it, and the
 * render thread runs frame jobs while it waits (it steals them): it may reset its own
 * frame arena, or detach, only once the last frame whose jobs it ran has ended.
 *
 * Usage: stress-jobs [--threads N] [--iterations N] [--seed S]; --threads is the worker
 * count (4 on a 2-core machine oversubscribes it), --iterations the number of frames.
 * Exit status 0 when every check held. */
#include "stress_common.h"   /* first: it sets the feature macros */

#include <kiln/kiln.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>

enum {
    BLOCK_SIZE     = 16 << 10,
    FRAME_BUDGET   = 48 << 10,     /* crossed by busy workers now and then */
    MAX_DEPTH      = 4,            /* tree jobs at depth 4 have no children */
    MAX_FANOUT     = 5,
    MAX_WORDS      = 64,           /* a job's pattern buffer: 1 to 64 words */
    MAX_LOOSE      = 2,            /* counter-less jobs a tree job submits */
    LOOSE_LEVELS   = 3,            /* a counter-less job may submit one more, twice */
    MAX_PFOR       = 300,          /* parallel_for count in a tree job */
    PHASE2_CHUNK   = 16,           /* registry entries per phase-two job */
    PROBE_EVERY    = 8,            /* frames between wake-up probes */
    PROBE_PAUSE_US = 1500,         /* long enough for idle workers to fall asleep */
    STALL_MS       = 40,           /* a probe or frame end this slow smells of a lost wake-up */
    BG_WORDS       = 2048,
    BG_CHILDREN    = 3,
    RENDER_MAX     = 16,           /* jobs per render batch */
    RENDER_LIVE    = 16,           /* the render thread's own frame allocations kept */
    RENDER_REATTACH = 64,          /* render batches between detach + attach */
    STATS_CAP      = 32,
    MAX_IDS        = 4096,         /* context ids the stats reader tracks */
};

/* ---- shared state ---------------------------------------------------------------- */

static stress_options opt;
static kiln_runtime  *g_rt;
static kiln_ctx      *g_main_ctx;           /* written before any other thread starts */
static _Atomic int    g_stop;               /* the helpers stop (release / acquire) */
static _Atomic uint64_t g_frames_closed;    /* last frame whose kiln_frame_end returned */

/* Tallies, all relaxed: the library's own ordering is what the checks rely on, and a
 * relaxed RMW adds no happens-before edge that could hide a race from TSan. */
static _Atomic uint64_t g_nodes_ran, g_loose_ran, g_pfor_indices, g_phase2_entries;
static _Atomic uint64_t g_on_main, g_on_render, g_on_worker, g_pinned_ran, g_high_ran;
static _Atomic uint64_t g_words_checked, g_bg_refusals, g_bg_children, g_bg_indices;
static _Atomic uint64_t g_render_ran, g_render_indices;

static _Thread_local bool     tl_is_render;        /* the render thread */
static _Thread_local uint64_t tl_dirty_frame;      /* render: last frame whose job it ran */

#define RELAXED memory_order_relaxed
#define tally(counter, n) atomic_fetch_add_explicit(&(counter), (n), RELAXED)

/* ---- patterns -------------------------------------------------------------------- */

static uint64_t pattern_word(uint64_t tag, size_t i) {
    return stress_mix(tag + 0x9e3779b97f4a7c15ull * (i + 1));
}

static void fill(uint64_t *buf, size_t words, uint64_t tag) {
    for (size_t i = 0; i < words; i++) buf[i] = pattern_word(tag, i);
}

static bool check_pattern(const uint64_t *buf, size_t words, uint64_t tag, const char *what,
                          uint64_t frame) {
    tally(g_words_checked, words);
    for (size_t i = 0; i < words; i++) {
        if (buf[i] != pattern_word(tag, i)) {
            stress_fail("frame %" PRIu64 ": %s %p: word %zu of %zu is %016" PRIx64 ", expected %016"
                        PRIx64, frame, what, (const void *)buf, i, words, buf[i],
                        pattern_word(tag, i));
            return false;
        }
    }
    return true;
}

/* ---- where jobs run and what they allocate ---------------------------------------- */

/* A frame job starts: the context must be this runtime's, the frame the job's own. */
static void job_enter(kiln_ctx *ctx, uint64_t frame, const char *what) {
    STRESS_CHECK(ctx != NULL && kiln_ctx_runtime(ctx) == g_rt, "%s: a bad context %p", what,
                 (void *)ctx);
    uint64_t now = kiln_frame_number(g_rt);
    STRESS_CHECK(now == frame, "%s of frame %" PRIu64 " runs in frame %" PRIu64, what, frame, now);
    if (ctx == g_main_ctx) tally(g_on_main, 1);
    else if (tl_is_render) tally(g_on_render, 1);
    else tally(g_on_worker, 1);
}

/* Frame memory for a frame job, from the running thread's own arena. */
static void *job_frame_alloc(kiln_ctx *ctx, size_t size, size_t align, uint64_t frame) {
    if (tl_is_render && frame > tl_dirty_frame) tl_dirty_frame = frame;
    void *p = kiln_frame_alloc(ctx, size, align);
    STRESS_CHECK(p != NULL, "frame %" PRIu64 ": kiln_frame_alloc(%zu, %zu) returned NULL", frame,
                 size, align);
    STRESS_CHECK(((uintptr_t)p & (align - 1)) == 0, "frame memory %p not aligned to %zu",
                 p, align);
    return p;
}

/* ---- the shape of a tree: a pure function of a seed ------------------------------- */

typedef struct shape {
    unsigned fanout, words, align, loose, pfor_count, pfor_grain;
    bool     high;     /* the children go to the high-priority deque */
    bool     pinned;   /* the last child is pinned to the main context */
} shape;

static shape shape_of(uint64_t seed, unsigned depth) {
    uint64_t r = stress_mix(seed ^ 0x5ca1ab1eull), q = stress_mix(r);
    shape s = { 0 };
    if (depth == 0) s.fanout = 1 + (unsigned)(r % MAX_FANOUT);
    else if (depth < MAX_DEPTH) s.fanout = (unsigned)(r % (MAX_FANOUT + 1 - depth));
    r /= MAX_FANOUT + 1;
    s.words = 1 + (unsigned)(r % MAX_WORDS);
    r /= MAX_WORDS;
    s.align = 8u << (r % 6);
    r /= 6;
    s.loose = r % 4 == 0 ? 1 + (unsigned)(q % MAX_LOOSE) : 0;
    q /= MAX_LOOSE;
    s.high = (q & 3) == 0;
    s.pinned = s.fanout > 0 && ((q >> 2) & 7) == 0;
    q >>= 5;
    if (q % 5 == 0) {
        q /= 5;
        s.pfor_count = 1 + (unsigned)(q % MAX_PFOR);
        q /= MAX_PFOR;
        s.pfor_grain = (q & 1) ? 0 : 1 + (unsigned)((q >> 1) % 16);
    }
    return s;
}

static uint64_t child_seed(uint64_t seed, unsigned i) {
    return stress_mix(seed * 31 + 0x100 + i);
}

static uint64_t loose_seed(uint64_t seed, unsigned i) {
    return stress_mix(seed ^ (0x1005e0000ull + i));
}

static bool loose_chains(uint64_t seed, unsigned level) {
    return level + 1 < LOOSE_LEVELS && (stress_mix(seed ^ 0xc4a1) & 1);
}

static uint64_t loose_total(uint64_t seed, unsigned level) {
    return 1 + (loose_chains(seed, level) ? loose_total(stress_mix(seed + 1), level + 1) : 0);
}

typedef struct tree_count { uint64_t nodes, loose, pfor; } tree_count;

static void count_tree(uint64_t seed, unsigned depth, tree_count *c) {
    shape s = shape_of(seed, depth);
    c->nodes++;
    c->pfor += s.pfor_count;
    for (unsigned i = 0; i < s.loose; i++) c->loose += loose_total(loose_seed(seed, i), 0);
    for (unsigned i = 0; i < s.fanout; i++) count_tree(child_seed(seed, i), depth + 1, c);
}

static uint64_t tree_nodes(uint64_t seed, unsigned depth) {
    tree_count c = { 0 };
    count_tree(seed, depth, &c);
    return c.nodes;
}

/* ---- parallel_for inside frame jobs ----------------------------------------------- */

typedef struct pfor_arg {
    _Atomic uint32_t *hits;
    const uint64_t   *src;
    uint64_t         *out;
    uint64_t          frame, key;
} pfor_arg;

static void pfor_range(kiln_ctx *ctx, size_t begin, size_t end, void *arg) {
    pfor_arg *a = arg;
    job_enter(ctx, a->frame, "parallel_for range");
    STRESS_CHECK(begin < end, "parallel_for range [%zu, %zu)", begin, end);
    for (size_t i = begin; i < end; i++) {
        atomic_fetch_add_explicit(&a->hits[i], 1, RELAXED);
        a->out[i] = a->src[i] ^ a->key;   /* disjoint ranges: a plain write */
    }
    size_t words = end - begin;
    uint64_t tag = a->key ^ begin;
    uint64_t *scratch = job_frame_alloc(ctx, words * 8, 8, a->frame);
    if (scratch) {
        fill(scratch, words, tag);
        check_pattern(scratch, words, tag, "parallel_for scratch", a->frame);
    }
    tally(g_pfor_indices, words);
}

/* Runs a checked parallel_for over count indices from a frame job (or the driver). */
static void checked_pfor(kiln_ctx *ctx, size_t count, size_t grain, uint64_t frame, uint64_t key) {
    pfor_arg *a = job_frame_alloc(ctx, sizeof *a, alignof(pfor_arg), frame);
    _Atomic uint32_t *hits = job_frame_alloc(ctx, count * sizeof *hits, 64, frame);
    uint64_t *src = job_frame_alloc(ctx, count * 8, 64, frame);
    uint64_t *out = job_frame_alloc(ctx, count * 8, 64, frame);
    if (!a || !hits || !src || !out) return;
    for (size_t i = 0; i < count; i++) atomic_init(&hits[i], 0);
    fill(src, count, key);
    *a = (pfor_arg){ hits, src, out, frame, key };
    kiln_parallel_for(ctx, count, grain, pfor_range, a);
    for (size_t i = 0; i < count; i++) {
        uint32_t h = atomic_load_explicit(&hits[i], RELAXED);
        if (h != 1 || out[i] != (src[i] ^ key)) {
            stress_fail("frame %" PRIu64 ": parallel_for(%zu, grain %zu): index %zu ran %u times, "
                        "out %s", frame, count, grain, i, h, out[i] == (src[i] ^ key) ? "ok" : "wrong");
            break;
        }
    }
}

/* ---- tree jobs -------------------------------------------------------------------- */

/* One tree job in the frame's registry: the per-job run count and what phase two checks. */
typedef struct entry {
    _Atomic uint32_t runs;
    uint32_t         words;
    const uint64_t  *buf;
    uint64_t         tag;
} entry;

/* A tree job's argument, in the frame memory of whoever submitted it. */
typedef struct node {
    uint64_t        seed, frame;
    unsigned        depth;
    uint32_t        id;              /* its entry in the registry */
    entry          *registry;
    kiln_ctx       *pinned;          /* non-NULL: must run on this context */
    bool            high;
    const uint64_t *parent_buf;      /* the parent's pattern, intact while the parent waits */
    uint32_t        parent_words;
    uint64_t        parent_tag;
    /* Written by the job, read by its parent after kiln_wait. */
    const uint64_t *buf;
    uint32_t        words;
    uint64_t        tag;
    uint64_t        subtree_nodes;
} node;

/* A counter-less job: the frame waits for it, nobody else does. */
typedef struct loose {
    uint64_t        seed, frame;
    unsigned        level;
    const uint64_t *payload;         /* the submitter's, never written again this frame */
    uint32_t        words;
    uint64_t        tag;
} loose;

static void loose_job(kiln_ctx *ctx, void *arg) {
    loose *l = arg;
    job_enter(ctx, l->frame, "counter-less job");
    check_pattern(l->payload, l->words, l->tag, "counter-less job's payload", l->frame);
    uint32_t words = 1 + (uint32_t)(l->seed % MAX_WORDS);
    uint64_t tag = stress_mix(l->seed ^ l->frame);
    uint64_t *buf = job_frame_alloc(ctx, words * 8, 8, l->frame);
    if (buf) {
        fill(buf, words, tag);
        if (loose_chains(l->seed, l->level)) {
            loose *next = job_frame_alloc(ctx, sizeof *next, alignof(loose), l->frame);
            if (next) {
                *next = (loose){ stress_mix(l->seed + 1), l->frame, l->level + 1, buf, words, tag };
                kiln_run(ctx, &(kiln_job){ loose_job, next }, 1, NULL);
            }
        }
        check_pattern(buf, words, tag, "counter-less job's buffer", l->frame);
    }
    tally(g_loose_ran, 1);
}

/* Submits count counter-less jobs whose payload is buf (frame memory of ctx's frame). */
static void submit_loose(kiln_ctx *ctx, uint64_t seed, unsigned count, uint64_t frame,
                         const uint64_t *buf, uint32_t words, uint64_t tag) {
    loose *ls = job_frame_alloc(ctx, count * sizeof *ls, alignof(loose), frame);
    if (!ls) return;
    kiln_job jobs[MAX_LOOSE + 8];
    for (unsigned i = 0; i < count; i++) {
        ls[i] = (loose){ loose_seed(seed, i), frame, 0, buf, words, tag };
        jobs[i] = (kiln_job){ loose_job, &ls[i] };
    }
    kiln_run(ctx, jobs, count, NULL);
}

static void node_job(kiln_ctx *ctx, void *arg) {
    node *n = arg;
    job_enter(ctx, n->frame, "tree job");
    entry *e = &n->registry[n->id];
    atomic_fetch_add_explicit(&e->runs, 1, RELAXED);
    if (n->pinned) {
        STRESS_CHECK(ctx == n->pinned, "frame %" PRIu64 ": a job pinned to the main context ran "
                     "elsewhere", n->frame);
        tally(g_pinned_ran, 1);
    }
    if (n->high) tally(g_high_ran, 1);
    if (n->parent_buf)
        check_pattern(n->parent_buf, n->parent_words, n->parent_tag, "parent's buffer", n->frame);

    shape s = shape_of(n->seed, n->depth);
    uint64_t tag = stress_mix(n->seed ^ (n->frame << 20));
    uint64_t *buf = job_frame_alloc(ctx, s.words * 8, s.align, n->frame);
    if (!buf) return;   /* counted as a failure; the totals will not meet */
    fill(buf, s.words, tag);
    n->buf = buf;
    n->words = s.words;
    n->tag = tag;
    e->buf = buf;       /* phase two reads these after phase one's counter is zero */
    e->words = s.words;
    e->tag = tag;

    if (s.loose) submit_loose(ctx, n->seed, s.loose, n->frame, buf, s.words, tag);

    kiln_counter counter = { { 0, 0 } };
    node *kids = NULL;
    uint64_t expected[MAX_FANOUT];
    if (s.fanout) {
        kids = job_frame_alloc(ctx, s.fanout * sizeof *kids, alignof(node), n->frame);
        if (!kids) return;
        uint32_t next_id = n->id + 1;
        kiln_job jobs[MAX_FANOUT];
        for (unsigned i = 0; i < s.fanout; i++) {
            uint64_t seed = child_seed(n->seed, i);
            bool pinned = s.pinned && i + 1 == s.fanout;
            kids[i] = (node){ .seed = seed, .frame = n->frame, .depth = n->depth + 1,
                              .id = next_id, .registry = n->registry,
                              .pinned = pinned ? g_main_ctx : NULL, .high = s.high && !pinned,
                              .parent_buf = buf, .parent_words = s.words, .parent_tag = tag };
            expected[i] = tree_nodes(seed, n->depth + 1);
            next_id += (uint32_t)expected[i];
            jobs[i] = (kiln_job){ node_job, &kids[i] };
        }
        unsigned free_count = s.pinned ? s.fanout - 1 : s.fanout;
        if (free_count)
            kiln_run_ex(ctx, jobs, free_count, &counter, &(kiln_run_desc){
                .priority = s.high ? KILN_PRIORITY_HIGH : KILN_PRIORITY_NORMAL });
        if (s.pinned)
            kiln_run_ex(ctx, &jobs[free_count], 1, &counter,
                        &(kiln_run_desc){ .pinned_to = g_main_ctx });
    }
    if (s.pfor_count) checked_pfor(ctx, s.pfor_count, s.pfor_grain, n->frame, tag ^ 0xf0f0);
    uint64_t subtree = 1;
    if (s.fanout) {
        kiln_wait(ctx, &counter);
        check_pattern(buf, s.words, tag, "own buffer after the wait", n->frame);
        for (unsigned i = 0; i < s.fanout; i++) {
            const node *k = &kids[i];
            uint32_t runs = atomic_load_explicit(&n->registry[k->id].runs, RELAXED);
            STRESS_CHECK(runs == 1 && k->subtree_nodes == expected[i] && k->buf,
                         "frame %" PRIu64 ": child %u of tree job %u: ran %u times, %" PRIu64
                         " jobs in its subtree, %" PRIu64 " expected", n->frame, i, n->id, runs,
                         k->subtree_nodes, expected[i]);
            if (k->buf) check_pattern(k->buf, k->words, k->tag, "child's buffer", n->frame);
            subtree += k->subtree_nodes;
        }
    }
    n->subtree_nodes = subtree;
    tally(g_nodes_ran, 1);
}

/* ---- phase two -------------------------------------------------------------------- */

typedef struct phase2 {
    const entry    *registry;
    uint32_t        begin, end;
    uint64_t        frame;
    const uint64_t *driver_buf;
    uint32_t        driver_words;
    uint64_t        driver_tag;
} phase2;

static void phase2_job(kiln_ctx *ctx, void *arg) {
    phase2 *p = arg;
    job_enter(ctx, p->frame, "phase-two job");
    check_pattern(p->driver_buf, p->driver_words, p->driver_tag, "driver's buffer", p->frame);
    for (uint32_t i = p->begin; i < p->end; i++) {
        const entry *e = &p->registry[i];
        uint32_t runs = atomic_load_explicit(&e->runs, RELAXED);
        STRESS_CHECK(runs == 1 && e->buf, "frame %" PRIu64 ": tree job %u ran %u times", p->frame,
                     i, runs);
        if (e->buf) check_pattern(e->buf, e->words, e->tag, "phase-one buffer", p->frame);
    }
    uint64_t *scratch = job_frame_alloc(ctx, 64, 64, p->frame);
    if (scratch) {
        fill(scratch, 8, p->frame);
        check_pattern(scratch, 8, p->frame, "phase-two scratch", p->frame);
    }
    tally(g_phase2_entries, p->end - p->begin);
}

/* ---- the background job ----------------------------------------------------------- */

typedef struct bg_task {
    uint64_t         seed;
    uint64_t        *data;           /* BG_WORDS, malloc'd by the driver */
    _Atomic uint32_t *hits;          /* BG_WORDS */
    unsigned         steps;
    uint64_t         start_frame, end_frame;   /* written by the job */
    _Atomic int      finished;       /* a hint to the driver; kiln_wait is the real sync */
} bg_task;

typedef struct bg_child { bg_task *task; unsigned step, part; } bg_child;

static void bg_refused_frame_alloc(kiln_ctx *ctx, const char *who) {
    void *p = kiln_frame_alloc(ctx, 64, 8);
    STRESS_CHECK(p == NULL, "%s got frame memory", who);
    tally(g_bg_refusals, 1);
}

static void bg_step_child(kiln_ctx *ctx, void *arg) {
    bg_child *c = arg;
    size_t per = BG_WORDS / BG_CHILDREN;
    size_t begin = c->part * per, end = c->part + 1 == BG_CHILDREN ? BG_WORDS : begin + per;
    for (size_t i = begin; i < end; i++)
        c->task->data[i] = stress_mix(c->task->data[i] + c->step * 0x51ull + i);
    if (c->part == 0) bg_refused_frame_alloc(ctx, "a background job's child");
    tally(g_bg_children, 1);
}

static void bg_range(kiln_ctx *ctx, size_t begin, size_t end, void *arg) {
    bg_task *t = arg;
    for (size_t i = begin; i < end; i++) {
        atomic_fetch_add_explicit(&t->hits[i], 1, RELAXED);
        t->data[i] ^= stress_mix((uint64_t)t->steps ^ i);
    }
    if (begin == 0) bg_refused_frame_alloc(ctx, "a background parallel_for range");
    tally(g_bg_indices, end - begin);
}

static void bg_job(kiln_ctx *ctx, void *arg) {
    bg_task *t = arg;
    t->start_frame = kiln_frame_number(g_rt);
    bg_refused_frame_alloc(ctx, "a background job");
    for (unsigned step = 0; step < t->steps; step++) {
        bg_child kids[BG_CHILDREN];
        kiln_job jobs[BG_CHILDREN];
        for (unsigned i = 0; i < BG_CHILDREN; i++) {
            kids[i] = (bg_child){ t, step, i };
            jobs[i] = (kiln_job){ bg_step_child, &kids[i] };
        }
        kiln_counter counter = { { 0, 0 } };
        kiln_run_ex(ctx, jobs, BG_CHILDREN, &counter, &(kiln_run_desc){ .background = true });
        kiln_wait(ctx, &counter);
        for (size_t i = 0; i < BG_WORDS; i++) atomic_store_explicit(&t->hits[i], 0, RELAXED);
        kiln_parallel_for(ctx, BG_WORDS, 0, bg_range, t);
        for (size_t i = 0; i < BG_WORDS; i++) {
            uint32_t h = atomic_load_explicit(&t->hits[i], RELAXED);
            if (h != 1) {
                stress_fail("background parallel_for: index %zu ran %u times", i, h);
                break;
            }
        }
        nanosleep(&(struct timespec){ 0, 200000 }, NULL);   /* waiting on a file, say */
    }
    t->end_frame = kiln_frame_number(g_rt);
    atomic_store_explicit(&t->finished, 1, RELAXED);
}

/* The driver's sequential replay of bg_job. */
static void bg_replay(uint64_t *data, unsigned steps) {
    for (unsigned step = 0; step < steps; step++) {
        for (size_t i = 0; i < BG_WORDS; i++) data[i] = stress_mix(data[i] + step * 0x51ull + i);
        for (size_t i = 0; i < BG_WORDS; i++) data[i] ^= stress_mix((uint64_t)steps ^ i);
    }
}

/* ---- the render thread ------------------------------------------------------------ */

typedef struct render_item {
    uint64_t         input, output, child_sum;
    _Atomic uint32_t runs;
} render_item;

typedef struct render_child { uint64_t input, output; _Atomic uint32_t runs; } render_child;

static void render_child_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    render_child *c = arg;
    atomic_fetch_add_explicit(&c->runs, 1, RELAXED);
    c->output = stress_mix(c->input);
    tally(g_render_ran, 1);
}

/* No frame memory: a render job may run on a worker while frame end resets its arena. */
static void render_job(kiln_ctx *ctx, void *arg) {
    render_item *it = arg;
    atomic_fetch_add_explicit(&it->runs, 1, RELAXED);
    it->output = stress_mix(it->input);
    it->child_sum = 0;
    if (it->input & 1) {   /* nested: children on this job's stack, waited for here */
        render_child kids[2] = { { it->input + 1, 0, 0 }, { it->input + 2, 0, 0 } };
        kiln_counter counter = { { 0, 0 } };
        kiln_run(ctx, (kiln_job[]){ { render_child_job, &kids[0] }, { render_child_job, &kids[1] } },
                 2, &counter);
        kiln_wait(ctx, &counter);
        for (int i = 0; i < 2; i++) {
            STRESS_CHECK(atomic_load_explicit(&kids[i].runs, RELAXED) == 1 &&
                         kids[i].output == stress_mix(kids[i].input),
                         "render child %d ran %u times", i,
                         atomic_load_explicit(&kids[i].runs, RELAXED));
            it->child_sum += kids[i].output;
        }
    }
    tally(g_render_ran, 1);
}

typedef struct render_range_arg { uint64_t *values; _Atomic uint32_t *hits; } render_range_arg;

static void render_range(kiln_ctx *ctx, size_t begin, size_t end, void *arg) {
    (void)ctx;
    render_range_arg *a = arg;
    for (size_t i = begin; i < end; i++) {
        atomic_fetch_add_explicit(&a->hits[i], 1, RELAXED);
        a->values[i] = stress_mix(a->values[i]);
    }
    tally(g_render_indices, end - begin);
}

typedef struct render_alloc { uint64_t *p; uint32_t words; uint64_t tag; } render_alloc;

typedef struct render_state {
    stress_rng   rng;
    kiln_ctx    *ctx;
    uint64_t     batches, jobs, resets, reattaches, skipped_resets, waits_for_frames;
    double       max_wait_ms;
    render_alloc live[RENDER_LIVE];   /* its own frame allocations, checked until a reset */
    unsigned     live_count;
} render_state;

/* Whether every frame whose jobs this thread ran has ended: its arena holds nothing
 * that a frame job's parent or phase two may still read. */
static bool render_arena_free(void) {
    return atomic_load_explicit(&g_frames_closed, memory_order_acquire) >= tl_dirty_frame;
}

static void render_verify_live(render_state *rs) {
    for (unsigned i = 0; i < rs->live_count; i++)
        check_pattern(rs->live[i].p, rs->live[i].words, rs->live[i].tag,
                      "render thread's own frame memory", 0);
}

static void render_reset(render_state *rs) {
    render_verify_live(rs);
    kiln_arena_reset(kiln_frame_arena(rs->ctx));
    rs->live_count = 0;
    rs->resets++;
}

/* Waits, without running jobs, until its arena is free (the driver publishes the
 * last frame's end before it stops this thread, so this ends). */
static void render_wait_arena_free(render_state *rs) {
    while (!render_arena_free()) {
        rs->waits_for_frames++;
        nanosleep(&(struct timespec){ 0, 100000 }, NULL);
    }
}

/* Attaches (again). The new context is the newest, listed first by the stats, and has
 * done nothing yet, whatever the memory kiln reused for it did in an earlier life. */
static void render_attach(render_state *rs) {
    rs->ctx = kiln_attach(g_rt);
    if (!rs->ctx) {
        stress_fail("render thread: kiln_attach failed");
        exit(2);
    }
    kiln_ctx_stats c[STATS_CAP];
    if (kiln_stats_contexts(g_rt, c, STATS_CAP) == 0) return;
    STRESS_CHECK(!c[0].is_worker && c[0].jobs_submitted == 0 && c[0].jobs_run == 0 &&
                 c[0].jobs_stolen == 0 && c[0].steal_misses == 0 && c[0].sleep_ns == 0,
                 "a new context (%u) starts with %" PRIu64 " jobs submitted, %" PRIu64 " run, %"
                 PRIu64 " stolen, %" PRIu64 " steal misses", c[0].id, c[0].jobs_submitted,
                 c[0].jobs_run, c[0].jobs_stolen, c[0].steal_misses);
}

static void *render_main(void *arg) {
    render_state *rs = arg;
    tl_is_render = true;
    render_attach(rs);
    render_item items[RENDER_MAX];
    kiln_job jobs[RENDER_MAX];
    uint64_t values[256];
    _Atomic uint32_t hits[256];
    while (!atomic_load_explicit(&g_stop, memory_order_acquire)) {
        unsigned n = 1 + (unsigned)stress_below(&rs->rng, RENDER_MAX);
        for (unsigned i = 0; i < n; i++) {
            items[i].input = stress_next(&rs->rng);
            items[i].output = items[i].child_sum = 0;
            atomic_init(&items[i].runs, 0);
            jobs[i] = (kiln_job){ render_job, &items[i] };
        }
        kiln_counter counter = { { 0, 0 } };
        bool high = stress_below(&rs->rng, 4) == 0;
        kiln_run_ex(rs->ctx, jobs, n, &counter,
                    &(kiln_run_desc){ .priority = high ? KILN_PRIORITY_HIGH : KILN_PRIORITY_NORMAL });
        /* Its own frame memory, outside any job: its arena, reset on its own schedule. */
        if (rs->live_count < RENDER_LIVE) {
            uint32_t words = 1 + (uint32_t)stress_below(&rs->rng, 32);
            uint64_t tag = stress_next(&rs->rng);
            uint64_t *p = kiln_frame_alloc(rs->ctx, words * 8, 8);
            STRESS_CHECK(p != NULL, "render thread: kiln_frame_alloc returned NULL");
            if (p) {
                fill(p, words, tag);
                rs->live[rs->live_count++] = (render_alloc){ p, words, tag };
            }
        }
        double start = stress_seconds();
        kiln_wait(rs->ctx, &counter);
        double waited = (stress_seconds() - start) * 1e3;
        if (waited > rs->max_wait_ms) rs->max_wait_ms = waited;
        for (unsigned i = 0; i < n; i++) {
            render_item *it = &items[i];
            uint32_t runs = atomic_load_explicit(&it->runs, RELAXED);
            uint64_t sum = (it->input & 1) ? stress_mix(it->input + 1) + stress_mix(it->input + 2) : 0;
            STRESS_CHECK(runs == 1 && it->output == stress_mix(it->input) && it->child_sum == sum,
                         "render job %u of %u ran %u times (output %s)", i, n, runs,
                         it->output == stress_mix(it->input) ? "ok" : "wrong");
        }
        rs->jobs += n;
        if (rs->batches % 4 == 0) {
            size_t count = 1 + (size_t)stress_below(&rs->rng, 256);
            for (size_t i = 0; i < count; i++) {
                values[i] = i;
                atomic_init(&hits[i], 0);
            }
            kiln_parallel_for(rs->ctx, count, 0, render_range,
                              &(render_range_arg){ values, hits });
            for (size_t i = 0; i < count; i++) {
                uint32_t h = atomic_load_explicit(&hits[i], RELAXED);
                if (h != 1 || values[i] != stress_mix(i)) {
                    stress_fail("render parallel_for(%zu): index %zu ran %u times", count, i, h);
                    break;
                }
            }
        }
        render_verify_live(rs);
        if (rs->live_count == RENDER_LIVE || stress_below(&rs->rng, 4) == 0) {
            if (render_arena_free()) render_reset(rs);
            else rs->skipped_resets++;
        }
        if (++rs->batches % RENDER_REATTACH == 0) {
            render_wait_arena_free(rs);
            render_verify_live(rs);
            rs->live_count = 0;
            kiln_detach(rs->ctx);   /* takes its frame arena with it */
            render_attach(rs);
            rs->reattaches++;
        }
        nanosleep(&(struct timespec){ 0, 100000 + 100000 * (long)stress_below(&rs->rng, 4) }, NULL);
    }
    render_wait_arena_free(rs);
    render_verify_live(rs);
    kiln_detach(rs->ctx);
    return NULL;
}

/* ---- the stats reader ------------------------------------------------------------- */

typedef struct stats_state {
    uint64_t reads;
    uint64_t last_run[MAX_IDS];   /* jobs_run last seen, by context id */
} stats_state;

static void *stats_main(void *arg) {
    stats_state *ss = arg;
    kiln_ctx_stats ctxs[STATS_CAP];
    uint64_t last_frame = 0;
    while (!atomic_load_explicit(&g_stop, memory_order_acquire)) {
        kiln_stats s;
        if (!kiln_stats_get(g_rt, &s)) stress_fail("kiln_stats_get failed");
        STRESS_CHECK(s.frame >= last_frame, "the frame number went back from %" PRIu64 " to %"
                     PRIu64, last_frame, s.frame);
        last_frame = s.frame;
        STRESS_CHECK(s.worker_count == opt.threads && s.contexts <= opt.threads + 2,
                     "%u workers, %u contexts", s.worker_count, s.contexts);
        size_t n = kiln_stats_contexts(g_rt, ctxs, STATS_CAP);
        STRESS_CHECK(n <= opt.threads + 2, "%zu contexts", n);
        for (size_t i = 0; i < n && i < STATS_CAP; i++) {
            const kiln_ctx_stats *c = &ctxs[i];
            if (c->id >= MAX_IDS) continue;
            STRESS_CHECK(c->jobs_run >= ss->last_run[c->id], "context %u: jobs_run %" PRIu64
                         " after %" PRIu64, c->id, c->jobs_run, ss->last_run[c->id]);
            ss->last_run[c->id] = c->jobs_run;
        }
        (void)kiln_stats_arenas(g_rt, NULL, 0);
        ss->reads++;
        nanosleep(&(struct timespec){ 0, 200000 }, NULL);
    }
    return NULL;
}

/* ---- the driver ------------------------------------------------------------------- */

typedef struct probe { _Atomic int started; uint64_t frame; } probe;

static void probe_job(kiln_ctx *ctx, void *arg) {
    probe *p = arg;
    job_enter(ctx, p->frame, "wake-up probe");
    atomic_store_explicit(&p->started, 1, memory_order_release);
}

typedef struct driver_totals {
    uint64_t nodes, loose, pfor, phase2, trees, frames_over, probes, probe_stalls;
    uint64_t bg_jobs, bg_spanning, bg_steps, blocks, isolated;
    double   max_frame_ms, max_end_ms, max_probe_ms, sum_probe_ms;
} driver_totals;

/* ---- dependent jobs: each frame a grid of blocks, block (i, j) after (i-1, j) and
 * (i, j-1), a join after the last row (fan-in), now and then an isolated wait on it,
 * else frame end alone waits for them. The counters are static (a counter's last
 * decrement may come after frame end saw its job completed): each is waited on before
 * it is used again. */
enum { GRID_MAX = 5 };

typedef struct gblock {
    _Atomic unsigned runs;
    const struct gblock *up, *left;   /* NULL at the edges */
    const struct gblock *row;         /* the join: the last row, cols of them */
    unsigned cols;
    uint64_t frame;
} gblock;

static gblock       g_blocks[GRID_MAX * GRID_MAX + 1];
static kiln_counter g_block_done[GRID_MAX * GRID_MAX + 1];
static _Atomic uint64_t g_blocks_ran;

static bool block_done(const gblock *b) {
    return !b || atomic_load_explicit(&b->runs, memory_order_acquire) == 1;
}

static void block_job(kiln_ctx *ctx, void *arg) {
    gblock *b = arg;
    job_enter(ctx, b->frame, "grid block");
    STRESS_CHECK(block_done(b->up) && block_done(b->left), "frame %" PRIu64 ": a grid block "
                 "ran before its predecessors", b->frame);
    for (unsigned j = 0; b->row && j < b->cols; j++)
        STRESS_CHECK(block_done(&b->row[j]), "frame %" PRIu64 ": the join ran before block %u",
                     b->frame, j);
    unsigned runs = atomic_fetch_add_explicit(&b->runs, 1, memory_order_release);
    STRESS_CHECK(runs == 0, "frame %" PRIu64 ": a grid block ran twice", b->frame);
    tally(g_blocks_ran, 1);
}

static void drive_graph(stress_rng *rng, uint64_t frame, driver_totals *d) {
    for (unsigned i = 0; i < GRID_MAX * GRID_MAX + 1; i++) kiln_wait(g_main_ctx, &g_block_done[i]);
    unsigned rows = 1 + (unsigned)stress_below(rng, GRID_MAX);
    unsigned cols = 1 + (unsigned)stress_below(rng, GRID_MAX);
    for (unsigned i = 0; i < rows; i++) {
        for (unsigned j = 0; j < cols; j++) {
            gblock *b = &g_blocks[i * cols + j];
            atomic_store_explicit(&b->runs, 0, RELAXED);
            b->up = i ? &g_blocks[(i - 1) * cols + j] : NULL;
            b->left = j ? &g_blocks[i * cols + j - 1] : NULL;
            b->row = NULL;
            b->frame = frame;
            const kiln_counter *after[2];
            uint32_t n = 0;
            if (i) after[n++] = &g_block_done[(i - 1) * cols + j];
            if (j) after[n++] = &g_block_done[i * cols + j - 1];
            bool high = stress_below(rng, 4) == 0;
            kiln_run_ex(g_main_ctx, &(kiln_job){ block_job, b }, 1, &g_block_done[i * cols + j],
                        &(kiln_run_desc){ .after = after, .after_count = n,
                                          .priority = high ? KILN_PRIORITY_HIGH : KILN_PRIORITY_NORMAL });
        }
    }
    gblock *join = &g_blocks[rows * cols];
    atomic_store_explicit(&join->runs, 0, RELAXED);
    *join = (gblock){ .row = &g_blocks[(rows - 1) * cols], .cols = cols, .frame = frame };
    const kiln_counter *last_row[GRID_MAX];
    for (unsigned j = 0; j < cols; j++) last_row[j] = &g_block_done[(rows - 1) * cols + j];
    kiln_counter *join_done = &g_block_done[GRID_MAX * GRID_MAX];
    kiln_run_ex(g_main_ctx, &(kiln_job){ block_job, join }, 1, join_done,
                &(kiln_run_desc){ .after = last_row, .after_count = cols });
    d->blocks += rows * cols + 1;
    if (stress_below(rng, 2) == 0) {
        kiln_wait_ex(g_main_ctx, join_done, &(kiln_wait_desc){ .isolate = true });
        STRESS_CHECK(block_done(join), "frame %" PRIu64 ": the isolated wait returned before the "
                     "join ran", frame);
        d->isolated++;
    }
}

static void check_totals(uint64_t frame, const driver_totals *d) {
    uint64_t blocks = atomic_load_explicit(&g_blocks_ran, RELAXED);
    STRESS_CHECK(blocks == d->blocks, "after frame %" PRIu64 " ended: grid blocks %" PRIu64
                 "/%" PRIu64 " (ran/expected)", frame, blocks, d->blocks);
    uint64_t nodes = atomic_load_explicit(&g_nodes_ran, RELAXED);
    uint64_t loose = atomic_load_explicit(&g_loose_ran, RELAXED);
    uint64_t pfor = atomic_load_explicit(&g_pfor_indices, RELAXED);
    uint64_t phase2 = atomic_load_explicit(&g_phase2_entries, RELAXED);
    STRESS_CHECK(nodes == d->nodes && loose == d->loose && pfor == d->pfor && phase2 == d->phase2,
                 "after frame %" PRIu64 " ended: tree jobs %" PRIu64 "/%" PRIu64 ", counter-less "
                 "%" PRIu64 "/%" PRIu64 ", parallel_for indices %" PRIu64 "/%" PRIu64
                 ", phase-two entries %" PRIu64 "/%" PRIu64 " (ran/expected)", frame, nodes,
                 d->nodes, loose, d->loose, pfor, d->pfor, phase2, d->phase2);
}

/* One frame of the driver: phase one (trees, counter-less jobs, a parallel_for of its
 * own), phase two (verification), frame end, the totals. */
static void drive_frame(stress_rng *rng, uint64_t expected_frame, driver_totals *d) {
    double frame_start = stress_seconds();
    uint64_t frame = kiln_frame_begin(g_main_ctx);
    STRESS_CHECK(frame == expected_frame, "kiln_frame_begin returned %" PRIu64 ", expected %"
                 PRIu64, frame, expected_frame);

    if (frame % PROBE_EVERY == 0) {   /* idle a while, then time one wake-up */
        nanosleep(&(struct timespec){ 0, PROBE_PAUSE_US * 1000L }, NULL);
        probe p = { 0, frame };
        kiln_counter counter = { { 0, 0 } };
        double start = stress_seconds();
        kiln_run(g_main_ctx, &(kiln_job){ probe_job, &p }, 1, &counter);
        while (!atomic_load_explicit(&p.started, memory_order_acquire)) sched_yield();
        double ms = (stress_seconds() - start) * 1e3;
        kiln_wait(g_main_ctx, &counter);
        d->probes++;
        d->sum_probe_ms += ms;
        if (ms > d->max_probe_ms) d->max_probe_ms = ms;
        if (ms >= STALL_MS) d->probe_stalls++;
    }

    /* The driver's own frame memory: every phase-two job checks it. */
    uint32_t dwords = 1 + (uint32_t)stress_below(rng, MAX_WORDS);
    uint64_t dtag = stress_next(rng);
    uint64_t *dbuf = job_frame_alloc(g_main_ctx, dwords * 8, 64, frame);
    if (!dbuf) return;
    fill(dbuf, dwords, dtag);

    /* Phase one: random trees, a few high-priority or pinned to this context. */
    enum { MAX_TREES = 16 };
    unsigned trees = 1 + (unsigned)stress_below(rng, opt.threads < 8 ? 2 * opt.threads : MAX_TREES);
    uint64_t seeds[MAX_TREES];
    uint32_t first_id[MAX_TREES];
    uint32_t total = 0;
    tree_count counted = { 0 };
    for (unsigned t = 0; t < trees; t++) {
        seeds[t] = stress_next(rng);
        first_id[t] = total;
        tree_count c = { 0 };
        count_tree(seeds[t], 0, &c);
        total += (uint32_t)c.nodes;
        counted.nodes += c.nodes;
        counted.loose += c.loose;
        counted.pfor += c.pfor;
    }
    entry *registry = job_frame_alloc(g_main_ctx, total * sizeof *registry, 64, frame);
    node *roots = job_frame_alloc(g_main_ctx, trees * sizeof *roots, alignof(node), frame);
    if (!registry || !roots) return;
    for (uint32_t i = 0; i < total; i++) {
        atomic_init(&registry[i].runs, 0);
        registry[i].buf = NULL;
    }
    kiln_counter phase1 = { { 0, 0 } };
    for (unsigned t = 0; t < trees; t++) {
        unsigned kind = (unsigned)stress_below(rng, 8);   /* 0: high, 1: pinned here */
        roots[t] = (node){ .seed = seeds[t], .frame = frame, .id = first_id[t],
                           .registry = registry, .pinned = kind == 1 ? g_main_ctx : NULL,
                           .high = kind == 0, .parent_buf = dbuf, .parent_words = dwords,
                           .parent_tag = dtag };
        kiln_run_ex(g_main_ctx, &(kiln_job){ node_job, &roots[t] }, 1, &phase1,
                    &(kiln_run_desc){ .priority = kind == 0 ? KILN_PRIORITY_HIGH
                                                            : KILN_PRIORITY_NORMAL,
                                      .pinned_to = kind == 1 ? g_main_ctx : NULL });
    }
    unsigned loose_here = (unsigned)stress_below(rng, 4);
    uint64_t loose_base = stress_next(rng);
    if (loose_here) {
        submit_loose(g_main_ctx, loose_base, loose_here, frame, dbuf, dwords, dtag);
        for (unsigned i = 0; i < loose_here; i++)
            counted.loose += loose_total(loose_seed(loose_base, i), 0);
    }
    if (stress_below(rng, 3) == 0) {
        size_t count = 1 + (size_t)stress_below(rng, 2 * MAX_PFOR);
        checked_pfor(g_main_ctx, count, 0, frame, stress_next(rng));
        counted.pfor += count;
    }
    kiln_wait(g_main_ctx, &phase1);
    for (unsigned t = 0; t < trees; t++) {
        uint64_t want = tree_nodes(seeds[t], 0);
        STRESS_CHECK(roots[t].subtree_nodes == want, "frame %" PRIu64 ": tree %u counted %" PRIu64
                     " jobs, expected %" PRIu64, frame, t, roots[t].subtree_nodes, want);
    }

    /* Phase two: every phase-one buffer, checked by jobs the counter ordered after it. */
    unsigned chunks = (total + PHASE2_CHUNK - 1) / PHASE2_CHUNK;
    phase2 *checks = job_frame_alloc(g_main_ctx, chunks * sizeof *checks, alignof(phase2), frame);
    kiln_job *jobs = job_frame_alloc(g_main_ctx, chunks * sizeof *jobs, alignof(kiln_job), frame);
    if (!checks || !jobs) return;
    for (unsigned c = 0; c < chunks; c++) {
        uint32_t begin = c * PHASE2_CHUNK, end = begin + PHASE2_CHUNK < total ? begin + PHASE2_CHUNK
                                                                              : total;
        checks[c] = (phase2){ registry, begin, end, frame, dbuf, dwords, dtag };
        jobs[c] = (kiln_job){ phase2_job, &checks[c] };
    }
    kiln_counter phase2_counter = { { 0, 0 } };
    kiln_run(g_main_ctx, jobs, chunks, &phase2_counter);
    kiln_wait(g_main_ctx, &phase2_counter);
    check_pattern(dbuf, dwords, dtag, "driver's buffer at frame end", frame);
    drive_graph(rng, frame, d);

    double end_start = stress_seconds();
    kiln_frame_end(g_main_ctx);
    double now = stress_seconds();
    atomic_store_explicit(&g_frames_closed, frame, memory_order_release);
    STRESS_CHECK(kiln_frame_number(g_rt) == frame, "frame number %" PRIu64 " after frame %" PRIu64
                 " ended", kiln_frame_number(g_rt), frame);

    d->trees += trees;
    d->nodes += counted.nodes;
    d->loose += counted.loose;
    d->pfor += counted.pfor;
    d->phase2 += total;
    check_totals(frame, d);
    double end_ms = (now - end_start) * 1e3, frame_ms = (now - frame_start) * 1e3;
    if (end_ms > d->max_end_ms) d->max_end_ms = end_ms;
    if (frame_ms > d->max_frame_ms) d->max_frame_ms = frame_ms;
    if (end_ms >= STALL_MS) d->frames_over++;
}

typedef struct bg_slot {
    bg_task      task;
    uint64_t    *replay;
    kiln_counter counter;
    bool         running;
} bg_slot;

static void bg_start(bg_slot *bg, stress_rng *rng) {
    bg->task.seed = stress_next(rng);
    bg->task.steps = 4 + (unsigned)stress_below(rng, 8);
    for (size_t i = 0; i < BG_WORDS; i++) bg->replay[i] = bg->task.data[i] = pattern_word(bg->task.seed, i);
    bg->task.start_frame = bg->task.end_frame = 0;
    atomic_store_explicit(&bg->task.finished, 0, RELAXED);
    kiln_run_ex(g_main_ctx, &(kiln_job){ bg_job, &bg->task }, 1, &bg->counter,
                &(kiln_run_desc){ .background = true });
    bg->running = true;
}

/* Waits for the background job and checks it against a replay. */
static void bg_finish(bg_slot *bg, driver_totals *d) {
    kiln_wait(g_main_ctx, &bg->counter);
    bg->running = false;
    bg_replay(bg->replay, bg->task.steps);
    if (memcmp(bg->replay, bg->task.data, BG_WORDS * 8) != 0)
        stress_fail("background job (seed %" PRIu64 ", %u steps): its data differs from the replay",
                    bg->task.seed, bg->task.steps);
    STRESS_CHECK(atomic_load_explicit(&bg->task.finished, RELAXED) == 1 &&
                 bg->task.end_frame >= bg->task.start_frame,
                 "background job: finished %d, frames %" PRIu64 " to %" PRIu64,
                 atomic_load_explicit(&bg->task.finished, RELAXED), bg->task.start_frame,
                 bg->task.end_frame);
    d->bg_jobs++;
    d->bg_steps += bg->task.steps;
    if (bg->task.end_frame > bg->task.start_frame) d->bg_spanning++;
}

static void start_thread(pthread_t *thread, void *(*fn)(void *), void *arg) {
    if (pthread_create(thread, NULL, fn, arg) != 0) {
        stress_fail("pthread_create failed");
        exit(2);
    }
}

int main(int argc, char **argv) {
    opt = (stress_options){ .threads = 4, .iterations = 400, .seed = 1 };
    if (!stress_parse(argc, argv, &opt)) return 2;
    static const char *const expected_items[] = { "FRAME_BUDGET_EXCEEDED", "FRAME_BUDGET_NEAR",
                                                   "JOB_BACKGROUND_FRAME_ALLOC", NULL };
    static stress_log log = { .expected = expected_items };
    double start = stress_seconds();
    g_rt = kiln_create(&(kiln_desc){
        .worker_count = opt.threads,
        .block_size = BLOCK_SIZE,
        .frame_budget = FRAME_BUDGET,
        .debug = KILN_DEBUG_CHECKS,
        .log = stress_log_fn, .log_every_repeat = true,   /* counted one by one */
        .log_user = &log,
    });
    g_main_ctx = g_rt ? kiln_attach(g_rt) : NULL;
    if (!g_main_ctx) {
        stress_fail("kiln_create or kiln_attach failed");
        return 2;
    }
    stress_rng rng = stress_rng_make(opt.seed, 0);
    static render_state render;
    static stats_state stats;
    render.rng = stress_rng_make(opt.seed, 1);
    bg_slot bg = { .task.data = malloc(BG_WORDS * 8), .task.hits = malloc(BG_WORDS * 4),
                   .replay = malloc(BG_WORDS * 8) };
    if (!bg.task.data || !bg.task.hits || !bg.replay) return 2;
    pthread_t render_thread, stats_thread;
    start_thread(&render_thread, render_main, &render);
    start_thread(&stats_thread, stats_main, &stats);

    driver_totals d = { 0 };
    for (uint64_t f = 1; f <= opt.iterations; f++) {
        /* The background job: finished ones are checked, a new one starts now and then. */
        if (bg.running && atomic_load_explicit(&bg.task.finished, RELAXED)) bg_finish(&bg, &d);
        if (!bg.running && stress_below(&rng, 3) == 0) bg_start(&bg, &rng);
        drive_frame(&rng, f, &d);
        if (stress_below(&rng, 4) == 0)   /* the rest of a frame's time: workers go idle */
            nanosleep(&(struct timespec){ 0, 100000 * (long)stress_below(&rng, 10) }, NULL);
    }
    atomic_store_explicit(&g_stop, 1, memory_order_release);
    pthread_join(render_thread, NULL);
    pthread_join(stats_thread, NULL);
    if (bg.running) bg_finish(&bg, &d);

    /* Everything is quiet: the figures are exact. */
    kiln_stats s;
    kiln_stats_get(g_rt, &s);
    uint64_t refusals = atomic_load_explicit(&g_bg_refusals, RELAXED);
    uint64_t bg_children = atomic_load_explicit(&g_bg_children, RELAXED);
    uint64_t bg_indices = atomic_load_explicit(&g_bg_indices, RELAXED);
    STRESS_CHECK(s.api_errors == refusals, "%" PRIu64 " API errors, %" PRIu64 " expected "
                 "(background frame-memory refusals)", s.api_errors, refusals);
    STRESS_CHECK(refusals == d.bg_jobs + 2 * d.bg_steps && bg_children == BG_CHILDREN * d.bg_steps &&
                 bg_indices == (uint64_t)BG_WORDS * d.bg_steps,
                 "background: %" PRIu64 " refusals, %" PRIu64 " children, %" PRIu64 " indices "
                 "for %" PRIu64 " jobs of %" PRIu64 " steps", refusals, bg_children, bg_indices,
                 d.bg_jobs, d.bg_steps);
    STRESS_CHECK(s.contexts == opt.threads + 1, "%u contexts with the render thread gone",
                 s.contexts);
    uint64_t pinned = atomic_load_explicit(&g_pinned_ran, RELAXED);
    uint64_t high = atomic_load_explicit(&g_high_ran, RELAXED);
    STRESS_CHECK(opt.iterations < 50 || (pinned > 0 && high > 0 && d.bg_jobs > 0),
                 "%" PRIu64 " pinned and %" PRIu64 " high-priority jobs, %" PRIu64
                 " background jobs", pinned, high, d.bg_jobs);
    /* A lost wake-up leaves the job until a sleeper's 50 ms timeout: one slow probe may
     * be the machine, a quarter of them is the protocol. */
    STRESS_CHECK(d.probes < 8 || d.probe_stalls * 4 < d.probes, "%" PRIu64 " of %" PRIu64
                 " wake-up probes took %d ms or more: lost wake-ups?", d.probe_stalls, d.probes,
                 STALL_MS);
    kiln_detach(g_main_ctx);
    kiln_destroy(g_rt);   /* nothing left: any STILL_ALIVE / STILL_ATTACHED is a failure */
    free(bg.task.data);
    free((void *)bg.task.hits);
    free(bg.replay);

    uint64_t failures = stress_failure_count();
    printf("stress-jobs: %s: threads %u, frames %" PRIu64 ", seed %" PRIu64 ", %.2fs | %" PRIu64
           " trees, %" PRIu64 " tree jobs (%" PRIu64 " pinned, %" PRIu64 " high), %" PRIu64
           " counter-less, %" PRIu64 " parallel_for indices, %" PRIu64 " phase-two checks, run on "
           "main/render/workers %" PRIu64 "/%" PRIu64 "/%" PRIu64 ", %" PRIu64 " MiB checked | "
           "background %" PRIu64 " jobs (%" PRIu64 " across frames) | render %" PRIu64
           " batches, %" PRIu64 " jobs, %" PRIu64 " resets (%" PRIu64 " put off), %" PRIu64
           " reattaches, wait max %.1f ms | %" PRIu64 " stats reads | frame max %.1f ms, "
           "frame end max %.1f ms (%" PRIu64 " >= %d ms) | wake probes %" PRIu64 ": mean %.2f ms, "
           "max %.1f ms, %" PRIu64 " >= %d ms | %" PRIu64 " failures\n",
           failures ? "FAILED" : "ok", opt.threads, opt.iterations, opt.seed,
           stress_seconds() - start, d.trees, d.nodes, pinned, high, d.loose, d.pfor, d.phase2,
           atomic_load_explicit(&g_on_main, RELAXED), atomic_load_explicit(&g_on_render, RELAXED),
           atomic_load_explicit(&g_on_worker, RELAXED),
           atomic_load_explicit(&g_words_checked, RELAXED) >> 17, d.bg_jobs, d.bg_spanning,
           render.batches, render.jobs, render.resets, render.skipped_resets, render.reattaches,
           render.max_wait_ms, stats.reads, d.max_frame_ms, d.max_end_ms, d.frames_over, STALL_MS,
           d.probes, d.probes ? d.sum_probe_ms / (double)d.probes : 0.0, d.max_probe_ms,
           d.probe_stalls, STALL_MS, failures);
    return failures ? 1 : 0;
}
