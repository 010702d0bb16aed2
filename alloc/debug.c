/* alloc/debug.c — the debug layer's shared tools: guard bytes and their reports, guard
 * pages on blocks, the thread id, the site counts and the site table of the leak
 * reports. */
#include "debug.h"

#include <stdio.h>
#include <stdlib.h>

#include "../base/atomics.h"
#include "../base/sys_alloc.h"
#include "os.h"

/* ---- guard bytes ---- */

/* Guard bytes go by aligned 8-byte words where they can (a few accesses per guard, not
 * one per byte), by bytes at unaligned edges. */
#define GUARD_WORD (0x0101010101010101ull * KILN_FILL_GUARD)

static bool word_aligned(const char *p) { return ((uintptr_t)p & 7) == 0; }

static void guard_write(char *p, size_t n) {
    size_t i = 0;
    for (; i < n && (!word_aligned(p + i) || n - i < 8); i++)
        kiln_store_relaxed((_Atomic unsigned char *)(p + i), (unsigned char)KILN_FILL_GUARD);
    for (; i + 8 <= n; i += 8) kiln_store_relaxed((_Atomic uint64_t *)(p + i), GUARD_WORD);
    for (; i < n; i++)
        kiln_store_relaxed((_Atomic unsigned char *)(p + i), (unsigned char)KILN_FILL_GUARD);
}

/* The first byte of [p, p + n) that is not the guard pattern, or n. */
static size_t guard_scan(const char *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (word_aligned(p + i) && n - i >= 8 &&
            kiln_load_relaxed((_Atomic uint64_t *)(p + i)) == GUARD_WORD) {
            i += 8;
            continue;
        }
        /* An unaligned edge, or a word with a bad byte in it: byte by byte up to the
         * next word boundary. */
        size_t stop = i + 8 - ((uintptr_t)(p + i) & 7);
        for (; i < n && i < stop; i++)
            if (kiln_load_relaxed((_Atomic unsigned char *)(p + i)) != KILN_FILL_GUARD) return i;
    }
    return n;
}

void kiln_debug_guards_write(const kiln_guarded *g) {
    guard_write(g->object - g->front, g->front);
    guard_write(g->object + g->size, g->back);
}

bool kiln_debug_guards_intact(const kiln_guarded *g, ptrdiff_t *bad) {
    size_t at = guard_scan(g->object - g->front, g->front);
    if (at < g->front) {
        *bad = (ptrdiff_t)at - (ptrdiff_t)g->front;
        return false;
    }
    at = guard_scan(g->object + g->size, g->back);
    if (at < g->back) {
        *bad = (ptrdiff_t)(g->size + at);
        return false;
    }
    return true;
}

void kiln_debug_report_guard(const kiln_log_sink *log, kiln_log_item item, const char *kind,
                             const char *name, const kiln_guarded *g, ptrdiff_t bad,
                             kiln_debug_site site, const char *when) {
    char where[160] = "";
    if (site.file) snprintf(where, sizeof where, " allocated at %s:%d;", site.file, site.line);
    kiln_log(log, item,
             "%s '%s': object %p (%zu bytes): guard damaged, first bad byte at offset %td;%s "
             "found %s", kind, name, (void *)g->object, g->size, bad, where, when);
}

/* ---- threads ---- */

/* The last id handed out. Relaxed: the read-modify-write alone makes every id unique
 * (a single modification order), and an id publishes nothing else. */
static _Atomic uintptr_t last_thread_id;

uintptr_t kiln_debug_thread(void) {
    static _Thread_local uintptr_t id;   /* 0: none taken yet */
    if (kiln_unlikely(id == 0)) id = kiln_add_relaxed(&last_thread_id, 1) + 1;
    return id;
}

/* ---- guard pages ---- */

size_t kiln_debug_block_usable(uint32_t debug, size_t block_size) {
    size_t page = kiln_os_page_size();
    if (!(debug & KILN_DEBUG_GUARD_PAGES) || block_size < 2 * page) return block_size;
    return block_size - page;
}

void kiln_debug_protect(void *p, size_t n, const kiln_log_sink *log) {
    static _Atomic int reported;
    if (kiln_os_protect(p, n, false) || kiln_exchange_relaxed(&reported, 1) != 0) return;
    kiln_log(log, KILN_LOGITEM_DEBUG_GUARD_PAGE_FAILED,
             "the OS refused to protect a guard page at %p (too many mappings?); this and "
             "other refused ones stay accessible (reported once)", p);
}

void kiln_debug_block_taken(uint32_t debug, void *block, size_t block_size,
                            const kiln_log_sink *log) {
    size_t usable = kiln_debug_block_usable(debug, block_size);
    if (usable != block_size) kiln_debug_protect((char *)block + usable, block_size - usable, log);
}

void kiln_debug_block_leaving(uint32_t debug, void *block, size_t block_size) {
    size_t usable = kiln_debug_block_usable(debug, block_size);
    if (usable != block_size) kiln_os_protect((char *)block + usable, block_size - usable, true);
    if (debug & KILN_DEBUG_POISON) kiln_debug_unpoison(block, usable);
}

/* ---- sites: the hash both tables below use ---- */

static size_t site_hash(kiln_debug_site site) {
    size_t h = (size_t)site.line * 0x9e3779b97f4a7c15ull;
    /* The file's text, not its address: one file may reach kiln through several copies
     * of the same string literal. */
    for (const char *c = site.file; c && *c; c++) h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
    return h;
}

/* ---- the site counts (KILN_DEBUG_SITES) ---- */

bool kiln_site_registry_init(kiln_site_registry *r) {
    *r = (kiln_site_registry){ 0 };
    r->entries = kiln_sys_calloc(KILN_SITE_REGISTRY_CAP, sizeof *r->entries);
    if (!r->entries) return false;
    pthread_mutex_init(&r->lock, NULL);
    return true;
}

void kiln_site_registry_fini(kiln_site_registry *r) {
    if (!r->entries) return;
    kiln_sys_free(r->entries);
    pthread_mutex_destroy(&r->lock);
    *r = (kiln_site_registry){ 0 };
}

/* Whether e, an entry past 0, is the one of site (a site with a file). */
static bool site_is(const kiln_site_entry *e, kiln_debug_site site) {
    kiln_site_entry *entry = (kiln_site_entry *)e;   /* atomics are read, never written */
    const char *file = kiln_load_acquire(&entry->file);   /* pairs with the claim's release */
    if (!file || kiln_load_relaxed(&entry->line) != site.line) return false;
    return file == site.file || strcmp(file, site.file) == 0;
}

/* Where site's probe starts, in entries 1 and up (entry 0 is the no-site one). */
static size_t registry_start(kiln_debug_site site) {
    return 1 + (site_hash(site) & (KILN_SITE_REGISTRY_CAP - 2));
}

static size_t registry_next(size_t i) { return i + 1 < KILN_SITE_REGISTRY_CAP ? i + 1 : 1; }

/* Probes for site up to the first empty entry: the site's entry, or NULL with *empty
 * set to where it would go. Lock-free: entries are only ever claimed, never emptied. */
static kiln_site_entry *registry_probe(kiln_site_registry *r, kiln_debug_site site,
                                       size_t *empty) {
    for (size_t i = registry_start(site);; i = registry_next(i)) {
        kiln_site_entry *e = &r->entries[i];
        if (!kiln_load_acquire(&e->file)) {
            *empty = i;
            return NULL;
        }
        if (site_is(e, site)) return e;
    }
}

kiln_site_entry *kiln_sites_find(kiln_site_registry *r, kiln_debug_site site) {
    if (!site.file) return &r->entries[0];
    size_t empty;
    return registry_probe(r, site, &empty);
}

/* The entry of site, claimed if it has none; NULL when the table is too full. */
static kiln_site_entry *registry_entry(kiln_site_registry *r, kiln_debug_site site) {
    kiln_site_entry *e = kiln_sites_find(r, site);
    if (e) return e;
    pthread_mutex_lock(&r->lock);
    size_t empty;
    e = registry_probe(r, site, &empty);   /* again: another thread may have claimed it */
    if (!e && 4 * (kiln_load_relaxed(&r->used) + 1) <= 3 * KILN_SITE_REGISTRY_CAP) {
        e = &r->entries[empty];
        kiln_store_relaxed(&e->line, site.line);
        kiln_store_release(&e->file, site.file);   /* publishes line with it */
        kiln_add_relaxed(&r->used, 1);
    }
    pthread_mutex_unlock(&r->lock);
    return e;
}

void kiln_sites_alloc(kiln_site_registry *r, kiln_debug_site site, size_t bytes, bool live) {
    kiln_site_entry *e = registry_entry(r, site);
    if (!e) {
        kiln_add_relaxed(&r->lost, 1);
        return;
    }
    kiln_add_relaxed(&e->allocs, 1);
    kiln_add_relaxed(&e->bytes, bytes);
    if (live) kiln_add_relaxed(&e->live, 1);
}

void kiln_sites_move(kiln_site_registry *r, kiln_debug_site site, size_t bytes) {
    if (!site.file) return;   /* stays where it is */
    kiln_site_entry *none = &r->entries[0];
    kiln_sub_relaxed(&none->allocs, 1);
    kiln_sub_relaxed(&none->bytes, bytes);
    kiln_sub_relaxed(&none->live, 1);
    kiln_sites_alloc(r, site, bytes, true);
}

void kiln_sites_freed(kiln_site_registry *r, kiln_debug_site site) {
    kiln_site_entry *e = kiln_sites_find(r, site);
    if (e) kiln_sub_relaxed(&e->live, 1);   /* none: its allocation was counted in lost */
}

/* ---- the site table of the leak reports ---- */

static bool same_site(const kiln_site_count *entry, kiln_debug_site site) {
    if (entry->line != site.line) return false;
    if (entry->file == site.file) return true;
    return entry->file && site.file && strcmp(entry->file, site.file) == 0;
}

/* Doubles the table (or makes its first 64 entries); false when the heap refuses (the
 * site goes uncounted in lost; the report says so as an ERROR). */
static bool site_table_grow(kiln_site_table *t) {
    size_t cap = t->cap ? 2 * t->cap : 64;
    kiln_site_count *slots = kiln_sys_calloc(cap, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < t->cap; i++) {
        if (t->slots[i].count == 0) continue;
        kiln_debug_site site = { t->slots[i].file, t->slots[i].line };
        size_t j = site_hash(site) & (cap - 1);
        while (slots[j].count != 0) j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
    }
    kiln_sys_free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return true;
}

void kiln_site_table_add(kiln_site_table *t, kiln_debug_site site) {
    t->total++;
    if (2 * (t->used + 1) > t->cap && !site_table_grow(t)) {
        t->lost++;
        return;
    }
    size_t j = site_hash(site) & (t->cap - 1);
    while (t->slots[j].count != 0 && !same_site(&t->slots[j], site)) j = (j + 1) & (t->cap - 1);
    if (t->slots[j].count == 0) {
        t->slots[j] = (kiln_site_count){ site.file, site.line, 0 };
        t->used++;
    }
    t->slots[j].count++;
}

static int by_count_descending(const void *a, const void *b) {
    uint64_t x = ((const kiln_site_count *)a)->count, y = ((const kiln_site_count *)b)->count;
    return (x < y) - (x > y);
}

void kiln_site_table_report(kiln_site_table *t, const kiln_log_sink *log, kiln_log_item site_item,
                            kiln_log_item summary_item, const char *what, const char *noun) {
    /* The occupied entries to the front, then the biggest sites first. */
    size_t n = 0;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].count != 0) t->slots[n++] = t->slots[i];
    if (n) qsort(t->slots, n, sizeof *t->slots, by_count_descending);
    uint64_t listed = 0;
    for (size_t i = 0; i < n && i < KILN_LEAK_SITES_LISTED; i++) {
        const kiln_site_count *s = &t->slots[i];
        listed += s->count;
        if (s->file)
            kiln_log(log, site_item, "%s: %llu %s still live, allocated at %s:%d",
                     what, (unsigned long long)s->count, noun, s->file, s->line);
        else
            kiln_log(log, site_item,
                     "%s: %llu %s still live, allocated without a site (not through an _at "
                     "call or KILN_TRACK_SITES)", what, (unsigned long long)s->count, noun);
    }
    if (t->lost != 0)
        kiln_log(log, KILN_LOGITEM_SITES_OUT_OF_MEMORY,
                 "%s: no heap memory for the site table; %llu %s still live are not grouped "
                 "by site", what, (unsigned long long)t->lost, noun);
    if (n > KILN_LEAK_SITES_LISTED || t->lost != 0)
        kiln_log(log, summary_item,
                 "%s: %llu more %s still live from %zu sites not listed (%zu sites, %llu %s "
                 "in all)", what, (unsigned long long)(t->total - listed), noun,
                 n - (n < KILN_LEAK_SITES_LISTED ? n : KILN_LEAK_SITES_LISTED), n,
                 (unsigned long long)t->total, noun);
    kiln_sys_free(t->slots);
    *t = (kiln_site_table){ 0 };
}
