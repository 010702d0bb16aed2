/* bench/log_bench.c — what a log message costs the thread that logs it (issue: "a log
 * that never blocks a frame"), per message, on one thread:
 *   L1 a warning through kiln_logf: delivered synchronously to a callback that does
 *      nothing (the base), synchronously to a log file (/dev/null: the write(2) without
 *      the disk), through the async ring (the log thread delivers to the same callback),
 *      and below the threshold (filtered); the peer is what an engine's own plain logger
 *      does: vsnprintf and one write(2) to /dev/null.
 *   L2 kiln's own message for a refused call, the same call again and again in one frame:
 *      folded (the default: counted, not delivered), every repeat delivered synchronously,
 *      and every repeat through the async ring.
 * The async rows measure the producer's side only: a message the ring has no room for is
 * dropped and counted (the note column says how many of the round's were). Each row has
 * its own runtime, made once. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kiln/kiln.h>

#include "harness.h"

typedef struct run_size { long messages; int rounds; } run_size;
static const run_size full_run = { 200000, 11 };
static const run_size quick_run = { 2000, 2 };
static const run_size *size = &full_run;

static void quiet(void *user, kiln_log_level level, const char *message) {
    (void)user, (void)level, (void)message;
}

typedef struct row {
    kiln_runtime *rt;
    kiln_ctx     *ctx;      /* L2: the frame the repeats fall in */
    int           devnull;  /* the peer's */
    bool          refusals; /* L2 */
    char          note[40];
} row;

static kiln_runtime *make(const char *options, bool every_repeat) {
    kiln_runtime *rt = kiln_create(&(kiln_desc){ .worker_count = KILN_NO_WORKERS, .log = quiet,
                                                 .options = options, .log_every_repeat = every_repeat,
                                                 .options_env = KILN_OPTIONS_ENV_IGNORE });
    if (!rt) bench_die("kiln_create(%s) failed", options);
    return rt;
}

static void round_kiln(void *state, bench_series *s) {
    row *r = state;
    kiln_stats before, after;
    kiln_stats_get(r->rt, &before);
    char out[8];
    uint64_t t0 = bench_now_ns();
    if (r->refusals) {
        for (long i = 0; i < size->messages; i++)
            kiln_option_source(r->rt, "workers", out, 1 + (size_t)(i & 3));
    } else {
        for (long i = 0; i < size->messages; i++)
            kiln_logf(r->rt, KILN_LOG_WARN, "pool '%s' is full: %ld of %d objects live", "bullets",
                      i, 4096);
    }
    uint64_t t1 = bench_now_ns();
    bench_add_round(s, (double)(t1 - t0), (double)size->messages);
    kiln_log_flush(r->rt);   /* outside the timing: the log thread's work */
    kiln_stats_get(r->rt, &after);
    if (after.log_dropped != before.log_dropped)
        snprintf(r->note, sizeof r->note, "%.0f%% dropped",
                 100.0 * (double)(after.log_dropped - before.log_dropped) / (double)size->messages);
    if (r->ctx) {   /* a new frame for the next round's repeats */
        kiln_frame_end(r->ctx);
        kiln_frame_begin(r->ctx);
    }
}

/* An engine's plain logger: format, then one write(2). */
static void plain_log(int fd, const char *fmt, ...) {
    char line[512];
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(line, sizeof line, fmt, args);
    va_end(args);
    if (n > 0) {
        ssize_t w = write(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        (void)w;
    }
}

static void round_plain(void *state, bench_series *s) {
    row *r = state;
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < size->messages; i++)
        plain_log(r->devnull, "warn: pool '%s' is full: %ld of %d objects live\n", "bullets", i, 4096);
    bench_add_round(s, (double)(bench_now_ns() - t0), (double)size->messages);
}

static void add(bench_workload *w, const char *name, bench_round_fn fn, row *r) {
    bench_add_entry(w, name, fn, r);
}

/* Runs the workload, prints it with each row's note (the drops), frees it. */
static void run_and_print(bench_workload *w) {
    bench_run(w);
    for (int i = 0; i < w->count; i++) {
        row *r = w->entries[i].state;
        snprintf(w->entries[i].note, sizeof w->entries[i].note, "%s", r->note);
    }
    bench_print(w);
    bench_workload_free(w);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) size = &quick_run;
        else {
            fprintf(stderr, "usage: log_bench [--quick]\n");
            return 2;
        }
    }
    printf("kiln log_bench (%s run)\n", size == &quick_run ? "quick" : "full");
    bench_print_load();
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull < 0) bench_die("no /dev/null");

    row sync_row = { .rt = make("log_mode=sync", true) }, file_row = { .rt = NULL };
    /* No callback: the file takes the stderr default's place. */
    file_row.rt = kiln_create(&(kiln_desc){ .worker_count = KILN_NO_WORKERS,
                                            .options = "log_file=/dev/null", .log_every_repeat = true,
                                            .options_env = KILN_OPTIONS_ENV_IGNORE });
    if (!file_row.rt) bench_die("kiln_create with a log file failed");
    row async_row = { .rt = make("log_mode=async", true) }, filtered_row = { .rt = make("log=error", true) };
    row plain_row = { .rt = NULL };
    plain_row.devnull = devnull;
    bench_workload l1 = { .title = "L1 a warning through kiln_logf (1 thread)",
                          .detail = "kiln_logf(rt, KILN_LOG_WARN, \"pool '%s' is full: %ld of %d\"); "
                                    "the async rows: the logging thread's side",
                          .op = "message", .sample = "round", .note_head = "note",
                          .rounds = size->rounds };
    add(&l1, "kiln sync, a callback", round_kiln, &sync_row);
    add(&l1, "kiln sync, log_file", round_kiln, &file_row);
    add(&l1, "kiln async ring", round_kiln, &async_row);
    add(&l1, "kiln below threshold", round_kiln, &filtered_row);
    add(&l1, "plain vsnprintf+write", round_plain, &plain_row);
    run_and_print(&l1);

    row folded = { .rt = make(NULL, false) }, every = { .rt = make(NULL, true) },
        every_async = { .rt = make("log_mode=async", true) };
    row *l2_rows[] = { &folded, &every, &every_async };
    for (int i = 0; i < 3; i++) {
        l2_rows[i]->refusals = true;
        l2_rows[i]->ctx = kiln_attach(l2_rows[i]->rt);
        kiln_frame_begin(l2_rows[i]->ctx);
    }
    bench_workload l2 = { .title = "L2 a refused call's message, repeated in one frame (1 thread)",
                          .detail = "kiln_option_source with a small out: OPTION_OUT_TOO_SMALL, its "
                                    "figures changing; counted in api_errors every time",
                          .op = "message", .sample = "round", .note_head = "note",
                          .rounds = size->rounds };
    add(&l2, "kiln folded (default)", round_kiln, &folded);
    add(&l2, "kiln every repeat, sync", round_kiln, &every);
    add(&l2, "kiln every repeat, async", round_kiln, &every_async);
    run_and_print(&l2);

    for (int i = 0; i < 3; i++) {
        kiln_frame_end(l2_rows[i]->ctx);
        kiln_detach(l2_rows[i]->ctx);
        kiln_destroy(l2_rows[i]->rt);
    }
    kiln_destroy(sync_row.rt);
    kiln_destroy(file_row.rt);
    kiln_destroy(async_row.rt);
    kiln_destroy(filtered_row.rt);
    close(devnull);
    return 0;
}
