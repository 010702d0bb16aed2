/* tests/headers_stats_fields_c.c — <kiln/stats_fields.h> compiles on its own as strict
 * C11, and a list written the way kiln's are makes a struct through KILN_STATS_MEMBER
 * and a table of its docs through an X of the program's own. */
#include <kiln/stats_fields.h>

#include <stdint.h>
#include <string.h>

#define SAMPLE_FIELDS(X)                                   \
    X(uint64_t, hits, "lookups that found their item")     \
    X(uint32_t, misses, "lookups that found nothing")      \
    /* end of list */

struct sample { SAMPLE_FIELDS(KILN_STATS_MEMBER) };

#define SAMPLE_DOC(type, name, doc) doc,
static const char *const sample_docs[] = { SAMPLE_FIELDS(SAMPLE_DOC) };

int headers_stats_fields_c(void);
int headers_stats_fields_c(void) {
    struct sample s = { 3, 4 };
    if (s.hits + s.misses != 7) return 1;
    return strcmp(sample_docs[1], "lookups that found nothing") != 0;
}
