/* examples/demo/run.h — one play of the game with one memory layer, and everything the
 * report needs from it: per-frame times, frame memory and memory by tag, kiln's
 * statistics (its tags' and where its memory is), the game's own counts and the memory
 * layer's. */
#ifndef KILN_DEMO_RUN_H
#define KILN_DEMO_RUN_H

#include "world.h"   /* and through it <kiln/kiln.h>, trace.h included */

#define RUN_MAX_CONTEXTS 64

typedef struct demo_run {
    const char       *name;            /* the memory layer: "kiln" or "malloc" */
    uint32_t          frames;          /* frames played */
    double           *frame_ms;        /* [frames] frame_begin to the end of frame_end */
    double           *frame_kib;       /* [frames] frame memory, high-water of all contexts */
    double           *pool_live;       /* [frames] objects live in kiln's pools at frame end */
    double           *handles_live;    /* [frames] items live in kiln's handle tables */
    uint8_t          *barrage;         /* [frames] 1 where artillery fell */
    double           *tag_mib[DEMO_TAGS];   /* [frames] each demo tag's live MiB at frame
                                               end (the history's top tags; kiln run) */
    double            wall_s;          /* the whole run, setup and teardown included */

    /* From kiln_history_read, one record per frame. */
    uint64_t          history_frames;  /* records found with the expected frame number */
    uint64_t          history_jobs, history_steals;
    uint64_t          history_allocs;  /* frame, pool and handle allocations of every frame */
    uint64_t          last_pool_live, last_handles_live;   /* the last frame's record */
    uint64_t          last_reserved_bytes;
    uint64_t          last_tag_bytes[DEMO_TAGS];   /* each demo tag's live bytes there */
    uint64_t          history_tags_omitted;        /* tags left out of records (should be
                                                      none: the demo has few enough) */
    uint64_t          ctx_peak_bytes[RUN_MAX_CONTEXTS + 1];   /* by context id */

    /* From kiln_stats_get and kiln_stats_contexts after the last frame. */
    kiln_stats        stats;
    kiln_ctx_stats    contexts[RUN_MAX_CONTEXTS];
    uint32_t          context_count;
    uint64_t          jobs_submitted, jobs_run, jobs_stolen;
    kiln_memory_stats memory_split;    /* where kiln's memory is (read while quiet) */

    /* The demo's tags (kiln run only: has_tags), after the last frame and after the
     * teardown (the world's data freed, the pools and the table destroyed). */
    bool              has_tags;
    kiln_tag          tag_ids[DEMO_TAGS];
    kiln_tag_stats    tags[DEMO_TAGS];
    uint64_t          tags_live_after; /* the demo tags' live bytes after teardown */

    /* The game's view and the memory layer's, after the last frame. */
    world_totals      totals;
    uint32_t          entities, projectiles, particles;
    uint64_t          checksum;
    demo_memory_stats memory;
    demo_memory_stats memory_after;    /* after the world is torn down: leaks */
    world_totals      totals_after;    /* the game's counts then (its data's frees) */
    uint64_t          scratch_failures, drawn_sparks;
    uint64_t          log_warnings, log_errors;

    bool              traced, trace_written;
    kiln_trace_stats  trace;
} demo_run;

/* Plays o->frames frames on kiln's memory (use_kiln) or on malloc's; traces them into
 * trace_path when it is not NULL. false when the run could not be set up (the reason
 * on stderr); the figures of a run that went wrong later are the report's to judge. */
bool run_play(const demo_options *o, bool use_kiln, const char *trace_path, demo_run *out);
void run_free(demo_run *run);

#endif /* KILN_DEMO_RUN_H */
