/* tests/misuse_cases.h — THE misuse table: one ROW per (public function, bad-input class).
 * Included three times by tests/test_misuse.c (thunks, the row array, one Test per row);
 * no include guard on purpose.
 *
 * ROW(id, "function", "input class", KILN_LOGITEM_<ITEM> or KILN_LOGITEM_NONE, sink, counted,
 *     fixture flags, doc,
 *     { thunk body: makes the call through f (the fixture) and checks the safe return
 *       with WANT, WANT_EQ, WANT_NULL, WANT_NOT_NULL (tests/test_misuse.c), or cr_expect })
 *
 *   sink:    SINK_A / SINK_B (that runtime's recording log), SINK_STDERR (the default sink:
 *            the object cannot name a runtime), SINK_NONE (legal input, nothing logged)
 *   counted: COUNTED (api_errors of that runtime +1) or NOT_COUNTED
 *   flags:   debug bits of runtime A for this row (FX_CHECKS, FX_SITES, FX_OWNERSHIP), or 0
 *   doc:     DOC (the expectation is the header's) or UNDOC (the headers are silent: the
 *            expectation is the decision the input class states)
 *
 * The fixture (fresh for every row): runtimes A (1 worker, log rec_a) and B (no
 * workers, rec_b); the test thread's ctx_a and ctx_b; arena_a, arena_b, pool_a, pool_b,
 * table_a, table_a2, table_b; dead_arena, dead_pool, dead_table (of A, destroyed);
 * detached (a context of A that a thread attached and detached).
 *
 * A new public function without rows fails coverage::every_public_function_has_a_row. */

/* ======================= core.h ======================= */

/* kiln_create: refused desc fields go to desc->log (rec_a here); no runtime exists, so
 * nothing is counted. */
ROW(create_null_desc, "kiln_create", "NULL desc (legal: the defaults)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_runtime *rt = kiln_create(NULL);
    WANT_NOT_NULL(rt);
    kiln_destroy(rt);
})
ROW(create_block_size_3, "kiln_create", "size: block_size 3", KILN_LOGITEM_BLOCK_SIZE_INVALID, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_desc d = recording_desc(f->rec_a);
    d.block_size = 3;
    kiln_runtime *rt = kiln_create(&d);
    WANT_NULL(rt);
    kiln_destroy(rt);
})
ROW(create_block_size_huge, "kiln_create", "size: block_size SIZE_MAX", KILN_LOGITEM_BLOCK_SIZE_INVALID, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_desc d = recording_desc(f->rec_a);
    d.block_size = SIZE_MAX;
    kiln_runtime *rt = kiln_create(&d);
    WANT_NULL(rt);
    kiln_destroy(rt);
})
ROW(create_block_size_half, "kiln_create", "size: block_size SIZE_MAX/2+1 (a power of two > 1 GiB)", KILN_LOGITEM_BLOCK_SIZE_INVALID, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_desc d = recording_desc(f->rec_a);
    d.block_size = SIZE_MAX / 2 + 1;
    kiln_runtime *rt = kiln_create(&d);
    WANT_NULL(rt);
    kiln_destroy(rt);
})
ROW(create_frame_reserve_over_limit, "kiln_create", "size: frame_reserve over memory_limit", KILN_LOGITEM_FRAME_RESERVE_INVALID, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_desc d = recording_desc(f->rec_a);
    d.memory_limit = 4u << 20;
    d.frame_reserve = (4u << 20) + 1;
    kiln_runtime *rt = kiln_create(&d);
    WANT_NULL(rt);
    kiln_destroy(rt);
})
ROW(create_frame_reserve_size_max, "kiln_create", "size: frame_reserve SIZE_MAX", KILN_LOGITEM_FRAME_RESERVE_INVALID, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_desc d = recording_desc(f->rec_a);
    d.frame_reserve = SIZE_MAX;
    kiln_runtime *rt = kiln_create(&d);
    WANT_NULL(rt);
    kiln_destroy(rt);
})
ROW(create_frame_budget_policy_2, "kiln_create", "range: frame_budget_policy 2", KILN_LOGITEM_FRAME_BUDGET_POLICY_INVALID, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_desc d = recording_desc(f->rec_a);
    d.frame_budget_policy = (kiln_budget_policy)2;
    kiln_runtime *rt = kiln_create(&d);
    WANT_NULL(rt);
    kiln_destroy(rt);
})
ROW(create_memory_limit_1, "kiln_create", "size: memory_limit 1 (under a block)", KILN_LOGITEM_MEMORY_LIMIT_INVALID, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_desc d = recording_desc(f->rec_a);
    d.memory_limit = 1;
    kiln_runtime *rt = kiln_create(&d);
    WANT_NULL(rt);
    kiln_destroy(rt);
})
ROW(create_reserve_huge, "kiln_create", "size: reserve_size SIZE_MAX", KILN_LOGITEM_RESERVE_SIZE_INVALID, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_desc d = recording_desc(f->rec_a);
    d.reserve_size = SIZE_MAX;
    kiln_runtime *rt = kiln_create(&d);
    WANT_NULL(rt);
    kiln_destroy(rt);
})
ROW(create_reserve_half, "kiln_create", "size: reserve_size SIZE_MAX/2", KILN_LOGITEM_RESERVE_SIZE_INVALID, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_desc d = recording_desc(f->rec_a);
    d.reserve_size = SIZE_MAX / 2;
    kiln_runtime *rt = kiln_create(&d);
    WANT_NULL(rt);
    kiln_destroy(rt);
})
ROW(create_workers_64, "kiln_create", "count: worker_count KILN_MAX_WORKERS+1", KILN_LOGITEM_WORKER_COUNT_INVALID, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_desc d = recording_desc(f->rec_a);
    d.worker_count = KILN_MAX_WORKERS + 1;
    kiln_runtime *rt = kiln_create(&d);
    WANT_NULL(rt);
    kiln_destroy(rt);
})
ROW(create_workers_huge, "kiln_create", "count: worker_count UINT32_MAX-1", KILN_LOGITEM_WORKER_COUNT_INVALID, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_desc d = recording_desc(f->rec_a);
    d.worker_count = UINT32_MAX - 1;
    kiln_runtime *rt = kiln_create(&d);
    WANT_NULL(rt);
    kiln_destroy(rt);
})
ROW(create_idle_spin_over_max, "kiln_create", "range: idle_spin_us KILN_MAX_IDLE_SPIN_US+1", KILN_LOGITEM_IDLE_SPIN_INVALID, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_desc d = recording_desc(f->rec_a);
    d.idle_spin_us = KILN_MAX_IDLE_SPIN_US + 1;
    kiln_runtime *rt = kiln_create(&d);
    WANT_NULL(rt);
    kiln_destroy(rt);
})
ROW(create_unknown_debug_bits, "kiln_create", "debug bits 0x80000000 (dropped with a warning)", KILN_LOGITEM_DEBUG_UNKNOWN_BITS, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_desc d = recording_desc(f->rec_a);
    d.debug = 0x80000000u;
    kiln_runtime *rt = kiln_create(&d);
    WANT_NOT_NULL(rt);
    cr_expect_eq(kiln_runtime_desc(rt).debug, 0u, "the unknown bit is dropped");
    kiln_destroy(rt);
})

/* kiln_destroy */
ROW(destroy_null, "kiln_destroy", "NULL runtime (legal: no-op)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_destroy(NULL);
})

/* kiln_attach */
ROW(attach_null, "kiln_attach", "UNDOC NULL runtime: NULL, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_attach(NULL));
})
ROW(attach_forged, "kiln_attach", "UNDOC forged runtime (zeroed memory): NULL, RUNTIME_INVALID", KILN_LOGITEM_RUNTIME_INVALID, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_attach(FORGED_RT));
})

/* kiln_attach_layout: the attach of the inline paths (kiln_attach above is it, in this
 * file: the tests compile with them on, unless KILN_NO_INLINE) */
ROW(attach_layout_mismatch, "kiln_attach_layout", "headers of another inline layout: NULL, no context", KILN_LOGITEM_HEAD_LAYOUT_MISMATCH, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_attach_layout(f->a, KILN_HEAD_LAYOUT + 1));
    kiln_stats s;
    WANT(kiln_stats_get(f->a, &s));
    cr_expect_eq(s.contexts, 2u, "ctx_a and the worker: no new context");
})
ROW(attach_layout_zero, "kiln_attach_layout", "layout 0 (headers from before layouts had numbers): NULL", KILN_LOGITEM_HEAD_LAYOUT_MISMATCH, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_attach_layout(f->a, 0));
})
ROW(attach_layout_null, "kiln_attach_layout", "UNDOC NULL runtime, any layout: NULL, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_attach_layout(NULL, KILN_HEAD_LAYOUT + 1));
})
ROW(attach_layout_forged, "kiln_attach_layout", "UNDOC forged runtime, another layout: NULL, RUNTIME_INVALID", KILN_LOGITEM_RUNTIME_INVALID, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_attach_layout(FORGED_RT, KILN_HEAD_LAYOUT + 1));
})

/* kiln_detach */
ROW(detach_null, "kiln_detach", "NULL ctx (legal: no-op)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_detach(NULL);
})
ROW(detach_detached, "kiln_detach", "detached ctx (detached twice)", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    kiln_detach(f->detached);
    kiln_stats s;
    WANT(kiln_stats_get(f->a, &s));
    cr_expect_eq(s.contexts, 2u, "ctx_a and the worker stay attached");
})
ROW(detach_worker_ctx, "kiln_detach", "UNDOC wrong thread: a worker's ctx from the test thread: ignored, CONTEXT_IS_WORKER", KILN_LOGITEM_CONTEXT_IS_WORKER, SINK_A, COUNTED, 0, UNDOC, {
    kiln_ctx *w = worker_ctx(f);
    kiln_detach(w);
    kiln_stats s;
    WANT(kiln_stats_get(f->a, &s));
    cr_expect_eq(s.contexts, 2u, "the worker stays attached");
})
ROW(detach_forged, "kiln_detach", "UNDOC forged ctx (zeroed memory): ignored, CONTEXT_INVALID", KILN_LOGITEM_CONTEXT_INVALID, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    kiln_detach(FORGED_CTX);
})

/* kiln_frame_begin */
ROW(frame_begin_null, "kiln_frame_begin", "NULL ctx: 0", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_frame_begin(NULL), 0u);
})
ROW(frame_begin_detached, "kiln_frame_begin", "detached ctx: 0", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_frame_begin(f->detached), 0u);
    WANT_EQ(kiln_frame_number(f->a), 0u);
})
ROW(frame_begin_forged, "kiln_frame_begin", "UNDOC forged ctx (zeroed memory): 0, CONTEXT_INVALID", KILN_LOGITEM_CONTEXT_INVALID, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_EQ(kiln_frame_begin(FORGED_CTX), 0u);
})
ROW(frame_begin_not_driver, "kiln_frame_begin", "wrong thread: another attached thread while ctx_a drives: current frame", KILN_LOGITEM_FRAME_NOT_DRIVER, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_frame_begin(f->ctx_a), 1u);
    kiln_frame_end(f->ctx_a);
    on_thread(f, OP_ATTACH_FRAME_BEGIN);
    cr_expect_eq(f->r64, 1u, "the current frame number");
    WANT_EQ(kiln_frame_number(f->a), 1u);
})
ROW(frame_begin_already_open, "kiln_frame_begin", "second begin without end: current frame", KILN_LOGITEM_FRAME_ALREADY_OPEN, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_frame_begin(f->ctx_a), 1u);
    WANT_EQ(kiln_frame_begin(f->ctx_a), 1u);
    kiln_frame_end(f->ctx_a);
    cr_expect_eq(kiln_frame_begin(f->ctx_a), 2u, "the clock still works");
    kiln_frame_end(f->ctx_a);
})
ROW(frame_begin_worker_ctx, "kiln_frame_begin", "wrong thread: a worker's ctx from the test thread: current frame", KILN_LOGITEM_FRAME_WORKER_CONTEXT, SINK_A, COUNTED, 0, DOC, {
    kiln_ctx *w = worker_ctx(f);
    WANT_EQ(kiln_frame_begin(w), 0u);
    cr_expect_eq(kiln_frame_begin(f->ctx_a), 1u, "the worker did not become the driver");
    kiln_frame_end(f->ctx_a);
})
ROW(frame_begin_in_worker_job, "kiln_frame_begin", "inside a job on a worker (its ctx): current frame", KILN_LOGITEM_FRAME_WORKER_CONTEXT, SINK_A, COUNTED, 0, DOC, {
    f->r64 = 99;
    in_worker_job(f, OP_FRAME_BEGIN);
    WANT_EQ(f->r64, 0u);
    WANT_EQ(kiln_frame_number(f->a), 0u);
})
ROW(frame_begin_in_job, "kiln_frame_begin", "inside a job (pinned to the driver's ctx): current frame", KILN_LOGITEM_FRAME_INSIDE_JOB, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_frame_begin(f->ctx_a), 1u);
    kiln_frame_end(f->ctx_a);
    f->r64 = 99;
    in_job(f, OP_FRAME_BEGIN);
    WANT_EQ(f->r64, 1u);
    WANT_EQ(kiln_frame_number(f->a), 1u);
})

/* kiln_frame_end */
ROW(frame_end_null, "kiln_frame_end", "NULL ctx: ignored", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_frame_end(NULL);
})
ROW(frame_end_detached, "kiln_frame_end", "detached ctx: ignored", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    kiln_frame_end(f->detached);
})
ROW(frame_end_without_begin, "kiln_frame_end", "no frame open (never begun)", KILN_LOGITEM_FRAME_END_WITHOUT_BEGIN, SINK_A, COUNTED, 0, DOC, {
    kiln_frame_end(f->ctx_a);
    WANT_EQ(kiln_frame_number(f->a), 0u);
})
ROW(frame_end_twice, "kiln_frame_end", "no frame open (end after end)", KILN_LOGITEM_FRAME_END_WITHOUT_BEGIN, SINK_A, COUNTED, 0, DOC, {
    kiln_frame_begin(f->ctx_a);
    kiln_frame_end(f->ctx_a);
    kiln_frame_end(f->ctx_a);
    WANT_EQ(kiln_frame_number(f->a), 1u);
})
ROW(frame_end_not_driver, "kiln_frame_end", "wrong thread: another attached thread while ctx_a drives", KILN_LOGITEM_FRAME_NOT_DRIVER, SINK_A, COUNTED, 0, DOC, {
    kiln_frame_begin(f->ctx_a);
    on_thread(f, OP_ATTACH_FRAME_END);
    kiln_frame_end(f->ctx_a);   /* the frame was still open */
    WANT_EQ(kiln_frame_begin(f->ctx_a), 2u);
    kiln_frame_end(f->ctx_a);
})
ROW(frame_end_worker_ctx, "kiln_frame_end", "wrong thread: a worker's ctx from the test thread", KILN_LOGITEM_FRAME_WORKER_CONTEXT, SINK_A, COUNTED, 0, DOC, {
    kiln_ctx *w = worker_ctx(f);
    kiln_frame_begin(f->ctx_a);
    kiln_frame_end(w);
    kiln_frame_end(f->ctx_a);
})
ROW(frame_end_in_worker_job, "kiln_frame_end", "inside a job on a worker (its ctx)", KILN_LOGITEM_FRAME_WORKER_CONTEXT, SINK_A, COUNTED, 0, DOC, {
    kiln_frame_begin(f->ctx_a);
    in_worker_job(f, OP_FRAME_END);
    kiln_frame_end(f->ctx_a);
    WANT_EQ(kiln_frame_number(f->a), 1u);
})
ROW(frame_end_in_job, "kiln_frame_end", "inside a job (pinned to the driver's ctx)", KILN_LOGITEM_FRAME_INSIDE_JOB, SINK_A, COUNTED, 0, DOC, {
    kiln_frame_begin(f->ctx_a);
    in_job(f, OP_FRAME_END);
    kiln_frame_end(f->ctx_a);   /* still open: the job's end was ignored */
    WANT_EQ(kiln_frame_begin(f->ctx_a), 2u);
    kiln_frame_end(f->ctx_a);
})

/* kiln_frame_number */
ROW(frame_number_null, "kiln_frame_number", "UNDOC NULL runtime: 0, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_EQ(kiln_frame_number(NULL), 0u);
})
ROW(frame_number_forged, "kiln_frame_number", "UNDOC forged runtime: 0, RUNTIME_INVALID", KILN_LOGITEM_RUNTIME_INVALID, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_EQ(kiln_frame_number(FORGED_RT), 0u);
})

/* kiln_ctx_runtime */
ROW(ctx_runtime_null, "kiln_ctx_runtime", "NULL ctx: NULL (logged: the header says NULL, kiln.h says every bad input is reported)", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_ctx_runtime(NULL));
})
ROW(ctx_runtime_detached, "kiln_ctx_runtime", "detached ctx: NULL (kiln_detach: any later use refused)", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_ctx_runtime(f->detached));
})

/* kiln_runtime_desc */
ROW(runtime_desc_null, "kiln_runtime_desc", "UNDOC NULL runtime: {0}, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    kiln_desc d = kiln_runtime_desc(NULL);
    WANT(all_zero(&d, sizeof d));
})
ROW(runtime_desc_forged, "kiln_runtime_desc", "UNDOC forged runtime: {0}, RUNTIME_INVALID", KILN_LOGITEM_RUNTIME_INVALID, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    kiln_desc d = kiln_runtime_desc(FORGED_RT);
    WANT(all_zero(&d, sizeof d));
})

/* kiln_create: options strings (the rest of the kinds: tests/test_options.c) */
ROW(create_option_bad_value, "kiln_create", "range: desc.options warn_percent=101", KILN_LOGITEM_OPTION_INVALID, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_desc d = recording_desc(f->rec_a);
    d.options = "warn_percent=101";
    d.options_env = KILN_OPTIONS_ENV_IGNORE;
    kiln_runtime *rt = kiln_create(&d);
    WANT_NULL(rt);
    kiln_destroy(rt);
})
ROW(create_option_no_value, "kiln_create", "format: desc.options pair without =", KILN_LOGITEM_OPTION_INVALID, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_desc d = recording_desc(f->rec_a);
    d.options = "debug";
    d.options_env = KILN_OPTIONS_ENV_IGNORE;
    kiln_runtime *rt = kiln_create(&d);
    WANT_NULL(rt);
    kiln_destroy(rt);
})
ROW(create_option_unknown_key, "kiln_create", "unknown: desc.options key that is none (warned; create goes on)", KILN_LOGITEM_OPTION_UNKNOWN, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_desc d = recording_desc(f->rec_a);
    d.options = "wokers=2";
    d.options_env = KILN_OPTIONS_ENV_IGNORE;
    kiln_runtime *rt = kiln_create(&d);
    WANT_NOT_NULL(rt);
    kiln_destroy(rt);
})

/* kiln_option_source */
ROW(option_source_null_rt, "kiln_option_source", "NULL runtime: false, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    char out[KILN_OPTION_SOURCE_MAX];
    WANT(!kiln_option_source(NULL, "workers", out, sizeof out));
})
ROW(option_source_forged_rt, "kiln_option_source", "forged runtime: false, RUNTIME_INVALID", KILN_LOGITEM_RUNTIME_INVALID, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    char out[KILN_OPTION_SOURCE_MAX];
    WANT(!kiln_option_source(FORGED_RT, "workers", out, sizeof out));
})
ROW(option_source_unknown_key, "kiln_option_source", "unknown: a key that is none: false, out \"\"", KILN_LOGITEM_OPTION_KEY_UNKNOWN, SINK_A, COUNTED, 0, DOC, {
    char out[KILN_OPTION_SOURCE_MAX] = "x";
    WANT(!kiln_option_source(f->a, "wrkers", out, sizeof out));
    WANT_EQ(out[0], '\0');
})
ROW(option_source_null_key, "kiln_option_source", "NULL key: false", KILN_LOGITEM_OPTION_KEY_UNKNOWN, SINK_A, COUNTED, 0, DOC, {
    char out[KILN_OPTION_SOURCE_MAX];
    WANT(!kiln_option_source(f->a, NULL, out, sizeof out));
})
ROW(option_source_null_out, "kiln_option_source", "NULL out with cap 8: false", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, DOC, {
    WANT(!kiln_option_source(f->a, "workers", NULL, KILN_OPTION_SOURCE_MAX));
})
ROW(option_source_small_out, "kiln_option_source", "size: cap 1: false, out \"\"", KILN_LOGITEM_OPTION_OUT_TOO_SMALL, SINK_A, COUNTED, 0, DOC, {
    char out[1] = { 'x' };
    WANT(!kiln_option_source(f->a, "workers", out, sizeof out));
    WANT_EQ(out[0], '\0');
})

/* kiln_logf */
ROW(logf_null_rt, "kiln_logf", "NULL runtime: RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_logf(NULL, KILN_LOG_WARN, "x");
})
ROW(logf_forged_rt, "kiln_logf", "forged runtime: RUNTIME_INVALID", KILN_LOGITEM_RUNTIME_INVALID, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_logf(FORGED_RT, KILN_LOG_WARN, "x");
})
ROW(logf_bad_level, "kiln_logf", "range: level 4: nothing logged but the refusal", KILN_LOGITEM_LOG_LEVEL_INVALID, SINK_A, COUNTED, 0, DOC, {
    kiln_logf(f->a, (kiln_log_level)4, "x");
    WANT_EQ(count_items(f->rec_a, KILN_LOGITEM_APP_LOG), 0u);
})
ROW(logf_null_fmt, "kiln_logf", "NULL fmt", KILN_LOGITEM_LOG_FORMAT_NULL, SINK_A, COUNTED, 0, DOC, {
    kiln_logf(f->a, KILN_LOG_WARN, NULL);
})

/* kiln_crash_report_write */
ROW(crash_report_null_rt, "kiln_crash_report_write", "NULL runtime: false, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT(!kiln_crash_report_write(NULL, 1));
})
ROW(crash_report_forged_rt, "kiln_crash_report_write", "forged runtime: false, RUNTIME_INVALID", KILN_LOGITEM_RUNTIME_INVALID, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT(!kiln_crash_report_write(FORGED_RT, 1));
})
ROW(crash_report_bad_fd, "kiln_crash_report_write", "range: fd -1: false", KILN_LOGITEM_CRASH_FD_INVALID, SINK_A, COUNTED, 0, DOC, {
    WANT(!kiln_crash_report_write(f->a, -1));
})
ROW(crash_report_closed_fd, "kiln_crash_report_write", "a descriptor that is closed: false, CRASH_WRITE_FAILED (I/O: not counted)", KILN_LOGITEM_CRASH_WRITE_FAILED, SINK_A, NOT_COUNTED, 0, DOC, {
    WANT(!kiln_crash_report_write(f->a, 9999));
})

/* kiln_log_flush */
ROW(log_flush_null_rt, "kiln_log_flush", "NULL runtime: RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_log_flush(NULL);
})
ROW(log_flush_forged_rt, "kiln_log_flush", "forged runtime: RUNTIME_INVALID", KILN_LOGITEM_RUNTIME_INVALID, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_log_flush(FORGED_RT);
})
ROW(log_flush_sync, "kiln_log_flush", "legal: a sync runtime: nothing to do", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_log_flush(f->a);
})

/* kiln_log_set_level */
ROW(log_set_level_null_rt, "kiln_log_set_level", "NULL runtime: RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_log_set_level(NULL, KILN_LOG_THRESHOLD_WARN);
})
ROW(log_set_level_forged_rt, "kiln_log_set_level", "forged runtime: RUNTIME_INVALID", KILN_LOGITEM_RUNTIME_INVALID, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_log_set_level(FORGED_RT, KILN_LOG_THRESHOLD_WARN);
})
ROW(log_set_level_bad, "kiln_log_set_level", "range: threshold 6: unchanged", KILN_LOGITEM_LOG_LEVEL_INVALID, SINK_A, COUNTED, 0, DOC, {
    kiln_log_set_level(f->a, (kiln_log_threshold)6);
    WANT_EQ(kiln_runtime_desc(f->a).log_level, KILN_LOG_THRESHOLD_INFO);
})

/* kiln_trim */
ROW(trim_null, "kiln_trim", "UNDOC NULL runtime: 0, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_EQ(kiln_trim(NULL), 0u);
})

/* kiln_trim_step */
ROW(trim_step_null, "kiln_trim_step", "NULL runtime: 0, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_trim_step(NULL, 8), 0u);
})
ROW(trim_step_forged, "kiln_trim_step", "forged runtime: 0, RUNTIME_INVALID", KILN_LOGITEM_RUNTIME_INVALID, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_trim_step(FORGED_RT, 8), 0u);
})
ROW(trim_step_zero, "kiln_trim_step", "range: max_blocks 0 (legal: nothing given back)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_stats before;
    cr_assert(kiln_stats_get(f->a, &before));
    (void)kiln_trim_step(f->a, 0);
    kiln_stats after;
    cr_assert(kiln_stats_get(f->a, &after));
    WANT_EQ(after.blocks.trims, before.blocks.trims);
})
ROW(trim_step_huge, "kiln_trim_step", "range: max_blocks SIZE_MAX (legal: every free block)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_trim_step(f->a, SIZE_MAX), 0u);
})

/* kiln_log_item_name, kiln_log_item_level: no item is legal input, answered, not logged */
ROW(log_item_name_none, "kiln_log_item_name", "range: KILN_LOGITEM_NONE (legal: NULL)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_log_item_name(KILN_LOGITEM_NONE));
})
ROW(log_item_name_count, "kiln_log_item_name", "range: KILN_LOGITEM_COUNT and -1 (legal: NULL)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_log_item_name(KILN_LOGITEM_COUNT));
    WANT_NULL(kiln_log_item_name((kiln_log_item)-1));
})
ROW(log_item_level_out_of_range, "kiln_log_item_level", "range: NONE, COUNT and -1 (legal: KILN_LOG_DEBUG)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_log_item_level(KILN_LOGITEM_NONE), KILN_LOG_DEBUG);
    WANT_EQ(kiln_log_item_level(KILN_LOGITEM_COUNT), KILN_LOG_DEBUG);
    WANT_EQ(kiln_log_item_level((kiln_log_item)-1), KILN_LOG_DEBUG);
})

/* ======================= memory.h ======================= */

/* kiln_arena_create */
ROW(arena_create_null_rt, "kiln_arena_create", "NULL runtime: NULL (bad rt, logged)", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    cr_expect_null(kiln_arena_create(NULL, "x"), "%s", "want NULL: kiln_arena_create(NULL, \"x\")");
})
ROW(arena_create_forged_rt, "kiln_arena_create", "forged runtime: NULL (bad rt, logged)", KILN_LOGITEM_RUNTIME_INVALID, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    cr_expect_null(kiln_arena_create(FORGED_RT, "x"), "%s", "want NULL: kiln_arena_create(FORGED_RT, \"x\")");
})
ROW(arena_create_null_name, "kiln_arena_create", "NULL name (legal: \"arena\")", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_arena *arena = kiln_arena_create(f->a, NULL);
    WANT_NOT_NULL(arena);
    kiln_arena_stats s;
    WANT(kiln_arena_stats_get(arena, &s));
    cr_expect_str_eq(s.name, "arena", "%s", "want equal: s.name, \"arena\"");
    kiln_arena_destroy(arena);
})

/* kiln_arena_destroy */
ROW(arena_destroy_null, "kiln_arena_destroy", "NULL arena (legal: no-op)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_arena_destroy(NULL);
})
ROW(arena_destroy_destroyed, "kiln_arena_destroy", "destroyed arena (destroyed twice)", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    kiln_arena_destroy(f->dead_arena);
})
ROW(arena_destroy_frame_arena, "kiln_arena_destroy", "a context's frame arena: ignored", KILN_LOGITEM_ARENA_IS_FRAME_ARENA, SINK_A, COUNTED, 0, DOC, {
    kiln_arena_destroy(kiln_frame_arena(f->ctx_a));
    cr_expect_not_null(kiln_frame_alloc(f->ctx_a, 64, 0), "the frame arena still works");
})
ROW(arena_destroy_detached_frame_arena, "kiln_arena_destroy", "the frame arena of a detached ctx (destroyed with it)", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    on_thread(f, OP_ATTACH_KEEP_FRAME_ARENA);
    cr_assert_not_null(f->rp);
    kiln_arena_destroy(f->rp);
})
ROW(arena_alloc_detached_frame_arena, "kiln_arena_alloc", "the frame arena of a detached ctx: NULL", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    on_thread(f, OP_ATTACH_KEEP_FRAME_ARENA);
    cr_assert_not_null(f->rp);
    WANT_NULL(kiln_arena_alloc(f->rp, 64, 0));
})
ROW(arena_reserve_detached_frame_arena, "kiln_arena_reserve", "the frame arena of a detached ctx: false", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    on_thread(f, OP_ATTACH_KEEP_FRAME_ARENA);
    cr_assert_not_null(f->rp);
    WANT(!kiln_arena_reserve(f->rp, 4096));
})
ROW(arena_reset_detached_frame_arena, "kiln_arena_reset", "the frame arena of a detached ctx: ignored", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    on_thread(f, OP_ATTACH_KEEP_FRAME_ARENA);
    cr_assert_not_null(f->rp);
    kiln_arena_reset(f->rp);
})

/* kiln_arena_alloc */
ROW(arena_alloc_null, "kiln_arena_alloc", "NULL arena: NULL", KILN_LOGITEM_ARENA_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_alloc(NULL, 64, 0));
})
ROW(arena_alloc_destroyed, "kiln_arena_alloc", "destroyed arena: NULL", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_alloc(f->dead_arena, 64, 0));
})
ROW(arena_alloc_align_3, "kiln_arena_alloc", "align 3: NULL", KILN_LOGITEM_ARENA_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_alloc(f->arena_a, 64, 3));
})
ROW(arena_alloc_align_24, "kiln_arena_alloc", "align 24: NULL", KILN_LOGITEM_ARENA_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_alloc(f->arena_a, 64, 24));
})
ROW(arena_alloc_align_over_block, "kiln_arena_alloc", "align 2x the block size: NULL", KILN_LOGITEM_ARENA_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_alloc(f->arena_a, 64, (size_t)128 << 10));
})
ROW(arena_alloc_align_huge, "kiln_arena_alloc", "align SIZE_MAX/2+1 (a power of two): NULL", KILN_LOGITEM_ARENA_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_alloc(f->arena_a, 64, SIZE_MAX / 2 + 1));
})
ROW(arena_alloc_align_0, "kiln_arena_alloc", "align 0 (legal: max_align_t)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    void *p = kiln_arena_alloc(f->arena_a, 64, 0);
    WANT_NOT_NULL(p);
    WANT_EQ((uintptr_t)p % _Alignof(max_align_t), 0u);
})
ROW(arena_alloc_size_0, "kiln_arena_alloc", "size 0 (legal: a valid aligned pointer)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    void *p = kiln_arena_alloc(f->arena_a, 0, 16);
    WANT_NOT_NULL(p);
    WANT_EQ((uintptr_t)p % 16, 0u);
})
ROW(arena_alloc_size_max, "kiln_arena_alloc", "UNDOC size SIZE_MAX: NULL, ARENA_SIZE_OVERFLOW, counted as a bad argument", KILN_LOGITEM_ARENA_SIZE_OVERFLOW, SINK_A, COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_arena_alloc(f->arena_a, SIZE_MAX, 0));
    cr_expect_not_null(kiln_arena_alloc(f->arena_a, 64, 0), "the arena still works");
})
ROW(arena_alloc_size_half, "kiln_arena_alloc", "UNDOC size SIZE_MAX/2: NULL, ARENA_SIZE_OVERFLOW, counted as a bad argument", KILN_LOGITEM_ARENA_SIZE_OVERFLOW, SINK_A, COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_arena_alloc(f->arena_a, SIZE_MAX / 2, 0));
    cr_expect_not_null(kiln_arena_alloc(f->arena_a, 64, 0), "the arena still works");
})
ROW(arena_alloc_size_max_aligned, "kiln_arena_alloc", "UNDOC size SIZE_MAX-63 align 64 (the rounding overflows): NULL, ARENA_SIZE_OVERFLOW, counted", KILN_LOGITEM_ARENA_SIZE_OVERFLOW, SINK_A, COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_arena_alloc(f->arena_a, SIZE_MAX - 63, 64));
})
ROW(arena_alloc_wrong_thread, "kiln_arena_alloc", "wrong thread (KILN_DEBUG_OWNERSHIP): proceeds, logged and counted", KILN_LOGITEM_ARENA_WRONG_THREAD, SINK_A, COUNTED, FX_OWNERSHIP, DOC, {
    on_thread(f, OP_ARENA_A_ALLOC);
    cr_expect_not_null(f->rp, "the call proceeds");
    kiln_arena_stats s;
    WANT(kiln_arena_stats_get(f->arena_a, &s));
    WANT_EQ(s.wrong_thread, 1u);
})

/* kiln_arena_alloc_at */
ROW(arena_alloc_at_null, "kiln_arena_alloc_at", "NULL arena: NULL", KILN_LOGITEM_ARENA_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_alloc_at(NULL, 64, 0, __FILE__, __LINE__));
})
ROW(arena_alloc_at_destroyed, "kiln_arena_alloc_at", "destroyed arena: NULL", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_alloc_at(f->dead_arena, 64, 0, __FILE__, __LINE__));
})
ROW(arena_alloc_at_destroyed_sites, "kiln_arena_alloc_at", "destroyed arena (KILN_DEBUG_SITES): NULL", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, FX_SITES, DOC, {
    WANT_NULL(kiln_arena_alloc_at(f->dead_arena, 64, 0, __FILE__, __LINE__));
})
ROW(arena_alloc_at_align_24, "kiln_arena_alloc_at", "align 24: NULL", KILN_LOGITEM_ARENA_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_alloc_at(f->arena_a, 64, 24, __FILE__, __LINE__));
})
ROW(arena_alloc_at_align_3_sites, "kiln_arena_alloc_at", "align 3 (KILN_DEBUG_SITES): NULL", KILN_LOGITEM_ARENA_BAD_ALIGN, SINK_A, COUNTED, FX_SITES, DOC, {
    WANT_NULL(kiln_arena_alloc_at(f->arena_a, 64, 3, __FILE__, __LINE__));
})
ROW(arena_alloc_at_size_max, "kiln_arena_alloc_at", "UNDOC size SIZE_MAX: NULL, ARENA_SIZE_OVERFLOW, counted", KILN_LOGITEM_ARENA_SIZE_OVERFLOW, SINK_A, COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_arena_alloc_at(f->arena_a, SIZE_MAX, 0, __FILE__, __LINE__));
})
ROW(arena_alloc_at_null_file, "kiln_arena_alloc_at", "UNDOC NULL file (KILN_DEBUG_SITES): legal, no site", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, FX_SITES, UNDOC, {
    WANT_NOT_NULL(kiln_arena_alloc_at(f->arena_a, 64, 0, NULL, 0));
})
ROW(arena_alloc_at_wrong_thread, "kiln_arena_alloc_at", "wrong thread (KILN_DEBUG_OWNERSHIP): proceeds, logged and counted", KILN_LOGITEM_ARENA_WRONG_THREAD, SINK_A, COUNTED, FX_OWNERSHIP, DOC, {
    on_thread(f, OP_ARENA_A_ALLOC_AT);
    cr_expect_not_null(f->rp, "the call proceeds");
})

/* kiln_arena_mark */
ROW(arena_mark_null, "kiln_arena_mark", "NULL arena: {0}", KILN_LOGITEM_ARENA_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT(mark_is_empty(kiln_arena_mark(NULL)));
})
ROW(arena_mark_destroyed, "kiln_arena_mark", "destroyed arena: {0}", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    WANT(mark_is_empty(kiln_arena_mark(f->dead_arena)));
})
ROW(arena_mark_wrong_thread, "kiln_arena_mark", "wrong thread (KILN_DEBUG_OWNERSHIP): proceeds, logged and counted", KILN_LOGITEM_ARENA_WRONG_THREAD, SINK_A, COUNTED, FX_OWNERSHIP, DOC, {
    kiln_arena_alloc(f->arena_a, 64, 0);
    on_thread(f, OP_ARENA_A_MARK);
    cr_expect(!mark_is_empty(f->mark), "the call proceeds: a real mark");
})

/* kiln_arena_release */
ROW(arena_release_null, "kiln_arena_release", "NULL arena: ignored", KILN_LOGITEM_ARENA_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_arena_release(NULL, (kiln_mark){ { 0, 0 } });
})
ROW(arena_release_destroyed, "kiln_arena_release", "destroyed arena: ignored", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    kiln_arena_release(f->dead_arena, (kiln_mark){ { 0, 0 } });
})
ROW(arena_release_empty_mark, "kiln_arena_release", "mark {0} (legal: the empty arena)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_arena_alloc(f->arena_a, 64, 0);
    kiln_arena_release(f->arena_a, (kiln_mark){ { 0, 0 } });
    kiln_arena_stats s;
    WANT(kiln_arena_stats_get(f->arena_a, &s));
    WANT_EQ(s.bytes_in_use, 0u);
})
ROW(arena_release_other_arena_mark, "kiln_arena_release", "foreign mark: another arena's (same runtime): ignored", KILN_LOGITEM_ARENA_BAD_MARK, SINK_A, COUNTED, 0, DOC, {
    kiln_arena *other = kiln_arena_create(f->a, "other");
    kiln_arena_alloc(other, 64, 0);
    kiln_mark m = kiln_arena_mark(other);
    void *p = kiln_arena_alloc(f->arena_a, 128, 0);
    kiln_arena_stats before;
    kiln_arena_stats_get(f->arena_a, &before);
    kiln_arena_release(f->arena_a, m);
    kiln_arena_stats after;
    kiln_arena_stats_get(f->arena_a, &after);
    cr_expect_eq(after.bytes_in_use, before.bytes_in_use, "ignored");
    (void)p;
    kiln_arena_destroy(other);
})
ROW(arena_release_other_runtime_mark, "kiln_arena_release", "another runtime: arena_b's mark into arena_a: ignored", KILN_LOGITEM_ARENA_BAD_MARK, SINK_A, COUNTED, 0, DOC, {
    kiln_arena_alloc(f->arena_b, 64, 0);
    kiln_mark m = kiln_arena_mark(f->arena_b);
    kiln_arena_alloc(f->arena_a, 128, 0);
    kiln_arena_stats before;
    kiln_arena_stats_get(f->arena_a, &before);
    kiln_arena_release(f->arena_a, m);
    kiln_arena_stats after;
    kiln_arena_stats_get(f->arena_a, &after);
    cr_expect_eq(after.bytes_in_use, before.bytes_in_use, "ignored");
})
ROW(arena_release_before_reset, "kiln_arena_release", "stale mark: taken before the last reset: ignored", KILN_LOGITEM_ARENA_BAD_MARK, SINK_A, COUNTED, 0, DOC, {
    kiln_arena_alloc(f->arena_a, 64, 0);
    kiln_mark m = kiln_arena_mark(f->arena_a);
    kiln_arena_reset(f->arena_a);
    kiln_arena_alloc(f->arena_a, 256, 0);
    kiln_arena_release(f->arena_a, m);
})
ROW(arena_release_released_past, "kiln_arena_release", "stale mark: released past (to an earlier mark): ignored", KILN_LOGITEM_ARENA_BAD_MARK, SINK_A, COUNTED, 0, DOC, {
    kiln_mark outer = kiln_arena_mark(f->arena_a);
    kiln_arena_alloc(f->arena_a, 64, 0);
    kiln_mark inner = kiln_arena_mark(f->arena_a);
    kiln_arena_release(f->arena_a, outer);
    kiln_arena_alloc(f->arena_a, 256, 0);   /* grown back past inner's position */
    kiln_arena_release(f->arena_a, inner);
})
ROW(arena_release_forged_mark, "kiln_arena_release", "forged mark (random bits): ignored", KILN_LOGITEM_ARENA_BAD_MARK, SINK_A, COUNTED, 0, DOC, {
    kiln_arena_alloc(f->arena_a, 64, 0);
    kiln_arena_release(f->arena_a, (kiln_mark){ { 0x9e3779b97f4a7c15ull, 0xdeadbeefcafef00dull } });
})
ROW(arena_release_wrong_thread, "kiln_arena_release", "wrong thread (KILN_DEBUG_OWNERSHIP): proceeds, logged and counted", KILN_LOGITEM_ARENA_WRONG_THREAD, SINK_A, COUNTED, FX_OWNERSHIP, DOC, {
    f->mark = kiln_arena_mark(f->arena_a);
    kiln_arena_alloc(f->arena_a, 64, 0);
    on_thread(f, OP_ARENA_A_RELEASE);
    kiln_arena_stats s;
    WANT(kiln_arena_stats_get(f->arena_a, &s));
    cr_expect_eq(s.bytes_in_use, 0u, "the call proceeds");
})

/* kiln_arena_reserve */
ROW(arena_reserve_null, "kiln_arena_reserve", "NULL arena: false", KILN_LOGITEM_ARENA_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT(!kiln_arena_reserve(NULL, 4096));
})
ROW(arena_reserve_destroyed, "kiln_arena_reserve", "destroyed arena: false", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    WANT(!kiln_arena_reserve(f->dead_arena, 4096));
})
ROW(arena_reserve_size_max, "kiln_arena_reserve", "size: SIZE_MAX bytes: false", KILN_LOGITEM_ARENA_RESERVE_TOO_LARGE, SINK_A, COUNTED, 0, DOC, {
    WANT(!kiln_arena_reserve(f->arena_a, SIZE_MAX));
})
ROW(arena_reserve_zero, "kiln_arena_reserve", "size: 0 bytes (legal: true)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT(kiln_arena_reserve(f->arena_a, 0));
})

/* kiln_arena_reset */
ROW(arena_reset_null, "kiln_arena_reset", "NULL arena: ignored", KILN_LOGITEM_ARENA_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_arena_reset(NULL);
})
ROW(arena_reset_destroyed, "kiln_arena_reset", "destroyed arena: ignored", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    kiln_arena_reset(f->dead_arena);
})
ROW(arena_reset_worker_frame, "kiln_arena_reset", "wrong thread: a worker's frame arena from the test thread: ignored", KILN_LOGITEM_ARENA_WORKER_FRAME_RESET, SINK_A, COUNTED, 0, DOC, {
    kiln_ctx *w = worker_ctx(f);
    kiln_arena_reset(kiln_frame_arena(w));
})
ROW(arena_reset_worker_frame_in_job, "kiln_arena_reset", "inside a job: the worker's own frame arena: ignored", KILN_LOGITEM_ARENA_WORKER_FRAME_RESET, SINK_A, COUNTED, 0, DOC, {
    in_worker_job(f, OP_RESET_OWN_FRAME_ARENA);
})
ROW(arena_reset_driver_frame_open, "kiln_arena_reset", "the driver's frame arena while its frame is open: ignored", KILN_LOGITEM_ARENA_DRIVER_FRAME_RESET, SINK_A, COUNTED, 0, DOC, {
    kiln_frame_begin(f->ctx_a);
    kiln_arena_reset(kiln_frame_arena(f->ctx_a));
    kiln_frame_end(f->ctx_a);
})
ROW(arena_reset_frame_wrong_thread, "kiln_arena_reset", "wrong thread (KILN_DEBUG_OWNERSHIP): another thread resets ctx_a's frame arena", KILN_LOGITEM_ARENA_WRONG_THREAD, SINK_A, COUNTED, FX_OWNERSHIP, DOC, {
    kiln_frame_alloc(f->ctx_a, 64, 0);
    on_thread(f, OP_RESET_CTX_A_FRAME);
})

/* kiln_frame_arena */
ROW(frame_arena_null, "kiln_frame_arena", "UNDOC NULL ctx: NULL, CONTEXT_NULL", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_frame_arena(NULL));
})
ROW(frame_arena_detached, "kiln_frame_arena", "detached ctx: NULL (kiln_detach: any later use refused)", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_arena(f->detached));
})

/* kiln_frame_alloc */
ROW(frame_alloc_null, "kiln_frame_alloc", "NULL ctx: NULL", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_alloc(NULL, 64, 0));
})
ROW(frame_alloc_detached, "kiln_frame_alloc", "detached ctx: NULL", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_alloc(f->detached, 64, 0));
})
ROW(frame_alloc_forged, "kiln_frame_alloc", "UNDOC forged ctx (zeroed memory): NULL, CONTEXT_INVALID", KILN_LOGITEM_CONTEXT_INVALID, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_frame_alloc(FORGED_CTX, 64, 0));
})
ROW(frame_alloc_garbage, "kiln_frame_alloc", "UNDOC a pointer to bytes 0x77: NULL, CONTEXT_INVALID", KILN_LOGITEM_CONTEXT_INVALID, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    static _Alignas(64) unsigned char garbage[sizeof(void *) * 64];
    memset(garbage, 0x77, sizeof garbage);
    WANT_NULL(kiln_frame_alloc((kiln_ctx *)(void *)garbage, 64, 0));
})
ROW(frame_alloc_arena_as_ctx, "kiln_frame_alloc", "UNDOC an arena passed as the ctx: NULL, CONTEXT_INVALID", KILN_LOGITEM_CONTEXT_INVALID, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_frame_alloc((kiln_ctx *)(void *)f->arena_a, 64, 0));
})
ROW(frame_alloc_align_3, "kiln_frame_alloc", "align 3: NULL", KILN_LOGITEM_ARENA_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_alloc(f->ctx_a, 64, 3));
})
ROW(frame_alloc_align_24, "kiln_frame_alloc", "align 24: NULL", KILN_LOGITEM_ARENA_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_alloc(f->ctx_a, 64, 24));
})
ROW(frame_alloc_align_over_block, "kiln_frame_alloc", "align 2x the block size: NULL", KILN_LOGITEM_ARENA_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_alloc(f->ctx_a, 64, (size_t)128 << 10));
})
ROW(frame_alloc_size_max, "kiln_frame_alloc", "UNDOC size SIZE_MAX: NULL, ARENA_SIZE_OVERFLOW, counted", KILN_LOGITEM_ARENA_SIZE_OVERFLOW, SINK_A, COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_frame_alloc(f->ctx_a, SIZE_MAX, 0));
})
ROW(frame_alloc_size_half, "kiln_frame_alloc", "UNDOC size SIZE_MAX/2: NULL, ARENA_SIZE_OVERFLOW, counted", KILN_LOGITEM_ARENA_SIZE_OVERFLOW, SINK_A, COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_frame_alloc(f->ctx_a, SIZE_MAX / 2, 0));
})
ROW(frame_alloc_background_job, "kiln_frame_alloc", "inside a background job (KILN_DEBUG_CHECKS): NULL", KILN_LOGITEM_JOB_BACKGROUND_FRAME_ALLOC, SINK_A, COUNTED, FX_CHECKS, DOC, {
    f->rp = (void *)1;
    in_worker_job(f, OP_FRAME_ALLOC);
    WANT_NULL(f->rp);
})
ROW(frame_alloc_wrong_thread, "kiln_frame_alloc", "wrong thread (KILN_DEBUG_OWNERSHIP): ctx_a's frame memory from another thread: proceeds", KILN_LOGITEM_ARENA_WRONG_THREAD, SINK_A, COUNTED, FX_OWNERSHIP, DOC, {
    on_thread(f, OP_FRAME_ALLOC_CTX_A);
    cr_expect_not_null(f->rp, "the call proceeds");
})

/* kiln_frame_alloc_stamped: the stamp of a frame container's first allocation. The
 * fixture's ctx_a resets its own frame arena (it drives no clock): a reset is a frame. */
ROW(frame_alloc_stamped_null, "kiln_frame_alloc_stamped", "NULL ctx: NULL, the stamp untouched", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    uint64_t stamp = 0;
    WANT_NULL(kiln_frame_alloc_stamped(NULL, 64, 0, &stamp));
    WANT_EQ(stamp, 0u);
})
ROW(frame_alloc_stamped_detached, "kiln_frame_alloc_stamped", "detached ctx: NULL", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    uint64_t stamp = 0;
    WANT_NULL(kiln_frame_alloc_stamped(f->detached, 64, 0, &stamp));
})
ROW(frame_alloc_stamped_null_stamp, "kiln_frame_alloc_stamped", "NULL stamp (legal: kiln_frame_alloc)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, FX_CHECKS, DOC, {
    WANT_NOT_NULL(kiln_frame_alloc_stamped(f->ctx_a, 64, 0, NULL));
})
ROW(frame_alloc_stamped_stale, "kiln_frame_alloc_stamped", "a stamp from before the last reset (KILN_DEBUG_CHECKS): NULL", KILN_LOGITEM_FRAME_MEMORY_STALE, SINK_A, COUNTED, FX_CHECKS, DOC, {
    uint64_t stamp = 0;
    WANT_NOT_NULL(kiln_frame_alloc_stamped(f->ctx_a, 64, 0, &stamp));
    WANT(stamp != 0);
    WANT_NOT_NULL(kiln_frame_alloc_stamped(f->ctx_a, 64, 0, &stamp));
    kiln_arena_reset(kiln_frame_arena(f->ctx_a));
    WANT_NULL(kiln_frame_alloc_stamped(f->ctx_a, 64, 0, &stamp));
    uint64_t fresh = 0;
    WANT_NOT_NULL(kiln_frame_alloc_stamped(f->ctx_a, 64, 0, &fresh));
})
ROW(frame_alloc_stamped_stale_unchecked, "kiln_frame_alloc_stamped", "a stale stamp without KILN_DEBUG_CHECKS (legal: not compared)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    uint64_t stamp = 0;
    WANT_NOT_NULL(kiln_frame_alloc_stamped(f->ctx_a, 64, 0, &stamp));
    kiln_arena_reset(kiln_frame_arena(f->ctx_a));
    WANT_NOT_NULL(kiln_frame_alloc_stamped(f->ctx_a, 64, 0, &stamp));
})

/* kiln_frame_alloc_at */
ROW(frame_alloc_at_null, "kiln_frame_alloc_at", "NULL ctx: NULL", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_alloc_at(NULL, 64, 0, __FILE__, __LINE__));
})
ROW(frame_alloc_at_detached, "kiln_frame_alloc_at", "detached ctx: NULL", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_alloc_at(f->detached, 64, 0, __FILE__, __LINE__));
})
ROW(frame_alloc_at_detached_sites, "kiln_frame_alloc_at", "detached ctx (KILN_DEBUG_SITES): NULL", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, FX_SITES, DOC, {
    WANT_NULL(kiln_frame_alloc_at(f->detached, 64, 0, __FILE__, __LINE__));
})
ROW(frame_alloc_at_align_24, "kiln_frame_alloc_at", "align 24: NULL", KILN_LOGITEM_ARENA_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_alloc_at(f->ctx_a, 64, 24, __FILE__, __LINE__));
})
ROW(frame_alloc_at_align_3_sites, "kiln_frame_alloc_at", "align 3 (KILN_DEBUG_SITES): NULL", KILN_LOGITEM_ARENA_BAD_ALIGN, SINK_A, COUNTED, FX_SITES, DOC, {
    WANT_NULL(kiln_frame_alloc_at(f->ctx_a, 64, 3, __FILE__, __LINE__));
})

/* memory.h: the typed and overflow-checked helpers */
/* kiln_arena_alloc_array */
ROW(arena_alloc_array_null, "kiln_arena_alloc_array", "NULL arena: NULL", KILN_LOGITEM_ARENA_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_alloc_array(NULL, 4, 4, 0));
})
ROW(arena_alloc_array_destroyed, "kiln_arena_alloc_array", "destroyed arena: NULL", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_alloc_array(f->dead_arena, 4, 4, 0));
})
ROW(arena_alloc_array_overflow, "kiln_arena_alloc_array", "size: count SIZE_MAX/2+1 of 2 bytes overflows: NULL", KILN_LOGITEM_ARENA_SIZE_OVERFLOW, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_alloc_array(f->arena_a, SIZE_MAX / 2 + 1, 2, 0));
    cr_expect_not_null(kiln_arena_alloc_array(f->arena_a, 4, 4, 0), "the arena still works");
})
ROW(arena_alloc_array_align_3, "kiln_arena_alloc_array", "align 3: NULL", KILN_LOGITEM_ARENA_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_alloc_array(f->arena_a, 4, 4, 3));
})
ROW(arena_alloc_array_count_0, "kiln_arena_alloc_array", "count 0 (legal: a valid aligned pointer)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_NOT_NULL(kiln_arena_alloc_array(f->arena_a, 0, 16, 16));
})

/* kiln_frame_alloc_array */
ROW(frame_alloc_array_null, "kiln_frame_alloc_array", "NULL ctx: NULL", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_alloc_array(NULL, 4, 4, 0));
})
ROW(frame_alloc_array_detached, "kiln_frame_alloc_array", "detached ctx: NULL", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_alloc_array(f->detached, 4, 4, 0));
})
ROW(frame_alloc_array_overflow, "kiln_frame_alloc_array", "size: count 2 of SIZE_MAX/2+1 bytes overflows: NULL", KILN_LOGITEM_ARENA_SIZE_OVERFLOW, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_alloc_array(f->ctx_a, 2, SIZE_MAX / 2 + 1, 0));
})
ROW(frame_alloc_array_size_0, "kiln_frame_alloc_array", "size 0 (legal: a valid aligned pointer)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_NOT_NULL(kiln_frame_alloc_array(f->ctx_a, 8, 0, 0));
})

/* kiln_arena_alloc_array_at */
ROW(arena_alloc_array_at_null, "kiln_arena_alloc_array_at", "NULL arena: NULL", KILN_LOGITEM_ARENA_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_alloc_array_at(NULL, 4, 4, 0, __FILE__, __LINE__));
})
ROW(arena_alloc_array_at_overflow_sites, "kiln_arena_alloc_array_at", "size: overflow (KILN_DEBUG_SITES): NULL", KILN_LOGITEM_ARENA_SIZE_OVERFLOW, SINK_A, COUNTED, FX_SITES, DOC, {
    WANT_NULL(kiln_arena_alloc_array_at(f->arena_a, SIZE_MAX / 2 + 1, 2, 0, __FILE__, __LINE__));
})

/* kiln_frame_alloc_array_at */
ROW(frame_alloc_array_at_detached, "kiln_frame_alloc_array_at", "detached ctx: NULL", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_alloc_array_at(f->detached, 4, 4, 0, __FILE__, __LINE__));
})
ROW(frame_alloc_array_at_overflow_sites, "kiln_frame_alloc_array_at", "size: overflow (KILN_DEBUG_SITES): NULL", KILN_LOGITEM_ARENA_SIZE_OVERFLOW, SINK_A, COUNTED, FX_SITES, DOC, {
    WANT_NULL(kiln_frame_alloc_array_at(f->ctx_a, SIZE_MAX / 2 + 1, 2, 0, __FILE__, __LINE__));
})

/* kiln_arena_printf, kiln_arena_vprintf (through a variadic helper), kiln_arena_strdup */
ROW(arena_printf_null, "kiln_arena_printf", "NULL arena: NULL", KILN_LOGITEM_ARENA_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_printf(NULL, "%d", 1));
})
ROW(arena_printf_destroyed, "kiln_arena_printf", "destroyed arena: NULL", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_printf(f->dead_arena, "%d", 1));
})
ROW(arena_printf_null_fmt, "kiln_arena_printf", "NULL fmt: NULL", KILN_LOGITEM_ARENA_STRING_NULL, SINK_A, COUNTED, 0, DOC, {
    const char *fmt = NULL;
    WANT_NULL(kiln_arena_printf(f->arena_a, fmt));
})
ROW(arena_printf_bad_format, "kiln_arena_printf", "a wide string the C locale cannot encode: NULL", KILN_LOGITEM_ARENA_FORMAT_FAILED, SINK_A, COUNTED, 0, DOC, {
    static const wchar_t unencodable[] = { 0x263A, 0 };
    WANT_NULL(kiln_arena_printf(f->arena_a, "%ls", unencodable));
})
ROW(arena_vprintf_null, "kiln_arena_vprintf", "NULL arena: NULL", KILN_LOGITEM_ARENA_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_NULL(call_arena_vprintf(NULL, "%d", 1));
})
ROW(arena_vprintf_destroyed, "kiln_arena_vprintf", "destroyed arena: NULL", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(call_arena_vprintf(f->dead_arena, "%d", 1));
})
ROW(arena_strdup_null, "kiln_arena_strdup", "NULL arena: NULL", KILN_LOGITEM_ARENA_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_strdup(NULL, "x"));
})
ROW(arena_strdup_destroyed, "kiln_arena_strdup", "destroyed arena: NULL", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_strdup(f->dead_arena, "x"));
})
ROW(arena_strdup_null_string, "kiln_arena_strdup", "NULL s: NULL", KILN_LOGITEM_ARENA_STRING_NULL, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_strdup(f->arena_a, NULL));
})

/* kiln_frame_printf, kiln_frame_vprintf, kiln_frame_strdup */
ROW(frame_printf_null, "kiln_frame_printf", "NULL ctx: NULL", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_printf(NULL, "%d", 1));
})
ROW(frame_printf_detached, "kiln_frame_printf", "detached ctx: NULL", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_printf(f->detached, "%d", 1));
})
ROW(frame_printf_null_fmt, "kiln_frame_printf", "NULL fmt: NULL", KILN_LOGITEM_ARENA_STRING_NULL, SINK_A, COUNTED, 0, DOC, {
    const char *fmt = NULL;
    WANT_NULL(kiln_frame_printf(f->ctx_a, fmt));
})
ROW(frame_vprintf_detached, "kiln_frame_vprintf", "detached ctx: NULL", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(call_frame_vprintf(f->detached, "%d", 1));
})
ROW(frame_vprintf_bad_format, "kiln_frame_vprintf", "a wide string the C locale cannot encode: NULL", KILN_LOGITEM_ARENA_FORMAT_FAILED, SINK_A, COUNTED, 0, DOC, {
    static const wchar_t unencodable[] = { 0x263A, 0 };
    WANT_NULL(call_frame_vprintf(f->ctx_a, "%ls", unencodable));
})
ROW(frame_strdup_null, "kiln_frame_strdup", "NULL ctx: NULL", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_strdup(NULL, "x"));
})
ROW(frame_strdup_detached, "kiln_frame_strdup", "detached ctx: NULL", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_strdup(f->detached, "x"));
})
ROW(frame_strdup_null_string, "kiln_frame_strdup", "NULL s: NULL", KILN_LOGITEM_ARENA_STRING_NULL, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_frame_strdup(f->ctx_a, NULL));
})

/* kiln_arena_grow */
ROW(arena_grow_null, "kiln_arena_grow", "NULL arena: NULL", KILN_LOGITEM_ARENA_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_grow(NULL, NULL, 0, 16, 0));
})
ROW(arena_grow_destroyed, "kiln_arena_grow", "destroyed arena: NULL", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_arena_grow(f->dead_arena, NULL, 0, 16, 0));
})
ROW(arena_grow_align_24, "kiln_arena_grow", "align 24: NULL", KILN_LOGITEM_ARENA_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    void *p = kiln_arena_alloc(f->arena_a, 16, 0);
    WANT_NULL(kiln_arena_grow(f->arena_a, p, 16, 32, 24));
})
ROW(arena_grow_size_max, "kiln_arena_grow", "size: new_size SIZE_MAX: NULL, ptr kept", KILN_LOGITEM_ARENA_SIZE_OVERFLOW, SINK_A, COUNTED, 0, DOC, {
    char *p = kiln_arena_alloc(f->arena_a, 16, 0);
    WANT_NULL(kiln_arena_grow(f->arena_a, p, 16, SIZE_MAX, 0));
    memset(p, 0, 16);
})
ROW(arena_grow_foreign, "kiln_arena_grow", "a pointer of another arena (KILN_DEBUG_CHECKS): NULL", KILN_LOGITEM_ARENA_GROW_FOREIGN, SINK_A, COUNTED, FX_CHECKS, DOC, {
    void *p = kiln_arena_alloc(f->arena_b, 16, 0);
    WANT_NULL(kiln_arena_grow(f->arena_a, p, 16, 32, 0));
})
ROW(arena_grow_wrong_thread, "kiln_arena_grow", "wrong thread (KILN_DEBUG_OWNERSHIP): proceeds", KILN_LOGITEM_ARENA_WRONG_THREAD, SINK_A, COUNTED, FX_OWNERSHIP, DOC, {
    void *p = kiln_arena_alloc(f->arena_a, 64, 0);
    f->rp = p;
    on_thread(f, OP_ARENA_A_GROW);
    cr_expect_eq(f->rp, p, "the call proceeds, in place");
})

/* ======================= pool.h ======================= */

/* kiln_pool_create: "NULL on bad desc (logged)"; the items are the code's names. */
ROW(pool_create_null_rt, "kiln_pool_create", "UNDOC NULL runtime: NULL, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_pool_create(NULL, &(kiln_pool_desc){ .size = 32 }));
})
ROW(pool_create_forged_rt, "kiln_pool_create", "UNDOC forged runtime: NULL, RUNTIME_INVALID", KILN_LOGITEM_RUNTIME_INVALID, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_pool_create(FORGED_RT, &(kiln_pool_desc){ .size = 32 }));
})
ROW(pool_create_null_desc, "kiln_pool_create", "NULL desc: NULL", KILN_LOGITEM_POOL_NULL_DESC, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_create(f->a, NULL));
})
ROW(pool_create_size_0, "kiln_pool_create", "size 0: NULL", KILN_LOGITEM_POOL_BAD_SIZE, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_create(f->a, &(kiln_pool_desc){ .size = 0 }));
})
ROW(pool_create_size_max, "kiln_pool_create", "size SIZE_MAX: NULL", KILN_LOGITEM_POOL_BAD_SIZE, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_create(f->a, &(kiln_pool_desc){ .size = SIZE_MAX }));
})
ROW(pool_create_size_half, "kiln_pool_create", "size SIZE_MAX/2: NULL", KILN_LOGITEM_POOL_BAD_SIZE, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_create(f->a, &(kiln_pool_desc){ .size = SIZE_MAX / 2 }));
})
ROW(pool_create_size_over_quarter, "kiln_pool_create", "size a quarter block + 1: NULL", KILN_LOGITEM_POOL_BAD_SIZE, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_create(f->a, &(kiln_pool_desc){ .size = ((size_t)16 << 10) + 1 }));
})
ROW(pool_create_size_max_align, "kiln_pool_create", "size SIZE_MAX-7 align 8 (rounding overflows): NULL", KILN_LOGITEM_POOL_BAD_SIZE, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_create(f->a, &(kiln_pool_desc){ .size = SIZE_MAX - 7, .align = 8 }));
})
ROW(pool_create_bad_flags, "kiln_pool_create", "flags 0x80 (no KILN_POOL_* flag): NULL", KILN_LOGITEM_POOL_BAD_FLAGS, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_create(f->a, &(kiln_pool_desc){ .size = 32, .flags = 0x80 }));
})
ROW(pool_create_align_3, "kiln_pool_create", "align 3: NULL", KILN_LOGITEM_POOL_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_create(f->a, &(kiln_pool_desc){ .size = 32, .align = 3 }));
})
ROW(pool_create_align_24, "kiln_pool_create", "align 24: NULL", KILN_LOGITEM_POOL_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_create(f->a, &(kiln_pool_desc){ .size = 32, .align = 24 }));
})
ROW(pool_create_align_8192, "kiln_pool_create", "align 8192 (over 4096): NULL", KILN_LOGITEM_POOL_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_create(f->a, &(kiln_pool_desc){ .size = 32, .align = 8192 }));
})
ROW(pool_create_align_huge, "kiln_pool_create", "align SIZE_MAX/2+1: NULL", KILN_LOGITEM_POOL_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_create(f->a, &(kiln_pool_desc){ .size = 32, .align = SIZE_MAX / 2 + 1 }));
})
ROW(pool_create_magazine_1, "kiln_pool_create", "count: magazine_size 1: NULL", KILN_LOGITEM_POOL_BAD_MAGAZINE_SIZE, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_create(f->a, &(kiln_pool_desc){ .size = 32, .magazine_size = 1 }));
})
ROW(pool_create_magazine_huge, "kiln_pool_create", "count: magazine_size UINT32_MAX: NULL", KILN_LOGITEM_POOL_BAD_MAGAZINE_SIZE, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_create(f->a, &(kiln_pool_desc){ .size = 32, .magazine_size = UINT32_MAX }));
})
ROW(pool_create_null_name, "kiln_pool_create", "NULL name (legal: \"pool\")", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_pool *p = kiln_pool_create(f->a, &(kiln_pool_desc){ .size = 32 });
    WANT_NOT_NULL(p);
    cr_expect_str_eq(pool_stats(p).name, "pool", "%s", "want equal: pool_stats(p).name, \"pool\"");
    kiln_pool_destroy(p);
})

/* kiln_pool_destroy */
ROW(pool_destroy_null, "kiln_pool_destroy", "UNDOC NULL pool: no-op (as every other destroy)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, UNDOC, {
    kiln_pool_destroy(NULL);
})
ROW(pool_destroy_destroyed, "kiln_pool_destroy", "destroyed pool (destroyed twice)", KILN_LOGITEM_POOL_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    kiln_pool_destroy(f->dead_pool);
})

ROW(pool_create_reserve_over_capacity, "kiln_pool_create", "count: reserve 11 over capacity 10: NULL", KILN_LOGITEM_POOL_BAD_RESERVE, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_create(f->a, &(kiln_pool_desc){ .size = 32, .capacity = 10, .reserve = 11 }));
})
ROW(pool_create_reserve_huge, "kiln_pool_create", "size: reserve SIZE_MAX (its bytes overflow): NULL", KILN_LOGITEM_POOL_BAD_RESERVE, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_create(f->a, &(kiln_pool_desc){ .size = 32, .reserve = SIZE_MAX }));
})

/* kiln_pool_reserve */
ROW(pool_reserve_null, "kiln_pool_reserve", "NULL pool: 0", KILN_LOGITEM_POOL_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_pool_reserve(NULL, 10), 0u);
})
ROW(pool_reserve_destroyed, "kiln_pool_reserve", "destroyed pool: 0", KILN_LOGITEM_POOL_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_pool_reserve(f->dead_pool, 10), 0u);
})
ROW(pool_reserve_zero, "kiln_pool_reserve", "count 0 (legal: carves nothing, returns the figure)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_pool_reserve(f->pool_a, 0), 0u);
    WANT_EQ(pool_stats(f->pool_a).carved, 0u);
})
ROW(pool_reserve_over_capacity, "kiln_pool_reserve", "count: 11 over capacity 10: carves 10, returns 10", KILN_LOGITEM_POOL_RESERVE_SHORT, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_pool *p = kiln_pool_create(f->a, &(kiln_pool_desc){ .size = 32, .capacity = 10 });
    WANT_EQ(kiln_pool_reserve(p, 11), 10u);
    WANT_EQ(pool_stats(p).carved, 10u);
    kiln_pool_destroy(p);
})
ROW(pool_reserve_size_max_capped, "kiln_pool_reserve", "count: SIZE_MAX, capacity 10: carves 10, returns 10", KILN_LOGITEM_POOL_RESERVE_SHORT, SINK_A, NOT_COUNTED, 0, DOC, {
    kiln_pool *p = kiln_pool_create(f->a, &(kiln_pool_desc){ .size = 32, .capacity = 10 });
    WANT_EQ(kiln_pool_reserve(p, SIZE_MAX), 10u);
    kiln_pool_destroy(p);
})
ROW(pool_reserve_size_max, "kiln_pool_reserve", "size: SIZE_MAX objects without a capacity (bytes overflow): nothing carved", KILN_LOGITEM_POOL_RESERVE_TOO_LARGE, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_pool_reserve(f->pool_a, SIZE_MAX), 0u);
    WANT_EQ(pool_stats(f->pool_a).carved, 0u);
})

/* kiln_pool_trim */
ROW(pool_trim_null, "kiln_pool_trim", "NULL pool: 0", KILN_LOGITEM_POOL_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_pool_trim(NULL), 0u);
})
ROW(pool_trim_destroyed, "kiln_pool_trim", "destroyed pool: 0", KILN_LOGITEM_POOL_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_pool_trim(f->dead_pool), 0u);
})
ROW(pool_trim_empty, "kiln_pool_trim", "a pool that never carved (legal: 0)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_pool_trim(f->pool_a), 0u);
})

/* kiln_pool_flush */
ROW(pool_flush_null_ctx, "kiln_pool_flush", "NULL ctx: ignored, logged naming the pool", KILN_LOGITEM_CONTEXT_NULL, SINK_A, COUNTED, 0, DOC, {
    kiln_pool_flush(NULL, f->pool_a);
})
ROW(pool_flush_null_pool, "kiln_pool_flush", "NULL pool: ignored (the ctx names the runtime)", KILN_LOGITEM_POOL_NULL, SINK_A, COUNTED, 0, DOC, {
    kiln_pool_flush(f->ctx_a, NULL);
})
ROW(pool_flush_destroyed, "kiln_pool_flush", "destroyed pool: ignored", KILN_LOGITEM_POOL_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    kiln_pool_flush(f->ctx_a, f->dead_pool);
})
ROW(pool_flush_detached, "kiln_pool_flush", "detached ctx: ignored", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    kiln_pool_flush(f->detached, f->pool_a);
})
ROW(pool_flush_other_runtime, "kiln_pool_flush", "another runtime: ctx_b with pool_a: ignored", KILN_LOGITEM_POOL_WRONG_RUNTIME, SINK_A, COUNTED, 0, DOC, {
    void *o = kiln_pool_alloc(f->ctx_a, f->pool_a);
    kiln_pool_free(f->ctx_a, f->pool_a, o);
    uint64_t cached = pool_stats(f->pool_a).cached;
    kiln_pool_flush(f->ctx_b, f->pool_a);
    WANT_EQ(pool_stats(f->pool_a).cached, cached);
})

/* kiln_pool_alloc */
ROW(pool_alloc_null_ctx, "kiln_pool_alloc", "NULL ctx: NULL, logged naming the pool", KILN_LOGITEM_CONTEXT_NULL, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_alloc(NULL, f->pool_a));
})
ROW(pool_alloc_null_pool, "kiln_pool_alloc", "NULL pool: NULL (the ctx names the runtime)", KILN_LOGITEM_POOL_NULL, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_alloc(f->ctx_a, NULL));
})
ROW(pool_alloc_null_both, "kiln_pool_alloc", "NULL ctx and pool: NULL", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_alloc(NULL, NULL));
})
ROW(pool_alloc_destroyed, "kiln_pool_alloc", "destroyed pool: NULL", KILN_LOGITEM_POOL_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_alloc(f->ctx_a, f->dead_pool));
})
ROW(pool_alloc_detached, "kiln_pool_alloc", "detached ctx: NULL", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_alloc(f->detached, f->pool_a));
})
ROW(pool_alloc_other_runtime, "kiln_pool_alloc", "another runtime: ctx_b with pool_a: NULL, logged naming the pool", KILN_LOGITEM_POOL_WRONG_RUNTIME, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_alloc(f->ctx_b, f->pool_a));
    WANT_EQ(pool_stats(f->pool_a).live, 0u);
})
ROW(pool_alloc_other_runtime_bound, "kiln_pool_alloc", "another runtime: ctx_b (its cache of that slot bound to pool_b) with pool_a: NULL", KILN_LOGITEM_POOL_WRONG_RUNTIME, SINK_A, COUNTED, 0, DOC, {
    void *o = kiln_pool_alloc(f->ctx_b, f->pool_b);   /* binds ctx_b's cache at pool_b's index */
    WANT_NOT_NULL(o);
    WANT_NULL(kiln_pool_alloc(f->ctx_b, f->pool_a));
    WANT_EQ(pool_stats(f->pool_a).live, 0u);
    kiln_pool_free(f->ctx_b, f->pool_b, o);
})
ROW(pool_alloc_forged_ctx, "kiln_pool_alloc", "UNDOC forged ctx (zeroed memory): NULL, CONTEXT_INVALID naming the pool", KILN_LOGITEM_CONTEXT_INVALID, SINK_A, COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_pool_alloc(FORGED_CTX, f->pool_a));
})

/* kiln_pool_alloc_at */
ROW(pool_alloc_at_null_ctx, "kiln_pool_alloc_at", "NULL ctx: NULL, logged naming the pool", KILN_LOGITEM_CONTEXT_NULL, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_alloc_at(NULL, f->pool_a, __FILE__, __LINE__));
})
ROW(pool_alloc_at_null_pool, "kiln_pool_alloc_at", "NULL pool: NULL (the ctx names the runtime)", KILN_LOGITEM_POOL_NULL, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_alloc_at(f->ctx_a, NULL, __FILE__, __LINE__));
})
ROW(pool_alloc_at_destroyed, "kiln_pool_alloc_at", "destroyed pool: NULL", KILN_LOGITEM_POOL_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_alloc_at(f->ctx_a, f->dead_pool, __FILE__, __LINE__));
})
ROW(pool_alloc_at_destroyed_sites, "kiln_pool_alloc_at", "destroyed pool (KILN_DEBUG_SITES): NULL", KILN_LOGITEM_POOL_DESTROYED, SINK_A, COUNTED, FX_SITES, DOC, {
    WANT_NULL(kiln_pool_alloc_at(f->ctx_a, f->dead_pool, __FILE__, __LINE__));
})
ROW(pool_alloc_at_detached, "kiln_pool_alloc_at", "detached ctx: NULL", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_alloc_at(f->detached, f->pool_a, __FILE__, __LINE__));
})
ROW(pool_alloc_at_other_runtime, "kiln_pool_alloc_at", "another runtime: ctx_b with pool_a: NULL", KILN_LOGITEM_POOL_WRONG_RUNTIME, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_alloc_at(f->ctx_b, f->pool_a, __FILE__, __LINE__));
})
ROW(pool_alloc_at_null_file, "kiln_pool_alloc_at", "UNDOC NULL file (KILN_DEBUG_SITES): legal, no site", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, FX_SITES, UNDOC, {
    void *o = kiln_pool_alloc_at(f->ctx_a, f->pool_a, NULL, 0);
    WANT_NOT_NULL(o);
    kiln_pool_free(f->ctx_a, f->pool_a, o);
})

/* kiln_pool_free */
ROW(pool_free_null_obj, "kiln_pool_free", "NULL obj (legal: no-op)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_pool_free(f->ctx_a, f->pool_a, NULL);
})
ROW(pool_free_null_ctx, "kiln_pool_free", "UNDOC NULL ctx: ignored, obj stays live, logged naming the pool", KILN_LOGITEM_CONTEXT_NULL, SINK_A, COUNTED, 0, UNDOC, {
    void *o = kiln_pool_alloc(f->ctx_a, f->pool_a);
    kiln_pool_free(NULL, f->pool_a, o);
    cr_expect_eq(pool_stats(f->pool_a).live, 1u, "obj stays live");
})
ROW(pool_free_null_pool, "kiln_pool_free", "UNDOC NULL pool: ignored (the ctx names the runtime)", KILN_LOGITEM_POOL_NULL, SINK_A, COUNTED, 0, UNDOC, {
    void *o = kiln_pool_alloc(f->ctx_a, f->pool_a);
    kiln_pool_free(f->ctx_a, NULL, o);
    cr_expect_eq(pool_stats(f->pool_a).live, 1u, "obj stays live");
})
ROW(pool_free_destroyed, "kiln_pool_free", "destroyed pool: ignored", KILN_LOGITEM_POOL_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    kiln_pool *p = kiln_pool_create(f->a, &(kiln_pool_desc){ .name = "gone", .size = 32 });
    void *o = kiln_pool_alloc(f->ctx_a, p);
    WANT_NOT_NULL(o);
    kiln_pool_destroy(p);   /* POOL_OBJECTS_LIVE: a warning, cleared below */
    recording_log_clear(f->rec_a);
    kiln_pool_free(f->ctx_a, p, o);
})
ROW(pool_free_destroyed_no_obj, "kiln_pool_free", "destroyed pool, a pointer it never had: ignored", KILN_LOGITEM_POOL_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    int local;
    kiln_pool_free(f->ctx_a, f->dead_pool, &local);
})
ROW(pool_free_detached, "kiln_pool_free", "detached ctx: ignored, obj stays live", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    void *o = kiln_pool_alloc(f->ctx_a, f->pool_a);
    kiln_pool_free(f->detached, f->pool_a, o);
    cr_expect_eq(pool_stats(f->pool_a).live, 1u, "obj stays live");
})
ROW(pool_free_other_runtime_ctx, "kiln_pool_free", "another runtime: ctx_b frees pool_a's obj: ignored, obj stays live", KILN_LOGITEM_POOL_WRONG_RUNTIME, SINK_A, COUNTED, 0, DOC, {
    void *o = kiln_pool_alloc(f->ctx_a, f->pool_a);
    kiln_pool_free(f->ctx_b, f->pool_a, o);
    cr_expect_eq(pool_stats(f->pool_a).live, 1u, "obj stays live");
})
ROW(pool_free_other_runtime_obj, "kiln_pool_free", "another runtime: pool_b's obj into pool_a: ignored", KILN_LOGITEM_POOL_FOREIGN_POINTER, SINK_A, COUNTED, 0, DOC, {
    void *o = kiln_pool_alloc(f->ctx_b, f->pool_b);
    kiln_pool_free(f->ctx_a, f->pool_a, o);
    cr_expect_eq(pool_stats(f->pool_b).live, 1u, "pool_b's obj stays live");
    WANT_EQ(pool_stats(f->pool_a).bad_frees, 1u);
})
ROW(pool_free_other_pool_obj, "kiln_pool_free", "foreign pointer: another pool's obj (same runtime): ignored", KILN_LOGITEM_POOL_FOREIGN_POINTER, SINK_A, COUNTED, 0, DOC, {
    kiln_pool *other = kiln_pool_create(f->a, &(kiln_pool_desc){ .name = "other", .size = 32 });
    void *o = kiln_pool_alloc(f->ctx_a, other);
    kiln_pool_free(f->ctx_a, f->pool_a, o);
    WANT_EQ(pool_stats(other).live, 1u);
    kiln_pool_free(f->ctx_a, other, o);
    kiln_pool_destroy(other);
})
ROW(pool_free_stack_pointer, "kiln_pool_free", "foreign pointer: the stack: ignored", KILN_LOGITEM_POOL_FOREIGN_POINTER, SINK_A, COUNTED, 0, DOC, {
    int local = 0;
    kiln_pool_alloc(f->ctx_a, f->pool_a);   /* pool_a has a block */
    kiln_pool_free(f->ctx_a, f->pool_a, &local);
    WANT_EQ(pool_stats(f->pool_a).bad_frees, 1u);
})
ROW(pool_free_malloc_pointer, "kiln_pool_free", "foreign pointer: malloc'd memory: ignored", KILN_LOGITEM_POOL_FOREIGN_POINTER, SINK_A, COUNTED, 0, DOC, {
    void *m = malloc(64);
    kiln_pool_free(f->ctx_a, f->pool_a, m);
    free(m);
})
ROW(pool_free_forged_pointer, "kiln_pool_free", "forged pointer (random bits, unmapped): ignored", KILN_LOGITEM_POOL_FOREIGN_POINTER, SINK_A, COUNTED, 0, DOC, {
    kiln_pool_free(f->ctx_a, f->pool_a, (void *)(uintptr_t)0x7ead12345670ull);
})
ROW(pool_free_arena_pointer, "kiln_pool_free", "foreign pointer: an arena allocation (a kiln block of another owner): ignored", KILN_LOGITEM_POOL_FOREIGN_POINTER, SINK_A, COUNTED, 0, DOC, {
    void *p = kiln_arena_alloc(f->arena_a, 64, 0);
    kiln_pool_free(f->ctx_a, f->pool_a, p);
})
ROW(pool_free_block_header, "kiln_pool_free", "foreign pointer: the block's header (block start): ignored", KILN_LOGITEM_POOL_FOREIGN_POINTER, SINK_A, COUNTED, 0, DOC, {
    void *o = kiln_pool_alloc(f->ctx_a, f->pool_a);
    void *block = (void *)((uintptr_t)o & ~(((uintptr_t)64 << 10) - 1));
    kiln_pool_free(f->ctx_a, f->pool_a, block);
    WANT_EQ(pool_stats(f->pool_a).live, 1u);
})
ROW(pool_free_interior_checked, "kiln_pool_free", "interior pointer (KILN_POOL_CHECKED): ignored", KILN_LOGITEM_POOL_INTERIOR_POINTER, SINK_A, COUNTED, 0, DOC, {
    kiln_pool *p = kiln_pool_create(f->a, &(kiln_pool_desc){ .name = "checked", .size = 32, .flags = KILN_POOL_CHECKED });
    char *o = kiln_pool_alloc(f->ctx_a, p);
    kiln_pool_free(f->ctx_a, p, o + 8);
    WANT_EQ(pool_stats(p).live, 1u);
    kiln_pool_free(f->ctx_a, p, o);
    kiln_pool_destroy(p);
})
ROW(pool_free_interior_debug_checks, "kiln_pool_free", "interior pointer (KILN_DEBUG_CHECKS): ignored", KILN_LOGITEM_POOL_INTERIOR_POINTER, SINK_A, COUNTED, FX_CHECKS, DOC, {
    char *o = kiln_pool_alloc(f->ctx_a, f->pool_a);
    kiln_pool_free(f->ctx_a, f->pool_a, o + 1);
    WANT_EQ(pool_stats(f->pool_a).live, 1u);
})
ROW(pool_free_double_checked, "kiln_pool_free", "double free (KILN_POOL_CHECKED): ignored", KILN_LOGITEM_POOL_DOUBLE_FREE, SINK_A, COUNTED, 0, DOC, {
    kiln_pool *p = kiln_pool_create(f->a, &(kiln_pool_desc){ .name = "checked", .size = 32, .flags = KILN_POOL_CHECKED });
    void *o = kiln_pool_alloc(f->ctx_a, p);
    kiln_pool_free(f->ctx_a, p, o);
    kiln_pool_free(f->ctx_a, p, o);
    WANT_EQ(pool_stats(p).double_frees, 1u);
    kiln_pool_destroy(p);
})
ROW(pool_free_double_debug_checks, "kiln_pool_free", "double free (KILN_DEBUG_CHECKS): ignored", KILN_LOGITEM_POOL_DOUBLE_FREE, SINK_A, COUNTED, FX_CHECKS, DOC, {
    void *o = kiln_pool_alloc(f->ctx_a, f->pool_a);
    kiln_pool_free(f->ctx_a, f->pool_a, o);
    kiln_pool_free(f->ctx_a, f->pool_a, o);
    WANT_EQ(pool_stats(f->pool_a).double_frees, 1u);
})

/* ======================= handles.h ======================= */

/* kiln_handles_create */
ROW(handles_create_null_rt, "kiln_handles_create", "UNDOC NULL runtime: NULL, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_handles_create(NULL, &(kiln_handles_desc){ .item_size = 16 }));
})
ROW(handles_create_forged_rt, "kiln_handles_create", "UNDOC forged runtime: NULL, RUNTIME_INVALID", KILN_LOGITEM_RUNTIME_INVALID, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_handles_create(FORGED_RT, &(kiln_handles_desc){ .item_size = 16 }));
})
ROW(handles_create_null_desc, "kiln_handles_create", "NULL desc: NULL", KILN_LOGITEM_HANDLES_NULL_DESC, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_handles_create(f->a, NULL));
})
ROW(handles_create_item_size_0, "kiln_handles_create", "item_size 0: NULL", KILN_LOGITEM_HANDLES_BAD_ITEM_SIZE, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_handles_create(f->a, &(kiln_handles_desc){ .item_size = 0 }));
})
ROW(handles_create_item_size_max, "kiln_handles_create", "item_size SIZE_MAX: NULL", KILN_LOGITEM_HANDLES_BAD_ITEM_SIZE, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_handles_create(f->a, &(kiln_handles_desc){ .item_size = SIZE_MAX }));
})
ROW(handles_create_item_size_half, "kiln_handles_create", "item_size SIZE_MAX/2: NULL", KILN_LOGITEM_HANDLES_BAD_ITEM_SIZE, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_handles_create(f->a, &(kiln_handles_desc){ .item_size = SIZE_MAX / 2 }));
})
ROW(handles_create_item_size_over, "kiln_handles_create", "item_size 1 MiB + 1: NULL", KILN_LOGITEM_HANDLES_BAD_ITEM_SIZE, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_handles_create(f->a, &(kiln_handles_desc){ .item_size = ((size_t)1 << 20) + 1 }));
})
ROW(handles_create_align_3, "kiln_handles_create", "item_align 3: NULL", KILN_LOGITEM_HANDLES_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_handles_create(f->a, &(kiln_handles_desc){ .item_size = 16, .item_align = 3 }));
})
ROW(handles_create_align_24, "kiln_handles_create", "item_align 24: NULL", KILN_LOGITEM_HANDLES_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_handles_create(f->a, &(kiln_handles_desc){ .item_size = 16, .item_align = 24 }));
})
ROW(handles_create_align_8192, "kiln_handles_create", "item_align 8192 (over 4096): NULL", KILN_LOGITEM_HANDLES_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_handles_create(f->a, &(kiln_handles_desc){ .item_size = 16, .item_align = 8192 }));
})
ROW(handles_create_capacity_over, "kiln_handles_create", "count: capacity 2^24: NULL", KILN_LOGITEM_HANDLES_BAD_CAPACITY, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_handles_create(f->a, &(kiln_handles_desc){ .item_size = 16, .capacity = 1u << 24 }));
})
ROW(handles_create_reserve_over, "kiln_handles_create", "count: reserve 9 over capacity 8: NULL", KILN_LOGITEM_HANDLES_BAD_RESERVE, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_handles_create(f->a, &(kiln_handles_desc){ .item_size = 16, .capacity = 8, .reserve = 9 }));
})
ROW(handles_create_capacity_max, "kiln_handles_create", "count: capacity UINT32_MAX: NULL", KILN_LOGITEM_HANDLES_BAD_CAPACITY, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_handles_create(f->a, &(kiln_handles_desc){ .item_size = 16, .capacity = UINT32_MAX }));
})
ROW(handles_create_over_limit, "kiln_handles_create", "size*count over memory_limit (1 MiB items x 2^24-1 = 16 TiB, limit 64 MiB): NULL, logged (memory runs out: not counted)", KILN_LOGITEM_MEMORY_LIMIT_REACHED, SINK_A, NOT_COUNTED, FX_LIMIT, UNDOC, {
    WANT_NULL(kiln_handles_create(f->a, &(kiln_handles_desc){ .item_size = (size_t)1 << 20, .capacity = (1u << 24) - 1 }));
})

/* kiln_handles_destroy */
ROW(handles_destroy_null, "kiln_handles_destroy", "NULL table (legal: no-op)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_handles_destroy(NULL);
})
ROW(handles_destroy_destroyed, "kiln_handles_destroy", "destroyed table (destroyed twice)", KILN_LOGITEM_HANDLES_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    kiln_handles_destroy(f->dead_table);
})

/* kiln_handle_alloc */
ROW(handle_alloc_null_ctx, "kiln_handle_alloc", "NULL ctx: {0}, *item NULL, logged naming the table", KILN_LOGITEM_CONTEXT_NULL, SINK_A, COUNTED, 0, DOC, {
    void *item = (void *)1;
    WANT(kiln_handle_is_null(kiln_handle_alloc(NULL, f->table_a, &item)));
    WANT_NULL(item);
})
ROW(handle_alloc_null_table, "kiln_handle_alloc", "NULL table: {0}, *item NULL (the ctx names the runtime)", KILN_LOGITEM_HANDLES_NULL, SINK_A, COUNTED, 0, DOC, {
    void *item = (void *)1;
    WANT(kiln_handle_is_null(kiln_handle_alloc(f->ctx_a, NULL, &item)));
    WANT_NULL(item);
})
ROW(handle_alloc_null_both, "kiln_handle_alloc", "NULL ctx and table: {0}", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    void *item = (void *)1;
    WANT(kiln_handle_is_null(kiln_handle_alloc(NULL, NULL, &item)));
    WANT_NULL(item);
})
ROW(handle_alloc_null_item, "kiln_handle_alloc", "NULL item out-pointer (legal)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_handle h = kiln_handle_alloc(f->ctx_a, f->table_a, NULL);
    WANT(!kiln_handle_is_null(h));
    WANT_NOT_NULL(kiln_handle_get(f->table_a, h));
})
ROW(handle_alloc_destroyed, "kiln_handle_alloc", "destroyed table: {0}, *item NULL", KILN_LOGITEM_HANDLES_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    void *item = (void *)1;
    WANT(kiln_handle_is_null(kiln_handle_alloc(f->ctx_a, f->dead_table, &item)));
    WANT_NULL(item);
})
ROW(handle_alloc_detached, "kiln_handle_alloc", "detached ctx: {0}, *item NULL", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    void *item = (void *)1;
    WANT(kiln_handle_is_null(kiln_handle_alloc(f->detached, f->table_a, &item)));
    WANT_NULL(item);
})
ROW(handle_alloc_other_runtime, "kiln_handle_alloc", "another runtime: ctx_b with table_a: {0}, logged naming the table", KILN_LOGITEM_HANDLES_WRONG_RUNTIME, SINK_A, COUNTED, 0, DOC, {
    void *item = (void *)1;
    WANT(kiln_handle_is_null(kiln_handle_alloc(f->ctx_b, f->table_a, &item)));
    WANT_NULL(item);
    WANT_EQ(table_stats(f->table_a).live, 0u);
})
ROW(handle_alloc_forged_ctx, "kiln_handle_alloc", "UNDOC forged ctx (zeroed memory): {0}, CONTEXT_INVALID naming the table", KILN_LOGITEM_CONTEXT_INVALID, SINK_A, COUNTED, 0, UNDOC, {
    void *item = (void *)1;
    WANT(kiln_handle_is_null(kiln_handle_alloc(FORGED_CTX, f->table_a, &item)));
    WANT_NULL(item);
})

/* kiln_handle_alloc_at */
ROW(handle_alloc_at_null_ctx, "kiln_handle_alloc_at", "NULL ctx: {0}, logged naming the table", KILN_LOGITEM_CONTEXT_NULL, SINK_A, COUNTED, 0, DOC, {
    void *item = (void *)1;
    WANT(kiln_handle_is_null(kiln_handle_alloc_at(NULL, f->table_a, &item, __FILE__, __LINE__)));
    WANT_NULL(item);
})
ROW(handle_alloc_at_null_table, "kiln_handle_alloc_at", "NULL table: {0} (the ctx names the runtime)", KILN_LOGITEM_HANDLES_NULL, SINK_A, COUNTED, 0, DOC, {
    void *item = (void *)1;
    WANT(kiln_handle_is_null(kiln_handle_alloc_at(f->ctx_a, NULL, &item, __FILE__, __LINE__)));
    WANT_NULL(item);
})
ROW(handle_alloc_at_destroyed, "kiln_handle_alloc_at", "destroyed table: {0}", KILN_LOGITEM_HANDLES_DESTROYED, SINK_A, COUNTED, FX_SITES, DOC, {
    void *item = (void *)1;
    WANT(kiln_handle_is_null(kiln_handle_alloc_at(f->ctx_a, f->dead_table, &item, __FILE__, __LINE__)));
    WANT_NULL(item);
})
ROW(handle_alloc_at_detached, "kiln_handle_alloc_at", "detached ctx: {0}", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, FX_SITES, DOC, {
    void *item = (void *)1;
    WANT(kiln_handle_is_null(kiln_handle_alloc_at(f->detached, f->table_a, &item, __FILE__, __LINE__)));
    WANT_NULL(item);
})
ROW(handle_alloc_at_other_runtime, "kiln_handle_alloc_at", "another runtime: ctx_b with table_a: {0}", KILN_LOGITEM_HANDLES_WRONG_RUNTIME, SINK_A, COUNTED, FX_SITES, DOC, {
    void *item = (void *)1;
    WANT(kiln_handle_is_null(kiln_handle_alloc_at(f->ctx_b, f->table_a, &item, __FILE__, __LINE__)));
    WANT_NULL(item);
})
ROW(handle_alloc_at_null_file, "kiln_handle_alloc_at", "NULL file (KILN_DEBUG_SITES; the typed wrappers pass it): legal", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, FX_SITES, DOC, {
    WANT(!kiln_handle_is_null(kiln_handle_alloc_at(f->ctx_a, f->table_a, NULL, NULL, 0)));
})

/* kiln_handle_get: stale / foreign / zero / forged lookups are normal use: NULL,
 * counted in the table's stats, not logged. */
ROW(handle_get_null_table, "kiln_handle_get", "UNDOC NULL table: NULL, HANDLES_NULL (not a stale lookup: a bug)", KILN_LOGITEM_HANDLES_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_handle_get(NULL, (kiln_handle){ 0 }));
})
ROW(handle_get_destroyed, "kiln_handle_get", "destroyed table: NULL (later calls logged and refused)", KILN_LOGITEM_HANDLES_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_handle_get(f->dead_table, (kiln_handle){ 0x123 }));
})
ROW(handle_get_destroyed_live_handle, "kiln_handle_get", "destroyed table, a handle that was live in it: NULL", KILN_LOGITEM_HANDLES_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    kiln_handles *t = kiln_handles_create(f->a, &(kiln_handles_desc){ .name = "gone", .item_size = 16 });
    kiln_handle h = live_handle(f->ctx_a, t);
    kiln_handle_free(f->ctx_a, t, h);
    kiln_handle h2 = live_handle(f->ctx_a, t);
    kiln_handle_free(f->ctx_a, t, h2);
    kiln_handles_destroy(t);
    WANT_NULL(kiln_handle_get(t, h));
})
ROW(handle_get_zero, "kiln_handle_get", "zero handle: NULL, counted as stale, not logged", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_handle_get(f->table_a, (kiln_handle){ 0 }));
    WANT_EQ(table_stats(f->table_a).stale_lookups, 1u);
})
ROW(handle_get_stale, "kiln_handle_get", "stale (freed) handle: NULL, counted, not logged", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_handle h = live_handle(f->ctx_a, f->table_a);
    kiln_handle_free(f->ctx_a, f->table_a, h);
    WANT_NULL(kiln_handle_get(f->table_a, h));
    WANT_EQ(table_stats(f->table_a).stale_lookups, 1u);
})
ROW(handle_get_forged, "kiln_handle_get", "forged handle (random bits): NULL, counted, not logged", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    live_handle(f->ctx_a, f->table_a);
    WANT_NULL(kiln_handle_get(f->table_a, (kiln_handle){ 0x9e3779b97f4a7c15ull }));
    kiln_handles_stats s = table_stats(f->table_a);
    WANT_EQ(s.stale_lookups + s.foreign_handles, 1u);
})
ROW(handle_get_forged_generation, "kiln_handle_get", "forged generation (a live handle's gen + 2): NULL, counted as stale", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_handle h = live_handle(f->ctx_a, f->table_a);
    h.bits += (uint64_t)2 << 32;
    WANT_NULL(kiln_handle_get(f->table_a, h));
    WANT_EQ(table_stats(f->table_a).stale_lookups, 1u);
})
ROW(handle_get_foreign_table, "kiln_handle_get", "foreign handle: table_a2's (same runtime): NULL, counted foreign", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_handle h = live_handle(f->ctx_a, f->table_a2);
    live_handle(f->ctx_a, f->table_a);
    WANT_NULL(kiln_handle_get(f->table_a, h));
    WANT_EQ(table_stats(f->table_a).foreign_handles, 1u);
})
ROW(handle_get_other_runtime, "kiln_handle_get", "another runtime: table_b's handle in table_a: NULL, counted foreign", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_handle h = live_handle(f->ctx_b, f->table_b);
    live_handle(f->ctx_a, f->table_a);
    WANT_NULL(kiln_handle_get(f->table_a, h));
    WANT_EQ(table_stats(f->table_a).foreign_handles, 1u);
})

/* kiln_handle_get_missed: the inline get's miss */
ROW(handle_get_missed_null_table, "kiln_handle_get_missed", "UNDOC NULL table: NULL, HANDLES_NULL, as kiln_handle_get", KILN_LOGITEM_HANDLES_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT_NULL(kiln_handle_get_missed(NULL, (kiln_handle){ 0 }));
})
ROW(handle_get_missed_destroyed, "kiln_handle_get_missed", "destroyed table: NULL, HANDLES_DESTROYED", KILN_LOGITEM_HANDLES_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_handle_get_missed(f->dead_table, (kiln_handle){ 0x123 }));
})
ROW(handle_get_missed_live, "kiln_handle_get_missed", "a live handle (not a miss): NULL, counted as stale, as documented", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_handle h = live_handle(f->ctx_a, f->table_a);
    WANT_NULL(kiln_handle_get_missed(f->table_a, h));
    WANT_EQ(table_stats(f->table_a).stale_lookups, 1u);
    WANT_NOT_NULL(kiln_handle_get(f->table_a, h));
})
ROW(handle_get_missed_foreign, "kiln_handle_get_missed", "another table's handle: NULL, counted foreign", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_handle h = live_handle(f->ctx_a, f->table_a2);
    WANT_NULL(kiln_handle_get_missed(f->table_a, h));
    WANT_EQ(table_stats(f->table_a).foreign_handles, 1u);
})

/* kiln_handle_free */
ROW(handle_free_null_ctx, "kiln_handle_free", "NULL ctx: false, item stays live, logged naming the table", KILN_LOGITEM_CONTEXT_NULL, SINK_A, COUNTED, 0, DOC, {
    kiln_handle h = live_handle(f->ctx_a, f->table_a);
    WANT(!kiln_handle_free(NULL, f->table_a, h));
    WANT_NOT_NULL(kiln_handle_get(f->table_a, h));
})
ROW(handle_free_null_table, "kiln_handle_free", "NULL table: false (the ctx names the runtime)", KILN_LOGITEM_HANDLES_NULL, SINK_A, COUNTED, 0, DOC, {
    kiln_handle h = live_handle(f->ctx_a, f->table_a);
    WANT(!kiln_handle_free(f->ctx_a, NULL, h));
    WANT_NOT_NULL(kiln_handle_get(f->table_a, h));
})
ROW(handle_free_destroyed, "kiln_handle_free", "destroyed table: false", KILN_LOGITEM_HANDLES_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    WANT(!kiln_handle_free(f->ctx_a, f->dead_table, (kiln_handle){ 0x100000001ull }));
})
ROW(handle_free_detached, "kiln_handle_free", "detached ctx: false, item stays live", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    kiln_handle h = live_handle(f->ctx_a, f->table_a);
    WANT(!kiln_handle_free(f->detached, f->table_a, h));
    WANT_NOT_NULL(kiln_handle_get(f->table_a, h));
})
ROW(handle_free_other_runtime_ctx, "kiln_handle_free", "another runtime: ctx_b frees table_a's handle: false, item stays live", KILN_LOGITEM_HANDLES_WRONG_RUNTIME, SINK_A, COUNTED, 0, DOC, {
    kiln_handle h = live_handle(f->ctx_a, f->table_a);
    WANT(!kiln_handle_free(f->ctx_b, f->table_a, h));
    WANT_NOT_NULL(kiln_handle_get(f->table_a, h));
})
ROW(handle_free_stale, "kiln_handle_free", "stale (freed) handle: false", KILN_LOGITEM_HANDLE_DOUBLE_FREE, SINK_A, COUNTED, 0, DOC, {
    kiln_handle h = live_handle(f->ctx_a, f->table_a);
    WANT(kiln_handle_free(f->ctx_a, f->table_a, h));
    WANT(!kiln_handle_free(f->ctx_a, f->table_a, h));
    WANT_EQ(table_stats(f->table_a).double_frees, 1u);
})
ROW(handle_free_stale_after_frame, "kiln_handle_free", "stale handle, its slot reused after a frame end: false, the new item stays", KILN_LOGITEM_HANDLE_DOUBLE_FREE, SINK_A, COUNTED, 0, DOC, {
    kiln_handles *t = kiln_handles_create(f->a, &(kiln_handles_desc){ .name = "one", .item_size = 16, .capacity = 1 });
    kiln_frame_begin(f->ctx_a);
    kiln_handle h = live_handle(f->ctx_a, t);
    kiln_handle_free(f->ctx_a, t, h);
    kiln_frame_end(f->ctx_a);
    kiln_frame_begin(f->ctx_a);
    kiln_handle h2 = live_handle(f->ctx_a, t);
    WANT(!kiln_handle_free(f->ctx_a, t, h));
    cr_expect_not_null(kiln_handle_get(t, h2), "the slot's new item is untouched");
    kiln_handle_free(f->ctx_a, t, h2);   /* before the frame end: no HANDLES_CAPACITY_NEAR */
    kiln_frame_end(f->ctx_a);
    kiln_handles_destroy(t);
})
ROW(handle_free_zero, "kiln_handle_free", "zero handle: false", KILN_LOGITEM_HANDLE_NULL, SINK_A, COUNTED, 0, DOC, {
    WANT(!kiln_handle_free(f->ctx_a, f->table_a, (kiln_handle){ 0 }));
})
ROW(handle_free_forged, "kiln_handle_free", "forged handle (random bits): false", KILN_LOGITEM_HANDLE_FOREIGN, SINK_A, COUNTED, 0, DOC, {
    live_handle(f->ctx_a, f->table_a);
    WANT(!kiln_handle_free(f->ctx_a, f->table_a, (kiln_handle){ 0x9e3779b97f4a7c15ull }));
})
ROW(handle_free_forged_generation, "kiln_handle_free", "forged generation (a live handle's gen + 2): false, the item stays", KILN_LOGITEM_HANDLE_FOREIGN, SINK_A, COUNTED, 0, DOC, {
    kiln_handle h = live_handle(f->ctx_a, f->table_a);
    kiln_handle forged = { h.bits + ((uint64_t)2 << 32) };
    WANT(!kiln_handle_free(f->ctx_a, f->table_a, forged));
    WANT_NOT_NULL(kiln_handle_get(f->table_a, h));
})
ROW(handle_free_foreign_table, "kiln_handle_free", "foreign handle: table_a2's into table_a: false, both items stay", KILN_LOGITEM_HANDLE_FOREIGN, SINK_A, COUNTED, 0, DOC, {
    kiln_handle mine = live_handle(f->ctx_a, f->table_a);
    kiln_handle h = live_handle(f->ctx_a, f->table_a2);
    WANT(!kiln_handle_free(f->ctx_a, f->table_a, h));
    WANT_NOT_NULL(kiln_handle_get(f->table_a2, h));
    WANT_NOT_NULL(kiln_handle_get(f->table_a, mine));
})
ROW(handle_free_other_runtime_handle, "kiln_handle_free", "another runtime: table_b's handle into table_a: false", KILN_LOGITEM_HANDLE_FOREIGN, SINK_A, COUNTED, 0, DOC, {
    kiln_handle mine = live_handle(f->ctx_a, f->table_a);
    kiln_handle h = live_handle(f->ctx_b, f->table_b);
    WANT(!kiln_handle_free(f->ctx_a, f->table_a, h));
    WANT_NOT_NULL(kiln_handle_get(f->table_b, h));
    WANT_NOT_NULL(kiln_handle_get(f->table_a, mine));
})

/* kiln_handles_quiescent */
ROW(handles_quiescent_null, "kiln_handles_quiescent", "UNDOC NULL ctx: ignored, CONTEXT_NULL", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    kiln_handles_quiescent(NULL);
})
ROW(handles_quiescent_detached, "kiln_handles_quiescent", "detached ctx: ignored (kiln_detach: any later use refused)", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    kiln_handles_quiescent(f->detached);
})

/* kiln_stats_handles */
ROW(stats_handles_null_rt, "kiln_stats_handles", "UNDOC NULL runtime: 0, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    kiln_handles_stats s[2];
    WANT_EQ(kiln_stats_handles(NULL, s, 2), 0u);
})
ROW(stats_handles_null_out, "kiln_stats_handles", "UNDOC NULL out with cap 2 (out may be NULL only with cap 0): 0, STATS_NULL_OUT", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, UNDOC, {
    WANT_EQ(kiln_stats_handles(f->a, NULL, 2), 0u);
})
ROW(stats_handles_null_out_cap_0, "kiln_stats_handles", "NULL out with cap 0 (legal: the count)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_stats_handles(f->a, NULL, 0), 2u);
})

/* kiln_handles_stats_get */
ROW(handles_stats_get_null_table, "kiln_handles_stats_get", "NULL table: false, *out zeroed", KILN_LOGITEM_HANDLES_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_handles_stats s;
    memset(&s, 0xab, sizeof s);
    WANT(!kiln_handles_stats_get(NULL, &s));
    WANT(all_zero(&s, sizeof s));
})
ROW(handles_stats_get_null_out, "kiln_handles_stats_get", "NULL out: false", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, DOC, {
    WANT(!kiln_handles_stats_get(f->table_a, NULL));
})
ROW(handles_stats_get_destroyed, "kiln_handles_stats_get", "destroyed table (legal: its figures until kiln_destroy)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_handles_stats s;
    WANT(kiln_handles_stats_get(f->dead_table, &s));
    cr_expect_str_eq(s.name, "dead", "%s", "want equal: s.name, \"dead\"");
})

/* kiln_handles_foreach / kiln_handles_parallel_for: a refused walk visits nothing. */
ROW(handles_foreach_null_table, "kiln_handles_foreach", "NULL table: nothing visited, HANDLES_NULL", KILN_LOGITEM_HANDLES_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    int visits = 0;
    kiln_handles_foreach(NULL, visit_count, &visits);
    WANT_EQ(visits, 0);
})
ROW(handles_foreach_destroyed, "kiln_handles_foreach", "destroyed table: nothing visited", KILN_LOGITEM_HANDLES_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    int visits = 0;
    kiln_handles_foreach(f->dead_table, visit_count, &visits);
    WANT_EQ(visits, 0);
})
ROW(handles_foreach_null_fn, "kiln_handles_foreach", "NULL fn: nothing visited, HANDLES_NULL_VISIT", KILN_LOGITEM_HANDLES_NULL_VISIT, SINK_A, COUNTED, 0, DOC, {
    kiln_handle h = kiln_handle_alloc(f->ctx_a, f->table_a, NULL);
    kiln_handles_foreach(f->table_a, NULL, NULL);
    WANT(kiln_handle_free(f->ctx_a, f->table_a, h));
})
ROW(handles_foreach_destroy_inside, "kiln_handles_foreach", "kiln_handles_destroy from inside a visit: refused, the walk finishes", KILN_LOGITEM_HANDLES_WALK_ACTIVE, SINK_A, COUNTED, 0, DOC, {
    kiln_handle h = kiln_handle_alloc(f->ctx_a, f->table_a, NULL);
    kiln_handles_foreach(f->table_a, visit_destroy, f->table_a);
    WANT_NOT_NULL(kiln_handle_get(f->table_a, h));
    WANT(kiln_handle_free(f->ctx_a, f->table_a, h));
})
ROW(handles_parallel_for_null_ctx, "kiln_handles_parallel_for", "NULL ctx: nothing visited, CONTEXT_NULL", KILN_LOGITEM_CONTEXT_NULL, SINK_A, COUNTED, 0, DOC, {
    int visits = 0;
    kiln_handles_parallel_for(NULL, f->table_a, 0, visit_count, &visits);
    WANT_EQ(visits, 0);
})
ROW(handles_parallel_for_detached, "kiln_handles_parallel_for", "detached ctx: nothing visited", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    int visits = 0;
    kiln_handles_parallel_for(f->detached, f->table_a, 0, visit_count, &visits);
    WANT_EQ(visits, 0);
})
ROW(handles_parallel_for_other_runtime, "kiln_handles_parallel_for", "ctx of another runtime: nothing visited, HANDLES_WRONG_RUNTIME", KILN_LOGITEM_HANDLES_WRONG_RUNTIME, SINK_A, COUNTED, 0, DOC, {
    int visits = 0;
    kiln_handles_parallel_for(f->ctx_b, f->table_a, 0, visit_count, &visits);
    WANT_EQ(visits, 0);
})
ROW(handles_parallel_for_null_table, "kiln_handles_parallel_for", "NULL table: nothing visited, HANDLES_NULL through ctx's runtime", KILN_LOGITEM_HANDLES_NULL, SINK_A, COUNTED, 0, DOC, {
    int visits = 0;
    kiln_handles_parallel_for(f->ctx_a, NULL, 0, visit_count, &visits);
    WANT_EQ(visits, 0);
})
ROW(handles_parallel_for_destroyed, "kiln_handles_parallel_for", "destroyed table: nothing visited", KILN_LOGITEM_HANDLES_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    int visits = 0;
    kiln_handles_parallel_for(f->ctx_a, f->dead_table, 0, visit_count, &visits);
    WANT_EQ(visits, 0);
})
ROW(handles_parallel_for_null_fn, "kiln_handles_parallel_for", "NULL fn: nothing visited, HANDLES_NULL_VISIT", KILN_LOGITEM_HANDLES_NULL_VISIT, SINK_A, COUNTED, 0, DOC, {
    kiln_handles_parallel_for(f->ctx_a, f->table_a, 0, NULL, NULL);
})

/* The typed wrappers of KILN_HANDLE_TYPE(mob, struct mob) */
ROW(typed_create_null_rt, "KILN_HANDLE_TYPE name_table_create", "UNDOC NULL runtime: {NULL}, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    cr_expect_null(mob_table_create(NULL, "mobs", 16).raw, "%s", "want NULL: mob_table_create(NULL, \"mobs\", 16).raw");
})
ROW(typed_create_bad_capacity, "KILN_HANDLE_TYPE name_table_create", "count: capacity UINT32_MAX: {NULL}", KILN_LOGITEM_HANDLES_BAD_CAPACITY, SINK_A, COUNTED, 0, DOC, {
    cr_expect_null(mob_table_create(f->a, "mobs", UINT32_MAX).raw, "%s", "want NULL: mob_table_create(f->a, \"mobs\", UINT32_MAX).raw");
})
ROW(typed_destroy_destroyed, "KILN_HANDLE_TYPE name_table_destroy", "destroyed table", KILN_LOGITEM_HANDLES_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    mob_table t = mob_table_create(f->a, "mobs", 16);
    mob_table_destroy(t);
    mob_table_destroy(t);
})
ROW(typed_alloc_null_table, "KILN_HANDLE_TYPE name_alloc", "NULL table: {0}, *item NULL (the ctx names the runtime)", KILN_LOGITEM_HANDLES_NULL, SINK_A, COUNTED, 0, DOC, {
    struct mob *m = (struct mob *)1;
    mob_table t = { NULL };
    WANT(mob_handle_is_null(mob_alloc(f->ctx_a, t, &m)));
    WANT_NULL(m);
})
ROW(typed_alloc_detached, "KILN_HANDLE_TYPE name_alloc", "detached ctx: {0}", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    mob_table t = mob_table_create(f->a, "mobs", 16);
    struct mob *m = (struct mob *)1;
    WANT(mob_handle_is_null(mob_alloc(f->detached, t, &m)));
    WANT_NULL(m);
})
ROW(typed_alloc_null_item, "KILN_HANDLE_TYPE name_alloc", "NULL item out-pointer (legal)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    mob_table t = mob_table_create(f->a, "mobs", 16);
    mob_handle h = mob_alloc(f->ctx_a, t, NULL);
    WANT(!mob_handle_is_null(h));
    WANT_NOT_NULL(mob_get(t, h));
})
ROW(typed_get_stale, "KILN_HANDLE_TYPE name_get", "stale handle: NULL, not logged", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    mob_table t = mob_table_create(f->a, "mobs", 16);
    mob_handle h = mob_alloc(f->ctx_a, t, NULL);
    mob_free(f->ctx_a, t, h);
    WANT_NULL(mob_get(t, h));
})
ROW(typed_get_destroyed, "KILN_HANDLE_TYPE name_get", "destroyed table: NULL", KILN_LOGITEM_HANDLES_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    mob_table t = mob_table_create(f->a, "mobs", 16);
    mob_handle h = { { 0x100000001ull } };
    mob_table_destroy(t);
    WANT_NULL(mob_get(t, h));
})
ROW(typed_free_stale, "KILN_HANDLE_TYPE name_free", "stale handle: false", KILN_LOGITEM_HANDLE_DOUBLE_FREE, SINK_A, COUNTED, 0, DOC, {
    mob_table t = mob_table_create(f->a, "mobs", 16);
    mob_handle h = mob_alloc(f->ctx_a, t, NULL);
    WANT(mob_free(f->ctx_a, t, h));
    WANT(!mob_free(f->ctx_a, t, h));
})
ROW(typed_free_zero, "KILN_HANDLE_TYPE name_free", "zero handle: false", KILN_LOGITEM_HANDLE_NULL, SINK_A, COUNTED, 0, DOC, {
    mob_table t = mob_table_create(f->a, "mobs", 16);
    WANT(!mob_free(f->ctx_a, t, (mob_handle){ { 0 } }));
})
ROW(typed_alloc_at_other_runtime, "KILN_HANDLE_TYPE name_alloc_at", "another runtime: ctx_b: {0}", KILN_LOGITEM_HANDLES_WRONG_RUNTIME, SINK_A, COUNTED, 0, DOC, {
    mob_table t = mob_table_create(f->a, "mobs", 16);
    struct mob *m = (struct mob *)1;
    WANT(mob_handle_is_null(mob_alloc_at(f->ctx_b, t, &m, __FILE__, __LINE__)));
    WANT_NULL(m);
})

/* ======================= jobs.h ======================= */

/* kiln_run */
ROW(run_null_ctx, "kiln_run", "NULL ctx: nothing runs", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    int runs = 0;
    kiln_job job = { job_nop, &runs };
    kiln_counter c = { { 0, 0 } };
    kiln_run(NULL, &job, 1, &c);
    cr_expect(all_zero(&c, sizeof c), "the counter is untouched");
    WANT_EQ(runs, 0);
})
ROW(run_detached, "kiln_run", "detached ctx: nothing runs, counter untouched", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    int runs = 0;
    kiln_job job = { job_nop, &runs };
    kiln_counter c = { { 0, 0 } };
    kiln_run(f->detached, &job, 1, &c);
    WANT(all_zero(&c, sizeof c));
    kiln_frame_begin(f->ctx_a);
    kiln_frame_end(f->ctx_a);
    WANT_EQ(runs, 0);
})
ROW(run_forged_ctx, "kiln_run", "UNDOC forged ctx (zeroed memory): nothing runs, CONTEXT_INVALID", KILN_LOGITEM_CONTEXT_INVALID, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    kiln_job job = { job_nop, NULL };
    kiln_run(FORGED_CTX, &job, 1, NULL);
})
ROW(run_null_jobs, "kiln_run", "NULL jobs, count 3: nothing runs, counter untouched", KILN_LOGITEM_JOB_NULL_JOBS, SINK_A, COUNTED, 0, DOC, {
    kiln_counter c = { { 0, 0 } };
    kiln_run(f->ctx_a, NULL, 3, &c);
    WANT(all_zero(&c, sizeof c));
})
ROW(run_null_jobs_huge_count, "kiln_run", "NULL jobs, count SIZE_MAX", KILN_LOGITEM_JOB_NULL_JOBS, SINK_A, COUNTED, 0, DOC, {
    kiln_counter c = { { 0, 0 } };
    kiln_run(f->ctx_a, NULL, SIZE_MAX, &c);
    WANT(all_zero(&c, sizeof c));
})
ROW(run_count_zero, "kiln_run", "count 0: counter untouched", KILN_LOGITEM_JOB_COUNT_ZERO, SINK_A, COUNTED, 0, DOC, {
    kiln_job job = { job_nop, NULL };
    kiln_counter c = { { 0, 0 } };
    kiln_run(f->ctx_a, &job, 0, &c);
    WANT(all_zero(&c, sizeof c));
})
ROW(run_count_zero_null_jobs, "kiln_run", "count 0 and jobs NULL", KILN_LOGITEM_JOB_COUNT_ZERO, SINK_A, COUNTED, 0, DOC, {
    kiln_run(f->ctx_a, NULL, 0, NULL);
})
ROW(run_null_fn, "kiln_run", "a job with a NULL fn (the 2nd of 3): none runs, counter untouched", KILN_LOGITEM_JOB_NULL_FN, SINK_A, COUNTED, 0, DOC, {
    int runs = 0;
    kiln_job jobs[3] = { { job_nop, &runs }, { NULL, NULL }, { job_nop, &runs } };
    kiln_counter c = { { 0, 0 } };
    kiln_run(f->ctx_a, jobs, 3, &c);
    WANT(all_zero(&c, sizeof c));
    kiln_wait(f->ctx_a, &c);
    WANT_EQ(runs, 0);
})

ROW(run_counter_other_runtime, "kiln_run", "another runtime: a counter runtime B's run holds: nothing runs, it counts B's job only", KILN_LOGITEM_COUNTER_FOREIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(run_on_a_counter_of_b(f, NULL, false), 0);
})
ROW(run_counter_other_runtime_done, "kiln_run", "a counter runtime B's run left at zero (legal: it counts A's jobs now)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_EQ(run_on_a_counter_of_b(f, NULL, true), 1);
})
/* White-box: the count is the low half of the counter's first word (jobs/task.h), filled
 * here the way 2^31 queued jobs would fill it; kiln cannot tell. */
ROW(run_counter_full, "kiln_run", "size: a counter that would count more than 2^31 jobs at once: nothing runs, the count is kept", KILN_LOGITEM_COUNTER_FULL, SINK_B, COUNTED, 0, DOC, {
    int runs = 0;
    kiln_job jobs[2] = { { job_nop, &runs }, { job_nop, &runs } };
    kiln_counter c = { { 0 } };
    kiln_run(f->ctx_b, jobs, 1, &c);   /* B has no workers: queued until B waits */
    uint64_t filler = (UINT64_C(1) << 31) - 2;   /* the count is 2^31 - 1 now */
    __atomic_fetch_add(&c.opaque[0], filler, __ATOMIC_RELAXED);
    kiln_run(f->ctx_b, jobs, 2, &c);
    WANT_EQ(c.opaque[0] & 0xffffffffu, filler + 1);
    __atomic_fetch_sub(&c.opaque[0], filler, __ATOMIC_RELAXED);
    kiln_wait(f->ctx_b, &c);
    WANT_EQ(runs, 1);
})
/* kiln_run_ex */
ROW(run_ex_null_ctx, "kiln_run_ex", "NULL ctx: nothing runs", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_job job = { job_nop, NULL };
    kiln_run_ex(NULL, &job, 1, NULL, &(kiln_run_desc){ 0 });
})
ROW(run_ex_detached, "kiln_run_ex", "detached ctx: nothing runs", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    kiln_job job = { job_nop, NULL };
    kiln_counter c = { { 0, 0 } };
    kiln_run_ex(f->detached, &job, 1, &c, &(kiln_run_desc){ 0 });
    WANT(all_zero(&c, sizeof c));
})
ROW(run_ex_null_desc, "kiln_run_ex", "UNDOC NULL desc: legal, the defaults", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, UNDOC, {
    int runs = 0;
    kiln_job job = { job_nop, &runs };
    kiln_counter c = { { 0, 0 } };
    kiln_run_ex(f->ctx_a, &job, 1, &c, NULL);
    kiln_wait(f->ctx_a, &c);
    WANT_EQ(runs, 1);
})
ROW(run_ex_null_jobs, "kiln_run_ex", "NULL jobs, count 2", KILN_LOGITEM_JOB_NULL_JOBS, SINK_A, COUNTED, 0, DOC, {
    kiln_counter c = { { 0, 0 } };
    kiln_run_ex(f->ctx_a, NULL, 2, &c, &(kiln_run_desc){ .background = true });
    WANT(all_zero(&c, sizeof c));
})
ROW(run_ex_count_zero, "kiln_run_ex", "count 0", KILN_LOGITEM_JOB_COUNT_ZERO, SINK_A, COUNTED, 0, DOC, {
    kiln_job job = { job_nop, NULL };
    kiln_run_ex(f->ctx_a, &job, 0, NULL, &(kiln_run_desc){ .priority = KILN_PRIORITY_HIGH });
})
ROW(run_ex_bad_priority, "kiln_run_ex", "priority 7 (no kiln_priority): nothing runs", KILN_LOGITEM_JOB_BAD_PRIORITY, SINK_A, COUNTED, 0, DOC, {
    kiln_job job = { job_nop, NULL };
    kiln_counter c = { { 0, 0 } };
    kiln_run_ex(f->ctx_a, &job, 1, &c, &(kiln_run_desc){ .priority = (kiln_priority)7 });
    WANT(all_zero(&c, sizeof c));
})
ROW(run_ex_null_fn, "kiln_run_ex", "a job with a NULL fn: none runs", KILN_LOGITEM_JOB_NULL_FN, SINK_A, COUNTED, 0, DOC, {
    kiln_job job = { NULL, NULL };
    kiln_counter c = { { 0, 0 } };
    kiln_run_ex(f->ctx_a, &job, 1, &c, &(kiln_run_desc){ .background = true });
    WANT(all_zero(&c, sizeof c));
})
ROW(run_ex_pin_detached, "kiln_run_ex", "bad pin: pinned_to a detached ctx: nothing runs", KILN_LOGITEM_JOB_BAD_PIN, SINK_A, COUNTED, 0, DOC, {
    int runs = 0;
    kiln_job job = { job_nop, &runs };
    kiln_counter c = { { 0, 0 } };
    kiln_run_ex(f->ctx_a, &job, 1, &c, &(kiln_run_desc){ .pinned_to = f->detached });
    WANT(all_zero(&c, sizeof c));
    WANT_EQ(runs, 0);
})
ROW(run_ex_pin_other_runtime, "kiln_run_ex", "another runtime: pinned_to ctx_b: nothing runs", KILN_LOGITEM_JOB_BAD_PIN, SINK_A, COUNTED, 0, DOC, {
    int runs = 0;
    kiln_job job = { job_nop, &runs };
    kiln_counter c = { { 0, 0 } };
    kiln_run_ex(f->ctx_a, &job, 1, &c, &(kiln_run_desc){ .pinned_to = f->ctx_b });
    WANT(all_zero(&c, sizeof c));
    kiln_wait(f->ctx_b, &c);
    WANT_EQ(runs, 0);
})
ROW(run_ex_pin_forged, "kiln_run_ex", "bad pin: pinned_to a forged ctx (zeroed memory)", KILN_LOGITEM_JOB_BAD_PIN, SINK_A, COUNTED, 0, DOC, {
    kiln_job job = { job_nop, NULL };
    kiln_run_ex(f->ctx_a, &job, 1, NULL, &(kiln_run_desc){ .pinned_to = FORGED_CTX });
})
ROW(run_ex_background_pin_no_counter, "kiln_run_ex", "bad pin: a background job pinned to a non-worker ctx without a counter", KILN_LOGITEM_JOB_BAD_PIN, SINK_A, COUNTED, 0, DOC, {
    int runs = 0;
    kiln_job job = { job_nop, &runs };
    kiln_run_ex(f->ctx_a, &job, 1, NULL, &(kiln_run_desc){ .pinned_to = f->ctx_a, .background = true });
    WANT_EQ(runs, 0);
})
ROW(run_ex_after_null, "kiln_run_ex", "after NULL with after_count 2: nothing runs, counter untouched", KILN_LOGITEM_JOB_AFTER_NULL, SINK_A, COUNTED, 0, DOC, {
    int runs = 0;
    kiln_job job = { job_nop, &runs };
    kiln_counter c = { { 0 } };
    kiln_run_ex(f->ctx_a, &job, 1, &c, &(kiln_run_desc){ .after_count = 2 });
    kiln_wait(f->ctx_a, &c);
    WANT_EQ(runs, 0);
})
ROW(run_ex_after_null_entry, "kiln_run_ex", "a NULL entry in after: nothing runs", KILN_LOGITEM_JOB_AFTER_NULL_ENTRY, SINK_A, COUNTED, 0, DOC, {
    int runs = 0;
    kiln_job job = { job_nop, &runs };
    kiln_counter done = { { 0 } }, c = { { 0 } };
    const kiln_counter *after[] = { &done, NULL };
    kiln_run_ex(f->ctx_a, &job, 1, &c, &(kiln_run_desc){ .after = after, .after_count = 2 });
    kiln_wait(f->ctx_a, &c);
    WANT_EQ(runs, 0);
})
ROW(run_ex_after_own_counter, "kiln_run_ex", "after its own counter (a cycle): nothing runs, counter untouched", KILN_LOGITEM_JOB_AFTER_CYCLE, SINK_A, COUNTED, 0, DOC, {
    int runs = 0;
    kiln_job job = { job_nop, &runs };
    kiln_counter other = { { 0 } }, c = { { 0 } };
    const kiln_counter *after[] = { &other, &c };
    kiln_run_ex(f->ctx_a, &job, 1, &c, &(kiln_run_desc){ .after = after, .after_count = 2 });
    kiln_wait(f->ctx_a, &c);
    WANT_EQ(runs, 0);
})
ROW(run_ex_after_other_runtime, "kiln_run_ex", "after a counter of another runtime's run: nothing runs, counter untouched", KILN_LOGITEM_JOB_AFTER_FOREIGN, SINK_A, COUNTED, 0, DOC, {
    int runs = 0;
    kiln_job job = { job_nop, &runs };
    kiln_counter other = { { 0 } }, c = { { 0 } };
    /* other counts a job of runtime b pinned to ctx_b: it runs only in ctx_b's wait */
    int other_runs = 0;
    kiln_run_ex(f->ctx_b, &(kiln_job){ job_nop, &other_runs }, 1, &other,
                &(kiln_run_desc){ .pinned_to = f->ctx_b });
    const kiln_counter *after[] = { &other };
    kiln_run_ex(f->ctx_a, &job, 1, &c, &(kiln_run_desc){ .after = after, .after_count = 1 });
    kiln_wait(f->ctx_b, &other);
    kiln_wait(f->ctx_a, &c);
    WANT_EQ(runs, 0);
    WANT_EQ(other_runs, 1);
})
ROW(run_ex_counter_other_runtime, "kiln_run_ex", "another runtime: a counter runtime B's run holds: nothing runs", KILN_LOGITEM_COUNTER_FOREIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(run_on_a_counter_of_b(f, &(kiln_run_desc){ .priority = KILN_PRIORITY_HIGH }, false), 0);
})
ROW(run_ex_after_into_counter_other_runtime, "kiln_run_ex", "another runtime: after a done counter, counted on a counter runtime B's run holds: nothing runs or waits", KILN_LOGITEM_COUNTER_FOREIGN, SINK_A, COUNTED, 0, DOC, {
    kiln_counter done = { { 0 } };
    const kiln_counter *after[] = { &done };
    WANT_EQ(run_on_a_counter_of_b(f, &(kiln_run_desc){ .after = after, .after_count = 1 }, false), 0);
})
ROW(run_ex_after_unused_counter, "kiln_run_ex", "after a zeroed counter no run used (legal: already done)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    int runs = 0;
    kiln_job job = { job_nop, &runs };
    kiln_counter unused = { { 0 } }, c = { { 0 } };
    const kiln_counter *after[] = { &unused };
    kiln_run_ex(f->ctx_a, &job, 1, &c, &(kiln_run_desc){ .after = after, .after_count = 1 });
    kiln_wait(f->ctx_a, &c);
    WANT_EQ(runs, 1);
})
ROW(run_ex_after_count_zero_after_null, "kiln_run_ex", "after_count 0 with after NULL (legal: no dependency)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    int runs = 0;
    kiln_job job = { job_nop, &runs };
    kiln_counter c = { { 0 } };
    kiln_run_ex(f->ctx_a, &job, 1, &c, &(kiln_run_desc){ .after = NULL, .after_count = 0 });
    kiln_wait(f->ctx_a, &c);
    WANT_EQ(runs, 1);
})
ROW(run_ex_reuse_waited_counter, "kiln_run_ex", "a new run on a counter jobs wait on (KILN_DEBUG_CHECKS): runs, they wait for it too", KILN_LOGITEM_COUNTER_REUSED_WAITING, SINK_A, COUNTED, FX_CHECKS, DOC, {
    WANT_EQ(run_on_a_waited_counter(f), 3);
})
ROW(run_ex_reuse_waited_counter_unchecked, "kiln_run_ex", "a new run on a counter jobs wait on without KILN_DEBUG_CHECKS (legal: they wait for it too)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_EQ(run_on_a_waited_counter(f), 3);
})

/* kiln_wait */
ROW(wait_null_counter, "kiln_wait", "NULL counter: returns at once", KILN_LOGITEM_JOB_WAIT_NULL_COUNTER, SINK_A, COUNTED, 0, DOC, {
    kiln_wait(f->ctx_a, NULL);
})
ROW(wait_null_ctx, "kiln_wait", "UNDOC NULL ctx: returns at once, CONTEXT_NULL", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    kiln_counter c = { { 0, 0 } };
    kiln_wait(NULL, &c);
})
ROW(wait_detached, "kiln_wait", "detached ctx: returns at once (kiln_detach: any later use refused)", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    kiln_counter c = { { 0, 0 } };
    kiln_wait(f->detached, &c);
})

/* kiln_wait_ex */
ROW(wait_ex_null_counter, "kiln_wait_ex", "NULL counter: returns at once", KILN_LOGITEM_JOB_WAIT_NULL_COUNTER, SINK_A, COUNTED, 0, DOC, {
    kiln_wait_ex(f->ctx_a, NULL, &(kiln_wait_desc){ .isolate = true });
})
ROW(wait_ex_null_ctx, "kiln_wait_ex", "NULL ctx: returns at once, CONTEXT_NULL (as kiln_wait)", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_counter c = { { 0 } };
    kiln_wait_ex(NULL, &c, &(kiln_wait_desc){ .isolate = true });
})
ROW(wait_ex_detached, "kiln_wait_ex", "detached ctx: returns at once (as kiln_wait)", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    kiln_counter c = { { 0 } };
    kiln_wait_ex(f->detached, &c, NULL);
})
ROW(wait_ex_null_desc, "kiln_wait_ex", "NULL desc (legal: kiln_wait)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    int runs = 0;
    kiln_job job = { job_nop, &runs };
    kiln_counter c = { { 0 } };
    kiln_run(f->ctx_a, &job, 1, &c);
    kiln_wait_ex(f->ctx_a, &c, NULL);
    WANT_EQ(runs, 1);
})

/* kiln_parallel_for */
ROW(parallel_for_null_fn, "kiln_parallel_for", "UNDOC NULL fn: nothing runs, JOB_NULL_FN", KILN_LOGITEM_JOB_NULL_FN, SINK_A, COUNTED, 0, UNDOC, {
    kiln_parallel_for(f->ctx_a, 100, 0, NULL, NULL);
})
ROW(parallel_for_null_ctx, "kiln_parallel_for", "UNDOC NULL ctx: nothing runs, CONTEXT_NULL", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    size_t covered = 0;
    kiln_parallel_for(NULL, 100, 0, range_nop, &covered);
    WANT_EQ(covered, 0u);
})
ROW(parallel_for_detached, "kiln_parallel_for", "detached ctx: nothing runs (kiln_detach: any later use refused)", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    size_t covered = 0;
    kiln_parallel_for(f->detached, 100, 0, range_nop, &covered);
    WANT_EQ(covered, 0u);
})
ROW(parallel_for_count_0, "kiln_parallel_for", "UNDOC count 0: legal, an empty range", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, UNDOC, {
    size_t covered = 0;
    kiln_parallel_for(f->ctx_a, 0, 0, range_nop, &covered);
    WANT_EQ(covered, 0u);
})
ROW(parallel_for_huge_grain, "kiln_parallel_for", "grain SIZE_MAX (legal: one range)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    size_t covered = 0;
    kiln_parallel_for(f->ctx_b, 1000, SIZE_MAX, range_nop, &covered);
    WANT_EQ(covered, 1000u);
})

/* ======================= stats.h ======================= */

ROW(stats_get_null_rt, "kiln_stats_get", "NULL runtime: false, *out zeroed", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_stats s;
    memset(&s, 0xab, sizeof s);
    WANT(!kiln_stats_get(NULL, &s));
    WANT(all_zero(&s, sizeof s));
})
ROW(stats_get_forged_rt, "kiln_stats_get", "forged runtime: false, *out zeroed", KILN_LOGITEM_RUNTIME_INVALID, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_stats s;
    memset(&s, 0xab, sizeof s);
    WANT(!kiln_stats_get(FORGED_RT, &s));
    WANT(all_zero(&s, sizeof s));
})
ROW(stats_get_null_out, "kiln_stats_get", "NULL out: false", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, DOC, {
    WANT(!kiln_stats_get(f->a, NULL));
})
ROW(stats_get_null_both, "kiln_stats_get", "UNDOC NULL runtime and out: false, one item (the runtime first)", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    WANT(!kiln_stats_get(NULL, NULL));
})

ROW(stats_arenas_null_rt, "kiln_stats_arenas", "UNDOC NULL runtime: 0, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    kiln_arena_stats s[2];
    WANT_EQ(kiln_stats_arenas(NULL, s, 2), 0u);
})
ROW(stats_arenas_null_out, "kiln_stats_arenas", "UNDOC NULL out with cap 2 (out may be NULL only with cap 0): 0, STATS_NULL_OUT", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, UNDOC, {
    WANT_EQ(kiln_stats_arenas(f->a, NULL, 2), 0u);
})
ROW(stats_arenas_null_out_cap_0, "kiln_stats_arenas", "NULL out with cap 0 (legal: the count)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    cr_expect_eq(kiln_stats_arenas(f->a, NULL, 0), 3u, "arena_a and two frame arenas");
})

ROW(stats_contexts_null_rt, "kiln_stats_contexts", "UNDOC NULL runtime: 0, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    kiln_ctx_stats s[2];
    WANT_EQ(kiln_stats_contexts(NULL, s, 2), 0u);
})
ROW(stats_contexts_null_out, "kiln_stats_contexts", "UNDOC NULL out with cap 2: 0, STATS_NULL_OUT", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, UNDOC, {
    WANT_EQ(kiln_stats_contexts(f->a, NULL, 2), 0u);
})
ROW(stats_contexts_null_out_cap_0, "kiln_stats_contexts", "UNDOC NULL out with cap 0: legal, the count", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, UNDOC, {
    cr_expect_eq(kiln_stats_contexts(f->a, NULL, 0), 2u, "ctx_a and the worker");
})

ROW(stats_pools_null_rt, "kiln_stats_pools", "UNDOC NULL runtime: 0, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    kiln_pool_stats s[2];
    WANT_EQ(kiln_stats_pools(NULL, s, 2), 0u);
})
ROW(stats_pools_null_out, "kiln_stats_pools", "UNDOC NULL out with cap 2: 0, STATS_NULL_OUT", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, UNDOC, {
    WANT_EQ(kiln_stats_pools(f->a, NULL, 2), 0u);
})
ROW(stats_pools_null_out_cap_0, "kiln_stats_pools", "UNDOC NULL out with cap 0: legal, the count", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, UNDOC, {
    WANT_EQ(kiln_stats_pools(f->a, NULL, 0), 1u);
})

ROW(pool_stats_get_null_pool, "kiln_pool_stats_get", "NULL pool: false, *out zeroed", KILN_LOGITEM_POOL_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_pool_stats s;
    memset(&s, 0xab, sizeof s);
    WANT(!kiln_pool_stats_get(NULL, &s));
    WANT(all_zero(&s, sizeof s));
})
ROW(pool_stats_get_null_out, "kiln_pool_stats_get", "NULL out: false", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, DOC, {
    WANT(!kiln_pool_stats_get(f->pool_a, NULL));
})
ROW(pool_stats_get_destroyed, "kiln_pool_stats_get", "destroyed pool (legal: its figures, alive false)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_pool_stats s;
    WANT(kiln_pool_stats_get(f->dead_pool, &s));
    WANT(!s.alive);
    cr_expect_str_eq(s.name, "dead", "%s", "want equal: s.name, \"dead\"");
})

ROW(arena_stats_get_null_arena, "kiln_arena_stats_get", "NULL arena: false, *out zeroed", KILN_LOGITEM_ARENA_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_arena_stats s;
    memset(&s, 0xab, sizeof s);
    WANT(!kiln_arena_stats_get(NULL, &s));
    WANT(all_zero(&s, sizeof s));
})
ROW(arena_stats_get_null_out, "kiln_arena_stats_get", "NULL out: false", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, DOC, {
    WANT(!kiln_arena_stats_get(f->arena_a, NULL));
})
ROW(arena_stats_get_destroyed, "kiln_arena_stats_get", "destroyed arena: false, zeroed stats", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    kiln_arena_stats s;
    memset(&s, 0xab, sizeof s);
    WANT(!kiln_arena_stats_get(f->dead_arena, &s));
    WANT(all_zero(&s, sizeof s));
})

ROW(stats_print_null_rt, "kiln_stats_print", "NULL runtime: nothing printed", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    FILE *out = tmpfile();
    kiln_stats_print(NULL, out);
    cr_expect_eq(ftell(out), 0L, "nothing printed");
    fclose(out);
})
ROW(stats_print_null_out, "kiln_stats_print", "NULL out: nothing", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, DOC, {
    kiln_stats_print(f->a, NULL);
})

ROW(stats_write_json_null_rt, "kiln_stats_write_json", "NULL runtime: false", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    FILE *out = tmpfile();
    WANT(!kiln_stats_write_json(NULL, out));
    cr_expect_eq(ftell(out), 0L, "nothing written");
    fclose(out);
})
ROW(stats_write_json_null_out, "kiln_stats_write_json", "NULL out: false", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, DOC, {
    WANT(!kiln_stats_write_json(f->a, NULL));
})

ROW(sites_top_null_rt, "kiln_sites_top", "NULL runtime: 0, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_site_stats s[2];
    WANT_EQ(kiln_sites_top(NULL, s, 2), 0u);
})
ROW(sites_top_destroyed_rt, "kiln_sites_top", "destroyed runtime: 0, RUNTIME_INVALID", KILN_LOGITEM_RUNTIME_INVALID, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_desc d = recording_desc(f->rec_a);
    d.debug = KILN_DEBUG_SITES;
    d.worker_count = KILN_NO_WORKERS;
    kiln_runtime *rt = kiln_create(&d);
    WANT_NOT_NULL(rt);
    kiln_destroy(rt);
    kiln_site_stats s[2];
    WANT_EQ(kiln_sites_top(rt, s, 2), 0u);   /* never read: not on the list of live runtimes */
})
ROW(sites_top_null_out, "kiln_sites_top", "NULL out with cap 2 (KILN_DEBUG_SITES): 0, STATS_NULL_OUT", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, FX_SITES, DOC, {
    WANT_EQ(kiln_sites_top(f->a, NULL, 2), 0u);
})
ROW(sites_top_cap_0, "kiln_sites_top", "NULL out with cap 0 (KILN_DEBUG_SITES; legal: 0)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, FX_SITES, DOC, {
    WANT_EQ(kiln_sites_top(f->a, NULL, 0), 0u);
})
ROW(sites_top_bit_off, "kiln_sites_top", "a runtime without KILN_DEBUG_SITES: 0, SITES_OFF", KILN_LOGITEM_SITES_OFF, SINK_A, COUNTED, 0, DOC, {
    kiln_site_stats s[2];
    WANT_EQ(kiln_sites_top(f->a, s, 2), 0u);
})
ROW(sites_top_bit_off_cap_0, "kiln_sites_top", "cap 0 on a runtime without KILN_DEBUG_SITES: 0, SITES_OFF", KILN_LOGITEM_SITES_OFF, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_sites_top(f->a, NULL, 0), 0u);
})

/* ======================= trace.h ======================= */

ROW(history_read_null_rt, "kiln_history_read", "UNDOC NULL runtime: 0, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    kiln_frame_record r[2];
    WANT_EQ(kiln_history_read(NULL, r, 2), 0u);
})
ROW(history_read_null_out, "kiln_history_read", "UNDOC NULL out with cap 2 (out may be NULL only with cap 0): 0, STATS_NULL_OUT", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, UNDOC, {
    kiln_frame_begin(f->ctx_a);
    kiln_frame_end(f->ctx_a);
    WANT_EQ(kiln_history_read(f->a, NULL, 2), 0u);
})
ROW(history_read_null_out_cap_0, "kiln_history_read", "NULL out with cap 0 (legal: 0)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_frame_begin(f->ctx_a);
    kiln_frame_end(f->ctx_a);
    WANT_EQ(kiln_history_read(f->a, NULL, 0), 0u);
})
ROW(history_read_huge_cap, "kiln_history_read", "cap SIZE_MAX with room for every frame the history keeps (legal)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    static kiln_frame_record r[KILN_HISTORY_FRAMES];
    kiln_frame_begin(f->ctx_a);
    kiln_frame_end(f->ctx_a);
    WANT_EQ(kiln_history_read(f->a, r, SIZE_MAX), 1u);
})

ROW(trace_enable_null_rt, "kiln_trace_enable", "UNDOC NULL runtime: ignored, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    kiln_trace_enable(NULL, true);
})

ROW(trace_stats_get_null_rt, "kiln_trace_stats_get", "NULL runtime: false, *out zeroed", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_trace_stats s;
    memset(&s, 0xab, sizeof s);
    WANT(!kiln_trace_stats_get(NULL, &s));
    WANT(all_zero(&s, sizeof s));
})
ROW(trace_stats_get_null_out, "kiln_trace_stats_get", "NULL out: false", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, DOC, {
    WANT(!kiln_trace_stats_get(f->a, NULL));
})

ROW(trace_write_file_null_rt, "kiln_trace_write_file", "UNDOC NULL runtime: false, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    FILE *out = tmpfile();
    WANT(!kiln_trace_write_file(NULL, out));
    fclose(out);
})
ROW(trace_write_file_null_out, "kiln_trace_write_file", "UNDOC NULL out: false, TRACE_NULL_FILE (a bad argument: counted)", KILN_LOGITEM_TRACE_NULL_FILE, SINK_A, COUNTED, 0, UNDOC, {
    WANT(!kiln_trace_write_file(f->a, NULL));
})
ROW(trace_write_file_read_only, "kiln_trace_write_file", "a stream that cannot be written (opened for reading): false, TRACE_WRITE_FAILED (I/O: not counted)", KILN_LOGITEM_TRACE_WRITE_FAILED, SINK_A, NOT_COUNTED, 0, DOC, {
    FILE *in = fopen(KILN_SOURCE_DIR "/meson.build", "r");
    cr_assert_not_null(in);
    kiln_trace_enable(f->a, true);
    kiln_frame_begin(f->ctx_a);
    kiln_frame_end(f->ctx_a);
    WANT(!kiln_trace_write_file(f->a, in));
    fclose(in);
})

ROW(trace_write_null_rt, "kiln_trace_write", "UNDOC NULL runtime: false, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, UNDOC, {
    cr_expect(!kiln_trace_write(NULL, "/tmp/kiln-misuse-never.json"), "%s", "want: !kiln_trace_write(NULL, \"/tmp/kiln-misuse-never.json\")");
})
ROW(trace_write_null_path, "kiln_trace_write", "UNDOC NULL path: false, TRACE_NULL_PATH (a bad argument: counted)", KILN_LOGITEM_TRACE_NULL_PATH, SINK_A, COUNTED, 0, UNDOC, {
    WANT(!kiln_trace_write(f->a, NULL));
})
ROW(trace_write_bad_path, "kiln_trace_write", "a path that cannot be made: false, TRACE_WRITE_FAILED (I/O: not counted)", KILN_LOGITEM_TRACE_WRITE_FAILED, SINK_A, NOT_COUNTED, 0, DOC, {
    cr_expect(!kiln_trace_write(f->a, "/nonexistent-kiln-dir/trace.json"), "%s", "want: !kiln_trace_write(f->a, \"/nonexistent-kiln-dir/trace.json\")");
})

/* ======================= heap.h: tags ======================= */

/* A tag of runtime A's, made in the row: TAG_A(f, "name"). */
#define TAG_A(f, tag_name) kiln_tag_create((f)->a, &(kiln_tag_desc){ .name = (tag_name) })
#define TAG_B(f, tag_name) kiln_tag_create((f)->b, &(kiln_tag_desc){ .name = (tag_name) })

ROW(tag_create_null_rt, "kiln_tag_create", "NULL runtime: {0}, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_tag_create(NULL, &(kiln_tag_desc){ .name = "x" }).id, 0u);
})
ROW(tag_create_forged_rt, "kiln_tag_create", "forged runtime: {0}, RUNTIME_INVALID", KILN_LOGITEM_RUNTIME_INVALID, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_tag_create(FORGED_RT, &(kiln_tag_desc){ .name = "x" }).id, 0u);
})
ROW(tag_create_null_desc, "kiln_tag_create", "NULL desc: {0}", KILN_LOGITEM_TAG_DESC_NULL, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_tag_create(f->a, NULL).id, 0u);
})
ROW(tag_create_null_name, "kiln_tag_create", "NULL name: {0}", KILN_LOGITEM_TAG_NAME_NULL, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_tag_create(f->a, &(kiln_tag_desc){ .budget = 100 }).id, 0u);
})
ROW(tag_create_empty_name, "kiln_tag_create", "empty name: {0}", KILN_LOGITEM_TAG_NAME_NULL, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_tag_create(f->a, &(kiln_tag_desc){ .name = "" }).id, 0u);
})
ROW(tag_create_policy_2, "kiln_tag_create", "range: policy 2: {0}", KILN_LOGITEM_TAG_POLICY_INVALID, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_tag_create(f->a, &(kiln_tag_desc){ .name = "x", .policy = (kiln_budget_policy)2 }).id, 0u);
})
ROW(tag_create_name_taken, "kiln_tag_create", "a name another tag has: {0}, the first stays", KILN_LOGITEM_TAG_NAME_TAKEN, SINK_A, COUNTED, 0, DOC, {
    kiln_tag first = TAG_A(f, "Audio");
    WANT_EQ(TAG_A(f, "Audio").id, 0u);
    WANT_EQ(kiln_tag_find(f->a, "Audio").id, first.id);
})
ROW(tag_create_foreign_parent, "kiln_tag_create", "another runtime's tag as parent: {0}", KILN_LOGITEM_TAG_FOREIGN, SINK_A, COUNTED, 0, DOC, {
    kiln_tag of_b = TAG_B(f, "B's");
    WANT_EQ(kiln_tag_create(f->a, &(kiln_tag_desc){ .name = "x", .parent = of_b }).id, 0u);
})
ROW(tag_create_unmade_parent, "kiln_tag_create", "a parent of this runtime's shape never made: {0}", KILN_LOGITEM_TAG_INVALID, SINK_A, COUNTED, 0, DOC, {
    kiln_tag made = TAG_A(f, "made");
    WANT_EQ(kiln_tag_create(f->a, &(kiln_tag_desc){ .name = "x", .parent = { made.id + 7 } }).id, 0u);
})
ROW(tag_create_too_many, "kiln_tag_create", "count: one past KILN_MAX_TAGS: {0}", KILN_LOGITEM_TAG_TOO_MANY, SINK_A, COUNTED, 0, DOC, {
    char name[16];
    for (int i = 0; i < KILN_MAX_TAGS; i++) {
        snprintf(name, sizeof name, "t%d", i);
        cr_assert_neq(TAG_A(f, name).id, 0u);
    }
    WANT_EQ(TAG_A(f, "one more").id, 0u);
})

ROW(tag_find_null_rt, "kiln_tag_find", "NULL runtime: {0}, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_tag_find(NULL, "x").id, 0u);
})
ROW(tag_find_null_name, "kiln_tag_find", "NULL name: {0}", KILN_LOGITEM_TAG_NAME_NULL, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_tag_find(f->a, NULL).id, 0u);
})
ROW(tag_find_unknown, "kiln_tag_find", "a name no tag has (legal: {0})", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_tag_find(f->a, "nobody").id, 0u);
})

ROW(tag_push_null_ctx, "kiln_tag_push", "NULL ctx: {0}", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_tag_push(NULL, TAG_A(f, "x")).id, 0u);
})
ROW(tag_push_detached, "kiln_tag_push", "detached ctx: {0}", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_tag_push(f->detached, TAG_A(f, "x")).id, 0u);
})
ROW(tag_push_foreign, "kiln_tag_push", "another runtime's tag: refused, the current one stays", KILN_LOGITEM_TAG_FOREIGN, SINK_A, COUNTED, 0, DOC, {
    kiln_tag mine = TAG_A(f, "mine");
    kiln_tag_push(f->ctx_a, mine);
    WANT_EQ(kiln_tag_push(f->ctx_a, TAG_B(f, "B's")).id, mine.id);
    WANT_EQ(kiln_tag_current(f->ctx_a).id, mine.id);
})

ROW(tag_pop_null_ctx, "kiln_tag_pop", "NULL ctx: ignored", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_tag_pop(NULL, (kiln_tag){ 0 });
})
ROW(tag_pop_unmade, "kiln_tag_pop", "a tag never made: refused, the current one stays", KILN_LOGITEM_TAG_INVALID, SINK_A, COUNTED, 0, DOC, {
    kiln_tag mine = TAG_A(f, "mine");
    kiln_tag_push(f->ctx_a, mine);
    kiln_tag_pop(f->ctx_a, (kiln_tag){ mine.id + 9 });
    WANT_EQ(kiln_tag_current(f->ctx_a).id, mine.id);
})

ROW(tag_current_null_ctx, "kiln_tag_current", "NULL ctx: {0}", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_tag_current(NULL).id, 0u);
})
ROW(tag_current_detached, "kiln_tag_current", "detached ctx: {0}", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_tag_current(f->detached).id, 0u);
})

ROW(arena_set_tag_null, "kiln_arena_set_tag", "NULL arena: ignored", KILN_LOGITEM_ARENA_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_arena_set_tag(NULL, TAG_A(f, "x"));
})
ROW(arena_set_tag_destroyed, "kiln_arena_set_tag", "destroyed arena: ignored", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    kiln_arena_set_tag(f->dead_arena, TAG_A(f, "x"));
})
ROW(arena_set_tag_frame_arena, "kiln_arena_set_tag", "a frame arena: refused, untagged", KILN_LOGITEM_ARENA_FRAME_TAG, SINK_A, COUNTED, 0, DOC, {
    kiln_arena_set_tag(kiln_frame_arena(f->ctx_a), TAG_A(f, "x"));
    WANT_EQ(kiln_arena_tag(kiln_frame_arena(f->ctx_a)).id, 0u);
})
ROW(arena_set_tag_foreign, "kiln_arena_set_tag", "another runtime's tag: refused, the tag stays", KILN_LOGITEM_TAG_FOREIGN, SINK_A, COUNTED, 0, DOC, {
    kiln_tag mine = TAG_A(f, "mine");
    kiln_arena_set_tag(f->arena_a, mine);
    kiln_arena_set_tag(f->arena_a, TAG_B(f, "B's"));
    WANT_EQ(kiln_arena_tag(f->arena_a).id, mine.id);
})

ROW(arena_tag_null, "kiln_arena_tag", "NULL arena: {0}", KILN_LOGITEM_ARENA_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_arena_tag(NULL).id, 0u);
})
ROW(arena_tag_destroyed, "kiln_arena_tag", "destroyed arena: {0}", KILN_LOGITEM_ARENA_DESTROYED, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_arena_tag(f->dead_arena).id, 0u);
})

ROW(stats_tags_null_rt, "kiln_stats_tags", "NULL runtime: 0, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_tag_stats s[2];
    WANT_EQ(kiln_stats_tags(NULL, s, 2), 0u);
})
ROW(stats_tags_null_out, "kiln_stats_tags", "NULL out with cap 2: 0, STATS_NULL_OUT", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_stats_tags(f->a, NULL, 2), 0u);
})

ROW(tag_stats_get_null_rt, "kiln_tag_stats_get", "NULL runtime: false, RUNTIME_NULL", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_tag_stats s;
    WANT(!kiln_tag_stats_get(NULL, (kiln_tag){ 1 }, &s));
})
ROW(tag_stats_get_null_out, "kiln_tag_stats_get", "NULL out: false", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, DOC, {
    WANT(!kiln_tag_stats_get(f->a, TAG_A(f, "x"), NULL));
})
ROW(tag_stats_get_zero, "kiln_tag_stats_get", "the zero tag: false, out zeroed", KILN_LOGITEM_TAG_INVALID, SINK_A, COUNTED, 0, DOC, {
    kiln_tag_stats s;
    memset(&s, 0xab, sizeof s);
    WANT(!kiln_tag_stats_get(f->a, (kiln_tag){ 0 }, &s));
    WANT_EQ(s.id, 0u);
})
ROW(tag_stats_get_foreign, "kiln_tag_stats_get", "another runtime's tag: false", KILN_LOGITEM_TAG_FOREIGN, SINK_A, COUNTED, 0, DOC, {
    kiln_tag_stats s;
    WANT(!kiln_tag_stats_get(f->a, TAG_B(f, "B's"), &s));
})

/* Tags on pools and handle tables. */
ROW(pool_create_foreign_tag, "kiln_pool_create", "another runtime's tag: NULL", KILN_LOGITEM_TAG_FOREIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_pool_create(f->a, &(kiln_pool_desc){ .size = 16, .tag = TAG_B(f, "B's") }));
})
ROW(handles_create_unmade_tag, "kiln_handles_create", "a tag never made: NULL", KILN_LOGITEM_TAG_INVALID, SINK_A, COUNTED, 0, DOC, {
    kiln_tag made = TAG_A(f, "made");
    WANT_NULL(kiln_handles_create(f->a, &(kiln_handles_desc){ .item_size = 8, .tag = { made.id + 3 } }));
})

/* The general heap. */
ROW(heap_alloc_null_ctx, "kiln_heap_alloc", "NULL ctx: NULL", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_heap_alloc(NULL, (kiln_tag){ 0 }, 16, 0));
})
ROW(heap_alloc_detached, "kiln_heap_alloc", "detached ctx: NULL", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_heap_alloc(f->detached, (kiln_tag){ 0 }, 16, 0));
})
ROW(heap_alloc_foreign_tag, "kiln_heap_alloc", "another runtime's tag: NULL", KILN_LOGITEM_TAG_FOREIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_heap_alloc(f->ctx_a, TAG_B(f, "B's"), 16, 0));
})
ROW(heap_alloc_unmade_tag, "kiln_heap_alloc", "a tag never made: NULL", KILN_LOGITEM_TAG_INVALID, SINK_A, COUNTED, 0, DOC, {
    kiln_tag made = TAG_A(f, "made");
    WANT_NULL(kiln_heap_alloc(f->ctx_a, (kiln_tag){ made.id + 3 }, 16, 0));
})
ROW(heap_alloc_bad_align, "kiln_heap_alloc", "align 24: NULL", KILN_LOGITEM_HEAP_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_heap_alloc(f->ctx_a, (kiln_tag){ 0 }, 16, 24));
})
ROW(heap_alloc_size_max, "kiln_heap_alloc", "size SIZE_MAX: NULL", KILN_LOGITEM_HEAP_TOO_LARGE, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_heap_alloc(f->ctx_a, (kiln_tag){ 0 }, SIZE_MAX, 0));
})
ROW(heap_alloc_align_overflow, "kiln_heap_alloc", "size PTRDIFF_MAX with align 4096: NULL", KILN_LOGITEM_HEAP_TOO_LARGE, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_heap_alloc(f->ctx_a, (kiln_tag){ 0 }, (size_t)PTRDIFF_MAX, 4096));
})
ROW(heap_alloc_zero, "kiln_heap_alloc", "size 0 (legal: a 16-byte allocation)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    void *p = kiln_heap_alloc(f->ctx_a, (kiln_tag){ 0 }, 0, 0);
    WANT_NOT_NULL(p);
    WANT_EQ(kiln_heap_usable_size(p), 16u);
    kiln_heap_free(f->ctx_a, p);
})
ROW(heap_alloc_in_job, "kiln_heap_alloc", "in a worker's job, freed by the submitter (legal)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    f->rp = NULL;
    in_worker_job(f, OP_HEAP_ALLOC);
    WANT_NOT_NULL(f->rp);
    kiln_heap_free(f->ctx_a, f->rp);
})
ROW(heap_alloc_at_detached, "kiln_heap_alloc_at", "detached ctx: NULL", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_heap_alloc_at(f->detached, (kiln_tag){ 0 }, 16, 0, __FILE__, __LINE__));
})
ROW(heap_alloc_at_null_file, "kiln_heap_alloc_at", "NULL file with SITES (legal: no site)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, FX_SITES, UNDOC, {
    void *p = kiln_heap_alloc_at(f->ctx_a, (kiln_tag){ 0 }, 40, 0, NULL, 3);
    WANT_NOT_NULL(p);
    kiln_heap_free(f->ctx_a, p);
})

ROW(heap_calloc_overflow, "kiln_heap_calloc", "count * size overflows: NULL", KILN_LOGITEM_HEAP_TOO_LARGE, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_heap_calloc(f->ctx_a, (kiln_tag){ 0 }, SIZE_MAX / 4, 8));
})
ROW(heap_calloc_null_ctx, "kiln_heap_calloc", "NULL ctx: NULL", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_heap_calloc(NULL, (kiln_tag){ 0 }, 2, 8));
})

ROW(heap_free_null, "kiln_heap_free", "NULL ptr (legal: no-op)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_heap_free(f->ctx_a, NULL);
})
ROW(heap_free_malloc, "kiln_heap_free", "malloc's pointer: ignored", KILN_LOGITEM_HEAP_FOREIGN_POINTER, SINK_A, COUNTED, 0, DOC, {
    void *m = malloc(32);
    kiln_heap_free(f->ctx_a, m);
    free(m);
})
ROW(heap_free_pool_object, "kiln_heap_free", "a pool's object: ignored, still the pool's", KILN_LOGITEM_HEAP_FOREIGN_POINTER, SINK_A, COUNTED, 0, DOC, {
    void *o = kiln_pool_alloc(f->ctx_a, f->pool_a);
    kiln_heap_free(f->ctx_a, o);
    kiln_pool_free(f->ctx_a, f->pool_a, o);
})
ROW(heap_free_other_runtime, "kiln_heap_free", "another runtime's allocation: ignored", KILN_LOGITEM_HEAP_FOREIGN_POINTER, SINK_A, COUNTED, 0, DOC, {
    void *p = kiln_heap_alloc(f->ctx_b, (kiln_tag){ 0 }, 64, 0);
    kiln_heap_free(f->ctx_a, p);
    WANT_EQ(kiln_heap_usable_size(p), 64u);
    kiln_heap_free(f->ctx_b, p);
})
ROW(heap_free_interior, "kiln_heap_free", "a pointer into an allocation: ignored", KILN_LOGITEM_HEAP_INTERIOR_POINTER, SINK_A, COUNTED, 0, DOC, {
    char *p = kiln_heap_alloc(f->ctx_a, (kiln_tag){ 0 }, 64, 0);
    kiln_heap_free(f->ctx_a, p + 8);
    kiln_heap_free(f->ctx_a, p);
})
ROW(heap_free_twice, "kiln_heap_free", "a double free: the second ignored", KILN_LOGITEM_HEAP_DOUBLE_FREE, SINK_A, COUNTED, 0, DOC, {
    void *p = kiln_heap_alloc(f->ctx_a, (kiln_tag){ 0 }, 64, 0);
    kiln_heap_free(f->ctx_a, p);
    kiln_heap_free(f->ctx_a, p);
})
ROW(heap_free_twice_checked, "kiln_heap_free", "a double free with KILN_DEBUG_CHECKS", KILN_LOGITEM_HEAP_DOUBLE_FREE, SINK_A, COUNTED, FX_CHECKS, DOC, {
    void *p = kiln_heap_alloc(f->ctx_a, (kiln_tag){ 0 }, 64, 0);
    kiln_heap_free(f->ctx_a, p);
    kiln_heap_free(f->ctx_a, p);
})
ROW(heap_free_large_twice, "kiln_heap_free", "a large allocation freed twice: a foreign pointer", KILN_LOGITEM_HEAP_FOREIGN_POINTER, SINK_A, COUNTED, 0, DOC, {
    void *p = kiln_heap_alloc(f->ctx_a, (kiln_tag){ 0 }, 1 << 20, 0);
    kiln_heap_free(f->ctx_a, p);
    kiln_heap_free(f->ctx_a, p);
})
ROW(heap_free_detached, "kiln_heap_free", "detached ctx: ignored, ptr stays live", KILN_LOGITEM_CONTEXT_DETACHED, SINK_A, COUNTED, 0, DOC, {
    void *p = kiln_heap_alloc(f->ctx_a, (kiln_tag){ 0 }, 64, 0);
    kiln_heap_free(f->detached, p);
    WANT_EQ(kiln_heap_usable_size(p), 64u);
    kiln_heap_free(f->ctx_a, p);
})

ROW(heap_realloc_foreign, "kiln_heap_realloc", "malloc's pointer: NULL, nothing freed", KILN_LOGITEM_HEAP_FOREIGN_POINTER, SINK_A, COUNTED, 0, DOC, {
    void *m = malloc(32);
    WANT_NULL(kiln_heap_realloc(f->ctx_a, m, 64, 0));
    free(m);
})
ROW(heap_realloc_freed, "kiln_heap_realloc", "a freed allocation: NULL", KILN_LOGITEM_HEAP_DOUBLE_FREE, SINK_A, COUNTED, 0, DOC, {
    void *p = kiln_heap_alloc(f->ctx_a, (kiln_tag){ 0 }, 64, 0);
    kiln_heap_free(f->ctx_a, p);
    WANT_NULL(kiln_heap_realloc(f->ctx_a, p, 128, 0));
})
ROW(heap_realloc_huge, "kiln_heap_realloc", "size SIZE_MAX: NULL, ptr kept", KILN_LOGITEM_HEAP_TOO_LARGE, SINK_A, COUNTED, 0, DOC, {
    void *p = kiln_heap_alloc(f->ctx_a, (kiln_tag){ 0 }, 64, 0);
    WANT_NULL(kiln_heap_realloc(f->ctx_a, p, SIZE_MAX, 0));
    WANT_EQ(kiln_heap_usable_size(p), 64u);
    kiln_heap_free(f->ctx_a, p);
})
ROW(heap_realloc_null_ptr, "kiln_heap_realloc", "NULL ptr (legal: an alloc)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    void *p = kiln_heap_realloc(f->ctx_a, NULL, 64, 0);
    WANT_NOT_NULL(p);
    kiln_heap_free(f->ctx_a, p);
})
ROW(heap_realloc_null_ctx, "kiln_heap_realloc", "NULL ctx: NULL, ptr kept", KILN_LOGITEM_CONTEXT_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    void *p = kiln_heap_alloc(f->ctx_a, (kiln_tag){ 0 }, 64, 0);
    WANT_NULL(kiln_heap_realloc(NULL, p, 128, 0));
    kiln_heap_free(f->ctx_a, p);
})

ROW(heap_usable_null, "kiln_heap_usable_size", "NULL (legal: 0)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_heap_usable_size(NULL), 0u);
})
ROW(heap_usable_stack, "kiln_heap_usable_size", "a stack pointer: 0", KILN_LOGITEM_HEAP_FOREIGN_POINTER, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    int x = 0;
    WANT_EQ(kiln_heap_usable_size(&x), 0u);
})
ROW(heap_usable_freed, "kiln_heap_usable_size", "a freed allocation: 0", KILN_LOGITEM_HEAP_DOUBLE_FREE, SINK_A, COUNTED, 0, UNDOC, {
    void *p = kiln_heap_alloc(f->ctx_a, (kiln_tag){ 0 }, 64, 0);
    kiln_heap_free(f->ctx_a, p);
    WANT_EQ(kiln_heap_usable_size(p), 0u);
})
ROW(heap_tag_interior, "kiln_heap_tag", "an interior pointer: {0}", KILN_LOGITEM_HEAP_INTERIOR_POINTER, SINK_A, COUNTED, 0, DOC, {
    char *p = kiln_heap_alloc(f->ctx_a, TAG_A(f, "t"), 64, 0);
    WANT_EQ(kiln_heap_tag(p + 16).id, 0u);
    kiln_heap_free(f->ctx_a, p);
})
ROW(heap_tag_null, "kiln_heap_tag", "NULL (legal: {0})", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_heap_tag(NULL).id, 0u);
})

/* The malloc shape: rows that need a runtime's log name A the process runtime and attach
 * the test thread to it again (NAME_A), so that the shape serves from that context. */
#define NAME_A(f) kiln_ctx *shape_ctx = (kiln_set_process_runtime((f)->a), kiln_attach((f)->a))
#define UNNAME_A() kiln_detach(shape_ctx)
ROW(ctx_current_attached, "kiln_ctx_current", "after two attaches (legal: the last)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_ctx_current(), f->ctx_b);
})
ROW(process_runtime_first_use, "kiln_process_runtime", "first use (legal: made)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_runtime *rt = kiln_process_runtime();
    WANT_NOT_NULL(rt);
    WANT_EQ(kiln_process_runtime(), rt);
})
ROW(destroy_kilns_process_runtime, "kiln_destroy", "kiln's process runtime: refused", KILN_LOGITEM_PROCESS_RUNTIME_DESTROY, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_runtime *rt = kiln_process_runtime();
    kiln_destroy(rt);
    WANT_EQ(kiln_process_runtime(), rt);
})
ROW(set_process_runtime_null, "kiln_set_process_runtime", "NULL runtime: false", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT(!kiln_set_process_runtime(NULL));
})
ROW(set_process_runtime_forged, "kiln_set_process_runtime", "not a runtime: false", KILN_LOGITEM_RUNTIME_INVALID, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    WANT(!kiln_set_process_runtime(FORGED_RT));
})
ROW(set_process_runtime_twice, "kiln_set_process_runtime", "named already: false, the first stays", KILN_LOGITEM_PROCESS_RUNTIME_TAKEN, SINK_A, COUNTED, 0, DOC, {
    WANT(kiln_set_process_runtime(f->b));
    WANT(!kiln_set_process_runtime(f->a));
    WANT_EQ(kiln_process_runtime(), f->b);
})
ROW(malloc_huge, "kiln_malloc", "size SIZE_MAX: NULL, ENOMEM, nothing logged", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    NAME_A(f);
    errno = 0;
    WANT_NULL(kiln_malloc(SIZE_MAX));
    WANT_EQ(errno, ENOMEM);
    UNNAME_A();
})
ROW(malloc_zero, "kiln_malloc", "size 0 (legal: a unique pointer)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    void *p = kiln_malloc(0);
    WANT_NOT_NULL(p);
    kiln_free(p);
})
ROW(calloc_overflow, "kiln_calloc", "count * size overflows: NULL, ENOMEM", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    errno = 0;
    WANT_NULL(kiln_calloc(SIZE_MAX / 4, 8));
    WANT_EQ(errno, ENOMEM);
})
ROW(realloc_malloc_pointer, "kiln_realloc", "malloc's pointer: NULL, untouched", KILN_LOGITEM_HEAP_FOREIGN_POINTER, SINK_A, COUNTED, 0, DOC, {
    NAME_A(f);
    char *m = malloc(32);
    m[0] = 'k';
    WANT_NULL(kiln_realloc(m, 64));
    WANT_EQ(m[0], 'k');
    free(m);
    UNNAME_A();
})
ROW(realloc_interior, "kiln_realloc", "an interior pointer: NULL", KILN_LOGITEM_HEAP_INTERIOR_POINTER, SINK_A, COUNTED, 0, DOC, {
    NAME_A(f);
    char *p = kiln_malloc(64);
    WANT_NULL(kiln_realloc(p + 16, 128));
    kiln_free(p);
    UNNAME_A();
})
ROW(realloc_zero, "kiln_realloc", "size 0 (legal: freed, NULL)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_NULL(kiln_realloc(kiln_malloc(10), 0));
})
ROW(free_malloc_pointer, "kiln_free", "malloc's pointer: ignored", KILN_LOGITEM_HEAP_FOREIGN_POINTER, SINK_A, COUNTED, 0, DOC, {
    NAME_A(f);
    void *m = malloc(32);
    kiln_free(m);
    free(m);
    UNNAME_A();
})
ROW(free_twice, "kiln_free", "freed already: ignored", KILN_LOGITEM_HEAP_DOUBLE_FREE, SINK_A, COUNTED, 0, DOC, {
    NAME_A(f);
    void *p = kiln_malloc(48);
    kiln_free(p);
    kiln_free(p);
    UNNAME_A();
})
ROW(free_null, "kiln_free", "NULL (legal: no-op)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    kiln_free(NULL);
})
ROW(free_other_runtime, "kiln_free", "another runtime's heap allocation (legal: freed there)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    void *p = kiln_heap_alloc(f->ctx_b, (kiln_tag){ 0 }, 100, 0);
    kiln_free(p);
    kiln_heap_stats s;
    kiln_stats_heap(f->b, &s);
    WANT_EQ(s.live_objects, 0u);
})
ROW(aligned_alloc_not_pow2, "kiln_aligned_alloc", "align 48: NULL, EINVAL", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    errno = 0;
    WANT_NULL(kiln_aligned_alloc(48, 10));
    WANT_EQ(errno, EINVAL);
})
ROW(aligned_alloc_huge_align, "kiln_aligned_alloc", "align 2^40: NULL, ENOMEM", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    errno = 0;
    WANT_NULL(kiln_aligned_alloc((size_t)1 << 40, 10));
    WANT_EQ(errno, ENOMEM);
})
ROW(posix_memalign_small_align, "kiln_posix_memalign", "align 4: EINVAL, out untouched", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    void *out = (void *)f;
    WANT_EQ(kiln_posix_memalign(&out, 4, 10), EINVAL);
    WANT_EQ(out, (void *)f);
})
ROW(posix_memalign_null_out, "kiln_posix_memalign", "NULL out: EINVAL", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, UNDOC, {
    WANT_EQ(kiln_posix_memalign(NULL, 16, 10), EINVAL);
})
ROW(malloc_usable_size_malloc_pointer, "kiln_malloc_usable_size", "malloc's pointer: 0", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    char *m = malloc(32);
    m[0] = 0;
    WANT_EQ(kiln_malloc_usable_size(m), 0u);
    free(m);
})
ROW(malloc_usable_size_null, "kiln_malloc_usable_size", "NULL (legal: 0)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_malloc_usable_size(NULL), 0u);
})
#undef NAME_A
#undef UNNAME_A

ROW(stats_heap_null_rt, "kiln_stats_heap", "NULL runtime: false", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_heap_stats s;
    WANT(!kiln_stats_heap(NULL, &s));
})
ROW(stats_heap_null_out, "kiln_stats_heap", "NULL out: false", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, DOC, {
    WANT(!kiln_stats_heap(f->a, NULL));
})
ROW(stats_heap_classes_null_out, "kiln_stats_heap_classes", "NULL out with cap 4: 0", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, DOC, {
    WANT_EQ(kiln_stats_heap_classes(f->a, NULL, 4), 0u);
})
ROW(stats_heap_classes_count, "kiln_stats_heap_classes", "cap 0 (legal: the count)", KILN_LOGITEM_NONE, SINK_NONE, NOT_COUNTED, 0, DOC, {
    WANT_EQ(kiln_stats_heap_classes(f->a, NULL, 0), (size_t)KILN_HEAP_CLASSES);
})
ROW(stats_memory_null_rt, "kiln_stats_memory", "NULL runtime: false", KILN_LOGITEM_RUNTIME_NULL, SINK_STDERR, NOT_COUNTED, 0, DOC, {
    kiln_memory_stats s;
    WANT(!kiln_stats_memory(NULL, &s));
})
ROW(stats_memory_null_out, "kiln_stats_memory", "NULL out: false", KILN_LOGITEM_STATS_NULL_OUT, SINK_A, COUNTED, 0, DOC, {
    WANT(!kiln_stats_memory(f->a, NULL));
})
ROW(heap_alloc_align_2_63, "kiln_heap_alloc", "align 2^63: NULL", KILN_LOGITEM_HEAP_BAD_ALIGN, SINK_A, COUNTED, 0, DOC, {
    WANT_NULL(kiln_heap_alloc(f->ctx_a, (kiln_tag){ 0 }, 1, (size_t)1 << 63));
})
ROW(heap_free_large_interior, "kiln_heap_free", "a pointer into a large allocation: ignored", KILN_LOGITEM_HEAP_INTERIOR_POINTER, SINK_A, COUNTED, 0, DOC, {
    char *p = kiln_heap_alloc(f->ctx_a, (kiln_tag){ 0 }, 100000, 0);
    kiln_heap_free(f->ctx_a, p + 16);
    kiln_heap_free(f->ctx_a, p);
})
