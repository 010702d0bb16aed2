/* alloc/tag_account.c — charging a tag and its parents against their budgets
 * (alloc/tag_account.h). */
#include "tag_account.h"

#include "../base/near_limit.h"

/* Raises one level's live by bytes, unless a REFUSE budget would be passed (always: no
 * budget is judged); false, nothing changed. A CAS from the value checked, so concurrent
 * charges never pass together. */
static bool raise_level(kiln_tag_account *level, uint64_t bytes, bool always) {
    uint64_t live = kiln_load_relaxed(&level->live);
    do {
        if (!always && level->refuse && level->budget != 0 &&
            (bytes > level->budget || live > level->budget - bytes))
            return false;
    } while (!kiln_cas_weak_relaxed(&level->live, &live, live + bytes));
    return true;
}

static uint64_t frame_now(const kiln_tag_account *level) {
    return level->frame_clock ? kiln_load_relaxed(level->frame_clock) : 0;
}

/* The tag's name, and for a parent the child the charge came through. */
#define TAG_FMT "tag '%s'%s%s%s"
#define TAG_ARGS(level, child)                                                      \
    (level)->name, (level) != (child) ? " (through '" : "",                       \
    (level) != (child) ? (child)->name : "", (level) != (child) ? "')" : ""

static KILN_COLD void log_refused(kiln_tag_account *level, const kiln_tag_account *child,
                                  uint64_t bytes, kiln_tag_payer payer) {
    uint64_t mark = frame_now(level) + 1;
    if (kiln_load_relaxed(&level->refused_frame) == mark ||
        kiln_exchange_relaxed(&level->refused_frame, mark) == mark)
        return;   /* this frame's is logged */
    kiln_log(level->log, KILN_LOGITEM_TAG_BUDGET_REFUSED,
             TAG_FMT ": %s '%s' asked for %llu bytes more, which would pass its budget of "
             "%llu bytes (%llu live); refused (KILN_BUDGET_REFUSE; logged once per frame)",
             TAG_ARGS(level, child), payer.kind, payer.name, (unsigned long long)bytes,
             (unsigned long long)level->budget,
             (unsigned long long)kiln_load_relaxed(&level->live));
}

/* A level's budget episodes after a charge brought its live to now: NEAR at
 * warn_percent (either policy), EXCEEDED past the budget (WARN, or a REFUSE one a
 * magazine block passed). An EXCEEDED episode ends once live is back under the NEAR
 * episode's end. */
static void sample_budget(kiln_tag_account *level, const kiln_tag_account *child,
                          uint64_t now, kiln_tag_payer payer) {
    if (level->budget == 0) return;
    if (kiln_near_limit_sample_shared(&level->near_episode, now, level->budget,
                                      level->warn_percent, true))
        kiln_log(level->log, KILN_LOGITEM_TAG_BUDGET_NEAR,
                 TAG_FMT ": %llu bytes live reached %u%% of its budget of %llu bytes (%s '%s' "
                 "took the last)", TAG_ARGS(level, child), (unsigned long long)now,
                 level->warn_percent, (unsigned long long)level->budget, payer.kind, payer.name);
    if (now > level->budget) {
        if (kiln_exchange_relaxed(&level->over_episode, 1) == 0) {
            kiln_add_relaxed(&level->budget_warnings, 1);
            kiln_log(level->log, KILN_LOGITEM_TAG_BUDGET_EXCEEDED,
                     TAG_FMT ": %llu bytes live, over its budget of %llu bytes in frame %llu "
                     "(%s '%s' took the last; %s; once per episode)",
                     TAG_ARGS(level, child), (unsigned long long)now,
                     (unsigned long long)level->budget, (unsigned long long)frame_now(level),
                     payer.kind, payer.name,
                     level->refuse ? "a pool's magazine block, which a free needs, is charged "
                                     "past any budget" : "KILN_BUDGET_WARN lets it");
        }
    } else if (kiln_load_relaxed(&level->near_episode) == 0) {
        kiln_store_relaxed(&level->over_episode, 0);
    }
}

/* After a release: the episodes live has left (a release never starts one). */
static void end_episodes(kiln_tag_account *level, uint64_t now) {
    if (level->budget == 0) return;
    if (kiln_load_relaxed(&level->near_episode) &&
        kiln_near_limit_next(true, now, level->budget, level->warn_percent) == KILN_NEAR_LIMIT_END)
        kiln_store_relaxed(&level->near_episode, 0);
    if (now <= level->budget && kiln_load_relaxed(&level->near_episode) == 0)
        kiln_store_relaxed(&level->over_episode, 0);
}

static void lower_levels(kiln_tag_account *from, kiln_tag_account *stop, uint64_t bytes) {
    for (kiln_tag_account *level = from; level != stop; level = level->parent) {
        uint64_t now = kiln_sub_relaxed(&level->live, bytes) - bytes;
        end_episodes(level, now);
    }
}

/* Raises account's levels below stop (NULL: all) by bytes: every one or none. Only once
 * all are raised are their budgets judged, so a charge a parent refuses leaves no warning
 * or episode behind at the levels below it, nor a peak. */
static bool raise_levels(kiln_tag_account *account, kiln_tag_account *stop, uint64_t bytes,
                         bool always, kiln_tag_payer payer) {
    for (kiln_tag_account *level = account; level != stop; level = level->parent) {
        if (raise_level(level, bytes, always)) continue;
        for (kiln_tag_account *undo = account; undo != level; undo = undo->parent)
            kiln_sub_relaxed(&undo->live, bytes);
        kiln_add_relaxed(&level->refusals, 1);
        log_refused(level, account, bytes, payer);
        return false;
    }
    /* Peaks only now: a charge a parent refused never shows in a child's peak (which
     * could then pass the parent's budget). */
    for (kiln_tag_account *level = account; level != stop; level = level->parent) {
        uint64_t now = kiln_load_relaxed(&level->live);
        kiln_max_relaxed_u64(&level->peak, now);
        sample_budget(level, account, now, payer);
    }
    return true;
}

bool kiln_tag_charge(kiln_tag_account *account, uint64_t bytes, kiln_tag_payer payer) {
    if (!account) return true;
    if (!raise_levels(account, NULL, bytes, false, payer)) return false;
    kiln_add_relaxed(&account->own, bytes);
    kiln_add_relaxed(&account->charges, 1);
    return true;
}

void kiln_tag_charge_always(kiln_tag_account *account, uint64_t bytes, kiln_tag_payer payer) {
    if (!account) return;
    raise_levels(account, NULL, bytes, true, payer);
    kiln_add_relaxed(&account->own, bytes);
    kiln_add_relaxed(&account->charges, 1);
}

bool kiln_tag_draw(kiln_tag_account *account, uint64_t bytes, kiln_tag_payer payer) {
    if (!raise_levels(account, NULL, bytes, false, payer)) return false;
    kiln_add_relaxed(&account->own, bytes);
    return true;
}

void kiln_tag_give_back(kiln_tag_account *account, uint64_t bytes) {
    kiln_sub_relaxed(&account->own, bytes);
    lower_levels(account, NULL, bytes);
}

void kiln_tag_release(kiln_tag_account *account, uint64_t bytes) {
    if (!account) return;
    kiln_sub_relaxed(&account->own, bytes);
    kiln_add_relaxed(&account->releases, 1);
    lower_levels(account, NULL, bytes);
}

/* The nearest level a and b share (NULL: none). Chains are short and never change. */
static kiln_tag_account *common_level(kiln_tag_account *a, kiln_tag_account *b) {
    for (kiln_tag_account *x = a; x; x = x->parent)
        for (kiln_tag_account *y = b; y; y = y->parent)
            if (x == y) return x;
    return NULL;
}

bool kiln_tag_move(kiln_tag_account *from, kiln_tag_account *to, uint64_t bytes,
                   uint64_t charges, kiln_tag_payer payer) {
    if (from == to) return true;
    kiln_tag_account *shared = common_level(from, to);   /* unchanged from there up */
    if (to && !raise_levels(to, shared, bytes, false, payer)) return false;
    if (from) {
        kiln_sub_relaxed(&from->own, bytes);
        kiln_add_relaxed(&from->releases, charges);
        lower_levels(from, shared, bytes);
    }
    if (to) {
        kiln_add_relaxed(&to->own, bytes);
        kiln_add_relaxed(&to->charges, charges);
    }
    return true;
}
