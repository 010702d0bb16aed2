/* kiln/log_items.h — every item kiln logs, in one list: its name, the level it is
 * logged at, and one line on what it means. kiln/core.h makes the kiln_log_item enum,
 * kiln_log_item_name and kiln_log_item_level from it.
 *
 * Each message reads "NAME: details". The names are stable: match them (or the enum
 * constants KILN_LOGITEM_<NAME>), never the details. The enum's numbers follow the order
 * of this list, which may change between versions; store names, not numbers.
 *
 * The list is an X-macro: KILN_LOG_ITEMS(X) expands X(name, level, meaning) once per
 * item, level being DEBUG, INFO, WARN or ERROR (KILN_LOG_<level>). For example, a table
 * of meanings: #define MEANING(name, level, text) text, then
 * const char *meanings[] = { KILN_LOG_ITEMS(MEANING) };
 *
 * Every ERROR also reaches desc.error_hook. A refused call (bad input, misuse) is an
 * ERROR counted in kiln_stats.api_errors when the object names its runtime. */
#ifndef KILN_LOG_ITEMS_H
#define KILN_LOG_ITEMS_H

#define KILN_LOG_ITEMS(X) \
    /* ---- creation: kiln_create's desc and resources ---- */ \
    X(BLOCK_SIZE_INVALID, ERROR, "desc.block_size is not a power of two from the page size to 1 GiB") \
    X(MEMORY_LIMIT_INVALID, ERROR, "desc.memory_limit is smaller than one block") \
    X(WARN_PERCENT_INVALID, ERROR, "desc.warn_percent is over 100") \
    X(FRAME_RESERVE_INVALID, ERROR, "desc.frame_reserve is more than desc.memory_limit or the user address space") \
    X(FRAME_BUDGET_POLICY_INVALID, ERROR, "desc.frame_budget_policy is not a KILN_BUDGET_* value") \
    X(RESERVE_SIZE_INVALID, ERROR, "desc.reserve_size is more than one reservation may be") \
    X(WORKER_COUNT_INVALID, ERROR, "desc.worker_count is above KILN_MAX_WORKERS") \
    X(IDLE_SPIN_INVALID, ERROR, "desc.idle_spin_us is above KILN_MAX_IDLE_SPIN_US") \
    X(OPTION_INVALID, ERROR, "an options string (desc.options, KILN_OPTIONS) has a value its key does not take, or a pair without =") \
    X(OPTION_UNKNOWN, WARN, "an options string names a key kiln does not have; the pair is ignored") \
    X(LOG_MODE_INVALID, ERROR, "desc.log_mode is not a kiln_log_mode") \
    X(LOG_START_FAILED, ERROR, "the async log's ring or its thread could not be made; create is refused") \
    X(CRASH_FILE_FAILED, ERROR, "desc.crash_file (crash_file=) could not be opened; create is refused") \
    X(CRASH_REPORTERS_FULL, ERROR, "KILN_CRASH_RUNTIMES runtimes have a crash_file already; create is refused") \
    X(CRASH_FD_INVALID, ERROR, "kiln_crash_report_write was given a negative descriptor") \
    X(CRASH_WRITE_FAILED, WARN, "kiln_crash_report_write could not write the whole report (a bad or closed descriptor, a reader gone, a full non-blocking one)") \
    X(LOG_FILE_FAILED, ERROR, "desc.log_file (log_file=) could not be opened; create is refused") \
    X(OPTION_KEY_UNKNOWN, ERROR, "kiln_option_source was asked for a key kiln does not have") \
    X(OPTION_OUT_TOO_SMALL, ERROR, "kiln_option_source's out cannot hold the layer's name (KILN_OPTION_SOURCE_MAX)") \
    X(DEBUG_UNKNOWN_BITS, WARN, "desc.debug has bits that are no KILN_DEBUG_* bit; they are dropped") \
    X(DEBUG_GUARD_PAGES_OFF, WARN, "KILN_DEBUG_GUARD_PAGES needs blocks of two pages or more; it is switched off") \
    X(RUNTIME_OUT_OF_MEMORY, ERROR, "no heap memory for the runtime, its worker table or the block pool's address map") \
    X(WORKER_START_FAILED, ERROR, "a worker thread could not start") \
    /* ---- the runtime argument ---- */ \
    X(RUNTIME_NULL, ERROR, "the runtime argument is NULL") \
    X(RUNTIME_INVALID, ERROR, "the runtime argument is not a live runtime") \
    /* ---- the block pool: memory from the OS ---- */ \
    X(BLOCK_POOL_OUT_OF_MEMORY, ERROR, "no heap memory for the record and address map of a new reservation") \
    X(MEMORY_LIMIT_REACHED, ERROR, "a reservation or a large mapping would cross desc.memory_limit") \
    X(MEMORY_LIMIT_NEAR, WARN, "the block pool's reserved bytes reached desc.warn_percent of desc.memory_limit") \
    X(BLOCK_COUNT_LIMIT, ERROR, "the block pool holds as many blocks as its free list can count") \
    X(OS_MAP_FAILED, ERROR, "the OS refused a mapping") \
    X(BLOCK_POOL_BLOCKS_LIVE, WARN, "blocks are still in use when the block pool is destroyed; they are unmapped") \
    /* ---- contexts ---- */ \
    X(CONTEXT_NULL, ERROR, "the context argument is NULL") \
    X(CONTEXT_INVALID, ERROR, "the context argument is not a kiln context") \
    X(CONTEXT_DETACHED, ERROR, "the context has been detached") \
    X(HEAD_LAYOUT_MISMATCH, ERROR, "kiln_attach from code compiled against headers whose inline layout differs from the library's") \
    X(CONTEXT_IS_WORKER, ERROR, "kiln_detach of a worker's context (kiln_destroy detaches it)") \
    X(CONTEXT_INSIDE_JOB, ERROR, "kiln_detach from inside a job running on the context") \
    X(CONTEXT_OUT_OF_MEMORY, ERROR, "no heap memory for a context, or no block for its frame arena (memory_limit, frame_reserve)") \
    X(CONTEXT_TOO_MANY, ERROR, "every job queue slot is in use; no more contexts") \
    X(CONTEXT_STILL_ATTACHED, WARN, "kiln_destroy found a context still attached; it detaches it") \
    /* ---- the frame clock ---- */ \
    X(FRAME_NOT_DRIVER, ERROR, "a frame clock call from a context that does not drive the clock") \
    X(FRAME_ALREADY_OPEN, ERROR, "kiln_frame_begin while the frame is open") \
    X(FRAME_END_WITHOUT_BEGIN, ERROR, "kiln_frame_end while no frame is open") \
    X(FRAME_WORKER_CONTEXT, ERROR, "a frame clock call with a worker's context") \
    X(FRAME_INSIDE_JOB, ERROR, "a frame clock call from inside a job") \
    X(FRAME_BUDGET_EXCEEDED, WARN, "a frame arena used more than desc.frame_budget in one frame") \
    X(FRAME_MEMORY_STALE, ERROR, "a frame container grew after the frame it was made in had ended (KILN_DEBUG_CHECKS)") \
    X(FRAME_BUDGET_NEAR, WARN, "a frame arena's frame reached desc.warn_percent of desc.frame_budget") \
    X(FRAME_BUDGET_REFUSED, WARN, "KILN_BUDGET_REFUSE: a frame allocation past desc.frame_budget returned NULL (once per frame)") \
    X(FRAME_FALLBACK, WARN, "desc.frame_fallback: the system allocator served a frame allocation the block pool refused (once per frame)") \
    X(FRAME_ALLOC_BUDGET_EXCEEDED, WARN, "a context made more than desc.frame_alloc_budget allocations (frame, pool and handle) in one frame") \
    /* ---- arenas ---- */ \
    X(ARENA_NULL, ERROR, "the arena argument is NULL") \
    X(ARENA_DESTROYED, ERROR, "a call on an arena that was destroyed") \
    X(ARENA_BAD_ALIGN, ERROR, "an arena allocation's alignment is not a power of two up to the arena's largest") \
    X(ARENA_SIZE_OVERFLOW, ERROR, "an arena allocation's size cannot be represented") \
    X(ARENA_STRING_NULL, ERROR, "kiln_frame_printf / kiln_arena_printf / the strdup calls with a NULL format or string") \
    X(ARENA_FORMAT_FAILED, ERROR, "kiln_frame_printf / kiln_arena_printf: vsnprintf failed on the format (an encoding error, a length past INT_MAX)") \
    X(ARENA_GROW_FOREIGN, ERROR, "KILN_DEBUG_CHECKS: kiln_arena_grow of a pointer that is no allocation in use in that arena") \
    X(ARENA_RESERVE_TOO_LARGE, ERROR, "kiln_arena_reserve of more bytes than the user address space holds") \
    X(ARENA_RESERVE_FAILED, ERROR, "kiln_arena_reserve could not take its blocks (memory_limit or the OS)") \
    X(ARENA_BAD_MARK, ERROR, "kiln_arena_release with a mark of another arena, from before a reset, or released past") \
    X(ARENA_IS_FRAME_ARENA, ERROR, "kiln_arena_destroy of a context's frame arena (it goes with kiln_detach)") \
    X(ARENA_WORKER_FRAME_RESET, ERROR, "kiln_arena_reset of a worker's frame arena (kiln_frame_end resets it)") \
    X(ARENA_DRIVER_FRAME_RESET, ERROR, "kiln_arena_reset of the driver's frame arena while its frame is open") \
    X(ARENA_RESET_INSIDE_JOB, ERROR, "kiln_arena_reset of a frame arena from inside a job running on its thread") \
    X(ARENA_WRONG_THREAD, ERROR, "KILN_DEBUG_OWNERSHIP: an arena used from a thread that does not own it") \
    X(ARENA_GUARD_DAMAGED, ERROR, "KILN_DEBUG_GUARDS: a guard byte of an arena allocation was overwritten") \
    X(ARENA_LEAK_SITE, WARN, "KILN_DEBUG_SITES: allocations of one site still live in an arena being destroyed") \
    X(ARENA_LEAK_SUMMARY, WARN, "KILN_DEBUG_SITES: the live allocations of the sites ARENA_LEAK_SITE did not list") \
    X(ARENA_OUT_OF_MEMORY, ERROR, "no heap memory for an arena's record") \
    X(ARENA_STILL_ALIVE, WARN, "kiln_destroy found an arena still alive; it destroys it") \
    /* ---- pools ---- */ \
    X(POOL_NULL, ERROR, "the pool argument is NULL") \
    X(POOL_NULL_DESC, ERROR, "kiln_pool_create with a NULL desc") \
    X(POOL_BAD_SIZE, ERROR, "a pool's object size is 0, above a quarter block, or leaves no object in a block") \
    X(POOL_BAD_ALIGN, ERROR, "a pool's alignment is not a power of two up to KILN_POOL_MAX_ALIGN") \
    X(POOL_BAD_FLAGS, ERROR, "a pool's flags have bits that are no KILN_POOL_* flag") \
    X(POOL_BAD_MAGAZINE_SIZE, ERROR, "a pool's magazine_size is not from 2 to KILN_POOL_MAX_MAGAZINE") \
    X(POOL_BAD_RESERVE, ERROR, "a pool's desc.reserve is over its capacity, or its objects' bytes overflow") \
    X(POOL_TOO_MANY, ERROR, "every pool slot of the runtime is in use") \
    X(POOL_OUT_OF_MEMORY, ERROR, "no heap memory for a pool") \
    X(POOL_DESTROYED, ERROR, "a call on a pool that was destroyed") \
    X(POOL_WRONG_RUNTIME, ERROR, "a pool used with a context of another runtime") \
    X(POOL_CAPACITY_REACHED, WARN, "a pool's whole capacity is live or cached; its alloc returns NULL") \
    X(POOL_CAPACITY_NEAR, WARN, "a pool's live objects reached desc.warn_percent of its capacity") \
    X(POOL_RESERVE_SHORT, WARN, "a pool reserve stopped at the capacity or memory_limit, short of the count asked") \
    X(POOL_RESERVE_TOO_LARGE, ERROR, "kiln_pool_reserve of a count whose bytes overflow; nothing carved") \
    X(POOL_FREE_NO_MAGAZINE, ERROR, "no heap memory for a cache magazine on a free; the object stays unusable") \
    X(POOL_FOREIGN_POINTER, ERROR, "kiln_pool_free of a pointer that is no object of the pool") \
    X(POOL_DOUBLE_FREE, ERROR, "kiln_pool_free of an object that is not live (checked pools)") \
    X(POOL_INTERIOR_POINTER, ERROR, "kiln_pool_free of a pointer into an object, not at its start (checked pools)") \
    X(POOL_GUARD_DAMAGED, ERROR, "KILN_DEBUG_GUARDS: a guard byte of a pool object was overwritten") \
    X(POOL_LEAK_SITE, WARN, "KILN_DEBUG_SITES: objects of one site still live in a pool being destroyed") \
    X(POOL_LEAK_SUMMARY, WARN, "KILN_DEBUG_SITES: the live objects of the sites POOL_LEAK_SITE did not list") \
    X(POOL_OBJECTS_LIVE, WARN, "kiln_pool_destroy of a pool with live objects; their memory is returned") \
    X(POOL_STILL_ALIVE, WARN, "kiln_destroy found a pool still alive; it destroys it") \
    /* ---- handle tables ---- */ \
    X(HANDLES_NULL, ERROR, "the handle table argument is NULL") \
    X(HANDLES_NULL_VISIT, ERROR, "kiln_handles_foreach or kiln_handles_parallel_for with a NULL fn") \
    X(HANDLES_WALK_ACTIVE, ERROR, "kiln_handles_destroy of a table that a walk is visiting") \
    X(HANDLES_NULL_DESC, ERROR, "kiln_handles_create with a NULL desc") \
    X(HANDLES_BAD_ITEM_SIZE, ERROR, "a table's item_size is not from 1 byte to 1 MiB") \
    X(HANDLES_BAD_ALIGN, ERROR, "a table's item_align is not a power of two up to 4096") \
    X(HANDLES_BAD_CAPACITY, ERROR, "a table's capacity is above KILN_HANDLES_MAX_CAPACITY") \
    X(HANDLES_BAD_RESERVE, ERROR, "a table's reserve is above its capacity") \
    X(HANDLES_TOO_MANY, ERROR, "every handle table slot of the runtime is in use") \
    X(HANDLES_OUT_OF_MEMORY, ERROR, "no heap memory for a handle table or its allocation-site array") \
    X(HANDLES_DESTROYED, ERROR, "a call on a handle table that was destroyed") \
    X(HANDLES_WRONG_RUNTIME, ERROR, "a handle table used with a context of another runtime") \
    X(HANDLES_FULL, WARN, "a handle table has no free slot; its alloc returns the zero handle") \
    X(HANDLES_CAPACITY_NEAR, WARN, "a handle table's live items reached desc.warn_percent of its capacity") \
    X(HANDLES_RECLAIM_STALLED, WARN, "an attached thread passed no quiescent point for many frames; freed slots wait") \
    X(HANDLES_ITEMS_LIVE, WARN, "kiln_handles_destroy of a table with live items; their memory is returned") \
    X(HANDLES_STILL_ALIVE, WARN, "kiln_destroy found a handle table still alive; it destroys it") \
    X(HANDLES_LEAK_SITE, WARN, "KILN_DEBUG_SITES: items of one site still live in a table being destroyed") \
    X(HANDLES_LEAK_SUMMARY, WARN, "KILN_DEBUG_SITES: the live items of the sites HANDLES_LEAK_SITE did not list") \
    X(HANDLE_NULL, ERROR, "kiln_handle_free of the zero handle") \
    X(HANDLE_FOREIGN, ERROR, "kiln_handle_free of a handle this table never handed out") \
    X(HANDLE_DOUBLE_FREE, ERROR, "kiln_handle_free of a stale handle: freed already") \
    /* ---- tags (kiln/heap.h) ---- */ \
    X(TAG_DESC_NULL, ERROR, "kiln_tag_create with a NULL desc") \
    X(TAG_NAME_NULL, ERROR, "a tag's name is NULL or empty (kiln_tag_create, kiln_tag_find)") \
    X(TAG_NAME_TAKEN, ERROR, "kiln_tag_create of a name another tag of the runtime has") \
    X(TAG_POLICY_INVALID, ERROR, "a tag's policy is not a KILN_BUDGET_* value") \
    X(TAG_TOO_MANY, ERROR, "kiln_tag_create when KILN_MAX_TAGS tags exist") \
    X(TAG_OUT_OF_MEMORY, ERROR, "no heap memory for a tag") \
    X(TAG_INVALID, ERROR, "a tag of this runtime's shape that was never made, or the zero tag where a tag is needed") \
    X(TAG_FOREIGN, ERROR, "a tag of another runtime, or a forged one") \
    X(ARENA_FRAME_TAG, ERROR, "kiln_arena_set_tag of a frame arena: frame memory is its own line, never tagged") \
    X(TAG_BUDGET_NEAR, WARN, "a tag's live bytes reached desc.warn_percent of its budget (once per episode)") \
    X(TAG_BUDGET_EXCEEDED, WARN, "KILN_BUDGET_WARN: a tag's live bytes passed its budget (once per episode)") \
    X(TAG_BUDGET_REFUSED, WARN, "KILN_BUDGET_REFUSE: memory that would pass a tag's budget was refused (once per frame per tag)") \
    X(HEAP_FOREIGN_POINTER, ERROR, "a heap call on a pointer the heap did not hand out (another runtime's, malloc's, a pool's, a large allocation freed already); ignored") \
    X(HEAP_INTERIOR_POINTER, ERROR, "a heap call on a pointer into a heap allocation, not at its start; ignored") \
    X(HEAP_DOUBLE_FREE, ERROR, "kiln_heap_free or realloc of a class allocation that is free already; ignored") \
    X(HEAP_BAD_ALIGN, ERROR, "a heap alignment that is not a power of two up to KILN_HEAP_MAX_ALIGN") \
    X(HEAP_TOO_LARGE, ERROR, "a heap size (or calloc's count * size) over PTRDIFF_MAX with its alignment") \
    X(HEAP_OUT_OF_MEMORY, ERROR, "no system memory for the heap's registry of large allocations; the allocation returns NULL") \
    X(HEAP_OBJECTS_LIVE, WARN, "kiln_destroy found heap allocations still live; their memory is returned") \
    X(PROCESS_RUNTIME_TAKEN, ERROR, "kiln_set_process_runtime when the program has named a process runtime already; refused") \
    X(PROCESS_RUNTIME_DESTROY, ERROR, "kiln_destroy of the process runtime kiln made (it serves malloc until the process ends); refused") \
    X(PROCESS_RUNTIME_IN_USE, WARN, "kiln_destroy of the program's process runtime while allocations malloc handed out are live (the C library's own among them); the runtime is kept, serving on") \
    X(PROCESS_RUNTIME_OPTIONS, ERROR, "the process runtime could not be made from KILN_OPTIONS; it is made with kiln's defaults") \
    X(MALLOC_SHARED_CONTEXT, WARN, "a thread could not attach a context of its own to the process runtime (every job slot taken); its allocations share one under a lock") \
    /* ---- jobs ---- */ \
    X(JOB_NULL_FN, ERROR, "a job (or kiln_parallel_for) with a NULL fn") \
    X(JOB_NULL_JOBS, ERROR, "kiln_run with a NULL jobs array") \
    X(JOB_COUNT_ZERO, ERROR, "kiln_run with a count of 0") \
    X(JOB_BAD_PRIORITY, ERROR, "kiln_run_ex with a priority that is no kiln_priority") \
    X(JOB_BAD_PIN, ERROR, "kiln_run_ex pinned to a context it cannot run on") \
    X(JOB_PIN_DETACHING, ERROR, "kiln_run_ex pinned to a context that is detaching") \
    X(JOB_AFTER_NULL, ERROR, "kiln_run_ex with after_count > 0 and after NULL") \
    X(JOB_AFTER_NULL_ENTRY, ERROR, "kiln_run_ex with a NULL counter in after") \
    X(JOB_AFTER_CYCLE, ERROR, "kiln_run_ex whose jobs would wait for their own counter") \
    X(JOB_STILL_WAITING, WARN, "kiln_destroy found jobs still waiting for their prerequisites (kiln_run_desc.after); it frees them unrun") \
    X(JOB_AFTER_FOREIGN, ERROR, "kiln_run_ex after a counter that counts jobs of another runtime") \
    X(JOB_WAIT_NULL_COUNTER, ERROR, "kiln_wait with a NULL counter") \
    X(JOBS_RAN_AT_DESTROY, INFO, "kiln_destroy ran queued jobs (workers' and still attached contexts' leftovers) before the runtime went: how many") \
    X(JOB_WAIT_TOO_DEEP, WARN, "waits nested in jobs have used three quarters of the thread's stack (once per thread)") \
    X(JOB_WAIT_STUCK, WARN, "a wait made no progress for desc.stuck_wait_ms: where its counter's jobs are; it keeps waiting") \
    X(JOB_BACKGROUND_FRAME_ALLOC, ERROR, "a background job asked for frame memory") \
    X(JOB_FRAME_MEMORY_NONE, ERROR, "a job asked for frame memory of a frame whose job arena could not be made (memory limit, heap)") \
    X(JOB_OUT_OF_MEMORY, ERROR, "no heap memory for job deques or a queue of pinned jobs (the caller runs those jobs), or for the record of a kiln_run_ex with after (the call is refused; not misuse)") \
    X(COUNTER_SHARED, WARN, "a run adds to a counter that another context's run of the same runtime still holds; both finish together") \
    X(COUNTER_FOREIGN, ERROR, "a run adds to a counter that holds jobs of another runtime; refused") \
    X(COUNTER_FULL, ERROR, "a run would make one counter count more than 2^31 jobs at once; refused") \
    X(COUNTER_REUSED_WAITING, ERROR, "a run adds to a counter that jobs wait on (KILN_DEBUG_CHECKS); they wait for these too") \
    /* ---- log callbacks ---- */ \
    X(LOG_CALLBACK_CALL, ERROR, "a call that creates, destroys, attaches, detaches or drives the frame clock, from inside a log callback") \
    /* ---- statistics and tracing ---- */ \
    X(STATS_NULL_OUT, ERROR, "a statistics call with a NULL out") \
    X(STATS_OUT_OF_MEMORY, ERROR, "no heap memory to copy the figures") \
    X(APP_LOG, INFO, "a message of the program's own, through kiln_logf (delivered at the level the program gave)") \
    X(LOG_LEVEL_INVALID, ERROR, "kiln_logf or kiln_log_set_level was given a level that is none") \
    X(LOG_FORMAT_NULL, ERROR, "kiln_logf was given a NULL format") \
    X(LOG_REPEATS, INFO, "messages like the last one of an item (same object, other figures) were folded in one frame; this says how many") \
    X(LOG_DROPPED, WARN, "the async log's ring was full: messages were dropped (kiln_stats.log_dropped)") \
    X(STATS_REPORT, INFO, "one line of kiln_stats_print, logged as desc.stats (stats=exit, stats=frame:N) asks") \
    X(TRACE_NULL_FILE, ERROR, "kiln_trace_write_file with a NULL file") \
    X(TRACE_NULL_PATH, ERROR, "kiln_trace_write with a NULL path") \
    X(TRACE_WRITE_FAILED, ERROR, "writing the trace failed (open, write or close)") \
    X(TRACE_OUT_OF_MEMORY, ERROR, "no heap memory for a context's trace ring; its events are counted as dropped") \
    /* ---- the debug layer ---- */ \
    X(DEBUG_GUARD_PAGE_FAILED, WARN, "KILN_DEBUG_GUARD_PAGES: the OS refused to protect a guard page") \
    X(SITES_OFF, ERROR, "kiln_sites_top on a runtime without KILN_DEBUG_SITES (no sites are counted)") \
    X(SITES_OUT_OF_MEMORY, ERROR, "KILN_DEBUG_SITES: no heap memory to group live objects by site")

#endif /* KILN_LOG_ITEMS_H */
