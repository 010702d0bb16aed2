/* tests/headers_log_items_c.c — <kiln/log_items.h> compiles on its own as strict C11
 * and its list expands into a table (a name and a meaning per item, none empty); then,
 * through <kiln/core.h>, the enum and kiln_log_item_name agree with it. */
#include <kiln/log_items.h>

#include <string.h>

#include <kiln/core.h>

#define LIST_ROW(name, level, meaning) { #name, #level, meaning },

int headers_log_items_c(void);
int headers_log_items_c(void) {
    static const struct { const char *name, *level, *meaning; } rows[] = {
        KILN_LOG_ITEMS(LIST_ROW)
    };
    size_t n = sizeof rows / sizeof rows[0];
    if (n != (size_t)KILN_LOGITEM_COUNT - 1) return 1;
    for (size_t i = 0; i < n; i++) {
        const char *name = kiln_log_item_name((kiln_log_item)(i + 1));
        if (!name || strcmp(name, rows[i].name) != 0) return 2;
        if (rows[i].meaning[0] == '\0' || rows[i].level[0] == '\0') return 3;
    }
    return kiln_log_item_name(KILN_LOGITEM_NONE) == NULL ? 0 : 4;
}
