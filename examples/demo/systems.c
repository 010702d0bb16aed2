/* examples/demo/systems.c — one frame as jobs: a parallel_for inside a job, a job that
 * runs and waits for its own sub-jobs, a job pinned to the main thread, scratch arrays
 * that each job takes from the memory layer (frame memory of the thread running it, in
 * the kiln run), and persistent AI memory that the think jobs grow on whatever thread
 * runs them (the kiln heap, under the "AI scratch" tag, in the kiln run). */
#include "systems.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "rng.h"

#define ENTITY_SPEED   1.5f
#define FIRE_RANGE     150.0f
#define SHOT_SPEED     6.0f
#define HIT_RADIUS     6.0f
#define RETARGET_PICKS 4u

/* What the jobs of one frame share. Lives on the main thread's stack for the frame. */
typedef struct frame_jobs {
    world           *w;
    kiln_ctx        *main_ctx;
    world_frame      out;             /* each chunk's job writes only its own entry */
    kiln_counter     present_done;    /* the pinned present job */
    uint32_t         drawn_sparks;    /* written by the present job */
    _Atomic uint32_t scratch_failures;
} frame_jobs;

typedef struct spark_task { frame_jobs *f; uint32_t chunk; } spark_task;

static uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }

static void *scratch(frame_jobs *f, kiln_ctx *ctx, size_t size) {
    const demo_memory *m = f->w->mem;
    void *p = m->scratch_new(m->self, ctx, size);
    if (!p) atomic_fetch_add_explicit(&f->scratch_failures, 1, memory_order_relaxed);
    return p;
}

/* A perception query: look at a few random entities, keep the enemies among them in a
 * small scratch list, take the nearest. With frame memory the list costs a pointer bump
 * and is never freed; with malloc it is a malloc and a free. */
static entity *retarget(kiln_ctx *ctx, frame_jobs *f, entity *e, demo_rng *r) {
    const world *w = f->w;
    entity **picks = scratch(f, ctx, RETARGET_PICKS * sizeof *picks);
    if (!picks) return NULL;
    uint32_t n = 0;
    for (uint32_t k = 0; k < RETARGET_PICKS; k++) {
        entity *c = w->entities[demo_rng_below(r, w->entity_count)];
        if (c->team != e->team) picks[n++] = c;
    }
    entity *best = NULL;
    float best_d2 = INFINITY;
    for (uint32_t k = 0; k < n; k++) {
        float dx = picks[k]->pos[w->cur].x - e->pos[w->cur].x;
        float dy = picks[k]->pos[w->cur].y - e->pos[w->cur].y;
        if (dx * dx + dy * dy < best_d2) best_d2 = dx * dx + dy * dy, best = picks[k];
    }
    w->mem->scratch_done(w->mem->self, picks);
    if (best) e->target = best->self;
    return best;
}

/* e's AI memory keeps the serial of the foe it just took as its target: the newest
 * DEMO_AI_MEMORY_MAX, oldest first. It grows by doubling through data_resize, from this
 * job's thread (a worker's context in the kiln run; the main thread frees it when e
 * dies). When the memory layer refuses, e forgets this foe and the refusal is counted
 * (the runs would then differ: the report checks there are none). */
static void remember_foe(kiln_ctx *ctx, const world *w, entity *e, uint32_t serial,
                         think_out *out) {
    if (e->foe_count == DEMO_AI_MEMORY_MAX) {   /* full: the oldest goes */
        memmove(e->foes, e->foes + 1, (DEMO_AI_MEMORY_MAX - 1) * sizeof *e->foes);
        e->foe_count--;
    } else if (e->foe_count == e->foe_cap) {
        uint32_t cap = e->foe_cap ? e->foe_cap * 2 : 4;
        uint32_t *grown = w->mem->data_resize(w->mem->self, ctx, DEMO_TAG_AI, e->foes,
                                              cap * sizeof *grown);
        if (!grown) {
            out->data_failures++;
            return;
        }
        if (!e->foes) out->data_allocs++;
        e->foes = grown, e->foe_cap = cap;
    }
    e->foes[e->foe_count++] = serial;
}

/* Moves e toward its target (or wanders), and asks to fire when in range. */
static void act(const world *w, entity *e, const entity *t, think_out *out, demo_rng *r) {
    vec2 p = e->pos[w->cur], v = e->vel;
    float jitter_x = demo_rng_float(r, -0.2f, 0.2f), jitter_y = demo_rng_float(r, -0.2f, 0.2f);
    float d = 0.0f, dx = 0.0f, dy = 0.0f;
    if (t) {
        dx = t->pos[w->cur].x - p.x, dy = t->pos[w->cur].y - p.y;
        d = sqrtf(dx * dx + dy * dy) + 1e-3f;
        float approach = d > FIRE_RANGE * 0.7f ? ENTITY_SPEED : -0.5f * ENTITY_SPEED;
        v.x = v.x * 0.9f + (dx / d * approach + jitter_x) * 0.1f;
        v.y = v.y * 0.9f + (dy / d * approach + jitter_y) * 0.1f;
    } else {
        v.x = v.x * 0.95f + jitter_x, v.y = v.y * 0.95f + jitter_y;
    }
    p.x = fminf(fmaxf(p.x + v.x, 0.0f), w->size);
    p.y = fminf(fmaxf(p.y + v.y, 0.0f), w->size);
    e->pos[w->cur ^ 1] = p;   /* the next position: nobody reads it in this stage */
    e->vel = v;
    if (e->cooldown) {
        e->cooldown--;
    } else if (t && d < FIRE_RANGE) {
        out->fire[out->fire_count++] = (fire_request){ e->self, e->target, p,
                                                       { dx / d * SHOT_SPEED, dy / d * SHOT_SPEED } };
        e->cooldown = 40 + demo_rng_below(r, 80);
    }
}

/* One chunk of entities: resolve each one's target by reference — from whatever thread
 * runs this, while the main thread's world is frozen — act, and cull against the camera.
 * A stale reference (the target died in an earlier frame) is normal: get says NULL. */
static void think_chunk(kiln_ctx *ctx, frame_jobs *f, uint32_t c) {
    world *w = f->w;
    const demo_memory *m = w->mem;
    uint32_t first = c * WORLD_ENTITY_CHUNK, n = min_u32(WORLD_ENTITY_CHUNK, w->entity_count - first);
    think_out *out = &f->out.think[c];
    *out = (think_out){ .visible = scratch(f, ctx, n * sizeof *out->visible),
                        .fire = scratch(f, ctx, n * sizeof *out->fire) };
    if (!out->visible || !out->fire) return;
    for (uint32_t i = first; i < first + n; i++) {
        entity *e = w->entities[i];
        demo_rng r = demo_rng_for(w->seed, e->serial, w->frame);
        entity *t = NULL;
        if (e->target.bits && !(t = m->entity_get(m->self, e->target))) {
            out->stale++;
            e->target = (entity_ref){ 0 };
        }
        if (!t && (t = retarget(ctx, f, e, &r))) {
            out->retargets++;
            remember_foe(ctx, w, e, t->serial, out);
        }
        act(w, e, t, out, &r);
        if (world_in_camera(w, e->pos[w->cur ^ 1])) out->visible[out->visible_count++] = i;
    }
}

void demo_think_range(kiln_ctx *ctx, size_t begin, size_t end, void *arg) {
    for (size_t c = begin; c < end; c++) think_chunk(ctx, arg, (uint32_t)c);
}

/* A job that fans out with kiln_parallel_for: the calling worker takes a share of the
 * ranges and idle threads steal the rest. */
void demo_think_job(kiln_ctx *ctx, void *arg) {
    frame_jobs *f = arg;
    kiln_parallel_for(ctx, f->out.think_chunks, 0, demo_think_range, f);   /* 0: kiln picks the grain */
}

void demo_spark_chunk_job(kiln_ctx *ctx, void *arg) {
    spark_task *task = arg;
    world *w = task->f->w;
    uint32_t first = task->chunk * WORLD_SPARK_CHUNK;
    uint32_t n = min_u32(WORLD_SPARK_CHUNK, w->particle_count - first);
    chunk_keep *keep = &task->f->out.spark_keep[task->chunk];
    *keep = (chunk_keep){ 0 };
    for (uint32_t i = first; i < first + n; i++) {
        particle *p = w->particles[i];
        p->pos.x += p->vel.x, p->pos.y += p->vel.y;
        p->vel.x *= 0.96f, p->vel.y *= 0.96f;
        if (--p->life == 0) {   /* a pool free from a worker: into this thread's cache */
            w->mem->object_delete(w->mem->self, ctx, DEMO_PARTICLE, p);
            keep->freed++;
        } else {
            w->particles[first + keep->alive++] = p;
        }
    }
}

/* Nested jobs: one sub-job per chunk of particles, run and waited for here (kiln_wait
 * runs jobs meanwhile, so a job waiting on a worker blocks nothing). Then the main
 * thread gets the particles' vertex list to build: a job pinned to it. */
void demo_sparks_job(kiln_ctx *ctx, void *arg) {
    frame_jobs *f = arg;
    const demo_memory *m = f->w->mem;
    uint32_t chunks = f->out.spark_chunks;
    spark_task *tasks = chunks ? scratch(f, ctx, chunks * sizeof *tasks) : NULL;
    kiln_job *jobs = chunks ? scratch(f, ctx, chunks * sizeof *jobs) : NULL;
    if (tasks && jobs) {
        for (uint32_t c = 0; c < chunks; c++) {
            tasks[c] = (spark_task){ f, c };
            jobs[c] = (kiln_job){ demo_spark_chunk_job, &tasks[c] };
        }
        kiln_counter done = { { 0 } };
        kiln_run(ctx, jobs, chunks, &done);
        kiln_wait(ctx, &done);
    }
    m->scratch_done(m->self, jobs);
    m->scratch_done(m->self, tasks);
    kiln_job present = { demo_present_job, f };
    kiln_run_ex(ctx, &present, 1, &f->present_done, &(kiln_run_desc){ .pinned_to = f->main_ctx });
}

/* On the main thread (the one that owns the GPU in a real engine): the visible sparks
 * become a vertex list in the main thread's own scratch. */
void demo_present_job(kiln_ctx *ctx, void *arg) {
    typedef struct vertex { vec2 pos; uint32_t color; } vertex;
    frame_jobs *f = arg;
    const world *w = f->w;
    uint32_t alive = 0;
    for (uint32_t c = 0; c < f->out.spark_chunks; c++) alive += f->out.spark_keep[c].alive;
    vertex *vertices = alive ? scratch(f, ctx, alive * sizeof *vertices) : NULL;
    uint32_t n = 0;
    for (uint32_t c = 0; vertices && c < f->out.spark_chunks; c++) {
        for (uint32_t i = 0; i < f->out.spark_keep[c].alive; i++) {
            const particle *p = w->particles[c * WORLD_SPARK_CHUNK + i];
            if (world_in_camera(w, p->pos)) vertices[n++] = (vertex){ p->pos, p->color };
        }
    }
    w->mem->scratch_done(w->mem->self, vertices);
    f->drawn_sparks = n;
}

/* One chunk of projectiles: each resolves its target by reference; a target that died
 * leaves a dumb shot flying straight on. A hit becomes a contact for the main thread. */
static void shot_chunk(kiln_ctx *ctx, frame_jobs *f, uint32_t c) {
    world *w = f->w;
    const demo_memory *m = w->mem;
    uint32_t first = c * WORLD_SHOT_CHUNK, n = min_u32(WORLD_SHOT_CHUNK, w->projectile_count - first);
    shot_out *out = &f->out.shots[c];
    chunk_keep *keep = &f->out.shot_keep[c];
    *out = (shot_out){ .contacts = scratch(f, ctx, n * sizeof *out->contacts) };
    *keep = (chunk_keep){ 0 };
    for (uint32_t i = first; i < first + n; i++) {
        projectile *p = w->projectiles[i];
        const entity *t = NULL;
        if (p->target.bits && !(t = m->entity_get(m->self, p->target))) {
            keep->stale++;
            p->target = (entity_ref){ 0 };
        }
        if (t) {   /* steer toward where the target is now */
            float dx = t->pos[w->cur].x - p->pos.x, dy = t->pos[w->cur].y - p->pos.y;
            float d = sqrtf(dx * dx + dy * dy) + 1e-3f;
            p->vel.x = p->vel.x * 0.8f + dx / d * SHOT_SPEED * 0.2f;
            p->vel.y = p->vel.y * 0.8f + dy / d * SHOT_SPEED * 0.2f;
        }
        p->pos.x += p->vel.x, p->pos.y += p->vel.y;
        bool hit = false;
        if (t && out->contacts) {
            float dx = t->pos[w->cur].x - p->pos.x, dy = t->pos[w->cur].y - p->pos.y;
            hit = dx * dx + dy * dy < HIT_RADIUS * HIT_RADIUS;
            if (hit) out->contacts[out->contact_count++] = (contact){ p->target, p->owner, p->damage };
        }
        if (hit || --p->life == 0) {
            m->object_delete(m->self, ctx, DEMO_PROJECTILE, p);
            keep->freed++;
        } else {
            w->projectiles[first + keep->alive++] = p;
        }
    }
}

void demo_shots_range(kiln_ctx *ctx, size_t begin, size_t end, void *arg) {
    for (size_t c = begin; c < end; c++) shot_chunk(ctx, arg, (uint32_t)c);
}

systems_figures systems_frame(world *w, kiln_ctx *main_ctx) {
    const demo_memory *m = w->mem;
    frame_jobs f = { .w = w, .main_ctx = main_ctx };
    world_frame *out = &f.out;
    out->think_chunks = world_chunks(w->entity_count, WORLD_ENTITY_CHUNK);
    out->shot_chunks = world_chunks(w->projectile_count, WORLD_SHOT_CHUNK);
    out->spark_chunks = world_chunks(w->particle_count, WORLD_SPARK_CHUNK);
    /* The chunks' outputs: scratch of the main thread, filled by the jobs. */
    out->think = scratch(&f, main_ctx, (out->think_chunks + 1) * sizeof *out->think);
    out->shots = scratch(&f, main_ctx, (out->shot_chunks + 1) * sizeof *out->shots);
    out->shot_keep = scratch(&f, main_ctx, (out->shot_chunks + 1) * sizeof *out->shot_keep);
    out->spark_keep = scratch(&f, main_ctx, (out->spark_chunks + 1) * sizeof *out->spark_keep);
    if (!out->think || !out->shots || !out->shot_keep || !out->spark_keep)
        return (systems_figures){ .scratch_failures = 1 };

    /* Stage 1: entities think while particles move. The main thread runs jobs too while
     * it waits, and the pinned present job runs here, on this thread, at the latest in
     * the second wait (the sparks job submits it before it finishes). */
    kiln_job stage1[2] = { { demo_think_job, &f }, { demo_sparks_job, &f } };
    kiln_counter done = { { 0 } };
    kiln_run(main_ctx, stage1, 2, &done);
    kiln_wait(main_ctx, &done);
    kiln_wait(main_ctx, &f.present_done);
    w->cur ^= 1;   /* the positions the think jobs wrote are now the current ones */

    /* Stage 2: projectiles, straight from the main thread. */
    kiln_parallel_for(main_ctx, out->shot_chunks, 0, demo_shots_range, &f);

    /* Stage 3: the main thread applies what the jobs found. */
    world_apply(w, main_ctx, out);
    m->scratch_done(m->self, out->think);
    m->scratch_done(m->self, out->shots);
    m->scratch_done(m->self, out->shot_keep);
    m->scratch_done(m->self, out->spark_keep);
    return (systems_figures){ f.drawn_sparks,
                              atomic_load_explicit(&f.scratch_failures, memory_order_relaxed) };
}
