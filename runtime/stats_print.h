/* runtime/stats_print.h — kiln_stats_print into the log, for desc.stats. Never
 * installed. */
#ifndef KILN_RUNTIME_STATS_PRINT_H
#define KILN_RUNTIME_STATS_PRINT_H

#include "types.h"

/* Logs what kiln_stats_print writes, one STATS_REPORT (INFO) message per line. Without
 * memory for the text: STATS_OUT_OF_MEMORY. Concurrency: kiln_stats_print's (any thread;
 * the driver at frame end, kiln_destroy's caller). */
KILN_INTERNAL void kiln_stats_log(kiln_runtime *rt);

#endif /* KILN_RUNTIME_STATS_PRINT_H */
