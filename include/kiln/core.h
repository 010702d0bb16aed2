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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

typedef enum kiln_log_level {
    KILN_LOG_DEBUG, KILN_LOG_INFO, KILN_LOG_WARN, KILN_LOG_ERROR
} kiln_log_level;

/* Receives one complete message per call, without a trailing newline. Every
 * message starts with a stable item name in capitals followed by ": " (for
 * example "ARENA_BAD_ALIGN: arena 'level': alignment 24 is not a power of two"),
 * so tools and tests can match the item and not the prose. May be called from
 * any thread at the same time; the callback must be thread-safe. */
typedef void (*kiln_log_fn)(void *user, kiln_log_level level, const char *message);

/* Debug bits for kiln_desc.debug. Each costs one well-predicted branch when off. */
enum {
    KILN_DEBUG_NONE   = 0,
    KILN_DEBUG_CHECKS = 1u << 0   /* every pool checks frees for double frees and interior
                                     pointers (as KILN_POOL_CHECKED does for one pool) */
};

/* kiln_desc.worker_count for a runtime with no worker threads (jobs then run on the
 * threads that wait for them: kiln_wait and kiln_frame_end). */
#define KILN_NO_WORKERS UINT32_MAX

typedef struct kiln_desc {
    uint32_t    worker_count;  /* worker threads; 0: one per online CPU minus one for the
                                  attaching thread; KILN_NO_WORKERS: none */
    size_t      block_size;    /* global block pool granule, a power of two from 4 KiB to
                                  1 GiB; 0: 64 KiB */
    size_t      memory_limit;  /* most bytes the block pool may reserve from the OS, counting
                                  dedicated mappings of large arena allocations; 0: no limit */
    size_t      frame_budget;  /* frame-arena bytes per context per frame before a warning
                                  (one warning per context per frame); 0: none */
    uint32_t    debug;         /* KILN_DEBUG_* bits; 0: none */
    kiln_log_fn log;           /* NULL: one line per message on stderr ("kiln warn: ...") */
    void       *log_user;      /* passed to log unchanged */
    size_t      reserve_size;  /* bytes asked of the OS per reservation, rounded up to whole
                                  blocks; 0: 64 blocks (4 MiB with 64 KiB blocks) */
} kiln_desc;

/* Creates a runtime. NULL on failure, with the reason logged (through desc->log when
 * given). desc may be NULL; every zero field means the default written beside it.
 * Concurrency: any thread; runtimes are independent of each other. */
KILN_API kiln_runtime *kiln_create(const kiln_desc *desc);

/* Destroys a runtime: logs every context still attached and every arena still
 * alive (and frees them), then returns all memory to the OS. No other thread may
 * use rt during or after this call. NULL is a no-op. */
KILN_API void kiln_destroy(kiln_runtime *rt);

/* The calling thread (main, render, IO) gets a context of its own: a frame arena
 * now, job deque and pool caches with the later layers. A thread attaches once;
 * a context must only be used by the thread that attached it.
 * Concurrency: any thread, concurrently with other attach/detach calls. */
KILN_API kiln_ctx *kiln_attach(kiln_runtime *rt);

/* Releases a context and its frame arena. Called by the thread that attached it.
 * Concurrency: concurrently with other attach/detach calls. NULL is a no-op. */
KILN_API void kiln_detach(kiln_ctx *ctx);

/* Opens a frame and returns its number, starting at 1. One thread drives the frame
 * clock: the first context to call kiln_frame_begin becomes the driver; a call from
 * another context, or a second begin without an end, is logged and returns the
 * current frame number (0 for a bad ctx). */
KILN_API uint64_t kiln_frame_begin(kiln_ctx *ctx);

/* Closes the frame: runs and waits until every frame job (from any thread, with or
 * without a counter; not background jobs) is done, then resets the frame arenas of the
 * workers and of ctx and records budgets and high-water marks. Other attached threads
 * reset their own frame arena at their own frame boundary:
 * kiln_arena_reset(kiln_frame_arena(their_ctx)); kiln never resets an arena under a
 * thread that may be using it. From its first such reset on, that thread's kiln_wait
 * runs only its own jobs, never another thread's frame job: that job's frame memory
 * would come from this thread's arena and vanish at this thread's boundary.
 * Called only by the driving context. */
KILN_API void kiln_frame_end(kiln_ctx *ctx);

/* The number of the frame now open, or of the last one closed; 0 before the first.
 * Concurrency: any thread (a relaxed read of the clock). */
KILN_API uint64_t kiln_frame_number(const kiln_runtime *rt);

/* The runtime a context belongs to; NULL for NULL. */
KILN_API kiln_runtime *kiln_ctx_runtime(const kiln_ctx *ctx);

/* The desc the runtime runs with, every default filled in. Concurrency: any thread. */
KILN_API kiln_desc kiln_runtime_desc(const kiln_runtime *rt);

/* Gives the pages of every free block back to the OS (madvise), without unmapping
 * the address space; returns the bytes given back. Blocks stay usable and are
 * faulted in again on their next use. Concurrency: any thread, lock-free with
 * respect to block gets and puts. */
KILN_API size_t kiln_trim(kiln_runtime *rt);

#ifdef __cplusplus
}
#endif

#endif /* KILN_CORE_H */
