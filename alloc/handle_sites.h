/* alloc/handle_sites.h — allocation sites of handle-table items (KILN_DEBUG_SITES): a
 * file:line per slot, kept in the table's site array, and the report of the items still
 * live grouped by site. Above the table: the get, alloc and free paths never look at
 * the sites. Never installed. */
#ifndef KILN_ALLOC_HANDLE_SITES_H
#define KILN_ALLOC_HANDLE_SITES_H

#include "handle_table.h"

/* Records where the item of h (just handed out, not published yet) was asked for;
 * nothing when the table keeps no sites. The thread that allocated h: a later owner of
 * the slot comes after a free and a reclaim, which order this write before its own. */
static inline void kiln_handle_sites_record(kiln_handle_table *table, kiln_handle h,
                                            const char *file, int line) {
    if (table->sites) table->sites[kiln_handle_index(h)] = (kiln_debug_site){ file, line };
}

/* Logs the live items grouped by allocation site (HANDLES_LEAK_SITE, then
 * HANDLES_LEAK_SUMMARY); nothing when the table keeps no sites. No other thread may use
 * the table (its destroy). */
KILN_INTERNAL void kiln_handle_sites_report(const kiln_handle_table *table);

#endif /* KILN_ALLOC_HANDLE_SITES_H */
