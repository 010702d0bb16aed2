/* alloc/handle_sites.c — the leak report of a handle table by allocation site
 * (KILN_DEBUG_SITES): the items still live when it is destroyed, grouped by the
 * file:line that allocated them. */
#include "handle_sites.h"

#include <stdio.h>

void kiln_handle_sites_report(const kiln_handle_table *table) {
    if (!table->sites) return;
    kiln_site_table sites = { 0 };
    for (uint32_t i = 0; i < table->fresh; i++) {
        uint32_t gen = kiln_load_relaxed(&kiln_handle_slot_at(table, i)->gen);
        if (gen & 1u) kiln_site_table_add(&sites, table->sites[i]);
    }
    char what[80];
    snprintf(what, sizeof what, "handle table '%s'", table->name);
    kiln_site_table_report(&sites, &table->log, KILN_LOGITEM_HANDLES_LEAK_SITE, KILN_LOGITEM_HANDLES_LEAK_SUMMARY, what,
                           "items");
}
