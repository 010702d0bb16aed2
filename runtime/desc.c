/* runtime/desc.c — what a runtime runs with, read back: kiln_runtime_desc (every layer
 * applied, every default filled in) and kiln_option_source (each value's layer). */
#include <string.h>

#include "check.h"
#include "options.h"

kiln_desc kiln_runtime_desc(const kiln_runtime *rt) {
    if (!kiln_runtime_check(rt, "kiln_runtime_desc")) return (kiln_desc){ 0 };
    kiln_desc d = rt->desc;
    /* As kiln_create reads it back: no workers is KILN_NO_WORKERS (0 means the default),
     * and the reservation is the whole blocks the block pool asks for. */
    if (d.worker_count == 0) d.worker_count = KILN_NO_WORKERS;
    d.reserve_size = rt->blocks.reserve_blocks * rt->blocks.block_size;
    d.log_level = (kiln_log_threshold)kiln_load_relaxed(&rt->log_state.threshold);
    return d;
}

bool kiln_option_source(kiln_runtime *rt, const char *key, char *out, size_t cap) {
    if (!kiln_runtime_check(rt, "kiln_option_source")) return false;
    if (cap != 0 && !out) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_STATS_NULL_OUT,
                        "kiln_option_source: out is NULL with cap %zu", cap);
        return false;
    }
    if (cap) out[0] = '\0';
    kiln_desc_field field = kiln_option_find(key);
    if (field == KILN_FIELD_COUNT) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_OPTION_KEY_UNKNOWN,
                        "kiln_option_source: '%s' is no option key", key ? key : "(null)");
        return false;
    }
    const char *layer = kiln_option_layer_name((kiln_option_layer)rt->option_sources.layer[field]);
    size_t length = strlen(layer);
    if (length >= cap) {   /* no partial name */
        kiln_log_misuse(&rt->log, KILN_LOGITEM_OPTION_OUT_TOO_SMALL,
                        "kiln_option_source: out holds %zu bytes; '%s' takes %zu "
                        "(KILN_OPTION_SOURCE_MAX: %d)", cap, layer, length + 1, KILN_OPTION_SOURCE_MAX);
        return false;
    }
    memcpy(out, layer, length + 1);
    return true;
}

