/* kiln/memory.h — arenas: bump allocation, marks, reset; frame memory.
 *
 * What an arena does:
 * - An arena is a chain of blocks from the runtime's global block pool with a bump
 *   pointer. Allocation is a pointer bump.
 * - Marks record a position; releasing to a mark frees exactly what was allocated after
 *   it; reset frees everything.
 * - Allocations larger than a block get a dedicated mapping of their own. Release and
 *   reset give such mappings back to the OS, but for a few kept for reuse:
 *   - a release keeps at most as many as were live at once since the last reset (the
 *     largest), so mark / large allocation / release loops keep one round's worth;
 *   - a reset keeps those the frame used and gives back the rest.
 *
 * What an arena does NOT do:
 * - free anything one by one: only a release to a mark, a reset or a destroy frees;
 * - synchronise calls on one arena: they must not overlap (see Threads);
 * - reset a frame arena under memory that may still be in use (kiln_arena_reset refuses).
 *
 * Lifetimes:
 * - A context's frame arena is reset by kiln_frame_end (frame lifetime).
 * - Arenas made with kiln_arena_create live until their owner resets or destroys them
 *   (level, stage or load lifetimes).
 *
 * Threads:
 * - An arena has one owner thread at a time. Calls on the same arena must not overlap.
 * - Hand an arena to another thread only with a happens-before edge (a mutex, a job
 *   counter, a thread join).
 * - Statistics may be read from any thread.
 * - KILN_DEBUG_OWNERSHIP: a use (alloc, mark, release; a frame arena's reset) from a
 *   thread other than the owner is logged as ARENA_WRONG_THREAD and counted, and the
 *   call proceeds.
 *   - The owner: the thread that created the arena or last reset it; for a frame arena,
 *     its context's thread.
 *   - Hand an arena (any but a frame arena) over by resetting it on the new thread.
 *
 * Memory kept past its lifetime (a frame pointer used in the next frame, a pointer past
 * a release):
 * - KILN_DEBUG_POISON in an AddressSanitizer build: the released memory is poisoned, so
 *   the first access is reported as use-after-poison with its stack (under Valgrind's
 *   memcheck, as an invalid read or write).
 * - KILN_DEBUG_FILL: it reads 0xDD (fresh allocations read 0xCD).
 * - KILN_DEBUG_GUARDS: guard bytes around every allocation, checked when release, reset
 *   or destroy end it and, for arenas the frame-driving thread owns, by the audit at
 *   every kiln_frame_end (ARENA_GUARD_DAMAGED).
 * - The cost: the debug bits make every allocation take an out-of-line path and, with
 *   guards, a little more memory (it counts against frame_budget).
 *
 * Allocation sites:
 * - kiln_arena_alloc_at and kiln_frame_alloc_at take the caller's file and line. With
 *   KILN_DEBUG_SITES they are kept, named in guard reports and in kiln_destroy's list of
 *   arenas still alive (ARENA_LEAK_SITE). Without the debug bit, the _at calls are the
 *   plain ones.
 * - Define KILN_TRACK_SITES before including kiln and kiln_arena_alloc /
 *   kiln_frame_alloc become macros that pass __FILE__ and __LINE__. Wrap the name in
 *   parentheses, (kiln_frame_alloc)(ctx, n, 0), to call the function itself. */
#ifndef KILN_MEMORY_H
#define KILN_MEMORY_H

#include <kiln/core.h>
#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_arena kiln_arena;             /* one owner thread at a time */
typedef struct kiln_mark  { uint64_t opaque[2]; } kiln_mark;  /* {0}: the empty arena */

/* Creates an arena that grows by blocks from the global pool.
 * - name is copied (at most 47 bytes kept) and appears in every log message and in the
 *   stats; NULL names it "arena".
 * - Its bookkeeping is a small record on the heap (under 1 KiB), kept after
 *   kiln_arena_destroy until kiln_destroy, so that a call through a destroyed arena is
 *   always recognised, even when its blocks have gone to someone else: make arenas for
 *   long lifetimes (a level, a load), not one per frame.
 * - NULL on failure, with the reason logged: a bad rt (RUNTIME_NULL, RUNTIME_INVALID),
 *   memory_limit reached, no heap memory (ARENA_OUT_OF_MEMORY).
 * Concurrency: any thread, concurrently with other creates and destroys. */
KILN_API kiln_arena *kiln_arena_create(kiln_runtime *rt, const char *name);

/* Returns every block and mapping of the arena to the runtime. NULL is a no-op.
 * - A context's frame arena cannot be destroyed this way (ARENA_IS_FRAME_ARENA, ignored).
 * - A destroyed arena: every later call through it (destroy again, alloc, alloc_at,
 *   mark, release, reset, kiln_arena_stats_get) is refused with ARENA_DESTROYED
 *   (counted in api_errors) and returns NULL, the empty mark, or zeroed stats.
 * - So is a frame arena whose context detached, until a later kiln_attach reuses its
 *   record (like the context itself, a stale pointer then names the new one). */
KILN_API void kiln_arena_destroy(kiln_arena *arena);

/* size bytes aligned to align (a power of two from 1 to the block size; 0 means
 * alignof(max_align_t)).
 * - Any size: beyond what a block holds, a dedicated mapping. size 0 returns a valid
 *   aligned pointer that must not be dereferenced.
 * - NULL only:
 *   - when memory_limit is reached or the OS refuses memory: counted as a failure and
 *     logged once until an allocation succeeds again;
 *   - on bad input, logged: a NULL arena (ARENA_NULL), a bad alignment (ARENA_BAD_ALIGN),
 *     a destroyed arena (ARENA_DESTROYED).
 * Owner thread only. */
KILN_API void *kiln_arena_alloc(kiln_arena *arena, size_t size, size_t align);

/* The arena's current position, opening a scope: marks nest, and a release to a mark
 * ends the scopes of every mark taken after it. Owner thread only. */
KILN_API kiln_mark kiln_arena_mark(kiln_arena *arena);

/* Frees everything allocated after mark, and nothing before it.
 * - The mark stays valid (release to it as often as you like); the marks taken after it
 *   do not.
 * - Logged as ARENA_BAD_MARK and ignored: a mark from another arena, from before the
 *   last reset, or already released past (a release to an earlier mark, or to {0},
 *   ended it, even if the arena has grown back past its position since).
 * - The bound: nesting deeper than 32 marks, the outermost are checked by position only
 *   (a mark released past whose position is in use again then goes undetected).
 * Owner thread only. */
KILN_API void kiln_arena_release(kiln_arena *arena, kiln_mark mark);

/* Frees everything.
 * - Keeps as many blocks as recent resets needed (the most any of the last frames used,
 *   shrinking by one block per reset after a spike), so a steady-state frame takes no
 *   block from the global pool.
 * - A frame arena is never reset under memory that may still be in use, so these are
 *   refused and the arena left as it is:
 *   - a worker's frame arena, which kiln_frame_end resets (other jobs of the frame may
 *     use its memory), from a job or any other thread: ARENA_WORKER_FRAME_RESET;
 *   - the driver's while its frame is open: ARENA_DRIVER_FRAME_RESET;
 *   - any frame arena from inside a job running on its thread (the jobs that called it
 *     may hold memory in it): ARENA_RESET_INSIDE_JOB.
 * Owner thread only. */
KILN_API void kiln_arena_reset(kiln_arena *arena);

/* Takes blocks from the global pool now, so that bytes more can be allocated from the
 * arena's current position before it touches the pool again (block space: allocations
 * that each fit a block; the tail a block cannot fit is not counted), and touches their
 * pages now rather than in the first frame that uses them. Every later reset keeps at
 * least the blocks that hold bytes from an empty arena (the largest reserve asked so far
 * stays: it never decays). kiln_desc.frame_reserve does this for every frame arena.
 * - Debug bits that keep a record of every allocation (FILL, GUARDS, POISON, SITES;
 *   kiln/core.h): the reserve also holds room for one record per 256 bytes reserved, so
 *   allocations of 256 bytes or more on average take no block past the reserve for their
 *   records (smaller ones may take record blocks once; they are kept). GUARDS' guard
 *   bytes come out of the reserved bytes.
 * - true when the blocks are held (bytes 0: always).
 * - false, logged, the arena left usable:
 *   - memory_limit reached or the OS refused a block: ARENA_RESERVE_FAILED (after the
 *     block pool's own MEMORY_LIMIT_REACHED or OS_MAP_FAILED); the blocks taken so far
 *     are kept as spares until resets give them back, the floor is not raised;
 *   - bad input: a NULL arena (ARENA_NULL), a destroyed one (ARENA_DESTROYED), more
 *     bytes than the user address space (ARENA_RESERVE_TOO_LARGE), counted in
 *     api_errors.
 * - With KILN_DEBUG_OWNERSHIP, a call from a thread that does not own the arena is
 *   reported (ARENA_WRONG_THREAD) and proceeds, as for kiln_arena_mark.
 * Concurrency: owner thread only (a frame arena: its context's thread, between frames
 * for a worker's); other threads may use the global pool meanwhile. */
KILN_API bool kiln_arena_reserve(kiln_arena *arena, size_t bytes);

/* The frame memory ctx's allocations take now. Outside jobs, the thread's own frame
 * arena: reset by kiln_frame_end for the driving context, by the owner itself for other
 * attached threads. Inside a frame job, the context's job arena of the job's frame
 * (kiln/jobs.h, "The frame a job belongs to"), reset by the frame end of that frame; no
 * kiln_arena_reset of it is allowed. Its stats (kiln_arena_stats_get on the own arena,
 * kiln_stats_arenas) count the job arenas' memory too. */
KILN_API kiln_arena *kiln_frame_arena(kiln_ctx *ctx);

/* Frame memory: inside a frame job, lives until the frame the job belongs to has
 * ended, on whichever thread the job ran; outside jobs, until the next kiln_frame_end
 * on the driver, or for another attached thread until it resets its frame arena.
 * - NULL inside a job whose frame memory could not be made (the first job of a frame
 *   parity on a context makes its job arena: memory_limit or the heap may refuse;
 *   JOB_FRAME_MEMORY_NONE, not counted as misuse).
 * - Past desc.frame_budget: with KILN_BUDGET_WARN (the default) it succeeds, with one
 *   FRAME_BUDGET_EXCEEDED per frame; with KILN_BUDGET_REFUSE it returns NULL, counted
 *   (kiln_arena_stats.budget_refusals and failures), with one FRAME_BUDGET_REFUSED per
 *   frame. A frame whose high-water mark reaches desc.warn_percent of the budget starts
 *   a FRAME_BUDGET_NEAR episode (one warning, judged at the frame's reset).
 * - When the block pool refuses (memory_limit, the OS): NULL, or with desc.frame_fallback
 *   memory from the system allocator, freed at the arena's reset (one FRAME_FALLBACK per
 *   frame; kiln_arena_stats.fallback_allocs, fallback_bytes; not in bytes_in_use and not
 *   judged against the budget). A release to a mark frees no such allocation.
 * - NULL, logged as the context check logs it, for a NULL or detached context
 *   (CONTEXT_NULL, CONTEXT_DETACHED).
 * - NULL inside a background job with KILN_DEBUG_CHECKS (JOB_BACKGROUND_FRAME_ALLOC).
 * The context's thread only. */
KILN_API void *kiln_frame_alloc(kiln_ctx *ctx, size_t size, size_t align);

/* kiln_frame_alloc for an allocator that keeps allocating for one container (kiln.hpp's
 * frame_allocator): *stamp names the frame of the container's first allocation.
 * - *stamp 0: this is the first; it is set to the frame arena's current reset count
 *   (plus one, so never 0 again).
 * - With KILN_DEBUG_CHECKS, a stamp from before the frame arena's last reset is a
 *   container that grows after its frame ended: growing would copy its elements out of
 *   reset memory into the new frame. NULL, logged and counted (FRAME_MEMORY_STALE, naming
 *   the context, the frame and how many resets ago the container was made). Without the
 *   bit the stamp is not compared: kiln_frame_alloc.
 * - stamp NULL: kiln_frame_alloc. The other refusals are kiln_frame_alloc's.
 * The context's thread only. */
KILN_API void *kiln_frame_alloc_stamped(kiln_ctx *ctx, size_t size, size_t align, uint64_t *stamp);

/* kiln_arena_alloc and kiln_frame_alloc with the caller's site (file, line), kept
 * under KILN_DEBUG_SITES; see "Allocation sites" above. file must outlive the arena
 * (a string literal such as __FILE__). */
KILN_API void *kiln_arena_alloc_at(kiln_arena *arena, size_t size, size_t align,
                                   const char *file, int line);
KILN_API void *kiln_frame_alloc_at(kiln_ctx *ctx, size_t size, size_t align,
                                   const char *file, int line);

#ifdef KILN_TRACK_SITES
#  define kiln_arena_alloc(arena, size, align) \
       kiln_arena_alloc_at((arena), (size), (align), __FILE__, __LINE__)
#  define kiln_frame_alloc(ctx, size, align) \
       kiln_frame_alloc_at((ctx), (size), (align), __FILE__, __LINE__)
#endif

/* ---- Typed and overflow-checked helpers: arrays, strings, growing ----
 *
 * Arrays of T, with count * sizeof(T) checked:
 *   particle *ps = KILN_FRAME_NEW(ctx, particle, n);        // NULL when it overflows
 *   node *nodes = KILN_ARENA_NEW(level, node, node_count);
 *
 * Strings that live as long as the frame or the arena, never truncated:
 *   const char *label = kiln_frame_printf(ctx, "enemy %u (%s)", id, kind);
 *
 * A growing frame array (the last allocation grows in place while nothing else was
 * allocated after it; otherwise it moves, its contents copied):
 *   kiln_arena *frame = kiln_frame_arena(ctx);
 *   hit *hits = NULL;
 *   size_t count = 0, cap = 0;
 *   for (size_t i = 0; i < candidates; i++) {
 *       if (count == cap) {
 *           size_t grown = cap ? 2 * cap : 16;
 *           hit *more = (hit *)kiln_arena_grow(frame, hits, cap * sizeof *hits,
 *                                              grown * sizeof *hits, KILN_ALIGNOF(hit));
 *           if (!more) break;            // logged; hits still holds its count items
 *           hits = more;
 *           cap = grown;
 *       }
 *       hits[count++] = test_candidate(i);
 *   }
 *
 * Every call here has the thread contract of the allocation it makes: kiln_frame_* the
 * context's thread only, kiln_arena_* the arena's owner thread only. */

#ifndef KILN_ALIGNOF   /* kiln/handles.h defines it the same way */
#  ifdef __cplusplus
#    define KILN_ALIGNOF(T) alignof(T)
#  else
#    define KILN_ALIGNOF(T) _Alignof(T)
#  endif
#endif

/* Lets -Wformat check the callers of the printf calls (compilers without the attribute
 * check nothing). */
#if defined(__GNUC__) || defined(__clang__)
#  define KILN_FORMAT_CHECK(fmt_arg, first_arg) \
       __attribute__((format(printf, fmt_arg, first_arg)))
#else
#  define KILN_FORMAT_CHECK(fmt_arg, first_arg)
#endif

/* count elements of size bytes each, aligned to align: kiln_arena_alloc and
 * kiln_frame_alloc of count * size bytes, with the same refusals (NULL, logged the
 * same way) and the same thread contract.
 * - NULL when count * size overflows: ARENA_SIZE_OVERFLOW, naming the arena (for the
 *   frame call, the context too) and both figures, counted in api_errors.
 * - count or size 0: a valid aligned pointer that must not be dereferenced.
 * Concurrency: kiln_arena_alloc_array the arena's owner thread only;
 * kiln_frame_alloc_array the context's thread only. */
KILN_API void *kiln_arena_alloc_array(kiln_arena *arena, size_t count, size_t size,
                                      size_t align);
KILN_API void *kiln_frame_alloc_array(kiln_ctx *ctx, size_t count, size_t size, size_t align);

/* The same with the caller's site (see "Allocation sites" above): with KILN_TRACK_SITES
 * the two calls above, and so KILN_ARENA_NEW and KILN_FRAME_NEW, pass __FILE__ and
 * __LINE__ to these. Concurrency: as the calls above. */
KILN_API void *kiln_arena_alloc_array_at(kiln_arena *arena, size_t count, size_t size,
                                         size_t align, const char *file, int line);
KILN_API void *kiln_frame_alloc_array_at(kiln_ctx *ctx, size_t count, size_t size,
                                         size_t align, const char *file, int line);

#ifdef KILN_TRACK_SITES
#  define kiln_arena_alloc_array(arena, count, size, align) \
       kiln_arena_alloc_array_at((arena), (count), (size), (align), __FILE__, __LINE__)
#  define kiln_frame_alloc_array(ctx, count, size, align) \
       kiln_frame_alloc_array_at((ctx), (count), (size), (align), __FILE__, __LINE__)
#endif

/* T *: count objects of type T (uninitialised) from the arena or the context's frame
 * arena, at T's size and alignment: the array calls above (NULL on overflow, logged). C11,
 * C++17 and later. */
#ifdef __cplusplus
#  define KILN_MEMORY_AS(T, p) static_cast<T *>(p)
#else
#  define KILN_MEMORY_AS(T, p) ((T *)(p))
#endif
#define KILN_ARENA_NEW(arena, T, count) \
    KILN_MEMORY_AS(T, kiln_arena_alloc_array((arena), (count), sizeof(T), KILN_ALIGNOF(T)))
#define KILN_FRAME_NEW(ctx, T, count) \
    KILN_MEMORY_AS(T, kiln_frame_alloc_array((ctx), (count), sizeof(T), KILN_ALIGNOF(T)))

/* A formatted string in the arena (kiln_arena_*) or the context's frame arena
 * (kiln_frame_*), as long as vsnprintf makes it: measured first, then allocated
 * (align 1) and formatted, so it is never truncated.
 * - NULL, logged, on failure: the allocation's refusals (ARENA_NULL, ARENA_DESTROYED,
 *   CONTEXT_NULL, CONTEXT_DETACHED, JOB_BACKGROUND_FRAME_ALLOC, memory_limit reached); a
 *   NULL fmt (ARENA_STRING_NULL); a format vsnprintf fails on, such as a wide string
 *   the locale cannot encode or a result longer than INT_MAX (ARENA_FORMAT_FAILED). The
 *   refusals of bad input are counted in api_errors.
 * - vprintf leaves ap as vsnprintf does (indeterminate: va_end it, do not reuse it).
 * Concurrency: the arena's owner thread only; the context's thread only. */
KILN_API char *kiln_arena_printf(kiln_arena *arena, const char *fmt, ...) KILN_FORMAT_CHECK(2, 3);
KILN_API char *kiln_arena_vprintf(kiln_arena *arena, const char *fmt, va_list ap)
    KILN_FORMAT_CHECK(2, 0);
KILN_API char *kiln_frame_printf(kiln_ctx *ctx, const char *fmt, ...) KILN_FORMAT_CHECK(2, 3);
KILN_API char *kiln_frame_vprintf(kiln_ctx *ctx, const char *fmt, va_list ap)
    KILN_FORMAT_CHECK(2, 0);

/* A copy of s (of any length) in the arena or the frame arena. NULL, logged, on
 * failure: the allocation's refusals, or a NULL s (ARENA_STRING_NULL, counted).
 * Concurrency: the arena's owner thread only; the context's thread only. */
KILN_API char *kiln_arena_strdup(kiln_arena *arena, const char *s);
KILN_API char *kiln_frame_strdup(kiln_ctx *ctx, const char *s);

/* Resizes ptr, an allocation of old_size bytes in arena, to new_size bytes at align
 * (as kiln_arena_alloc takes it; 0: alignof(max_align_t)); returns where it is now.
 * - In place when ptr is the arena's last allocation (nothing was allocated from the
 *   arena after it), the current block has room for new_size, ptr is aligned to align,
 *   and no mark was taken after it: a mark's scope starts at its position, so a grow
 *   never moves the arena's position past or below a live mark taken after ptr (the
 *   allocation then moves; a release to that mark leaves the moved copy).
 * - Otherwise a new allocation of new_size bytes with the first old_size of them copied
 *   from ptr; ptr itself stays allocated (until a release past it, a reset or a
 *   destroy, like every arena allocation). Allocations larger than a block (dedicated
 *   mappings) always move.
 * - ptr NULL: kiln_arena_alloc(arena, new_size, align).
 * - new_size <= old_size: shrinks in place when ptr is last as above (the freed tail
 *   is the arena's again), else returns ptr unchanged (if it is aligned to align).
 * - The frame budget: growing in place counts toward it like an allocation; a grow that
 *   would cross it unwarned goes through the allocation path, which warns.
 * - Debug bits: the grown allocation keeps its record and site; with KILN_DEBUG_GUARDS
 *   its back guard moves to the new end (the old guards are checked first, "at grow"),
 *   so a write past new_size is reported (ARENA_GUARD_DAMAGED) at release, reset or
 *   destroy; KILN_DEBUG_FILL fills grown bytes with 0xCD and bytes a shrink gives up
 *   with 0xDD; KILN_DEBUG_POISON unpoisons grown bytes and poisons given-up ones.
 * - ptr must be an allocation of this arena still in use, and old_size at most its
 *   size: the caller's contract. With KILN_DEBUG_CHECKS a ptr outside the memory the
 *   arena has in use is refused (ARENA_GROW_FOREIGN, counted; NULL) before it is read.
 * - NULL on failure, ptr still valid and unchanged: the allocation's refusals
 *   (ARENA_NULL, ARENA_DESTROYED, ARENA_BAD_ALIGN, memory_limit reached).
 * Concurrency: the arena's owner thread only (KILN_DEBUG_OWNERSHIP reports others). */
KILN_API void *kiln_arena_grow(kiln_arena *arena, void *ptr, size_t old_size, size_t new_size,
                               size_t align);

/* ---- The inline bump (see "Inline fast paths" in core.h) ----
 * An arena's first words: the bump cursor, its bound and the allocation count. The
 * library closes the inline path (limit 0, cursor 1: no bump fits) whenever an
 * allocation must be checked: a destroyed arena, a debug bit, the budget point.
 * kiln_arena_alloc and kiln_frame_alloc bump here when the alignment is a power of two
 * up to 4096 (the smallest block size) or 0, and call the library otherwise; they are
 * the same calls with the same results as the library's, documented above. */
struct kiln_arena_head {
    uintptr_t cursor;   /* next free byte (relaxed atomics: stats readers) */
    uintptr_t limit;    /* the inline bump's bound (the owner's) */
    uint64_t  allocs;   /* successful allocations (relaxed atomics: stats readers) */
};

#define KILN_INLINE_MAX_ALIGN 4096u

#ifdef __cplusplus
#  define KILN_ALIGNOF_MAX_ALIGN_T alignof(max_align_t)
#else
#  define KILN_ALIGNOF_MAX_ALIGN_T _Alignof(max_align_t)
#endif

#ifdef KILN_INLINE_PATHS
/* The bump itself: true with *out set when it fits (else the caller calls the library).
 * A constant alignment folds the test and the rounding away. */
static inline bool kiln_head_bump(kiln_arena_head *head, size_t size, size_t align, void **out) {
    if (align == 0) align = KILN_ALIGNOF_MAX_ALIGN_T;
    if (((align - 1) & align) != 0 || align > KILN_INLINE_MAX_ALIGN) return false;
    uintptr_t start = (KILN_HEAD_LOAD(&head->cursor) + (align - 1)) & ~(uintptr_t)(align - 1);
    uintptr_t end;
    if (__builtin_add_overflow(start, size, &end) || end > head->limit) return false;
    KILN_HEAD_STORE(&head->cursor, end);
    KILN_OWNER_COUNT(&head->allocs);
    *out = (void *)start;
    return true;
}

static inline void *kiln_arena_alloc_inline(kiln_arena *arena, size_t size, size_t align) {
    void *p;
    if (KILN_HEAD_LIKELY(arena != NULL &&
                         kiln_head_bump((kiln_arena_head *)(void *)arena, size, align, &p)))
        return p;
    return (kiln_arena_alloc)(arena, size, align);
}

static inline void *kiln_frame_alloc_inline(kiln_ctx *ctx, size_t size, size_t align) {
    const kiln_ctx_head *head = kiln_ctx_head_of(ctx);
    void *p;
    if (KILN_HEAD_LIKELY(head != NULL && kiln_head_bump(head->frame, size, align, &p))) return p;
    return (kiln_frame_alloc)(ctx, size, align);
}

/* Without KILN_DEBUG_CHECKS the stamp is only set, by the first allocation (the library
 * call); with it the frame head is closed, so the library compares every stamp. */
static inline void *kiln_frame_alloc_stamped_inline(kiln_ctx *ctx, size_t size, size_t align,
                                                    uint64_t *stamp) {
    const kiln_ctx_head *head = kiln_ctx_head_of(ctx);
    void *p;
    if (KILN_HEAD_LIKELY(head != NULL && (stamp == NULL || *stamp != 0) &&
                         kiln_head_bump(head->frame, size, align, &p)))
        return p;
    return (kiln_frame_alloc_stamped)(ctx, size, align, stamp);
}

#  define kiln_frame_alloc_stamped(ctx, size, align, stamp) \
       kiln_frame_alloc_stamped_inline((ctx), (size), (align), (stamp))
#  define kiln_arena_alloc(arena, size, align) kiln_arena_alloc_inline((arena), (size), (align))
#  define kiln_frame_alloc(ctx, size, align)   kiln_frame_alloc_inline((ctx), (size), (align))
#endif

#ifdef __cplusplus
}
#endif

#endif /* KILN_MEMORY_H */
