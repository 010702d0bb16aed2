/* base/log.c — the log formatter and the default stderr sink. */
#define _POSIX_C_SOURCE 200809L   /* O_CLOEXEC */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "atomics.h"
#include "log_fold.h"
#include "log_recent.h"
#include "log_ring.h"

static const char *level_name(kiln_log_level level) {
    switch (level) {
    case KILN_LOG_DEBUG: return "debug";
    case KILN_LOG_INFO:  return "info";
    case KILN_LOG_WARN:  return "warn";
    case KILN_LOG_ERROR: return "error";
    }
    return "log";
}

/* "kiln <level>: <message>\n" on fd, one write(2): lines from several threads never
 * interleave. */
static void write_line(int fd, kiln_log_level level, const char *message) {
    char line[600];
    int n = snprintf(line, sizeof line, "kiln %s: %s\n", level_name(level), message);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = (int)sizeof line - 1;
    ssize_t written = write(fd, line, (size_t)n);
    (void)written;
}

void kiln_log_stderr(void *user, kiln_log_level level, const char *message) {
    (void)user;
    write_line(STDERR_FILENO, level, message);
}

bool kiln_log_state_init(kiln_log_state *state, const kiln_desc *desc, const kiln_log_sink *early) {
    kiln_store_relaxed(&state->threshold, (uint32_t)desc->log_level);
    state->file_fd = -1;
    state->ring = NULL;
    state->fold = NULL;
    state->recent = NULL;
    if (!desc->log_file) return true;
    state->file_fd = open(desc->log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (state->file_fd >= 0) return true;
    kiln_log(early, KILN_LOGITEM_LOG_FILE_FAILED, "kiln_create: log_file '%s' cannot be opened "
             "for appending: %s", desc->log_file, strerror(errno));
    return false;
}

bool kiln_log_state_start_async(kiln_log_state *state, const kiln_log_sink *sink) {
    state->ring = kiln_log_ring_start(sink);
    return state->ring != NULL;
}

void kiln_log_flush_state(kiln_log_state *state) {
    if (state->ring) kiln_log_ring_drain(state->ring);
}

uint64_t kiln_log_dropped(const kiln_log_state *state) {
    return state->ring ? kiln_log_ring_dropped(state->ring) : 0;
}

void kiln_log_state_stop_async(kiln_log_state *state) {
    kiln_log_ring_stop(state->ring);   /* delivers what is left, into the file too */
    state->ring = NULL;
}

void kiln_log_state_fini(kiln_log_state *state) {
    kiln_log_state_stop_async(state);
    if (state->file_fd >= 0) close(state->file_fd);
    state->file_fd = -1;
}

/* How deep this thread is in the sink's callbacks: 0 outside them. This thread's own. */
static _Thread_local unsigned callback_depth;

bool kiln_log_in_callback(void) { return callback_depth != 0; }

/* Whether a message at level reaches the sinks: the runtime's threshold (DEBUG is 1). */
static bool shown(const kiln_log_sink *sink, kiln_log_level level) {
    if (!sink || !sink->state) return true;
    return (uint32_t)level + 1 >= kiln_load_relaxed(&sink->state->threshold);
}

void kiln_log_deliver(const kiln_log_sink *sink, kiln_log_item item, kiln_log_level level,
                      const char *message) {
    if (sink && sink->state && sink->state->recent)
        kiln_log_recent_put(sink->state->recent, level, message);
    /* A message from inside a callback (one of its calls refused) goes to stderr only:
     * back into the callbacks, a callback that makes the same call again would never
     * return. */
    if (callback_depth != 0) {
        kiln_log_stderr(NULL, level, message);
        return;
    }
    callback_depth++;
    int file = sink && sink->state ? sink->state->file_fd : -1;
    if (sink && sink->fn) sink->fn(sink->user, level, message);
    else if (file < 0) kiln_log_stderr(NULL, level, message);
    if (file >= 0) write_line(file, level, message);   /* the default's place, or beside fn */
    if (sink && sink->item_fn) sink->item_fn(sink->user, level, item, message);
    callback_depth--;
}

/* "ITEM: " and the details, cut at 511 bytes; false when even the name does not fit. */
static bool format(char *message, size_t size, kiln_log_item item, const char *fmt, va_list args) {
    const char *name = kiln_log_item_name(item);
    int head = snprintf(message, size, "%s: ", name ? name : "UNKNOWN_ITEM");
    if (head < 0 || (size_t)head >= size) return false;
    vsnprintf(message + head, size - (size_t)head, fmt, args);
    return true;
}

void kiln_log_deliver_fmt(const kiln_log_sink *sink, kiln_log_item item, const char *fmt, ...) {
    char message[512];
    va_list args;
    va_start(args, fmt);
    bool ok = format(message, sizeof message, item, fmt, args);
    va_end(args);
    if (ok) kiln_log_deliver(sink, item, kiln_log_item_level(item), message);
}

bool kiln_log_emit(const kiln_log_sink *sink, kiln_log_item item, kiln_log_level level,
                   const char *message, uint64_t weight) {
    struct kiln_log_ring *ring = sink && sink->state ? sink->state->ring : NULL;
    /* Async: into the ring, unless this thread is in a callback (the writer's own
     * delivery among them): those go to stderr at once, as in sync mode. */
    if (!ring || callback_depth != 0) {
        kiln_log_deliver(sink, item, level, message);
        return true;
    }
    if (kiln_log_ring_put(ring, level, item, message)) return true;
    if (weight > 1) kiln_log_ring_lost(ring, weight - 1);   /* the put counted one */
    return false;
}

static void deliver(const kiln_log_sink *sink, kiln_log_item item, kiln_log_level level,
                    const char *fmt, va_list args) {
    bool to_sinks = shown(sink, level);
    bool to_hook = level == KILN_LOG_ERROR && sink && sink->error_hook;
    if (!to_sinks && !to_hook) return;
    char message[512];
    if (!format(message, sizeof message, item, fmt, args)) return;
    if (to_sinks) {
        /* A repeat of a message delivered in this window is counted, not delivered (nor
         * hooked). Only a message the sinks get counts as delivered. */
        if (sink && sink->state && sink->state->fold &&
            !kiln_log_fold_admit(sink->state->fold, sink, item, message))
            return;
        kiln_log_emit(sink, item, level, message, 1);
    }
    /* After the log (delivered or queued): a hook that stops in the debugger does so on
     * the thread that hit the error. */
    if (to_hook && callback_depth == 0) {
        callback_depth++;
        sink->error_hook(sink->error_hook_user, message);
        callback_depth--;
    }
}

void kiln_log(const kiln_log_sink *sink, kiln_log_item item, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    deliver(sink, item, kiln_log_item_level(item), fmt, args);
    va_end(args);
}

void kiln_log_at(const kiln_log_sink *sink, kiln_log_item item, kiln_log_level level,
                 const char *fmt, va_list args) {
    deliver(sink, item, level, fmt, args);
}

void kiln_log_misuse(const kiln_log_sink *sink, kiln_log_item item, const char *fmt, ...) {
    if (sink && sink->misuse) kiln_add_relaxed(sink->misuse, 1);
    va_list args;
    va_start(args, fmt);
    deliver(sink, item, kiln_log_item_level(item), fmt, args);
    va_end(args);
}
