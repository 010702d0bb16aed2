/* base/log.c — the log formatter and the default stderr sink. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "atomics.h"

static const char *level_name(kiln_log_level level) {
    switch (level) {
    case KILN_LOG_DEBUG: return "debug";
    case KILN_LOG_INFO:  return "info";
    case KILN_LOG_WARN:  return "warn";
    case KILN_LOG_ERROR: return "error";
    }
    return "log";
}

void kiln_log_stderr(void *user, kiln_log_level level, const char *message) {
    (void)user;
    char line[600];
    int n = snprintf(line, sizeof line, "kiln %s: %s\n", level_name(level), message);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = (int)sizeof line - 1;
    /* One write(2) per message: lines from several threads never interleave. */
    ssize_t written = write(STDERR_FILENO, line, (size_t)n);
    (void)written;
}

/* How deep this thread is in the sink's callbacks: 0 outside them. This thread's own. */
static _Thread_local unsigned callback_depth;

bool kiln_log_in_callback(void) { return callback_depth != 0; }

static void deliver(const kiln_log_sink *sink, kiln_log_item item, const char *fmt,
                    va_list args) {
    const char *name = kiln_log_item_name(item);
    kiln_log_level level = kiln_log_item_level(item);
    char message[512];
    int head = snprintf(message, sizeof message, "%s: ", name ? name : "UNKNOWN_ITEM");
    if (head < 0 || (size_t)head >= sizeof message) return;
    vsnprintf(message + head, sizeof message - (size_t)head, fmt, args);
    /* A message from inside a callback (one of its calls refused) goes to stderr only:
     * back into the callbacks, a callback that makes the same call again would never
     * return. */
    if (callback_depth != 0) {
        kiln_log_stderr(NULL, level, message);
        return;
    }
    callback_depth++;
    if (sink && sink->fn) sink->fn(sink->user, level, message);
    else kiln_log_stderr(NULL, level, message);
    if (sink && sink->item_fn) sink->item_fn(sink->user, level, item, message);
    /* After the log: a hook that stops in the debugger finds the message delivered. */
    if (level == KILN_LOG_ERROR && sink && sink->error_hook)
        sink->error_hook(sink->error_hook_user, message);
    callback_depth--;
}

void kiln_log(const kiln_log_sink *sink, kiln_log_item item, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    deliver(sink, item, fmt, args);
    va_end(args);
}

void kiln_log_misuse(const kiln_log_sink *sink, kiln_log_item item, const char *fmt, ...) {
    if (sink && sink->misuse) kiln_add_relaxed(sink->misuse, 1);
    va_list args;
    va_start(args, fmt);
    deliver(sink, item, fmt, args);
    va_end(args);
}
