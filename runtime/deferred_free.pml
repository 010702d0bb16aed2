/* runtime/deferred_free.pml: the frees that signal handlers make while their thread is
 * inside a malloc-shape call (runtime/malloc.c), as a SPIN model.
 *
 * One thread makes CALLS calls (enter, a heap operation, leave). SIGNALS handlers
 * interrupt it at any step, and each other too: a handler runs on top of whatever was
 * running, which cannot go on until it returns (the level word: only the context on top
 * of the stack takes steps). Each handler frees its own pointer with kiln_free: done at
 * once when depth is 0, else deferred (the array while the thread is not draining and
 * a slot is free, taken by compare-and-swap on its count; else the list, pushed by
 * compare-and-swap). The call that returns (depth back to 0) takes what was deferred,
 * at depth 1 and with draining set, and looks again once depth is 0.
 *
 * Checked: no heap operation runs inside another (a free done at once while the thread
 * is inside the heap would corrupt its magazines), each pointer is freed exactly once,
 * and at the end nothing is left deferred.
 *
 * Mutations (-D...), each must be caught by scripts/check-deferred-model.sh:
 *   MUTATION_F1  the drain takes the array without setting draining (a handler writes
 *                the slot the drain reads between its read and the count's decrement)
 *   MUTATION_F2  leave looks for deferred frees before depth goes to 0, not after (a
 *                handler between the look and the decrement leaves its free behind)
 *   MUTATION_F3  a handler takes an array slot by reading the count and writing it back
 *                plus one, not by compare-and-swap (a nested handler takes the same slot)
 *   MUTATION_F4  the drain runs at depth 0 (a handler frees at once while the drain is
 *                inside the heap)
 */

#define CALLS   2
#define SIGNALS 3
#define SLOTS   2

byte level;             /* the context on top: 0 the thread, 1.. its nested handlers */
byte signals;           /* handlers started */
byte running;           /* handlers not yet returned */
byte depth;             /* me.depth */
bool draining;          /* me.deferred.draining */
byte count;             /* me.deferred.count */
byte slot[SLOTS];       /* me.deferred.ptrs: pointer ids (1..SIGNALS) */
byte listed[SIGNALS + 1];   /* me.deferred.overflow as a bag: how often each id is on it */
byte listed_count;
byte freed[SIGNALS + 1];    /* frees done, by pointer id */
byte in_heap;           /* heap operations running: at most 1 */
bool thread_done;

/* Each step of the context at level lv: a statement (DO) or a choice's guard (WHEN),
 * taken only while that context is on top of the stack, in one indivisible step. */
#define DO(lv, stmt)    atomic { (level == lv) -> stmt }
#define WHEN(lv, cond)  atomic { (level == lv) && (cond) }

/* free_inside: a heap operation (the magazines), by the context at lv. */
inline heap_free(lv, id) {
    DO(lv, in_heap++; assert(in_heap == 1); freed[id]++; assert(freed[id] == 1));
    DO(lv, in_heap--)
}

/* drain_deferred, by the context at lv, entered at depth 0. */
inline drain(lv, took) {
    do
    :: WHEN(lv, count != 0 || listed_count != 0) ->
#ifndef MUTATION_F4
        DO(lv, depth = 1);
#endif
#ifndef MUTATION_F1
        DO(lv, draining = true);
#endif
        do
        :: WHEN(lv, count != 0) ->
            DO(lv, took = slot[count - 1]);
            DO(lv, count--);
            heap_free(lv, took)
        :: WHEN(lv, count == 0) -> break
        od;
        do      /* the list: taken whole (one entry at a time here: the same) and freed */
        :: WHEN(lv, listed_count != 0) ->
            DO(lv, took = 1;
                do
                :: listed[took] == 0 -> took++
                :: listed[took] != 0 -> listed[took]--; listed_count--; break
                od);
            heap_free(lv, took)
        :: WHEN(lv, listed_count == 0) -> break
        od;
        DO(lv, draining = false);
        DO(lv, depth = 0)
    :: WHEN(lv, count == 0 && listed_count == 0) -> break
    od
}

/* leave, by the context at lv: depth 0 first, then the look (MUTATION_F2: the look
 * first, then depth 0). */
inline leave(lv, took) {
#ifdef MUTATION_F2
    drain(lv, took);
    DO(lv, depth = 0)
#else
    DO(lv, depth = 0);
    drain(lv, took)
#endif
}

proctype thread() {
    byte calls = 0, took;
    do
    :: WHEN(0, calls < CALLS) ->
        DO(0, depth = 1);          /* enter */
        DO(0, in_heap++; assert(in_heap == 1));   /* its own heap operation */
        DO(0, in_heap--);
        leave(0, took);
        DO(0, calls++)
    :: WHEN(0, calls == CALLS) -> break
    od;
    DO(0, thread_done = true)
}

/* kiln_free of pointer id by a handler at level lv. */
proctype handler(byte lv; byte id) {
    byte c, took;
    if
    :: WHEN(lv, depth != 0) ->
        if
        :: WHEN(lv, !draining) ->
#ifdef MUTATION_F3
            DO(lv, c = count);
            if
            :: WHEN(lv, c < SLOTS) -> DO(lv, slot[c] = id); DO(lv, count = c + 1)
            :: WHEN(lv, c >= SLOTS) -> DO(lv, listed[id]++; listed_count++)
            fi
#else
            do
            :: DO(lv, c = count);
               if
               :: WHEN(lv, c >= SLOTS) -> DO(lv, listed[id]++; listed_count++); break
               :: WHEN(lv, c < SLOTS) ->
                   DO(lv, if                    /* compare-and-swap */
                          :: count == c -> count = c + 1
                          :: count != c -> c = SLOTS + 1
                          fi);
                   if
                   :: WHEN(lv, c < SLOTS) -> DO(lv, slot[c] = id); break
                   :: WHEN(lv, c > SLOTS)               /* lost: again */
                   fi
               fi
            od
#endif
        :: WHEN(lv, draining) -> DO(lv, listed[id]++; listed_count++)
        fi
    :: WHEN(lv, depth == 0) ->       /* free_now */
        DO(lv, depth = 1);
        heap_free(lv, id);
        leave(lv, took)
    fi;
    DO(lv, level = lv - 1; running--)   /* returns to what it interrupted */
}

/* Signals: one may come at any step of whatever runs, a handler's included. */
proctype signaller() {
    do
    :: atomic { signals < SIGNALS && !thread_done -> level++; signals++; running++; run handler(level, signals) }
    :: atomic { signals == SIGNALS || thread_done -> break }
    od
}

/* The end: the thread done, every handler returned; nothing is left deferred and each
 * handler's pointer was freed once. */
proctype monitor() {
    byte i = 1;
    atomic { thread_done && running == 0 };
    assert(count == 0 && listed_count == 0);
    do
    :: i <= signals -> assert(freed[i] == 1); i++
    :: i > signals -> break
    od
}

init {
    atomic { run thread(); run signaller(); run monitor() }
}
