/* alloc/tag_account.c — charging a tag and its parents against their budgets
 * (alloc/tag_account.h). */
#include "tag_account.h"

#include "../base/near_limit.h"

/* Raises one level's live by bytes, unless a REFUSE budget would be passed; *now is its
 * live after. A CAS from the value checked, so concurrent charges never pass together. */
static bool raise_level(kiln_tag_account *level, uint64_t bytes, uint64_t *now) {
    uint64_t live = kiln_load_relaxed(&level->live);
    do {
        if (level->refuse && level->budget != 0 &&
            (bytes > level->budget || live > level->budget - bytes))
            return false;
    } while (!kiln_cas_weak_relaxed(&level->live, &live, live + bytes));
    *now = live + bytes;
    kiln_max_relaxed_u64(&level->peak, *now);
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

/* A level's budget episodes after its live moved to now: NEAR at warn_percent (either
 * policy), EXCEEDED past the budget (WARN, or a REFUSE one kiln_tag_charge_always
 * passed). An
 * EXCEEDED episode ends once live is back under the NEAR episode's end. */
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
                     "(%s '%s' took the last; KILN_BUDGET_WARN lets it; once per episode)",
                     TAG_ARGS(level, child), (unsigned long long)now,
                     (unsigned long long)level->budget, (unsigned long long)frame_now(level),
                     payer.kind, payer.name);
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

bool kiln_tag_charge(kiln_tag_account *account, uint64_t bytes, kiln_tag_payer payer) {
    if (!account) return true;
    for (kiln_tag_account *level = account; level; level = level->parent) {
        uint64_t now;
        if (!raise_level(level, bytes, &now)) {
            for (kiln_tag_account *undo = account; undo != level; undo = undo->parent)
                kiln_sub_relaxed(&undo->live, bytes);
            kiln_add_relaxed(&level->refusals, 1);
            log_refused(level, account, bytes, payer);
            return false;
        }
        sample_budget(level, account, now, payer);
    }
    kiln_add_relaxed(&account->own, bytes);
    kiln_add_relaxed(&account->charges, 1);
    return true;
}

void kiln_tag_charge_always(kiln_tag_account *account, uint64_t bytes, kiln_tag_payer payer) {
    if (!account) return;
    for (kiln_tag_account *level = account; level; level = level->parent) {
        uint64_t now = kiln_add_relaxed(&level->live, bytes) + bytes;
        kiln_max_relaxed_u64(&level->peak, now);
        sample_budget(level, account, now, payer);
    }
    kiln_add_relaxed(&account->own, bytes);
    kiln_add_relaxed(&account->charges, 1);
}

void kiln_tag_release(kiln_tag_account *account, uint64_t bytes) {
    if (!account) return;
    kiln_sub_relaxed(&account->own, bytes);
    kiln_add_relaxed(&account->releases, 1);
    for (kiln_tag_account *level = account; level; level = level->parent) {
        uint64_t now = kiln_sub_relaxed(&level->live, bytes) - bytes;
        end_episodes(level, now);
    }
}
