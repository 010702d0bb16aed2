/* runtime/json.h — the little JSON the stats and trace writers need: a string with its
 * escapes. Never installed. */
#ifndef KILN_RUNTIME_JSON_H
#define KILN_RUNTIME_JSON_H

#include <stdio.h>

#include "../base/common.h"

/* Writes s as a JSON string, quotes included: '"' and '\\' escaped, control bytes as
 * \u00XX, UTF-8 characters as they are, any other byte as \ufffd (the output is always
 * valid UTF-8). Any thread (its own FILE). */
KILN_INTERNAL void kiln_json_string(FILE *out, const char *s);

#endif /* KILN_RUNTIME_JSON_H */
