/* tests/recording_log.h — what the unit tests share: a logger that records every
 * message (level, item id and text) so a test can assert the exact log item and the
 * object's name, a capture of stderr for the messages that cannot reach a runtime's
 * logger (misuse with a NULL object goes to the default sink), and a few memory helpers.
 *
 * The recorder is two callbacks: desc.log (recording_log_fn) keeps the level and the
 * text, desc.log_item (recording_log_item_fn), which kiln calls right after it on the
 * same thread with the same text, adds the item's id. count_items and the others match
 * the id, never the text. */
#ifndef KILN_TESTS_RECORDING_LOG_H
#define KILN_TESTS_RECORDING_LOG_H

#include <kiln/kiln.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RECORDING_LOG_MAX  1024   /* messages kept; later ones are only counted */
#define RECORDING_LOG_TEXT 600    /* kiln formats at most 511 bytes */

typedef struct recorded_message {
    kiln_log_level level;
    kiln_log_item  item;   /* KILN_LOGITEM_NONE until recording_log_item_fn names it */
    char           text[RECORDING_LOG_TEXT];
} recorded_message;

/* Written by any thread through recording_log_fn and recording_log_item_fn (under lock). */
typedef struct recording_log {
    pthread_mutex_t  lock;
    size_t           count;     /* messages kept in messages[] */
    size_t           dropped;   /* messages beyond RECORDING_LOG_MAX */
    size_t           unpaired;  /* log_item calls that matched no message just logged */
    recorded_message messages[RECORDING_LOG_MAX];
} recording_log;

recording_log *recording_log_new(void);
void           recording_log_free(recording_log *rec);
void           recording_log_clear(recording_log *rec);

/* The kiln_log_fn; user is the recording_log. Thread-safe. */
void recording_log_fn(void *user, kiln_log_level level, const char *message);

/* The kiln_log_item_fn: gives the message this thread's recording_log_fn has just kept
 * its item (when level and text agree; otherwise counts it in unpaired). Thread-safe. */
void recording_log_item_fn(void *user, kiln_log_level level, kiln_log_item item,
                           const char *message);

/* A desc whose log and log_item go to rec, with no workers and every repeat delivered
 * (log_every_repeat); every other field zero (the defaults). */
kiln_desc recording_desc(recording_log *rec);

/* A runtime of recording_desc(rec) with worker_count workers (KILN_NO_WORKERS: none),
 * or NULL when kiln_create refuses (the reason is in rec). */
kiln_runtime  *recording_runtime(recording_log *rec, uint32_t worker_count);

/* The usual end of a test's fixture: detaches *ctx and destroys *rt (each when not
 * NULL), frees *rec, and sets all three to NULL for the next test. */
void recording_fixture_end(kiln_ctx **ctx, kiln_runtime **rt, recording_log **rec);

/* Messages kept so far (all items). */
size_t recorded_count(recording_log *rec);

/* Messages of this item. */
size_t count_items(recording_log *rec, kiln_log_item item);

/* Messages of this item at this level. */
size_t count_items_at(recording_log *rec, kiln_log_item item, kiln_log_level level);

/* Messages of this item whose text contains fragment. */
size_t count_items_with(recording_log *rec, kiln_log_item item, const char *fragment);

/* The text of the last message with this item (a copy in a per-call static buffer:
 * use it before the next call), or "" when there is none. */
const char *last_item_text(recording_log *rec, kiln_log_item item);

/* Every kept message, one per line, for assertion messages (static buffer). */
const char *recorded_summary(recording_log *rec);

/* Captures what is written to file descriptor 2 (kiln's default sink writes there
 * with write(2)) between begin and end. end returns the text (malloc'd; free it). */
typedef struct stderr_capture {
    int   saved_fd;
    FILE *file;
} stderr_capture;

void  stderr_capture_begin(stderr_capture *cap);
char *stderr_capture_end(stderr_capture *cap);

/* The whole text of the file at path, at most 1 MiB (a static buffer, NUL-ended: use it
 * before the next call), or NULL when it cannot be opened. */
const char *read_text_file(const char *path);

/* Occurrences of needle in text. */
size_t count_substrings(const char *text, const char *needle);

/* Whether [p, p + size) is mapped in this process (mincore says ENOMEM when not). */
bool range_is_mapped(const void *p, size_t size);

/* Resident pages in [p, p + size) (page-aligned p), per mincore. */
size_t resident_pages(const void *p, size_t size);

/* Bytes the heap (malloc) has handed out and not taken back. In an ASan build this is
 * ASan's own exact count: equal before and after a piece of work means the work freed
 * everything it malloc'd (the recorder itself never mallocs). Otherwise it is glibc's
 * mallinfo2, which counts chunks parked in the thread cache as in use, so it is not
 * exact and heap_accounting_exact() says false: the leak assertions then hold only in
 * the ASan build (LeakSanitizer's own exit report does not fail a Criterion test). */
bool   heap_accounting_exact(void);
size_t heap_bytes_in_use(void);

/* Fills [p, p + size) with a pattern derived from seed; checks it back. */
void fill_pattern(void *p, size_t size, uint32_t seed);
bool check_pattern(const void *p, size_t size, uint32_t seed);

/* kiln_arena_vprintf and kiln_frame_vprintf called through a variadic caller, as a
 * user's logging wrapper calls them. */
char *call_arena_vprintf(kiln_arena *arena, const char *fmt, ...) KILN_FORMAT_CHECK(2, 3);
char *call_frame_vprintf(kiln_ctx *ctx, const char *fmt, ...) KILN_FORMAT_CHECK(2, 3);

#endif /* KILN_TESTS_RECORDING_LOG_H */
