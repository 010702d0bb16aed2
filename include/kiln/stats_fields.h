/* kiln/stats_fields.h — how the statistics structs are written: each struct's numbers are
 * one X-macro list beside the struct, and the struct's members, the columns of
 * kiln_stats_print and the keys of kiln_stats_write_json are all made from that list.
 *
 * A list calls X(type, name, doc) once per field, in the struct's order:
 *   type  the member's C type: uint64_t, uint32_t, size_t or bool
 *   name  the member's name, which is also its column title and its JSON key
 *   doc   what the figure is, as a string literal
 * Every entry's line ends in a backslash and the list closes with an "end of list"
 * comment, so a new field is one line (appended: the members before it keep their
 * offsets), plus the line of its reader that fills it in.
 * The lists: KILN_STATS_FIELDS, KILN_STATS_TAIL_FIELDS, KILN_STATS_ERROR_FIELDS,
 * KILN_BLOCK_POOL_STATS_FIELDS, KILN_ARENA_STATS_FIELDS, KILN_POOL_STATS_FIELDS and
 * KILN_CTX_STATS_FIELDS in kiln/stats.h, KILN_HANDLES_STATS_FIELDS in kiln/handles.h,
 * KILN_TRACE_STATS_FIELDS in kiln/trace.h. A program may run a list with an X of its
 * own (to label a debug overlay, say). */
#ifndef KILN_STATS_FIELDS_H
#define KILN_STATS_FIELDS_H

/* The X that declares a list's fields as struct members. */
#define KILN_STATS_MEMBER(type, name, doc) type name;

#endif /* KILN_STATS_FIELDS_H */
