/* tests/json_check.h — a strict little JSON parser for the tests of kiln's JSON output
 * (stats and traces): it rejects anything RFC 8259 does not allow (trailing commas,
 * bare words, bad escapes, leading zeros, text after the value, invalid UTF-8) and
 * builds a tree the tests can query. Integers that fit in 64 bits are kept exactly. */
#ifndef KILN_TESTS_JSON_CHECK_H
#define KILN_TESTS_JSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum json_type {
    JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT
} json_type;

typedef struct json_value {
    json_type          type;
    bool               boolean;
    double             number;
    bool               is_u64;     /* a non-negative integer that fits: u64 holds it exactly */
    uint64_t           u64;
    char              *string;     /* JSON_STRING: the decoded text (UTF-8) */
    struct json_value *items;      /* JSON_ARRAY: elements; JSON_OBJECT: member values */
    char             **keys;       /* JSON_OBJECT: member names, parallel to items */
    size_t             count;
} json_value;

/* The value text holds, or NULL with the reason and byte offset in error. */
json_value *json_parse(const char *text, char *error, size_t error_size);
void        json_free(json_value *v);

/* The member key of an object (the first of that name), or NULL. */
const json_value *json_get(const json_value *object, const char *key);

/* Whether v is a string equal to s. */
bool json_is_string(const json_value *v, const char *s);

#endif /* KILN_TESTS_JSON_CHECK_H */
