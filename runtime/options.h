/* runtime/options.h — options strings over kiln_desc: the layers (the desc, desc.options,
 * the environment's KILN_OPTIONS), each field's layer, and the effective configuration
 * written out. The fields, keys and kinds are KILN_DESC_FIELDS (kiln/core.h). Never
 * installed. */
#ifndef KILN_RUNTIME_OPTIONS_H
#define KILN_RUNTIME_OPTIONS_H

#include <kiln/core.h>
#include <stdio.h>

#include "../base/log.h"

/* The layer a field's value came from, lowest first. */
typedef enum kiln_option_layer {
    KILN_LAYER_DEFAULT, KILN_LAYER_DESC, KILN_LAYER_OPTIONS, KILN_LAYER_ENV
} kiln_option_layer;

/* One constant per kiln_desc field, in the list's order. */
#define KILN_DESC_FIELD_ID_(type, field, key, kind, default_text, meaning) KILN_FIELD_##field,
typedef enum kiln_desc_field {
    KILN_DESC_FIELDS(KILN_DESC_FIELD_ID_)
    KILN_FIELD_COUNT
} kiln_desc_field;
#undef KILN_DESC_FIELD_ID_

/* Path fields (kind PATH) the sources can hold. */
#define KILN_OPTION_PATHS 2   /* log_file, crash_file */

/* Each field's layer, and a copy of every path. Written by kiln_create, then read-only. */
typedef struct kiln_option_sources {
    uint8_t layer[KILN_FIELD_COUNT];   /* kiln_option_layer */
    char    paths[KILN_OPTION_PATHS][KILN_OPTION_PATH_MAX];   /* by order in the list */
} kiln_option_sources;

/* Lays desc.options, then KILN_OPTIONS (unless desc.options_env ignores it), over *d,
 * and records every field's layer in *sources; d->options is NULL after, and every path
 * field that is set points at its copy in sources->paths. false, with
 * OPTION_INVALID logged through early, for a value that is not of its key's kind or a
 * pair without "=" (*d is then half applied: throw it away); an unknown key is warned
 * (OPTION_UNKNOWN) and skipped. Makes nothing: no memory, no file.
 * Concurrency: any thread (getenv: not beside a thread that changes the environment). */
KILN_INTERNAL bool kiln_options_apply(kiln_desc *d, kiln_option_sources *sources,
                                      const kiln_log_sink *early);

/* Points d's path fields that are set at their copies in sources (after sources moved:
 * kiln_create copies its local into the runtime). */
KILN_INTERNAL void kiln_options_bind_paths(kiln_desc *d, kiln_option_sources *sources);

/* The layer's name as kiln_option_source and kiln_stats_print write it: "default",
 * "desc", "options" or "env". */
KILN_INTERNAL const char *kiln_option_layer_name(kiln_option_layer layer);

/* The field of a key; KILN_FIELD_COUNT for a string that is no key. */
KILN_INTERNAL kiln_desc_field kiln_option_find(const char *key);

/* Writes "key = value (layer)" for every key, one per line, each line opened by indent:
 * the effective values of d (a desc as kiln_runtime_desc gives it). */
KILN_INTERNAL void kiln_options_print(FILE *out, const char *indent, const kiln_desc *d,
                                      const kiln_option_sources *sources);

#endif /* KILN_RUNTIME_OPTIONS_H */
