/* tests/test_crash.c — the crash report: a child process that crashes (a store to an
 * unmapped address in a job, on a thread kiln does not know, inside kiln's own log path;
 * abort() in a job) dies of the signal as before and leaves a report that names the
 * job's function, the frame, the last log line and the options; a handler installed
 * before kiln's is called after the report; kiln_crash_report_write; refusals; the
 * handlers are gone after destroy. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/symbol.h"
#include "recording_log.h"

#if defined(__SANITIZE_ADDRESS__)
#  define UNDER_ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define UNDER_ASAN 1
#  endif
#endif

static char dir[64], path[128];

static void setup(void) {
    unsetenv("KILN_OPTIONS");
    strcpy(dir, "/tmp/kiln-crash-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/crash.txt", dir);
}
static void teardown(void) {
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    cr_expect_eq(system(command), 0);
}
TestSuite(crash, .init = setup, .fini = teardown);

static char *read_report(void) {
    static char text[1 << 16];
    FILE *f = fopen(path, "r");
    if (!f) return strcpy(text, "(no report file)");
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

static void quiet(void *user, kiln_log_level level, const char *message) {
    (void)user, (void)level, (void)message;
}

static kiln_runtime *child_runtime(const char *extra) {
    char options[256];
    snprintf(options, sizeof options, "crash_file=%s,warn_percent=77%s", path, extra);
    kiln_runtime *rt = kiln_create(&(kiln_desc){ .options = options, .log = quiet });
    if (!rt) _exit(90);
    return rt;
}

/* Runs child in a fork and returns its wait status. */
static int run_child(void (*child)(void)) {
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        child();
        _exit(91);   /* it was to crash */
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return status;
}

/* Died of sig as without kiln: killed by it (under ASan, whose own handler kiln hands
 * the signal to, an error exit instead). */
static void expect_died_of(int status, int sig) {
#ifdef UNDER_ASAN
    cr_expect(!(WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) >= 90)),
              "status %#x", status);
    (void)sig;
#else
    cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == sig, "status %#x, want signal %d",
              status, sig);
#endif
}

/* An address no mapping holds: not NULL, so that UBSan (halt_on_error) lets the store
 * reach the fault. */
#define NOWHERE_ADDRESS 0x10
static volatile int *volatile nowhere = (volatile int *)NOWHERE_ADDRESS;

static void crashing_job(kiln_ctx *ctx, void *arg) {
    (void)ctx, (void)arg;
    *nowhere = 1;
}

/* The allocators a frame end saw before the crash (the report's memory lines). */
static void allocate_a_frame(kiln_ctx *ctx) {
    kiln_runtime *rt = kiln_ctx_runtime(ctx);
    kiln_arena *level = kiln_arena_create(rt, "level geometry");
    if (!level || !kiln_arena_alloc(level, 3000, 16)) _exit(92);
    kiln_tag effects = kiln_tag_create(rt, &(kiln_tag_desc){ .name = "Effects", .budget = 1 << 20 });
    kiln_pool *particles = kiln_pool_create(rt, &(kiln_pool_desc){ .name = "particles",
                                                                   .size = 64, .tag = effects });
    for (int i = 0; i < 10; i++)
        if (!kiln_pool_alloc(ctx, particles)) _exit(93);
    kiln_frame_begin(ctx);
    kiln_frame_end(ctx);
}

static void crash_in_a_job(void) {
    kiln_runtime *rt = child_runtime(",workers=1");
    kiln_ctx *ctx = kiln_attach(rt);
    allocate_a_frame(ctx);
    kiln_logf(rt, KILN_LOG_WARN, "the last words before the crash");
    kiln_frame_begin(ctx);
    kiln_frame_begin(ctx);   /* FRAME_ALREADY_OPEN: kiln's own line, before the job's */
    kiln_counter done = { { 0, 0 } };
    kiln_run(ctx, &(kiln_job){ crashing_job, NULL }, 1, &done);
    kiln_wait(ctx, &done);
}

Test(crash, a_job_that_writes_to_null_leaves_a_report_and_dies_of_it) {
    int status = run_child(crash_in_a_job);
    expect_died_of(status, SIGSEGV);
    const char *report = read_report();
    char job[40];
    snprintf(job, sizeof job, "running job %p", (void *)(uintptr_t)crashing_job);
    cr_expect(strstr(report, "==== kiln crash report (kiln " KILN_VERSION ") ====") != NULL, "%s", report);
    cr_expect(strstr(report, "signal: SIGSEGV (11), address 0x10") != NULL, "%s", report);
    cr_expect(strstr(report, job) != NULL, "want '%s' in:\n%s", job, report);
    cr_expect(strstr(report, " (crashing_job+0x") != NULL, "the job's symbol: %s", report);
    cr_expect(strstr(report, "a frame job of frame 2\n") != NULL, "%s", report);
    cr_expect(strstr(report, "frame: 2 (open)") != NULL, "%s", report);
    cr_expect(strstr(report, "(worker, thread ") != NULL && strstr(report, " 'kiln-worker-1')") != NULL,
              "the worker's thread and name: %s", report);
    cr_expect(strstr(report, "memory at the end of frame 1") != NULL, "%s", report);
    cr_expect(strstr(report, "  arena 'level geometry': 3") != NULL, "%s", report);
    cr_expect(strstr(report, "  pool 'particles': 640 bytes, 10 objects") != NULL, "%s", report);
    cr_expect(strstr(report, "  pool 'particles': 640 bytes, 10 objects, 2 blocks\n") != NULL &&
              strstr(report, "  tag 'Effects': 131072 bytes live, children included, budget 1048576\n") != NULL,
              "the tag is charged the pool's 2 blocks: %s", report);
    cr_expect(strstr(report, "kiln warn: APP_LOG: the last words before the crash") != NULL, "%s", report);
    cr_expect(strstr(report, "FRAME_ALREADY_OPEN") != NULL, "%s", report);
    cr_expect(strstr(report, "  warn_percent = 77 (options)\n") != NULL, "%s", report);
    cr_expect(strstr(report, "  crash_file = ") != NULL, "%s", report);
    cr_expect(strstr(report, "==== end of kiln crash report ====\n") != NULL, "%s", report);
}

static void *crash_on_a_plain_thread(void *arg) {
    (void)arg;
    *nowhere = 2;
    return NULL;
}

static void crash_elsewhere(void) {
    kiln_runtime *rt = child_runtime(",workers=none");
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_frame_begin(ctx);
    kiln_frame_end(ctx);
    pthread_t t;
    pthread_create(&t, NULL, crash_on_a_plain_thread, NULL);
    pthread_join(t, NULL);
}

/* Expects each of the texts (a NULL-ended list) in the report. */
static void expect_in_report(const char *report, const char *const *texts) {
    for (; *texts; texts++) cr_expect(strstr(report, *texts) != NULL, "want '%s' in:\n%s", *texts, report);
}
#define EXPECT_IN_REPORT(report, ...) expect_in_report((report), (const char *const[]){ __VA_ARGS__, NULL })

Test(crash, a_crash_on_a_thread_kiln_does_not_know) {
    expect_died_of(run_child(crash_elsewhere), SIGSEGV);
    EXPECT_IN_REPORT(read_report(), "thread: not one of this runtime's contexts (thread ",
                     "context 1 (attached, thread ", "): no job", "  frame 1: ");
}

/* Async: the newest lines may still be in the ring, not delivered, when it crashes. */
static void crash_after_async_lines(void) {
    kiln_runtime *rt = child_runtime(",workers=none,log_mode=async");
    kiln_ctx *ctx = kiln_attach(rt);
    for (int i = 0; i < 20; i++) kiln_logf(rt, KILN_LOG_WARN, "queued line %d", i);
    (void)ctx;
    *nowhere = 5;
}

Test(crash, async_lines_not_yet_delivered_are_in_the_report) {
    expect_died_of(run_child(crash_after_async_lines), SIGSEGV);
    EXPECT_IN_REPORT(read_report(), "kiln warn: APP_LOG: queued line 0",
                     "kiln warn: APP_LOG: queued line 19",
                     "thread: context 1 (an attached thread, thread ");
}

static void crashing_log(void *user, kiln_log_level level, const char *message) {
    (void)user, (void)level;
    if (strstr(message, "crash now")) *nowhere = 3;
}

static void crash_in_the_log(void) {
    char options[200];
    snprintf(options, sizeof options, "crash_file=%s,workers=none", path);
    kiln_runtime *rt = kiln_create(&(kiln_desc){ .options = options, .log = crashing_log });
    if (!rt) _exit(90);
    kiln_logf(rt, KILN_LOG_ERROR, "crash now");
}

Test(crash, a_crash_inside_kilns_log_path) {
    expect_died_of(run_child(crash_in_the_log), SIGSEGV);
    const char *report = read_report();
    cr_expect(strstr(report, "kiln error: APP_LOG: crash now") != NULL, "%s", report);
    cr_expect(strstr(report, "thread: context") == NULL, "no context attached: %s", report);
}

static void aborting_job(kiln_ctx *ctx, void *arg) {
    (void)ctx, (void)arg;
    abort();
}

static void abort_in_a_background_job(void) {
    kiln_runtime *rt = child_runtime(",workers=none");
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_counter done = { { 0, 0 } };
    kiln_run_ex(ctx, &(kiln_job){ aborting_job, NULL }, 1, &done, &(kiln_run_desc){ .background = true });
    kiln_wait(ctx, &done);
}

Test(crash, abort_in_a_background_job) {
    expect_died_of(run_child(abort_in_a_background_job), SIGABRT);
    const char *report = read_report();
    cr_expect(strstr(report, "signal: SIGABRT (6), sent by process ") != NULL,
              "abort sends it: no faulting address: %s", report);
    cr_expect(strstr(report, "thread: context 1 (an attached thread, thread ") != NULL, "%s", report);
    cr_expect(strstr(report, ", a background job") != NULL, "%s", report);
}

static void programs_handler(int sig) {
    (void)sig;
    static const char marker[] = "the program's handler ran\n";
    int fd = open(path, O_WRONLY | O_APPEND);
    if (fd >= 0) {
        ssize_t w = write(fd, marker, sizeof marker - 1);
        (void)w;
        close(fd);
    }
    _exit(42);
}

static void crash_with_a_handler_of_its_own(void) {
    signal(SIGSEGV, programs_handler);
    kiln_runtime *rt = child_runtime(",workers=none");
    (void)rt;
    *nowhere = 4;
}

Test(crash, the_programs_handler_runs_after_the_report) {
    int status = run_child(crash_with_a_handler_of_its_own);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 42, "status %#x", status);
    const char *report = read_report();
    const char *end = strstr(report, "==== end of kiln crash report ====");
    const char *marker = strstr(report, "the program's handler ran");
    cr_expect(end && marker && end < marker, "%s", report);
}

/* ---- base/symbol.h: names found with system calls alone ---- */

__attribute__((noinline)) static int a_static_function(int x) { return x * 3 + 1; }

Test(crash, symbol_names_of_this_file_a_library_and_nothing) {
    char name[64];
    uintptr_t offset = 99;
    cr_assert(kiln_symbol_name((uintptr_t)a_static_function + 2, name, sizeof name, &offset));
    cr_expect_str_eq(name, "a_static_function");
    cr_expect_eq(offset, 2);
    cr_expect_eq(a_static_function(1), 4);
    /* In a shared library, which may be stripped: its exported .dynsym names it. */
    cr_assert(kiln_symbol_name((uintptr_t)&getpid, name, sizeof name, &offset));
    cr_expect(strstr(name, "getpid") != NULL, "%s", name);
    /* A name longer than the room is cut, NUL-ended. */
    char small[4];
    cr_assert(kiln_symbol_name((uintptr_t)a_static_function, small, sizeof small, &offset));
    cr_expect_str_eq(small, "a_s");
    /* No file behind it: unmapped, the heap, the stack. */
    int local = 0;
    void *heap = malloc(16);
    cr_expect_not(kiln_symbol_name(NOWHERE_ADDRESS, name, sizeof name, &offset));
    cr_expect_not(kiln_symbol_name((uintptr_t)heap, name, sizeof name, &offset));
    cr_expect_not(kiln_symbol_name((uintptr_t)&local, name, sizeof name, &offset));
    cr_expect_not(kiln_symbol_name((uintptr_t)a_static_function, name, 1, &offset));
    cr_expect_not(kiln_symbol_name((uintptr_t)a_static_function, NULL, 8, &offset));
    free(heap);
}

/* Code no sized symbol covers (assembly without .size, like a PLT entry or an init
 * stub): no name, never the name of the symbol below it. */
__asm__(".text\n.globl kiln_test_sizeless\n.type kiln_test_sizeless, @function\n"
        "kiln_test_sizeless:\n nop\n nop\n ret\n");
void kiln_test_sizeless(void);

Test(crash, code_without_a_sized_symbol_is_not_named) {
    char name[64];
    uintptr_t offset;
    cr_expect_not(kiln_symbol_name((uintptr_t)kiln_test_sizeless + 1, name, sizeof name, &offset),
                  "named %s", name);
}

/* ---- writing a report where it cannot go whole ---- */

static void write_into_a_pipe_nobody_reads(void) {
    kiln_runtime *rt = kiln_create(&(kiln_desc){ .worker_count = KILN_NO_WORKERS, .log = quiet });
    int ends[2];
    if (!rt || pipe(ends) != 0) _exit(90);
    close(ends[0]);
    bool written = kiln_crash_report_write(rt, ends[1]);   /* SIGPIPE would kill it here */
    bool bad_fd = kiln_crash_report_write(rt, 9999);
    sigset_t pending;
    sigpending(&pending);
    _exit(!written && !bad_fd && !sigismember(&pending, SIGPIPE) ? 0 : 95);
}

Test(crash, a_report_its_reader_left_is_refused_not_a_sigpipe_death) {
    int status = run_child(write_into_a_pipe_nobody_reads);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
}

/* A program that takes its signals with sigwait blocks them all before it makes kiln's
 * threads: a fault in a worker must still reach the report. */
static void crash_in_a_worker_made_with_signals_blocked(void) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    kiln_runtime *rt = child_runtime(",workers=1");
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_counter done = { { 0, 0 } };
    kiln_run_ex(ctx, &(kiln_job){ crashing_job, NULL }, 1, &done,
                &(kiln_run_desc){ .background = true });
    for (int i = 0; i < 1000; i++) nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
    _exit(94);   /* the worker never ran it */
}

Test(crash, a_worker_made_while_every_signal_was_blocked_still_reports) {
    expect_died_of(run_child(crash_in_a_worker_made_with_signals_blocked), SIGSEGV);
    EXPECT_IN_REPORT(read_report(), "thread: context 1 (a worker, thread ", " (crashing_job+0x");
}

#ifndef UNDER_ASAN   /* ASan's frames are larger, and its own handler takes over */
/* A stack overflow in a job, on the program's own alternate stack of the kernel's signal
 * frame plus 5 KiB: the report is written whole. */
static volatile int deeper = 1;   /* always: the compiler may not prove it */

static int recurse(volatile char *p) {
    volatile char buf[256];
    buf[0] = p ? p[0] : 0;
    return deeper ? recurse(buf) + buf[1] : 0;
}

static void overflowing_job(kiln_ctx *ctx, void *arg) {
    (void)ctx, (void)arg;
    size_t size = (size_t)sysconf(_SC_MINSIGSTKSZ) + 5120;
    stack_t alternate = { .ss_sp = malloc(size), .ss_size = size };
    if (!alternate.ss_sp || sigaltstack(&alternate, NULL) != 0) _exit(97);
    recurse(NULL);
}

static void overflow_the_stack_in_a_job(void) {
    kiln_runtime *rt = child_runtime(",workers=none");
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_logf(rt, KILN_LOG_WARN, "before the overflow");
    kiln_counter done = { { 0, 0 } };
    kiln_run(ctx, &(kiln_job){ overflowing_job, NULL }, 1, &done);
    kiln_wait(ctx, &done);
}

Test(crash, a_stack_overflow_on_a_small_alternate_stack_is_reported_whole) {
    expect_died_of(run_child(overflow_the_stack_in_a_job), SIGSEGV);
    EXPECT_IN_REPORT(read_report(), " (overflowing_job+0x", "APP_LOG: before the overflow",
                     "==== end of kiln crash report ====\n");
}
#endif

/* fork is not supported, but a child that crashes says it is one. */
static void crash_in_a_forked_child(void) {
    kiln_runtime *rt = child_runtime(",workers=1");
    (void)rt;
    pid_t pid = fork();
    if (pid == 0) *nowhere = 6;
    int status;
    waitpid(pid, &status, 0);
    /* Killed by the signal (under ASan, whose handler kiln hands it to: an error exit). */
    _exit(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0) ? 0 : 96);
}

Test(crash, a_forked_childs_report_says_so) {
    int status = run_child(crash_in_a_forked_child);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
    EXPECT_IN_REPORT(read_report(), ", a child forked from process ");
}

Test(crash, report_write_on_demand_and_its_refusals) {
    recording_log *rec = recording_log_new();
    kiln_desc d = recording_desc(rec);
    kiln_runtime *rt = kiln_create(&d);
    cr_assert_not_null(rt);
    kiln_logf(rt, KILN_LOG_WARN, "on demand");
    kiln_logf(rt, KILN_LOG_WARN, "a\\b\x1b");   /* a backslash, an escape byte */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(fd, 0);
    cr_expect(kiln_crash_report_write(rt, fd));
    close(fd);
    const char *report = read_report();
    cr_expect(strstr(report, "asked for (kiln_crash_report_write), no signal") != NULL, "%s", report);
    cr_expect(strstr(report, "kiln warn: APP_LOG: on demand") != NULL, "%s", report);
    cr_expect(strstr(report, "kiln warn: APP_LOG: a\\\\b\\x1b\n") != NULL, "%s", report);
    cr_expect(strstr(report, "process: ") != NULL && strstr(report, "forked") == NULL, "%s", report);
    cr_expect(strstr(report, "  workers = none (desc)\n") != NULL, "%s", report);
    cr_expect_not(kiln_crash_report_write(rt, -1));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_CRASH_FD_INVALID), 1);
    cr_expect_not(kiln_crash_report_write(NULL, 1));
    kiln_destroy(rt);
    d.crash_file = "/nonexistent-dir/crash.txt";
    cr_expect_null(kiln_create(&d));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_CRASH_FILE_FAILED), 1);
    recording_log_free(rec);
}

Test(crash, destroy_gives_the_signals_back) {
    struct sigaction before, after;
    sigaction(SIGBUS, NULL, &before);
    kiln_runtime *a = child_runtime(",workers=none");
    kiln_runtime *b = child_runtime(",workers=none");
    struct sigaction during;
    sigaction(SIGBUS, NULL, &during);
    cr_expect(during.sa_flags & SA_SIGINFO, "kiln's handler is in place");
    kiln_destroy(a);
    sigaction(SIGBUS, NULL, &after);
    cr_expect(after.sa_flags & SA_SIGINFO, "still there for b");
    kiln_destroy(b);
    sigaction(SIGBUS, NULL, &after);
    cr_expect_eq((void *)(uintptr_t)after.sa_handler, (void *)(uintptr_t)before.sa_handler);
    cr_expect_eq(after.sa_flags & SA_SIGINFO, before.sa_flags & SA_SIGINFO);
}

/* ---- what the review of the crash report found ---- */

static pthread_barrier_t both;

static void *crash_together(void *arg) {
    (void)arg;
    pthread_barrier_wait(&both);
    *nowhere = 5;
    return NULL;
}

static void two_threads_crash_at_once(void) {
    kiln_runtime *rt = child_runtime(",workers=none");
    /* A long report (64 frames, 64 long lines: some 40 writes), so that the second
     * crash lands while the first is being written. */
    kiln_ctx *ctx = kiln_attach(rt);
    for (int i = 0; i < 64; i++) {
        kiln_frame_begin(ctx);
        kiln_logf(rt, KILN_LOG_WARN, "%0200d", i);
        kiln_frame_end(ctx);
    }
    pthread_barrier_init(&both, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, crash_together, NULL);
    crash_together(NULL);
}

Test(crash, two_threads_crashing_at_once_leave_one_whole_report) {
    expect_died_of(run_child(two_threads_crash_at_once), SIGSEGV);
    const char *report = read_report();
    const char *start = strstr(report, "==== kiln crash report");
    cr_expect(start && strstr(start, "==== end of kiln crash report ====\n") != NULL,
              "the second crash waits for the report: %s", report);
}

Test(crash, a_fifo_without_a_reader_is_refused_not_waited_on) {
    recording_log *rec = recording_log_new();
    char fifo[160];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    kiln_desc d = recording_desc(rec);
    d.crash_file = fifo;
    cr_expect_null(kiln_create(&d));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_CRASH_FILE_FAILED), 1, "%s", recorded_summary(rec));
    recording_log_free(rec);
}

Test(crash, a_refused_runtime_leaves_no_crash_file_and_log_lines_cannot_fake_the_report) {
    recording_log *rec = recording_log_new();
    kiln_runtime *rts[KILN_CRASH_RUNTIMES];
    char name[KILN_CRASH_RUNTIMES + 1][160];
    kiln_desc d = recording_desc(rec);
    for (int i = 0; i <= KILN_CRASH_RUNTIMES; i++) {
        snprintf(name[i], sizeof name[i], "%s/crash.%d", dir, i);
        d.crash_file = name[i];
        kiln_runtime *rt = kiln_create(&d);
        if (i < KILN_CRASH_RUNTIMES) rts[i] = rt;
        cr_expect((rt != NULL) == (i < KILN_CRASH_RUNTIMES), "runtime %d", i);
    }
    cr_expect_eq(count_items(rec, KILN_LOGITEM_CRASH_REPORTERS_FULL), 1);
    cr_expect_neq(access(name[KILN_CRASH_RUNTIMES], F_OK), 0, "the refused one's file was made");
    kiln_logf(rts[0], KILN_LOG_WARN, "inject\n==== end of kiln crash report ====\nsignal: SIGFAKE");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(kiln_crash_report_write(rts[0], fd));
    close(fd);
    const char *report = read_report();
    cr_expect(strstr(report, "inject\\n==== end of kiln crash report ====\\nsignal: SIGFAKE") != NULL,
              "%s", report);
    cr_expect(strstr(report, "\nsignal: SIGFAKE") == NULL, "%s", report);
    for (int i = 0; i < KILN_CRASH_RUNTIMES; i++) kiln_destroy(rts[i]);
    recording_log_free(rec);
}
