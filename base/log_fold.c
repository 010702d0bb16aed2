/* base/log_fold.c — repeats folded (base/log_fold.h): a message's hash and window, the
 * table's takeover, and the summaries. */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime */
#include "log_fold.h"

#include <string.h>
#include <time.h>

#include "atomics.h"

#define FOLD_MASK ((uint64_t)KILN_LOG_FOLD_ENTRIES - 1)
_Static_assert((KILN_LOG_FOLD_ENTRIES & (KILN_LOG_FOLD_ENTRIES - 1)) == 0, "a power of two");

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_hex(char c) { return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); }

/* Whether the number at p names an object: a context's ("context 3", "ctx 3"). */
static bool names_a_context(const char *text, const char *p) {
    return (p - text >= 8 && memcmp(p - 8, "context ", 8) == 0) ||
           (p - text >= 4 && memcmp(p - 4, "ctx ", 4) == 0);
}

/* FNV-1a of the text with every figure (a decimal number, or 0x and hex digits) as one
 * '#', so the same object saying the same thing with other figures hashes alike. What
 * names the object stays as it is: a quoted name ('enemy2'), a context's number. Never 0. */
static uint32_t text_hash(kiln_log_item item, const char *text) {
    uint32_t h = 2166136261u ^ (uint32_t)item;
    bool quoted = false;
    for (const char *p = text; *p;) {
        char c = *p;
        if (c == '\'') quoted = !quoted;
        if (is_digit(c) && !quoted && !names_a_context(text, p)) {
            if (c == '0' && (p[1] | 0x20) == 'x') {
                p += 2;
                while (is_hex(*p)) p++;
            } else {
                while (is_digit(*p)) p++;
            }
            c = '#';
        } else {
            p++;
        }
        h = (h ^ (uint8_t)c) * 16777619u;
    }
    return h ? h : 1;
}

/* The window: the frame number, cut every second or so. */
static uint32_t window_now(const kiln_log_fold *fold) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    uint64_t frame = fold->frame ? kiln_load_relaxed(fold->frame) : 0;
    return (uint32_t)(frame << 12) ^ (uint32_t)(now.tv_sec & 4095);
}

static bool never_folded(kiln_log_item item) {
    return item == KILN_LOGITEM_STATS_REPORT || item == KILN_LOGITEM_APP_LOG ||
           item == KILN_LOGITEM_LOG_REPEATS || item == KILN_LOGITEM_LOG_DROPPED;
}

bool kiln_log_fold_admit(kiln_log_fold *fold, kiln_log_item item, const char *message,
                         kiln_log_fold_tell_fn tell, void *user) {
    if (never_folded(item)) return true;
    uint32_t hash = text_hash(item, message);
    uint64_t key = (uint64_t)hash << 32 | window_now(fold);
    kiln_log_fold_entry *entry = &fold->entries[hash & FOLD_MASK];
    uint64_t seen = kiln_load_relaxed(&entry->key);
    for (;;) {
        if (seen == key) {   /* a repeat in the window: counted, not delivered */
            kiln_add_relaxed(&entry->repeats, 1);
            return false;
        }
        /* Another message's entry, or this one's from an ended window: take it over.
         * acq_rel: the item and repeats read below belong to the key taken over. */
        if (kiln_cas_weak_acq_rel(&entry->key, &seen, key)) break;
    }
    uint32_t old_item = kiln_exchange_acq_rel(&entry->item, (uint32_t)item);
    uint64_t repeats = kiln_exchange_acq_rel(&entry->repeats, 0);
    if (repeats) tell(user, (kiln_log_item)old_item, repeats);
    return true;
}

void kiln_log_fold_sweep(kiln_log_fold *fold, bool all, kiln_log_fold_tell_fn tell, void *user) {
    uint32_t window = window_now(fold);
    for (size_t i = 0; i < KILN_LOG_FOLD_ENTRIES; i++) {
        kiln_log_fold_entry *entry = &fold->entries[i];
        if (kiln_load_relaxed(&entry->repeats) == 0) continue;
        uint64_t key = kiln_load_acquire(&entry->key);
        if (!all && (uint32_t)key == window) continue;   /* its window goes on */
        /* The entry stays its message's: a repeat still to come in an ended window
         * cannot come (the window is over), and in this one (all) starts a new count. */
        uint32_t item = kiln_load_relaxed(&entry->item);
        uint64_t repeats = kiln_exchange_acq_rel(&entry->repeats, 0);
        if (repeats) tell(user, (kiln_log_item)item, repeats);
    }
}

void kiln_log_fold_clear(kiln_log_fold *fold) {
    for (size_t i = 0; i < KILN_LOG_FOLD_ENTRIES; i++) {
        kiln_store_relaxed(&fold->entries[i].key, 0);
        kiln_store_relaxed(&fold->entries[i].repeats, 0);
        kiln_store_relaxed(&fold->entries[i].item, 0);
    }
}
