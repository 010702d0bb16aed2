/* runtime/handle_sites.c — allocation sites of handle-table items (KILN_DEBUG_SITES):
 * kiln_handle_alloc_at records file:line per slot, and destroying a table lists the
 * items still live grouped by site. Off the get/alloc/free paths entirely: the plain
 * calls never look at the sites. */
#include "runtime_internal.h"

#include <stdio.h>
#include <stdlib.h>

bool kiln_handles_sites_init(kiln_handles *table, uint32_t debug) {
    if (!(debug & KILN_DEBUG_SITES)) return true;
    table->sites = kiln_heap_calloc(table->capacity, sizeof *table->sites);
    return table->sites != NULL;
}

void kiln_handles_sites_fini(kiln_handles *table) {
    kiln_heap_free(table->sites);
    table->sites = NULL;
}

kiln_handle kiln_handle_alloc_at(kiln_ctx *ctx, kiln_handles *table, void **item,
                                 const char *file, int line) {
    kiln_handle h = kiln_handle_alloc(ctx, table, item);
    /* The slot is this thread's until it publishes h: a later owner of the slot comes
     * after a free and a frame end, which order this write before its own. */
    if (h.bits && table->sites) table->sites[kiln_handle_index(h)] = (kiln_debug_site){ file, line };
    return h;
}

void kiln_handles_report_leaks(kiln_handles *table) {
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
