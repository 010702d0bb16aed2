/* examples/demo/world.h — the game's state and the main thread's part of a frame.
 *
 * A frame has three stages (systems.c runs them):
 *   1. in parallel: every entity thinks (finds its target by reference, moves, decides to
 *      fire, culls itself against the camera), and the particles move and die;
 *   2. in parallel: projectiles home in on their targets (by reference) and hit them;
 *   3. on the main thread (world_apply): damage, deaths, explosions, new shots, respawns.
 * Jobs of stages 1 and 2 write only into their own chunk's output (below); stage 3 reads
 * the outputs in chunk order. So the game is the same whatever thread runs which chunk,
 * and the kiln and malloc runs end in exactly the same state (the checksum says so).
 *
 * Persistent data of variable size goes through the memory layer's data_resize under its
 * subsystem's tag: the world's three lists (allocated at start, freed at the end) and
 * each entity's AI memory (grown by the think jobs on any thread, freed by the main
 * thread when the entity dies). */
#ifndef KILN_DEMO_WORLD_H
#define KILN_DEMO_WORLD_H

#include "demo.h"

/* Chunk sizes: a job's unit of work. Fixed, so outputs do not depend on scheduling. */
#define WORLD_ENTITY_CHUNK   256u
#define WORLD_SHOT_CHUNK     256u
#define WORLD_SPARK_CHUNK    1024u

typedef struct fire_request { entity_ref owner, target; vec2 pos, vel; } fire_request;
typedef struct contact      { entity_ref target, owner; float damage; } contact;

/* What one chunk of a stage hands to world_apply. Arrays are scratch from the thread
 * that ran the chunk (a worker's frame memory in the kiln run). */
typedef struct think_out {
    uint32_t     *visible;        /* entity list indices inside the camera */
    fire_request *fire;
    uint32_t      visible_count, fire_count;
    uint32_t      stale, retargets;
    uint32_t      data_allocs;    /* AI memories started (data_resize of NULL) */
    uint32_t      data_failures;  /* AI memory data_resize refused (the foe not kept) */
} think_out;

typedef struct shot_out {
    contact  *contacts;
    uint32_t  contact_count;
} shot_out;

/* Projectile and particle chunks free what dies and keep the survivors at the front of
 * their slots of the list; world_apply closes the gaps. */
typedef struct chunk_keep { uint32_t alive, freed, stale; } chunk_keep;

/* What the game counts itself, to check against the memory layer's own figures. data_*:
 * the persistent data's allocations (data_resize of NULL), frees and refusals. */
typedef struct world_totals {
    uint64_t entity_allocs, entity_frees, stale_lookups, retargets;
    uint64_t data_allocs, data_frees, data_failures;
    uint64_t kills, barrages, shots, shots_dropped, sparks_dropped, hits, drawn;
    uint64_t object_allocs[DEMO_KINDS], object_frees[DEMO_KINDS], object_peak[DEMO_KINDS];
} world_totals;

typedef struct world {
    const demo_memory *mem;
    uint64_t     seed;
    uint64_t     frame;          /* the frame being played, from 1 */
    uint32_t     cur;            /* which entity.pos[] is current */
    uint32_t     next_serial;
    float        size;           /* the map is size x size; grows with the entity count */
    vec2         camera_min, camera_max;
    uint64_t     next_barrage;   /* the frame of the next artillery barrage */

    /* Long-lived containers, written only by the main thread between stages, read by
     * every job. Allocated once at start through data_resize, each under its
     * subsystem's tag (the kiln heap; malloc in the malloc run), freed at the end. */
    entity     **entities;       /* live entities; entity.slot is the index here */
    projectile **projectiles;
    particle   **particles;
    uint32_t     entity_count, entity_cap;
    uint32_t     projectile_count, projectile_cap;
    uint32_t     particle_count, particle_cap;

    world_totals totals;
} world;

/* The outputs of one frame's chunks, filled by systems.c. */
typedef struct world_frame {
    think_out  *think;      uint32_t think_chunks;
    shot_out   *shots;      chunk_keep *shot_keep;  uint32_t shot_chunks;
    chunk_keep *spark_keep; uint32_t spark_chunks;
} world_frame;

static inline uint32_t world_chunks(uint32_t count, uint32_t chunk) {
    return (count + chunk - 1) / chunk;
}

/* Spawns `entities` entities. false when memory runs out. Main thread. */
bool world_init(world *w, const demo_memory *mem, kiln_ctx *ctx, uint32_t entities, uint64_t seed);
/* Frees every entity (its AI memory too), projectile and particle and the containers.
 * Main thread. */
void world_destroy(world *w, kiln_ctx *ctx);

/* Sets the frame number and moves the camera. Main thread, before stage 1. */
void world_begin_frame(world *w, uint64_t frame);

/* Stage 3 of a frame: consumes the chunks' outputs (and their scratch). Main thread,
 * with no job of the frame running. */
void world_apply(world *w, kiln_ctx *ctx, const world_frame *f);

/* A hash of everything the game simulates (not of addresses or reference bits), the
 * entities' AI memories included, in list order: equal in the two runs when they played
 * the same game. */
uint64_t world_checksum(const world *w);

/* Jobs' helpers, safe on any thread during stages 1 and 2. */
static inline bool world_in_camera(const world *w, vec2 p) {
    return p.x >= w->camera_min.x && p.x < w->camera_max.x &&
           p.y >= w->camera_min.y && p.y < w->camera_max.y;
}

#endif /* KILN_DEMO_WORLD_H */
