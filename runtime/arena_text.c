/* runtime/arena_text.c — the typed and overflow-checked arena helpers (kiln/memory.h):
 * arrays whose byte count is checked, formatted and copied strings, and kiln_arena_grow.
 * Each checks its arguments as runtime/arenas.c checks an allocation's, then allocates
 * through the arena core (alloc/arena.h); growing in place is the core's. */
#include <stdalign.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "arenas.h"
#include "check.h"

static const kiln_debug_site no_site = { NULL, 0 };

/* ---- arrays ---- */

/* count * size overflowed: logged under function's name, naming ctx (the frame arena's
 * context; NULL for a user arena). A destroyed arena is refused as such first. */
static KILN_COLD void *refuse_overflow(kiln_arena *arena, const kiln_ctx *ctx, size_t count,
                                       size_t size, const char *function) {
    if (!kiln_arena_live(arena, function)) return NULL;
    char owner[32] = "";
    if (ctx) snprintf(owner, sizeof owner, "context %u, ", ctx->id);
    kiln_log_misuse(&arena->log, KILN_LOGITEM_ARENA_SIZE_OVERFLOW,
                    "%s: %sarena '%s': %zu elements of %zu bytes overflow size_t; refused",
                    function, owner, arena->name, count, size);
    return NULL;
}

/* The array of a checked arena (ctx: the frame arena's context, for the message). */
static void *array_in(kiln_arena *arena, const kiln_ctx *ctx, size_t count, size_t size,
                      size_t align, kiln_debug_site site, const char *function) {
    size_t bytes;
    if (kiln_unlikely(__builtin_mul_overflow(count, size, &bytes)))
        return refuse_overflow(arena, ctx, count, size, function);
    return kiln_arena_alloc_site(arena, bytes, align, site);
}

static void *arena_array(kiln_arena *arena, size_t count, size_t size, size_t align,
                         kiln_debug_site site, const char *function) {
    if (kiln_unlikely(!arena)) return kiln_refuse_null_arena(function);
    return array_in(arena, NULL, count, size, align, site, function);
}

static void *frame_array(kiln_ctx *ctx, size_t count, size_t size, size_t align,
                         kiln_debug_site site, const char *function) {
    kiln_arena *arena = kiln_frame_arena_for(ctx, function);
    if (kiln_unlikely(!arena)) return NULL;
    return array_in(arena, ctx, count, size, align, site, function);
}

void *kiln_arena_alloc_array(kiln_arena *arena, size_t count, size_t size, size_t align) {
    return arena_array(arena, count, size, align, no_site, "kiln_arena_alloc_array");
}

void *kiln_frame_alloc_array(kiln_ctx *ctx, size_t count, size_t size, size_t align) {
    return frame_array(ctx, count, size, align, no_site, "kiln_frame_alloc_array");
}

void *kiln_arena_alloc_array_at(kiln_arena *arena, size_t count, size_t size, size_t align,
                                const char *file, int line) {
    return arena_array(arena, count, size, align, (kiln_debug_site){ file, line },
                       "kiln_arena_alloc_array_at");
}

void *kiln_frame_alloc_array_at(kiln_ctx *ctx, size_t count, size_t size, size_t align,
                                const char *file, int line) {
    return frame_array(ctx, count, size, align, (kiln_debug_site){ file, line },
                       "kiln_frame_alloc_array_at");
}

/* ---- strings ---- */

static KILN_COLD char *refuse_null_string(const kiln_arena *arena, const char *function,
                                          const char *what) {
    kiln_log_misuse(&arena->log, KILN_LOGITEM_ARENA_STRING_NULL, "%s: arena '%s': %s is NULL",
                    function, arena->name, what);
    return NULL;
}

static KILN_COLD char *refuse_format(const kiln_arena *arena, const char *function,
                                     const char *fmt) {
    kiln_log_misuse(&arena->log, KILN_LOGITEM_ARENA_FORMAT_FAILED,
                    "%s: arena '%s': vsnprintf failed on the format \"%.64s\"; no string",
                    function, arena->name, fmt);
    return NULL;
}

/* The string fmt and ap make, in a live arena: measured on a copy of ap, allocated,
 * formatted. */
KILN_PRINTF(2, 0)
static char *format_in(kiln_arena *arena, const char *fmt, va_list ap, const char *function) {
    if (kiln_unlikely(!fmt)) return refuse_null_string(arena, function, "the format");
    va_list measure;
    va_copy(measure, ap);
    int length = vsnprintf(NULL, 0, fmt, measure);
    va_end(measure);
    if (kiln_unlikely(length < 0)) return refuse_format(arena, function, fmt);
    char *text = kiln_arena_alloc_site(arena, (size_t)length + 1, 1, no_site);
    if (!text) return NULL;   /* logged by the allocation */
    /* The same format on the same arguments: the same length, unless the locale changed
     * under it (another thread's setlocale), which is refused rather than truncated. */
    if (kiln_unlikely(vsnprintf(text, (size_t)length + 1, fmt, ap) != length))
        return refuse_format(arena, function, fmt);
    return text;
}

static char *copy_in(kiln_arena *arena, const char *s, const char *function) {
    if (kiln_unlikely(!s)) return refuse_null_string(arena, function, "the string");
    size_t size = strlen(s) + 1;
    char *copy = kiln_arena_alloc_site(arena, size, 1, no_site);
    if (copy) memcpy(copy, s, size);
    return copy;
}

/* The arena of a kiln_arena_* string call, or NULL when it is refused (logged). */
static kiln_arena *string_arena(kiln_arena *arena, const char *function) {
    if (kiln_unlikely(!arena)) return kiln_refuse_null_arena(function);
    return kiln_arena_live(arena, function) ? arena : NULL;
}

char *kiln_arena_vprintf(kiln_arena *arena, const char *fmt, va_list ap) {
    if (!string_arena(arena, "kiln_arena_vprintf")) return NULL;
    return format_in(arena, fmt, ap, "kiln_arena_vprintf");
}

char *kiln_arena_printf(kiln_arena *arena, const char *fmt, ...) {
    if (!string_arena(arena, "kiln_arena_printf")) return NULL;
    va_list ap;
    va_start(ap, fmt);
    char *text = format_in(arena, fmt, ap, "kiln_arena_printf");
    va_end(ap);
    return text;
}

char *kiln_frame_vprintf(kiln_ctx *ctx, const char *fmt, va_list ap) {
    kiln_arena *arena = kiln_frame_arena_for(ctx, "kiln_frame_vprintf");
    return arena ? format_in(arena, fmt, ap, "kiln_frame_vprintf") : NULL;
}

char *kiln_frame_printf(kiln_ctx *ctx, const char *fmt, ...) {
    kiln_arena *arena = kiln_frame_arena_for(ctx, "kiln_frame_printf");
    if (!arena) return NULL;
    va_list ap;
    va_start(ap, fmt);
    char *text = format_in(arena, fmt, ap, "kiln_frame_printf");
    va_end(ap);
    return text;
}

char *kiln_arena_strdup(kiln_arena *arena, const char *s) {
    if (!string_arena(arena, "kiln_arena_strdup")) return NULL;
    return copy_in(arena, s, "kiln_arena_strdup");
}

char *kiln_frame_strdup(kiln_ctx *ctx, const char *s) {
    kiln_arena *arena = kiln_frame_arena_for(ctx, "kiln_frame_strdup");
    return arena ? copy_in(arena, s, "kiln_frame_strdup") : NULL;
}

/* ---- growing ---- */

static KILN_COLD void *refuse_foreign(const kiln_arena *arena, const void *ptr, size_t old_size) {
    kiln_log_misuse(&arena->log, KILN_LOGITEM_ARENA_GROW_FOREIGN,
                    "kiln_arena_grow: arena '%s': %p (%zu bytes) is no allocation the arena has "
                    "in use; refused", arena->name, ptr, old_size);
    return NULL;
}

void *kiln_arena_grow(kiln_arena *arena, void *ptr, size_t old_size, size_t new_size,
                      size_t align) {
    if (kiln_unlikely(!arena)) return kiln_refuse_null_arena("kiln_arena_grow");
    if (!kiln_arena_live(arena, "kiln_arena_grow")) return NULL;
    /* A bad alignment, and ptr NULL: the allocation judges (and logs) them. */
    if (!ptr || (align != 0 && (!kiln_is_pow2(align) || align > arena->max_align)))
        return kiln_arena_alloc_site(arena, new_size, align, no_site);
    kiln_runtime *rt = kiln_arena_record_of(arena)->rt;
    if (kiln_unlikely(rt->desc.debug & KILN_DEBUG_CHECKS) &&
        !kiln_arena_holds(arena, ptr, old_size))
        return refuse_foreign(arena, ptr, old_size);
    if (kiln_arena_grow_in_place(arena, ptr, old_size, new_size, align)) return ptr;
    size_t effective = align ? align : alignof(max_align_t);
    if (new_size <= old_size && ((uintptr_t)ptr & (effective - 1)) == 0) return ptr;
    char *moved = kiln_arena_alloc_site(arena, new_size, align, kiln_arena_site_of(arena, ptr, old_size));
    if (moved) memcpy(moved, ptr, old_size < new_size ? old_size : new_size);
    return moved;
}
