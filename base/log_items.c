/* base/log_items.c — the tables KILN_LOG_ITEMS (kiln/log_items.h) generates: each
 * item's name and level, and their public readers. */
#include <kiln/core.h>

#define ITEM_NAME(name, level, meaning)  [KILN_LOGITEM_##name] = #name,
#define ITEM_LEVEL(name, level, meaning) [KILN_LOGITEM_##name] = KILN_LOG_##level,

static const char *const item_names[KILN_LOGITEM_COUNT] = { KILN_LOG_ITEMS(ITEM_NAME) };
static const kiln_log_level item_levels[KILN_LOGITEM_COUNT] = { KILN_LOG_ITEMS(ITEM_LEVEL) };

/* NONE (0) has no entry: its name reads NULL and its level KILN_LOG_DEBUG (0). */
static inline int is_item(kiln_log_item item) {
    return (unsigned)item > (unsigned)KILN_LOGITEM_NONE && (unsigned)item < (unsigned)KILN_LOGITEM_COUNT;
}

const char *kiln_log_item_name(kiln_log_item item) {
    return is_item(item) ? item_names[item] : NULL;
}

kiln_log_level kiln_log_item_level(kiln_log_item item) {
    return is_item(item) ? item_levels[item] : KILN_LOG_DEBUG;
}
