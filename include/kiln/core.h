/* kiln/core.h — runtime creation, thread contexts, the frame clock, logging.
 *
 * Quick guide:
 *   kiln_runtime *rt = kiln_create(NULL);        // or &(kiln_desc){ .frame_budget = 8u << 20 }
 *   kiln_ctx *main_ctx = kiln_attach(rt);        // every thread that uses kiln attaches once
 *   for (;;) {
 *       kiln_frame_begin(main_ctx);
 *       void *scratch = kiln_frame_alloc(main_ctx, 4096, 64);   // gone at frame end
 *       kiln_frame_end(main_ctx);
 *   }
 *   kiln_detach(main_ctx);
 *   kiln_destroy(rt);
 *
 * What kiln does NOT do: it never replaces malloc, never aborts, never resets an
 * arena under a thread that may be using it, and never frees memory behind the
 * owner's back except at the points documented here. */
#ifndef KILN_CORE_H
#define KILN_CORE_H

/* kiln's version, as the crash report and kiln_stats_print write it. */
#define KILN_VERSION "0.1.0"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kiln/log_items.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  define KILN_API
#else
#  define KILN_API __attribute__((visibility("default")))
#endif

typedef struct kiln_runtime kiln_runtime;
typedef struct kiln_ctx     kiln_ctx;   /* one per thread: a worker's, or an attached thread's */

/* A subsystem's tag (kiln/heap.h): the memory of the allocators that carry it is counted
 * to it, against its budget. {0} is "untagged". */
typedef struct kiln_tag { uint32_t id; } kiln_tag;

typedef enum kiln_log_level {
    KILN_LOG_DEBUG, KILN_LOG_INFO, KILN_LOG_WARN, KILN_LOG_ERROR
} kiln_log_level;

/* kiln_desc.log_mode: on which thread messages reach the sinks. */
typedef enum kiln_log_mode {
    KILN_LOG_SYNC  = 0,   /* on the thread that logs, before the call that logged returns */
    KILN_LOG_ASYNC = 1    /* through a bounded ring (KILN_LOG_RING_MESSAGES, 256 messages)
                             that any thread writes with no lock and no system call; kiln's
                             log thread delivers them about every 10 ms, kiln_log_flush and
                             kiln_destroy at once. A full ring drops the message, counted
                             (kiln_stats.log_dropped) and told by one LOG_DROPPED per
                             delivery round that saw drops. The callbacks (log, log_item)
                             and the file run on the log thread, one message at a time;
                             error_hook still runs on the thread that hit the error. A
                             child made by fork() has no log thread: it must not use a
                             runtime made before the fork (nor may it in sync mode: the
                             workers are not there either). */
} kiln_log_mode;

/* kiln_desc.log_level and kiln_log_set_level: the least level delivered to the log's
 * sinks (desc.log or the stderr default, desc.log_item, desc.log_file). Messages below
 * it are not formatted or delivered; a refused call is still counted, and an ERROR still
 * reaches desc.error_hook (a breakpoint's place, not a sink). */
typedef enum kiln_log_threshold {
    KILN_LOG_THRESHOLD_DEFAULT = 0,   /* KILN_LOG_THRESHOLD_INFO */
    KILN_LOG_THRESHOLD_DEBUG,
    KILN_LOG_THRESHOLD_INFO,
    KILN_LOG_THRESHOLD_WARN,
    KILN_LOG_THRESHOLD_ERROR,
    KILN_LOG_THRESHOLD_OFF            /* nothing */
} kiln_log_threshold;

/* Receives one complete message per call, without a trailing newline. Every
 * message starts with a stable item name in capitals followed by ": " (for
 * example "ARENA_BAD_ALIGN: arena 'level': alignment 24 is not a power of two"),
 * so tools and tests can match the item and not the prose (every item: kiln/log_items.h;
 * desc.log_item receives its id). May be called from any thread at the same time; the
 * callback must be thread-safe.
 *
 * What a log callback (desc.log, desc.log_item, desc.error_hook) may call:
 * - kiln may call it while it holds its registry (a pool or table destroyed with live
 *   objects, the frame-end audit, a refusal at create), so it may read figures: the
 *   kiln_stats_* and kiln_*_stats_get calls, kiln_stats_print, kiln_stats_write_json,
 *   kiln_history_read, kiln_frame_number, kiln_log_item_name and _level.
 * - Calls that create, destroy, attach, detach or drive the frame clock are refused in
 *   it (LOG_CALLBACK_CALL, counted in kiln_stats.api_errors), kiln_create included.
 * - A message logged from inside a callback (a call of the callback refused) goes to
 *   stderr only, never back into the callbacks, and is counted as usual.
 * - It must not allocate from or free into kiln's pools, arenas or handle tables, nor
 *   run or wait for jobs: the message may come from inside that allocator. */
typedef void (*kiln_log_fn)(void *user, kiln_log_level level, const char *message);

/* Log items: one constant per entry of KILN_LOG_ITEMS (kiln/log_items.h), in its order.
 * KILN_LOGITEM_NONE (0) is no item: kiln never logs it, and a zeroed kiln_log_item
 * reads as none. KILN_LOGITEM_COUNT is one past the last item. */
#define KILN_LOGITEM_ENUM_(name, level, meaning) KILN_LOGITEM_##name,
typedef enum kiln_log_item {
    KILN_LOGITEM_NONE = 0,
    KILN_LOG_ITEMS(KILN_LOGITEM_ENUM_)
    KILN_LOGITEM_COUNT
} kiln_log_item;
#undef KILN_LOGITEM_ENUM_

/* The name of an item as messages spell it ("ARENA_NULL" for KILN_LOGITEM_ARENA_NULL);
 * NULL for KILN_LOGITEM_NONE and any value that is no item. Concurrency: any thread. */
KILN_API const char *kiln_log_item_name(kiln_log_item item);

/* The level an item is always logged at (its entry in KILN_LOG_ITEMS); KILN_LOG_DEBUG for
 * KILN_LOGITEM_NONE and any value that is no item (kiln_log_item_name tells those by
 * NULL). Concurrency: any thread. */
KILN_API kiln_log_level kiln_log_item_level(kiln_log_item item);

/* Logs a message of the engine's own through rt's log, the path kiln's messages take:
 * the threshold, desc.log (or stderr, or desc.log_file), desc.log_item and, for an
 * ERROR, desc.error_hook. The text reads "APP_LOG: " and then fmt formatted (printf's
 * syntax), 511 bytes at most in all; its item is KILN_LOGITEM_APP_LOG, delivered at the
 * level given (not the item's listed one). Refused, logged and counted in api_errors: a
 * level that is none (LOG_LEVEL_INVALID), a NULL fmt (LOG_FORMAT_NULL); a bad rt:
 * RUNTIME_NULL / RUNTIME_INVALID on stderr. Concurrency: any thread, attached or not, at
 * the same time as any other call on rt but kiln_destroy; inside a log callback the
 * message goes to stderr only (as kiln's own do). */
KILN_API void kiln_logf(kiln_runtime *rt, kiln_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* KILN_LOG_ASYNC: delivers every message queued before the call, on the calling thread,
 * before it returns (the log thread's next round finds them gone); KILN_LOG_SYNC:
 * nothing to do. Refused inside a log callback (LOG_CALLBACK_CALL); a bad rt:
 * RUNTIME_NULL / RUNTIME_INVALID. Concurrency: any thread; blocks while the log thread
 * delivers a round. */
KILN_API void kiln_log_flush(kiln_runtime *rt);

/* The most runtimes with a crash_file at once (desc.crash_file). */
#define KILN_CRASH_RUNTIMES 8

/* Writes the crash report of rt into fd, as a fatal signal writes it into
 * desc.crash_file, for an engine's own crash handler:
 * - the thread it runs on (its context, or none of rt's; its id and name);
 * - the frame number, and for every context its thread (id and name: kiln's workers are
 *   "kiln-worker-N") and the job it runs: the function's address and its symbol, read
 *   from the symbol table of the file it was loaded from (.symtab, or .dynsym when
 *   stripped: then only exported functions are named; the address is always there for
 *   addr2line), and the frame that job belongs to or that it is a background job;
 * - the last 64 frames of the history;
 * - the newest 64 log lines delivered (each cut at 511 bytes, ending in "..."), then with
 *   log_mode=async the messages still queued;
 * - the block pool's reserved bytes now, and each allocator as the last frame end saw
 *   it (the frame arenas as one, then every arena, pool and handle table: bytes, objects,
 *   blocks), then every tag (kiln/heap.h: bytes live, budget); 48 lines at most, the rest
 *   counted;
 * - kiln's version and the effective options; the process id, and for a child forked
 *   after kiln_create (fork is not supported: kiln's threads do not follow it) that it
 *   is one, so its report is not taken for the parent's.
 * Async-signal-safe but for the runtime check it starts with (a process-wide lock: do not
 * call it from a handler that may have interrupted kiln_create or kiln_destroy). A
 * write cut by a signal goes on, a full non-blocking fd is waited for up to 100 ms, and
 * SIGPIPE is held off while it writes (a reader gone loses the report, it never kills
 * the caller). false for a bad rt (RUNTIME_NULL, RUNTIME_INVALID), a negative fd
 * (CRASH_FD_INVALID, counted), or a report that could not be written whole
 * (CRASH_WRITE_FAILED: a bad or closed fd, a reader gone). Concurrency: any thread; what other threads change meanwhile may be read half
 * old, half new. */
KILN_API bool kiln_crash_report_write(kiln_runtime *rt, int fd);

/* Sets rt's threshold (kiln_log_threshold; KILN_LOG_THRESHOLD_DEFAULT: info) from the
 * next message on; kiln_runtime_desc's log_level reads it back. A value that is none:
 * refused (LOG_LEVEL_INVALID, counted), the threshold unchanged. Concurrency: any
 * thread; threads logging at the same time see the change soon after (a relaxed store). */
KILN_API void kiln_log_set_level(kiln_runtime *rt, kiln_log_threshold threshold);

/* desc.log_item: receives every message of the runtime with its item, user being
 * desc.log_user. Level and text ("ITEM: details") are the ones desc.log receives; it is
 * called right after desc.log (or after the stderr default when desc.log is NULL) and
 * before desc.error_hook, on the same thread. A message that names no runtime (a NULL or
 * invalid object: it goes to stderr) reaches no log_item. May be called from any thread
 * at the same time; the callback must be thread-safe. */
typedef void (*kiln_log_item_fn)(void *user, kiln_log_level level, kiln_log_item item,
                                 const char *message);

/* Debug bits for kiln_desc.debug: the debug and safety layer of the allocators.
 * - Each part has its own bit; the bits combine freely.
 * - A bit that is off costs at most one well-predicted branch, most nothing: any arena
 *   bit sends every arena allocation out of line (through the bump limit), and pools
 *   test the flag word their fast paths test already.
 * - Every report is one log message "ITEM: details"; ERROR ones also reach
 *   desc.error_hook.
 * - Memory: FILL, GUARDS, POISON and SITES keep a record of every live arena allocation
 *   (about 48 bytes each) in blocks the arena takes from the block pool and keeps until
 *   it is destroyed; kiln_arena_reserve holds that room too (kiln/memory.h). GUARDS
 *   also adds its guard bytes to every allocation, which no reserve counts. */
enum {
    KILN_DEBUG_NONE        = 0,
    /* Pool frees are checked for double frees and interior pointers (POOL_DOUBLE_FREE,
     * POOL_INTERIOR_POINTER), as KILN_POOL_CHECKED does for one pool. A background job
     * asking for frame memory is refused (JOB_BACKGROUND_FRAME_ALLOC). */
    KILN_DEBUG_CHECKS      = 1u << 0,
    /* Fresh memory (pool alloc, arena allocation) reads 0xCD; freed memory (pool free,
     * arena release or reset) 0xDD; guard bytes 0xFD (the MSVC debug-heap convention). */
    KILN_DEBUG_FILL        = 1u << 1,
    /* Red zones: 16 or more guard bytes before and after every pool object and arena
     * allocation (pool slots grow: kiln_pool_stats.slot_size).
     * - Checked on every pool free, arena release, reset and destroy, and by a sampled
     *   audit at every kiln_frame_end: desc.audit_sample live objects per pool, and as
     *   many of the newest allocations of each arena the driving thread owns.
     * - A damaged guard: an ERROR, POOL_GUARD_DAMAGED or ARENA_GUARD_DAMAGED, with the
     *   pool or arena, the object's address and size, the offset of the first bad byte
     *   from the object's start (negative: before it) and, under KILN_DEBUG_SITES, its
     *   site; counted in the stats' guard_errors; then repaired, so one overrun is
     *   reported once.
     * - A pool object freed twice is caught too (POOL_DOUBLE_FREE). */
    KILN_DEBUG_GUARDS      = 1u << 2,
    /* Guard pages (PROT_NONE): an overrun faults (SIGSEGV) at the instruction that makes it.
     * - The last page of every block an arena or a pool takes: blocks serve block_size
     *   minus a page, and pool objects sit against it.
     * - A page before and after every dedicated mapping of a large arena allocation,
     *   which ends right below the page after it.
     * - Needs blocks of two pages or more (else switched off: DEBUG_GUARD_PAGES_OFF).
     * - Each protected page costs the OS a memory mapping entry. */
    KILN_DEBUG_GUARD_PAGES = 1u << 3,
    /* Freed memory is reported when touched, and unreported again when handed out.
     * - AddressSanitizer builds: freed pool objects and released or reset arena memory
     *   are poisoned (use-after-poison, with its stack).
     * - Valgrind memcheck (kiln built with <valgrind/memcheck.h>): pools and arenas are
     *   memcheck memory pools, so memcheck reports the same accesses.
     * - Other builds: nothing. */
    KILN_DEBUG_POISON      = 1u << 4,
    /* Allocation sites: kiln_pool_alloc_at, kiln_arena_alloc_at and kiln_frame_alloc_at
     * (or the plain names with KILN_TRACK_SITES defined before including kiln) keep
     * file:line in each object's debug header.
     * - kiln_pool_destroy, and kiln_destroy for the pools and arenas still alive, list
     *   what is live by site: one WARN per site (POOL_LEAK_SITE, ARENA_LEAK_SITE) for
     *   the 16 biggest, then one POOL_LEAK_SUMMARY / ARENA_LEAK_SUMMARY for the rest.
     * - Guard reports name the site.
     * - Every allocation is counted by its site (allocations, bytes, live objects):
     *   kiln_sites_top (kiln/stats.h) ranks them at any time; kiln_stats_print lists the
     *   top 20. */
    KILN_DEBUG_SITES       = 1u << 5,
    /* An arena used (alloc, mark, release) from a thread that does not own it.
     * - An ERROR, ARENA_WRONG_THREAD, once per offending thread until the owner changes;
     *   every such call counted (kiln_arena_stats.wrong_thread). The call proceeds: a
     *   refusal would change what a correct hand-off does.
     * - The owner: the thread that created the arena or last reset it. A frame arena's
     *   is its context's thread, always: kiln_frame_end resetting workers' frame arenas
     *   is no use, another thread resetting a frame arena is. */
    KILN_DEBUG_OWNERSHIP   = 1u << 6,
    KILN_DEBUG_ALL         = 0x7f
};

/* Called once per ERROR-level message, after the log callback, with the same message:
 * a place for a breakpoint (or an abort) on the first error. May be called from any
 * thread at the same time. kiln itself never aborts. */
typedef void (*kiln_error_hook_fn)(void *user, const char *message);

/* kiln_desc.worker_count for a runtime with no worker threads (jobs then run on the
 * threads that wait for them: kiln_wait and kiln_frame_end). */
#define KILN_NO_WORKERS UINT32_MAX

/* The most worker threads a runtime runs: every worker and every attached thread holds
 * one of the job system's 64 queue slots, and one is left for an attached thread. A
 * kiln_desc.worker_count above it is refused (WORKER_COUNT_INVALID); the default (one
 * per online CPU minus one) is capped at it. */
#define KILN_MAX_WORKERS 63u

/* The longest kiln_desc.idle_spin_us, one second: a longer one is refused
 * (IDLE_SPIN_INVALID). */
#define KILN_MAX_IDLE_SPIN_US 1000000u

/* kiln_desc.frame_budget_policy: what a frame allocation past frame_budget does. */
typedef enum kiln_budget_policy {
    KILN_BUDGET_WARN   = 0,   /* it succeeds; one FRAME_BUDGET_EXCEEDED per context per frame */
    KILN_BUDGET_REFUSE = 1    /* it returns NULL, counted (kiln_arena_stats.budget_refusals);
                                 one FRAME_BUDGET_REFUSED per context per frame */
} kiln_budget_policy;

/* kiln_desc.options_env: whether the environment variable KILN_OPTIONS applies. */
typedef enum kiln_options_env {
    KILN_OPTIONS_ENV_READ   = 0,   /* KILN_OPTIONS overrides the desc and desc.options */
    KILN_OPTIONS_ENV_IGNORE = 1    /* a program that must not be overridden: not read */
} kiln_options_env;

/* kiln_desc.stats: when kiln writes kiln_stats_print into the log, one STATS_REPORT (INFO)
 * message per line. {0}: never. */
typedef struct kiln_stats_schedule {
    bool     at_exit;        /* at kiln_destroy, before anything is torn down */
    uint32_t every_frames;   /* at the end of every Nth frame (frame numbers N, 2N, ...);
                                0: never */
} kiln_stats_schedule;

/* Every field of kiln_desc, in one X-macro list: X(type, field, key, kind, default,
 * meaning) once per field, in the struct's order.
 *   type, field  the member (kiln_desc is made from this list: KILN_DESC_MEMBER)
 *   key          the field's key in an options string ("" for a field a string cannot
 *                express: callbacks, their user pointers, the options themselves)
 *   kind         how its value is written: NONE (no key), COUNT (a decimal number),
 *                COUNT64, PERCENT (0 to 100), SPIN_US (0 to KILN_MAX_IDLE_SPIN_US), SIZE
 *                (a number with an optional K, M, G or T: binary multiples), BLOCK_SIZE
 *                (a SIZE that is 0 or a power of two from 4K to 1G), WORKERS (a COUNT or
 *                "none"), DEBUG (debug bit names joined by +), POLICY (warn, refuse),
 *                BOOL (on, off, true, false, yes, no, 1, 0), LEVEL (debug, info, warn,
 *                error, off), MODE (sync, async), PATH (a file's path, to the next
 *                comma), STATS (see the
 *                key below)
 *   default      what 0 means, as the README's options table writes it
 *   meaning      one line for that table
 * A value means what the field's value means: 0 is the default wherever the field's
 * comment says so. README.md's options table is checked against this list by a test.
 *
 * Options strings: "key=value" pairs separated by commas, spaces around either ignored,
 * for example "workers=3,debug=guards+fill,memory_limit=512M,warn_percent=70,stats=exit".
 * A value runs to the next comma: it cannot hold one. Layers, lowest first: kiln's
 * defaults, the desc's fields, desc.options, then the environment variable KILN_OPTIONS
 * (unless desc.options_env is KILN_OPTIONS_ENV_IGNORE); a later layer's key overrides an
 * earlier one, and within one string the last of a key wins. kiln_option_source tells a
 * value's layer, and kiln_stats_print shows every value with its layer.
 * - An unknown key: one OPTION_UNKNOWN warning naming it, its layer and the nearest key;
 *   create goes on.
 * - A value that is not one of its kind (not a number, too large, an unknown name) or a
 *   pair without "=": kiln_create refuses (NULL, OPTION_INVALID naming the key, the value,
 *   the layer and what is allowed), before it has made anything.
 * The check of each field's value against the others (frame_reserve against
 * memory_limit, say) is the desc's, whichever layer set it. */
/* The most bytes a path option (log_file) takes, its NUL included. */
#define KILN_OPTION_PATH_MAX 1024

#define KILN_DESC_FIELDS(X) \
    X(uint32_t, worker_count, "workers", WORKERS, "CPUs - 1", "worker threads, 0 to 63; none: no workers") \
        /* worker threads, at most KILN_MAX_WORKERS; 0: one per
         online CPU minus one for the attaching thread (at most
         KILN_MAX_WORKERS); KILN_NO_WORKERS: none */ \
    X(size_t, block_size, "block_size", BLOCK_SIZE, "64K", "the block pool's granule, a power of two from 4K to 1G") \
        /* global block pool granule, a power of two from 4 KiB to
         1 GiB; 0: 64 KiB */ \
    X(size_t, memory_limit, "memory_limit", SIZE, "0 (none)", "most bytes the block pool reserves from the OS") \
        /* most bytes the block pool may reserve from the OS, counting
         dedicated mappings of large arena allocations; at least one
         block (MEMORY_LIMIT_INVALID otherwise); a reservation is cut
         to what the limit leaves; 0: no limit */ \
    X(size_t, frame_budget, "frame_budget", SIZE, "0 (none)", "frame-arena bytes per context per frame before a warning or refusal") \
        /* frame-arena bytes per context per frame before a warning
         (one warning per context per frame), or a refusal under
         KILN_BUDGET_REFUSE (frame_budget_policy); 0: none */ \
    X(uint32_t, debug, "debug", DEBUG, "none", "debug bits joined by +: checks, fill, guards, guard_pages, poison, sites, ownership, all, none") \
        /* KILN_DEBUG_* bits; 0: none. Other bits are dropped, with
         one DEBUG_UNKNOWN_BITS warning at create */ \
    X(kiln_log_fn, log, "", NONE, "stderr", "") \
        /* NULL: one line per message on stderr ("kiln warn: ...") */ \
    X(void *, log_user, "", NONE, "NULL", "") \
        /* passed to log and log_item unchanged */ \
    X(size_t, reserve_size, "reserve_size", SIZE, "64 blocks", "bytes asked of the OS per reservation") \
        /* bytes asked of the OS per reservation, rounded up to whole
         blocks; at most 2^24 - 1 blocks and 128 TiB (the user address
         space; RESERVE_SIZE_INVALID beyond); 0: 64 blocks (4 MiB with
         64 KiB blocks) */ \
    X(uint32_t, audit_sample, "audit_sample", COUNT, "64", "live objects per allocator whose guards each frame end checks") \
        /* KILN_DEBUG_GUARDS: live pool objects / arena allocations
         per allocator whose guards each kiln_frame_end checks; 0: 64 */ \
    X(kiln_error_hook_fn, error_hook, "", NONE, "NULL", "") \
        /* NULL: none; see kiln_error_hook_fn */ \
    X(void *, error_hook_user, "", NONE, "NULL", "") \
        /* passed to error_hook unchanged */ \
    X(kiln_log_item_fn, log_item, "", NONE, "NULL", "") \
        /* NULL: none. Every message, with its item's id, besides
         log (which keeps its default); see kiln_log_item_fn */ \
    X(uint32_t, warn_percent, "warn_percent", PERCENT, "80", "share of a limit, 1 to 100, at which kiln warns once per episode") \
        /* share of a limit, 1-100, at which kiln warns once per
         episode: a frame arena of frame_budget (FRAME_BUDGET_NEAR),
         the block pool of memory_limit (MEMORY_LIMIT_NEAR), a pool of
         its capacity (POOL_CAPACITY_NEAR), a handle table of its
         capacity (HANDLES_CAPACITY_NEAR). An episode ends when usage
         falls more than 10 percentage points under the share (for a
         share of 10 or less: when it falls to zero). Judged: frame
         arenas on each frame's high-water mark at its reset; the
         block pool when it reserves or unmaps; pools and tables at
         each frame end and stats read, pools also at their caches'
         magazine exchanges (an estimate a magazine late, which may
         start an episode but not end one). 0: 80; over 100: refused
         (WARN_PERCENT_INVALID) */ \
    X(size_t, frame_reserve, "frame_reserve", SIZE, "0 (none)", "bytes of blocks each context's frame arena keeps") \
        /* bytes of block space each context's frame arena takes when
         its context is made (workers at create, attached threads at
         kiln_attach; pages touched then) and keeps across every
         reset, as kiln_arena_reserve does; a context whose reserve
         the block pool refuses is not made. More than memory_limit
         or the user address space: refused (FRAME_RESERVE_INVALID).
         0: none */ \
    X(kiln_budget_policy, frame_budget_policy, "frame_budget_policy", POLICY, "warn", "what a frame allocation past frame_budget does: warn or refuse") \
        /* KILN_BUDGET_WARN (0) or KILN_BUDGET_REFUSE;
         another value: refused (FRAME_BUDGET_POLICY_INVALID) */ \
    X(bool, frame_fallback, "frame_fallback", BOOL, "off", "frame allocations the block pool refuses come from the system allocator") \
        /* true: a frame allocation the block pool refuses
         (memory_limit, the OS) comes from the system allocator
         instead, freed at its arena's reset; one FRAME_FALLBACK
         warning per context per frame, counted
         (kiln_arena_stats.fallback_allocs). Off under a debug bit
         that sends every allocation through the debug layer
         (KILN_DEBUG_FILL, GUARDS, POISON, SITES, OWNERSHIP).
         false: NULL, as memory_limit says */ \
    X(uint64_t, frame_alloc_budget, "frame_alloc_budget", COUNT64, "0 (none)", "most allocations one context makes in one frame before a warning") \
        /* most allocations one context may make in one frame:
         frame allocations, pool allocations and handle
         allocations together, every context counted between two
         ends of the clock's frame. One FRAME_ALLOC_BUDGET_EXCEEDED
         warning per context and frame, at that frame's end, with
         the count (kiln_frame_record.allocs has the frame's sum).
         Summed at frame end from counters each context keeps
         anyway: free on the allocation paths. Exact but for a
         frame in which one of the context's pool or handle caches
         was flushed (detach, kiln_pool_flush) or its pool or table
         destroyed: that cache's allocations of the frame are not
         counted. 0: none */ \
    X(uint32_t, idle_spin_us, "idle_spin_us", SPIN_US, "50", "microseconds an idle worker or a wait spins before it sleeps, at most 1000000") \
        /* microseconds an idle worker keeps looking for work, a pause
         between looks, before it sleeps (a job submitted to sleeping
         workers costs a wake-up system call and its latency). While
         the runtime's threads (workers and attached threads)
         outnumber the CPUs the process may run on, every look gives
         the core away (sched_yield) instead of pausing; otherwise a
         spin that keeps failing gives it away every 8th look. The
         time is kiln_ctx_stats.idle_spin_ns, the sleeps sleeps and
         sleep_ns. One spin per idle period: a sleeping worker looks
         for work every 50 ms without being woken (a safety net),
         and sleeps again at once when there is none. At most KILN_MAX_IDLE_SPIN_US (IDLE_SPIN_INVALID
         beyond); 0: 50. A thread in kiln_wait that finds nothing
         it may run spins the same way, then sleeps until its
         counter reaches zero or work it may run is queued. */ \
    X(uint32_t, stuck_wait_ms, "stuck_wait_ms", COUNT, "2000", "milliseconds without progress before a wait logs JOB_WAIT_STUCK") \
        /* a wait (kiln_wait, kiln_wait_ex, kiln_frame_end's wait for
         its frame's jobs) that has made no progress this long (its
         counter, or the frame's count of jobs left, unchanged, no
         job run by it) logs one JOB_WAIT_STUCK warning saying where
         the jobs are, counts it (kiln_ctx_stats.waits_stuck), and
         keeps waiting. 0: 2000 */ \
    X(const char *, options, "", NONE, "NULL", "") \
        /* options in the syntax above, over the fields of this desc (for the program's
           command line or config file); read by kiln_create only. NULL: none */ \
    X(kiln_options_env, options_env, "", NONE, "read", "") \
        /* KILN_OPTIONS_ENV_IGNORE: KILN_OPTIONS is not read; 0: it is */ \
    X(kiln_log_threshold, log_level, "log", LEVEL, "info", "the least level logged: debug, info, warn, error or off") \
        /* KILN_LOG_THRESHOLD_*: messages below it are not delivered (kiln_log_threshold);
           kiln_log_set_level changes it at run time. 0: info */ \
    X(kiln_log_mode, log_mode, "log_mode", MODE, "sync", "sync: messages reach the sinks on the thread that logs; async: through a ring and kiln's log thread") \
        /* KILN_LOG_SYNC (0) or KILN_LOG_ASYNC (kiln_log_mode); another value: refused
           (LOG_MODE_INVALID) */ \
    X(bool, log_every_repeat, "log_every_repeat", BOOL, "off", "on: repeats are delivered one by one instead of folded") \
        /* false: repeats are folded in every mode. A message like one delivered in the
           same frame (the same item, the same text once its figures are set aside: the
           same object saying the same thing; a quoted name like 'enemy2' and a context's
           number are the object's, and stay) is counted instead of delivered (nor does it
           reach error_hook; a refused call is still counted in api_errors), and one
           LOG_REPEATS (INFO) says how many at the frame's end, or when a message takes
           its place; a frame is cut after about a second for this. A message below the
           threshold is not delivered, so it is no first one. A LOG_REPEATS that a full
           async ring drops counts as the repeats it told of in log_dropped. Never folded:
           APP_LOG, STATS_REPORT, LOG_REPEATS, LOG_DROPPED. true: every message is
           delivered, for tools (and tests) that count them */ \
    X(const char *, log_file, "log_file", PATH, "none", "a file every message is appended to, one line each") \
        /* a path, opened at kiln_create (appending, created 0644 when missing; one that
           cannot be opened refuses create: LOG_FILE_FAILED). Every delivered message is
           one line "kiln <level>: ITEM: details" written to it with one write(2); it
           takes the stderr default's place when desc.log is NULL. Copied at create
           (KILN_OPTION_PATH_MAX bytes at most with its NUL: OPTION_INVALID beyond);
           "log_file=" with nothing after it sets none. NULL: none */ \
    X(const char *, crash_file, "crash_file", PATH, "none", "a file a report of what kiln was doing is appended to on a fatal signal") \
        /* a path, opened at kiln_create (appending, created 0644 when missing; one that
           cannot be opened refuses create: CRASH_FILE_FAILED). Installs handlers for
           SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT (one set for the process, for at
           most KILN_CRASH_RUNTIMES runtimes at once: CRASH_REPORTERS_FULL beyond), which
           write kiln_crash_report_write's report into it and then hand the signal on:
           to the handler installed before, or to the default action, so the process
           dies of it and dumps core as before. Written with write(2) alone: no malloc,
           no lock, no stdio. The handlers run on the crashing thread's stack (a stack
           overflow needs the program's own sigaltstack: sysconf(_SC_SIGSTKSZ) bytes
           is enough; the report takes about 4 KiB above the kernel's signal frame,
           sysconf(_SC_MINSIGSTKSZ), keeping its larger buffers in static storage). kiln's own threads unblock the
           fault signals, so a creator that blocked every signal still gets reports of
           faults in them. kiln_destroy removes them
           where they are still kiln's. NULL: none */ \
    X(kiln_stats_schedule, stats, "stats", STATS, "off", "stats in the log: exit, frame:N, exit+frame:N or off") \
        /* when kiln_stats_print goes to the log (kiln_stats_schedule). The key takes
           "exit" (at kiln_destroy), "frame:N" (every N frames), both joined by +, or
           "off". In async mode the report, longer than the ring, is delivered as it is
           written, on the thread that writes it (the driver at frame end) */ \
    /* end of list */

/* The X that declares kiln_desc's members from KILN_DESC_FIELDS. */
#define KILN_DESC_MEMBER(type, field, key, kind, default_text, meaning) type field;

typedef struct kiln_desc {
    KILN_DESC_FIELDS(KILN_DESC_MEMBER)
} kiln_desc;

/* Creates a runtime. NULL on failure, with the reason logged as one ERROR (through
 * desc->log when given): a bad options string in desc->options or KILN_OPTIONS
 * (OPTION_INVALID; see KILN_DESC_FIELDS), a refused desc field (BLOCK_SIZE_INVALID, MEMORY_LIMIT_INVALID,
 * RESERVE_SIZE_INVALID, WORKER_COUNT_INVALID, WARN_PERCENT_INVALID, IDLE_SPIN_INVALID), no memory (RUNTIME_OUT_OF_MEMORY,
 * CONTEXT_OUT_OF_MEMORY, JOB_OUT_OF_MEMORY, SITES_OUT_OF_MEMORY for KILN_DEBUG_SITES' site
 * counts), the block pool refusing a worker's first
 * block, or a worker thread that cannot start (WORKER_START_FAILED). desc may be NULL;
 * every zero field means the default written beside it.
 * Concurrency: any thread; runtimes are independent of each other. */
KILN_API kiln_runtime *kiln_create(const kiln_desc *desc);

/* Destroys a runtime: stops the workers, each of which first runs the jobs still queued
 * on it (background ones included), and detaches every context still attached (logged,
 * CONTEXT_STILL_ATTACHED), which runs its queued and pinned jobs on the calling thread;
 * so a destroy takes as long as those jobs, and says how many ran (JOBS_RAN_AT_DESTROY,
 * INFO). Then logs every arena still alive (and frees it), and returns all memory to
 * the OS. No other thread may use rt during or after this call. NULL is a no-op. */
KILN_API void kiln_destroy(kiln_runtime *rt);

/* The calling thread (main, render, IO) gets a context of its own: its frame arena,
 * its job deque, its pool and handle caches. A thread attaches once;
 * a context must only be used by the thread that attached it.
 * Concurrency: any thread, concurrently with other attach/detach calls. */
KILN_API kiln_ctx *kiln_attach(kiln_runtime *rt);

/* ---- Inline fast paths --------------------------------------------------------------
 * kiln_frame_alloc, kiln_pool_alloc, kiln_pool_free, kiln_handle_get, kiln_handle_alloc,
 * kiln_handle_free, kiln_heap_alloc and kiln_heap_free are inline functions (GCC and Clang) that read and write a few
 * words of kiln's objects, their "heads" (kiln_ctx_head here, kiln_arena_head in
 * memory.h, kiln_pool_head and kiln_pool_cache_head in pool.h, kiln_handles_head and
 * kiln_handle_cache_head in handles.h, kiln_heap_head and kiln_heap_cache_head in
 * heap.h); everything else stays opaque, and every case
 * the inline code does not handle (a NULL or detached context, a full block, an empty
 * magazine or cache, a debug bit, a miss, a refused handle) calls the library's
 * function, which checks and logs exactly as before. The heads are kiln's: never write
 * them.
 * - Their layout has a number, KILN_HEAD_LAYOUT. With the inline paths on, kiln_attach
 *   passes the number of the headers the caller was compiled with
 *   (kiln_attach_layout), and a library with another layout refuses the attach: NULL,
 *   HEAD_LAYOUT_MISMATCH, counted in api_errors. That checks the code that attaches:
 *   build every part of a program that uses kiln (plugins, modules handed a context)
 *   against the same headers, or build the others with KILN_NO_INLINE. The function
 *   itself, (kiln_attach)(rt) or &kiln_attach, checks nothing.
 * - With the inline paths on, these names are function-like macros (kiln_attach,
 *   kiln_frame_alloc, kiln_frame_alloc_stamped, kiln_arena_alloc, kiln_pool_alloc,
 *   kiln_pool_free, kiln_handle_get, kiln_handle_alloc, kiln_handle_free,
 *   kiln_heap_alloc, kiln_heap_free): a struct
 *   member or a local of one of those names
 *   followed by "(" is expanded too. Define KILN_NO_INLINE before including kiln to
 *   call the library's functions instead; wrap a name in parentheses,
 *   (kiln_frame_alloc)(ctx, n, 16), to call the function once. Either way the behaviour
 *   is the same (a test compiles one client both ways), but for the one pointer window
 *   kiln/pool.h names at KILN_POOL_HEAD_NO_BLOCK. KILN_TRACK_SITES turns the
 *   inline paths off too (it needs the _at calls).
 * - A pointer that is no context is told apart by its first word, as the library's
 *   checks do: memory that starts with KILN_CTX_HEAD_MAGIC is taken for a context. */
/* 2: the handle caches joined the heads; 3: their reuse epochs grew to 64 bits; 4: the
 * general heap's head and cache. */
#define KILN_HEAD_LAYOUT 4u

#if !defined(KILN_NO_INLINE) && !defined(KILN_TRACK_SITES) && defined(__GNUC__)
#  define KILN_INLINE_PATHS 1
#endif

/* kiln_attach, after checking that layout (the caller's KILN_HEAD_LAYOUT) is the
 * library's: with another, NULL (HEAD_LAYOUT_MISMATCH through rt's log, counted in
 * api_errors), no context made. The inline paths' kiln_attach. Concurrency: kiln_attach's. */
KILN_API kiln_ctx *kiln_attach_layout(kiln_runtime *rt, uint32_t layout);

typedef struct kiln_arena_head kiln_arena_head;
typedef struct kiln_pool_cache_head kiln_pool_cache_head;
typedef struct kiln_handle_cache_head kiln_handle_cache_head;
struct kiln_heap_head;
struct kiln_heap_cache_head;

/* An attached context's first word: the inline paths test it before they read further,
 * so that a detached context or a pointer that is no context takes the checked path. */
#define KILN_CTX_HEAD_MAGIC 0x6b696c6e43545854ull

/* The first words of every context. The context's thread reads them. */
typedef struct kiln_ctx_head {
    uint64_t              magic;        /* KILN_CTX_HEAD_MAGIC while attached */
    kiln_arena_head      *frame;        /* the frame arena's head, or a closed head (no bump
                                           fits) while frame memory must take the checked
                                           path: detached, or KILN_DEBUG_CHECKS */
    kiln_pool_cache_head *pool_caches;  /* this context's pool caches, by pool index */
    kiln_handle_cache_head *handle_caches;  /* its handle-table caches, by table index */
    const struct kiln_heap_head *heap;      /* its runtime's general heap (kiln/heap.h) */
    struct kiln_heap_cache_head *heap_cache;   /* its cache of the heap */
} kiln_ctx_head;

/* KILN_OWNER_COUNT(p): adds 1 to *p, a uint64_t that one thread writes and other threads
 * read with relaxed atomic loads (the heads' counters, kiln's per-context statistics).
 * With one writer this is a relaxed load and a relaxed store of the sum; on x86-64 it is
 * one add to memory, whose store the readers see whole (an aligned 8-byte store), where
 * the two atomics compile to three instructions. Sanitizer builds, and other targets,
 * take the two atomics, so that ThreadSanitizer sees the write. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#  if defined(__has_feature)
#    if !__has_feature(thread_sanitizer) && !__has_feature(address_sanitizer) && \
        !__has_feature(memory_sanitizer)
#      define KILN_OWNER_COUNT_ASM 1
#    endif
#  else
#    define KILN_OWNER_COUNT_ASM 1
#  endif
#endif
#ifdef KILN_OWNER_COUNT_ASM
#  define KILN_OWNER_COUNT_(p) __asm__ __volatile__("addq $1, %0" : "+m"(*(p)))
#else
#  define KILN_OWNER_COUNT_(p) \
       __atomic_store_n((p), __atomic_load_n((p), __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED)
#endif
/* The array's size is negative, a compile error, for a counter that is not 8 bytes. */
#define KILN_OWNER_COUNT(p) \
    do { (void)sizeof(char[sizeof(*(p)) == 8 ? 1 : -1]); KILN_OWNER_COUNT_(p); } while (0)

#ifdef KILN_INLINE_PATHS
#  define kiln_attach(rt) kiln_attach_layout((rt), KILN_HEAD_LAYOUT)
/* Relaxed atomic loads and stores of head words that stats readers on other threads
 * read: plain moves on x86-64 and AArch64. */
#  define KILN_HEAD_LOAD(p)     __atomic_load_n((p), __ATOMIC_RELAXED)
#  define KILN_HEAD_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#  define KILN_HEAD_LIKELY(x)   __builtin_expect(!!(x), 1)
/* For the inline paths that GCC's size heuristics would leave out of line (a handle free
 * with its compare-and-swap): the point of them is to be inline. */
#  define KILN_HEAD_ALWAYS_INLINE __attribute__((__always_inline__)) inline

/* ctx's head when ctx is an attached context, else NULL. The context's thread: the only
 * thread that writes its magic once it is attached (its detach), so a plain read, which
 * the compiler may share between inline calls on the same context. */
static inline const kiln_ctx_head *kiln_ctx_head_of(const kiln_ctx *ctx) {
    const kiln_ctx_head *head = (const kiln_ctx_head *)(const void *)ctx;
    if (KILN_HEAD_LIKELY(head != NULL && head->magic == KILN_CTX_HEAD_MAGIC))
        return head;
    return NULL;
}
#endif

/* Releases a context and its frame arena. Called by the thread that attached it. First
 * it runs, on the calling thread, every job still queued on the context or pinned to it,
 * background ones included (a detach can take as long as they do); they count in
 * kiln_stats.jobs_run_at_detach.
 * Concurrency: concurrently with other attach/detach calls. NULL is a no-op. A context
 * used after its detach (detached twice, say) is refused with CONTEXT_DETACHED through
 * its runtime's log, until kiln_destroy (a later attach may reuse its memory). A
 * worker's context (CONTEXT_IS_WORKER) and a call from inside a job running on ctx
 * (CONTEXT_INSIDE_JOB) are refused: the context stays attached. */
KILN_API void kiln_detach(kiln_ctx *ctx);

/* Opens a frame and returns its number, starting at 1. One thread drives the frame
 * clock: the first context to call kiln_frame_begin becomes the driver; a call from
 * another context (FRAME_NOT_DRIVER), or a second begin without an end
 * (FRAME_ALREADY_OPEN), is logged and returns the current frame number (0 for a bad
 * ctx). So is a call with a worker's context (FRAME_WORKER_CONTEXT: a job's ctx on a
 * worker) or from inside a job (FRAME_INSIDE_JOB): the clock is driven between jobs. */
KILN_API uint64_t kiln_frame_begin(kiln_ctx *ctx);

/* Closes the frame: runs and waits until every frame job (from any thread, with or
 * without a counter; not background jobs) of this frame is done, wherever it runs, and
 * no job of a later frame (see "The frame a job belongs to" in kiln/jobs.h); then
 * resets this frame's job memory on every context and ctx's own frame arena, and
 * records budgets and high-water marks. Frame memory is never reset under a job of its
 * frame. The same refusals as kiln_frame_begin, and FRAME_END_WITHOUT_BEGIN for a
 * frame that is not open. Other attached threads reset their own frame arena (their
 * memory outside jobs) at their own frame boundary:
 * kiln_arena_reset(kiln_frame_arena(their_ctx)); kiln never resets an arena under a
 * thread that may be using it. Their kiln_wait may run other threads' frame jobs: those
 * jobs' memory belongs to the jobs' frame, not to the helping thread.
 * Called only by the driving context. */
KILN_API void kiln_frame_end(kiln_ctx *ctx);

/* The number of the frame now open, or of the last one closed; 0 before the first.
 * Concurrency: any thread (a relaxed read of the clock). */
KILN_API uint64_t kiln_frame_number(const kiln_runtime *rt);

/* The runtime a context belongs to; NULL, logged, for a NULL (CONTEXT_NULL), detached
 * (CONTEXT_DETACHED) or invalid (CONTEXT_INVALID) context. */
KILN_API kiln_runtime *kiln_ctx_runtime(const kiln_ctx *ctx);

/* The desc the runtime runs with, every layer applied and every default filled in, as
 * kiln_create would take it again: options NULL (its pairs are in the fields),
 * worker_count KILN_NO_WORKERS for none, reserve_size rounded up to whole blocks
 * (a reservation that would cross memory_limit is cut to it when it is made).
 * Concurrency: any thread. */
KILN_API kiln_desc kiln_runtime_desc(const kiln_runtime *rt);

/* The bytes kiln_option_source's out needs at most: the longest layer name and its NUL. */
#define KILN_OPTION_SOURCE_MAX 8

/* Writes the layer the value of option key came from into out, NUL-terminated: "default"
 * (kiln's), "desc" (a field the program's desc set), "options" (desc.options) or "env"
 * (KILN_OPTIONS); the keys are KILN_DESC_FIELDS' (README.md lists them). false, with out
 * holding "" (when cap is not 0), for a bad rt (RUNTIME_NULL, RUNTIME_INVALID), a key that
 * is none (OPTION_KEY_UNKNOWN), out NULL with cap not 0 (STATS_NULL_OUT) or a cap below
 * the name's length plus one (OPTION_OUT_TOO_SMALL), each counted in api_errors. The
 * values themselves: kiln_runtime_desc. Concurrency: any thread (read-only after
 * kiln_create). */
KILN_API bool kiln_option_source(kiln_runtime *rt, const char *key, char *out, size_t cap);

/* Gives the pages of every free block back to the OS (madvise), without unmapping
 * the address space; returns the bytes given back (free blocks trimmed before and not
 * used since, and blocks never used at all, hold no pages and count nothing). Blocks stay usable and are faulted in
 * again on their next use: gets take warm free blocks before trimmed ones. The same as
 * kiln_trim_step(rt, SIZE_MAX). Concurrency: any thread, lock-free with respect to
 * block gets and puts. */
KILN_API size_t kiln_trim(kiln_runtime *rt);

/* kiln_trim in slices, for a game that returns memory over several frames at a bounded
 * cost per frame: gives the pages of at most max_blocks free blocks back to the OS
 * (added to kiln_block_pool_stats.trimmed_bytes) and returns how many free blocks still
 * hold their pages after the step; call it again while that is not 0. max_blocks 0 gives
 * nothing back and returns that number. Free blocks that are put back later hold pages
 * again. Blocks stay usable, as after kiln_trim. A bad rt: 0, logged (RUNTIME_NULL,
 * RUNTIME_INVALID). Concurrency: any thread, while others allocate and free; a step
 * holds at most one free block away from them at a time. */
KILN_API size_t kiln_trim_step(kiln_runtime *rt, size_t max_blocks);

#ifdef __cplusplus
}
#endif

#endif /* KILN_CORE_H */
