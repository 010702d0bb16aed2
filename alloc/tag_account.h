/* alloc/tag_account.h — a tag's account (kiln/heap.h): the bytes charged to it by the
 * allocators that carry it, rolled up into its parents, against its budget. Allocators
 * charge at block granularity, on their slow paths (a block taken or given back, a large
 * mapping, a handle table's slots), never per object. Never installed.
 *
 * Concurrency: every field a charge changes is an atomic; the rest is written before the
 * account is published and read-only after. Any thread may charge or release at once.
 *
 * Exactness: live is exact at every instant (each charge and release is one atomic
 * step per level). A REFUSE budget is never passed by a charge: a level's live is raised
 * by CAS only when it stays within the budget (kiln_tag_charge_always, for pools'
 * magazine blocks, is the one exception). A charge refused at a parent rolls back the levels
 * below it; meanwhile another charge to one of those levels may be refused although it
 * would have fitted (a false refusal, never a pass). */
#ifndef KILN_ALLOC_TAG_ACCOUNT_H
#define KILN_ALLOC_TAG_ACCOUNT_H

#include "../base/atomics.h"
#include "../base/log.h"

#define KILN_TAG_NAME_BYTES 48   /* 47 kept and the NUL */

typedef struct kiln_tag_account {
    _Atomic uint64_t live;        /* bytes charged now, its children's included */
    _Atomic uint64_t peak;        /* the most live has been */
    _Atomic uint64_t own;         /* of live, charged to this tag itself */
    _Atomic uint64_t charges;     /* blocks, mappings and tables charged to this tag itself */
    _Atomic uint64_t releases;    /* and given back */
    _Atomic uint64_t refusals;    /* charges refused at this tag's budget (REFUSE) */
    _Atomic uint64_t budget_warnings;   /* TAG_BUDGET_EXCEEDED episodes (WARN) */
    _Atomic int      near_episode;      /* in a TAG_BUDGET_NEAR episode */
    _Atomic int      over_episode;      /* in a TAG_BUDGET_EXCEEDED episode */
    _Atomic uint64_t refused_frame;     /* 1 + the frame of the last TAG_BUDGET_REFUSED */
    /* Read-only once published. */
    struct kiln_tag_account *parent;    /* NULL: a root */
    uint64_t         budget;      /* bytes live at once; 0: none */
    bool             refuse;      /* KILN_BUDGET_REFUSE */
    uint32_t         id;          /* the kiln_tag id */
    uint32_t         warn_percent;
    const kiln_log_sink *log;
    const _Atomic uint64_t *frame_clock;   /* names the frame in messages */
    char             name[KILN_TAG_NAME_BYTES];
} kiln_tag_account;

/* The allocator a charge comes from, as messages name it: kind "pool", name "particles". */
typedef struct kiln_tag_payer {
    const char *kind;
    const char *name;
} kiln_tag_payer;

/* Charges bytes to account and every parent: true, or false (nothing charged, the
 * refusal counted at the tag whose budget it would pass and logged once per frame,
 * TAG_BUDGET_REFUSED) when a REFUSE budget on the way would be passed. Budgets log
 * TAG_BUDGET_NEAR (either policy) and TAG_BUDGET_EXCEEDED (WARN) once per episode.
 * NULL account: true, nothing. Concurrency: any thread. */
KILN_INTERNAL bool kiln_tag_charge(kiln_tag_account *account, uint64_t bytes, kiln_tag_payer payer);

/* kiln_tag_charge that no budget refuses, for memory whose refusal would lose data (a
 * pool's magazine block, which a free may need): a REFUSE budget may be passed by it,
 * and says so (TAG_BUDGET_EXCEEDED). NULL account: nothing. Concurrency: any thread. */
KILN_INTERNAL void kiln_tag_charge_always(kiln_tag_account *account, uint64_t bytes,
                                          kiln_tag_payer payer);

/* Moves bytes held under from, in charges charges, to to (either NULL: untagged): the
 * levels the two share are unchanged, to's others are charged (false, nothing changed,
 * when a REFUSE budget among them refuses), from's others released; from's releases and
 * to's charges count the charges moved. Concurrency: any thread. */
KILN_INTERNAL bool kiln_tag_move(kiln_tag_account *from, kiln_tag_account *to, uint64_t bytes,
                                 uint64_t charges, kiln_tag_payer payer);

/* Heap credit (alloc/heap.h): bytes charged to account and every parent as
 * kiln_tag_charge does (refused, counted and logged the same way), but counted as no
 * charge: the heap hands the credit out allocation by allocation and counts those, and
 * the credit its contexts hold is subtracted from live in the tags' figures
 * (runtime/tags.c). kiln_tag_give_back returns credit. account not NULL.
 * Concurrency: any thread. */
KILN_INTERNAL bool kiln_tag_draw(kiln_tag_account *account, uint64_t bytes, kiln_tag_payer payer);
KILN_INTERNAL void kiln_tag_give_back(kiln_tag_account *account, uint64_t bytes);

/* Gives bytes charged before back to account and every parent. NULL: nothing.
 * Concurrency: any thread. */
KILN_INTERNAL void kiln_tag_release(kiln_tag_account *account, uint64_t bytes);

#endif /* KILN_ALLOC_TAG_ACCOUNT_H */
