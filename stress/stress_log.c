/* stress/stress_log.c — the async log (KILN_LOG_ASYNC) under many writers: --threads
 * plain threads (no context) and as many jobs on the runtime's workers log through
 * kiln_logf, while a flusher calls kiln_log_flush and flips the threshold between info
 * and warn (every message here is a WARN: none may be filtered), and a stats reader
 * reads log_dropped. The log callbacks check, for every message delivered:
 *   - its text is whole: "APP_LOG: w<writer> n<number> <check>", the check a function of
 *     writer and number, so a message torn by a concurrent write fails;
 *   - one writer's messages arrive in the order it wrote them (numbers strictly rise);
 *   - callbacks never run at the same time (the ring has one consumer at a time);
 * and at the end every message was delivered or counted in log_dropped, exactly.
 * Then repeats folded (sync mode): --threads threads make the same refused call with
 * other figures, a driver ends frames beside them, and every refusal is delivered or
 * counted in a LOG_REPEATS summary exactly once.
 * Beside both, a reporter writes kiln_crash_report_write's report again and again (the
 * newest lines delivered and queued, the history, the memory snapshot, the contexts
 * while a thread attaches and detaches, all read while they change) and checks every
 * message line in it is whole.
 * Usage: stress-log [--threads N] [--iterations N] [--seed S]: N writers of each kind,
 * each writing --iterations messages. Exit status 0 when every check held. */
#define _GNU_SOURCE   /* memfd_create */
#include "stress_common.h"   /* first: it sets the feature macros */

#include <kiln/kiln.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { MAX_WRITERS = 64 };

static stress_options   opt;
static kiln_runtime    *rt;
static uint64_t         last_number[MAX_WRITERS];   /* the callbacks' (one at a time) */
static uint64_t         delivered;                  /* the callbacks' */
static _Atomic int      in_callback;
static _Atomic bool     writers_done;

static uint64_t check_of(uint64_t writer, uint64_t number) {
    return stress_mix(opt.seed ^ (writer << 40) ^ number) % 1000000007u;
}

static void on_message(void *user, kiln_log_level level, kiln_log_item item, const char *message) {
    (void)user;
    STRESS_CHECK(atomic_fetch_add(&in_callback, 1) == 0, "two callbacks at once");
    if (item == KILN_LOGITEM_APP_LOG) {
        unsigned long long w, n, c;
        STRESS_CHECK(level == KILN_LOG_WARN, "level %d", (int)level);
        int got = sscanf(message, "APP_LOG: w%llu n%llu %llu", &w, &n, &c);
        STRESS_CHECK(got == 3 && w < MAX_WRITERS && c == check_of(w, n), "torn: '%s'", message);
        if (got == 3 && w < MAX_WRITERS) {
            STRESS_CHECK(n + 1 > last_number[w], "writer %llu: %llu after %llu", w, n,
                         (unsigned long long)last_number[w] - 1);
            last_number[w] = n + 1;
        }
        delivered++;
    } else {
        STRESS_CHECK(item == KILN_LOGITEM_LOG_DROPPED, "an item other than APP_LOG or LOG_DROPPED: %s",
                     message);
    }
    atomic_fetch_sub(&in_callback, 1);
}

static void quiet_log(void *user, kiln_log_level level, const char *message) {
    (void)user, (void)level, (void)message;
}

static void write_messages(uint64_t writer) {
    for (uint64_t n = 0; n < opt.iterations; n++)
        kiln_logf(rt, KILN_LOG_WARN, "w%llu n%llu %llu", (unsigned long long)writer,
                  (unsigned long long)n, (unsigned long long)check_of(writer, n));
}

static void *plain_writer(void *arg) {
    write_messages((uint64_t)(uintptr_t)arg);
    return NULL;
}

static void job_writer(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    write_messages((uint64_t)(uintptr_t)arg);
}

static void *flusher(void *arg) {
    (void)arg;
    stress_rng rng = stress_rng_make(opt.seed, 99);
    uint64_t dropped_seen = 0;
    while (!atomic_load(&writers_done)) {
        kiln_log_flush(rt);
        kiln_log_set_level(rt, stress_below(&rng, 2) ? KILN_LOG_THRESHOLD_WARN : KILN_LOG_THRESHOLD_INFO);
        kiln_stats s;
        STRESS_CHECK(kiln_stats_get(rt, &s), "stats");
        STRESS_CHECK(s.log_dropped >= dropped_seen, "log_dropped went back");
        dropped_seen = s.log_dropped;
    }
    return NULL;
}

/* ---- the crash report, read while everything changes ---- */

typedef struct reporter_arg {
    kiln_runtime *rt;
    _Atomic bool  stop;
    uint64_t      reports, lines;
} reporter_arg;

/* Checks each "APP_LOG: w<writer> n<number> <check>" line of a report is whole. */
static void check_report_lines(reporter_arg *r, const char *report) {
    for (const char *at = strstr(report, "APP_LOG: w"); at; at = strstr(at + 1, "APP_LOG: w")) {
        unsigned long long w, n, c;
        int got = sscanf(at, "APP_LOG: w%llu n%llu %llu", &w, &n, &c);
        STRESS_CHECK(got == 3 && c == check_of(w, n), "a torn line in the report: '%.60s'", at);
        r->lines++;
    }
}

static void *reporter(void *arg) {
    reporter_arg *r = arg;
    static char report[1 << 17];   /* one reporter at a time */
    int fd = memfd_create("kiln-report", 0);
    if (fd < 0) { stress_fail("memfd_create"); return NULL; }
    while (!atomic_load(&r->stop)) {
        STRESS_CHECK(ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0, "reset");
        STRESS_CHECK(kiln_crash_report_write(r->rt, fd), "kiln_crash_report_write");
        ssize_t n = pread(fd, report, sizeof report - 1, 0);
        report[n > 0 ? n : 0] = '\0';
        STRESS_CHECK(strstr(report, "==== end of kiln crash report ====\n") != NULL, "cut report");
        check_report_lines(r, report);
        r->reports++;
    }
    close(fd);
    return NULL;
}

/* Attaches and detaches while reports walk the context list. */
static void *churner(void *arg) {
    reporter_arg *r = arg;
    while (!atomic_load(&r->stop)) {
        kiln_ctx *ctx = kiln_attach(r->rt);
        STRESS_CHECK(ctx != NULL, "attach");
        if (ctx) kiln_detach(ctx);
    }
    return NULL;
}

/* ---- repeats folded ---- */

static _Atomic uint64_t fold_delivered, fold_counted;

static void on_fold_message(void *user, kiln_log_level level, kiln_log_item item, const char *message) {
    (void)user, (void)level;
    unsigned long long n;
    if (item == KILN_LOGITEM_OPTION_OUT_TOO_SMALL) atomic_fetch_add(&fold_delivered, 1);
    else if (item == KILN_LOGITEM_LOG_REPEATS && sscanf(message, "LOG_REPEATS: %llu", &n) == 1)
        atomic_fetch_add(&fold_counted, n);
    else STRESS_CHECK(false, "unexpected: %s", message);
}

static void *refuser(void *arg) {
    char out[8];
    for (uint64_t i = 0; i < opt.iterations; i++)
        kiln_option_source(arg, "workers", out, 1 + i % 4);   /* "desc" needs 5 */
    return NULL;
}

static void check_folding(void) {
    kiln_runtime *frt = kiln_create(&(kiln_desc){ .worker_count = KILN_NO_WORKERS, .log = quiet_log,
                                                  .log_item = on_fold_message,
                                                  .options = "workers=none",
                                                  .options_env = KILN_OPTIONS_ENV_IGNORE });
    if (!frt) { stress_fail("no runtime"); return; }
    kiln_ctx *ctx = kiln_attach(frt);
    kiln_pool *pool = kiln_pool_create(frt, &(kiln_pool_desc){ .name = "stress", .size = 32 });
    kiln_arena *arena = kiln_arena_create(frt, "stress arena");
    pthread_t threads[MAX_WRITERS / 2], report_thread;
    reporter_arg r = { .rt = frt };   /* reads the memory snapshot the frame ends write */
    pthread_create(&report_thread, NULL, reporter, &r);
    for (uint32_t t = 0; t < opt.threads; t++) pthread_create(&threads[t], NULL, refuser, frt);
    for (int f = 0; f < 200; f++) {   /* frame ends sweep beside the refusals */
        kiln_frame_begin(ctx);
        void *p = kiln_pool_alloc(ctx, pool);
        kiln_arena_alloc(arena, 64, 8);
        kiln_frame_alloc(ctx, 128, 16);
        kiln_frame_end(ctx);
        kiln_pool_free(ctx, pool, p);
    }
    for (uint32_t t = 0; t < opt.threads; t++) pthread_join(threads[t], NULL);
    atomic_store(&r.stop, true);
    pthread_join(report_thread, NULL);
    kiln_pool_destroy(pool);
    kiln_arena_destroy(arena);
    kiln_detach(ctx);
    kiln_destroy(frt);
    uint64_t total = (uint64_t)opt.threads * opt.iterations;
    STRESS_CHECK(fold_delivered + fold_counted == total, "folding: delivered %llu + folded %llu != %llu",
                 (unsigned long long)fold_delivered, (unsigned long long)fold_counted,
                 (unsigned long long)total);
    printf("stress-log: folding: %llu refusals, %llu delivered\n", (unsigned long long)total,
           (unsigned long long)fold_delivered);
}

int main(int argc, char **argv) {
    opt = (stress_options){ .threads = 4, .iterations = 20000, .seed = 1 };
    if (!stress_parse(argc, argv, &opt)) return 2;
    if (opt.threads > MAX_WRITERS / 2) opt.threads = MAX_WRITERS / 2;
    double start = stress_seconds();
    rt = kiln_create(&(kiln_desc){ .worker_count = opt.threads, .log_mode = KILN_LOG_ASYNC,
                                   .log = quiet_log, .log_item = on_message,
                                   .options_env = KILN_OPTIONS_ENV_IGNORE });
    if (!rt) return 1;
    kiln_ctx *ctx = kiln_attach(rt);
    pthread_t plain[MAX_WRITERS / 2], flush_thread, report_thread;
    pthread_create(&flush_thread, NULL, flusher, NULL);
    reporter_arg r = { .rt = rt };   /* reads the lines delivered and queued */
    pthread_t churn_thread;
    pthread_create(&report_thread, NULL, reporter, &r);
    pthread_create(&churn_thread, NULL, churner, &r);
    for (uint32_t t = 0; t < opt.threads; t++)
        pthread_create(&plain[t], NULL, plain_writer, (void *)(uintptr_t)t);
    kiln_job jobs[MAX_WRITERS / 2];
    for (uint32_t t = 0; t < opt.threads; t++)
        jobs[t] = (kiln_job){ job_writer, (void *)(uintptr_t)(opt.threads + t) };
    kiln_counter done = { { 0, 0 } };
    kiln_run_ex(ctx, jobs, opt.threads, &done, &(kiln_run_desc){ .background = true });
    kiln_wait(ctx, &done);
    for (uint32_t t = 0; t < opt.threads; t++) pthread_join(plain[t], NULL);
    atomic_store(&writers_done, true);
    pthread_join(flush_thread, NULL);
    atomic_store(&r.stop, true);
    pthread_join(report_thread, NULL);
    pthread_join(churn_thread, NULL);
    STRESS_CHECK(r.reports > 0, "no report written");
    kiln_log_flush(rt);
    kiln_stats s;
    kiln_stats_get(rt, &s);
    uint64_t written = 2ull * opt.threads * opt.iterations;
    STRESS_CHECK(delivered + s.log_dropped == written, "delivered %llu + dropped %llu != written %llu",
                 (unsigned long long)delivered, (unsigned long long)s.log_dropped,
                 (unsigned long long)written);
    kiln_detach(ctx);
    kiln_destroy(rt);
    check_folding();
    printf("stress-log: %llu messages, %llu delivered, %llu dropped; %llu reports read "
           "beside them (%llu message lines); %.1f s\n",
           (unsigned long long)written, (unsigned long long)delivered,
           (unsigned long long)s.log_dropped, (unsigned long long)r.reports,
           (unsigned long long)r.lines, stress_seconds() - start);
    return stress_failure_count() ? 1 : 0;
}
