/* runtime/arenas.h — the arenas a runtime owns: their records and registry, as the
 * rest of the runtime uses them. Never installed. */
#ifndef KILN_RUNTIME_ARENAS_H
#define KILN_RUNTIME_ARENAS_H

#include "types.h"

/* Makes an arena of this runtime and registers it: frame_owner's frame arena, or a user
 * arena when frame_owner is NULL. NULL when the pool refuses (logged). Concurrency: any
 * thread (takes registry_lock). */
KILN_INTERNAL kiln_arena *kiln_runtime_arena_new(kiln_runtime *rt, const char *name,
                                                 kiln_ctx *frame_owner);

/* Makes ctx's job arena of parity (kiln_ctx.job_arenas), off the registry, and
 * publishes it. NULL when the heap or the block pool refuses (logged). ctx's thread. */
KILN_INTERNAL kiln_arena *kiln_job_arena_new(kiln_ctx *ctx, unsigned parity);

/* Gives back ctx's job arena of parity and its record, if it has one. No thread may use
 * it: ctx is detached (under registry_lock) or never published, or rt is being
 * destroyed. */
KILN_INTERNAL void kiln_job_arena_free(kiln_ctx *ctx, unsigned parity);

/* kiln_arena_stats_read, and for a context's own frame arena the figures that add up
 * of its job arenas too: the frame arena in the stats stands for all of the context's
 * frame memory. false (logged) for a destroyed arena. Any thread; a context's arenas
 * under registry_lock, or on its own thread. */
KILN_INTERNAL bool kiln_runtime_arena_stats(const kiln_arena *arena, kiln_arena_stats *out);

/* Unregisters and frees an arena. Concurrency: any thread (takes registry_lock). */
KILN_INTERNAL void kiln_runtime_arena_delete(kiln_runtime *rt, kiln_arena *arena);

/* kiln_destroy, once every arena of rt is gone: frees rt's arena records, even when
 * none was ever made. */
KILN_INTERNAL void kiln_runtime_arenas_fini(kiln_runtime *rt);

/* A NULL arena given to function: ARENA_NULL on stderr (no runtime to name), NULL. The
 * arena calls of runtime/arenas.c and runtime/arena_text.c share it. Any thread. */
KILN_INTERNAL KILN_COLD void *kiln_refuse_null_arena(const char *function);

/* ctx's frame arena when ctx may take frame memory now, as kiln_frame_alloc judges it;
 * otherwise NULL, with kiln_frame_alloc's refusals logged under function's name
 * (CONTEXT_NULL, CONTEXT_DETACHED, JOB_BACKGROUND_FRAME_ALLOC). The frame helpers of
 * runtime/arena_text.c start with it. The context's thread only. */
KILN_INTERNAL kiln_arena *kiln_frame_arena_for(kiln_ctx *ctx, const char *function);

#endif /* KILN_RUNTIME_ARENAS_H */
