/* tests/json_check.c — the strict JSON parser of json_check.h: recursive descent over
 * the RFC 8259 grammar, one function per production. */
#include "json_check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const char *text, *p;
    char       *error;
    size_t      error_size;
    bool        failed;
    int         depth;
} parser;

static bool fail(parser *ps, const char *what) {
    if (!ps->failed)
        snprintf(ps->error, ps->error_size, "%s at byte %zu", what, (size_t)(ps->p - ps->text));
    ps->failed = true;
    return false;
}

static void skip_space(parser *ps) {
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r') ps->p++;
}

static bool parse_value(parser *ps, json_value *v);

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Appends code point cp as UTF-8. */
static size_t put_utf8(char *out, uint32_t cp) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xc0 | cp >> 6); out[1] = (char)(0x80 | (cp & 0x3f)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12); out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | cp >> 18); out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3f)); out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

static bool parse_hex4(parser *ps, uint32_t *cp) {
    *cp = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(*ps->p);
        if (d < 0) return fail(ps, "bad \\u escape");
        *cp = *cp << 4 | (uint32_t)d;
        ps->p++;
    }
    return true;
}

/* At the opening quote; *out is malloc'd (the decoded text is never longer). */
static bool parse_string(parser *ps, char **out) {
    ps->p++;
    const char *start = ps->p;
    size_t cap = 1;   /* the source's length to the closing quote: decoding only shrinks */
    for (const char *q = start; *q && *q != '"'; q++, cap++)
        if (*q == '\\' && q[1]) q++, cap++;
    char *s = malloc(cap + 4), *w = s;
    if (!s) return fail(ps, "out of memory");
    for (;;) {
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') break;
        if (c == 0) { free(s); return fail(ps, "unterminated string"); }
        if (c < 0x20) { free(s); return fail(ps, "control character in string"); }
        if (c >= 0x80) {   /* JSON text is UTF-8: a whole sequence, or an error */
            int n = c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
            for (int i = 1; i < n; i++)
                if (((unsigned char)ps->p[i] & 0xc0) != 0x80) n = 0;
            if (n == 0) { free(s); return fail(ps, "invalid UTF-8"); }
            memcpy(w, ps->p, (size_t)n);
            w += n;
            ps->p += n;
            continue;
        }
        if (c != '\\') { *w++ = (char)c; ps->p++; continue; }
        ps->p++;
        char e = *ps->p++;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            *w++ = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
        } else if (e == 'u') {
            uint32_t cp;
            if (!parse_hex4(ps, &cp)) { free(s); return false; }
            if (cp >= 0xd800 && cp < 0xdc00) {   /* a surrogate pair */
                uint32_t low;
                if (ps->p[0] != '\\' || ps->p[1] != 'u') { free(s); return fail(ps, "lone surrogate"); }
                ps->p += 2;
                if (!parse_hex4(ps, &low)) { free(s); return false; }
                if (low < 0xdc00 || low > 0xdfff) { free(s); return fail(ps, "bad surrogate pair"); }
                cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
            } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                free(s);
                return fail(ps, "lone surrogate");
            }
            w += put_utf8(w, cp);
        } else {
            free(s);
            return fail(ps, "bad escape");
        }
    }
    ps->p++;
    *w = '\0';
    *out = s;
    return true;
}

static bool parse_number(parser *ps, json_value *v) {
    const char *start = ps->p;
    bool integer = true, negative = *ps->p == '-';
    if (negative) ps->p++;
    if (*ps->p == '0') ps->p++;
    else if (*ps->p >= '1' && *ps->p <= '9') while (*ps->p >= '0' && *ps->p <= '9') ps->p++;
    else return fail(ps, "bad number");
    if (*ps->p == '.') {
        integer = false;
        ps->p++;
        if (!(*ps->p >= '0' && *ps->p <= '9')) return fail(ps, "digit expected after '.'");
        while (*ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    if (*ps->p == 'e' || *ps->p == 'E') {
        integer = false;
        ps->p++;
        if (*ps->p == '+' || *ps->p == '-') ps->p++;
        if (!(*ps->p >= '0' && *ps->p <= '9')) return fail(ps, "digit expected in exponent");
        while (*ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    v->type = JSON_NUMBER;
    v->number = strtod(start, NULL);
    if (integer && !negative) {
        errno = 0;
        unsigned long long u = strtoull(start, NULL, 10);
        v->is_u64 = errno == 0;
        v->u64 = u;
    }
    return true;
}

/* Arrays and objects: elements separated by commas, no trailing comma. */
static bool parse_container(parser *ps, json_value *v, bool object) {
    char close = object ? '}' : ']';
    v->type = object ? JSON_OBJECT : JSON_ARRAY;
    if (++ps->depth > 64) return fail(ps, "nested too deep");
    ps->p++;
    skip_space(ps);
    size_t cap = 0;
    if (*ps->p == close) {
        ps->p++;
        ps->depth--;
        return true;
    }
    for (;;) {
        if (v->count == cap) {
            cap = cap ? 2 * cap : 8;
            json_value *items = realloc(v->items, cap * sizeof *items);
            if (items) v->items = items;
            char **keys = object ? realloc(v->keys, cap * sizeof *keys) : NULL;
            if (keys) v->keys = keys;
            if (!items || (object && !keys)) return fail(ps, "out of memory");
        }
        json_value *item = &v->items[v->count];
        memset(item, 0, sizeof *item);
        if (object) {
            skip_space(ps);
            if (*ps->p != '"') return fail(ps, "member name expected");
            if (!parse_string(ps, &v->keys[v->count])) return false;
            skip_space(ps);
            if (*ps->p++ != ':') { v->count++; return fail(ps, "':' expected"); }
        }
        v->count++;
        if (!parse_value(ps, item)) return false;
        skip_space(ps);
        if (*ps->p == ',') { ps->p++; continue; }
        if (*ps->p == close) { ps->p++; ps->depth--; return true; }
        return fail(ps, object ? "',' or '}' expected" : "',' or ']' expected");
    }
}

static bool parse_word(parser *ps, const char *word) {
    size_t n = strlen(word);
    if (strncmp(ps->p, word, n) != 0) return fail(ps, "unexpected text");
    ps->p += n;
    return true;
}

static bool parse_value(parser *ps, json_value *v) {
    skip_space(ps);
    switch (*ps->p) {
    case '{': return parse_container(ps, v, true);
    case '[': return parse_container(ps, v, false);
    case '"': v->type = JSON_STRING; return parse_string(ps, &v->string);
    case 't': v->type = JSON_BOOL; v->boolean = true; return parse_word(ps, "true");
    case 'f': v->type = JSON_BOOL; return parse_word(ps, "false");
    case 'n': v->type = JSON_NULL; return parse_word(ps, "null");
    default:  return parse_number(ps, v);
    }
}

static void free_contents(json_value *v) {
    for (size_t i = 0; i < v->count; i++) {
        free_contents(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
}

json_value *json_parse(const char *text, char *error, size_t error_size) {
    parser ps = { text, text, error, error_size, false, 0 };
    json_value *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    if (parse_value(&ps, v)) {
        skip_space(&ps);
        if (*ps.p == '\0') return v;
        fail(&ps, "text after the value");
    }
    json_free(v);
    return NULL;
}

void json_free(json_value *v) {
    if (!v) return;
    free_contents(v);
    free(v);
}

const json_value *json_get(const json_value *object, const char *key) {
    if (!object || object->type != JSON_OBJECT) return NULL;
    for (size_t i = 0; i < object->count; i++)
        if (strcmp(object->keys[i], key) == 0) return &object->items[i];
    return NULL;
}

bool json_is_string(const json_value *v, const char *s) {
    return v && v->type == JSON_STRING && strcmp(v->string, s) == 0;
}
