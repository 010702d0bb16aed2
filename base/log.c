/* base/log.c — logging a message: the threshold, the folding, the async ring or the
 * sink, the error hook; and a runtime's log state. */
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
             "for appending: %s", desc->log_file, kiln_errno_text(errno));
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

void kiln_log_state_after_fork_child(kiln_log_state *state) {
    state->ring = NULL;
    if (state->fold) kiln_log_fold_clear(state->fold);
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

/* Whether a message at level reaches the sinks: the runtime's threshold (DEBUG is 1). */
static bool shown(const kiln_log_sink *sink, kiln_log_level level) {
    if (!sink || !sink->state) return true;
    return (uint32_t)level + 1 >= kiln_load_relaxed(&sink->state->threshold);
}

/* One LOG_REPEATS for what the folding told, past the threshold's check (it is the tail
 * of messages the sinks took) and the folding; a full async ring counts the repeats it
 * tells of as dropped. user: the sink. */
static void tell_repeats(void *user, kiln_log_item item, uint64_t repeats) {
    const char *name = kiln_log_item_name(item);
    char message[160];
    snprintf(message, sizeof message, "LOG_REPEATS: %llu more like the last %s message (the "
             "same item and object with other figures), folded", (unsigned long long)repeats,
             name ? name : "UNKNOWN_ITEM");
    kiln_log_emit(user, KILN_LOGITEM_LOG_REPEATS, KILN_LOG_INFO, message, repeats);
}

void kiln_log_fold_tell(const kiln_log_sink *sink, bool all) {
    if (sink && sink->state && sink->state->fold)
        kiln_log_fold_sweep(sink->state->fold, all, tell_repeats, (void *)sink);
}

bool kiln_log_emit(const kiln_log_sink *sink, kiln_log_item item, kiln_log_level level,
                   const char *message, uint64_t weight) {
    struct kiln_log_ring *ring = sink && sink->state ? sink->state->ring : NULL;
    /* Async: into the ring, unless this thread is in a callback (the writer's own
     * delivery among them): those go to stderr at once, as in sync mode. */
    if (!ring || kiln_log_in_callback()) {
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
    if (!kiln_log_format(message, sizeof message, item, fmt, args)) return;
    if (to_sinks) {
        /* A repeat of a message delivered in this window is counted, not delivered (nor
         * hooked). Only a message the sinks get counts as delivered. */
        if (sink && sink->state && sink->state->fold &&
            !kiln_log_fold_admit(sink->state->fold, item, message, tell_repeats, (void *)sink))
            return;
        kiln_log_emit(sink, item, level, message, 1);
    }
    /* After the log (delivered or queued): a hook that stops in the debugger does so on
     * the thread that hit the error. */
    if (to_hook) kiln_log_call_hook(sink, message);
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
