/* runtime/crash.c — the crash report: what kiln was doing when the process died. The
 * report is written with system calls alone (write; open, read and pread for thread and
 * symbol names; no malloc, no lock, no stdio: its numbers are formatted here), from
 * relaxed reads of what other threads publish: the contexts (never freed before
 * kiln_destroy), the job each runs (the scheduler's running_fn and running_flags), the
 * frame history (one try per record), the newest log lines (base/log_recent.h) and those
 * queued (base/log_ring.h), the memory snapshot (runtime/memory_snapshot.h), and the
 * options rendered at create. The handlers: one set per process, for SIGSEGV, SIGBUS,
 * SIGILL, SIGFPE and SIGABRT, each writing the report of every runtime with a crash_file
 * once, then handing the signal on as if kiln had not been there: to the handler
 * installed before (called directly), or to the default action (restored and raised
 * again, so the process dies of the signal and dumps core as before). */
#define _GNU_SOURCE   /* SA_ONSTACK, strsignal-free names, sigaction */
#include "crash.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "history.h"
#include "options.h"
#include "../base/log_recent.h"
#include "../base/log_ring.h"
#include "../base/symbol.h"

/* ---- write(2) and numbers, nothing else ---- */

/* A report's output and its larger scratch: a handler's is static (handlers report one
 * at a time), so that a small alternate signal stack holds the report; a
 * kiln_crash_report_write's is on its caller's stack. */
typedef struct out {
    int    fd;
    int    error;   /* the first write's errno that lost bytes; 0: all written */
    size_t used;
    char   buf[512];
    char   line[KILN_LOG_RECENT_TEXT];   /* a kept log line */
    kiln_frame_record record;           /* a history record */
} out;

/* Writes what is buffered: a write cut by a signal (EINTR) goes on; a full non-blocking
 * descriptor (EAGAIN) is given up to 100 ms; anything else loses the bytes (o->error). */
static void out_flush(out *o) {
    int full_waits = 0;
    for (size_t done = 0; done < o->used;) {
        ssize_t n = write(o->fd, o->buf + done, o->used - done);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && full_waits++ < 100) {
            struct timespec pause = { 0, 1000000 };   /* nanosleep: async-signal-safe */
            nanosleep(&pause, NULL);
            continue;
        }
        if (!o->error) o->error = n < 0 ? errno : EIO;
        break;   /* never loop on a dead descriptor */
    }
    o->used = 0;
}

static void put(out *o, const char *s) {
    for (; s && *s; s++) {
        if (o->used == sizeof o->buf) out_flush(o);
        o->buf[o->used++] = *s;
    }
}

/* A text of others' (a log line, a name): line ends as \n and \r, a backslash as \\,
 * other control bytes as \xNN, so it can neither fake a line of the report's own nor
 * pass for an escape. */
static void put_escaped(out *o, const char *s) {
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\n') put(o, "\\n");
        else if (c == '\r') put(o, "\\r");
        else if (c == '\\') put(o, "\\\\");
        else if (c < 0x20 || c == 0x7f)
            put(o, (char[]){ '\\', 'x', "0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15], 0 });
        else put(o, (char[]){ (char)c, 0 });
    }
}

/* v in decimal into text (21 bytes at least), NUL-ended; its length. */
static size_t format_u64(char *text, uint64_t v) {
    char digits[20];
    size_t n = 0;
    do digits[n++] = (char)('0' + v % 10); while ((v /= 10) != 0);
    for (size_t i = 0; i < n; i++) text[i] = digits[n - 1 - i];
    text[n] = '\0';
    return n;
}

static void put_u64(out *o, uint64_t v) {
    char text[21];
    format_u64(text, v);
    put(o, text);
}

static void put_hex(out *o, uintptr_t v) {
    char text[2 + 2 * sizeof v + 1] = "0x";
    size_t n = 2;
    int shift = (int)(8 * sizeof v) - 4;
    while (shift > 0 && ((v >> shift) & 0xf) == 0) shift -= 4;
    for (; shift >= 0; shift -= 4) text[n++] = "0123456789abcdef"[(v >> shift) & 0xf];
    text[n] = '\0';
    put(o, text);
}

static const char *signal_name(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS:  return "SIGBUS";
    case SIGILL:  return "SIGILL";
    case SIGFPE:  return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    }
    return "a signal";
}

/* ---- the report ---- */

/* "thread <tid> '<name>'": the thread's id and the name it has (as a debugger shows
 * it: /proc/self/task/<tid>/comm, read with open and read). */
static void put_thread(out *o, int32_t tid) {
    put(o, "thread ");
    if (tid <= 0) {
        put(o, "?");
        return;
    }
    put_u64(o, (uint64_t)tid);
    char path[48] = "/proc/self/task/";
    size_t n = strlen(path);
    n += format_u64(path + n, (uint64_t)tid);
    memcpy(path + n, "/comm", sizeof "/comm");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char name[32];
    ssize_t got = read(fd, name, sizeof name - 1);
    close(fd);
    if (got <= 0) return;
    name[got] = '\0';
    if (name[got - 1] == '\n') name[got - 1] = '\0';
    put(o, " '");
    put_escaped(o, name);
    put(o, "'");
}

/* The functions one report has named (contexts often run the same one), so that each
 * symbol table is read once per function, not once per context. Static: a report may run
 * on a small alternate signal stack. Only the report that holds naming uses it. */
#define NAMED_FUNCTIONS 16
static struct named_function {
    uintptr_t address, offset;
    bool      found;
    char      name[128];
} named[NAMED_FUNCTIONS];
static size_t named_count;
static _Atomic int naming;   /* the table's holder (one report at a time) */

static const struct named_function *name_function(uintptr_t address) {
    for (size_t i = 0; i < named_count; i++)
        if (named[i].address == address) return &named[i];
    struct named_function *f = &named[named_count < NAMED_FUNCTIONS ? named_count++ : 0];
    f->address = address;
    f->found = kiln_symbol_name(address, f->name, sizeof f->name, &f->offset);
    return f;
}

/* A job's function: its address, and its symbol where the process's files tell it. */
static void put_function(out *o, uintptr_t address, bool may_name) {
    put_hex(o, address);
    const struct named_function *f = may_name ? name_function(address) : NULL;
    if (!f || !f->found) return;
    put(o, " (");
    put_escaped(o, f->name);
    put(o, "+");
    put_hex(o, f->offset);
    put(o, ")");
}

/* The frame a frame job belongs to: its tag holds the low 31 bits of its epoch, which is
 * the frame clock's epoch now or the one before (only those two are ever live), and a
 * frame epoch is its frame's number. */
static uint64_t task_frame(kiln_runtime *rt, uint64_t task_flags) {
    uint64_t now = kiln_load_relaxed(&rt->handle_epoch);
    uint32_t behind = ((uint32_t)now - kiln_task_epoch(&(kiln_task){ .flags = task_flags })) &
                      0x7fffffffu;
    return now - behind;
}

static void report_contexts(out *o, kiln_runtime *rt) {
    put(o, "contexts:\n");
    bool may_name = kiln_exchange_acq_rel(&naming, 1) == 0;   /* else: addresses only */
    if (may_name) named_count = 0;
    /* The links are atomics (attach and detach relink them under the registry); a context
     * is never freed before kiln_destroy, and one detached meanwhile may lead the walk
     * into the list of kept contexts, which ends too. */
    for (kiln_ctx *ctx = kiln_load_acquire(&rt->contexts); ctx; ctx = kiln_load_acquire(&ctx->next)) {
        put(o, "  context ");
        put_u64(o, kiln_load_relaxed(&ctx->id));
        put(o, ctx->is_worker ? " (worker, " : " (attached, ");
        put_thread(o, kiln_load_relaxed(&ctx->tid));
        /* What the owner publishes as it goes: another thread's pair may be one job's
         * function and the next one's flags. */
        uintptr_t fn = kiln_load_relaxed(&ctx->queue.running_fn);
        uint64_t flags = kiln_load_relaxed(&ctx->queue.running_flags);
        if (!fn) {
            put(o, "): no job\n");
            continue;
        }
        put(o, "): running job ");
        put_function(o, fn, may_name);
        if (flags & KILN_TASK_BACKGROUND) {
            put(o, ", a background job\n");
        } else {
            put(o, ", a frame job of frame ");
            put_u64(o, task_frame(rt, flags));
            put(o, "\n");
        }
    }
    if (may_name) kiln_store_release(&naming, 0);
}

static void report_history(out *o, kiln_runtime *rt) {
    uint64_t written = kiln_history_written(rt);
    uint64_t first = written > 64 ? written - 64 : 0;
    put(o, "last frames (frame: duration us, jobs run, frame bytes, reserved bytes):\n");
    for (uint64_t i = first; i < written; i++) {
        kiln_frame_record *r = &o->record;
        if (!kiln_history_record(rt, i, r)) continue;
        put(o, "  frame ");
        put_u64(o, r->frame);
        put(o, ": ");
        put_u64(o, r->duration_ns / 1000);
        put(o, " us, ");
        put_u64(o, r->jobs_run);
        put(o, " jobs, ");
        put_u64(o, r->frame_bytes);
        put(o, " frame bytes, ");
        put_u64(o, r->reserved_bytes);
        put(o, " reserved\n");
    }
}

static void put_queued(void *user, kiln_log_level level, const char *text) {
    out *o = user;
    put(o, "  kiln ");
    put(o, kiln_log_level_text(level));
    put(o, ": ");
    put_escaped(o, text);
    put(o, "\n");
}

/* The newest lines delivered, then (log_mode=async) those still queued: the newest of
 * all, which the crash may have stopped before the writer's next round. */
static void report_log(out *o, kiln_runtime *rt) {
    kiln_log_recent *recent = rt->log_state.recent;
    put(o, "newest log lines (oldest first):\n");
    if (!recent) return;
    uint64_t next = kiln_load_relaxed(&recent->next);
    uint64_t first = next > KILN_LOG_RECENT_LINES ? next - KILN_LOG_RECENT_LINES : 0;
    for (uint64_t t = first; t < next; t++) {
        if (!kiln_log_recent_get(recent, t, o->line)) continue;
        put(o, "  ");
        put_escaped(o, o->line);
        put(o, "\n");
    }
    kiln_log_ring *ring = rt->log_state.ring;
    if (!ring) return;
    put(o, "queued in the async log, not delivered yet (oldest first):\n");
    kiln_log_ring_each_queued(ring, put_queued, o);
    uint64_t dropped = kiln_log_ring_dropped(ring);
    if (dropped) {
        put(o, "  (and ");
        put_u64(o, dropped);
        put(o, " messages dropped since create: the ring was full)\n");
    }
}

static const char *const snapshot_kinds[] = {
    [KILN_SNAPSHOT_FRAME_ARENAS] = "", [KILN_SNAPSHOT_ARENA] = "arena ",
    [KILN_SNAPSHOT_POOL] = "pool ", [KILN_SNAPSHOT_HANDLES] = "handle table ",
    [KILN_SNAPSHOT_TAG] = "tag ",
};

/* The memory section as kiln_snapshot_each hands it items: its header with the first. */
typedef struct memory_printer {
    out            *o;
    const uint64_t *frame;   /* kiln_snapshot_each's, set before the first item */
    bool            started;
} memory_printer;

static void put_allocator(void *user, const kiln_snapshot_item *item) {
    memory_printer *p = user;
    out *o = p->o;
    if (!p->started) {
        p->started = true;
        put(o, "memory at the end of frame ");
        put_u64(o, *p->frame);
        put(o, ":\n");
    }
    bool named = item->kind != KILN_SNAPSHOT_FRAME_ARENAS;
    put(o, "  ");
    put(o, item->kind <= KILN_SNAPSHOT_TAG ? snapshot_kinds[item->kind] : "? ");
    if (named) put(o, "'");
    put_escaped(o, item->name);
    put(o, named ? "': " : ": ");
    put_u64(o, item->bytes);
    put(o, named ? " bytes" : " bytes at the frame's peak");
    if (item->kind == KILN_SNAPSHOT_POOL || item->kind == KILN_SNAPSHOT_HANDLES) {
        put(o, ", ");
        put_u64(o, item->live);
        put(o, item->kind == KILN_SNAPSHOT_POOL ? " objects" : " items");
    }
    if (item->kind == KILN_SNAPSHOT_TAG) {
        put(o, " live, children included");
        if (item->budget) {
            put(o, ", budget ");
            put_u64(o, item->budget);
        }
    } else if (item->kind != KILN_SNAPSHOT_HANDLES) {
        put(o, ", ");
        put_u64(o, item->blocks);
        put(o, " blocks");
    }
    put(o, "\n");
}

/* The block pool now, then each allocator as the last frame end saw it
 * (runtime/memory_snapshot.h). */
static void report_memory(out *o, kiln_runtime *rt) {
    put(o, "memory: block pool reserved ");
    put_u64(o, kiln_load_relaxed(&rt->blocks.reserved_bytes));
    put(o, " bytes now, in blocks of ");
    put_u64(o, rt->blocks.block_size);
    put(o, "\n");
    uint64_t frame = 0, omitted = 0;
    memory_printer p = { .o = o, .frame = &frame };
    bool whole = kiln_snapshot_each(&rt->memory_snapshot, &frame, &omitted, put_allocator, &p);
    if (!p.started) put(o, "memory per allocator: no frame has ended yet\n");
    else if (!whole) put(o, "  (a frame end wrote over the rest)\n");
    else if (omitted) {
        put(o, "  and ");
        put_u64(o, omitted);
        put(o, " allocators more\n");
    }
}

/* SIGPIPE held off the calling thread while a report is written: a reader gone (a pipe,
 * a FIFO, a socket) loses the report, never turns the crash into a SIGPIPE death. A
 * SIGPIPE the writes raised is taken back before the mask is restored; one pending
 * before is left as it was. All of it async-signal-safe system calls. */
typedef struct pipe_guard {
    sigset_t old;
    bool     was_pending;
} pipe_guard;

static bool sigpipe_pending(void) {
    sigset_t pending;
    sigpending(&pending);
    return sigismember(&pending, SIGPIPE);
}

static void pipe_guard_begin(pipe_guard *g) {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    g->was_pending = sigpipe_pending();
    pthread_sigmask(SIG_BLOCK, &pipe, &g->old);
}

static void pipe_guard_end(pipe_guard *g) {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    if (!g->was_pending && sigpipe_pending())
        sigtimedwait(&pipe, NULL, &(struct timespec){ 0, 0 });   /* ours: taken back */
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* The report for a signal (sig 0: asked for, kiln_crash_report_write); info NULL or a
 * signal sent by a process (abort, raise, kill: si_code <= 0) has no faulting address.
 * 0, or the errno of the first write that lost bytes. */
static int report(out *o, kiln_runtime *rt, int fd, int sig, const siginfo_t *info) {
    pipe_guard guard;
    pipe_guard_begin(&guard);
    o->fd = fd;
    o->error = 0;
    o->used = 0;
    put(o, "==== kiln crash report (kiln " KILN_VERSION ") ====\n");
    put(o, "process: ");
    put_u64(o, (uint64_t)getpid());
    if (getpid() != rt->pid) {
        put(o, ", a child forked from process ");
        put_u64(o, (uint64_t)rt->pid);
        put(o, " after kiln_create (kiln's threads did not follow it: what follows is "
                "the parent's state as the fork copied it)");
    }
    put(o, "\n");
    if (sig) {
        put(o, "signal: ");
        put(o, signal_name(sig));
        put(o, " (");
        put_u64(o, (uint64_t)sig);
        if (info && info->si_code > 0) {
            put(o, "), address ");
            put_hex(o, (uintptr_t)info->si_addr);
        } else {
            put(o, "), sent by process ");
            put_u64(o, info ? (uint64_t)info->si_pid : 0);
        }
        put(o, "\n");
    } else {
        put(o, "asked for (kiln_crash_report_write), no signal\n");
    }
    int32_t self = (int32_t)gettid();
    kiln_ctx *mine = NULL;
    for (kiln_ctx *ctx = kiln_load_acquire(&rt->contexts); ctx && !mine; ctx = kiln_load_acquire(&ctx->next))
        if (kiln_load_relaxed(&ctx->tid) == self) mine = ctx;
    put(o, "thread: ");
    if (mine) {
        put(o, "context ");
        put_u64(o, kiln_load_relaxed(&mine->id));
        put(o, mine->is_worker ? " (a worker, " : " (an attached thread, ");
    } else {
        put(o, "not one of this runtime's contexts (");
    }
    put_thread(o, self);
    put(o, ")\n");
    put(o, "frame: ");
    put_u64(o, kiln_load_relaxed(&rt->frame));
    put(o, kiln_load_relaxed(&rt->frame_open) ? " (open)\n" : " (closed)\n");
    report_contexts(o, rt);
    report_history(o, rt);
    report_log(o, rt);
    report_memory(o, rt);
    put(o, "configuration:\n");
    put(o, rt->crash_config);
    put(o, "==== end of kiln crash report ====\n");
    out_flush(o);
    pipe_guard_end(&guard);
    return o->error;
}

/* ---- the handlers ---- */

static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
#define FATAL_COUNT (sizeof fatal_signals / sizeof fatal_signals[0])

static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;   /* not in handlers */
static _Atomic(kiln_runtime *) reporters[KILN_CRASH_RUNTIMES];
static struct sigaction previous[FATAL_COUNT];   /* under install_lock; read by handlers */
static int installed;                            /* runtimes joined: under install_lock */
static out handler_out;                         /* the handlers' report (one at a time) */
static _Atomic(pthread_t) reporting_thread;     /* the thread writing (valid while 1) */
static _Atomic int reporting;                    /* 0, then 1 while the first handler
                                                    writes, 2 once it has written */

static void on_fatal(int sig, siginfo_t *info, void *context) {
    size_t which = 0;
    while (which < FATAL_COUNT && fatal_signals[which] != sig) which++;
    /* Once: the first handler writes; another thread's crash meanwhile waits for it (a
     * few seconds at most) before it goes on, so the process does not die under the
     * report; a crash inside the report's own thread goes straight on. */
    int expected = 0;
    if (atomic_compare_exchange_strong(&reporting, &expected, 1)) {
        atomic_store(&reporting_thread, pthread_self());
        for (size_t i = 0; i < KILN_CRASH_RUNTIMES; i++) {
            kiln_runtime *rt = atomic_load(&reporters[i]);
            if (rt) report(&handler_out, rt, rt->crash_fd, sig, info);
        }
        atomic_store(&reporting, 2);
    } else if (!pthread_equal(atomic_load(&reporting_thread), pthread_self())) {
        struct timespec pause = { 0, 1000000 };   /* 1 ms; nanosleep is async-signal-safe */
        for (int i = 0; i < 5000 && atomic_load(&reporting) == 1; i++) nanosleep(&pause, NULL);
    }
    if (which == FATAL_COUNT) return;
    struct sigaction before = previous[which];
    if (before.sa_flags & SA_SIGINFO) {
        if (before.sa_sigaction) {
            before.sa_sigaction(sig, info, context);
            return;
        }
    } else if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN &&
               before.sa_handler != NULL) {
        before.sa_handler(sig);
        return;
    }
    /* The default action (or ignore, as it was): restored, and the signal raised again;
     * it is blocked in here, so it lands when this returns (a fault's instruction runs
     * again and faults likewise). */
    sigaction(sig, &before, NULL);
    raise(sig);
}

static void install(void) {
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = on_fatal;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    for (size_t i = 0; i < FATAL_COUNT; i++) sigaction(fatal_signals[i], &ours, &previous[i]);
}

static void uninstall(void) {
    for (size_t i = 0; i < FATAL_COUNT; i++) {
        struct sigaction now;
        sigaction(fatal_signals[i], NULL, &now);
        /* Only where ours is still there: a handler installed after it stays. */
        if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_fatal)
            sigaction(fatal_signals[i], &previous[i], NULL);
    }
}

bool kiln_crash_init(kiln_runtime *rt) {
    rt->crash_fd = -1;
    /* Rendered for every runtime: kiln_crash_report_write may be asked without a file. */
    FILE *config = fmemopen(rt->crash_config, sizeof rt->crash_config - 1, "w");
    if (config) {
        kiln_desc effective = kiln_runtime_desc(rt);
        kiln_options_print(config, "  ", &effective, &rt->option_sources);
        fclose(config);
    }
    if (!rt->desc.crash_file) return true;
    pthread_mutex_lock(&install_lock);
    size_t slot = 0;
    while (slot < KILN_CRASH_RUNTIMES && atomic_load(&reporters[slot])) slot++;
    if (slot == KILN_CRASH_RUNTIMES) {   /* before the file: a refusal leaves none behind */
        pthread_mutex_unlock(&install_lock);
        kiln_log(&rt->log, KILN_LOGITEM_CRASH_REPORTERS_FULL, "kiln_create: %d runtimes have a "
                 "crash_file already (KILN_CRASH_RUNTIMES)", KILN_CRASH_RUNTIMES);
        return false;
    }
    /* O_NONBLOCK: a FIFO with no reader refuses (ENXIO) instead of blocking create; the
     * writes of a report block as usual. */
    rt->crash_fd = open(rt->desc.crash_file,
                        O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0644);
    if (rt->crash_fd >= 0) fcntl(rt->crash_fd, F_SETFL, O_WRONLY | O_APPEND);
    if (rt->crash_fd < 0) {
        pthread_mutex_unlock(&install_lock);
        kiln_log(&rt->log, KILN_LOGITEM_CRASH_FILE_FAILED, "kiln_create: crash_file '%s' cannot "
                 "be opened for appending: %s", rt->desc.crash_file, kiln_errno_text(errno));
        return false;
    }
    if (installed++ == 0) install();
    atomic_store(&reporters[slot], rt);   /* seq_cst: whole before a handler may read it */
    pthread_mutex_unlock(&install_lock);
    return true;
}

void kiln_crash_fini(kiln_runtime *rt) {
    if (rt->crash_fd < 0) return;
    pthread_mutex_lock(&install_lock);
    for (size_t i = 0; i < KILN_CRASH_RUNTIMES; i++) {
        kiln_runtime *expected = rt;
        atomic_compare_exchange_strong(&reporters[i], &expected, NULL);
    }
    if (--installed == 0) uninstall();
    pthread_mutex_unlock(&install_lock);
    close(rt->crash_fd);
    rt->crash_fd = -1;
}

bool kiln_crash_report_write(kiln_runtime *rt, int fd) {
    if (!kiln_runtime_check(rt, "kiln_crash_report_write")) return false;
    if (fd < 0) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_CRASH_FD_INVALID,
                        "kiln_crash_report_write: fd %d is no descriptor", fd);
        return false;
    }
    out o;   /* this caller's own */
    int error = report(&o, rt, fd, 0, NULL);
    if (error) {
        kiln_log(&rt->log, KILN_LOGITEM_CRASH_WRITE_FAILED, "kiln_crash_report_write: the "
                 "report could not be written whole into fd %d: %s", fd, kiln_errno_text(error));
        return false;
    }
    return true;
}
