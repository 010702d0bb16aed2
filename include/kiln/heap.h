/* kiln/heap.h — tags: every byte kiln hands out attributed to a subsystem, with budgets.
 *
 *   kiln_tag audio  = kiln_tag_create(rt, &(kiln_tag_desc){ .name = "Audio",
 *                                                            .budget = 64 << 20 });
 *   kiln_tag stream = kiln_tag_create(rt, &(kiln_tag_desc){ .name = "Audio/Streaming",
 *                                                            .parent = audio,
 *                                                            .budget = 16 << 20,
 *                                                            .policy = KILN_BUDGET_REFUSE });
 *   kiln_pool *voices = kiln_pool_create(rt, &(kiln_pool_desc){ .size = 256, .tag = audio });
 *   kiln_arena_set_tag(level_arena, stream);
 *
 * What a tag counts: the memory its allocators hold from the block pool, at block
 * granularity (a pool's blocks, its magazines' included; an arena's blocks and large
 * mappings; a handle table's slots), charged when they take it and released when they
 * give it back. A child's bytes count toward its parent too ("Audio/Streaming" rolls up
 * into "Audio"). Frame memory is never tagged: it is its own line (kiln_stats). The
 * charges happen on the allocators' slow paths only: an allocation served from memory
 * the allocator holds costs the tag nothing.
 *
 * Budgets (bytes live at once, the tag's children included):
 * - KILN_BUDGET_WARN: TAG_BUDGET_NEAR when the tag's live bytes reach desc.warn_percent
 *   of it, TAG_BUDGET_EXCEEDED when they pass it, each once per episode (an episode ends
 *   when they fall 10 points under warn_percent).
 * - KILN_BUDGET_REFUSE: a charge that would pass it is refused: the pool's or arena's
 *   allocation that needed the memory returns NULL (counted in its failures and in the
 *   tag's refusals), a table's create fails; TAG_BUDGET_REFUSED once per frame per tag.
 * Exactness: a tag's live bytes are exact at every instant (one atomic step per charge
 * and per level). A REFUSE budget is passed by no block, mapping or table, not even for
 * a moment, with one exception: the blocks that hold a pool's magazines
 * (kiln_pool_stats.magazine_blocks), which a free may need, are charged whatever the
 * budget (refusing one would lose the object freed), and such a pass is told as
 * TAG_BUDGET_EXCEEDED. Two charges that meet at a parent's budget may both be refused
 * where one would have fit.
 *
 * Tags live as long as their runtime; KILN_MAX_TAGS at most. A tag's id is unique among
 * the live runtimes (another's is refused, TAG_FOREIGN); a tag kept from a runtime
 * destroyed since may pass for one of a runtime made later. Several tags read while they
 * are charged are each exact at its own instant: compare a parent with its children
 * (the parent includes them) in figures read while their allocators are quiet. Concurrency: every call
 * here may be made from any thread at the same time, but kiln_tag_push and
 * kiln_tag_pop (the context's own thread) and kiln_arena_set_tag (the arena's owner). */
#ifndef KILN_HEAP_H
#define KILN_HEAP_H

#include <kiln/core.h>
#include <kiln/memory.h>
#include <kiln/stats.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most tags a runtime holds. */
#define KILN_MAX_TAGS 256

typedef struct kiln_tag_desc {
    const char        *name;     /* required, unique in the runtime; copied (47 bytes kept) */
    kiln_tag           parent;   /* {0}: none. A child's bytes count toward its parent too */
    size_t             budget;   /* bytes live at once, children included; 0: none */
    kiln_budget_policy policy;   /* KILN_BUDGET_WARN (0) or KILN_BUDGET_REFUSE */
} kiln_tag_desc;

/* A new tag; {0}, logged and counted in api_errors, for a bad rt (RUNTIME_NULL,
 * RUNTIME_INVALID), a NULL desc (TAG_DESC_NULL), a NULL or empty name (TAG_NAME_NULL), a
 * name another tag has (TAG_NAME_TAKEN), a parent that is no tag of rt's (TAG_INVALID,
 * TAG_FOREIGN), a policy that is none (TAG_POLICY_INVALID), or when KILN_MAX_TAGS exist
 * (TAG_TOO_MANY). Not inside a log callback (LOG_CALLBACK_CALL). Concurrency: any thread. */
KILN_API kiln_tag kiln_tag_create(kiln_runtime *rt, const kiln_tag_desc *desc);

/* The tag of that name (compared whole, as kept: 47 bytes); {0} when none has it, a NULL
 * name (TAG_NAME_NULL) or a bad rt. Concurrency: any thread. */
KILN_API kiln_tag kiln_tag_find(kiln_runtime *rt, const char *name);

/* Makes tag the calling thread's current tag and returns the one before, for
 * kiln_tag_pop; the current tag is the default of the heap calls that take none
 * (kiln_tag_current reads it). A tag that is no tag of ctx's runtime is refused
 * (TAG_INVALID, TAG_FOREIGN): the current tag stays and is returned. {0} for a bad ctx.
 * Concurrency: ctx's own thread. */
KILN_API kiln_tag kiln_tag_push(kiln_ctx *ctx, kiln_tag tag);

/* Restores previous (what kiln_tag_push returned) as the current tag; refused like
 * kiln_tag_push's tag. Concurrency: ctx's own thread. */
KILN_API void kiln_tag_pop(kiln_ctx *ctx, kiln_tag previous);

/* The calling thread's current tag; {0} for none or a bad ctx. Concurrency: ctx's own
 * thread. */
KILN_API kiln_tag kiln_tag_current(kiln_ctx *ctx);

/* Moves arena to tag ({0}: untagged): the memory it holds now is released from its old
 * tag and charged to the new one, and what it takes later is charged there. A REFUSE
 * budget the move would pass refuses it (TAG_BUDGET_REFUSED; the arena keeps its tag).
 * Refused, logged: a NULL or destroyed arena (ARENA_NULL, ARENA_DESTROYED), a frame arena
 * (ARENA_FRAME_TAG: frame memory is its own line), a tag that is no tag of the arena's
 * runtime (TAG_INVALID, TAG_FOREIGN). Concurrency: the arena's owner (as its allocations). */
KILN_API void kiln_arena_set_tag(kiln_arena *arena, kiln_tag tag);

/* The arena's tag; {0} for none or a bad arena. Concurrency: any thread. */
KILN_API kiln_tag kiln_arena_tag(const kiln_arena *arena);

/* One tag's figures after its name and before its numbers: X(type, name, doc) per field,
 * in struct order (kiln/stats_fields.h). */
#define KILN_TAG_STATS_FIELDS(X)                                                               \
    X(uint32_t, id,              "the tag's id (kiln_tag.id)")                                 \
    X(uint32_t, parent,          "the parent's id; 0: none")                                   \
    X(uint64_t, live_bytes,      "bytes charged now, its children's included")                 \
    X(uint64_t, own_bytes,       "of those, charged to this tag itself")                       \
    X(uint64_t, peak_bytes,      "the most live_bytes has been")                               \
    X(uint64_t, budget,          "bytes live at once; 0: none")                                \
    X(bool,     refuse,          "KILN_BUDGET_REFUSE")                                         \
    X(uint64_t, allocs,          "blocks, large mappings and table slots charged to it")       \
    X(uint64_t, frees,           "of those, given back")                                       \
    X(uint64_t, refusals,        "charges refused at its budget (REFUSE)")                     \
    X(uint64_t, budget_warnings, "TAG_BUDGET_EXCEEDED episodes (WARN)")                        \
    /* end of list */

typedef struct kiln_tag_stats {
    char name[48];   /* the tag's name (an array, so not in the list) */
    KILN_TAG_STATS_FIELDS(KILN_STATS_MEMBER)
} kiln_tag_stats;

/* Every tag's figures, in creation order, into out[0, cap); returns how many tags there
 * are (more than cap: the rest left out). Refused: a bad rt, a NULL out with cap > 0
 * (STATS_NULL_OUT). Concurrency: any thread; figures of tags charged meanwhile are each
 * exact at some instant of the call. */
KILN_API size_t kiln_stats_tags(kiln_runtime *rt, kiln_tag_stats *out, size_t cap);

/* One tag's figures: true, or false (out zeroed) for a bad rt, a NULL out
 * (STATS_NULL_OUT), or a tag that is no tag of rt's (TAG_INVALID, TAG_FOREIGN).
 * Concurrency: any thread. */
KILN_API bool kiln_tag_stats_get(kiln_runtime *rt, kiln_tag tag, kiln_tag_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* KILN_HEAP_H */
