/* tests/headers_trace_c.c — <kiln/trace.h> compiles on its own as strict C11,
 * kiln_trace_stats keeps its layout, and the history and the tracer work through the
 * shared library after one frame. */
#include <kiln/trace.h>

#include <stddef.h>

_Static_assert(offsetof(kiln_trace_stats, rings) == 4, "trace stats layout");
_Static_assert(offsetof(kiln_trace_stats, dropped) == 24, "trace stats layout");

int headers_trace_c(kiln_runtime *rt);
int headers_trace_c(kiln_runtime *rt) {
    kiln_frame_record records[KILN_HISTORY_FRAMES];
    if (kiln_history_read(rt, records, KILN_HISTORY_FRAMES) != 1 || records[0].frame != 1) return 1;
    kiln_trace_stats stats;
    if (!kiln_trace_stats_get(rt, &stats) || stats.enabled || stats.recorded != 0) return 2;
    return 0;
}
