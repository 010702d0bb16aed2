/* examples/demo/svg.c — the SVG writer behind --svg. */
#include "svg.h"

#include <math.h>
#include <stdio.h>

#define WIDTH        960.0
#define PANEL_HEIGHT 300.0
#define TITLE_HEIGHT 40.0
#define LEFT         80.0
#define RIGHT        24.0
#define TOP          34.0     /* inside a panel: room for its title */
#define BOTTOM       46.0     /* inside a panel: tick labels and the x label */

typedef struct frame { double x0, y0, w, h, x_max, y_max; } frame;   /* a panel's plot area */

static void text_escaped(FILE *f, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default: fputc(*s, f);
        }
    }
}

static void text(FILE *f, double x, double y, const char *anchor, const char *extra, const char *s) {
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s>", x, y, anchor, extra);
    text_escaped(f, s);
    fputs("</text>\n", f);
}

/* A tick step of 1, 2 or 5 times a power of ten giving about `ticks` ticks over range. */
static double nice_step(double range, int ticks) {
    double raw = range / ticks, power = pow(10.0, floor(log10(raw))), m = raw / power;
    return (m <= 1.0 ? 1.0 : m <= 2.0 ? 2.0 : m <= 5.0 ? 5.0 : 10.0) * power;
}

/* A round top for the y axis, a little above the largest value. */
static double nice_max(double v) {
    if (v <= 0) return 1;
    double step = nice_step(v * 1.05, 5);
    return ceil(v * 1.05 / step) * step;
}

/* Plot coordinates of x (1 to x_max) and y (0 to y_max). */
static double px(const frame *fr, double x) {
    return fr->x0 + (x - 1.0) / (fr->x_max > 1 ? fr->x_max - 1.0 : 1.0) * fr->w;
}
static double py(const frame *fr, double y) { return fr->y0 + fr->h - y / fr->y_max * fr->h; }

static void axes(FILE *f, const frame *fr, const svg_panel *p, const char *x_label) {
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fafafa\" "
               "stroke=\"#444\"/>\n", fr->x0, fr->y0, fr->w, fr->h);
    double ystep = nice_step(fr->y_max, 5);
    for (double y = 0; y <= fr->y_max * 1.0001; y += ystep) {
        char label[32];
        snprintf(label, sizeof label, "%g", y);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                fr->x0, py(fr, y), fr->x0 + fr->w, py(fr, y));
        text(f, fr->x0 - 6, py(fr, y) + 4, "end", "", label);
    }
    double xstep = fr->x_max > 1 ? nice_step(fr->x_max, 10) : 1;
    for (double x = xstep > 1 ? xstep : 1; x <= fr->x_max; x += xstep) {
        char label[32];
        snprintf(label, sizeof label, "%g", x);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n",
                px(fr, x), fr->y0 + fr->h, px(fr, x), fr->y0 + fr->h + 5);
        text(f, px(fr, x), fr->y0 + fr->h + 18, "middle", "", label);
    }
    text(f, fr->x0 + fr->w / 2, fr->y0 + fr->h + 38, "middle", "", x_label);
    char rotate[96];
    snprintf(rotate, sizeof rotate, " transform=\"rotate(-90 %.1f %.1f)\"", fr->x0 - 56, fr->y0 + fr->h / 2);
    text(f, fr->x0 - 56, fr->y0 + fr->h / 2, "middle", rotate, p->y_label);
    text(f, fr->x0, fr->y0 - 10, "start", " font-weight=\"bold\"", p->title);
}

/* One point per pixel column at most; a column keeps its largest value, so a spike of a
 * single frame still shows however many frames there are. */
static void polyline(FILE *f, const frame *fr, const svg_series *s) {
    fprintf(f, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\" points=\"",
            s->color);
    size_t columns = (size_t)fr->w, step = s->count > columns ? (s->count + columns - 1) / columns : 1;
    for (size_t i = 0; i < s->count; i += step) {
        double y = 0;
        size_t top = i;
        for (size_t k = i; k < i + step && k < s->count; k++)
            if (s->values[k] >= y) y = s->values[k], top = k;
        fprintf(f, "%.1f,%.1f ", px(fr, (double)top + 1), py(fr, y));
    }
    fputs("\">\n<title>", f);
    text_escaped(f, s->label);
    fputs("</title></polyline>\n", f);
}

static void legend(FILE *f, const frame *fr, const svg_panel *p) {
    double x = fr->x0 + fr->w - 170, y = fr->y0 + 10;
    size_t rows = p->series_count + (p->marks ? 1 : 0);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"160\" height=\"%.1f\" fill=\"white\" "
               "stroke=\"#bbb\" opacity=\"0.9\"/>\n", x, y, 8 + 18.0 * (double)rows);
    for (size_t i = 0; i < rows; i++) {
        bool mark = i == p->series_count;
        double ly = y + 17 + 18.0 * (double)i;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"%s\"%s/>\n", x + 8, ly - 4, x + 32, ly - 4,
                mark ? "#999" : p->series[i].color, mark ? "1" : "2.5",
                mark ? " stroke-dasharray=\"3 3\"" : "");
        text(f, x + 40, ly, "start", "", mark ? p->mark_label : p->series[i].label);
    }
}

static void panel(FILE *f, const svg_panel *p, size_t index, const char *x_label) {
    frame fr = { LEFT, TITLE_HEIGHT + (double)index * PANEL_HEIGHT + TOP, WIDTH - LEFT - RIGHT,
                 PANEL_HEIGHT - TOP - BOTTOM, 1, 0 };
    for (size_t s = 0; s < p->series_count; s++) {
        if ((double)p->series[s].count > fr.x_max) fr.x_max = (double)p->series[s].count;
        for (size_t i = 0; i < p->series[s].count; i++)
            if (p->series[s].values[i] > fr.y_max) fr.y_max = p->series[s].values[i];
    }
    fr.y_max = nice_max(fr.y_max);
    fprintf(f, "<g id=\"panel-%zu\">\n", index + 1);
    axes(f, &fr, p, x_label);
    for (size_t i = 0; p->marks && i < p->mark_count; i++)
        if (p->marks[i])
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" "
                       "stroke-dasharray=\"3 3\"/>\n", px(&fr, (double)i + 1), fr.y0, px(&fr, (double)i + 1),
                    fr.y0 + fr.h);
    if (p->reference > 0 && p->reference <= fr.y_max) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
                   "stroke-dasharray=\"8 4\"/>\n", fr.x0, py(&fr, p->reference), fr.x0 + fr.w,
                py(&fr, p->reference));
        text(f, fr.x0 + 6, py(&fr, p->reference) - 4, "start", " fill=\"#555\"", p->reference_label);
    }
    for (size_t s = p->series_count; s-- > 0;) polyline(f, &fr, &p->series[s]);
    legend(f, &fr, p);
    fputs("</g>\n", f);
}

bool svg_write(const char *path, const char *title, const char *x_label,
               const svg_panel *panels, size_t panel_count) {
    FILE *f = fopen(path, "w");
    if (!f) return false;
    double height = TITLE_HEIGHT + PANEL_HEIGHT * (double)panel_count;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
            WIDTH, height, WIDTH, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    text(f, WIDTH / 2, 26, "middle", " font-size=\"16\" font-weight=\"bold\"", title);
    for (size_t i = 0; i < panel_count; i++) panel(f, &panels[i], i, x_label);
    fputs("</svg>\n", f);
    bool ok = !ferror(f);
    return fclose(f) == 0 && ok;
}
