/* examples/demo/memory_malloc.c — the same game's memory the usual way: every entity,
 * projectile, particle and scratch array from malloc, freed with free, the persistent
 * data of variable size (the world's lists, the AI memory) from malloc/realloc/free with
 * no tag (malloc has none: nothing counts it by subsystem), and references
 * to entities through a table of pointers with generations, guarded by one mutex
 * (any thread may look an entity up, so the table must be locked for every lookup). */
#include "demo.h"

#include <pthread.h>
#include <stdlib.h>

#define NO_SLOT UINT32_MAX

typedef struct table_slot {
    entity  *item;        /* NULL while free */
    uint32_t generation;  /* odd while live; bumped by new and delete */
    uint32_t next_free;
} table_slot;

typedef struct malloc_memory {
    pthread_mutex_t lock;       /* guards every field below */
    table_slot     *slots;
    uint32_t        capacity, used, free_head;
    uint64_t        allocs, frees, live, stale;
} malloc_memory;

/* A reference: generation << 32 | (index + 1), so that 0 is never valid. */
static entity_ref make_ref(uint32_t index, uint32_t generation) {
    return (entity_ref){ (uint64_t)generation << 32 | (index + 1u) };
}

/* The slot ref names while it is live; NULL when stale. Called with the lock held. */
static table_slot *live_slot(malloc_memory *mm, entity_ref ref) {
    uint32_t index = (uint32_t)ref.bits - 1u;
    if (index >= mm->used || mm->slots[index].generation != (uint32_t)(ref.bits >> 32) ||
        !mm->slots[index].item)
        return NULL;
    return &mm->slots[index];
}

static entity_ref entity_new(void *self, kiln_ctx *ctx, entity **item) {
    malloc_memory *mm = self;
    (void)ctx;
    entity *e = calloc(1, sizeof *e);
    if (!e) return (entity_ref){ 0 };
    pthread_mutex_lock(&mm->lock);
    uint32_t index = mm->free_head != NO_SLOT ? mm->free_head
                     : mm->used < mm->capacity ? mm->used++ : NO_SLOT;
    entity_ref ref = { 0 };
    if (index != NO_SLOT) {
        table_slot *slot = &mm->slots[index];
        if (index == mm->free_head) mm->free_head = slot->next_free;
        slot->item = e;
        slot->generation++;
        mm->allocs++;
        mm->live++;
        ref = make_ref(index, slot->generation);
    }
    pthread_mutex_unlock(&mm->lock);
    if (!ref.bits) free(e), e = NULL;
    *item = e;
    return ref;
}

static entity *entity_lookup(void *self, entity_ref ref) {
    malloc_memory *mm = self;
    pthread_mutex_lock(&mm->lock);
    table_slot *slot = live_slot(mm, ref);
    entity *e = slot ? slot->item : NULL;
    if (!e) mm->stale++;
    pthread_mutex_unlock(&mm->lock);
    return e;   /* valid only because the game frees entities between its parallel stages */
}

static bool entity_delete(void *self, kiln_ctx *ctx, entity_ref ref) {
    malloc_memory *mm = self;
    (void)ctx;
    pthread_mutex_lock(&mm->lock);
    table_slot *slot = live_slot(mm, ref);
    entity *e = slot ? slot->item : NULL;
    if (slot) {
        slot->item = NULL;
        slot->generation++;
        slot->next_free = mm->free_head;
        mm->free_head = (uint32_t)(slot - mm->slots);
        mm->frees++;
        mm->live--;
    }
    pthread_mutex_unlock(&mm->lock);
    free(e);
    return e != NULL;
}

static void *object_new(void *self, kiln_ctx *ctx, demo_kind kind) {
    (void)self, (void)ctx;
    return malloc(kind == DEMO_PROJECTILE ? sizeof(projectile) : sizeof(particle));
}

static void object_delete(void *self, kiln_ctx *ctx, demo_kind kind, void *object) {
    (void)self, (void)ctx, (void)kind;
    free(object);
}

static void *scratch_new(void *self, kiln_ctx *ctx, size_t size) {
    (void)self, (void)ctx;
    return malloc(size);
}

static void scratch_done(void *self, void *scratch) {
    (void)self;
    free(scratch);
}

static void *data_resize(void *self, kiln_ctx *ctx, demo_tag tag, void *old, size_t size) {
    (void)self, (void)ctx, (void)tag;
    if (size == 0) {
        free(old);
        return NULL;
    }
    return realloc(old, size);   /* old NULL: malloc; NULL: old untouched */
}

/* Entities only: counting each malloc and free too would add shared atomics that a
 * malloc game does not have. The game's own counts cover the objects. */
static void stats(void *self, demo_memory_stats *out) {
    malloc_memory *mm = self;
    pthread_mutex_lock(&mm->lock);
    *out = (demo_memory_stats){ .entity_allocs = mm->allocs, .entity_frees = mm->frees,
                                .entity_live = mm->live, .stale_lookups = mm->stale };
    pthread_mutex_unlock(&mm->lock);
}

static void destroy(void *self, kiln_ctx *ctx) {
    malloc_memory *mm = self;
    (void)ctx;
    for (uint32_t i = 0; i < mm->used; i++) free(mm->slots[i].item);
    free(mm->slots);
    pthread_mutex_destroy(&mm->lock);
    free(mm);
}

bool demo_memory_malloc(demo_memory *memory, uint32_t entity_capacity) {
    malloc_memory *mm = calloc(1, sizeof *mm);
    table_slot *slots = calloc(entity_capacity, sizeof *slots);
    if (!mm || !slots) {
        free(mm);
        free(slots);
        return false;
    }
    pthread_mutex_init(&mm->lock, NULL);
    mm->slots = slots;
    mm->capacity = entity_capacity;
    mm->free_head = NO_SLOT;
    *memory = (demo_memory){ .name = "malloc", .self = mm, .entity_new = entity_new,
                             .entity_get = entity_lookup, .entity_delete = entity_delete,
                             .object_new = object_new, .object_delete = object_delete,
                             .scratch_new = scratch_new, .scratch_done = scratch_done,
                             .data_resize = data_resize, .stats = stats, .destroy = destroy };
    return true;
}
