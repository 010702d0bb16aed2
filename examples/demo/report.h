/* examples/demo/report.h — the closing report: a table with one column per run (and the
 * malloc/kiln ratio of the frame times), the kiln run's memory by tag and where kiln's
 * memory is, and the consistency checks, each run's in one machine-readable line that
 * tests/demo/check-demo.sh reads. */
#ifndef KILN_DEMO_REPORT_H
#define KILN_DEMO_REPORT_H

#include <stdio.h>

#include "run.h"

/* Frame time figures of a run, in ms: the median, the 99th percentile, the worst frame
 * (the first one included) and the first frame, the worst one's number (1, 2, ...) and
 * how many frames went over 16.7 ms. */
typedef struct frame_times {
    double   median, p99, max, first, over_budget;
    uint32_t worst_frame;
} frame_times;
frame_times report_frame_times(const demo_run *run);

void report_table(const demo_options *o, const demo_run *runs, size_t count, FILE *out);

/* Checks a run's figures against each other and prints its "demo-check" line; false
 * when one does not hold (the line then says which). */
bool report_check(const demo_options *o, const demo_run *run, FILE *out);

/* Two runs of the same seed must have played the same game. Prints a line. */
bool report_compare(const demo_run *a, const demo_run *b, FILE *out);

#endif /* KILN_DEMO_REPORT_H */
