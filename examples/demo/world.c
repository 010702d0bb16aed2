/* examples/demo/world.c — the game's rules on the main thread: spawning, damage, deaths
 * (which free the entity's AI memory), explosions, artillery barrages, new shots,
 * respawns, and the lists the jobs read (persistent data under their subsystems' tags).
 * Every allocation and every reference goes through w->mem, the memory layer. */
#include "world.h"

#include <math.h>
#include <string.h>

#include "rng.h"

#define ENTITY_DENSITY   0.005f   /* entities per square unit: the map grows with them */
#define ENTITY_HP        100.0f
#define SHOT_LIFE        90u
#define SPARKS_PER_KILL  24u      /* plus up to as many again */
#define SPARKS_BARRAGE   10u      /* per entity caught in a barrage */
#define BARRAGE_RADIUS   0.08f    /* of the map size: 2 % of the entities (400 of 20 000) */
#define WORLD_SUBJECT    0xffffffffffull   /* the rng subject of the world's own draws */

static bool spawn(world *w, kiln_ctx *ctx, uint32_t team, vec2 at, demo_rng *r) {
    entity *e;
    entity_ref ref = w->mem->entity_new(w->mem->self, ctx, &e);
    if (!ref.bits) return false;
    w->totals.entity_allocs++;
    *e = (entity){ .pos = { at, at }, .hp = ENTITY_HP, .serial = w->next_serial++,
                   .team = team, .cooldown = demo_rng_below(r, 60), .self = ref,
                   .slot = w->entity_count };
    w->entities[w->entity_count++] = e;
    return true;
}

/* An explosion: n sparks flying out of `at`. When the list is full, the rest are
 * dropped (counted), in both runs alike. */
static void explode(world *w, kiln_ctx *ctx, vec2 at, uint32_t n, uint32_t color, demo_rng *r) {
    for (uint32_t i = 0; i < n; i++) {
        particle *p = w->particle_count < w->particle_cap
                          ? w->mem->object_new(w->mem->self, ctx, DEMO_PARTICLE) : NULL;
        if (!p) {
            w->totals.sparks_dropped += n - i;
            return;
        }
        w->totals.object_allocs[DEMO_PARTICLE]++;
        float angle = demo_rng_float(r, 0.0f, 6.2831853f), speed = demo_rng_float(r, 0.5f, 4.0f);
        *p = (particle){ at, { cosf(angle) * speed, sinf(angle) * speed },
                         20 + demo_rng_below(r, 40), color };
        w->particles[w->particle_count++] = p;
    }
}

/* Frees e's AI memory, which a think job on any thread may have allocated. */
static void forget_foes(world *w, kiln_ctx *ctx, entity *e) {
    if (!e->foes) return;
    w->mem->data_resize(w->mem->self, ctx, DEMO_TAG_AI, e->foes, 0);
    w->totals.data_frees++;
    e->foes = NULL, e->foe_count = e->foe_cap = 0;
}

/* Removes e from the game. Its reference goes stale at once for every thread: the jobs
 * of the next frame that still hold it see NULL from entity_get and retarget. */
static void kill_entity(world *w, kiln_ctx *ctx, entity *e, uint32_t sparks,
                        uint32_t deaths[2], demo_rng *r) {
    vec2 at = e->pos[w->cur];
    uint32_t team = e->team;
    forget_foes(w, ctx, e);
    w->entities[e->slot] = NULL;   /* compacted after the frame's deaths */
    deaths[team]++;
    w->totals.kills++;
    w->totals.entity_frees++;
    w->mem->entity_delete(w->mem->self, ctx, e->self);   /* e is gone from here on */
    explode(w, ctx, at, sparks, team ? 0xff8030u : 0x40a0ffu, r);
}

/* Moves each chunk's survivors (the first keep[c].alive of its slots) down to close the
 * gaps, and adds up what the chunks freed and looked up in vain. */
static uint32_t compact(world *w, void **list, uint32_t chunk, uint32_t chunks,
                        const chunk_keep *keep, uint64_t *frees) {
    uint32_t kept = 0;
    for (uint32_t c = 0; c < chunks; c++) {
        memmove(&list[kept], &list[c * chunk], keep[c].alive * sizeof *list);
        kept += keep[c].alive;
        *frees += keep[c].freed;
        w->totals.stale_lookups += keep[c].stale;
    }
    return kept;
}

static void apply_contacts(world *w, kiln_ctx *ctx, const world_frame *f, uint32_t deaths[2],
                           demo_rng *r) {
    const demo_memory *m = w->mem;
    for (uint32_t c = 0; c < f->shot_chunks; c++) {
        const shot_out *out = &f->shots[c];
        for (uint32_t i = 0; i < out->contact_count; i++) {
            const contact *hit = &out->contacts[i];
            entity *e = m->entity_get(m->self, hit->target);
            if (!e) {                   /* killed by an earlier hit of this frame */
                w->totals.stale_lookups++;
                continue;
            }
            w->totals.hits++;
            e->hp -= hit->damage;
            if (e->hp > 0) continue;
            entity *owner = m->entity_get(m->self, hit->owner);   /* the shooter may be dead */
            if (owner) owner->kills++;
            else w->totals.stale_lookups++;
            kill_entity(w, ctx, e, SPARKS_PER_KILL + demo_rng_below(r, SPARKS_PER_KILL), deaths, r);
        }
        m->scratch_done(m->self, out->contacts);
    }
}

/* Now and then, artillery wipes out a whole area: hundreds of deaths and thousands of
 * sparks in one frame, the spike a game must survive without a hitch. */
static void maybe_barrage(world *w, kiln_ctx *ctx, uint32_t deaths[2], demo_rng *r) {
    if (w->frame != w->next_barrage) return;
    w->next_barrage = w->frame + 90 + demo_rng_below(r, 90);
    w->totals.barrages++;
    vec2 center = { demo_rng_float(r, 0.2f, 0.8f) * w->size, demo_rng_float(r, 0.2f, 0.8f) * w->size };
    float radius = BARRAGE_RADIUS * w->size;
    for (uint32_t i = 0; i < w->entity_count; i++) {
        entity *e = w->entities[i];
        if (!e) continue;
        float dx = e->pos[w->cur].x - center.x, dy = e->pos[w->cur].y - center.y;
        if (dx * dx + dy * dy < radius * radius) kill_entity(w, ctx, e, SPARKS_BARRAGE, deaths, r);
    }
}

static void fire(world *w, kiln_ctx *ctx, const world_frame *f, demo_rng *r) {
    const demo_memory *m = w->mem;
    for (uint32_t c = 0; c < f->think_chunks; c++) {
        const think_out *out = &f->think[c];
        for (uint32_t i = 0; i < out->fire_count; i++) {
            projectile *p = w->projectile_count < w->projectile_cap
                                ? m->object_new(m->self, ctx, DEMO_PROJECTILE) : NULL;
            if (!p) {
                w->totals.shots_dropped++;
                continue;
            }
            const fire_request *q = &out->fire[i];
            *p = (projectile){ q->pos, q->vel, 8.0f + (float)demo_rng_below(r, 12), SHOT_LIFE,
                               q->owner, q->target };
            w->projectiles[w->projectile_count++] = p;
            w->totals.object_allocs[DEMO_PROJECTILE]++;
            w->totals.shots++;
        }
        m->scratch_done(m->self, out->fire);
    }
}

void world_begin_frame(world *w, uint64_t frame) {
    w->frame = frame;
    float half = w->size * 0.25f, cx = w->size * 0.5f + half * sinf((float)frame * 0.01f);
    w->camera_min = (vec2){ cx - half, w->size * 0.5f - half };
    w->camera_max = (vec2){ cx + half, w->size * 0.5f + half };
}

void world_apply(world *w, kiln_ctx *ctx, const world_frame *f) {
    const demo_memory *m = w->mem;
    demo_rng r = demo_rng_for(w->seed, WORLD_SUBJECT, w->frame);
    uint32_t deaths[2] = { 0, 0 };

    /* The jobs freed what died and left each chunk's survivors at its front. */
    w->particle_count = compact(w, (void **)w->particles, WORLD_SPARK_CHUNK, f->spark_chunks,
                                f->spark_keep, &w->totals.object_frees[DEMO_PARTICLE]);
    w->projectile_count = compact(w, (void **)w->projectiles, WORLD_SHOT_CHUNK, f->shot_chunks,
                                  f->shot_keep, &w->totals.object_frees[DEMO_PROJECTILE]);

    /* What the renderer would draw: the entities the think jobs found in the camera. */
    for (uint32_t c = 0; c < f->think_chunks; c++) {
        w->totals.drawn += f->think[c].visible_count;
        w->totals.stale_lookups += f->think[c].stale;
        w->totals.retargets += f->think[c].retargets;
        w->totals.data_allocs += f->think[c].data_allocs;
        w->totals.data_failures += f->think[c].data_failures;
        m->scratch_done(m->self, f->think[c].visible);
    }

    apply_contacts(w, ctx, f, deaths, &r);
    maybe_barrage(w, ctx, deaths, &r);

    uint32_t kept = 0;   /* close the gaps the dead left in the entity list */
    for (uint32_t i = 0; i < w->entity_count; i++) {
        entity *e = w->entities[i];
        if (!e) continue;
        e->slot = kept;
        w->entities[kept++] = e;
    }
    w->entity_count = kept;

    fire(w, ctx, f, &r);
    for (uint32_t team = 0; team < 2; team++) {   /* reinforcements from the team's edge */
        for (uint32_t i = 0; i < deaths[team]; i++) {
            float x = demo_rng_float(&r, 0.0f, 0.15f) * w->size;
            vec2 at = { team ? w->size - x : x, demo_rng_float(&r, 0.0f, w->size) };
            spawn(w, ctx, team, at, &r);
        }
    }
    if (w->projectile_count > w->totals.object_peak[DEMO_PROJECTILE])
        w->totals.object_peak[DEMO_PROJECTILE] = w->projectile_count;
    if (w->particle_count > w->totals.object_peak[DEMO_PARTICLE])
        w->totals.object_peak[DEMO_PARTICLE] = w->particle_count;
}

/* A list of n pointers for the rest of the game, charged to its subsystem's tag. */
static void *new_list(world *w, kiln_ctx *ctx, demo_tag tag, uint32_t n) {
    void *list = w->mem->data_resize(w->mem->self, ctx, tag, NULL, (size_t)n * sizeof(void *));
    if (list) w->totals.data_allocs++;
    else w->totals.data_failures++;
    return list;
}

static void free_list(world *w, kiln_ctx *ctx, demo_tag tag, void *list) {
    if (!list) return;
    w->mem->data_resize(w->mem->self, ctx, tag, list, 0);
    w->totals.data_frees++;
}

bool world_init(world *w, const demo_memory *mem, kiln_ctx *ctx, uint32_t entities, uint64_t seed) {
    *w = (world){ .mem = mem, .seed = seed, .size = sqrtf((float)entities / ENTITY_DENSITY),
                  .entity_cap = entities, .projectile_cap = entities * 2 + 1024,
                  .particle_cap = entities * 8 + 16384 };
    w->entities = new_list(w, ctx, DEMO_TAG_ENTITIES, w->entity_cap);
    w->projectiles = new_list(w, ctx, DEMO_TAG_PROJECTILES, w->projectile_cap);
    w->particles = new_list(w, ctx, DEMO_TAG_PARTICLES, w->particle_cap);
    if (!w->entities || !w->projectiles || !w->particles) return false;
    demo_rng r = demo_rng_for(seed, WORLD_SUBJECT, 0);
    w->next_barrage = 30 + demo_rng_below(&r, 30);
    for (uint32_t i = 0; i < entities; i++) {
        vec2 at = { demo_rng_float(&r, 0.0f, w->size), demo_rng_float(&r, 0.0f, w->size) };
        if (!spawn(w, ctx, i & 1, at, &r)) return false;
    }
    return true;
}

void world_destroy(world *w, kiln_ctx *ctx) {
    const demo_memory *m = w->mem;
    for (uint32_t i = 0; i < w->particle_count; i++)
        m->object_delete(m->self, ctx, DEMO_PARTICLE, w->particles[i]);
    for (uint32_t i = 0; i < w->projectile_count; i++)
        m->object_delete(m->self, ctx, DEMO_PROJECTILE, w->projectiles[i]);
    for (uint32_t i = 0; i < w->entity_count; i++) {
        if (!w->entities[i]) continue;
        forget_foes(w, ctx, w->entities[i]);
        m->entity_delete(m->self, ctx, w->entities[i]->self);
    }
    free_list(w, ctx, DEMO_TAG_ENTITIES, w->entities);
    free_list(w, ctx, DEMO_TAG_PROJECTILES, w->projectiles);
    free_list(w, ctx, DEMO_TAG_PARTICLES, w->particles);
    world_totals totals = w->totals;   /* the allocations and frees stay readable */
    *w = (world){ .totals = totals };
}

/* FNV-1a over n 32-bit words of any type (read with memcpy: floats and 64-bit counts
 * must not be read through a uint32_t pointer). */
static uint64_t mix(uint64_t h, const void *words, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t v;
        memcpy(&v, (const char *)words + i * sizeof v, sizeof v);
        h = (h ^ v) * 0x100000001b3ull;
    }
    return h;
}

uint64_t world_checksum(const world *w) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint32_t i = 0; i < w->entity_count; i++) {
        const entity *e = w->entities[i];
        h = mix(h, &e->pos[w->cur], 2);
        h = mix(h, &e->hp, 1);
        uint32_t ids[3] = { e->serial, e->team, e->kills };
        h = mix(h, ids, 3);
        h = mix(h, &e->foe_count, 1);        /* its AI memory: the foes it remembers */
        h = mix(h, e->foes, e->foe_count);
    }
    for (uint32_t i = 0; i < w->projectile_count; i++)
        h = mix(h, w->projectiles[i], 6);   /* pos, vel, damage, life: not the references */
    for (uint32_t i = 0; i < w->particle_count; i++)
        h = mix(h, w->particles[i], 5);     /* pos, vel, life */
    uint64_t counts[3] = { w->totals.kills, w->totals.stale_lookups, w->totals.shots };
    return mix(h, counts, 6);
}
