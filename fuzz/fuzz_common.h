/* fuzz/fuzz_common.h — what the libFuzzer targets share: the input read as a stream of
 * small numbers, the check that stops the run when kiln and a target's model disagree,
 * a log callback that counts kiln's messages by item for the model to compare with what
 * it expects, and fill patterns. Header-only: each target is one .c file plus this.
 *
 * Every target runs one program per input on a fresh runtime with no workers (one
 * thread: the model needs no locks and a crash repeats from its input alone). */
#ifndef KILN_FUZZ_COMMON_H
#define KILN_FUZZ_COMMON_H

#include <kiln/kiln.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the input ------------------------------------------------------------------- */

/* An exhausted input reads as zeros, so every prefix of an input is a program too. */
typedef struct fuzz_input {
    const uint8_t *data;
    size_t         size;
    size_t         pos;
} fuzz_input;

static inline bool fuzz_done(const fuzz_input *in) { return in->pos >= in->size; }

static inline uint8_t fuzz_byte(fuzz_input *in) {
    return in->pos < in->size ? in->data[in->pos++] : 0;
}

/* bytes (1 to 8) little-endian bytes as a number. */
static inline uint64_t fuzz_bits(fuzz_input *in, unsigned bytes) {
    uint64_t value = 0;
    for (unsigned i = 0; i < bytes; i++) value |= (uint64_t)fuzz_byte(in) << (8 * i);
    return value;
}

/* A number in [0, n), n > 0, from as few bytes as cover n (the bias of the modulo only
 * makes some values a little likelier, which a fuzzer does not mind). */
static inline uint32_t fuzz_below(fuzz_input *in, uint32_t n) {
    unsigned bytes = n <= 0x100u ? 1 : n <= 0x10000u ? 2 : 4;
    return (uint32_t)(fuzz_bits(in, bytes) % n);
}

/* ---- disagreement ---------------------------------------------------------------- */

static inline _Noreturn void fuzz_fail(const char *file, int line, const char *cond,
                                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* A disagreement is a crash: libFuzzer keeps the input as an artifact. */
static inline _Noreturn void fuzz_fail(const char *file, int line, const char *cond,
                                       const char *fmt, ...) {
    char detail[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(detail, sizeof detail, fmt, args);
    va_end(args);
    fprintf(stderr, "%s:%d: kiln and the model disagree: %s (%s)\n", file, line, cond, detail);
    abort();
}

#define FUZZ_CHECK(cond, ...)                                                \
    do {                                                                     \
        if (!(cond)) fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);      \
    } while (0)

/* ---- the log --------------------------------------------------------------------- */

#define FUZZ_LOG_ITEMS 32

typedef struct fuzz_log_item {
    char     name[48];
    uint64_t seen;        /* messages kiln sent with this item */
    uint64_t expected;    /* messages the model announced */
    uint64_t allowed;     /* more that kiln may send or not (a rate limit's, which hangs on
                             the clock): seen is expected .. expected + allowed */
} fuzz_log_item;

/* Items in order of first appearance (seen or expected). */
typedef struct fuzz_log {
    fuzz_log_item items[FUZZ_LOG_ITEMS];
    unsigned      count;
    uint64_t      misuse;      /* refused calls the model announced: kiln_stats.api_errors */
    char          last[512];   /* the last message */
} fuzz_log;

static inline fuzz_log_item *fuzz_log_item_named(fuzz_log *log, const char *name, size_t len) {
    for (unsigned i = 0; i < log->count; i++)
        if (strlen(log->items[i].name) == len && memcmp(log->items[i].name, name, len) == 0)
            return &log->items[i];
    FUZZ_CHECK(log->count < FUZZ_LOG_ITEMS && len < sizeof log->items[0].name,
               "too many or too long log items: %.*s", (int)len, name);
    fuzz_log_item *item = &log->items[log->count++];
    memcpy(item->name, name, len);
    item->name[len] = '\0';
    return item;
}

/* Whether the item (len bytes at name) is one of the near-limit warnings of
 * desc.warn_percent (POOL_CAPACITY_NEAR, ...): the models do not track when kiln samples
 * usage (a magazine or a frame late, base/near_limit.h's episodes), so these are checked
 * for their form only: a warning that names its object in quotes. */
static inline bool fuzz_near_limit_item(const char *name, size_t len) {
    return len > 5 && memcmp(name + len - 5, "_NEAR", 5) == 0;
}

/* The kiln_log_fn; user is the fuzz_log. Every message must be "ITEM: details". */
static inline void fuzz_log_fn(void *user, kiln_log_level level, const char *message) {
    fuzz_log *log = user;
    const char *colon = strstr(message, ": ");
    FUZZ_CHECK(colon && colon > message, "a message without an item: %s", message);
    size_t len = (size_t)(colon - message);
    if (fuzz_near_limit_item(message, len)) {
        FUZZ_CHECK(level == KILN_LOG_WARN && strchr(colon, '\'') != NULL,
                   "a near-limit warning that is no warning or names nothing: %s", message);
        return;
    }
    fuzz_log_item_named(log, message, len)->seen++;
    snprintf(log->last, sizeof log->last, "%s", message);
}

/* Every item was logged as often as the model expected (exactly, but for the messages
 * it allowed); nothing else was. With rt, kiln_stats.api_errors also counts exactly the
 * refused calls announced. */
static inline void fuzz_log_verify(fuzz_log *log, kiln_runtime *rt) {
    for (unsigned i = 0; i < log->count; i++) {
        const fuzz_log_item *item = &log->items[i];
        FUZZ_CHECK(item->seen >= item->expected && item->seen <= item->expected + item->allowed,
                   "%s logged %" PRIu64 " times, expected %" PRIu64 " (and %" PRIu64 " allowed; "
                   "last message: %s)", item->name, item->seen, item->expected, item->allowed, log->last);
    }
    kiln_stats stats;
    if (!rt) return;
    FUZZ_CHECK(kiln_stats_get(rt, &stats), "kiln_stats_get failed");
    FUZZ_CHECK(stats.api_errors == log->misuse, "api_errors %" PRIu64 ", model %" PRIu64,
               stats.api_errors, log->misuse);
}

/* The model allows one message of item that kiln may log or not: a warning that a rate
 * limit holds back when the last one was recent (a clock the model does not follow). */
static inline void fuzz_log_allow(fuzz_log *log, const char *item) {
    fuzz_log_item_named(log, item, strlen(item))->allowed++;
}

/* The model announces the message the call just made should have logged: its item,
 * whether it is a refused call (counted in api_errors), and the object it must name
 * (quoted, as kiln names objects; NULL: no name to check). */
static inline void fuzz_log_expect(fuzz_log *log, const char *item, bool misuse, const char *name) {
    fuzz_log_item_named(log, item, strlen(item))->expected++;
    if (misuse) log->misuse++;
    fuzz_log_verify(log, NULL);
    if (!name) return;
    char quoted[64];
    snprintf(quoted, sizeof quoted, "'%s'", name);
    FUZZ_CHECK(strstr(log->last, quoted) != NULL, "%s does not name %s: %s", item, quoted,
               log->last);
}

/* The debug bits an input may switch on (fuzz_debug_bits): those that change no layout
 * or placement the models predict (guards and guard pages do), nor log anything on
 * their own (sites list leaks at destroy). Fill patterns and poisoning must leave every
 * answer the same while they write into, and fence off, freed memory. */
static inline uint32_t fuzz_debug_bits(uint8_t byte) {
    return (byte & 1 ? KILN_DEBUG_CHECKS : 0) | (byte & 2 ? KILN_DEBUG_FILL : 0) |
           (byte & 4 ? KILN_DEBUG_POISON : 0);
}

/* A runtime for one input: no workers, logging into log, small blocks so that a short
 * input already crosses block boundaries. */
static inline kiln_runtime *fuzz_runtime(fuzz_log *log, size_t block_size, uint32_t debug) {
    memset(log, 0, sizeof *log);
    kiln_desc desc = { 0 };
    desc.worker_count = KILN_NO_WORKERS;
    desc.block_size = block_size;
    desc.debug = debug;
    desc.log = fuzz_log_fn;
    desc.log_user = log;
    desc.log_every_repeat = true;   /* the models count one message per call */
    desc.options_env = KILN_OPTIONS_ENV_IGNORE;
    kiln_runtime *rt = kiln_create(&desc);
    FUZZ_CHECK(rt != NULL, "kiln_create failed: %s", log->last);
    return rt;
}

/* ---- contents -------------------------------------------------------------------- */

/* Where [p, p + size) differs from fill, or size when it does not. */
static inline size_t fuzz_first_difference(const void *p, size_t size, uint8_t fill) {
    const uint8_t *bytes = p;
    for (size_t i = 0; i < size; i++)
        if (bytes[i] != fill) return i;
    return size;
}

/* The same, reading every byte (full) or, between operations, only the two ends: an
 * overlap or a stray write reaches an end of most allocations, and a full check after
 * every call would make a long input quadratic. */
static inline size_t fuzz_fill_differs_at(const uint8_t *p, size_t size, uint8_t fill, bool full) {
    if (full || size == 0) return fuzz_first_difference(p, size, fill);
    return p[0] != fill ? 0 : p[size - 1] != fill ? size - 1 : size;
}

static inline bool fuzz_is_pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

static inline bool fuzz_overlap(const void *a, size_t a_size, const void *b, size_t b_size) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return a_size != 0 && b_size != 0 && x < y + b_size && y < x + a_size;
}

#endif /* KILN_FUZZ_COMMON_H */
