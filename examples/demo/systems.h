/* examples/demo/systems.h — one frame of the game as kiln jobs (see world.h for the
 * stages). The job functions have external linkage only so that a trace can name them
 * (the demo is linked with -rdynamic); nothing else calls them. */
#ifndef KILN_DEMO_SYSTEMS_H
#define KILN_DEMO_SYSTEMS_H

#include "world.h"

typedef struct systems_figures {
    uint32_t drawn_sparks;       /* particles the pinned present job put in the vertex list */
    uint32_t scratch_failures;   /* scratch the memory layer refused (chunks skipped) */
} systems_figures;

/* Plays stages 1 to 3 of the frame w->frame. Call between kiln_frame_begin and
 * kiln_frame_end on the thread that drives the frame clock (main_ctx's). */
systems_figures systems_frame(world *w, kiln_ctx *main_ctx);

void demo_think_job(kiln_ctx *ctx, void *arg);
void demo_think_range(kiln_ctx *ctx, size_t begin, size_t end, void *arg);
void demo_sparks_job(kiln_ctx *ctx, void *arg);
void demo_spark_chunk_job(kiln_ctx *ctx, void *arg);
void demo_present_job(kiln_ctx *ctx, void *arg);
void demo_shots_range(kiln_ctx *ctx, size_t begin, size_t end, void *arg);

#endif /* KILN_DEMO_SYSTEMS_H */
