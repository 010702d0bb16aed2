/* alloc/handle_sites.c — the live items of a handle table by allocation site
 * (KILN_DEBUG_SITES): walked for kiln_sites_top at any time, and the leak report of
 * the items still live when the table is destroyed, grouped by the file:line that
 * allocated them. */
#include "handle_sites.h"

#include <stdio.h>

void kiln_handle_sites_report(const kiln_handle_table *table) {
    if (!table->sites) return;
    kiln_site_table sites = { 0 };
    for (uint32_t i = 0; i < table->fresh; i++) {
        if (kiln_handle_word_live(kiln_load_relaxed(&kiln_handle_slot_at(table, i)->word)))
            kiln_site_table_add(&sites, kiln_handle_sites_of(table, i));
    }
    char what[80];
    snprintf(what, sizeof what, "handle table '%s'", table->name);
    kiln_site_table_report(&sites, &table->log, KILN_LOGITEM_HANDLES_LEAK_SITE, KILN_LOGITEM_HANDLES_LEAK_SUMMARY, what,
                           "items");
}

void kiln_handle_sites_live(kiln_handle_table *table,
                            void (*visit)(void *user, kiln_debug_site site), void *user) {
    if (!table->sites) return;
    pthread_mutex_lock(&table->lock);
    uint32_t fresh = table->fresh;   /* slots past it were never handed out */
    pthread_mutex_unlock(&table->lock);
    for (uint32_t i = 0; i < fresh; i++) {
        /* relaxed: only the parity is used, nothing is read through the item */
        if (kiln_handle_word_live(kiln_load_relaxed(&kiln_handle_slot_at(table, i)->word)))
            visit(user, kiln_handle_sites_of(table, i));
    }
}
