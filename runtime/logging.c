/* runtime/logging.c — a runtime's log for the program: kiln_logf (the engine's own
 * messages, on kiln's path), kiln_log_flush (the async ring, now) and kiln_log_set_level
 * (the threshold at run time). */
#include "check.h"

static bool level_ok(const kiln_runtime *rt, uint32_t level, uint32_t last, const char *function) {
    if (level <= last) return true;
    kiln_log_misuse(&rt->log, KILN_LOGITEM_LOG_LEVEL_INVALID, "%s: level %u is none (0 to %u)",
                    function, (unsigned)level, (unsigned)last);
    return false;
}

void kiln_logf(kiln_runtime *rt, kiln_log_level level, const char *fmt, ...) {
    if (!kiln_runtime_check(rt, "kiln_logf")) return;
    if (!level_ok(rt, (uint32_t)level, KILN_LOG_ERROR, "kiln_logf")) return;
    if (!fmt) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_LOG_FORMAT_NULL, "kiln_logf: fmt is NULL");
        return;
    }
    va_list args;
    va_start(args, fmt);
    kiln_log_at(&rt->log, KILN_LOGITEM_APP_LOG, level, fmt, args);
    va_end(args);
}

void kiln_log_flush(kiln_runtime *rt) {
    if (!kiln_runtime_check(rt, "kiln_log_flush")) return;
    if (!kiln_outside_log_callback(&rt->log, "kiln_log_flush")) return;
    kiln_log_flush_state(&rt->log_state);
}

void kiln_log_set_level(kiln_runtime *rt, kiln_log_threshold threshold) {
    if (!kiln_runtime_check(rt, "kiln_log_set_level")) return;
    if (!level_ok(rt, (uint32_t)threshold, KILN_LOG_THRESHOLD_OFF, "kiln_log_set_level")) return;
    if (threshold == KILN_LOG_THRESHOLD_DEFAULT) threshold = KILN_LOG_THRESHOLD_INFO;
    kiln_store_relaxed(&rt->log_state.threshold, (uint32_t)threshold);
}
