/* examples/demo/svg.h — a small self-contained SVG line chart: panels stacked over one
 * shared x axis (the frame number), each with axes, ticks, labels, a legend and one
 * polyline per series (the first series drawn last, on top). No external resources; all text is escaped. */
#ifndef KILN_DEMO_SVG_H
#define KILN_DEMO_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct svg_series {
    const char   *label;
    const char   *color;       /* an SVG colour, e.g. "#d62728" */
    const double *values;      /* values[i] is drawn at x = i + 1 */
    size_t        count;
} svg_series;

typedef struct svg_panel {
    const char       *title;
    const char       *y_label;
    const svg_series *series;
    size_t            series_count;
    const uint8_t    *marks;       /* may be NULL; marks[i] != 0 draws a faint line at x = i + 1 */
    size_t            mark_count;
    const char       *mark_label;  /* the legend entry of the marks */
    double            reference;   /* > 0: a dashed horizontal line at this y (a budget),
                                      drawn when it lies inside the panel's range */
    const char       *reference_label;
} svg_panel;

/* Writes the chart to path. false (errno set) when the file cannot be written. */
bool svg_write(const char *path, const char *title, const char *x_label,
               const svg_panel *panels, size_t panel_count);

#endif /* KILN_DEMO_SVG_H */
