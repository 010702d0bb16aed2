/* bench/jobs_bench.c — the job family of BENCH.md: J1 empty jobs, J2 fib, J3 parallel_for,
 * J4 a backlog of pinned jobs, F1 the frame end's own cost and W1 a wait on a long job
 * (kiln only),
 * kiln against OpenMP (gcc's libgomp) and oneTBB (bench/jobs_tbb.cpp, behind a C
 * interface; the set-up both job programs share: jobs_common.h), all in this process, rounds alternating kiln, OpenMP, oneTBB, ...
 *
 * Usage:
 *   jobs_bench [--quick] [--only j1|j2|j3|j4|f1|w1] [--threads LIST] [--kiln-only]
 *       --quick: every workload and peer with tiny sizes, seconds in all
 *       --threads 1,2,4: the thread counts (default 1, 2 and twice the online CPUs)
 *       --kiln-only: no peer rows (for profiling kiln under callgrind or perf)
 *
 * Thread counts match on every side: T threads in all, the calling thread included.
 * kiln: worker_count = T-1 plus the attached main thread (T = 1: KILN_NO_WORKERS);
 * OpenMP: num_threads(T); oneTBB: global_control(max_allowed_parallelism, T) and a
 * task_arena of concurrency T. Each thread count is a phase with its own kiln runtime
 * and TBB arena; the OpenMP pool is libgomp's.
 *
 * Fairness between rows in one process: every idle runtime's threads spin for a while
 * before they sleep (libgomp's for milliseconds), so every round of every row first
 * waits, untimed, until the process is quiet (jobs_settle(), jobs_common.h). Each row therefore starts its
 * rounds with its own workers asleep, and no row is timed against another's spinning.
 *
 * Figures: J1 ns per job, with one sample per batch of 64 (p99/max: the batch's own
 * latency); J2 ns per job (jobs = calls - 1; the root call runs inline on every side),
 * one sample per round (the whole tree), median total ms in the note column, and a
 * sequential row (plain recursion) for reference; J3 ns per element, one sample per
 * parallel_for call, the number of threads that ran ranges in the note column. After
 * each table, kiln's per-context figures over that workload's kiln rounds.
 *
 * Sizes of the full run (about 60 s on 2 cores, half of it the peers' slowest rows):
 * J1 1 000 000 jobs per round; J2 fib(30) up to T = the core count, fib(25) above it
 * (oversubscribed: libgomp's rows alone would add some 9 s there); J3 10 000 000 floats,
 * grain 1024 four calls per round, grain 1 one call. 5 rounds after a warm-up round.
 * F1: 200 frames per round, each frame end one sample (its p99 and max are the frame
 * end's worst cases): an empty frame and a frame of 1 000 empty jobs, each alone and
 * while another attached thread submits and waits on jobs of its own without pause.
 * W1 (T >= 2): one wait per round on a background job that sleeps 200 ms on a worker:
 * the waiting thread's CPU time per ms waited (it spins idle_spin_us, then sleeps), and
 * the wake-up: ns from the job's return to the wait's. */
#define _GNU_SOURCE
#include <kiln/kiln.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "jobs_common.h"

/* ---- The oneTBB side: bench/jobs_tbb.cpp (keep the two lists identical; its arena:
 * jobs_common.h) */
void  jb_empty(void);
void  jb_range_add(const float *data, size_t begin, size_t end);
#ifdef BENCH_HAVE_TBB
void  jb_tbb_j1(void *handle, int batches, int batch, uint64_t *stamps);
long  jb_tbb_fib(void *handle, int n);
void  jb_tbb_sum(void *handle, const float *data, size_t n, size_t grain);
#endif

/* ---- Sizes ------------------------------------------------------------------------ */

#define J1_BATCH   64

typedef struct run_size {
    int    rounds;           /* measured rounds per workload, after one warm-up round */
    int    j1_batches;       /* batches of J1_BATCH empty jobs per round */
    int    fib_n;            /* J2 with T up to the core count */
    int    fib_n_over;       /* J2 with T above it (oversubscribed) */
    size_t j3_n;             /* floats summed per parallel_for call */
    int    j3_passes_coarse; /* parallel_for calls per round, grain 1024 */
    int    j3_passes_fine;   /* parallel_for calls per round, grain 1 */
    size_t j3_n_fine;        /* floats for grain 1 */
} run_size;

static const run_size full_run = {
    .rounds = 5, .j1_batches = 15625 /* 1 000 000 jobs */, .fib_n = 30, .fib_n_over = 25,
    .j3_n = 10000000, .j3_passes_coarse = 4, .j3_passes_fine = 1, .j3_n_fine = 10000000,
};
static const run_size quick_run = {
    .rounds = 5, .j1_batches = 100, .fib_n = 16, .fib_n_over = 14,
    .j3_n = 200000, .j3_passes_coarse = 1, .j3_passes_fine = 1, .j3_n_fine = 50000,
};

static bool kiln_only;
static bool quick;
static long cpus = 1;

/* ---- Shared bodies ---------------------------------------------------------------- */

/* The body of an OpenMP or oneTBB empty job (kiln's job function is empty itself). */
__attribute__((noinline)) void jb_empty(void) { __asm__ volatile(""); }

static __attribute__((noinline)) void kiln_empty_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
    __asm__ volatile("");
}

/* J3's per-thread partial sums: one cache line per thread that ever ran a range, found
 * through a thread-local index. Written by its own thread during a parallel_for, read and
 * reset by the main thread between calls (each side's join orders the two). */
#define SUM_SLOTS 256
typedef struct sum_slot {
    _Alignas(64) int64_t sum;
    uint64_t ranges;
} sum_slot;
static sum_slot      sum_slots[SUM_SLOTS];
static _Atomic int   sum_slots_used;
static _Thread_local int my_slot = -1;

static inline sum_slot *thread_slot(void) {
    if (__builtin_expect(my_slot < 0, 0)) {
        my_slot = atomic_fetch_add(&sum_slots_used, 1);
        if (my_slot >= SUM_SLOTS) bench_die("J3: more than %d threads ran ranges", SUM_SLOTS);
    }
    return &sum_slots[my_slot];
}

/* The values are whole numbers 1..16, so every partial sum is exact in a double and the
 * total can be checked exactly whatever the order of the additions. */
static inline void range_sum(const float *data, size_t begin, size_t end) {
    double a = 0, b = 0, c = 0, d = 0;
    size_t i = begin;
    for (; i + 4 <= end; i += 4) {
        a += data[i];
        b += data[i + 1];
        c += data[i + 2];
        d += data[i + 3];
    }
    for (; i < end; i++) a += data[i];
    sum_slot *slot = thread_slot();
    slot->sum += (int64_t)(a + b + c + d);
    slot->ranges++;
}

/* OpenMP's and oneTBB's range body; kiln's is kiln_range below: the same code, one call
 * per range on every side. */
__attribute__((noinline)) void jb_range_add(const float *data, size_t begin, size_t end) {
    range_sum(data, begin, end);
}

static __attribute__((noinline)) void kiln_range(kiln_ctx *ctx, size_t begin, size_t end,
                                                 void *arg) {
    (void)ctx;
    range_sum(arg, begin, end);
}

static void slots_reset(void) {
    int used = atomic_load(&sum_slots_used);
    for (int i = 0; i < used && i < SUM_SLOTS; i++) sum_slots[i].sum = 0, sum_slots[i].ranges = 0;
}

/* The total of every slot; *threads: how many threads ran at least one range. */
static int64_t slots_total(int *threads) {
    int used = atomic_load(&sum_slots_used);
    int64_t total = 0;
    *threads = 0;
    for (int i = 0; i < used && i < SUM_SLOTS; i++) {
        total += sum_slots[i].sum;
        if (sum_slots[i].ranges) ++*threads;
    }
    return total;
}

/* ---- A phase: one thread count, one kiln runtime, one TBB arena --------------------- */

enum impl { IMPL_KILN, IMPL_OMP, IMPL_OMP_STATIC, IMPL_TBB, IMPL_SEQ };

typedef struct phase {
    jobs_side       side;         /* the thread count, kiln's runtime, oneTBB's arena */
    const run_size *size;
    uint64_t       *stamps;       /* J1: j1_batches + 1 */
    int             fib_n;        /* J2 */
    long            fib_expect;
    double          fib_jobs;
    const float    *data;         /* J3 */
    size_t          n, grain;
    int64_t         expect;
    int             passes;
} phase;

typedef struct row {
    phase *ph;
    enum impl impl;
    int   threads_seen;           /* J3: most threads that ran ranges in one call */
} row;

/* ---- J1 empty jobs ----------------------------------------------------------------- */

static void j1_kiln(phase *ph) {
    static kiln_job jobs[J1_BATCH];
    for (int i = 0; i < J1_BATCH; i++) jobs[i] = (kiln_job){ kiln_empty_job, NULL };
    kiln_ctx *ctx = ph->side.ctx;
    uint64_t *t = ph->stamps;
    const int batches = ph->size->j1_batches;
    kiln_counter counter = { { 0, 0 } };
    t[0] = bench_now_ns();
    for (int b = 0; b < batches; b++) {
        kiln_run(ctx, jobs, J1_BATCH, &counter);
        kiln_wait(ctx, &counter);
        t[b + 1] = bench_now_ns();
    }
}

#ifdef BENCH_HAVE_OPENMP
static void j1_omp(phase *ph) {
    uint64_t *t = ph->stamps;
    const int batches = ph->size->j1_batches;
#pragma omp parallel num_threads(ph->side.threads)
#pragma omp single
    {
        t[0] = bench_now_ns();
        for (int b = 0; b < batches; b++) {
            for (int i = 0; i < J1_BATCH; i++) {
#pragma omp task
                jb_empty();
            }
#pragma omp taskwait
            t[b + 1] = bench_now_ns();
        }
    }
}
#endif

static void j1_round(void *state, bench_series *s) {
    row *r = state;
    phase *ph = r->ph;
    jobs_settle();
    switch (r->impl) {
    case IMPL_KILN: j1_kiln(ph); break;
#ifdef BENCH_HAVE_OPENMP
    case IMPL_OMP: j1_omp(ph); break;
#endif
#ifdef BENCH_HAVE_TBB
    case IMPL_TBB: jb_tbb_j1(ph->side.tbb, ph->size->j1_batches, J1_BATCH, ph->stamps); break;
#endif
    default: bench_die("J1: no such row");
    }
    const int batches = ph->size->j1_batches;
    for (int b = 0; b < batches; b++)
        bench_add_sample(s, (double)(ph->stamps[b + 1] - ph->stamps[b]), J1_BATCH);
    bench_add_round(s, (double)(ph->stamps[batches] - ph->stamps[0]), (double)batches * J1_BATCH);
}

/* ---- J2 fib ------------------------------------------------------------------------ */

typedef struct fib_arg {
    int  n;
    long result;
} fib_arg;

static void fib_job(kiln_ctx *ctx, void *p) {
    fib_arg *a = p;
    if (a->n < 2) {
        a->result = a->n;
        return;
    }
    fib_arg x = { a->n - 1, 0 }, y = { a->n - 2, 0 };
    kiln_job jobs[2] = { { fib_job, &x }, { fib_job, &y } };
    kiln_counter counter = { { 0, 0 } };
    kiln_run(ctx, jobs, 2, &counter);
    kiln_wait(ctx, &counter);
    a->result = x.result + y.result;
}

#ifdef BENCH_HAVE_OPENMP
static long fib_omp(int n) {
    if (n < 2) return n;
    long x = 0, y = 0;
#pragma omp task shared(x)
    x = fib_omp(n - 1);
#pragma omp task shared(y)
    y = fib_omp(n - 2);
#pragma omp taskwait
    return x + y;
}
#endif

static __attribute__((noinline)) long fib_seq(int n) {
    return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2);
}

static void j2_round(void *state, bench_series *s) {
    row *r = state;
    phase *ph = r->ph;
    jobs_settle();
    long result = -1;
    uint64_t t0 = bench_now_ns();
    switch (r->impl) {
    case IMPL_KILN: {
        fib_arg root = { ph->fib_n, 0 };
        fib_job(ph->side.ctx, &root);   /* the root inline, as on every side */
        result = root.result;
        break;
    }
#ifdef BENCH_HAVE_OPENMP
    case IMPL_OMP:
#pragma omp parallel num_threads(ph->side.threads)
#pragma omp single
        result = fib_omp(ph->fib_n);
        break;
#endif
#ifdef BENCH_HAVE_TBB
    case IMPL_TBB: result = jb_tbb_fib(ph->side.tbb, ph->fib_n); break;
#endif
    case IMPL_SEQ: result = fib_seq(ph->fib_n); break;
    default: bench_die("J2: no such row");
    }
    uint64_t ns = bench_now_ns() - t0;
    if (result != ph->fib_expect)
        bench_die("J2: fib(%d) = %ld, expected %ld", ph->fib_n, result, ph->fib_expect);
    bench_add_sample(s, (double)ns, ph->fib_jobs);
}

/* ---- J3 parallel_for ---------------------------------------------------------------- */

#ifdef BENCH_HAVE_OPENMP
/* The same ranges of grain elements as the others' leaves, one call of the range body
 * each: schedule(dynamic, 1) over ranges is schedule(dynamic, grain) over elements. */
static void j3_omp(const phase *ph, bool dynamic) {
    const float *data = ph->data;
    const size_t n = ph->n, grain = ph->grain, ranges = (n + grain - 1) / grain;
    if (dynamic) {
#pragma omp parallel for num_threads(ph->side.threads) schedule(dynamic, 1)
        for (size_t c = 0; c < ranges; c++)
            jb_range_add(data, c * grain, c * grain + grain < n ? c * grain + grain : n);
    } else {
#pragma omp parallel for num_threads(ph->side.threads) schedule(static)
        for (size_t c = 0; c < ranges; c++)
            jb_range_add(data, c * grain, c * grain + grain < n ? c * grain + grain : n);
    }
}
#endif

static void j3_round(void *state, bench_series *s) {
    row *r = state;
    phase *ph = r->ph;
    jobs_settle();
    for (int pass = 0; pass < ph->passes; pass++) {
        slots_reset();
        uint64_t t0 = bench_now_ns();
        switch (r->impl) {
        case IMPL_KILN: kiln_parallel_for(ph->side.ctx, ph->n, ph->grain, kiln_range, (void *)ph->data); break;
#ifdef BENCH_HAVE_OPENMP
        case IMPL_OMP: j3_omp(ph, true); break;
        case IMPL_OMP_STATIC: j3_omp(ph, false); break;
#endif
#ifdef BENCH_HAVE_TBB
        case IMPL_TBB: jb_tbb_sum(ph->side.tbb, ph->data, ph->n, ph->grain); break;
#endif
        default: bench_die("J3: no such row");
        }
        uint64_t ns = bench_now_ns() - t0;
        int threads;
        int64_t total = slots_total(&threads);
        if (total != ph->expect)
            bench_die("J3: the sum is %lld, expected %lld", (long long)total, (long long)ph->expect);
        if (threads > r->threads_seen) r->threads_seen = threads;
        bench_add_sample(s, (double)ns, (double)ph->n);
    }
}

/* ---- Tables --------------------------------------------------------------------------- */

/* The rows every workload has: kiln, OpenMP (one or two), oneTBB; skipped ones noted. */
static void add_rows(bench_workload *w, phase *ph, row *rows, bench_round_fn fn,
                     const char *kiln_name, const char *omp_name, const char *omp_static_name,
                     const char *tbb_name) {
    int n = 0;
    rows[n] = (row){ ph, IMPL_KILN, 0 };
    bench_add_entry(w, kiln_name, fn, &rows[n++]);
    if (kiln_only) return;
#ifdef BENCH_HAVE_OPENMP
    rows[n] = (row){ ph, IMPL_OMP, 0 };
    bench_add_entry(w, omp_name, fn, &rows[n++]);
    if (omp_static_name) {
        rows[n] = (row){ ph, IMPL_OMP_STATIC, 0 };
        bench_add_entry(w, omp_static_name, fn, &rows[n++]);
    }
#else
    bench_add_skipped(w, omp_name, "OpenMP not found at configure time (dependency('openmp'))");
    (void)omp_static_name;
#endif
    if (ph->side.tbb) {
        rows[n] = (row){ ph, IMPL_TBB, 0 };
        bench_add_entry(w, tbb_name, fn, &rows[n++]);
    } else {
        bench_add_skipped(w, tbb_name, "%s", ph->side.tbb_skip);
    }
}

/* ---- J4 pinned backlog ------------------------------------------------------------------ */

/* n empty jobs pinned to the submitting thread, all queued before one wait drains them:
 * the cost per job must not grow with the backlog (an inbox take is O(1)). */
static void j4_round(void *state, bench_series *s) {
    row *r = state;
    phase *ph = r->ph;
    static kiln_job jobs[1024];
    for (int i = 0; i < 1024; i++) jobs[i] = (kiln_job){ kiln_empty_job, NULL };
    kiln_counter counter = { { 0, 0 } };
    kiln_run_desc pin = { .pinned_to = ph->side.ctx };
    uint64_t t0 = bench_now_ns();
    for (size_t done = 0; done < ph->n; done += 1024)
        kiln_run_ex(ph->side.ctx, jobs, ph->n - done < 1024 ? ph->n - done : 1024, &counter, &pin);
    kiln_wait(ph->side.ctx, &counter);
    double ns = (double)(bench_now_ns() - t0);
    bench_add_sample(s, ns, (double)ph->n);
    bench_add_round(s, ns, (double)ph->n);
}

static void run_workload(bench_workload *w, phase *ph) {
    jobs_ctx_snapshot before, after;
    jobs_snapshot(ph->side.rt, &before);
    bench_run(w);
    jobs_snapshot(ph->side.rt, &after);
    bench_print(w);
    jobs_print_ctx_delta(&before, &after, w->rounds);
}

static void run_workload(bench_workload *w, phase *ph);

/* ---- F1 frame end ------------------------------------------------------------------------ */

#define F1_FRAMES 200

/* Another thread that submits and waits on jobs of its own without pause, as a render
 * or streaming thread does, until told to stop: a frame end must not wait for them. */
typedef struct f1_noise {
    kiln_runtime *rt;
    _Atomic int   stop, attached;
    uint64_t      batches;
} f1_noise;

static void *f1_noise_main(void *arg) {
    f1_noise *n = arg;
    kiln_ctx *ctx = kiln_attach(n->rt);
    if (!ctx) bench_die("F1: kiln_attach failed");
    atomic_store(&n->attached, 1);
    kiln_job jobs[8];
    for (int i = 0; i < 8; i++) jobs[i] = (kiln_job){ kiln_empty_job, NULL };
    while (!atomic_load(&n->stop)) {
        kiln_counter counter = { { 0, 0 } };
        kiln_run(ctx, jobs, 8, &counter);
        kiln_wait(ctx, &counter);
        n->batches++;
    }
    kiln_detach(ctx);
    return NULL;
}

typedef struct f1_row {
    phase *ph;
    int    jobs;     /* the frame's own: 0 or 1000 */
    bool   noise;    /* with the submitting thread */
} f1_row;

static void f1_round(void *state, bench_series *s) {
    f1_row *r = state;
    phase *ph = r->ph;
    static kiln_job jobs[1000];
    for (int i = 0; i < 1000; i++) jobs[i] = (kiln_job){ kiln_empty_job, NULL };
    f1_noise noise = { .rt = ph->side.rt };
    pthread_t thread;
    if (r->noise) {
        if (pthread_create(&thread, NULL, f1_noise_main, &noise) != 0) bench_die("F1: no thread");
        while (!atomic_load(&noise.attached)) sched_yield();
    }
    for (int f = 0; f < F1_FRAMES; f++) {
        kiln_frame_begin(ph->side.ctx);
        if (r->jobs) kiln_run(ph->side.ctx, jobs, (size_t)r->jobs, NULL);
        uint64_t t0 = bench_now_ns();
        kiln_frame_end(ph->side.ctx);
        bench_add_sample(s, (double)(bench_now_ns() - t0), 1);
    }
    if (r->noise) {
        atomic_store(&noise.stop, 1);
        pthread_join(thread, NULL);
    }
}

static void run_f1(phase *ph) {
    bench_workload w = { 0 };
    char title[80];
    snprintf(title, sizeof title, "F1 frame end (T=%d threads)", ph->side.threads);
    w.title = title;
    w.detail = "kiln_frame_end alone, sample = one frame end (p99, max: its worst cases); 1000 jobs: "
               "submitted before it, no counter (frame end runs and waits for them);\n"
               "+ a submitter: another attached thread runs and waits on 8 empty jobs of its own "
               "without pause meanwhile (those belong to later frames as soon as the frame closes)";
    w.op = "frame end";
    w.sample = "frame end";
    w.rounds = ph->size->rounds;
    f1_row rows[4] = { { ph, 0, false }, { ph, 0, true }, { ph, 1000, false }, { ph, 1000, true } };
    bench_add_entry(&w, "empty frame", f1_round, &rows[0]);
    bench_add_entry(&w, "empty frame + a submitter", f1_round, &rows[1]);
    bench_add_entry(&w, "1000 jobs", f1_round, &rows[2]);
    bench_add_entry(&w, "1000 jobs + a submitter", f1_round, &rows[3]);
    run_workload(&w, ph);
    bench_workload_free(&w);
}

/* ---- W1 a wait on a long job ------------------------------------------------------------ */

/* A background job that sleeps (an asset load, say), run by a worker while the
 * submitting thread waits on it with nothing else to run. */
typedef struct w1_job {
    uint64_t sleep_ns;
    uint64_t ended;   /* the clock as it returned; read by the waiter after its wait */
} w1_job;

static void w1_sleeper(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    w1_job *job = arg;
    struct timespec pause = { (time_t)(job->sleep_ns / 1000000000u), (long)(job->sleep_ns % 1000000000u) };
    nanosleep(&pause, NULL);
    job->ended = bench_now_ns();
}

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct w1_row {
    phase *ph;
    bool   latency;   /* false: the waiter's CPU time */
} w1_row;

static void w1_round(void *state, bench_series *s) {
    w1_row *r = state;
    kiln_ctx *ctx = r->ph->side.ctx;
    w1_job job = { (quick ? 20u : 200u) * 1000000u, 0 };
    kiln_counter counter = { { 0, 0 } };
    uint64_t cpu0 = thread_cpu_ns(), t0 = bench_now_ns();
    kiln_run_ex(ctx, &(kiln_job){ w1_sleeper, &job }, 1, &counter, &(kiln_run_desc){ .background = true });
    kiln_wait(ctx, &counter);
    uint64_t t1 = bench_now_ns(), cpu1 = thread_cpu_ns();
    if (r->latency) bench_add_sample(s, (double)(t1 - job.ended), 1);
    else bench_add_sample(s, (double)(cpu1 - cpu0) / ((double)(t1 - t0) / 1e6), 1);
}

/* kiln only, with a worker to run the job. */
static void run_w1(phase *ph) {
    if (ph->side.threads < 2) return;
    static const char *const titles[2] = { "W1 a wait on a long job: the waiter's CPU",
                                           "W1 a wait on a long job: wake-up" };
    for (int i = 0; i < 2; i++) {
        bench_workload w = { 0 };
        char title[96];
        snprintf(title, sizeof title, "%s (T=%d threads)", titles[i], ph->side.threads);
        w.title = title;
        w.detail = i == 0 ? "kiln_wait on one background job that sleeps 200 ms on a worker; ns of the "
                            "waiting thread's CPU per ms waited (1 000 000: a whole core; 20 000: 2 %)"
                          : "the same wait; ns from the job's return to the waiter's return from "
                            "kiln_wait (it slept: woken by the counter's zero)";
        w.op = i == 0 ? "ms waited" : "wake-up";
        w.sample = "wait";
        w.rounds = ph->size->rounds;
        w1_row r = { ph, i == 1 };
        bench_add_entry(&w, "kiln kiln_wait", w1_round, &r);
        run_workload(&w, ph);
        bench_workload_free(&w);
    }
}

/* kiln only: no peer pins a job to a thread. Three backlogs, one row each. */
static void run_j4(phase *ph) {
    static const size_t backlogs[3] = { 10000, 40000, 160000 };
    for (int i = 0; i < 3; i++) {
        bench_workload w = { 0 };
        char title[80], detail[200];
        ph->n = quick ? backlogs[i] / 10 : backlogs[i];
        snprintf(title, sizeof title, "J4 pinned backlog of %zu (T=%d threads)", ph->n, ph->side.threads);
        snprintf(detail, sizeof detail,
                 "%zu empty jobs pinned to the submitting thread, queued before one kiln_wait "
                 "drains them; ns per job must stay flat as the backlog grows", ph->n);
        w.title = title;
        w.detail = detail;
        w.op = "job";
        w.sample = "round";
        w.rounds = ph->size->rounds;
        row r = { ph, IMPL_KILN, 0 };
        bench_add_entry(&w, "kiln pinned_to self + kiln_wait", j4_round, &r);
        run_workload(&w, ph);
        bench_workload_free(&w);
    }
}

static void run_j1(phase *ph) {
    bench_workload w = { 0 };
    char title[80], detail[200];
    snprintf(title, sizeof title, "J1 empty jobs (T=%d threads)", ph->side.threads);
    snprintf(detail, sizeof detail,
             "%d empty jobs per round, in batches of %d submitted from one thread, each batch "
             "waited on before the next; sample = one batch",
             ph->size->j1_batches * J1_BATCH, J1_BATCH);
    w.title = title;
    w.detail = detail;
    w.op = "job";
    w.sample = "batch";
    w.rounds = ph->size->rounds;
    row rows[4];
    add_rows(&w, ph, rows, j1_round, "kiln kiln_run+kiln_wait", "OpenMP task+taskwait", NULL,
             "oneTBB task_group run+wait");
    run_workload(&w, ph);
    bench_workload_free(&w);
}

static void run_j2(phase *ph) {
    bench_workload w = { 0 };
    char title[80], detail[240];
    long a = 0, b = 1;
    for (int i = 0; i < ph->fib_n; i++) {
        long c = a + b;
        a = b;
        b = c;
    }
    ph->fib_expect = a;
    /* calls(n) = 2 fib(n+1) - 1; every call but the root is a job */
    ph->fib_jobs = 2.0 * (double)b - 2.0;
    snprintf(title, sizeof title, "J2 fib(%d) (T=%d threads)", ph->fib_n, ph->side.threads);
    snprintf(detail, sizeof detail,
             "one job per recursive call, no cutoff, each waits on its two children: %.0f jobs "
             "per tree; sample = one tree; note: median ms per tree",
             ph->fib_jobs);
    w.title = title;
    w.detail = detail;
    w.op = "job";
    w.sample = "tree";
    w.note_head = "median ms";
    w.rounds = ph->size->rounds;
    row rows[5];
    add_rows(&w, ph, rows, j2_round, "kiln kiln_run+kiln_wait", "OpenMP task+taskwait", NULL,
             "oneTBB task_group run+wait");
    rows[4] = (row){ ph, IMPL_SEQ, 0 };
    bench_add_entry(&w, "sequential (reference)", j2_round, &rows[4]);
    jobs_ctx_snapshot before, after;
    jobs_snapshot(ph->side.rt, &before);
    bench_run(&w);
    jobs_snapshot(ph->side.rt, &after);
    for (int i = 0; i < w.count; i++)
        if (!w.entries[i].skip[0])
            snprintf(w.entries[i].note, sizeof w.entries[i].note, "%.1f",
                     jobs_median_round_ms(&w.entries[i].series));
    bench_print(&w);
    jobs_print_ctx_delta(&before, &after, w.rounds);
    bench_workload_free(&w);
}

static void run_j3(phase *ph, size_t n, size_t grain, int passes) {
    bench_workload w = { 0 };
    char title[80], detail[400];
    ph->n = n;
    ph->grain = grain;
    ph->passes = passes;
    ph->expect = 0;
    for (size_t i = 0; i < n; i++) ph->expect += (int64_t)ph->data[i];
    snprintf(title, sizeof title, "J3 parallel_for, grain %zu (T=%d threads)", grain, ph->side.threads);
    snprintf(detail, sizeof detail,
             "sum of %zu floats, ranges of at most %zu elements, each range's sum added to its "
             "thread's slot, total checked; sample = one call; note: threads that ran ranges\n"
             "OpenMP dynamic: schedule(dynamic, 1) over ranges of %zu elements, i.e. "
             "schedule(dynamic, %zu) over elements; static: schedule(static) over the same ranges",
             n, grain, grain, grain);
    w.title = title;
    w.detail = detail;
    w.op = "elem";
    w.sample = "call";
    w.note_head = "threads used";
    w.rounds = ph->size->rounds;
    row rows[4];
    add_rows(&w, ph, rows, j3_round, "kiln kiln_parallel_for", "OpenMP for dynamic,grain",
             "OpenMP for static", "oneTBB parallel_for simple");
    jobs_ctx_snapshot before, after;
    jobs_snapshot(ph->side.rt, &before);
    bench_run(&w);
    jobs_snapshot(ph->side.rt, &after);
    for (int i = 0, k = 0; i < w.count; i++)
        if (!w.entries[i].skip[0]) {
            snprintf(w.entries[i].note, sizeof w.entries[i].note, "%d", rows[k].threads_seen);
            k++;
        }
    bench_print(&w);
    jobs_print_ctx_delta(&before, &after, w.rounds);
    bench_workload_free(&w);
}

static void phase_open(phase *ph, int threads, const run_size *size, const float *data) {
    memset(ph, 0, sizeof *ph);
    ph->size = size;
    ph->data = data;
    ph->stamps = malloc(((size_t)size->j1_batches + 1) * sizeof *ph->stamps);
    if (!ph->stamps) bench_die("out of memory for J1's stamps");
    jobs_side_open(&ph->side, threads, cpus, kiln_only);
}

static void phase_close(phase *ph) {
    jobs_side_close(&ph->side);
    free(ph->stamps);
}

/* ---- main ------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
    static const char *const names[] = { "j1", "j2", "j3", "j4", "f1", "w1", NULL };
    jobs_options opt;
    jobs_options_parse(&opt, argc, argv, "jobs_bench", names);
    const run_size *size = opt.quick ? &quick_run : &full_run;
    const char *only = opt.only;
    const int *threads = opt.threads, phases = opt.phases;
    quick = opt.quick;
    kiln_only = opt.kiln_only;
    cpus = opt.cpus;

    /* J3's input: whole numbers 1..16 as floats, from a fixed seed. */
    size_t data_n = size->j3_n > size->j3_n_fine ? size->j3_n : size->j3_n_fine;
    float *data = malloc(data_n * sizeof *data);
    if (!data) bench_die("out of memory for J3's input");
    bench_rng rng = { 0x6b696c6e4a334a33ull };
    for (size_t i = 0; i < data_n; i++) data[i] = (float)(1 + bench_rng_next(&rng) % 16);

    uint64_t t0 = bench_now_ns();
    for (int p = 0; p < phases; p++) {
        phase ph;
        phase_open(&ph, threads[p], size, data);
        if (!only || strcmp(only, "j1") == 0) run_j1(&ph);
        if (!only || strcmp(only, "j2") == 0) {
            ph.fib_n = threads[p] > cpus ? size->fib_n_over : size->fib_n;
            run_j2(&ph);
        }
        if (!only || strcmp(only, "j3") == 0) {
            run_j3(&ph, size->j3_n, 1024, size->j3_passes_coarse);
            run_j3(&ph, size->j3_n_fine, 1, size->j3_passes_fine);
        }
        if ((!only && p == 0) || (only && strcmp(only, "j4") == 0)) run_j4(&ph);
        if (!only || strcmp(only, "f1") == 0) run_f1(&ph);
        if (!only || strcmp(only, "w1") == 0) run_w1(&ph);
        phase_close(&ph);
    }
    free(data);
    printf("\njobs_bench: done in %.1f s\n", (double)(bench_now_ns() - t0) / 1e9);
    return 0;
}
