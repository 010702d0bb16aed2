/* examples/demo/main.c — kiln-demo: a small battle game played twice with the same seed
 * and the same jobs, once on kiln's memory (frame memory, pools, handle tables, the
 * general heap, each subsystem's memory under its own tag) and once on malloc/free and a
 * mutex-protected pointer table; then a report (memory by tag included), a chart and a
 * trace.
 *
 * Where to read next: demo.h (the memory layer the two runs swap), memory_kiln.c (the
 * kiln calls), systems.c (the frame as jobs), world.c (the game's rules). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "svg.h"

static void usage(FILE *out) {
    fputs("usage: kiln-demo [options]\n"
          "  --frames N        frames to play per run (default 600: ten seconds at 60 Hz)\n"
          "  --entities N      entities in the battle (default 20000)\n"
          "  --workers N       worker threads (default: one per CPU but one; 0: none)\n"
          "  --alloc=WHICH     kiln, malloc or both (default both: kiln, then malloc)\n"
          "  --trace FILE      Chrome trace JSON of the (first) run (default kiln-demo-trace.json)\n"
          "  --svg FILE        chart of frame times, frame memory, objects live and memory by\n"
          "                    tag (default kiln-demo.svg)\n"
          "  --no-trace        --no-svg   write no trace / no chart\n"
          "  --seed N          random seed (default 1); both runs use the same\n"
          "  --quiet           only the table and the check lines\n"
          "  --help            this text\n"
          "Exits with 1 when a consistency check fails (see the demo-check lines).\n", out);
}

/* "--name VALUE" or "--name=VALUE": the value, or NULL when arg is not --name. */
static const char *option(int argc, char **argv, int *i, const char *name) {
    size_t len = strlen(name);
    if (strncmp(argv[*i], name, len) != 0) return NULL;
    if (argv[*i][len] == '=') return argv[*i] + len + 1;
    if (argv[*i][len] != '\0') return NULL;
    if (*i + 1 >= argc) return "";   /* missing: rejected by the caller */
    return argv[++*i];
}

static bool number(const char *s, uint64_t min, uint64_t max, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || errno || *s == '-' || v < min || v > max) return false;
    *out = v;
    return true;
}

static int parse(int argc, char **argv, demo_options *o) {
    for (int i = 1; i < argc; i++) {
        const char *v;
        uint64_t n;
        bool good = true;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return usage(stdout), 0;
        else if (!strcmp(argv[i], "--quiet")) o->quiet = true;
        else if (!strcmp(argv[i], "--no-trace")) o->trace_path = NULL;
        else if (!strcmp(argv[i], "--no-svg")) o->svg_path = NULL;
        else if ((v = option(argc, argv, &i, "--frames")))
            good = number(v, 1, 1000000, &n), o->frames = (uint32_t)n;
        else if ((v = option(argc, argv, &i, "--entities")))
            good = number(v, 1, 4000000, &n), o->entities = (uint32_t)n;
        else if ((v = option(argc, argv, &i, "--workers")))
            good = number(v, 0, 256, &n), o->workers = n ? (uint32_t)n : KILN_NO_WORKERS;
        else if ((v = option(argc, argv, &i, "--seed"))) good = number(v, 0, UINT64_MAX, &o->seed);
        else if ((v = option(argc, argv, &i, "--trace"))) good = *v, o->trace_path = v;
        else if ((v = option(argc, argv, &i, "--svg"))) good = *v, o->svg_path = v;
        else if ((v = option(argc, argv, &i, "--alloc"))) {
            o->run_kiln = !strcmp(v, "kiln") || !strcmp(v, "both");
            o->run_malloc = !strcmp(v, "malloc") || !strcmp(v, "both");
            good = o->run_kiln || o->run_malloc;
        } else good = false;
        if (!good) {
            fprintf(stderr, "kiln-demo: bad argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    return -1;   /* go on */
}

/* Panel 1: frame time of every run; panel 2: the kiln run's frame memory; panel 3: the
 * objects live in its pools and handle tables at each frame end (memory that rises and
 * never falls shows there); panel 4: its memory by tag at each frame end (the history's
 * top tags), the AI's budget as a dashed line. */
static bool write_chart(const demo_options *o, const demo_run *runs, size_t n) {
    static const char *const colors[2] = { "#1f77b4", "#d62728" };
    static const char *const tag_colors[DEMO_TAGS] = { "#ff7f0e", "#9467bd", "#8c564b", "#17becf" };
    svg_series times[2], memory[1], live[2], tags[DEMO_TAGS];
    char budget_label[64];
    size_t kiln = n;
    for (size_t i = 0; i < n; i++) {
        times[i] = (svg_series){ runs[i].name, colors[i], runs[i].frame_ms, runs[i].frames };
        if (!strcmp(runs[i].name, "kiln")) kiln = i;
    }
    svg_panel panels[4] = {
        { "Frame time per frame", "frame time (ms)", times, n, runs[0].barrage, runs[0].frames,
          "artillery barrage", 1000.0 / 60.0, "16.7 ms: one frame at 60 Hz" },
    };
    if (kiln < n) {
        memory[0] = (svg_series){ "kiln: all threads", "#2ca02c", runs[kiln].frame_kib, runs[kiln].frames };
        panels[1] = (svg_panel){ "Frame memory high-water per frame (kiln)", "frame memory (KiB)",
                                 memory, 1, runs[kiln].barrage, runs[kiln].frames, "artillery barrage",
                                 0, NULL };
        live[0] = (svg_series){ "pool objects", "#9467bd", runs[kiln].pool_live, runs[kiln].frames };
        live[1] = (svg_series){ "handle items", "#ff7f0e", runs[kiln].handles_live, runs[kiln].frames };
        panels[2] = (svg_panel){ "Objects live at each frame end (kiln)", "objects live", live, 2,
                                 runs[kiln].barrage, runs[kiln].frames, "artillery barrage", 0, NULL };
        for (int tag = 0; tag < DEMO_TAGS; tag++)
            tags[tag] = (svg_series){ demo_tag_name(tag), tag_colors[tag], runs[kiln].tag_mib[tag],
                                      runs[kiln].frames };
        double budget = (double)runs[kiln].tags[DEMO_TAG_AI].budget / (1024.0 * 1024.0);
        snprintf(budget_label, sizeof budget_label, "%s budget: %.2f MiB", demo_tag_name(DEMO_TAG_AI),
                 budget);
        panels[3] = (svg_panel){ "Memory by tag at each frame end (kiln)", "live (MiB)", tags,
                                 DEMO_TAGS, runs[kiln].barrage, runs[kiln].frames, "artillery barrage",
                                 budget, budget_label };
    }
    char title[160];
    snprintf(title, sizeof title, "kiln-demo: %u entities, %u frames, seed %llu", o->entities,
             o->frames, (unsigned long long)o->seed);
    return svg_write(o->svg_path, title, "frame", panels, kiln < n ? 4 : 1);
}

int main(int argc, char **argv) {
    demo_options o = { .frames = 600, .entities = 20000, .run_kiln = true, .run_malloc = true,
                       .trace_path = "kiln-demo-trace.json", .svg_path = "kiln-demo.svg", .seed = 1 };
    int status = parse(argc, argv, &o);
    if (status >= 0) return status;
    if (!o.quiet)
        printf("kiln-demo: a battle of %u entities, %u frames per run. Each frame: entities think\n"
               "in parallel (handle lookups from any thread, scratch in frame memory), particles move\n"
               "in nested jobs, projectiles home in (pools), the main thread applies damage, deaths,\n"
               "explosions and respawns. Persistent data (the world's lists, each entity's AI\n"
               "memory) is on kiln's heap, and each subsystem's memory has a tag (the AI's budget\n"
               "is tight on purpose). The malloc run plays the same game on malloc/free/realloc\n"
               "and a mutex-protected pointer table.\n", o.entities, o.frames);

    demo_run runs[2];
    size_t n = 0;
    bool ok = true;
    for (int use_kiln = 1; use_kiln >= 0; use_kiln--) {
        if (use_kiln ? !o.run_kiln : !o.run_malloc) continue;
        if (!o.quiet) printf("  playing on %s...\n", use_kiln ? "kiln" : "malloc");
        fflush(stdout);
        ok = run_play(&o, use_kiln, n == 0 ? o.trace_path : NULL, &runs[n]) && ok;
        n++;
    }
    if (ok) {
        report_table(&o, runs, n, stdout);
        putchar('\n');
        for (size_t i = 0; i < n; i++) ok = report_check(&o, &runs[i], stdout) && ok;
        if (n == 2) ok = report_compare(&runs[0], &runs[1], stdout) && ok;
        if (o.svg_path && !write_chart(&o, runs, n)) {
            fprintf(stderr, "kiln-demo: cannot write %s: %s\n", o.svg_path, strerror(errno));
            ok = false;
        } else if (o.svg_path && !o.quiet) {
            printf("\nwrote %s: frame time, frame memory, objects live and memory by tag per\n"
                   "  frame (open it in a browser)\n",
                   o.svg_path);
        }
        if (o.trace_path && runs[0].trace_written && !o.quiet)
            printf("wrote %s: the jobs, frames and counters of the %s run, %llu events (%llu\n"
                   "  dropped: each thread keeps its newest %llu); open it in ui.perfetto.dev or\n"
                   "  chrome://tracing\n", o.trace_path, runs[0].name,
                   (unsigned long long)runs[0].trace.recorded, (unsigned long long)runs[0].trace.dropped,
                   (unsigned long long)runs[0].trace.ring_events);
    }
    for (size_t i = 0; i < n; i++) run_free(&runs[i]);
    return ok ? 0 : 1;
}
