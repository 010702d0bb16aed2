/* base/log_sink.c — delivering one formatted message on this thread: the callbacks,
 * the log file or the stderr default, the newest lines kept for the crash report, and the
 * guard that keeps a callback's own refused calls out of the callbacks. */
#include "log_sink.h"

#include <stdio.h>
#include <unistd.h>

#include "log_recent.h"

const char *kiln_log_level_text(kiln_log_level level) {
    switch (level) {
    case KILN_LOG_DEBUG: return "debug";
    case KILN_LOG_INFO:  return "info";
    case KILN_LOG_WARN:  return "warn";
    case KILN_LOG_ERROR: return "error";
    }
    return "log";
}

/* "kiln <level>: <message>" into line (cut at size - 1); its length, or -1. */
static int format_line(char *line, size_t size, kiln_log_level level, const char *message) {
    int n = snprintf(line, size, "kiln %s: %s", kiln_log_level_text(level), message);
    if (n < 0) return -1;
    return (size_t)n >= size ? (int)size - 1 : n;
}

/* A formatted line and its '\n' on fd, one write(2): lines from several threads never
 * interleave. line has room for the '\n' at length. */
static void write_formatted(int fd, char *line, int length) {
    if (length < 0) return;
    line[length] = '\n';
    ssize_t written = write(fd, line, (size_t)length + 1);
    (void)written;
    line[length] = '\0';
}

#define LINE_BYTES 601   /* a line of 599 bytes, its '\n' and the NUL */

void kiln_log_stderr(void *user, kiln_log_level level, const char *message) {
    (void)user;
    char line[LINE_BYTES];
    write_formatted(STDERR_FILENO, line, format_line(line, sizeof line - 1, level, message));
}

/* How deep this thread is in the sink's callbacks: 0 outside them. This thread's own. */
static _Thread_local unsigned callback_depth;

bool kiln_log_in_callback(void) { return callback_depth != 0; }

void kiln_log_deliver(const kiln_log_sink *sink, kiln_log_item item, kiln_log_level level,
                      const char *message) {
    /* "kiln <level>: <message>", formatted once for the kept lines, the file and stderr. */
    char line[LINE_BYTES];
    int length = format_line(line, sizeof line - 1, level, message);
    if (sink && sink->state && sink->state->recent && length >= 0)
        kiln_log_recent_put(sink->state->recent, line);
    /* A message from inside a callback (one of its calls refused) goes to stderr only:
     * back into the callbacks, a callback that makes the same call again would never
     * return. */
    if (callback_depth != 0) {
        write_formatted(STDERR_FILENO, line, length);
        return;
    }
    callback_depth++;
    int file = sink && sink->state ? sink->state->file_fd : -1;
    if (sink && sink->fn) sink->fn(sink->user, level, message);
    else if (file < 0) write_formatted(STDERR_FILENO, line, length);   /* the default */
    if (file >= 0) write_formatted(file, line, length);   /* the default's place, or beside fn */
    if (sink && sink->item_fn) sink->item_fn(sink->user, level, item, message);
    callback_depth--;
}

bool kiln_log_format(char *message, size_t size, kiln_log_item item, const char *fmt, va_list args) {
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
    bool ok = kiln_log_format(message, sizeof message, item, fmt, args);
    va_end(args);
    if (ok) kiln_log_deliver(sink, item, kiln_log_item_level(item), message);
}

void kiln_log_call_hook(const kiln_log_sink *sink, const char *message) {
    if (callback_depth != 0 || !sink || !sink->error_hook) return;
    callback_depth++;
    sink->error_hook(sink->error_hook_user, message);
    callback_depth--;
}
