/* bench/jobs_common.h — what the two job programs (jobs_bench.c, graph_bench.c) share:
 * one thread count's kiln runtime and oneTBB arena, the wait for a quiet process before
 * every round, kiln's per-context figures over a workload, and a series' median in ms.
 *
 * Threads: every function here runs on the program's main thread, the one attached to
 * the side's kiln runtime. */
#ifndef KILN_BENCH_JOBS_COMMON_H
#define KILN_BENCH_JOBS_COMMON_H

#include <kiln/kiln.h>

#include <stdbool.h>
#include <stddef.h>

#include "harness.h"

/* ---- The command line ------------------------------------------------------------------ */

#define JOBS_MAX_PHASES 8

typedef struct jobs_options {
    bool        quick;       /* --quick: tiny sizes */
    bool        kiln_only;   /* --kiln-only: no peer rows */
    const char *only;        /* --only NAME: one workload; NULL: every one */
    int         threads[JOBS_MAX_PHASES];   /* --threads LIST; default 1, 2, 2 x cpus */
    int         phases;
    long        cpus;        /* the online CPUs */
} jobs_options;

/* Parses [--quick] [--only NAME] [--threads 1,2,4] [--kiln-only]; names: the workloads
 * --only accepts, NULL-terminated. Anything else prints the usage line of program and
 * exits with status 2. Then prints the program's first line (the run, the CPUs, the
 * peers compiled in) and the machine's load. */
void jobs_options_parse(jobs_options *o, int argc, char **argv, const char *program,
                        const char *const *names);

/* ---- The oneTBB arena: bench/tbb_arena.cpp ---------------------------------------- */
#ifdef BENCH_HAVE_TBB
/* A tbb::global_control(max_allowed_parallelism, threads) and an initialised task_arena
 * of concurrency threads; NULL with the reason in err when oneTBB throws. */
void *jb_tbb_open(int threads, char *err, size_t err_size);
void  jb_tbb_close(void *handle);
int   jb_tbb_concurrency(void *handle);
#endif

/* ---- One thread count on every side ------------------------------------------------- */

/* T threads in all, the calling thread included: kiln worker_count = T-1 plus the
 * attached main thread (T = 1: KILN_NO_WORKERS); oneTBB's arena of concurrency T;
 * OpenMP's num_threads(T) is the rows' own. */
typedef struct jobs_side {
    int           threads;
    kiln_runtime *rt;
    kiln_ctx     *ctx;            /* the main thread's */
    void         *tbb;            /* NULL: no oneTBB row (reason in tbb_skip) */
    char          tbb_skip[200];
} jobs_side;

/* Creates the runtime and attaches the main thread (bench_die when kiln fails), opens
 * oneTBB's arena unless kiln_only, and prints the phase's header line (the OpenMP team
 * size it gets, the arena's concurrency). cpus: the online CPUs, for "oversubscribed". */
void jobs_side_open(jobs_side *side, int threads, long cpus, bool kiln_only);
void jobs_side_close(jobs_side *side);

/* Waits (at most 200 ms) until this process burns under 5 % of a CPU over 2 ms: every
 * runtime's idle threads have stopped spinning and sleep. Called, untimed, at the start
 * of every round of every row, so that no row is timed against another's spinning. */
void jobs_settle(void);

/* ---- kiln's per-context figures ------------------------------------------------------ */

#define JOBS_MAX_CTX 64

typedef struct jobs_ctx_snapshot {
    kiln_ctx_stats ctx[JOBS_MAX_CTX];
    size_t         count;
} jobs_ctx_snapshot;

void jobs_snapshot(kiln_runtime *rt, jobs_ctx_snapshot *snap);

/* Prints kiln's per-context figures between two snapshots taken around a workload of
 * rounds measured rounds (the warm-up round included in the figures). */
void jobs_print_ctx_delta(const jobs_ctx_snapshot *before, const jobs_ctx_snapshot *after,
                          int rounds);

/* The median of a series' round times, in milliseconds (0 without rounds). */
double jobs_median_round_ms(const bench_series *s);

#endif /* KILN_BENCH_JOBS_COMMON_H */
