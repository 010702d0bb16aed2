/* alloc/handle_sites.h — allocation sites of handle-table items (KILN_DEBUG_SITES): a
 * file:line per slot, kept in the table's site array, and the report of the items still
 * live grouped by site. Above the table: the get, alloc and free paths never look at
 * the sites. Never installed. */
#ifndef KILN_ALLOC_HANDLE_SITES_H
#define KILN_ALLOC_HANDLE_SITES_H

#include "block_pool.h"
#include "handle_table.h"

/* Records where the item of h (just handed out, not published yet) was asked for, and
 * counts the allocation at that site (kiln_sites_alloc; the live items are counted by
 * kiln_handle_sites_live); nothing when the table keeps no sites. The thread that
 * allocated h: a later owner of the slot comes after a free and a reclaim, which order
 * this write before its own; readers of the sites (relaxed) may see the old one. */
static inline void kiln_handle_sites_record(kiln_handle_table *table, kiln_handle h,
                                            const char *file, int line) {
    if (!table->sites) return;
    kiln_site_slot *slot = &table->sites[kiln_handle_index(h)];
    kiln_store_relaxed(&slot->file, file);
    kiln_store_relaxed(&slot->line, line);
    kiln_sites_alloc(table->blocks->sites, (kiln_debug_site){ file, line }, table->item_size, false);
}

/* The site a slot's item was last allocated at (file NULL: none recorded). Any thread
 * (relaxed: an item being allocated meanwhile may show its slot's previous site). */
static inline kiln_debug_site kiln_handle_sites_of(const kiln_handle_table *table,
                                                   uint32_t index) {
    kiln_site_slot *slot = &table->sites[index];
    return (kiln_debug_site){ kiln_load_relaxed(&slot->file), kiln_load_relaxed(&slot->line) };
}

/* Calls visit(user, site) for every live item of a table that keeps sites (slots [0,
 * fresh) whose generation is odd), in slot order. Any thread, while items are allocated
 * and freed: an item allocated or freed during the walk may or may not be visited. The
 * caller keeps the table alive (the runtime's registry lock); takes the table's lock to
 * read fresh. */
KILN_INTERNAL void kiln_handle_sites_live(kiln_handle_table *table,
                                          void (*visit)(void *user, kiln_debug_site site),
                                          void *user);

/* Logs the live items grouped by allocation site (HANDLES_LEAK_SITE, then
 * HANDLES_LEAK_SUMMARY); nothing when the table keeps no sites. No other thread may use
 * the table (its destroy). */
KILN_INTERNAL void kiln_handle_sites_report(const kiln_handle_table *table);

#endif /* KILN_ALLOC_HANDLE_SITES_H */
