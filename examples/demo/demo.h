/* examples/demo/demo.h — what every part of kiln-demo shares: the game's objects, the
 * memory layer the two variants implement, the subsystems' tags, and the options of a
 * run.
 *
 * The demo is one small game played twice with the same seed and the same jobs: once
 * on kiln's memory (frame memory, pools, handle tables, and the general heap for the
 * persistent data of variable size, each subsystem's memory under its own tag) and once
 * on malloc/free/realloc and a mutex-protected pointer table. Only the memory layer below
 * differs between the two (memory_kiln.c and memory_malloc.c); the game (world.c) and its
 * jobs (systems.c) are the same code, so what the report shows is the price of the
 * memory layer. */
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

/* The most foes an entity remembers (its AI memory keeps the newest). */
#define DEMO_AI_MEMORY_MAX 32u

/* A soldier of one of two teams. Positions are double-buffered (pos[0], pos[1]): the
 * think jobs of one frame read every entity's current position and write only their own
 * entity's next one, so jobs on different threads never race on a position. Its AI
 * memory (foes) is the same: only the think job of its chunk grows it, only the main
 * thread frees it (when the entity dies). */
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
    uint32_t  *foes;      /* AI memory: the serials of the enemies it took as targets,
                             oldest first, the newest DEMO_AI_MEMORY_MAX; persistent data
                             of variable size (data_resize, DEMO_TAG_AI); NULL: none yet */
    uint32_t   foe_count, foe_cap;
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

/* The game's subsystems, each with its own memory tag in the kiln run (kiln/heap.h):
 * what kiln holds for each one is counted apart, and may have a budget. */
typedef enum demo_tag {
    DEMO_TAG_ENTITIES,      /* the entity table and the entity list */
    DEMO_TAG_PROJECTILES,   /* the projectile pool and list */
    DEMO_TAG_PARTICLES,     /* the particle pool and list */
    DEMO_TAG_AI,            /* the entities' AI memory; its budget is tight on purpose */
    DEMO_TAGS
} demo_tag;

/* The tag's name in kiln (kiln_tag_find finds it by that) and in the report. */
static inline const char *demo_tag_name(demo_tag tag) {
    static const char *const names[DEMO_TAGS] = { "entities", "projectiles", "particles",
                                                  "AI scratch" };
    return (unsigned)tag < DEMO_TAGS ? names[tag] : "?";
}

/* What a memory layer counts itself (kiln's own statistics in the kiln variant; the
 * table's counters in the malloc variant). The demo checks them against its own count. */
typedef struct demo_memory_stats {
    uint64_t entity_allocs, entity_frees, entity_live, stale_lookups;
    bool     has_object_stats;            /* false: malloc keeps no per-kind counts */
    uint64_t object_allocs[DEMO_KINDS], object_frees[DEMO_KINDS];
    uint64_t object_live[DEMO_KINDS], object_peak[DEMO_KINDS];
    bool     has_heap_stats;              /* false: malloc counts no allocations */
    uint64_t heap_live;                   /* kiln's heap: allocations live (all tags) */
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

    /* Persistent data of variable size, under a subsystem's tag; realloc-shaped: old NULL
     * allocates, size 0 frees old and gives NULL, else old resized (its tag kept), moved
     * if need be. NULL when it fails: old is untouched and still live. Any thread, with
     * its own ctx (the think jobs grow AI memory on workers; the main thread frees it);
     * the kiln heap in the kiln run, malloc/realloc/free in the other. */
    void *(*data_resize)(void *self, kiln_ctx *ctx, demo_tag tag, void *old, size_t size);

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
