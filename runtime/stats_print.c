/* runtime/stats_print.c — every figure at once: kiln_stats_print (tables for people)
 * and kiln_stats_write_json (one object for tools). Both walk one description of the
 * stats structs, a field table per struct made from the struct's X-macro list. */
#define _POSIX_C_SOURCE 200809L   /* open_memstream */
#include "stats_print.h"

#include "check.h"
#include "options.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../base/sys_alloc.h"
#include "json.h"

/* ---------- the stats structs, described ---------- */

enum { FIELD_NUMBER, FIELD_BOOL, FIELD_NAME };

typedef struct field {
    const char *key;      /* the struct field's name: the JSON key and the column title */
    size_t      offset;
    size_t      size;     /* numbers: 4 or 8 bytes */
    int         kind;
} field;

/* Arrays (the names) decay to char * in _Generic; every other field is a number. */
#define FIELD(T, f)                                                                      \
    { #f, offsetof(T, f), sizeof(((T *)0)->f),                                           \
      _Generic((((T *)0)->f), char *: FIELD_NAME, bool: FIELD_BOOL, default: FIELD_NUMBER) }

/* The tables are made from the X-macro lists the structs are made from (kiln/stats_fields.h),
 * so a field added to a list is in both outputs. Each row macro names the struct its list
 * describes. The members outside the lists are added by hand: the names, and kiln_stats's
 * blocks, which is a section of its own. */
#define RUNTIME_ROW(type, f, doc)    FIELD(kiln_stats, f),
#define BLOCK_POOL_ROW(type, f, doc) FIELD(kiln_block_pool_stats, f),
#define ARENA_ROW(type, f, doc)      FIELD(kiln_arena_stats, f),
#define POOL_ROW(type, f, doc)       FIELD(kiln_pool_stats, f),
#define HANDLES_ROW(type, f, doc)    FIELD(kiln_handles_stats, f),
#define CONTEXT_ROW(type, f, doc)    FIELD(kiln_ctx_stats, f),
#define TRACE_ROW(type, f, doc)      FIELD(kiln_trace_stats, f),
#define TAG_ROW(type, f, doc)        FIELD(kiln_tag_stats, f),
#define MEMORY_ROW(type, f, doc)     FIELD(kiln_memory_stats, f),
#define HEAP_ROW(type, f, doc)       FIELD(kiln_heap_stats, f),
#define HEAP_CLASS_ROW(type, f, doc) FIELD(kiln_heap_class_stats, f),

static const field runtime_fields[] = {   /* in the order kiln/stats.h gives: errors last */
    KILN_STATS_FIELDS(RUNTIME_ROW) KILN_STATS_TAIL_FIELDS(RUNTIME_ROW)
    KILN_STATS_ERROR_FIELDS(RUNTIME_ROW)
};
static const field block_pool_fields[] = { KILN_BLOCK_POOL_STATS_FIELDS(BLOCK_POOL_ROW) };
static const field arena_fields[] = {
    FIELD(kiln_arena_stats, name), KILN_ARENA_STATS_FIELDS(ARENA_ROW)
};
static const field pool_fields[] = {
    FIELD(kiln_pool_stats, name), KILN_POOL_STATS_FIELDS(POOL_ROW)
};
static const field handles_fields[] = {
    FIELD(kiln_handles_stats, name), KILN_HANDLES_STATS_FIELDS(HANDLES_ROW)
};
static const field context_fields[] = { KILN_CTX_STATS_FIELDS(CONTEXT_ROW) };
static const field trace_fields[] = { KILN_TRACE_STATS_FIELDS(TRACE_ROW) };
static const field tag_fields[] = { FIELD(kiln_tag_stats, name), KILN_TAG_STATS_FIELDS(TAG_ROW) };
static const field memory_fields[] = { KILN_MEMORY_STATS_FIELDS(MEMORY_ROW) };
static const field heap_fields[] = { KILN_HEAP_STATS_FIELDS(HEAP_ROW) };
static const field heap_class_fields[] = { KILN_HEAP_CLASS_STATS_FIELDS(HEAP_CLASS_ROW) };

#define FIELDS(list) list, sizeof list / sizeof list[0]
#define MAX_FIELDS 32   /* columns a table may have */
#define FITS(list) \
    _Static_assert(sizeof list / sizeof list[0] <= MAX_FIELDS, #list " has too many columns")
FITS(arena_fields);
FITS(pool_fields);
FITS(handles_fields);
FITS(context_fields);
FITS(tag_fields);
FITS(heap_class_fields);

/* One part of the output: a struct (list false) or an array of them. */
typedef struct section {
    const char  *key;
    const field *fields;
    size_t       field_count;
    size_t       item_size;
    bool         list;
    const void  *items;
    size_t       count;
} section;

/* ---------- reading the figures ---------- */

/* The list calls, with one signature so one loop can size and fill each. */
typedef size_t (*list_fn)(kiln_runtime *rt, void *out, size_t cap);
static size_t list_arenas(kiln_runtime *rt, void *out, size_t cap) { return kiln_stats_arenas(rt, out, cap); }
static size_t list_pools(kiln_runtime *rt, void *out, size_t cap) { return kiln_stats_pools(rt, out, cap); }
static size_t list_handles(kiln_runtime *rt, void *out, size_t cap) { return kiln_stats_handles(rt, out, cap); }
static size_t list_contexts(kiln_runtime *rt, void *out, size_t cap) { return kiln_stats_contexts(rt, out, cap); }
static size_t list_tags(kiln_runtime *rt, void *out, size_t cap) { return kiln_stats_tags(rt, out, cap); }

/* The heap's classes that hold or served anything (the rest would be rows of zeros). */
static size_t list_heap_classes(kiln_runtime *rt, void *out, size_t cap) {
    kiln_heap_class_stats all[KILN_HEAP_CLASSES];
    size_t n = kiln_stats_heap_classes(rt, all, KILN_HEAP_CLASSES), used = 0;
    for (size_t c = 0; c < n; c++) {
        if (all[c].allocs == 0 && all[c].blocks == 0) continue;
        if (used < cap) ((kiln_heap_class_stats *)out)[used] = all[c];
        used++;
    }
    return used;
}

/* The items of one list in a heap array; false when memory runs out. Another
 * thread may create items between the count and the copy: then it tries again. */
static bool fetch(kiln_runtime *rt, list_fn list, section *s) {
    size_t count = list(rt, NULL, 0);
    for (;;) {
        size_t cap = count + 4;
        void *items = kiln_sys_calloc(cap, s->item_size);
        if (!items) return false;
        count = list(rt, items, cap);
        if (count <= cap) {
            s->items = items;
            s->count = count;
            return true;
        }
        kiln_sys_free(items);
    }
}

enum { S_RUNTIME, S_BLOCK_POOL, S_MEMORY, S_ARENAS, S_POOLS, S_HEAP, S_HEAP_CLASSES, S_HANDLES,
       S_TAGS, S_CONTEXTS, S_TRACE, S_COUNT };

typedef struct snapshot {
    kiln_stats        stats;
    kiln_memory_stats memory;
    kiln_heap_stats   heap;
    kiln_trace_stats  trace;
    section          sections[S_COUNT];
} snapshot;

static void snapshot_free(snapshot *snap) {
    for (int i = 0; i < S_COUNT; i++)
        if (snap->sections[i].list) kiln_sys_free((void *)snap->sections[i].items);
}

/* Reads every figure; false (logged) for bad input or when memory runs out. */
static bool snapshot_take(kiln_runtime *rt, FILE *out, snapshot *snap, const char *function) {
    memset(snap, 0, sizeof *snap);
    if (!out) {
        kiln_log_misuse(kiln_runtime_log(rt), KILN_LOGITEM_STATS_NULL_OUT, "%s: out is NULL", function);
        return false;
    }
    if (!kiln_runtime_check(rt, function)) return false;
    kiln_stats_get(rt, &snap->stats);
    kiln_trace_stats_get(rt, &snap->trace);
    kiln_stats_memory(rt, &snap->memory);
    kiln_stats_heap(rt, &snap->heap);
    section *s = snap->sections;
    s[S_RUNTIME] = (section){ "runtime", FIELDS(runtime_fields), sizeof snap->stats, false,
                              &snap->stats, 1 };
    s[S_BLOCK_POOL] = (section){ "block_pool", FIELDS(block_pool_fields), sizeof snap->stats.blocks,
                                 false, &snap->stats.blocks, 1 };
    s[S_MEMORY] = (section){ "memory", FIELDS(memory_fields), sizeof snap->memory, false, &snap->memory, 1 };
    s[S_ARENAS] = (section){ "arenas", FIELDS(arena_fields), sizeof(kiln_arena_stats), true, 0, 0 };
    s[S_HEAP] = (section){ "heap", FIELDS(heap_fields), sizeof snap->heap, false, &snap->heap, 1 };
    s[S_HEAP_CLASSES] = (section){ "heap_classes", FIELDS(heap_class_fields),
                                   sizeof(kiln_heap_class_stats), true, 0, 0 };
    s[S_POOLS] = (section){ "pools", FIELDS(pool_fields), sizeof(kiln_pool_stats), true, 0, 0 };
    s[S_HANDLES] = (section){ "handles", FIELDS(handles_fields), sizeof(kiln_handles_stats), true, 0, 0 };
    s[S_TAGS] = (section){ "tags", FIELDS(tag_fields), sizeof(kiln_tag_stats), true, 0, 0 };
    s[S_CONTEXTS] = (section){ "contexts", FIELDS(context_fields), sizeof(kiln_ctx_stats), true, 0, 0 };
    s[S_TRACE] = (section){ "trace", FIELDS(trace_fields), sizeof snap->trace, false, &snap->trace, 1 };
    bool ok = fetch(rt, list_arenas, &s[S_ARENAS]) && fetch(rt, list_pools, &s[S_POOLS]) &&
              fetch(rt, list_handles, &s[S_HANDLES]) && fetch(rt, list_tags, &s[S_TAGS]) &&
              fetch(rt, list_heap_classes, &s[S_HEAP_CLASSES]) &&
              fetch(rt, list_contexts, &s[S_CONTEXTS]);
    if (!ok) {
        snapshot_free(snap);
        kiln_log(&rt->log, KILN_LOGITEM_STATS_OUT_OF_MEMORY, "%s: no memory to copy the "
                 "figures", function);
    }
    return ok;
}

/* ---------- one value ---------- */

static const void *item_at(const section *s, size_t i) {
    return (const char *)s->items + i * s->item_size;
}

static uint64_t number_of(const void *item, const field *f) {
    const char *p = (const char *)item + f->offset;
    if (f->kind == FIELD_BOOL) return *(const bool *)p;
    if (f->size == sizeof(uint32_t)) {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The value as text for the table (names are cut at their 47 bytes + NUL). */
static void format_value(char *buf, size_t size, const void *item, const field *f) {
    if (f->kind == FIELD_NAME) {
        snprintf(buf, size, "%.47s", (const char *)item + f->offset);
        for (char *c = buf; *c; c++)   /* a name's control bytes would break the table */
            if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    } else if (f->kind == FIELD_BOOL) snprintf(buf, size, "%s", number_of(item, f) ? "yes" : "no");
    else snprintf(buf, size, "%" PRIu64, number_of(item, f));
}

/* ---------- tables ---------- */

/* A struct: one "field  value" line per field. */
static void print_struct(FILE *out, const section *s) {
    fprintf(out, "\n== %s ==\n", s->key);
    size_t width = 0;
    for (size_t f = 0; f < s->field_count; f++)
        if (strlen(s->fields[f].key) > width) width = strlen(s->fields[f].key);
    for (size_t f = 0; f < s->field_count; f++) {
        char value[64];
        format_value(value, sizeof value, s->items, &s->fields[f]);
        fprintf(out, "  %-*s  %s\n", (int)width, s->fields[f].key, value);
    }
}

/* A list: a column per field, as wide as its title or its widest value; names to the
 * left, numbers to the right. */
static void print_list(FILE *out, const section *s) {
    fprintf(out, "\n== %s (%zu) ==\n", s->key, s->count);
    if (s->count == 0) return;
    size_t width[MAX_FIELDS] = { 0 };
    for (size_t f = 0; f < s->field_count; f++) {
        width[f] = strlen(s->fields[f].key);
        for (size_t i = 0; i < s->count; i++) {
            char value[64];
            format_value(value, sizeof value, item_at(s, i), &s->fields[f]);
            if (strlen(value) > width[f]) width[f] = strlen(value);
        }
    }
    for (size_t i = 0; i <= s->count; i++) {   /* the titles, then one row per item */
        fputs(" ", out);
        for (size_t f = 0; f < s->field_count; f++) {
            char value[64];
            if (i == 0) snprintf(value, sizeof value, "%s", s->fields[f].key);
            else format_value(value, sizeof value, item_at(s, i - 1), &s->fields[f]);
            int w = (int)width[f];
            if (s->fields[f].kind == FIELD_NAME) fprintf(out, " %-*s", w, value);
            else fprintf(out, " %*s", w, value);
        }
        fputs("\n", out);
    }
}

/* KILN_DEBUG_SITES: the sites with the most allocations, a row each, the site last (its
 * width varies); and the allocations of sites the counts had no room for. */
static void print_sites(kiln_runtime *rt, FILE *out) {
    kiln_site_stats sites[KILN_SITES_PRINTED];
    size_t n = kiln_sites_top(rt, sites, KILN_SITES_PRINTED);
    fprintf(out, "\n== sites (top %zu) ==\n", n);
    if (n == 0) return;
    fprintf(out, "  %12s %14s %12s  %s\n", "allocs", "bytes", "live", "site");
    for (size_t i = 0; i < n; i++) {
        if (sites[i].file)
            fprintf(out, "  %12" PRIu64 " %14" PRIu64 " %12" PRIu64 "  %s:%d\n", sites[i].allocs,
                    sites[i].bytes, sites[i].live, sites[i].file, sites[i].line);
        else
            fprintf(out, "  %12" PRIu64 " %14" PRIu64 " %12" PRIu64 "  (no site)\n",
                    sites[i].allocs, sites[i].bytes, sites[i].live);
    }
    uint64_t lost = kiln_load_relaxed(&rt->sites.lost);
    if (lost != 0)
        fprintf(out, "  %" PRIu64 " allocations at sites beyond the %u counted are not listed\n",
                lost, KILN_SITE_REGISTRY_CAP / 4 * 3);
}

void kiln_stats_print(kiln_runtime *rt, FILE *out) {
    snapshot snap;
    if (!snapshot_take(rt, out, &snap, "kiln_stats_print")) return;
    fprintf(out, "kiln stats, frame %" PRIu64 "\n", snap.stats.frame);
    kiln_desc effective = kiln_runtime_desc(rt);
    fputs("configuration (key = value (layer)):\n", out);
    kiln_options_print(out, "  ", &effective, &rt->option_sources);
    for (int i = 0; i < S_COUNT; i++) {
        if (snap.sections[i].list) print_list(out, &snap.sections[i]);
        else print_struct(out, &snap.sections[i]);
    }
    if (rt->desc.debug & KILN_DEBUG_SITES) print_sites(rt, out);
    snapshot_free(&snap);
}

/* A log message holds 511 bytes: a longer line goes in pieces. */
#define REPORT_PIECE 400
/* Async: the ring holds 256 messages; the report, longer, is delivered as it goes. */
#define REPORT_FLUSH 128

void kiln_stats_log(kiln_runtime *rt) {
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (!out) {
        kiln_log(&rt->log, KILN_LOGITEM_STATS_OUT_OF_MEMORY,
                 "desc.stats: no memory for the text of kiln_stats_print");
        return;
    }
    kiln_stats_print(rt, out);
    fclose(out);
    size_t lines = 0;
    for (char *line = text; line && *line;) {
        char *end = strchr(line, '\n');
        size_t length = end ? (size_t)(end - line) : strlen(line);
        for (size_t at = 0; at < length || at == 0; at += REPORT_PIECE) {
            int piece = (int)(length - at < REPORT_PIECE ? length - at : REPORT_PIECE);
            kiln_log(&rt->log, KILN_LOGITEM_STATS_REPORT, "%s%.*s", at ? "... " : "", piece,
                     line + at);
            if (length == 0) break;
        }
        line = end ? end + 1 : line + length;
        if (++lines % REPORT_FLUSH == 0) kiln_log_flush_state(&rt->log_state);   /* async: room */
    }
    free(text);   /* open_memstream's: the C heap */
}

/* ---------- JSON ---------- */

static void json_object(FILE *out, const section *s, const void *item) {
    fputc('{', out);
    for (size_t f = 0; f < s->field_count; f++) {
        const field *fd = &s->fields[f];
        fprintf(out, "%s\"%s\":", f ? "," : "", fd->key);
        if (fd->kind == FIELD_NAME) kiln_json_string(out, (const char *)item + fd->offset);
        else if (fd->kind == FIELD_BOOL) fputs(number_of(item, fd) ? "true" : "false", out);
        else fprintf(out, "%" PRIu64, number_of(item, fd));
    }
    fputc('}', out);
}

bool kiln_stats_write_json(kiln_runtime *rt, FILE *out) {
    snapshot snap;
    if (!snapshot_take(rt, out, &snap, "kiln_stats_write_json")) return false;
    fputc('{', out);
    for (int i = 0; i < S_COUNT; i++) {
        const section *s = &snap.sections[i];
        fprintf(out, "%s\n\"%s\":", i ? "," : "", s->key);
        if (!s->list) {
            json_object(out, s, s->items);
            continue;
        }
        fputc('[', out);
        for (size_t k = 0; k < s->count; k++) {
            fputs(k ? ",\n  " : "\n  ", out);
            json_object(out, s, item_at(s, k));
        }
        fputc(']', out);
    }
    fputs("\n}\n", out);
    snapshot_free(&snap);
    return fflush(out) == 0 && !ferror(out);
}
