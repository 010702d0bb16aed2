/* runtime/memory_snapshot.h — each allocator's memory as the last frame end saw it, for
 * the crash report: the driver writes it at every frame end (runtime/history.c takes the
 * figures), and a signal handler reads it with no lock. Never installed.
 *
 * Two buffers, written in turn, each a seqlock (base/seqlock.h) over relaxed atomic
 * words; newest (release) names the one written last. A reader copies one item at a
 * time from the newest and rechecks its count after each: an item it hands on is whole,
 * and it stops at the first that was written over (the driver lapped it by two frame
 * ends). One try, no retry: async-signal-safe. */
#ifndef KILN_RUNTIME_MEMORY_SNAPSHOT_H
#define KILN_RUNTIME_MEMORY_SNAPSHOT_H

#include <stdbool.h>

#include "../base/atomics.h"
#include "../base/common.h"

#define KILN_SNAPSHOT_ITEMS      48   /* allocators and tags kept per frame end; more are
                                         counted */
#define KILN_SNAPSHOT_NAME_WORDS 6    /* 48 bytes: the names allocators keep */

typedef enum kiln_snapshot_kind {
    KILN_SNAPSHOT_FRAME_ARENAS = 1,   /* every context's frame memory, as one */
    KILN_SNAPSHOT_ARENA,
    KILN_SNAPSHOT_POOL,
    KILN_SNAPSHOT_HANDLES,
    KILN_SNAPSHOT_TAG                 /* a tag (kiln/heap.h): bytes live, children included */
} kiln_snapshot_kind;

/* One allocator, as a reader gets it. */
typedef struct kiln_snapshot_item {
    kiln_snapshot_kind kind;
    char               name[8 * KILN_SNAPSHOT_NAME_WORDS];
    uint64_t           bytes;    /* in use: an arena's bump bytes (frame arenas: the peaks
                                    of the frame just ended), a pool's live objects' slots,
                                    a table's live items */
    uint64_t           live;     /* objects (pools, tables); 0 for arenas */
    uint64_t           blocks;   /* blocks held from the block pool */
    uint64_t           budget;   /* a tag's budget; 0: none */
} kiln_snapshot_item;

typedef struct kiln_snapshot_words {
    _Atomic uint64_t kind, bytes, live, blocks, budget;
    _Atomic uint64_t name[KILN_SNAPSHOT_NAME_WORDS];
} kiln_snapshot_words;

typedef struct kiln_snapshot_buffer {
    _Atomic uint64_t    seq;
    _Atomic uint64_t    frame, count, omitted;
    kiln_snapshot_words items[KILN_SNAPSHOT_ITEMS];
} kiln_snapshot_buffer;

typedef struct kiln_memory_snapshot {
    _Atomic uint64_t     newest;    /* 0: none yet; else 1 + the buffer written last */
    kiln_snapshot_buffer buffers[2];
    uint64_t             filling;   /* the driver's: items in the buffer it writes */
    kiln_snapshot_buffer *writing;  /* the driver's: the buffer it writes, between begin/end */
    uint64_t             omitted;   /* the driver's: items past KILN_SNAPSHOT_ITEMS */
    uint64_t             started;   /* the driver's: the count write_begin found */
} kiln_memory_snapshot;

/* The driver at frame end: begin, one add per allocator, end. Driver only. */
KILN_INTERNAL void kiln_snapshot_begin(kiln_memory_snapshot *s);
KILN_INTERNAL void kiln_snapshot_add(kiln_memory_snapshot *s, const kiln_snapshot_item *item);
KILN_INTERNAL void kiln_snapshot_end(kiln_memory_snapshot *s, uint64_t frame);

/* Hands each item of the newest snapshot to fn, whole, in the order added; *frame is
 * the frame it was taken at the end of and *omitted the allocators it had no room for.
 * false when there is none yet or it was written over while read (the items handed on
 * before are whole). Async-signal-safe. Any thread. */
KILN_INTERNAL bool kiln_snapshot_each(kiln_memory_snapshot *s, uint64_t *frame, uint64_t *omitted,
                                      void (*fn)(void *user, const kiln_snapshot_item *item),
                                      void *user);

#endif /* KILN_RUNTIME_MEMORY_SNAPSHOT_H */
