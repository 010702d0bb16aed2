/* examples/demo/memory_kiln.c — the game's memory on kiln: entities in a typed handle
 * table, projectiles and particles in pools, scratch in frame memory, and the persistent
 * data of variable size (the world's lists, the entities' AI memory) in the general heap.
 * Each subsystem's memory is charged to its tag: the table and the entity list to
 * "entities", each pool and its list to its own, the AI memory to "AI scratch", whose
 * budget is tight on purpose (a warning, and the report shows it reached). Each call
 * below is what a kiln game writes in place of malloc/free/realloc and a pointer table. */
#include "demo.h"

#include <stdlib.h>
#include <string.h>

/* A typed table: entity_table, entity_handle, entity_alloc/get/free. An entity_handle
 * cannot be passed where another typed table's handle is expected. */
KILN_HANDLE_TYPE(entity, entity)

typedef struct kiln_memory {
    kiln_runtime *rt;
    kiln_tag      tags[DEMO_TAGS];
    entity_table  entities;
    kiln_pool    *pools[DEMO_KINDS];
} kiln_memory;

static const char *const pool_names[DEMO_KINDS] = { "projectiles", "particles" };

/* The game stores references as plain 64-bit words; here they are entity handles. */
static entity_handle as_handle(entity_ref ref) { return (entity_handle){ { ref.bits } }; }

static entity_ref entity_new(void *self, kiln_ctx *ctx, entity **item) {
    kiln_memory *k = self;
    return (entity_ref){ entity_alloc(ctx, k->entities, item).raw.bits };   /* zeroed */
}

/* Wait-free on any thread: a generation compare. A stale handle gives NULL (and is
 * counted in the table's stats); a pointer it gives stays valid until the frame ends. */
static entity *entity_lookup(void *self, entity_ref ref) {
    kiln_memory *k = self;
    return entity_get(k->entities, as_handle(ref));
}

/* The handle goes stale at once on every thread; the slot is reused after frame end.
 * Freeing a zero handle would be logged as misuse: it names nothing, so skip it. */
static bool entity_delete(void *self, kiln_ctx *ctx, entity_ref ref) {
    kiln_memory *k = self;
    entity_handle h = as_handle(ref);
    return !entity_handle_is_null(h) && entity_free(ctx, k->entities, h);
}

/* A pop from this thread's cache of the pool; any thread may free it later. */
static void *object_new(void *self, kiln_ctx *ctx, demo_kind kind) {
    kiln_memory *k = self;
    return kiln_pool_alloc(ctx, k->pools[kind]);
}

static void object_delete(void *self, kiln_ctx *ctx, demo_kind kind, void *object) {
    kiln_memory *k = self;
    kiln_pool_free(ctx, k->pools[kind], object);
}

/* Frame memory of the calling thread: a pointer bump, freed all at once by frame end. */
static void *scratch_new(void *self, kiln_ctx *ctx, size_t size) {
    (void)self;
    return kiln_frame_alloc(ctx, size, 16);
}

static void scratch_done(void *self, void *scratch) {
    (void)self, (void)scratch;   /* nothing to do: kiln_frame_end takes it back */
}

/* The general heap, charged to the subsystem's tag: a size class's magazines of the
 * calling thread's context for small sizes (no lock), a mapping of its own for a big
 * one. A resize keeps the tag the allocation was made with, and a free may come from any
 * thread, whichever allocated it. */
static void *data_resize(void *self, kiln_ctx *ctx, demo_tag tag, void *old, size_t size) {
    kiln_memory *k = self;
    if (size == 0) {
        kiln_heap_free(ctx, old);
        return NULL;
    }
    return old ? kiln_heap_realloc(ctx, old, size, 0) : kiln_heap_alloc(ctx, k->tags[tag], size, 0);
}

/* kiln's own figures, from the listings a debug overlay would draw (every live table
 * and pool of the runtime; this layer finds its own by name). kiln_pool_stats_get and
 * kiln_handles_stats_get read one object directly. */
static void stats(void *self, demo_memory_stats *out) {
    kiln_memory *k = self;
    *out = (demo_memory_stats){ .has_object_stats = true };
    kiln_handles_stats tables[8];
    size_t n = kiln_stats_handles(k->rt, tables, 8);
    for (size_t i = 0; i < n && i < 8; i++) {
        if (strcmp(tables[i].name, "entities") != 0) continue;
        out->entity_allocs = tables[i].allocs;
        out->entity_frees = tables[i].frees;
        out->entity_live = tables[i].live;
        out->stale_lookups = tables[i].stale_lookups;
    }
    kiln_pool_stats pools[8];
    n = kiln_stats_pools(k->rt, pools, 8);
    for (size_t i = 0; i < n && i < 8; i++) {
        for (int kind = 0; kind < DEMO_KINDS; kind++) {
            if (strcmp(pools[i].name, pool_names[kind]) != 0) continue;
            out->object_allocs[kind] = pools[i].allocs;
            out->object_frees[kind] = pools[i].frees;
            out->object_live[kind] = pools[i].live;
            out->object_peak[kind] = pools[i].peak_live;
        }
    }
    kiln_heap_stats heap;
    if (kiln_stats_heap(k->rt, &heap)) out->has_heap_stats = true, out->heap_live = heap.live_objects;
}

static void destroy(void *self, kiln_ctx *ctx) {
    kiln_memory *k = self;
    (void)ctx;
    for (int kind = 0; kind < DEMO_KINDS; kind++)
        if (k->pools[kind]) kiln_pool_destroy(k->pools[kind]);
    if (k->entities.raw) entity_table_destroy(k->entities);
    free(k);
}

/* What the level plans for, reserved at load as a shipping game would, so that the first
 * frames take no memory from the OS: every slot of the entity table, and the projectiles
 * and particles a battle of this size keeps live at its busiest (about four times what
 * the default battle peaks at). The pools still grow past it if a battle needs more. */
static uint32_t planned_objects(int kind, uint32_t entity_capacity) {
    return kind == DEMO_PROJECTILE ? entity_capacity / 8 + 1024 : entity_capacity / 2 + 4096;
}

/* The AI memory's budget: what the level planned, 4 bytes per slot of the entity table
 * (about 8 per entity, the table having room for twice the battle): two foes remembered
 * each. Tight on purpose: every entity that has taken a target holds at least the
 * heap's smallest class (16 bytes), so a battle passes it in its first frame, and the
 * budget (KILN_BUDGET_WARN) says so: a TAG_BUDGET_EXCEEDED warning in the log, the tag's
 * budget_warnings, "reached" in the report. The game goes on unharmed; a
 * KILN_BUDGET_REFUSE budget would have made data_resize fail instead. */
static size_t ai_budget(uint32_t entity_capacity) {
    return (size_t)entity_capacity * 4;
}

bool demo_memory_kiln(demo_memory *memory, kiln_runtime *rt, uint32_t entity_capacity) {
    kiln_memory *k = calloc(1, sizeof *k);
    if (!k) return false;
    k->rt = rt;
    bool ok = true;
    for (int tag = 0; tag < DEMO_TAGS; tag++) {   /* no budget but the AI's */
        k->tags[tag] = kiln_tag_create(rt, &(kiln_tag_desc){
            .name = demo_tag_name(tag), .budget = tag == DEMO_TAG_AI ? ai_budget(entity_capacity) : 0,
            .policy = KILN_BUDGET_WARN });
        ok = ok && k->tags[tag].id != 0;
    }
    /* Slots freed in a frame are reused only after its end, so the table needs room for
     * the frame's respawns on top of the living. Its slots' mapping, taken here at once,
     * is charged to "entities". */
    k->entities = (entity_table){ ok ? kiln_handles_create(rt, &(kiln_handles_desc){
        .name = "entities", .item_size = sizeof(entity), .item_align = _Alignof(entity),
        .capacity = entity_capacity, .reserve = entity_capacity,
        .tag = k->tags[DEMO_TAG_ENTITIES] }) : NULL };
    ok = ok && k->entities.raw != NULL;
    for (int kind = 0; ok && kind < DEMO_KINDS; kind++) {
        /* capacity 0: the pool grows as needed; the world caps its lists itself, the same
         * way in both runs. Its blocks, magazines' included, are charged to its tag. */
        k->pools[kind] = kiln_pool_create(rt, &(kiln_pool_desc){
            .name = pool_names[kind],
            .size = kind == DEMO_PROJECTILE ? sizeof(projectile) : sizeof(particle),
            .reserve = planned_objects(kind, entity_capacity),
            .tag = k->tags[kind == DEMO_PROJECTILE ? DEMO_TAG_PROJECTILES : DEMO_TAG_PARTICLES] });
        ok = ok && k->pools[kind];
    }
    if (!ok) {
        destroy(k, NULL);
        return false;
    }
    *memory = (demo_memory){ .name = "kiln", .self = k, .entity_new = entity_new,
                             .entity_get = entity_lookup, .entity_delete = entity_delete,
                             .object_new = object_new, .object_delete = object_delete,
                             .scratch_new = scratch_new, .scratch_done = scratch_done,
                             .data_resize = data_resize, .stats = stats, .destroy = destroy };
    return true;
}
