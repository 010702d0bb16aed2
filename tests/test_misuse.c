/* tests/test_misuse.c — the misuse matrix: every public function called with every class
 * of bad input that applies to it (NULL pointers, destroyed objects, detached contexts,
 * objects of another runtime, the wrong thread, calls from inside a job, bad sizes and
 * alignments, forged / stale / foreign / zero handles).
 *
 * The rows are ONE table, tests/misuse_cases.h (an X-macro list: each row names the
 * function, the input class, the log item it must report, where the item goes, whether
 * it is counted in api_errors, and a small thunk that makes the call and checks the safe
 * return). From it come the thunks, an array of rows, and one Criterion test per row
 * (misuse::<row id>), each in its own process with a fresh fixture, so a crashing row
 * takes down only itself. The test coverage::every_public_function_has_a_row reads the
 * public headers and fails, naming them, for the KILN_API functions without a row.
 *
 * What every row asserts, besides its thunk's checks of the return value:
 *   - the expected item appears exactly once, where the row says (runtime A's log,
 *     runtime B's log, or stderr when the object cannot name its runtime), and nothing
 *     else is logged anywhere (both recording logs, and stderr, stay otherwise empty);
 *   - api_errors of runtime A (or B) went up by exactly one when the row says counted,
 *     and by zero otherwise; the other runtime's stays unchanged;
 *   - every desc.log_item call came right after its desc.log call, with the same text.
 * The item is matched by its id (desc.log_item), on stderr by its name. A row whose item
 * is KILN_LOGITEM_NONE is legal input (documented as such): nothing is logged, nothing is
 * counted. Rows marked UNDOC are cases the headers are silent about; their
 * expectation is the decision written in the row's class text. */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "recording_log.h"

#ifndef KILN_SOURCE_DIR
#  error "KILN_SOURCE_DIR must name the source tree (tests/meson.build passes it)"
#endif

/* ---------- the fixture ---------- */

typedef enum sink { SINK_NONE, SINK_A, SINK_B, SINK_STDERR } sink;
enum { NOT_COUNTED = 0, COUNTED = 1 };
enum { DOC = 0, UNDOC = 1 };

/* Fixture flags: debug bits for runtime A. */
enum {
    FX_CHECKS    = KILN_DEBUG_CHECKS,
    FX_SITES     = KILN_DEBUG_SITES,
    FX_OWNERSHIP = KILN_DEBUG_OWNERSHIP,
    FX_LIMIT     = 1u << 20,   /* not a debug bit: memory_limit 64 MiB for A */
};

/* What a job or a helper thread does (the thunks cannot define functions). */
typedef enum op {
    OP_NONE,
    OP_CAPTURE_CTX,            /* scratch ctx = the running ctx */
    OP_FRAME_BEGIN,            /* r64 = kiln_frame_begin(ctx) */
    OP_FRAME_END,              /* kiln_frame_end(ctx) */
    OP_RESET_OWN_FRAME_ARENA,  /* kiln_arena_reset(kiln_frame_arena(ctx)) */
    OP_FRAME_ALLOC,            /* rp = kiln_frame_alloc(ctx, 64, 0) */
    /* helper threads only */
    OP_ATTACH_FRAME_BEGIN,     /* attach to A, r64 = frame_begin, detach */
    OP_ATTACH_FRAME_END,       /* attach to A, frame_end, detach */
    OP_ARENA_A_ALLOC,          /* rp = kiln_arena_alloc(arena_a, 64, 0) */
    OP_ARENA_A_ALLOC_AT,       /* rp = kiln_arena_alloc_at(arena_a, 64, 0, __FILE__, __LINE__) */
    OP_ARENA_A_MARK,           /* mark = kiln_arena_mark(arena_a) */
    OP_ARENA_A_RELEASE,        /* kiln_arena_release(arena_a, mark) */
    OP_RESET_CTX_A_FRAME,      /* kiln_arena_reset(kiln_frame_arena(ctx_a)) */
    OP_FRAME_ALLOC_CTX_A,      /* rp = kiln_frame_alloc(ctx_a, 64, 0) */
    OP_ATTACH_KEEP_FRAME_ARENA,/* attach to A, rp = its frame arena, detach */
    OP_HEAP_ALLOC,             /* rp = kiln_heap_alloc(ctx, {0}, 300, 0) */
    OP_ARENA_A_GROW,           /* rp = kiln_arena_grow(arena_a, rp, 64, 128, 0) */
} op;

typedef struct fx {
    recording_log *rec_a, *rec_b;
    kiln_runtime  *a, *b;          /* A has one worker, B none */
    kiln_ctx      *ctx_a, *ctx_b;  /* the test thread's context in each */
    kiln_arena    *arena_a, *arena_b, *dead_arena;
    kiln_pool     *pool_a, *pool_b, *dead_pool;
    kiln_handles  *table_a, *table_a2, *table_b, *dead_table;
    kiln_ctx      *detached;       /* a context of A, attached and detached by a thread */
    /* scratch for jobs and helper threads */
    op             op;
    kiln_ctx      *ctx;            /* OP_CAPTURE_CTX */
    uint64_t       r64;
    void          *rp;
    kiln_mark      mark;
    bool           ran;
} fx;

/* A zeroed block that is no kiln object: a forged runtime or context (kiln reads its
 * magic word, which is 0 here). Large enough for any field kiln might read. 16 bytes in:
 * aligned as malloc's memory is, not as kiln's runtime and contexts are, so a check that
 * read it as one of those structs is a misaligned access (UBSan reports it). */
static _Alignas(4096) unsigned char forged_object[1 << 20];
#define FORGED_RT  ((kiln_runtime *)(void *)(forged_object + 16))
#define FORGED_CTX ((kiln_ctx *)(void *)(forged_object + 16))

static void *detach_thread(void *arg) {
    fx *f = arg;
    f->detached = kiln_attach(f->a);
    kiln_detach(f->detached);
    return NULL;
}

static void fx_setup(fx *f, uint32_t flags) {
    memset(f, 0, sizeof *f);
    f->rec_a = recording_log_new();
    f->rec_b = recording_log_new();
    kiln_desc da = recording_desc(f->rec_a);
    da.worker_count = 1;
    da.debug = flags & KILN_DEBUG_ALL;
    if (flags & FX_LIMIT) da.memory_limit = (size_t)64 << 20;
    kiln_desc db = recording_desc(f->rec_b);
    f->a = kiln_create(&da);
    f->b = kiln_create(&db);
    cr_assert_not_null(f->a);
    cr_assert_not_null(f->b);
    f->ctx_a = kiln_attach(f->a);
    f->ctx_b = kiln_attach(f->b);
    cr_assert_not_null(f->ctx_a);
    cr_assert_not_null(f->ctx_b);
    f->arena_a = kiln_arena_create(f->a, "level");
    f->arena_b = kiln_arena_create(f->b, "level_b");
    f->dead_arena = kiln_arena_create(f->a, "dead");
    cr_assert(f->arena_a && f->arena_b && f->dead_arena);
    kiln_arena_destroy(f->dead_arena);
    kiln_pool_desc pd = { .name = "bullets", .size = 32 };
    f->pool_a = kiln_pool_create(f->a, &pd);
    pd.name = "bullets_b";
    f->pool_b = kiln_pool_create(f->b, &pd);
    pd.name = "dead";
    f->dead_pool = kiln_pool_create(f->a, &pd);
    cr_assert(f->pool_a && f->pool_b && f->dead_pool);
    kiln_pool_destroy(f->dead_pool);
    kiln_handles_desc hd = { .name = "enemies", .item_size = 16, .capacity = 1024 };
    f->table_a = kiln_handles_create(f->a, &hd);
    hd.name = "enemies2";
    f->table_a2 = kiln_handles_create(f->a, &hd);
    hd.name = "enemies_b";
    f->table_b = kiln_handles_create(f->b, &hd);
    hd.name = "dead";
    f->dead_table = kiln_handles_create(f->a, &hd);
    cr_assert(f->table_a && f->table_a2 && f->table_b && f->dead_table);
    kiln_handles_destroy(f->dead_table);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, detach_thread, f), 0);
    pthread_join(t, NULL);
    cr_assert_not_null(f->detached);
    cr_assert_eq(recorded_count(f->rec_a), 0, "the fixture logged: %s", recorded_summary(f->rec_a));
    cr_assert_eq(recorded_count(f->rec_b), 0, "the fixture logged: %s", recorded_summary(f->rec_b));
}

static void fx_teardown(fx *f) {
    /* Whatever is still alive goes with kiln_destroy (its messages are not checked). */
    kiln_detach(f->ctx_a);
    kiln_detach(f->ctx_b);
    kiln_destroy(f->a);
    kiln_destroy(f->b);
    recording_log_free(f->rec_a);
    recording_log_free(f->rec_b);
}

static uint64_t api_errors(kiln_runtime *rt) {
    kiln_stats s;
    memset(&s, 0, sizeof s);
    kiln_stats_get(rt, &s);
    return s.api_errors;
}

/* ---------- what jobs and helper threads do ---------- */

static void do_op(fx *f, kiln_ctx *ctx) {
    f->ran = true;
    switch (f->op) {
    case OP_NONE: break;
    case OP_CAPTURE_CTX: f->ctx = ctx; break;
    case OP_FRAME_BEGIN: f->r64 = kiln_frame_begin(ctx); break;
    case OP_FRAME_END: kiln_frame_end(ctx); break;
    case OP_RESET_OWN_FRAME_ARENA: kiln_arena_reset(kiln_frame_arena(ctx)); break;
    case OP_FRAME_ALLOC: f->rp = kiln_frame_alloc(ctx, 64, 0); break;
    case OP_ATTACH_FRAME_BEGIN: {
        kiln_ctx *mine = kiln_attach(f->a);
        f->r64 = kiln_frame_begin(mine);
        kiln_detach(mine);
        break;
    }
    case OP_ATTACH_FRAME_END: {
        kiln_ctx *mine = kiln_attach(f->a);
        kiln_frame_end(mine);
        kiln_detach(mine);
        break;
    }
    case OP_ARENA_A_ALLOC: f->rp = kiln_arena_alloc(f->arena_a, 64, 0); break;
    case OP_ARENA_A_GROW: f->rp = kiln_arena_grow(f->arena_a, f->rp, 64, 128, 0); break;
    case OP_ARENA_A_ALLOC_AT: f->rp = kiln_arena_alloc_at(f->arena_a, 64, 0, __FILE__, __LINE__); break;
    case OP_ARENA_A_MARK: f->mark = kiln_arena_mark(f->arena_a); break;
    case OP_ARENA_A_RELEASE: kiln_arena_release(f->arena_a, f->mark); break;
    case OP_RESET_CTX_A_FRAME: kiln_arena_reset(kiln_frame_arena(f->ctx_a)); break;
    case OP_FRAME_ALLOC_CTX_A: f->rp = kiln_frame_alloc(f->ctx_a, 64, 0); break;
    case OP_ATTACH_KEEP_FRAME_ARENA: {
        kiln_ctx *mine = kiln_attach(f->a);
        f->rp = kiln_frame_arena(mine);
        kiln_detach(mine);
        break;
    }
    case OP_HEAP_ALLOC: f->rp = kiln_heap_alloc(ctx, (kiln_tag){ 0 }, 300, 0); break;
    }
}

static void op_job(kiln_ctx *ctx, void *arg) { do_op(arg, ctx); }

static void *op_thread(void *arg) {
    do_op(arg, NULL);
    return NULL;
}

/* Runs op on another thread (no context of its own unless the op attaches). */
static void on_thread(fx *f, op o) {
    f->op = o;
    f->ran = false;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, op_thread, f), 0);
    pthread_join(t, NULL);
    cr_expect(f->ran);
}

/* Runs op in a frame job pinned to the test thread's context of A (it runs the job
 * while it waits): a call from inside a job on a thread that is not a worker. */
static void in_job(fx *f, op o) {
    f->op = o;
    f->ran = false;
    kiln_counter done = { { 0, 0 } };
    kiln_job job = { op_job, f };
    kiln_run_ex(f->ctx_a, &job, 1, &done, &(kiln_run_desc){ .pinned_to = f->ctx_a });
    kiln_wait(f->ctx_a, &done);
    cr_expect(f->ran, "the job ran");
}

/* Runs op in a background job, which only a worker takes (A has one). */
static void in_worker_job(fx *f, op o) {
    f->op = o;
    f->ran = false;
    kiln_counter done = { { 0, 0 } };
    kiln_job job = { op_job, f };
    kiln_run_ex(f->ctx_a, &job, 1, &done, &(kiln_run_desc){ .background = true });
    kiln_wait(f->ctx_a, &done);
    cr_expect(f->ran, "the background job ran");
}

/* The context of A's worker. */
static kiln_ctx *worker_ctx(fx *f) {
    in_worker_job(f, OP_CAPTURE_CTX);
    cr_assert_not_null(f->ctx);
    return f->ctx;
}

/* A live handle of table (its item zeroed). */
static kiln_handle live_handle(kiln_ctx *ctx, kiln_handles *table) {
    kiln_handle h = kiln_handle_alloc(ctx, table, NULL);
    cr_assert(!kiln_handle_is_null(h));
    return h;
}

static kiln_handles_stats table_stats(kiln_handles *table) {
    kiln_handles_stats s;
    memset(&s, 0, sizeof s);
    cr_expect(kiln_handles_stats_get(table, &s));
    return s;
}

static kiln_pool_stats pool_stats(kiln_pool *pool) {
    kiln_pool_stats s;
    memset(&s, 0, sizeof s);
    cr_expect(kiln_pool_stats_get(pool, &s));
    return s;
}

static bool mark_is_empty(kiln_mark m) { return m.opaque[0] == 0 && m.opaque[1] == 0; }

static bool all_zero(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i]) return false;
    return true;
}

static void job_nop(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    if (arg) (*(int *)arg)++;
}

/* A run of ctx_a (kiln_run_ex with desc; kiln_run for a NULL desc) on a counter that a
 * run of runtime B holds (its job waits in ctx_b's deque: B has no workers), or, with
 * b_done, that B's run left at zero. B's job runs once and the counter ends at zero
 * either way; returns how many of A's jobs ran. */
static int run_on_a_counter_of_b(fx *f, const kiln_run_desc *desc, bool b_done) {
    int runs = 0, b_runs = 0;
    kiln_counter c = { { 0 } };
    kiln_run(f->ctx_b, &(kiln_job){ job_nop, &b_runs }, 1, &c);
    if (b_done) kiln_wait(f->ctx_b, &c);
    kiln_job job = { job_nop, &runs };
    if (desc) kiln_run_ex(f->ctx_a, &job, 1, &c, desc);
    else kiln_run(f->ctx_a, &job, 1, &c);
    if (!b_done) cr_expect_eq(c.opaque[0] & 0xffffffffu, 1, "the counter counts B's job only (its count: the low half)");
    /* Whoever's jobs it counts waits: B's job runs only in ctx_b's wait. */
    kiln_wait(b_done ? f->ctx_a : f->ctx_b, &c);
    cr_expect_eq(b_runs, 1);
    cr_expect_eq(c.opaque[0] & 0xffffffffu, 0, "the counter ends at zero");
    return runs;
}

/* A run on a counter that a batch with after waits on, pinned to ctx_a like the
 * prerequisite's first run; the jobs that ran (all three once the waits return). */
static int run_on_a_waited_counter(fx *f) {
    int runs = 0;
    kiln_job job = { job_nop, &runs };
    kiln_counter prerequisite = { { 0 } }, c = { { 0 } };
    kiln_run_ex(f->ctx_a, &job, 1, &prerequisite, &(kiln_run_desc){ .pinned_to = f->ctx_a });
    const kiln_counter *after[] = { &prerequisite };
    kiln_run_ex(f->ctx_a, &job, 1, &c, &(kiln_run_desc){ .after = after, .after_count = 1 });
    kiln_run_ex(f->ctx_a, &job, 1, &prerequisite, &(kiln_run_desc){ .pinned_to = f->ctx_a });
    kiln_wait(f->ctx_a, &c);
    kiln_wait(f->ctx_a, &prerequisite);
    return runs;
}

/* The walks' visits: count, or try to destroy the table being walked. */
static void visit_count(void *user, kiln_handle h, void *item) {
    (void)h;
    (void)item;
    (*(int *)user)++;
}

static void visit_destroy(void *user, kiln_handle h, void *item) {
    (void)h;
    (void)item;
    kiln_handles_destroy(user);
}

static void range_nop(kiln_ctx *ctx, size_t begin, size_t end, void *arg) {
    (void)ctx;
    if (arg) *(size_t *)arg += end - begin;
}

struct mob { int hp; };
KILN_HANDLE_TYPE(mob, struct mob)

/* ---------- the table ---------- */

typedef struct misuse_row {
    const char *id;
    const char *function;
    const char *input_class;
    kiln_log_item item;    /* KILN_LOGITEM_NONE: legal input, nothing logged */
    sink        where;
    bool        counted;
    uint32_t    flags;
    bool        undocumented;
    void      (*thunk)(fx *f);
} misuse_row;

/* The safe-return checks of the rows: the failure message is the expression itself. */
#define WANT(expr)          cr_expect((expr), "want: %s", #expr)
#define WANT_NULL(expr)     cr_expect_null((expr), "want NULL: %s", #expr)
#define WANT_NOT_NULL(expr) cr_expect_not_null((expr), "want non-NULL: %s", #expr)
#define WANT_EQ(a, b)       cr_expect_eq((a), (b), "want equal: %s, %s", #a, #b)

#define ROW(id, fn, cls, item, where, counted, flags, doc, ...) \
    static void thunk_##id(fx *f) { (void)f; __VA_ARGS__ }
#include "misuse_cases.h"
#undef ROW

static const misuse_row rows[] = {
#define ROW(id, fn, cls, item, where, counted, flags, doc, ...) \
    { #id, fn, cls, item, where, counted, flags, doc, thunk_##id },
#include "misuse_cases.h"
#undef ROW
};
#define ROW_COUNT (sizeof rows / sizeof rows[0])

static const char *sink_name(sink s) {
    switch (s) {
    case SINK_NONE: return "nowhere";
    case SINK_A: return "runtime A's log";
    case SINK_B: return "runtime B's log";
    case SINK_STDERR: return "stderr";
    }
    return "?";
}

/* The lines of stderr that carry item ("kiln <level>: ITEM: ..."): the default sink has
 * the text only. */
static size_t stderr_items(const char *text, kiln_log_item item) {
    size_t n = 0;
    char needle[96];
    snprintf(needle, sizeof needle, ": %s: ", kiln_log_item_name(item));
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (strncmp(line, "kiln ", 5) == 0) {
            const char *colon = memchr(line, ':', len);
            if (colon && strncmp(colon, needle, strlen(needle)) == 0) n++;
        }
        line += len + (end ? 1 : 0);
    }
    return n;
}

static size_t stderr_lines(const char *text) {
    size_t n = 0;
    for (const char *p = text; *p; p++)
        if (*p == '\n') n++;
    if (*text && text[strlen(text) - 1] != '\n') n++;
    return n;
}

static void run_row(const char *id) {
    const misuse_row *r = NULL;
    for (size_t i = 0; i < ROW_COUNT; i++)
        if (strcmp(rows[i].id, id) == 0) r = &rows[i];
    cr_assert_not_null(r);
    fx f;
    fx_setup(&f, r->flags);
    uint64_t ea = api_errors(f.a), eb = api_errors(f.b);
    stderr_capture cap;
    stderr_capture_begin(&cap);
    r->thunk(&f);
    char *err = stderr_capture_end(&cap);
    uint64_t da = api_errors(f.a) - ea, db = api_errors(f.b) - eb;

    const char *what = r->input_class;
    kiln_log_item item = r->item;
    const char *item_name = item ? kiln_log_item_name(item) : "none";
    size_t in_a = recorded_count(f.rec_a), in_b = recorded_count(f.rec_b);
    size_t lines = stderr_lines(err);
    char a_log[4096], b_log[4096];
    snprintf(a_log, sizeof a_log, "%s", recorded_summary(f.rec_a));
    snprintf(b_log, sizeof b_log, "%s", recorded_summary(f.rec_b));

    if (item) {
        size_t got = r->where == SINK_A ? count_items(f.rec_a, item)
                   : r->where == SINK_B ? count_items(f.rec_b, item)
                   : stderr_items(err, item);
        cr_expect_eq(got, 1, "%s(%s): want %s once on %s, got it %zu times; A's log: [%s] "
                     "B's log: [%s] stderr: [%s]", r->function, what, item_name, sink_name(r->where),
                     got, a_log, b_log, err);
    }
    size_t want_a = item && r->where == SINK_A, want_b = item && r->where == SINK_B;
    size_t want_err = item && r->where == SINK_STDERR;
    cr_expect_eq(in_a, want_a, "%s(%s): runtime A's log has %zu messages, want %zu (%s): [%s]",
                 r->function, what, in_a, want_a, item_name, a_log);
    cr_expect_eq(in_b, want_b, "%s(%s): runtime B's log has %zu messages, want %zu (%s): [%s]",
                 r->function, what, in_b, want_b, item_name, b_log);
    cr_expect_eq(lines, want_err, "%s(%s): stderr has %zu lines, want %zu (%s): [%s]",
                 r->function, what, lines, want_err, item_name, err);
    cr_expect_eq(f.rec_a->unpaired + f.rec_b->unpaired, 0,
                 "%s(%s): a log_item call matched no message of desc.log", r->function, what);
    uint64_t want_da = r->counted && r->where == SINK_A, want_db = r->counted && r->where == SINK_B;
    cr_expect_eq(da, want_da, "%s(%s): api_errors of runtime A went up by %llu, want %llu",
                 r->function, what, (unsigned long long)da, (unsigned long long)want_da);
    cr_expect_eq(db, want_db, "%s(%s): api_errors of runtime B went up by %llu, want %llu",
                 r->function, what, (unsigned long long)db, (unsigned long long)want_db);
    free(err);
    fx_teardown(&f);
}

TestSuite(misuse, .timeout = 30);

#define ROW(id, fn, cls, item, where, counted, flags, doc, ...) \
    Test(misuse, id) { run_row(#id); }
#include "misuse_cases.h"
#undef ROW

/* ---------- every public function has a row ---------- */

/* Appends to names every function declared with KILN_API in text. */
static size_t api_functions(const char *text, char names[][64], size_t count, size_t cap) {
    for (const char *p = text; (p = strstr(p, "KILN_API")) != NULL; p += 8) {
        /* Skip the macro's own definition: "#  define KILN_API ..." */
        const char *line = p;
        while (line > text && line[-1] != '\n') line--;
        const char *q = line;
        while (*q == ' ' || *q == '\t') q++;
        if (*q == '#') continue;
        const char *paren = strchr(p, '(');
        const char *semi = strchr(p, ';');
        if (!paren || (semi && semi < paren)) continue;
        const char *end = paren;
        while (end > p && (end[-1] == ' ' || end[-1] == '\t')) end--;
        const char *start = end;
        while (start > p && (start[-1] == '_' || (start[-1] >= 'a' && start[-1] <= 'z') ||
                             (start[-1] >= 'A' && start[-1] <= 'Z') ||
                             (start[-1] >= '0' && start[-1] <= '9')))
            start--;
        size_t len = (size_t)(end - start);
        if (len == 0 || len >= 64 || count >= cap) continue;
        memcpy(names[count], start, len);
        names[count][len] = '\0';
        count++;
    }
    return count;
}

static char *read_text(const char *path) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    size_t got = fread(text, 1, (size_t)size, file);
    text[got] = '\0';
    fclose(file);
    return text;
}

Test(coverage, every_public_function_has_a_row) {
    static char names[512][64];
    size_t count = 0, headers = 0;
    const char *dir_path = KILN_SOURCE_DIR "/include/kiln";
    DIR *dir = opendir(dir_path);
    cr_assert_not_null(dir, "cannot open %s", dir_path);
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len < 3 || strcmp(e->d_name + len - 2, ".h") != 0) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir_path, e->d_name);
        char *text = read_text(path);
        cr_assert_not_null(text, "cannot read %s", path);
        count = api_functions(text, names, count, 512);
        free(text);
        headers++;
    }
    closedir(dir);
    cr_assert_gt(headers, 0);
    cr_assert_gt(count, 40, "found only %zu KILN_API functions: the parser is off", count);
    cr_log_info("%zu KILN_API functions in %zu headers, %zu rows", count, headers, (size_t)ROW_COUNT);
    char missing[4096] = "";
    size_t n_missing = 0;
    for (size_t i = 0; i < count; i++) {
        bool found = false;
        for (size_t j = 0; j < ROW_COUNT && !found; j++)
            found = strcmp(rows[j].function, names[i]) == 0;
        if (!found) {
            n_missing++;
            size_t used = strlen(missing);
            snprintf(missing + used, sizeof missing - used, " %.63s", names[i]);
        }
    }
    cr_expect_eq(n_missing, 0, "%zu public functions have no row in tests/misuse_cases.h:%s",
                 n_missing, missing);
    /* And the other way: a row naming a function no header declares is a typo (the
     * typed wrappers of KILN_HANDLE_TYPE are named "KILN_HANDLE_TYPE name_...") . */
    for (size_t j = 0; j < ROW_COUNT; j++) {
        if (strncmp(rows[j].function, "KILN_HANDLE_TYPE", 16) == 0) continue;
        bool found = false;
        for (size_t i = 0; i < count && !found; i++) found = strcmp(rows[j].function, names[i]) == 0;
        cr_expect(found, "row %s names %s, which no public header declares", rows[j].id,
                  rows[j].function);
    }
}

/* The row ids are unique (the Test names would clash anyway) and each row's sink
 * agrees with its counting: only a runtime's log counts. */
Test(coverage, rows_are_well_formed) {
    for (size_t i = 0; i < ROW_COUNT; i++) {
        const misuse_row *r = &rows[i];
        if (!r->item) cr_expect(r->where == SINK_NONE && !r->counted, "row %s", r->id);
        if (r->item) cr_expect(r->where != SINK_NONE, "row %s", r->id);
        if (r->where == SINK_STDERR) cr_expect(!r->counted, "row %s: stderr is not counted", r->id);
    }
}

/* A listing for the report: every row, with UNDOC marked (run with --verbose). */
Test(coverage, list_rows) {
    size_t undoc = 0;
    for (size_t i = 0; i < ROW_COUNT; i++) {
        const misuse_row *r = &rows[i];
        if (r->undocumented) undoc++;
        cr_log_info("%-5s %-28s %-60s -> %s on %s%s", r->undocumented ? "UNDOC" : "", r->function,
                    r->input_class, r->item ? kiln_log_item_name(r->item) : "(nothing)", sink_name(r->where),
                    r->counted ? ", counted" : "");
    }
    cr_log_info("%zu rows, %zu undocumented", (size_t)ROW_COUNT, undoc);
}
