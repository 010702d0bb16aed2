/* tests/headers_core_c.c — <kiln/core.h> compiles on its own as strict C11. */
#include <kiln/core.h>

int headers_core_c(void);
int headers_core_c(void) {
    kiln_desc desc = { 0 };
    kiln_log_level level = KILN_LOG_WARN;
    return (int)desc.worker_count + (int)level - KILN_LOG_WARN + KILN_DEBUG_NONE;
}
