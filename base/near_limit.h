/* base/near_limit.h — "near its limit" episodes: desc.warn_percent's rule, one place for
 * the frame arenas, the block pool, pools and handle tables. An episode starts at the
 * first sample at or over the threshold (one warning) and ends at the first sample more
 * than 10 percentage points under it, so usage that hovers at the line warns once, not
 * every frame. The caller keeps the episode flag (owned, or atomic where several threads
 * sample: kiln_near_limit_sample_shared) and logs. Never installed. */
#ifndef KILN_BASE_NEAR_LIMIT_H
#define KILN_BASE_NEAR_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "atomics.h"

/* kiln_desc.warn_percent's default (0 means it) and the hysteresis below it. */
#define KILN_WARN_PERCENT_DEFAULT 80u
#define KILN_WARN_HYSTERESIS      10u

typedef enum kiln_near_limit_step {
    KILN_NEAR_LIMIT_STAY,    /* no change: in or out of an episode as before */
    KILN_NEAR_LIMIT_START,   /* the episode starts with this sample: warn */
    KILN_NEAR_LIMIT_END      /* the episode ended with this sample */
} kiln_near_limit_step;

/* True when used is at or over percent% of limit (limit 0: no limit, never), that is
 * used * 100 >= limit * percent, computed as used >= ceil(limit * percent / 100) from
 * limit's hundredths so that no product overflows (percent is at most 100). */
static inline bool kiln_near_limit_over(uint64_t used, uint64_t limit, uint32_t percent) {
    if (limit == 0) return false;
    uint64_t threshold = limit / 100 * percent + (limit % 100 * percent + 99) / 100;
    return used >= threshold;
}

/* What a sample does to an episode: in_episode is the caller's flag before the sample.
 * Out of an episode, a sample at or over the threshold starts one; in one, a sample
 * more than KILN_WARN_HYSTERESIS points under the threshold (or at zero, for a threshold
 * that low) ends it. */
static inline kiln_near_limit_step kiln_near_limit_next(bool in_episode, uint64_t used, uint64_t limit,
                                                        uint32_t percent) {
    if (!in_episode) return kiln_near_limit_over(used, limit, percent) ? KILN_NEAR_LIMIT_START : KILN_NEAR_LIMIT_STAY;
    uint32_t low = percent > KILN_WARN_HYSTERESIS ? percent - KILN_WARN_HYSTERESIS : 0;
    bool under = low == 0 ? used == 0 : !kiln_near_limit_over(used, limit, low);
    return under ? KILN_NEAR_LIMIT_END : KILN_NEAR_LIMIT_STAY;
}

/* One sample against an episode flag that several threads step (a pool's caches, the
 * stats readers of a handle table): true for exactly one sampler per episode start, which
 * then logs. may_end false: an estimate (a figure that lags), which may start an episode
 * but never ends one, so that an exact sample and a lagging one cannot take turns
 * ending and restarting it. Relaxed: the flag only decides who warns; the figures logged
 * are the sampler's own. Any thread. */
static inline bool kiln_near_limit_sample_shared(_Atomic int *in_episode, uint64_t used,
                                                 uint64_t limit, uint32_t percent, bool may_end) {
    kiln_near_limit_step step = kiln_near_limit_next(kiln_load_relaxed(in_episode) != 0, used, limit, percent);
    if (step == KILN_NEAR_LIMIT_END && may_end) kiln_store_relaxed(in_episode, 0);
    return step == KILN_NEAR_LIMIT_START && kiln_exchange_relaxed(in_episode, 1) == 0;
}

#endif /* KILN_BASE_NEAR_LIMIT_H */
