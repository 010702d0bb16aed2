/* runtime/options.c — options strings: parsing "key=value,..." onto kiln_desc by the kinds
 * KILN_DESC_FIELDS gives each key, the layers in their order, each field's layer, and the
 * effective values written back in the same syntax. */
#include "options.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum kind {
    KIND_NONE, KIND_COUNT, KIND_COUNT64, KIND_PERCENT, KIND_SPIN_US, KIND_SIZE,
    KIND_BLOCK_SIZE, KIND_WORKERS, KIND_DEBUG, KIND_POLICY, KIND_BOOL, KIND_STATS,
    KIND_LEVEL, KIND_MODE, KIND_PATH
};

/* The C type each kind writes, by size (0: any); a list entry of another size does not
 * compile. */
#define KIND_SIZE_NONE       0
#define KIND_SIZE_COUNT      sizeof(uint32_t)
#define KIND_SIZE_COUNT64    sizeof(uint64_t)
#define KIND_SIZE_PERCENT    sizeof(uint32_t)
#define KIND_SIZE_SPIN_US    sizeof(uint32_t)
#define KIND_SIZE_SIZE       sizeof(size_t)
#define KIND_SIZE_BLOCK_SIZE sizeof(size_t)
#define KIND_SIZE_WORKERS    sizeof(uint32_t)
#define KIND_SIZE_DEBUG      sizeof(uint32_t)
#define KIND_SIZE_POLICY     sizeof(kiln_budget_policy)
#define KIND_SIZE_BOOL       sizeof(bool)
#define KIND_SIZE_STATS      sizeof(kiln_stats_schedule)
#define KIND_SIZE_LEVEL      sizeof(kiln_log_threshold)
#define KIND_SIZE_PATH       sizeof(const char *)
#define KIND_SIZE_MODE       sizeof(kiln_log_mode)
#define IS_PATH_(type, field, key, kind, default_text, meaning) \
    + (KIND_##kind == KIND_PATH)
_Static_assert(0 KILN_DESC_FIELDS(IS_PATH_) <= KILN_OPTION_PATHS,
               "kiln_option_sources holds KILN_OPTION_PATHS paths");
#define KIND_CHECK_(type, field, key, kind, default_text, meaning) \
    _Static_assert(KIND_SIZE_##kind == 0 || KIND_SIZE_##kind == sizeof(type), \
                   "kiln_desc." #field ": its kind " #kind " writes another type");
KILN_DESC_FIELDS(KIND_CHECK_)

typedef struct field_info {
    const char *key;       /* "" for none */
    enum kind   kind;
    size_t      offset;
    size_t      size;
} field_info;

static const char *const allowed_text[] = {
    [KIND_NONE] = "",
    [KIND_COUNT] = "a number from 0 to 4294967295",
    [KIND_COUNT64] = "a number from 0 to 18446744073709551615",
    [KIND_PERCENT] = "a number from 0 to 100 (0: the default)",
    [KIND_SPIN_US] = "a number of microseconds from 0 to 1000000 (KILN_MAX_IDLE_SPIN_US)",
    [KIND_SIZE] = "a number of bytes, optionally with K, M, G or T (binary multiples)",
    [KIND_BLOCK_SIZE] = "0 or a power of two from 4K to 1G (K, M, G: binary multiples)",
    [KIND_WORKERS] = "a number of workers from 0 to 63 (0: one per CPU but one), or none",
    [KIND_DEBUG] = ("debug bit names joined by +: checks, fill, guards, guard_pages, poison, "
                    "sites, ownership, all, none"),
    [KIND_POLICY] = "warn or refuse",
    [KIND_BOOL] = "on, off, true, false, yes, no, 1 or 0",
    [KIND_STATS] = "exit, frame:N (N from 1), both joined by +, or off",
    [KIND_LEVEL] = "debug, info, warn, error or off",
    [KIND_MODE] = "sync or async",
    [KIND_PATH] = "a path of fewer than 1024 bytes (KILN_OPTION_PATH_MAX), or nothing for none",
};

static const char *const level_names[] = {
    [KILN_LOG_THRESHOLD_DEBUG] = "debug", [KILN_LOG_THRESHOLD_INFO] = "info",
    [KILN_LOG_THRESHOLD_WARN] = "warn", [KILN_LOG_THRESHOLD_ERROR] = "error",
    [KILN_LOG_THRESHOLD_OFF] = "off",
};

#define FIELD_ROW_(type, field, key, kind, default_text, meaning) \
    { key, KIND_##kind, offsetof(kiln_desc, field), sizeof(type) },
static const field_info fields[KILN_FIELD_COUNT] = { KILN_DESC_FIELDS(FIELD_ROW_) };

static const struct { const char *name; uint32_t bits; } debug_names[] = {
    { "checks", KILN_DEBUG_CHECKS }, { "fill", KILN_DEBUG_FILL },
    { "guards", KILN_DEBUG_GUARDS }, { "guard_pages", KILN_DEBUG_GUARD_PAGES },
    { "poison", KILN_DEBUG_POISON }, { "sites", KILN_DEBUG_SITES },
    { "ownership", KILN_DEBUG_OWNERSHIP }, { "all", KILN_DEBUG_ALL }, { "none", 0 },
};

/* A piece of an options string: not NUL-terminated. */
typedef struct span {
    const char *at;
    size_t      len;
} span;

static bool span_is(span s, const char *word) {
    return strlen(word) == s.len && memcmp(s.at, word, s.len) == 0;
}

/* White space: spaces, tabs and line ends (a config file's line read with fgets). */
static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static span span_trim(span s) {
    while (s.len && is_space(s.at[0])) s.at++, s.len--;
    while (s.len && is_space(s.at[s.len - 1])) s.len--;
    return s;
}

/* The part of *rest before the first sep (all of it when none), and *rest after it. */
static span span_cut(span *rest, char sep) {
    const char *end = memchr(rest->at, sep, rest->len);
    span head = { rest->at, end ? (size_t)(end - rest->at) : rest->len };
    rest->at += end ? head.len + 1 : head.len;
    rest->len -= end ? head.len + 1 : head.len;
    return head;
}

/* A decimal number with an optional binary multiple (K, M, G, T when sized) at its end;
 * false for anything else or a value past max. */
static bool parse_number(span s, bool sized, uint64_t max, uint64_t *out) {
    unsigned shift = 0;
    if (sized && s.len > 1) {
        const char *units = "KMGT", *unit = memchr(units, s.at[s.len - 1] & ~0x20, 4);
        if (unit) shift = 10u * (unsigned)(unit - units + 1), s.len--;
    }
    if (s.len == 0 || s.len > 20) return false;
    uint64_t value = 0;
    for (size_t i = 0; i < s.len; i++) {
        if (s.at[i] < '0' || s.at[i] > '9') return false;
        unsigned digit = (unsigned)(s.at[i] - '0');
        if (value > (UINT64_MAX - digit) / 10) return false;
        value = value * 10 + digit;
    }
    if (shift && value > (UINT64_MAX >> shift)) return false;
    value <<= shift;
    if (value > max) return false;
    *out = value;
    return true;
}

/* Whether s is names joined by '+': not empty, no '+' at either end (an empty name in
 * the middle is no name, which the callers refuse). */
static bool joined_list(span s) {
    return s.len != 0 && s.at[0] != '+' && s.at[s.len - 1] != '+';
}

static bool parse_debug(span s, uint32_t *out) {
    if (!joined_list(s)) return false;
    uint32_t bits = 0;
    while (s.len) {
        span name = span_trim(span_cut(&s, '+'));
        size_t i = 0, n = sizeof debug_names / sizeof debug_names[0];
        while (i < n && !span_is(name, debug_names[i].name)) i++;
        if (i == n) return false;
        bits |= debug_names[i].bits;
    }
    *out = bits;
    return true;
}

static bool parse_stats(span s, kiln_stats_schedule *out) {
    kiln_stats_schedule when = { 0 };
    if (span_is(s, "off")) { *out = when; return true; }
    if (!joined_list(s)) return false;
    while (s.len) {
        span part = span_trim(span_cut(&s, '+'));
        uint64_t n;
        if (span_is(part, "exit")) when.at_exit = true;
        else if (part.len > 6 && memcmp(part.at, "frame:", 6) == 0 &&
                 parse_number((span){ part.at + 6, part.len - 6 }, false, UINT32_MAX, &n) && n)
            when.every_frames = (uint32_t)n;
        else return false;
    }
    *out = when;
    return true;
}

/* The slot of a path field in kiln_option_sources.paths: its order among the paths. */
static char *path_slot(const field_info *f, kiln_option_sources *sources);

/* Parses value into the field at base + f->offset (a path into its slot of sources);
 * false for a value not of the kind. */
static bool parse_value(const field_info *f, span v, void *base, kiln_option_sources *sources) {
    void *at = (char *)base + f->offset;
    uint64_t n;
    switch (f->kind) {
    case KIND_LEVEL:
        for (uint32_t i = KILN_LOG_THRESHOLD_DEBUG; i <= KILN_LOG_THRESHOLD_OFF; i++) {
            if (span_is(v, level_names[i])) {
                *(kiln_log_threshold *)at = (kiln_log_threshold)i;
                return true;
            }
        }
        return false;
    case KIND_MODE:
        if (!span_is(v, "sync") && !span_is(v, "async")) return false;
        *(kiln_log_mode *)at = span_is(v, "sync") ? KILN_LOG_SYNC : KILN_LOG_ASYNC;
        return true;
    case KIND_PATH: {
        if (v.len >= KILN_OPTION_PATH_MAX) return false;
        char *copy = path_slot(f, sources);
        memcpy(copy, v.at, v.len);
        copy[v.len] = '\0';
        *(const char **)at = v.len ? copy : NULL;
        return true;
    }
    case KIND_COUNT: case KIND_PERCENT: case KIND_SPIN_US: {
        uint64_t max = f->kind == KIND_PERCENT ? 100 : f->kind == KIND_SPIN_US ? KILN_MAX_IDLE_SPIN_US : UINT32_MAX;
        if (!parse_number(v, false, max, &n)) return false;
        *(uint32_t *)at = (uint32_t)n;
        return true;
    }
    case KIND_COUNT64:
        if (!parse_number(v, false, UINT64_MAX, &n)) return false;
        *(uint64_t *)at = n;
        return true;
    case KIND_SIZE: case KIND_BLOCK_SIZE:
        if (!parse_number(v, true, SIZE_MAX, &n)) return false;
        if (f->kind == KIND_BLOCK_SIZE && n != 0 &&
            ((n & (n - 1)) != 0 || n < 4096 || n > ((uint64_t)1 << 30))) return false;
        *(size_t *)at = (size_t)n;
        return true;
    case KIND_WORKERS:
        if (span_is(v, "none")) n = KILN_NO_WORKERS;
        else if (!parse_number(v, false, KILN_MAX_WORKERS, &n)) return false;
        *(uint32_t *)at = (uint32_t)n;
        return true;
    case KIND_DEBUG:
        return parse_debug(v, (uint32_t *)at);
    case KIND_POLICY:
        if (!span_is(v, "warn") && !span_is(v, "refuse")) return false;
        *(kiln_budget_policy *)at = span_is(v, "warn") ? KILN_BUDGET_WARN : KILN_BUDGET_REFUSE;
        return true;
    case KIND_BOOL: {
        static const char *const yes[] = { "on", "true", "yes", "1" }, *const no[] = { "off", "false", "no", "0" };
        for (int i = 0; i < 4; i++) {
            if (span_is(v, yes[i]) || span_is(v, no[i])) {
                *(bool *)at = span_is(v, yes[i]);
                return true;
            }
        }
        return false;
    }
    case KIND_STATS:
        return parse_stats(v, (kiln_stats_schedule *)at);
    case KIND_NONE:
        break;
    }
    return false;
}

/* Whether the program's desc set the field (a value other than zero). */
static bool field_set(const field_info *f, const kiln_desc *d) {
    const unsigned char *at = (const unsigned char *)d + f->offset;
    if (f->kind == KIND_STATS) {
        const kiln_stats_schedule *s = (const void *)at;
        return s->at_exit || s->every_frames;   /* not its padding */
    }
    for (size_t i = 0; i < f->size; i++)
        if (at[i]) return true;
    return false;
}

/* ---------- keys ---------- */

kiln_desc_field kiln_option_find(const char *key) {
    for (int i = 0; i < KILN_FIELD_COUNT; i++)
        if (fields[i].kind != KIND_NONE && key && strcmp(fields[i].key, key) == 0)
            return (kiln_desc_field)i;
    return KILN_FIELD_COUNT;
}

static kiln_desc_field find_span(span key) {
    for (int i = 0; i < KILN_FIELD_COUNT; i++)
        if (fields[i].kind != KIND_NONE && span_is(key, fields[i].key)) return (kiln_desc_field)i;
    return KILN_FIELD_COUNT;
}

/* Edit distance between a span and a key (keys are under 32 characters; longer spans
 * are cut there, which only makes them farther). */
static size_t distance(span a, const char *b) {
    size_t row[33], blen = strlen(b), alen = a.len < 32 ? a.len : 32;
    if (blen > 32) blen = 32;
    for (size_t j = 0; j <= blen; j++) row[j] = j;
    for (size_t i = 1; i <= alen; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= blen; j++) {
            size_t above = row[j];
            size_t best = diagonal + (a.at[i - 1] != b[j - 1]);
            if (above + 1 < best) best = above + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    return row[blen];
}

static const char *nearest_key(span key) {
    const char *best = NULL;
    size_t best_distance = SIZE_MAX;
    for (int i = 0; i < KILN_FIELD_COUNT; i++) {
        if (fields[i].kind == KIND_NONE) continue;
        size_t d = distance(key, fields[i].key);
        if (d < best_distance) best = fields[i].key, best_distance = d;
    }
    return best;
}

/* ---------- layers ---------- */

static const char *const layer_names[] = { "default", "desc", "options", "env" };
static const char *const layer_sources[] = { "kiln's defaults", "the desc",
                                             "desc.options", "KILN_OPTIONS" };

const char *kiln_option_layer_name(kiln_option_layer layer) {
    return (unsigned)layer <= KILN_LAYER_ENV ? layer_names[layer] : "unknown";
}

/* Lays one options string over *d. false, logged, at its first bad pair. */
static bool apply_layer(const char *text, kiln_option_layer layer, kiln_desc *d,
                        kiln_option_sources *sources, const kiln_log_sink *early) {
    span rest = { text, strlen(text) };
    while (rest.len) {
        span pair = span_trim(span_cut(&rest, ','));
        if (pair.len == 0) continue;   /* ",," and a trailing comma */
        span value = pair;
        span key = span_trim(span_cut(&value, '='));
        value = span_trim(value);
        bool has_value = key.len < pair.len;
        kiln_desc_field f = find_span(key);
        if (f == KILN_FIELD_COUNT && has_value && key.len) {
            kiln_log(early, KILN_LOGITEM_OPTION_UNKNOWN,
                     "kiln_create: option '%.*s' in %s is no key (the nearest: '%s'); ignored",
                     (int)key.len, key.at, layer_sources[layer], nearest_key(key));
            continue;
        }
        if (!has_value || key.len == 0 || !parse_value(&fields[f], value, d, sources)) {
            kiln_log(early, KILN_LOGITEM_OPTION_INVALID,
                     "kiln_create: option '%.*s' in %s: %s%s", (int)pair.len, pair.at,
                     layer_sources[layer],
                     !has_value || key.len == 0 ? "not a key=value pair" : "allowed: ",
                     !has_value || key.len == 0 ? "" : allowed_text[fields[f].kind]);
            return false;
        }
        sources->layer[f] = (uint8_t)layer;
    }
    return true;
}

static char *path_slot(const field_info *f, kiln_option_sources *sources) {
    size_t slot = 0;
    for (const field_info *g = fields; g < f; g++) slot += g->kind == KIND_PATH;
    return sources->paths[slot];
}

/* Copies the desc's own paths into sources (the program may free them after create). */
static bool copy_desc_paths(kiln_desc *d, kiln_option_sources *sources, const kiln_log_sink *early) {
    for (int i = 0; i < KILN_FIELD_COUNT; i++) {
        const char **at = (const char **)(void *)((char *)d + fields[i].offset);
        if (fields[i].kind != KIND_PATH || !*at) continue;
        if (!parse_value(&fields[i], (span){ *at, strlen(*at) }, d, sources)) {
            kiln_log(early, KILN_LOGITEM_OPTION_INVALID, "kiln_create: desc.%s (%zu bytes): "
                     "allowed: %s", fields[i].key, strlen(*at), allowed_text[KIND_PATH]);
            return false;
        }
    }
    return true;
}

void kiln_options_bind_paths(kiln_desc *d, kiln_option_sources *sources) {
    for (int i = 0; i < KILN_FIELD_COUNT; i++) {
        const char **at = (const char **)(void *)((char *)d + fields[i].offset);
        if (fields[i].kind == KIND_PATH && *at) *at = path_slot(&fields[i], sources);
    }
}

bool kiln_options_apply(kiln_desc *d, kiln_option_sources *sources, const kiln_log_sink *early) {
    for (int i = 0; i < KILN_FIELD_COUNT; i++)
        sources->layer[i] = field_set(&fields[i], d) ? KILN_LAYER_DESC : KILN_LAYER_DEFAULT;
    if (!copy_desc_paths(d, sources, early)) return false;
    const char *text = d->options;
    d->options = NULL;
    if (text && !apply_layer(text, KILN_LAYER_OPTIONS, d, sources, early)) return false;
    if (d->options_env == KILN_OPTIONS_ENV_IGNORE) return true;
    const char *env = getenv("KILN_OPTIONS");
    return !env || apply_layer(env, KILN_LAYER_ENV, d, sources, early);
}

/* ---------- the effective values ---------- */

static void print_size(FILE *out, uint64_t n) {
    static const char units[] = "KMGT";
    int unit = -1;
    while (unit < 3 && n >= 1024 && n % 1024 == 0) n /= 1024, unit++;
    fprintf(out, "%" PRIu64 "%s", n, unit >= 0 ? (char[]){ units[unit], 0 } : "");
}

static void print_value(FILE *out, const field_info *f, const kiln_desc *d) {
    const void *at = (const char *)d + f->offset;
    switch (f->kind) {
    case KIND_COUNT: case KIND_PERCENT: case KIND_SPIN_US:
        fprintf(out, "%" PRIu32, *(const uint32_t *)at);
        break;
    case KIND_COUNT64:
        fprintf(out, "%" PRIu64, *(const uint64_t *)at);
        break;
    case KIND_SIZE: case KIND_BLOCK_SIZE:
        print_size(out, *(const size_t *)at);
        break;
    case KIND_WORKERS: {
        uint32_t n = *(const uint32_t *)at;
        if (n == KILN_NO_WORKERS) fputs("none", out);
        else fprintf(out, "%" PRIu32, n);
        break;
    }
    case KIND_DEBUG: {
        uint32_t bits = *(const uint32_t *)at;
        if (bits == 0) fputs("none", out);
        for (size_t i = 0; bits && debug_names[i].bits != KILN_DEBUG_ALL; i++)
            if (bits & debug_names[i].bits) {
                bits &= ~debug_names[i].bits;
                fprintf(out, "%s%s", debug_names[i].name, bits ? "+" : "");
            }
        break;
    }
    case KIND_POLICY:
        fputs(*(const kiln_budget_policy *)at == KILN_BUDGET_REFUSE ? "refuse" : "warn", out);
        break;
    case KIND_BOOL:
        fputs(*(const bool *)at ? "on" : "off", out);
        break;
    case KIND_STATS: {
        const kiln_stats_schedule *s = at;
        if (!s->at_exit && !s->every_frames) fputs("off", out);
        if (s->at_exit) fprintf(out, "exit%s", s->every_frames ? "+" : "");
        if (s->every_frames) fprintf(out, "frame:%" PRIu32, s->every_frames);
        break;
    }
    case KIND_LEVEL: {
        kiln_log_threshold t = *(const kiln_log_threshold *)at;
        fputs(t >= KILN_LOG_THRESHOLD_DEBUG && t <= KILN_LOG_THRESHOLD_OFF ? level_names[t] : "info", out);
        break;
    }
    case KIND_MODE:
        fputs(*(const kiln_log_mode *)at == KILN_LOG_ASYNC ? "async" : "sync", out);
        break;
    case KIND_PATH: {
        const char *path = *(const char *const *)at;
        fputs(path ? path : "none", out);
        break;
    }
    case KIND_NONE:
        break;
    }
}

void kiln_options_print(FILE *out, const char *indent, const kiln_desc *d,
                        const kiln_option_sources *sources) {
    for (int i = 0; i < KILN_FIELD_COUNT; i++) {
        if (fields[i].kind == KIND_NONE) continue;
        fprintf(out, "%s%s = ", indent, fields[i].key);
        print_value(out, &fields[i], d);
        fprintf(out, " (%s)\n", kiln_option_layer_name((kiln_option_layer)sources->layer[i]));
    }
}
