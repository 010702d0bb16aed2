/* runtime/tags.c — a runtime's tags: create, find, a thread's current tag, an arena's
 * tag, and the tags' figures (runtime/tags.h; the accounts: alloc/tag_account.h). */
#include "tags.h"
#include "check.h"

#include <stdio.h>
#include <string.h>

#include "../base/sys_alloc.h"


static void pseudo_account(kiln_runtime *rt, kiln_tag_account *a, const char *name) {
    memset(a, 0, sizeof *a);
    snprintf(a->name, sizeof a->name, "%s", name);
    a->warn_percent = rt->desc.warn_percent;
    a->log = &rt->log;
    a->frame_clock = &rt->frame;   /* id 0, no parent, no budget: never refuses, never warns */
}

void kiln_tags_init(kiln_runtime *rt) {
    pseudo_account(rt, &rt->untagged_account, "(untagged)");
    pseudo_account(rt, &rt->frame_account, "(frame memory)");
}

void kiln_tags_fini(kiln_runtime *rt) {
    for (uint32_t i = 0; i < rt->tag_count; i++) {
        kiln_sys_free(kiln_load_relaxed(&rt->tags[i]));
        kiln_store_relaxed(&rt->tags[i], NULL);
    }
    rt->tag_count = 0;
}

kiln_tag_account *kiln_tag_lookup(kiln_runtime *rt, kiln_tag tag, const char *function, bool *ok) {
    *ok = true;
    if (tag.id == 0) return NULL;
    uint32_t slot = kiln_tag_slot(tag.id);
    if ((tag.id >> 16) != rt->tag_salt) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_TAG_FOREIGN,
                        "%s: tag %#x is no tag of this runtime (another runtime's, or forged)",
                        function, tag.id);
        *ok = false;
        return NULL;
    }
    /* acquire: pairs with the create's release, so the account is whole. */
    kiln_tag_account *account = slot < KILN_MAX_TAGS ? kiln_load_acquire(&rt->tags[slot]) : NULL;
    if (!account) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_TAG_INVALID,
                        "%s: tag %#x was never made (slot %u of %u)", function, tag.id,
                        slot + 1, (unsigned)KILN_MAX_TAGS);
        *ok = false;
    }
    return account;
}

/* Under registry_lock: the account named name (as kept), or NULL. */
static kiln_tag_account *find_locked(kiln_runtime *rt, const char *name) {
    for (uint32_t i = 0; i < rt->tag_count; i++) {
        kiln_tag_account *a = kiln_load_relaxed(&rt->tags[i]);
        if (strncmp(a->name, name, sizeof a->name - 1) == 0) return a;
    }
    return NULL;
}

/* Why desc cannot make a tag (its log item and the message's reason), or 0. */
static kiln_log_item desc_fault(const kiln_tag_desc *desc, const char **why) {
    if (!desc->name || !desc->name[0]) return *why = "a tag needs a name", KILN_LOGITEM_TAG_NAME_NULL;
    if (desc->policy != KILN_BUDGET_WARN && desc->policy != KILN_BUDGET_REFUSE)
        return *why = "policy is neither KILN_BUDGET_WARN nor KILN_BUDGET_REFUSE",
               KILN_LOGITEM_TAG_POLICY_INVALID;
    return KILN_LOGITEM_NONE;
}

kiln_tag kiln_tag_create(kiln_runtime *rt, const kiln_tag_desc *desc) {
    if (!kiln_runtime_check(rt, "kiln_tag_create")) return (kiln_tag){ 0 };
    if (!kiln_outside_log_callback(&rt->log, "kiln_tag_create")) return (kiln_tag){ 0 };
    if (!desc) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_TAG_DESC_NULL, "kiln_tag_create: desc is NULL");
        return (kiln_tag){ 0 };
    }
    const char *why = NULL;
    kiln_log_item fault = desc_fault(desc, &why);
    if (fault != KILN_LOGITEM_NONE) {
        kiln_log_misuse(&rt->log, fault, "kiln_tag_create: tag '%s': %s; refused",
                        desc->name ? desc->name : "(null)", why);
        return (kiln_tag){ 0 };
    }
    bool parent_ok;
    kiln_tag_account *parent = kiln_tag_lookup(rt, desc->parent, "kiln_tag_create", &parent_ok);
    if (!parent_ok) return (kiln_tag){ 0 };
    kiln_tag_account *account = kiln_sys_aligned(KILN_CACHE_LINE, sizeof *account);
    if (!account) {
        kiln_log(&rt->log, KILN_LOGITEM_TAG_OUT_OF_MEMORY, "kiln_tag_create: no memory for "
                 "tag '%s'", desc->name);
        return (kiln_tag){ 0 };
    }
    memset(account, 0, sizeof *account);
    strncpy(account->name, desc->name, sizeof account->name - 1);
    account->parent = parent;
    account->budget = desc->budget;
    account->refuse = desc->policy == KILN_BUDGET_REFUSE;
    account->warn_percent = rt->desc.warn_percent;
    account->log = &rt->log;
    account->frame_clock = &rt->frame;
    pthread_mutex_lock(&rt->registry_lock);
    bool taken = find_locked(rt, account->name) != NULL, full = rt->tag_count == KILN_MAX_TAGS;
    if (!taken && !full) {
        account->id = rt->tag_salt << 16 | (rt->tag_count + 1);
        kiln_store_release(&rt->tags[rt->tag_count++], account);   /* whole before it is seen */
    }
    pthread_mutex_unlock(&rt->registry_lock);
    if (taken || full) {
        kiln_sys_free(account);
        if (taken)
            kiln_log_misuse(&rt->log, KILN_LOGITEM_TAG_NAME_TAKEN, "kiln_tag_create: a tag named "
                            "'%s' exists (kiln_tag_find gives it); refused", desc->name);
        else
            kiln_log_misuse(&rt->log, KILN_LOGITEM_TAG_TOO_MANY, "kiln_tag_create: tag '%s': all "
                            "%d tags are made; refused", desc->name, KILN_MAX_TAGS);
        return (kiln_tag){ 0 };
    }
    return (kiln_tag){ account->id };
}

kiln_tag kiln_tag_find(kiln_runtime *rt, const char *name) {
    if (!kiln_runtime_check(rt, "kiln_tag_find")) return (kiln_tag){ 0 };
    if (!name || !name[0]) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_TAG_NAME_NULL, "kiln_tag_find: name is %s",
                        name ? "empty" : "NULL");
        return (kiln_tag){ 0 };
    }
    pthread_mutex_lock(&rt->registry_lock);
    kiln_tag_account *account = find_locked(rt, name);
    pthread_mutex_unlock(&rt->registry_lock);
    return (kiln_tag){ account ? account->id : 0 };
}

kiln_tag kiln_tag_push(kiln_ctx *ctx, kiln_tag tag) {
    if (!kiln_ctx_check(ctx, "kiln_tag_push")) return (kiln_tag){ 0 };
    kiln_tag previous = { ctx->tag_current };
    bool ok;
    kiln_tag_lookup(ctx->rt, tag, "kiln_tag_push", &ok);
    if (ok) ctx->tag_current = tag.id;
    return previous;
}

void kiln_tag_pop(kiln_ctx *ctx, kiln_tag previous) {
    if (!kiln_ctx_check(ctx, "kiln_tag_pop")) return;
    bool ok;
    kiln_tag_lookup(ctx->rt, previous, "kiln_tag_pop", &ok);
    if (ok) ctx->tag_current = previous.id;
}

kiln_tag kiln_tag_current(kiln_ctx *ctx) {
    if (!kiln_ctx_check(ctx, "kiln_tag_current")) return (kiln_tag){ 0 };
    return (kiln_tag){ ctx->tag_current };
}

/* ---- figures ---- */

/* Under registry_lock: the heap credit every attached context holds for slot byte
 * (alloc/heap.h), and their allocs and frees of it with those of contexts gone. */
static void sum_heap_use(kiln_runtime *rt, unsigned byte, uint64_t *credit, uint64_t *allocs,
                         uint64_t *frees) {
    *credit = 0;
    *allocs = kiln_load_relaxed(&rt->heap.retired_allocs[byte]);
    *frees = kiln_load_relaxed(&rt->heap.retired_frees[byte]);
    for (kiln_ctx *ctx = rt->contexts; ctx; ctx = ctx->next) {
        const kiln_heap_tag_use *use = &ctx->heap_cache.tags[byte];
        int64_t held = kiln_load_relaxed(&use->credit);
        *credit += held > 0 ? (uint64_t)held : 0;
        *allocs += kiln_load_relaxed(&use->allocs);
        *frees += kiln_load_relaxed(&use->frees);
    }
}

void kiln_heap_tag_sums_read(kiln_runtime *rt, uint32_t count) {
    kiln_heap_tag_sums *out = &rt->tag_sums;
    for (uint32_t slot = 0; slot < count; slot++) {
        sum_heap_use(rt, slot + KILN_HEAP_FIRST_TAG, &out->credit[slot], &out->allocs[slot],
                     &out->frees[slot]);
        out->own_credit[slot] = out->credit[slot];
    }
    uint64_t untagged_allocs, untagged_frees;
    sum_heap_use(rt, KILN_HEAP_UNTAGGED, &out->untagged_credit, &untagged_allocs, &untagged_frees);
    /* A parent is made before its children, so its slot is lower: children first. */
    for (uint32_t slot = count; slot-- > 0;) {
        const kiln_tag_account *a = kiln_load_acquire(&rt->tags[slot]);
        if (a && a->parent) out->credit[kiln_tag_slot(a->parent->id)] += out->credit[slot];
    }
}


/* The account's figures, its heap allocations (runtime/heap.h) counted in. */
static void read_account(const kiln_tag_account *a, const kiln_heap_tag_sums *sums,
                         kiln_tag_stats *out) {
    uint32_t slot = kiln_tag_slot(a->id);
    uint64_t own = kiln_load_relaxed(&a->own);
    *out = (kiln_tag_stats){
        .id = a->id,
        .parent = a->parent ? a->parent->id : 0,
        .live_bytes = kiln_heap_tag_used(a, sums),
        .own_bytes = own > sums->own_credit[slot] ? own - sums->own_credit[slot] : 0,
        .peak_bytes = kiln_load_relaxed(&a->peak),
        .budget = a->budget,
        .refuse = a->refuse,
        .allocs = kiln_load_relaxed(&a->charges) + sums->allocs[slot],
        .frees = kiln_load_relaxed(&a->releases) + sums->frees[slot],
        .refusals = kiln_load_relaxed(&a->refusals),
        .budget_warnings = kiln_load_relaxed(&a->budget_warnings),
    };
    memcpy(out->name, a->name, sizeof out->name);
}

/* Tags published so far (in slot order, never removed). Any thread. */
static uint32_t tags_made(kiln_runtime *rt) {
    uint32_t count = 0;
    while (count < KILN_MAX_TAGS && kiln_load_acquire(&rt->tags[count])) count++;
    return count;
}

size_t kiln_stats_tags(kiln_runtime *rt, kiln_tag_stats *out, size_t cap) {
    if (!kiln_stats_list_args_ok(rt, out, cap, "kiln_stats_tags")) return 0;
    pthread_mutex_lock(&rt->registry_lock);
    uint32_t count = tags_made(rt);
    kiln_heap_tag_sums_read(rt, count);
    for (uint32_t i = 0; i < count && i < cap; i++)
        read_account(kiln_load_acquire(&rt->tags[i]), &rt->tag_sums, &out[i]);
    pthread_mutex_unlock(&rt->registry_lock);
    return count;
}

bool kiln_tag_stats_get(kiln_runtime *rt, kiln_tag tag, kiln_tag_stats *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!kiln_runtime_check(rt, "kiln_tag_stats_get")) return false;
    if (!out) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_STATS_NULL_OUT, "kiln_tag_stats_get: out is NULL");
        return false;
    }
    bool ok;
    kiln_tag_account *a = kiln_tag_lookup(rt, tag, "kiln_tag_stats_get", &ok);
    if (!a) {
        if (ok)   /* {0}: untagged is no tag */
            kiln_log_misuse(&rt->log, KILN_LOGITEM_TAG_INVALID,
                            "kiln_tag_stats_get: the zero tag (untagged) has no figures");
        return false;
    }
    pthread_mutex_lock(&rt->registry_lock);
    kiln_heap_tag_sums_read(rt, tags_made(rt));
    read_account(a, &rt->tag_sums, out);
    pthread_mutex_unlock(&rt->registry_lock);
    return true;
}
