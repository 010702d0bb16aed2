/* bench/jobs_common.c — the job programs' shared set-up and reports: a thread count's
 * kiln runtime and oneTBB arena, the quiet wait before rounds, kiln's per-context
 * figures and the median in ms. */
#define _GNU_SOURCE
#include "jobs_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef BENCH_HAVE_OPENMP
#  include <omp.h>
#endif

static void usage(const char *program, const char *const *names) {
    fprintf(stderr, "usage: %s [--quick] [--only ", program);
    for (int i = 0; names[i]; i++) fprintf(stderr, "%s%s", i ? "|" : "", names[i]);
    fprintf(stderr, "] [--threads 1,2,4] [--kiln-only]\n");
    exit(2);
}

void jobs_options_parse(jobs_options *o, int argc, char **argv, const char *program,
                        const char *const *names) {
    memset(o, 0, sizeof *o);
    o->cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (o->cpus < 1) o->cpus = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            o->quick = true;
        } else if (strcmp(argv[i], "--kiln-only") == 0) {
            o->kiln_only = true;
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            o->only = argv[++i];
            int k = 0;
            while (names[k] && strcmp(names[k], o->only) != 0) k++;
            if (!names[k]) usage(program, names);
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            for (char *p = argv[++i], *end; *p && o->phases < JOBS_MAX_PHASES;
                 p = *end ? end + 1 : end) {
                long t = strtol(p, &end, 10);
                if (end == p || t < 1 || t > 256 || (*end && *end != ',')) usage(program, names);
                o->threads[o->phases++] = (int)t;
            }
        } else {
            usage(program, names);
        }
    }
    if (o->phases == 0) {
        o->threads[o->phases++] = 1;
        o->threads[o->phases++] = 2;
        if (2 * o->cpus > 2) o->threads[o->phases++] = (int)(2 * o->cpus);
    }
    printf("kiln %s (%s run), %ld online CPUs; peers:", program, o->quick ? "quick" : "full",
           o->cpus);
#ifdef BENCH_HAVE_OPENMP
    printf(" OpenMP %d (libgomp)", _OPENMP);
#else
    printf(" OpenMP not found at configure time");
#endif
#ifdef BENCH_HAVE_TBB
    printf(", oneTBB");
#else
    printf(", oneTBB not found at configure time");
#endif
    printf("%s\n", o->kiln_only ? " (all skipped: --kiln-only)" : "");
    bench_print_load();
}

void jobs_side_open(jobs_side *side, int threads, long cpus, bool kiln_only) {
    memset(side, 0, sizeof *side);
    side->threads = threads;
    kiln_desc desc = { .worker_count = threads == 1 ? KILN_NO_WORKERS : (uint32_t)(threads - 1) };
    side->rt = kiln_create(&desc);
    side->ctx = side->rt ? kiln_attach(side->rt) : NULL;
    if (!side->ctx) bench_die("kiln_create/kiln_attach failed (T=%d)", threads);
#ifdef BENCH_HAVE_TBB
    if (!kiln_only) side->tbb = jb_tbb_open(threads, side->tbb_skip, sizeof side->tbb_skip);
#else
    snprintf(side->tbb_skip, sizeof side->tbb_skip,
             "oneTBB not found at configure time (dependency('tbb'))");
#endif
    kiln_stats st;
    kiln_stats_get(side->rt, &st);
    printf("\n######## T = %d threads%s: kiln %u workers + the main thread (%u contexts)",
           threads, threads > cpus ? " (oversubscribed)" : "",
           threads == 1 ? 0 : (unsigned)(threads - 1), st.contexts);
#ifdef BENCH_HAVE_OPENMP
    if (!kiln_only) {
        int team = 0;
#pragma omp parallel num_threads(threads)
#pragma omp single
        team = omp_get_num_threads();
        printf(", OpenMP team %d", team);
    }
#else
    (void)kiln_only;
#endif
#ifdef BENCH_HAVE_TBB
    if (side->tbb) printf(", oneTBB arena concurrency %d", jb_tbb_concurrency(side->tbb));
#endif
    printf("\n");
    fflush(stdout);
}

void jobs_side_close(jobs_side *side) {
#ifdef BENCH_HAVE_TBB
    if (side->tbb) jb_tbb_close(side->tbb);
#endif
    kiln_detach(side->ctx);
    kiln_destroy(side->rt);
    side->tbb = NULL;
    side->ctx = NULL;
    side->rt = NULL;
}

static uint64_t process_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void jobs_settle(void) {
    for (int i = 0; i < 100; i++) {
        uint64_t c0 = process_cpu_ns();
        struct timespec pause = { 0, 2000000 };
        nanosleep(&pause, NULL);
        if (process_cpu_ns() - c0 < 100000) return;
    }
}

void jobs_snapshot(kiln_runtime *rt, jobs_ctx_snapshot *snap) {
    size_t n = kiln_stats_contexts(rt, snap->ctx, JOBS_MAX_CTX);
    snap->count = n < JOBS_MAX_CTX ? n : JOBS_MAX_CTX;
}

void jobs_print_ctx_delta(const jobs_ctx_snapshot *before, const jobs_ctx_snapshot *after,
                          int rounds) {
    printf("kiln per context over its %d rounds (warm-up included; asleep: over the whole "
           "workload, the peers' rounds too):\n", rounds + 1);
    printf("  %-4s %-7s %14s %12s %8s %14s %10s\n", "ctx", "kind", "jobs run", "stolen", "stolen%",
           "steal misses", "asleep ms");
    uint64_t run_total = 0;
    for (size_t i = after->count; i-- > 0;) run_total += after->ctx[i].jobs_run;
    for (size_t i = before->count; i-- > 0;) run_total -= before->ctx[i].jobs_run;
    for (size_t i = after->count; i-- > 0;) {   /* oldest first */
        const kiln_ctx_stats *a = &after->ctx[i], *b = NULL;
        for (size_t k = 0; k < before->count; k++)
            if (before->ctx[k].id == a->id) b = &before->ctx[k];
        kiln_ctx_stats zero = { 0 };
        if (!b) b = &zero;
        uint64_t run = a->jobs_run - b->jobs_run, stolen = a->jobs_stolen - b->jobs_stolen;
        printf("  %-4u %-7s %14llu %12llu %7.1f%% %14llu %10.1f   (%.1f%% of the jobs)\n", a->id,
               a->is_worker ? "worker" : "main", (unsigned long long)run,
               (unsigned long long)stolen, run ? 100.0 * (double)stolen / (double)run : 0.0,
               (unsigned long long)(a->steal_misses - b->steal_misses),
               (double)(a->sleep_ns - b->sleep_ns) / 1e6,
               run_total ? 100.0 * (double)run / (double)run_total : 0.0);
    }
}

double jobs_median_round_ms(const bench_series *s) {
    size_t n = s->rounds;
    if (n == 0) return 0;
    double v[64];
    if (n > 64) n = 64;
    for (size_t i = 0; i < n; i++) v[i] = s->round_ns[i] / 1e6;
    for (size_t i = 1; i < n; i++)   /* insertion sort: a handful of rounds */
        for (size_t k = i; k > 0 && v[k - 1] > v[k]; k--) {
            double t = v[k];
            v[k] = v[k - 1];
            v[k - 1] = t;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
