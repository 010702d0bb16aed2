/* tests/recording_log.c — the recording logger, the stderr capture and the memory
 * helpers the unit tests share (see recording_log.h). */
#define _DEFAULT_SOURCE
#include "recording_log.h"

#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#  define TEST_ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define TEST_ASAN 1
#  endif
#endif
#ifdef TEST_ASAN
/* From <sanitizer/allocator_interface.h>, which gcc does not ship. */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

recording_log *recording_log_new(void) {
    recording_log *rec = calloc(1, sizeof *rec);
    if (!rec) abort();
    pthread_mutex_init(&rec->lock, NULL);
    return rec;
}

void recording_log_free(recording_log *rec) {
    if (!rec) return;
    pthread_mutex_destroy(&rec->lock);
    free(rec);
}

void recording_log_clear(recording_log *rec) {
    pthread_mutex_lock(&rec->lock);
    rec->count = 0;
    rec->dropped = 0;
    rec->unpaired = 0;
    pthread_mutex_unlock(&rec->lock);
}

/* The message this thread's recording_log_fn kept last, for the log_item call that
 * follows it (kiln makes both calls on one thread, one right after the other). */
static _Thread_local struct {
    recording_log *rec;
    size_t         index;   /* SIZE_MAX: dropped, beyond RECORDING_LOG_MAX */
} just_logged;

void recording_log_fn(void *user, kiln_log_level level, const char *message) {
    recording_log *rec = user;
    pthread_mutex_lock(&rec->lock);
    just_logged.rec = rec;
    just_logged.index = SIZE_MAX;
    if (rec->count < RECORDING_LOG_MAX) {
        just_logged.index = rec->count;
        recorded_message *m = &rec->messages[rec->count++];
        m->level = level;
        m->item = KILN_LOGITEM_NONE;
        snprintf(m->text, sizeof m->text, "%s", message ? message : "(null)");
    } else {
        rec->dropped++;
    }
    pthread_mutex_unlock(&rec->lock);
}

void recording_log_item_fn(void *user, kiln_log_level level, kiln_log_item item,
                           const char *message) {
    recording_log *rec = user;
    pthread_mutex_lock(&rec->lock);
    bool dropped = just_logged.rec == rec && just_logged.index == SIZE_MAX;
    recorded_message *m = just_logged.rec == rec && just_logged.index < rec->count
                              ? &rec->messages[just_logged.index] : NULL;
    if (m && m->item == KILN_LOGITEM_NONE && m->level == level && message &&
        strncmp(m->text, message, sizeof m->text - 1) == 0)
        m->item = item;
    else if (!dropped)
        rec->unpaired++;
    just_logged.rec = NULL;
    pthread_mutex_unlock(&rec->lock);
}

kiln_desc recording_desc(recording_log *rec) {
    kiln_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.log = recording_log_fn;
    desc.log_item = recording_log_item_fn;
    desc.log_user = rec;
    /* No workers: these tests count every block, context and arena the runtime holds,
     * and a worker's frame arena would be one more of each. */
    desc.worker_count = KILN_NO_WORKERS;
    /* Every message: these tests count one per call (folding has its own, in
     * test_logging.c, which turns this back off). */
    desc.log_every_repeat = true;
    return desc;
}

kiln_runtime *recording_runtime(recording_log *rec, uint32_t worker_count) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = worker_count;
    return kiln_create(&desc);
}

void recording_fixture_end(kiln_ctx **ctx, kiln_runtime **rt, recording_log **rec) {
    if (*ctx) kiln_detach(*ctx);
    if (*rt) kiln_destroy(*rt);
    recording_log_free(*rec);
    *ctx = NULL;
    *rt = NULL;
    *rec = NULL;
}

size_t recorded_count(recording_log *rec) {
    pthread_mutex_lock(&rec->lock);
    size_t n = rec->count + rec->dropped;
    pthread_mutex_unlock(&rec->lock);
    return n;
}

static size_t count_matching(recording_log *rec, kiln_log_item item, int level,
                             const char *fragment) {
    size_t n = 0;
    pthread_mutex_lock(&rec->lock);
    for (size_t i = 0; i < rec->count; i++) {
        const recorded_message *m = &rec->messages[i];
        if (m->item != item) continue;
        if (level >= 0 && (int)m->level != level) continue;
        if (fragment && !strstr(m->text, fragment)) continue;
        n++;
    }
    pthread_mutex_unlock(&rec->lock);
    return n;
}

size_t count_items(recording_log *rec, kiln_log_item item) {
    return count_matching(rec, item, -1, NULL);
}

size_t count_items_at(recording_log *rec, kiln_log_item item, kiln_log_level level) {
    return count_matching(rec, item, (int)level, NULL);
}

size_t count_items_with(recording_log *rec, kiln_log_item item, const char *fragment) {
    return count_matching(rec, item, -1, fragment);
}

const char *last_item_text(recording_log *rec, kiln_log_item item) {
    static char copy[RECORDING_LOG_TEXT];
    copy[0] = '\0';
    pthread_mutex_lock(&rec->lock);
    for (size_t i = rec->count; i-- > 0;) {
        if (rec->messages[i].item == item) {
            memcpy(copy, rec->messages[i].text, sizeof copy);
            break;
        }
    }
    pthread_mutex_unlock(&rec->lock);
    return copy;
}

const char *recorded_summary(recording_log *rec) {
    static char summary[8192];
    size_t used = 0;
    summary[0] = '\0';
    pthread_mutex_lock(&rec->lock);
    for (size_t i = 0; i < rec->count && used + 1 < sizeof summary; i++) {
        int n = snprintf(summary + used, sizeof summary - used, "\n  [%d] %s",
                         (int)rec->messages[i].level, rec->messages[i].text);
        if (n < 0) break;
        used += (size_t)n;
        if (used >= sizeof summary) used = sizeof summary - 1;
    }
    pthread_mutex_unlock(&rec->lock);
    return summary[0] ? summary : " (no messages)";
}

void stderr_capture_begin(stderr_capture *cap) {
    fflush(stderr);
    cap->file = tmpfile();
    if (!cap->file) abort();
    cap->saved_fd = dup(STDERR_FILENO);
    if (cap->saved_fd < 0 || dup2(fileno(cap->file), STDERR_FILENO) < 0) abort();
}

char *stderr_capture_end(stderr_capture *cap) {
    fflush(stderr);
    dup2(cap->saved_fd, STDERR_FILENO);
    close(cap->saved_fd);
    off_t size = lseek(fileno(cap->file), 0, SEEK_END);   /* write(2) went to the fd */
    if (size < 0) size = 0;
    char *text = calloc(1, (size_t)size + 1);
    if (!text) abort();
    if (size > 0) {
        ssize_t got = pread(fileno(cap->file), text, (size_t)size, 0);
        text[got > 0 ? got : 0] = '\0';
    }
    fclose(cap->file);
    cap->file = NULL;
    return text;
}

size_t count_substrings(const char *text, const char *needle) {
    size_t n = 0, len = strlen(needle);
    if (len == 0) return 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + len, needle)) n++;
    return n;
}

static size_t page_size(void) {
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? (size_t)page : 4096;
}

bool range_is_mapped(const void *p, size_t size) {
    size_t page = page_size();
    uintptr_t start = (uintptr_t)p & ~(uintptr_t)(page - 1);
    uintptr_t end = ((uintptr_t)p + size + page - 1) & ~(uintptr_t)(page - 1);
    unsigned char vec[1];
    /* Page by page: mincore fails with ENOMEM if any page of the range is unmapped. */
    for (uintptr_t a = start; a < end; a += page) {
        if (mincore((void *)a, page, vec) != 0 && errno == ENOMEM) return false;
    }
    return true;
}

size_t resident_pages(const void *p, size_t size) {
    size_t page = page_size();
    size_t pages = (size + page - 1) / page;
    unsigned char *vec = calloc(pages ? pages : 1, 1);
    if (!vec) abort();
    size_t resident = 0;
    if (mincore((void *)p, size, vec) == 0)
        for (size_t i = 0; i < pages; i++) resident += vec[i] & 1;
    free(vec);
    return resident;
}

bool heap_accounting_exact(void) {
#ifdef TEST_ASAN
    return true;
#else
    return false;
#endif
}

size_t heap_bytes_in_use(void) {
#ifdef TEST_ASAN
    return __sanitizer_get_current_allocated_bytes();
#else
    return mallinfo2().uordblks;
#endif
}

/* A byte sequence that differs from block to block and from seed to seed. */
static inline uint8_t pattern_byte(size_t i, uint32_t seed) {
    uint32_t x = (uint32_t)i * 2654435761u ^ seed * 40503u;
    return (uint8_t)(x >> 24 ^ x);
}

void fill_pattern(void *p, size_t size, uint32_t seed) {
    uint8_t *bytes = p;
    for (size_t i = 0; i < size; i++) bytes[i] = pattern_byte(i, seed);
}

bool check_pattern(const void *p, size_t size, uint32_t seed) {
    const uint8_t *bytes = p;
    for (size_t i = 0; i < size; i++)
        if (bytes[i] != pattern_byte(i, seed)) return false;
    return true;
}

char *call_arena_vprintf(kiln_arena *arena, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = kiln_arena_vprintf(arena, fmt, ap);
    va_end(ap);
    return s;
}

char *call_frame_vprintf(kiln_ctx *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = kiln_frame_vprintf(ctx, fmt, ap);
    va_end(ap);
    return s;
}

const char *read_text_file(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}
