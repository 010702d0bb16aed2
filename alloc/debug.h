/* alloc/debug.h — the tools the arenas and the pools share for their debug bits: fill
 * patterns, guard bytes and their reports, ASan poisoning and Valgrind memory-pool
 * requests, guard pages on blocks, the calling thread's id, and the table that
 * groups live objects by allocation site for the leak reports. The debug layers
 * (arena_debug.c, pool_debug.c) use them, and so do the cores where a bit changes their
 * blocks (guard pages, poison lifted before a block or mapping goes back). The
 * KILN_DEBUG_* bits themselves are public (kiln/core.h).
 *
 * Nothing here runs unless a debug bit asked for it, but kiln_debug_block_usable, which
 * every arena and pool asks once at init: the allocators call in from their out-of-line
 * paths only. */
#ifndef KILN_ALLOC_DEBUG_H
#define KILN_ALLOC_DEBUG_H

#include <kiln/core.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "../base/common.h"
#include "../base/log.h"

#if defined(__SANITIZE_ADDRESS__)
#  define KILN_ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define KILN_ASAN 1
#  endif
#endif
#ifdef KILN_ASAN
#  include <sanitizer/asan_interface.h>
#endif
#ifdef KILN_HAVE_VALGRIND
#  include <valgrind/memcheck.h>
#endif

#define KILN_FILL_FRESH  0xCD   /* memory just handed out */
#define KILN_FILL_FREED  0xDD   /* memory freed, released or reset */
#define KILN_FILL_GUARD  0xFD   /* guard bytes */
#define KILN_GUARD_BYTES 16     /* guard bytes on each side of an object, at least */

/* The bits that put a debug record (site, guards) before each arena allocation, and
 * those that make every arena allocation take the out-of-line path. */
#define KILN_ARENA_RECORD_BITS \
    (KILN_DEBUG_FILL | KILN_DEBUG_GUARDS | KILN_DEBUG_POISON | KILN_DEBUG_SITES)
#define KILN_ARENA_SLOW_BITS (KILN_ARENA_RECORD_BITS | KILN_DEBUG_OWNERSHIP)
/* The bits that give each pool slot an entry (state and site) in its block's table, and
 * those that need the pool's debug layer on alloc and free. */
#define KILN_POOL_HEADER_BITS (KILN_DEBUG_GUARDS | KILN_DEBUG_SITES)
#define KILN_POOL_HOOK_BITS \
    (KILN_DEBUG_FILL | KILN_DEBUG_GUARDS | KILN_DEBUG_POISON | KILN_DEBUG_SITES)

/* Where an allocation was asked for: file NULL when the caller gave no site. */
typedef struct kiln_debug_site {
    const char *file;
    int         line;
} kiln_debug_site;

/* An object and the guard bytes on either side of it (front or back may be 0). */
typedef struct kiln_guarded {
    char  *object;
    size_t size;
    size_t front;   /* guard bytes right before object */
    size_t back;    /* guard bytes right after object + size */
} kiln_guarded;

/* Writes the guard pattern around g's object. */
KILN_INTERNAL void kiln_debug_guards_write(const kiln_guarded *g);

/* Whether both guards of g are intact; if not, *bad is the offset of the first damaged
 * byte (lowest address) from the object's start, negative in the front guard. Guard
 * bytes are read and written with relaxed atomic byte accesses: the frame-end audit of
 * a pool reads them on the driving thread while a free on another thread may be
 * repairing the same guard (after a damage only). */
KILN_INTERNAL bool kiln_debug_guards_intact(const kiln_guarded *g, ptrdiff_t *bad);

/* Logs a damaged guard: "ITEM: <kind> '<name>': object <addr> (<size> bytes): guard
 * damaged, first bad byte at offset <bad>; [allocated at <file>:<line>;] found <when>". */
KILN_INTERNAL void kiln_debug_report_guard(const kiln_log_sink *log, kiln_log_item item,
                                           const char *kind, const char *name,
                                           const kiln_guarded *g, ptrdiff_t bad,
                                           kiln_debug_site site, const char *when);

/* ASan poisoning and memcheck accessibility of a range (KILN_DEBUG_POISON); no-ops in
 * builds without them. Object areas only: kiln never poisons its own bookkeeping (block
 * headers, debug records and slot entries, guard bytes), so it never reads poisoned
 * memory itself. */
static inline void kiln_debug_poison(const void *p, size_t n) {
#ifdef KILN_ASAN
    ASAN_POISON_MEMORY_REGION(p, n);
#endif
#ifdef KILN_HAVE_VALGRIND
    VALGRIND_MAKE_MEM_NOACCESS(p, n);
#endif
    (void)p;
    (void)n;
}

static inline void kiln_debug_unpoison(const void *p, size_t n) {
#ifdef KILN_ASAN
    ASAN_UNPOISON_MEMORY_REGION(p, n);
#endif
#ifdef KILN_HAVE_VALGRIND
    VALGRIND_MAKE_MEM_UNDEFINED(p, n);
#endif
    (void)p;
    (void)n;
}

/* memcheck's memory pools: an allocator (anchor: its address) hands out and takes back
 * chunks; memcheck then reports a read of a freed chunk like one of free'd malloc
 * memory. ASan's side is the poisoning above. */
static inline void kiln_debug_mempool_create(const void *anchor) {
#ifdef KILN_HAVE_VALGRIND
    VALGRIND_CREATE_MEMPOOL(anchor, 0, 0);
#endif
    (void)anchor;
}

static inline void kiln_debug_mempool_destroy(const void *anchor) {
#ifdef KILN_HAVE_VALGRIND
    VALGRIND_DESTROY_MEMPOOL(anchor);
#endif
    (void)anchor;
}

/* An object handed out: unpoisoned, a memcheck chunk. */
static inline void kiln_debug_object_taken(const void *anchor, const void *p, size_t n) {
    kiln_debug_unpoison(p, n);
#ifdef KILN_HAVE_VALGRIND
    VALGRIND_MEMPOOL_ALLOC(anchor, p, n);
#endif
    (void)anchor;
}

/* An object taken back: no longer a chunk, poisoned. */
static inline void kiln_debug_object_freed(const void *anchor, const void *p, size_t n) {
#ifdef KILN_HAVE_VALGRIND
    VALGRIND_MEMPOOL_FREE(anchor, p);
#endif
    (void)anchor;
#ifdef KILN_ASAN
    ASAN_POISON_MEMORY_REGION(p, n);
#endif
    (void)p;
    (void)n;
}

/* The calling thread's id: never 0, taken on the thread's first call from a process-wide
 * counter, so unique for the process's lifetime (a thread that starts after another
 * exits may reuse its pthread_t, stack and thread-local storage, never its id).
 * Concurrency: any thread. */
KILN_INTERNAL uintptr_t kiln_debug_thread(void);

/* Bytes at the start of a block that an allocator may use: the whole block, or with
 * KILN_DEBUG_GUARD_PAGES all but its last page, which is made inaccessible. Blocks of
 * a single page keep no guard page: their link word for the block pool's free list
 * would be in it, and lock-free pops may read that word after the block was taken. */
KILN_INTERNAL size_t kiln_debug_block_usable(uint32_t debug, size_t block_size);

/* A block just taken from the block pool: protects its guard page (GUARD_PAGES). */
KILN_INTERNAL void kiln_debug_block_taken(uint32_t debug, void *block, size_t block_size,
                                          const kiln_log_sink *log);

/* A block about to go back to the block pool, usable by anyone again: its guard page
 * accessible, its poison lifted. */
KILN_INTERNAL void kiln_debug_block_leaving(uint32_t debug, void *block, size_t block_size);

/* Makes [p, p + n) (whole pages) inaccessible for a guard page; a refusal by the OS is
 * logged once per process (DEBUG_GUARD_PAGE_FAILED) and leaves the range usable. */
KILN_INTERNAL void kiln_debug_protect(void *p, size_t n, const kiln_log_sink *log);

/* ---- the site counts (KILN_DEBUG_SITES): every allocation counted by its site ----
 * One registry per runtime, reached by every allocator through its block pool
 * (kiln_block_pool.sites), counts per file:line the allocations made there, their bytes
 * and, for arenas and pools, the objects still live (handle tables count their live
 * items by walking their slots: their free path never looks at sites). It is fed from
 * the debug layers' out-of-line paths only, so it costs nothing without the bit.
 *
 * Entries are claimed under lock (once per new site) and found without it: an entry's
 * line is written before its file is published (release), and a lookup loads the file
 * with acquire. Counters are relaxed atomics: each is exact on its own, and a reader
 * may see one allocation's allocs before its live. A site that finds the table over
 * three quarters full is not entered: its allocations are counted in lost. */
#define KILN_SITE_REGISTRY_CAP 4096u   /* entries, a power of two; entry 0: no site */

/* A slot's site where other threads may read it while it changes (a handle table's
 * site array): the same file and line as kiln_debug_site, relaxed atomics. */
typedef struct kiln_site_slot {
    _Atomic(const char *) file;
    _Atomic int           line;
} kiln_site_slot;

typedef struct kiln_site_entry {
    _Atomic(const char *) file;     /* NULL: empty (entry 0: allocations without a site) */
    _Atomic int           line;
    _Atomic uint64_t      allocs;   /* allocations made at the site */
    _Atomic uint64_t      bytes;    /* bytes they asked for */
    _Atomic uint64_t      live;     /* arena allocations and pool objects still live */
} kiln_site_entry;

typedef struct kiln_site_registry {
    kiln_site_entry *entries;       /* KILN_SITE_REGISTRY_CAP, from the heap */
    pthread_mutex_t  lock;          /* claims of new entries */
    _Atomic uint32_t used;          /* entries claimed, entry 0 not counted */
    _Atomic uint64_t lost;          /* allocations of sites that found no room */
} kiln_site_registry;

/* Sets a registry up (its entries from the heap); false when the heap refuses. Its
 * owner, before any allocator sees it. */
KILN_INTERNAL bool kiln_site_registry_init(kiln_site_registry *r);

/* Frees the entries. No allocator may use the registry any more. */
KILN_INTERNAL void kiln_site_registry_fini(kiln_site_registry *r);

/* One allocation of bytes at site; live says whether it counts as live until a
 * kiln_sites_freed (arenas and pools) or not (handle tables). Any thread, lock-free
 * but for the first allocation at a site. */
KILN_INTERNAL void kiln_sites_alloc(kiln_site_registry *r, kiln_debug_site site, size_t bytes,
                                    bool live);

/* A live pool object counted without a site (its alloc hook) gets its site: moved from
 * entry 0 to site's. The object's user's thread. */
KILN_INTERNAL void kiln_sites_move(kiln_site_registry *r, kiln_debug_site site, size_t bytes);

/* A live allocation counted at site is freed. Any thread, lock-free. */
KILN_INTERNAL void kiln_sites_freed(kiln_site_registry *r, kiln_debug_site site);

/* The entry of site, NULL when it has none (no allocation counted there). Any thread,
 * lock-free. */
KILN_INTERNAL kiln_site_entry *kiln_sites_find(kiln_site_registry *r, kiln_debug_site site);

/* Live objects counted by allocation site, for the leak reports. A small open-
 * addressing table on malloc (leak reports run at destroy, never on a hot path);
 * objects that find no room when malloc refuses are counted in lost. */
typedef struct kiln_site_count {
    const char *file;   /* NULL: allocated without a site */
    int         line;
    uint64_t    count;
} kiln_site_count;

typedef struct kiln_site_table {
    kiln_site_count *slots;   /* cap entries; count 0: empty */
    size_t           cap, used;
    uint64_t         total, lost;
} kiln_site_table;

#define KILN_LEAK_SITES_LISTED 16   /* sites listed one by one before the summary */

KILN_INTERNAL void kiln_site_table_add(kiln_site_table *t, kiln_debug_site site);

/* Logs one WARN per site, most objects first (site_item: "<what>: N <noun> still live,
 * allocated at file:line"), at most KILN_LEAK_SITES_LISTED, then one summary_item WARN
 * for the rest if any; frees the table. */
KILN_INTERNAL void kiln_site_table_report(kiln_site_table *t, const kiln_log_sink *log,
                                          kiln_log_item site_item, kiln_log_item summary_item,
                                          const char *what, const char *noun);

#endif /* KILN_ALLOC_DEBUG_H */
