/* runtime/tags.h — a runtime's tags (kiln/heap.h): the table of their accounts
 * (alloc/tag_account.h), looking a kiln_tag up, and the calls of kiln/heap.h on them.
 * Never installed.
 *
 * The table: KILN_MAX_TAGS account pointers, each published once with release (under
 * registry_lock, which orders creates) and never changed or freed before kiln_destroy,
 * so a lookup is an acquire load with no lock. A tag's id is its slot + 1 in the low 16
 * bits and the runtime's salt in the high 16, so another live runtime's tag is told
 * apart. */
#ifndef KILN_RUNTIME_TAGS_H
#define KILN_RUNTIME_TAGS_H

#include "types.h"

/* The slot in rt->tags of a tag id (its low 16 bits less 1; UINT32_MAX for {0}). */
static inline uint32_t kiln_tag_slot(uint32_t id) {
    return (id & 0xffffu) - 1u;
}

/* kiln_create, before any allocator: the untagged and frame accounts set up. */
KILN_INTERNAL void kiln_tags_init(kiln_runtime *rt);

/* What an allocator of no tag charges: account, or the untagged one for NULL. */
static inline kiln_tag_account *kiln_tag_or_untagged(kiln_runtime *rt, kiln_tag_account *account) {
    return account ? account : &rt->untagged_account;
}

/* kiln_destroy: frees the accounts (after every allocator that charges them is gone).
 * The destroying thread. (The runtime's salt is handed out with its place on the list
 * of live runtimes, runtime/check.c: no two live runtimes share one.) */
KILN_INTERNAL void kiln_tags_fini(kiln_runtime *rt);

/* The account of tag: NULL for {0} (untagged: *ok true), or for a tag that is no tag of
 * rt's (*ok false, logged as misuse naming function: TAG_INVALID, TAG_FOREIGN).
 * Lock-free. Concurrency: any thread. */
KILN_INTERNAL kiln_tag_account *kiln_tag_lookup(kiln_runtime *rt, kiln_tag tag,
                                                const char *function, bool *ok);

/* Sums the first count tag slots into rt->tag_sums (kiln_heap_tag_sums, alloc/heap.h):
 * the heap credit contexts hold per tag and the tags' heap allocations and frees. Under
 * registry_lock, held by the caller while it reads them. */
KILN_INTERNAL void kiln_heap_tag_sums_read(kiln_runtime *rt, uint32_t count);

/* A tag's live bytes without the credit held for it: exact while its users are quiet. */
static inline uint64_t kiln_heap_tag_used(const kiln_tag_account *a, const kiln_heap_tag_sums *sums) {
    uint64_t live = kiln_load_relaxed(&a->live), credit = sums->credit[kiln_tag_slot(a->id)];
    return live > credit ? live - credit : 0;
}

#endif /* KILN_RUNTIME_TAGS_H */
