/* runtime/trace_write.c — kiln_trace_write: copies each context's trace ring (the
 * protocol is in trace.h), and writes the events as Chrome trace-event JSON, with the
 * threads named and the jobs named by their functions' symbols. */
#define _GNU_SOURCE   /* dladdr */
#include "trace.h"
#include "check.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/sys_alloc.h"
#include "../base/seqlock.h"
#include "../jobs/task.h"
#include "json.h"

/* One event as copied out of a ring. */
typedef struct trace_event { uint64_t ts, value, what, tag; } trace_event;

/* A thread seen in the events: its context id and what it did. */
typedef struct trace_thread {
    uint32_t id;
    bool     worker;
    bool     driver;   /* recorded frame events: it drives the frame clock */
} trace_thread;

/* Job functions by address -> symbol (NULL: none), direct-mapped: dladdr costs a
 * microsecond or so, a trace holds up to 64 Ki events per context. */
#define NAME_CACHE 512
typedef struct fn_name { uint64_t fn; const char *name; } fn_name;

typedef struct trace_writer {
    FILE         *out;
    bool          first;        /* no event written yet: no comma before the next */
    long          pid;
    trace_thread *threads;
    size_t        thread_count, thread_cap;
    bool          out_of_memory;
    fn_name       names[NAME_CACHE];
} trace_writer;

/* Copies the events ring holds into buf (KILN_TRACE_RING_EVENTS of them at most),
 * oldest first, leaving out any the ring's thread may have been overwriting. */
static size_t ring_copy(kiln_trace_ring *ring, trace_event *buf) {
    uint64_t head = kiln_seq_snapshot(&ring->head);
    uint64_t first = head > KILN_TRACE_RING_EVENTS ? head - KILN_TRACE_RING_EVENTS : 0;
    for (uint64_t n = first; n < head; n++) {
        kiln_trace_slot *slot = &ring->slots[n & (KILN_TRACE_RING_EVENTS - 1)];
        buf[n - first] = (trace_event){
            .ts = kiln_load_relaxed(&slot->ts),
            .value = kiln_load_relaxed(&slot->value),
            .what = kiln_load_relaxed(&slot->what),
            .tag = kiln_load_relaxed(&slot->tag),
        };
    }
    uint64_t claimed = kiln_seq_recheck(&ring->claimed);   /* after the slots (see trace.h) */
    uint64_t safe = claimed > KILN_TRACE_RING_EVENTS ? claimed - KILN_TRACE_RING_EVENTS : 0;
    if (safe <= first) return (size_t)(head - first);
    if (safe >= head) return 0;
    memmove(buf, buf + (safe - first), (size_t)(head - safe) * sizeof *buf);
    return (size_t)(head - safe);
}

static void note_thread(trace_writer *w, uint32_t id, bool worker, bool driver) {
    for (size_t i = w->thread_count; i-- > 0;) {
        if (w->threads[i].id == id) {
            w->threads[i].driver |= driver;
            return;
        }
    }
    if (w->thread_count == w->thread_cap) {
        size_t cap = w->thread_cap ? 2 * w->thread_cap : 16;
        trace_thread *grown = kiln_sys_realloc(w->threads, cap * sizeof *grown);
        if (!grown) {
            w->out_of_memory = true;   /* the thread goes unnamed; the events are written */
            return;
        }
        w->threads = grown;
        w->thread_cap = cap;
    }
    w->threads[w->thread_count++] = (trace_thread){ id, worker, driver };
}

/* The exported symbol at exactly fn, or NULL (dladdr's nearest symbol below a static
 * function would be some other function's name). */
static const char *fn_symbol(trace_writer *w, uint64_t fn) {
    fn_name *entry = &w->names[(fn >> 4) & (NAME_CACHE - 1)];
    if (entry->fn == fn) return entry->name;
    Dl_info info;
    const char *name = NULL;
    if (dladdr((void *)(uintptr_t)fn, &info) && info.dli_sname &&
        (uint64_t)(uintptr_t)info.dli_saddr == fn)
        name = info.dli_sname;
    *entry = (fn_name){ fn, name };
    return name;
}

/* Opens one event object: the comma, then name, category, phase, time, pid, tid. */
static void event_open(trace_writer *w, const char *name, const char *cat, char ph, uint64_t ts_ns,
                       uint32_t tid) {
    fputs(w->first ? "\n" : ",\n", w->out);
    w->first = false;
    fputs("{\"name\":", w->out);
    kiln_json_string(w->out, name);
    fprintf(w->out, ",\"cat\":\"%s\",\"ph\":\"%c\",\"ts\":%" PRIu64 ".%03" PRIu64
            ",\"pid\":%ld,\"tid\":%" PRIu32, cat, ph, ts_ns / 1000, ts_ns % 1000, w->pid, tid);
}

static void write_duration(trace_writer *w, uint64_t ns) {
    fprintf(w->out, ",\"dur\":%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
}

static void write_job(trace_writer *w, const trace_event *e, uint32_t tid, uint32_t flags) {
    const char *symbol = fn_symbol(w, e->what);
    char name[48];
    if (!symbol) snprintf(name, sizeof name, "job 0x%" PRIx64, e->what);
    event_open(w, symbol ? symbol : name, "job", 'X', e->ts, tid);
    write_duration(w, e->value);
    fprintf(w->out, ",\"args\":{\"fn\":\"0x%" PRIx64 "\",\"range\":%s,\"background\":%s,"
            "\"high\":%s}}", e->what, flags & KILN_TASK_RANGE ? "true" : "false",
            flags & KILN_TASK_BACKGROUND ? "true" : "false",
            flags & KILN_TASK_HIGH ? "true" : "false");
}

static void write_frame_mark(trace_writer *w, const char *name, uint64_t ts, uint32_t tid,
                             uint64_t frame) {
    event_open(w, name, "frame", 'i', ts, tid);
    fprintf(w->out, ",\"s\":\"g\",\"args\":{\"frame\":%" PRIu64 "}}", frame);
}

static void write_counter(trace_writer *w, const char *name, const char *cat, uint64_t ts,
                          uint32_t tid, const char *arg, uint64_t value) {
    event_open(w, name, cat, 'C', ts, tid);
    fprintf(w->out, ",\"args\":{\"%s\":%" PRIu64 "}}", arg, value);
}

static void write_event(trace_writer *w, const trace_event *e) {
    uint32_t kind = (uint32_t)(e->tag & 0xffu), flags = (uint32_t)(e->tag >> 8 & 0xffu);
    uint32_t tid = (uint32_t)(e->tag >> 32);
    bool worker = (e->tag >> 16 & KILN_TRACE_WORKER) != 0;
    char name[96];
    note_thread(w, tid, worker, kind != KILN_TRACE_JOB);   /* only the driver records the rest */
    switch (kind) {
    case KILN_TRACE_JOB:
        write_job(w, e, tid, flags);
        break;
    case KILN_TRACE_FRAME_BEGIN:
        write_frame_mark(w, "frame begin", e->ts, tid, e->value);
        break;
    case KILN_TRACE_FRAME:
        snprintf(name, sizeof name, "frame %" PRIu64, e->what);
        event_open(w, name, "frame", 'X', e->ts, tid);
        write_duration(w, e->value);
        fprintf(w->out, ",\"args\":{\"frame\":%" PRIu64 "}}", e->what);
        write_frame_mark(w, "frame end", e->ts + e->value, tid, e->what);
        break;
    case KILN_TRACE_COUNTER_FRAME_BYTES:
        snprintf(name, sizeof name, "frame bytes ctx %" PRIu64, e->what);
        write_counter(w, name, "memory", e->ts, tid, "bytes", e->value);
        break;
    case KILN_TRACE_COUNTER_POOL_LIVE:   /* a pool's bookkeeping lives until kiln_destroy */
        snprintf(name, sizeof name, "pool live %s", ((const kiln_pool *)(uintptr_t)e->what)->name);
        write_counter(w, name, "pool", e->ts, tid, "live", e->value);
        break;
    case KILN_TRACE_COUNTER_JOBS:
        write_counter(w, "jobs per frame", "jobs", e->ts, tid, "jobs", e->value);
        break;
    default:
        break;
    }
}

/* The "M" events: the process, and each thread's name and place (by context id). */
static void write_metadata(trace_writer *w) {
    event_open(w, "process_name", "__metadata", 'M', 0, 0);
    fputs(",\"args\":{\"name\":\"kiln\"}}", w->out);
    for (size_t i = 0; i < w->thread_count; i++) {
        const trace_thread *t = &w->threads[i];
        char name[32];
        snprintf(name, sizeof name, "%s %" PRIu32,
                 t->driver ? "main ctx" : t->worker ? "worker" : "ctx", t->id);
        event_open(w, "thread_name", "__metadata", 'M', 0, t->id);
        fputs(",\"args\":{\"name\":", w->out);
        kiln_json_string(w->out, name);
        fputs("}}", w->out);
        event_open(w, "thread_sort_index", "__metadata", 'M', 0, t->id);   /* the driver on top */
        fprintf(w->out, ",\"args\":{\"sort_index\":%" PRIu32 "}}", t->driver ? 0 : t->id);
    }
}

static KILN_COLD bool write_failed(kiln_runtime *rt, const char *what) {
    kiln_log(&rt->log, KILN_LOGITEM_TRACE_WRITE_FAILED, "kiln_trace_write: %s", what);
    return false;
}

bool kiln_trace_write_file(kiln_runtime *rt, FILE *out) {
    if (!kiln_runtime_check(rt, "kiln_trace_write_file")) return false;
    if (!out) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_TRACE_NULL_FILE, "kiln_trace_write_file: out is NULL");
        return false;
    }
    trace_writer *w = kiln_sys_calloc(1, sizeof *w);
    trace_event *buf = kiln_sys_alloc(KILN_TRACE_RING_EVENTS * sizeof *buf);
    if (!w || !buf) {
        kiln_sys_free(w);
        kiln_sys_free(buf);
        return write_failed(rt, "no memory to copy a ring");
    }
    *w = (trace_writer){ .out = out, .first = true, .pid = (long)getpid() };
    pthread_mutex_lock(&rt->trace.lock);
    kiln_trace_ring *rings = rt->trace.rings;   /* listed rings stay, their next never changes */
    pthread_mutex_unlock(&rt->trace.lock);
    fputs("{\"traceEvents\":[", out);
    for (kiln_trace_ring *ring = rings; ring; ring = ring->next) {
        size_t count = ring_copy(ring, buf);
        for (size_t i = 0; i < count; i++) write_event(w, &buf[i]);
    }
    write_metadata(w);
    kiln_trace_stats stats;
    kiln_trace_stats_get(rt, &stats);
    fprintf(out, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"writer\":\"kiln\","
            "\"ring_events\":%" PRIu64 ",\"recorded\":%" PRIu64 ",\"dropped\":%" PRIu64 "}}\n",
            stats.ring_events, stats.recorded, stats.dropped);
    bool named = !w->out_of_memory, written = fflush(out) == 0 && !ferror(out);
    kiln_sys_free(w->threads);
    kiln_sys_free(w);
    kiln_sys_free(buf);
    if (!written) return write_failed(rt, "the stream reported an error");
    return named ? true : write_failed(rt, "no memory to name the threads (the events are written)");
}

bool kiln_trace_write(kiln_runtime *rt, const char *path) {
    if (!kiln_runtime_check(rt, "kiln_trace_write")) return false;
    if (!path) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_TRACE_NULL_PATH, "kiln_trace_write: path is NULL");
        return false;
    }
    FILE *out = fopen(path, "w");
    if (!out) {
        kiln_log(&rt->log, KILN_LOGITEM_TRACE_WRITE_FAILED, "kiln_trace_write: cannot open "
                 "'%s': %s", path, kiln_errno_text(errno));
        return false;
    }
    bool ok = kiln_trace_write_file(rt, out);
    if (fclose(out) != 0 && ok) {
        kiln_log(&rt->log, KILN_LOGITEM_TRACE_WRITE_FAILED, "kiln_trace_write: closing "
                 "'%s': %s", path, kiln_errno_text(errno));
        ok = false;
    }
    return ok;
}
