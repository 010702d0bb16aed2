/* bench/graph_bench.c — the job family's irregular and dependent workloads: J5 nqueens,
 * J6 an unbalanced tree search, J7 a parallel mergesort, J8 a wavefront of blocks that
 * wait for their neighbours, kiln against OpenMP tasks (gcc's libgomp) and oneTBB
 * (bench/graph_tbb.cpp, behind a C interface), all in this process, rounds alternating
 * kiln, OpenMP, oneTBB, ... Each workload is written here from its published description.
 *
 * Usage:
 *   graph_bench [--quick] [--only j5|j6|j7|j8] [--threads LIST] [--kiln-only]
 *       --quick: every workload and peer with tiny sizes, seconds in all
 *       --threads 1,2,4: the thread counts (default 1, 2 and twice the online CPUs)
 *       --kiln-only: no peer rows (for profiling kiln under callgrind or perf)
 *
 * Thread counts match on every side, as in jobs_bench.c: T threads in all, the calling
 * thread included (jobs_side in jobs_common.h: kiln worker_count = T-1 plus the attached
 * main thread, OpenMP num_threads(T), a oneTBB task_arena of concurrency T). Every round
 * of every row first waits, untimed, until the process is quiet (jobs_settle()), so no
 * row is timed against another runtime's spinning workers.
 *
 * The workloads (sizes of the full run; --quick in brackets). The leaf work of each is one
 * noinline function that every side calls, so the sides differ only in how they spawn,
 * wait and order jobs.
 * - J5 nqueens(12) [8]: one job per queen placed in the first 3 rows [2], each waiting
 *   for its children; below that row a sequential bitmask search counts the solutions.
 *   The count is checked (14200 [92]) on every side.
 * - J6 UTS, an unbalanced tree search: a tree whose nodes get their child counts from a
 *   geometric distribution of mean 4 (at most 64 children), drawn from a splitmix64 hash
 *   of the node's id; a child's id is the next splitmix64 output after its parent's id.
 *   Depth limit 11 [6] up to T = the core count, 10 above it (oversubscribed: libgomp's
 *   tasks cost microseconds there): 1 904 716 [1 744] and 475 674 nodes. Every node is a
 *   job, leaves included (no cutoff), that waits for its children and adds up their
 *   node counts; the count is checked against a sequential walk.
 * - J7 mergesort of 10 000 000 [100 000] 32-bit ints from a fixed seed, cilksort-style:
 *   both halves sorted in parallel, then merged in parallel (the larger run split at its
 *   middle, the other binary-searched for that value, the two pairs merged by two jobs);
 *   sequential below 8192 elements, for a sort and for a merge. Each result is checked
 *   for order and against the input's checksum.
 * - J8 a wavefront: a 64 x 64 [8 x 8] grid of blocks of 32 x 32 [8 x 8] cells of a table
 *   in which each cell is computed from its top, left and top-left neighbours; block
 *   (i,j) runs after (i-1,j) and (i,j-1). kiln: one kiln_run_ex per block, its own
 *   counter, .after = its top and left blocks' counters (after_count 2, 1 on the edges,
 *   0 at the origin), all submitted by the main thread, which then waits for the last
 *   block (and a second row as a game runs it: one frame per grid, kiln_frame_end waiting
 *   instead of kiln_wait); OpenMP: one task per block with depend(in: top, left) depend(out: self);
 *   oneTBB: a flow graph of one continue_node per block, make_edge from top and left,
 *   built and run per round, and a second row whose graph is built once (untimed) and
 *   run again each round. The table is checked against a sequential computation.
 *
 * Figures: J5 ns per job (jobs: every placement spawned), J6 ns per node, J7 ns per
 * element, J8 ns per block; one sample per round (the whole run), median ms per run in the
 * note column, and a sequential row (the same leaf functions, no jobs) for reference
 * (J7: at T=1 only, its slowest row).
 * After each table, kiln's per-context figures over that workload's kiln rounds.
 *
 * 5 rounds after a warm-up round (J7: 3). The full run takes about 60 s on 2 cores. */
#define _GNU_SOURCE
#include <kiln/kiln.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "jobs_common.h"

/* ---- The shared leaf work, and the oneTBB side: bench/graph_tbb.cpp (keep the two
 * lists identical) ---------------------------------------------------------------------- */

#define UTS_MAX_CHILDREN 64

typedef struct wave_grid {
    uint32_t *cells;    /* (side + 1) x (side + 1), row 0 and column 0 the fixed border */
    size_t    stride;   /* side + 1 */
    int       blocks;   /* blocks per row and per column */
    int       tile;     /* cells per block side */
} wave_grid;

long   gb_queens_count(int n, uint32_t cols, uint32_t left, uint32_t right);
int    gb_uts_expand(uint64_t id, int depth, int max_depth, uint64_t *kids);
void   gb_sort_seq(int32_t *src, int32_t *dst, size_t n, int to_dst);
void   gb_merge_seq(const int32_t *a, size_t na, const int32_t *b, size_t nb, int32_t *out);
size_t gb_lower_bound(const int32_t *a, size_t n, int32_t value);
void   gb_wave_tile(const wave_grid *g, int bi, int bj);
#ifdef BENCH_HAVE_TBB
long   gb_tbb_queens(void *handle, int n, int spawn_rows);
long   gb_tbb_uts(void *handle, uint64_t root, int max_depth);
void   gb_tbb_sort(void *handle, int32_t *data, int32_t *scratch, size_t n, size_t cutoff);
void   gb_tbb_wave(void *handle, const wave_grid *g);
void  *gb_tbb_wave_build(void *handle, const wave_grid *g);
void   gb_tbb_wave_run(void *handle, void *graph);
void   gb_tbb_wave_free(void *graph);
#endif

/* ---- Sizes ------------------------------------------------------------------------------ */

#define SORT_CUTOFF  8192
#define UTS_SEED     4

typedef struct run_size {
    int    rounds;          /* measured rounds per workload, after one warm-up round */
    int    sort_rounds;     /* J7's */
    int    queens_n, queens_spawn_rows;
    int    uts_depth;       /* J6 with T up to the core count */
    int    uts_depth_over;  /* J6 with T above it (oversubscribed) */
    size_t sort_n;
    int    wave_blocks, wave_tile;
} run_size;

static const run_size full_run = {
    .rounds = 5, .sort_rounds = 3, .queens_n = 12, .queens_spawn_rows = 3,
    .uts_depth = 11, .uts_depth_over = 10, .sort_n = 10000000, .wave_blocks = 64, .wave_tile = 32,
};
static const run_size quick_run = {
    .rounds = 2, .sort_rounds = 2, .queens_n = 8, .queens_spawn_rows = 2,
    .uts_depth = 6, .uts_depth_over = 6, .sort_n = 100000, .wave_blocks = 8, .wave_tile = 8,
};

static bool kiln_only;
static bool quick;
static long cpus = 1;

/* ---- J5: the bitmask search below the spawned rows -------------------------------------- */

/* Solutions of n queens that extend a placement: cols, the columns taken; left and right,
 * the squares of this row attacked along the two diagonals. */
__attribute__((noinline)) long gb_queens_count(int n, uint32_t cols, uint32_t left,
                                               uint32_t right) {
    const uint32_t all = (1u << n) - 1;
    if (cols == all) return 1;
    long count = 0;
    for (uint32_t free = all & ~(cols | left | right); free;) {
        uint32_t bit = free & -free;
        free ^= bit;
        count += gb_queens_count(n, cols | bit, (left | bit) << 1, (right | bit) >> 1);
    }
    return count;
}

/* Solutions for n = 1..16 (OEIS A000170). */
static const long queens_solutions[17] = { 1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680,
                                           14200, 73712, 365596, 2279184, 14772512 };

/* The placements spawned as jobs: every partial placement of rows 1..spawn_rows. */
static double queens_jobs(int n, int rows, int row, uint32_t cols, uint32_t left,
                          uint32_t right) {
    if (row == rows) return 0;
    double jobs = 0;
    for (uint32_t free = ((1u << n) - 1) & ~(cols | left | right); free;) {
        uint32_t bit = free & -free;
        free ^= bit;
        jobs += 1 + queens_jobs(n, rows, row + 1, cols | bit, (left | bit) << 1, (right | bit) >> 1);
    }
    return jobs;
}

/* ---- J6: the tree ------------------------------------------------------------------------ */

static inline uint64_t splitmix64_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
#define SPLITMIX64_STEP 0x9e3779b97f4a7c15ull

/* The children of node id at depth: their ids in kids, their count returned. The count is
 * geometric with mean 4 (P(k) = 0.2 * 0.8^k, drawn by inversion from the hash of the id),
 * at most UTS_MAX_CHILDREN, 0 at max_depth. */
__attribute__((noinline)) int gb_uts_expand(uint64_t id, int depth, int max_depth, uint64_t *kids) {
    if (depth >= max_depth) return 0;
    double u = (double)(splitmix64_mix(id) >> 11) * 0x1p-53;   /* [0, 1) */
    double m = floor(log1p(-u) / log(0.8));
    int count = m < UTS_MAX_CHILDREN ? (int)m : UTS_MAX_CHILDREN;
    for (int k = 0; k < count; k++) kids[k] = splitmix64_mix(id + (uint64_t)(k + 1) * SPLITMIX64_STEP);
    return count;
}

static uint64_t uts_root(void) { return splitmix64_mix(UTS_SEED * SPLITMIX64_STEP); }

static long uts_seq(uint64_t id, int depth, int max_depth) {
    uint64_t kids[UTS_MAX_CHILDREN];
    int count = gb_uts_expand(id, depth, max_depth, kids);
    long nodes = 1;
    for (int k = 0; k < count; k++) nodes += uts_seq(kids[k], depth + 1, max_depth);
    return nodes;
}

/* ---- J7: the sequential sort and merge ----------------------------------------------------- */

__attribute__((noinline)) void gb_merge_seq(const int32_t *a, size_t na, const int32_t *b,
                                            size_t nb, int32_t *out) {
    size_t i = 0, k = 0;
    while (i < na && k < nb) {   /* no branch on the data: random runs mispredict */
        const int32_t x = a[i], y = b[k];
        const size_t take_b = y < x;
        *out++ = take_b ? y : x;
        k += take_b;
        i += 1 - take_b;
    }
    memcpy(out, a + i, (na - i) * sizeof *a);
    memcpy(out + (na - i), b + k, (nb - k) * sizeof *b);
}

/* The first index whose value is not below value (n when none). */
__attribute__((noinline)) size_t gb_lower_bound(const int32_t *a, size_t n, int32_t value) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < value) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Sorts the n values of src; the result lands in dst when to_dst, else in src, and the
 * other array is scratch. The parallel sides use the same halving and the same roles. */
__attribute__((noinline)) void gb_sort_seq(int32_t *src, int32_t *dst, size_t n, int to_dst) {
    if (n <= 16) {
        for (size_t i = 1; i < n; i++) {
            int32_t v = src[i];
            size_t k = i;
            for (; k > 0 && src[k - 1] > v; k--) src[k] = src[k - 1];
            src[k] = v;
        }
        if (to_dst) memcpy(dst, src, n * sizeof *src);
        return;
    }
    size_t half = n / 2;
    gb_sort_seq(src, dst, half, !to_dst);
    gb_sort_seq(src + half, dst + half, n - half, !to_dst);
    if (to_dst) gb_merge_seq(src, half, src + half, n - half, dst);
    else gb_merge_seq(dst, half, dst + half, n - half, src);
}

/* ---- J8: one block of the table --------------------------------------------------------------- */

/* Cell (r, c) from its top, left and top-left neighbours: order matters (a block run
 * before its neighbours reads zeros and the table differs from the sequential one). */
__attribute__((noinline)) void gb_wave_tile(const wave_grid *g, int bi, int bj) {
    const size_t stride = g->stride;
    const size_t r0 = 1 + (size_t)bi * (size_t)g->tile, c0 = 1 + (size_t)bj * (size_t)g->tile;
    for (size_t r = r0; r < r0 + (size_t)g->tile; r++) {
        uint32_t *row = g->cells + r * stride;
        const uint32_t *up = row - stride;
        for (size_t c = c0; c < c0 + (size_t)g->tile; c++)
            row[c] = (up[c] * 31u + row[c - 1] * 17u + up[c - 1]) ^ (uint32_t)(r * stride + c);
    }
}

/* ---- A phase: one thread count ------------------------------------------------------------------ */

enum impl { IMPL_KILN, IMPL_KILN_FRAME, IMPL_OMP, IMPL_TBB, IMPL_TBB_PREBUILT, IMPL_SEQ };

typedef struct wave_block {
    const wave_grid *grid;
    int              bi, bj;
} wave_block;

typedef struct phase {
    jobs_side       side;
    const run_size *size;
    int             uts_depth;
    long            uts_expect;
    const int32_t  *sort_input;      /* J7: the unsorted values, copied into sort_data per round */
    int32_t        *sort_data, *sort_scratch;
    uint64_t        sort_sum;        /* the input's checksum: sum of splitmix64 of the values */
    wave_grid       grid;
    const uint32_t *wave_expect;     /* the sequential table */
    wave_block     *wave_blocks;     /* kiln's job arguments, one per block */
    kiln_counter   *wave_counters;
    void           *tbb_graph;       /* the prebuilt flow graph, or NULL */
} phase;

typedef struct row {
    phase    *ph;
    enum impl impl;
} row;

/* The rows of every workload: kiln, OpenMP, oneTBB (and the extra ones), skipped ones
 * with the reason; with_seq: a sequential reference last. */
/* The rows' names; tbb_prebuilt, kiln_frame NULL: no such row. */
typedef struct row_names {
    const char *kiln, *omp, *tbb, *tbb_prebuilt, *kiln_frame;
} row_names;

/* J5-J7: a job per call on every side. */
static const row_names task_rows = { "kiln kiln_run+kiln_wait", "OpenMP task+taskwait",
                                     "oneTBB task_group run+wait", NULL, NULL };

static void add_rows(bench_workload *w, phase *ph, row *rows, bench_round_fn fn,
                     const row_names *names, bool with_seq) {
    const char *kiln_name = names->kiln, *omp_name = names->omp, *tbb_name = names->tbb;
    const char *tbb_prebuilt_name = names->tbb_prebuilt;
    int n = 0;
    rows[n] = (row){ ph, IMPL_KILN };
    bench_add_entry(w, kiln_name, fn, &rows[n++]);
    if (names->kiln_frame) {
        rows[n] = (row){ ph, IMPL_KILN_FRAME };
        bench_add_entry(w, names->kiln_frame, fn, &rows[n++]);
    }
    if (!kiln_only) {
#ifdef BENCH_HAVE_OPENMP
        rows[n] = (row){ ph, IMPL_OMP };
        bench_add_entry(w, omp_name, fn, &rows[n++]);
#else
        bench_add_skipped(w, omp_name, "OpenMP not found at configure time (dependency('openmp'))");
#endif
        if (ph->side.tbb) {
            rows[n] = (row){ ph, IMPL_TBB };
            bench_add_entry(w, tbb_name, fn, &rows[n++]);
            if (tbb_prebuilt_name) {
                rows[n] = (row){ ph, IMPL_TBB_PREBUILT };
                bench_add_entry(w, tbb_prebuilt_name, fn, &rows[n++]);
            }
        } else {
            bench_add_skipped(w, tbb_name, "%s", ph->side.tbb_skip);
        }
    }
    if (with_seq) {
        rows[n] = (row){ ph, IMPL_SEQ };
        bench_add_entry(w, "sequential (reference)", fn, &rows[n]);
    }
}

/* Runs the workload, notes each row's median ms, prints the table and kiln's contexts. */
static void run_workload(bench_workload *w, phase *ph) {
    jobs_ctx_snapshot before, after;
    jobs_snapshot(ph->side.rt, &before);
    bench_run(w);
    jobs_snapshot(ph->side.rt, &after);
    for (int i = 0; i < w->count; i++)
        if (!w->entries[i].skip[0])
            snprintf(w->entries[i].note, sizeof w->entries[i].note, "%.2f",
                     jobs_median_round_ms(&w->entries[i].series));
    bench_print(w);
    jobs_print_ctx_delta(&before, &after, w->rounds);
}

static void workload_init(bench_workload *w, const char *title, const char *detail,
                          const char *op, int rounds) {
    memset(w, 0, sizeof *w);
    w->title = title;
    w->detail = detail;
    w->op = op;
    w->sample = "run";
    w->note_head = "median ms";
    w->rounds = rounds;
}

/* One table: its rows (names; the sequential row when with_seq) run, printed, freed. */
static void run_table(phase *ph, const char *title, const char *detail, const char *op, int rounds,
                      bench_round_fn fn, const row_names *names, bool with_seq) {
    bench_workload w;
    workload_init(&w, title, detail, op, rounds);
    row rows[6];
    add_rows(&w, ph, rows, fn, names, with_seq);
    run_workload(&w, ph);
    bench_workload_free(&w);
}

/* ---- J5 nqueens ------------------------------------------------------------------------------------ */

typedef struct queens_arg {
    int      n, spawn_rows, row;
    uint32_t cols, left, right;
    long     count;
} queens_arg;

static void queens_job(kiln_ctx *ctx, void *p) {
    queens_arg *a = p;
    if (a->row == a->spawn_rows) {
        a->count = gb_queens_count(a->n, a->cols, a->left, a->right);
        return;
    }
    queens_arg kids[32];
    kiln_job jobs[32];
    size_t count = 0;
    for (uint32_t free = ((1u << a->n) - 1) & ~(a->cols | a->left | a->right); free;) {
        uint32_t bit = free & -free;
        free ^= bit;
        kids[count] = (queens_arg){ a->n, a->spawn_rows, a->row + 1, a->cols | bit,
                                    (a->left | bit) << 1, (a->right | bit) >> 1, 0 };
        jobs[count] = (kiln_job){ queens_job, &kids[count] };
        count++;
    }
    a->count = 0;
    if (count == 0) return;
    kiln_counter counter = { { 0, 0, 0 } };
    kiln_run(ctx, jobs, count, &counter);
    kiln_wait(ctx, &counter);
    for (size_t k = 0; k < count; k++) a->count += kids[k].count;
}

#ifdef BENCH_HAVE_OPENMP
static long queens_omp(int n, int spawn_rows, int row, uint32_t cols, uint32_t left,
                       uint32_t right) {
    if (row == spawn_rows) return gb_queens_count(n, cols, left, right);
    long counts[32];
    int count = 0;
    for (uint32_t free = ((1u << n) - 1) & ~(cols | left | right); free; count++) {
        uint32_t bit = free & -free;
        free ^= bit;
#pragma omp task shared(counts) firstprivate(count, bit)
        counts[count] = queens_omp(n, spawn_rows, row + 1, cols | bit, (left | bit) << 1,
                                   (right | bit) >> 1);
    }
#pragma omp taskwait
    long total = 0;
    for (int k = 0; k < count; k++) total += counts[k];
    return total;
}
#endif

static void j5_round(void *state, bench_series *s) {
    row *r = state;
    phase *ph = r->ph;
    const int n = ph->size->queens_n, rows = ph->size->queens_spawn_rows;
    jobs_settle();
    long result = -1;
    uint64_t t0 = bench_now_ns();
    switch (r->impl) {
    case IMPL_KILN: {
        queens_arg root = { n, rows, 0, 0, 0, 0, 0 };
        queens_job(ph->side.ctx, &root);   /* the root inline, as on every side */
        result = root.count;
        break;
    }
#ifdef BENCH_HAVE_OPENMP
    case IMPL_OMP:
#pragma omp parallel num_threads(ph->side.threads)
#pragma omp single
        result = queens_omp(n, rows, 0, 0, 0, 0);
        break;
#endif
#ifdef BENCH_HAVE_TBB
    case IMPL_TBB: result = gb_tbb_queens(ph->side.tbb, n, rows); break;
#endif
    case IMPL_SEQ: result = gb_queens_count(n, 0, 0, 0); break;
    default: bench_die("J5: no such row");
    }
    uint64_t ns = bench_now_ns() - t0;
    if (result != queens_solutions[n])
        bench_die("J5: nqueens(%d) = %ld solutions, expected %ld", n, result, queens_solutions[n]);
    bench_add_sample(s, (double)ns, queens_jobs(n, rows, 0, 0, 0, 0));
}

static void run_j5(phase *ph) {
    char title[80], detail[240];
    const int n = ph->size->queens_n, rows = ph->size->queens_spawn_rows;
    snprintf(title, sizeof title, "J5 nqueens(%d) (T=%d threads)", n, ph->side.threads);
    snprintf(detail, sizeof detail,
             "one job per queen placed in the first %d rows (%.0f jobs), a sequential bitmask "
             "search below; %ld solutions checked; sample = one search", rows,
             queens_jobs(n, rows, 0, 0, 0, 0), queens_solutions[n]);
    run_table(ph, title, detail, "job", ph->size->rounds, j5_round, &task_rows, true);
}

/* ---- J6 UTS -------------------------------------------------------------------------------------------- */

typedef struct uts_arg {
    uint64_t id;
    int      depth, max_depth;
    long     nodes;   /* the subtree's, this node included */
} uts_arg;

static void uts_job(kiln_ctx *ctx, void *p) {
    uts_arg *a = p;
    uint64_t ids[UTS_MAX_CHILDREN];
    int count = gb_uts_expand(a->id, a->depth, a->max_depth, ids);
    a->nodes = 1;
    if (count <= 0) return;
    uts_arg kids[UTS_MAX_CHILDREN];
    kiln_job jobs[UTS_MAX_CHILDREN];
    for (int k = 0; k < count; k++) {
        kids[k] = (uts_arg){ ids[k], a->depth + 1, a->max_depth, 0 };
        jobs[k] = (kiln_job){ uts_job, &kids[k] };
    }
    kiln_counter counter = { { 0, 0, 0 } };
    kiln_run(ctx, jobs, (size_t)count, &counter);
    kiln_wait(ctx, &counter);
    for (int k = 0; k < count; k++) a->nodes += kids[k].nodes;
}

#ifdef BENCH_HAVE_OPENMP
static long uts_omp(uint64_t id, int depth, int max_depth) {
    uint64_t ids[UTS_MAX_CHILDREN];
    long nodes[UTS_MAX_CHILDREN];
    int count = gb_uts_expand(id, depth, max_depth, ids);
    for (int k = 0; k < count; k++) {
#pragma omp task shared(nodes, ids) firstprivate(k)
        nodes[k] = uts_omp(ids[k], depth + 1, max_depth);
    }
#pragma omp taskwait
    long total = 1;
    for (int k = 0; k < count; k++) total += nodes[k];
    return total;
}
#endif

static void j6_round(void *state, bench_series *s) {
    row *r = state;
    phase *ph = r->ph;
    const uint64_t root = uts_root();
    jobs_settle();
    long nodes = -1;
    uint64_t t0 = bench_now_ns();
    switch (r->impl) {
    case IMPL_KILN: {
        uts_arg a = { root, 0, ph->uts_depth, 0 };
        uts_job(ph->side.ctx, &a);
        nodes = a.nodes;
        break;
    }
#ifdef BENCH_HAVE_OPENMP
    case IMPL_OMP:
#pragma omp parallel num_threads(ph->side.threads)
#pragma omp single
        nodes = uts_omp(root, 0, ph->uts_depth);
        break;
#endif
#ifdef BENCH_HAVE_TBB
    case IMPL_TBB: nodes = gb_tbb_uts(ph->side.tbb, root, ph->uts_depth); break;
#endif
    case IMPL_SEQ: nodes = uts_seq(root, 0, ph->uts_depth); break;
    default: bench_die("J6: no such row");
    }
    uint64_t ns = bench_now_ns() - t0;
    if (nodes != ph->uts_expect)
        bench_die("J6: the tree has %ld nodes, the sequential walk %ld", nodes, ph->uts_expect);
    bench_add_sample(s, (double)ns, (double)nodes);
}

static void run_j6(phase *ph) {
    char title[80], detail[300];
    ph->uts_expect = uts_seq(uts_root(), 0, ph->uts_depth);
    snprintf(title, sizeof title, "J6 UTS, geometric tree of depth %d (T=%d threads)",
             ph->uts_depth, ph->side.threads);
    snprintf(detail, sizeof detail,
             "%ld nodes, child counts geometric with mean 4 from a splitmix64 hash of the "
             "node's id; every node a job (no cutoff) waiting for its children; node count "
             "checked; sample = one walk", ph->uts_expect);
    run_table(ph, title, detail, "node", ph->size->rounds, j6_round, &task_rows, true);
}

/* ---- J7 mergesort ---------------------------------------------------------------------------------------- */

typedef struct merge_arg {
    const int32_t *a, *b;
    size_t         na, nb;
    int32_t       *out;
} merge_arg;

static void merge_job(kiln_ctx *ctx, void *p) {
    merge_arg *m = p;
    if (m->na < m->nb) {   /* split the larger run */
        const int32_t *t = m->a;
        size_t tn = m->na;
        m->a = m->b, m->na = m->nb;
        m->b = t, m->nb = tn;
    }
    if (m->na + m->nb <= SORT_CUTOFF) {
        gb_merge_seq(m->a, m->na, m->b, m->nb, m->out);
        return;
    }
    size_t ma = m->na / 2, mb = gb_lower_bound(m->b, m->nb, m->a[ma]);
    merge_arg halves[2] = { { m->a, m->b, ma, mb, m->out },
                            { m->a + ma, m->b + mb, m->na - ma, m->nb - mb, m->out + ma + mb } };
    kiln_job jobs[2] = { { merge_job, &halves[0] }, { merge_job, &halves[1] } };
    kiln_counter counter = { { 0, 0, 0 } };
    kiln_run(ctx, jobs, 2, &counter);
    kiln_wait(ctx, &counter);
}

typedef struct sort_arg {
    int32_t *src, *dst;
    size_t   n;
    int      to_dst;
} sort_arg;

static void sort_job(kiln_ctx *ctx, void *p) {
    sort_arg *a = p;
    if (a->n <= SORT_CUTOFF) {
        gb_sort_seq(a->src, a->dst, a->n, a->to_dst);
        return;
    }
    size_t half = a->n / 2;
    sort_arg halves[2] = { { a->src, a->dst, half, !a->to_dst },
                           { a->src + half, a->dst + half, a->n - half, !a->to_dst } };
    kiln_job jobs[2] = { { sort_job, &halves[0] }, { sort_job, &halves[1] } };
    kiln_counter counter = { { 0, 0, 0 } };
    kiln_run(ctx, jobs, 2, &counter);
    kiln_wait(ctx, &counter);
    int32_t *from = a->to_dst ? a->src : a->dst, *to = a->to_dst ? a->dst : a->src;
    merge_arg m = { from, from + half, half, a->n - half, to };
    merge_job(ctx, &m);   /* inline, as the other sides do */
}

#ifdef BENCH_HAVE_OPENMP
static void merge_omp(const int32_t *a, size_t na, const int32_t *b, size_t nb, int32_t *out) {
    if (na < nb) {
        merge_omp(b, nb, a, na, out);
        return;
    }
    if (na + nb <= SORT_CUTOFF) {
        gb_merge_seq(a, na, b, nb, out);
        return;
    }
    size_t ma = na / 2, mb = gb_lower_bound(b, nb, a[ma]);
#pragma omp task
    merge_omp(a, ma, b, mb, out);
#pragma omp task
    merge_omp(a + ma, na - ma, b + mb, nb - mb, out + ma + mb);
#pragma omp taskwait
}

static void sort_omp(int32_t *src, int32_t *dst, size_t n, int to_dst) {
    if (n <= SORT_CUTOFF) {
        gb_sort_seq(src, dst, n, to_dst);
        return;
    }
    size_t half = n / 2;
#pragma omp task
    sort_omp(src, dst, half, !to_dst);
#pragma omp task
    sort_omp(src + half, dst + half, n - half, !to_dst);
#pragma omp taskwait
    int32_t *from = to_dst ? src : dst, *to = to_dst ? dst : src;
    merge_omp(from, half, from + half, n - half, to);
}
#endif

/* Order-independent: the sum of splitmix64 of every value. */
static uint64_t sort_checksum(const int32_t *v, size_t n) {
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) sum += splitmix64_mix((uint64_t)(uint32_t)v[i] + SPLITMIX64_STEP);
    return sum;
}

static void j7_round(void *state, bench_series *s) {
    row *r = state;
    phase *ph = r->ph;
    const size_t n = ph->size->sort_n;
    int32_t *data = ph->sort_data, *scratch = ph->sort_scratch;
    memcpy(data, ph->sort_input, n * sizeof *data);
    jobs_settle();
    uint64_t t0 = bench_now_ns();
    switch (r->impl) {
    case IMPL_KILN: {
        sort_arg a = { data, scratch, n, 0 };
        sort_job(ph->side.ctx, &a);
        break;
    }
#ifdef BENCH_HAVE_OPENMP
    case IMPL_OMP:
#pragma omp parallel num_threads(ph->side.threads)
#pragma omp single
        sort_omp(data, scratch, n, 0);
        break;
#endif
#ifdef BENCH_HAVE_TBB
    case IMPL_TBB: gb_tbb_sort(ph->side.tbb, data, scratch, n, SORT_CUTOFF); break;
#endif
    case IMPL_SEQ: gb_sort_seq(data, scratch, n, 0); break;
    default: bench_die("J7: no such row");
    }
    uint64_t ns = bench_now_ns() - t0;
    for (size_t i = 1; i < n; i++)
        if (data[i - 1] > data[i]) bench_die("J7: out of order at index %zu", i);
    if (sort_checksum(data, n) != ph->sort_sum) bench_die("J7: the sorted values are not the input's");
    bench_add_sample(s, (double)ns, (double)n);
}

static void run_j7(phase *ph) {
    char title[80], detail[300];
    snprintf(title, sizeof title, "J7 mergesort of %zu ints (T=%d threads)", ph->size->sort_n,
             ph->side.threads);
    snprintf(detail, sizeof detail,
             "cilksort-style: halves sorted in parallel, then a parallel merge (larger run split "
             "at its middle, the other binary-searched); sequential below %d elements; order and "
             "checksum checked; sample = one sort%s", SORT_CUTOFF,
             ph->side.threads == 1 ? "" : "; the sequential row: T=1's table");
    run_table(ph, title, detail, "elem", ph->size->sort_rounds, j7_round, &task_rows,
              ph->side.threads == 1);
}

/* ---- J8 wavefront ---------------------------------------------------------------------------------------------- */

static void wave_job(kiln_ctx *ctx, void *p) {
    (void)ctx;
    const wave_block *b = p;
    gb_wave_tile(b->grid, b->bi, b->bj);
}

/* Every block of the grid, each after its top and left blocks' counters. */
static void wave_kiln_submit(phase *ph) {
    const int nb = ph->grid.blocks;
    kiln_counter *c = ph->wave_counters;
    memset(c, 0, (size_t)nb * (size_t)nb * sizeof *c);
    for (int i = 0; i < nb; i++)
        for (int j = 0; j < nb; j++) {
            const kiln_counter *after[2];
            uint32_t count = 0;
            if (i > 0) after[count++] = &c[(i - 1) * nb + j];
            if (j > 0) after[count++] = &c[i * nb + j - 1];
            kiln_job job = { wave_job, &ph->wave_blocks[i * nb + j] };
            kiln_run_desc desc = { .after = after, .after_count = count };
            kiln_run_ex(ph->side.ctx, &job, 1, &c[i * nb + j], &desc);
        }
}

static void wave_kiln(phase *ph) {
    wave_kiln_submit(ph);
    const int nb = ph->grid.blocks;
    kiln_wait(ph->side.ctx, &ph->wave_counters[nb * nb - 1]);   /* the last block comes after every other */
}

/* The grid as a game runs it: one frame per grid, and frame end (which runs and waits
 * for the frame's jobs) instead of a wait on the last block. */
static void wave_kiln_frame(phase *ph) {
    kiln_frame_begin(ph->side.ctx);
    wave_kiln_submit(ph);
    kiln_frame_end(ph->side.ctx);
}

#ifdef BENCH_HAVE_OPENMP
/* deps: one byte per block and a border row and column that no task writes (an in on
 * them is no dependence), (blocks + 1) squared. */
static void wave_omp(const wave_grid *g, int threads, char *deps) {
    const int nb = g->blocks, stride = nb + 1;
    (void)deps;   /* used in the depend clauses only, which gcc 12's unused check misses */
#pragma omp parallel num_threads(threads)
#pragma omp single
    for (int i = 0; i < nb; i++)
        for (int j = 0; j < nb; j++) {
#pragma omp task depend(in : deps[i * stride + j + 1], deps[(i + 1) * stride + j]) \
                 depend(out : deps[(i + 1) * stride + j + 1])
            gb_wave_tile(g, i, j);
        }
}
#endif

static void wave_seq(const wave_grid *g) {
    for (int i = 0; i < g->blocks; i++)
        for (int j = 0; j < g->blocks; j++) gb_wave_tile(g, i, j);
}

/* Zeroes every cell but the border (row 0 and column 0, numbered once). */
static void wave_reset(const wave_grid *g) {
    const size_t side = g->stride;
    memset(g->cells + side, 0, (side - 1) * side * sizeof *g->cells);
    for (size_t k = 0; k < side; k++) {
        g->cells[k] = (uint32_t)(k * 7 + 1);
        g->cells[k * side] = (uint32_t)(k * 13 + 5);
    }
}

static void j8_round(void *state, bench_series *s) {
    row *r = state;
    phase *ph = r->ph;
    const wave_grid *g = &ph->grid;
    const size_t nb = (size_t)g->blocks, cells = g->stride * g->stride;
    wave_reset(g);
    char *deps = NULL;
#ifdef BENCH_HAVE_OPENMP
    deps = calloc((nb + 1) * (nb + 1), 1);
    if (!deps) bench_die("J8: out of memory for the dependence bytes");
#endif
    jobs_settle();
    uint64_t t0 = bench_now_ns();
    switch (r->impl) {
    case IMPL_KILN: wave_kiln(ph); break;
    case IMPL_KILN_FRAME: wave_kiln_frame(ph); break;
#ifdef BENCH_HAVE_OPENMP
    case IMPL_OMP: wave_omp(g, ph->side.threads, deps); break;
#endif
#ifdef BENCH_HAVE_TBB
    case IMPL_TBB: gb_tbb_wave(ph->side.tbb, g); break;
    case IMPL_TBB_PREBUILT: gb_tbb_wave_run(ph->side.tbb, ph->tbb_graph); break;
#endif
    case IMPL_SEQ: wave_seq(g); break;
    default: bench_die("J8: no such row");
    }
    uint64_t ns = bench_now_ns() - t0;
    free(deps);
    if (memcmp(g->cells, ph->wave_expect, cells * sizeof *g->cells) != 0)
        bench_die("J8: the table differs from the sequential one");
    bench_add_sample(s, (double)ns, (double)(nb * nb));
}

static void run_j8(phase *ph) {
    const run_size *size = ph->size;
    const size_t nb = (size_t)size->wave_blocks, side = nb * (size_t)size->wave_tile + 1;
    ph->grid = (wave_grid){ malloc(side * side * sizeof(uint32_t)), side, size->wave_blocks,
                            size->wave_tile };
    uint32_t *expect = malloc(side * side * sizeof *expect);
    ph->wave_blocks = malloc(nb * nb * sizeof *ph->wave_blocks);
    ph->wave_counters = malloc(nb * nb * sizeof *ph->wave_counters);
    if (!ph->grid.cells || !expect || !ph->wave_blocks || !ph->wave_counters)
        bench_die("J8: out of memory for the table");
    for (size_t i = 0; i < nb * nb; i++)
        ph->wave_blocks[i] = (wave_block){ &ph->grid, (int)(i / nb), (int)(i % nb) };
    wave_reset(&ph->grid);
    wave_seq(&ph->grid);
    memcpy(expect, ph->grid.cells, side * side * sizeof *expect);
    ph->wave_expect = expect;
#ifdef BENCH_HAVE_TBB
    if (ph->side.tbb) ph->tbb_graph = gb_tbb_wave_build(ph->side.tbb, &ph->grid);
#endif

    char title[80], detail[600];
    snprintf(title, sizeof title, "J8 wavefront of %zu x %zu blocks (T=%d threads)", nb, nb,
             ph->side.threads);
    snprintf(detail, sizeof detail,
             "block (i,j) of %d x %d table cells after (i-1,j) and (i,j-1); table checked against "
             "a sequential pass; sample = one grid\n"
             "kiln: a kiln_run_ex per block, .after its top and left counters, one kiln_wait on "
             "the last (a frame per grid: kiln_frame_begin, the runs, kiln_frame_end); OpenMP: a task per block, depend(in: top, left) depend(out: self);\n"
             "oneTBB: a continue_node per block, make_edge from top and left, the graph built "
             "in the round (prebuilt: built once, untimed, run again each round)",
             size->wave_tile, size->wave_tile);
    static const row_names wave_rows = { "kiln kiln_run_ex .after", "OpenMP task depend",
                                         "oneTBB flow graph, built+run", "oneTBB flow graph, prebuilt",
                                         "kiln .after, a frame per grid" };
    run_table(ph, title, detail, "block", size->rounds, j8_round, &wave_rows, true);

#ifdef BENCH_HAVE_TBB
    if (ph->tbb_graph) gb_tbb_wave_free(ph->tbb_graph);
    ph->tbb_graph = NULL;
#endif
    free(ph->grid.cells);
    free(expect);
    free(ph->wave_blocks);
    free(ph->wave_counters);
}

/* ---- main ------------------------------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    static const char *const names[] = { "j5", "j6", "j7", "j8", NULL };
    jobs_options opt;
    jobs_options_parse(&opt, argc, argv, "graph_bench", names);
    const run_size *size = opt.quick ? &quick_run : &full_run;
    const char *only = opt.only;
    const int *threads = opt.threads, phases = opt.phases;
    quick = opt.quick;
    kiln_only = opt.kiln_only;
    cpus = opt.cpus;

    /* J7's input: 32-bit values from a fixed seed, and the arrays it sorts in. */
    const size_t sort_n = size->sort_n;
    int32_t *sort_input = malloc(sort_n * sizeof *sort_input);
    int32_t *sort_data = malloc(sort_n * sizeof *sort_data);
    int32_t *sort_scratch = malloc(sort_n * sizeof *sort_scratch);
    if (!sort_input || !sort_data || !sort_scratch) bench_die("out of memory for J7's arrays");
    bench_rng rng = { 0x6b696c6e4a374a37ull };
    for (size_t i = 0; i < sort_n; i++) sort_input[i] = (int32_t)(uint32_t)bench_rng_next(&rng);
    const uint64_t sort_sum = sort_checksum(sort_input, sort_n);

    uint64_t t0 = bench_now_ns();
    for (int p = 0; p < phases; p++) {
        phase ph;
        memset(&ph, 0, sizeof ph);
        ph.size = size;
        ph.uts_depth = threads[p] > cpus ? size->uts_depth_over : size->uts_depth;
        ph.sort_input = sort_input;
        ph.sort_data = sort_data;
        ph.sort_scratch = sort_scratch;
        ph.sort_sum = sort_sum;
        jobs_side_open(&ph.side, threads[p], cpus, kiln_only);
        if (!only || strcmp(only, "j5") == 0) run_j5(&ph);
        if (!only || strcmp(only, "j6") == 0) run_j6(&ph);
        if (!only || strcmp(only, "j7") == 0) run_j7(&ph);
        if (!only || strcmp(only, "j8") == 0) run_j8(&ph);
        jobs_side_close(&ph.side);
    }
    free(sort_input);
    free(sort_data);
    free(sort_scratch);
    printf("\ngraph_bench: done in %.1f s\n", (double)(bench_now_ns() - t0) / 1e9);
    return 0;
}
