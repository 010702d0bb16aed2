/* examples/demo/demo.h — what every part of kiln-demo shares: the game's objects, the
 * memory layer the two variants implement, and the options of a run.
 *
 * The demo is one small game played twice with the same seed and the same jobs: once
 * on kiln's memory (frame memory, pools, handle tables) and once on malloc/free and a
 * mutex-protected pointer table. Only the memory layer below differs between the two
 * (memory_kiln.c and memory_malloc.c); the game (world.c) and its jobs (systems.c) are
 * the same code, so what the report shows is the price of the memory layer. */
#ifndef KILN_DEMO_H
#define KILN_DEMO_H

#include <kiln/kiln.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A reference to an entity that stays safe after the entity dies: a kiln handle in the
 * kiln variant, index + generation in the malloc variant's table. bits == 0: none. */
typedef struct entity_ref { uint64_t bits; } entity_ref;

typedef struct vec2 { float x, y; } vec2;

/* A soldier of one of two teams. Positions are double-buffered (pos[0], pos[1]): the
 * think jobs of one frame read every entity's current position and write only their own
 * entity's next one, so jobs on different threads never race on a position. */
typedef struct entity {
    vec2       pos[2];
    vec2       vel;
    float      hp;
    uint32_t   serial;    /* spawn order: seeds this entity's random numbers */
    uint32_t   team;      /* 0 or 1 */
    uint32_t   cooldown;  /* frames until it may fire again */
    uint32_t   kills;
    uint32_t   slot;      /* its index in the world's entity list (main thread's) */
    entity_ref self;
    entity_ref target;    /* an enemy; goes stale when the enemy dies */
} entity;

/* A homing shot. Refers to two entities by reference: either may die while it flies. */
typedef struct projectile {
    vec2       pos, vel;
    float      damage;
    uint32_t   life;      /* frames left */
    entity_ref owner, target;
} projectile;

/* A spark of an explosion: hundreds appear at once, each lives under a second. */
typedef struct particle {
    vec2     pos, vel;
    uint32_t life;
    uint32_t color;
} particle;

typedef enum demo_kind { DEMO_PROJECTILE, DEMO_PARTICLE, DEMO_KINDS } demo_kind;

/* What a memory layer counts itself (kiln's own statistics in the kiln variant; the
 * table's counters in the malloc variant). The demo checks them against its own count. */
typedef struct demo_memory_stats {
    uint64_t entity_allocs, entity_frees, entity_live, stale_lookups;
    bool     has_object_stats;            /* false: malloc keeps no per-kind counts */
    uint64_t object_allocs[DEMO_KINDS], object_frees[DEMO_KINDS];
    uint64_t object_live[DEMO_KINDS], object_peak[DEMO_KINDS];
} demo_memory_stats;

/* The memory layer: everything the game allocates or refers to goes through this, and
 * nothing else differs between the variants. ctx is the kiln context of the calling
 * thread (a worker's inside a job); the malloc layer ignores it. */
typedef struct demo_memory {
    const char *name;   /* "kiln" or "malloc" */
    void       *self;

    /* Entities by reference. get may be called from any thread at the same time; new
     * and delete only from the main thread, between the parallel stages. */
    entity_ref (*entity_new)(void *self, kiln_ctx *ctx, entity **item);   /* zeroed */
    entity    *(*entity_get)(void *self, entity_ref ref);   /* NULL: stale (counted) */
    bool       (*entity_delete)(void *self, kiln_ctx *ctx, entity_ref ref);

    /* Projectiles and particles: fixed-size objects, freed by any thread. */
    void *(*object_new)(void *self, kiln_ctx *ctx, demo_kind kind);
    void  (*object_delete)(void *self, kiln_ctx *ctx, demo_kind kind, void *object);

    /* Scratch that lives at most until the end of the frame. scratch_done says it is no
     * longer needed: malloc must free it; frame memory needs nothing (frame end). */
    void *(*scratch_new)(void *self, kiln_ctx *ctx, size_t size);
    void  (*scratch_done)(void *self, void *scratch);

    void (*stats)(void *self, demo_memory_stats *out);
    void (*destroy)(void *self, kiln_ctx *ctx);
} demo_memory;

/* memory_kiln.c and memory_malloc.c: a layer whose entity table holds up to
 * entity_capacity entities. false when it cannot be made. */
bool demo_memory_kiln(demo_memory *memory, kiln_runtime *rt, uint32_t entity_capacity);
bool demo_memory_malloc(demo_memory *memory, uint32_t entity_capacity);

typedef struct demo_options {
    uint32_t    frames;
    uint32_t    entities;
    uint32_t    workers;       /* kiln_desc.worker_count: 0 = kiln's default (one per
                                  spare CPU), KILN_NO_WORKERS = none */
    bool        run_kiln, run_malloc;
    const char *trace_path;    /* NULL: no trace */
    const char *svg_path;      /* NULL: no chart */
    bool        quiet;
    uint64_t    seed;
} demo_options;

#endif /* KILN_DEMO_H */
