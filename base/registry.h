/* base/registry.h — the bookkeeping every registry of objects in the runtime (pools,
 * handle tables) shares: a fixed table of the live objects by slot, and the list of the
 * records of destroyed objects, kept so that a call through a stale pointer is refused
 * rather than a use after free. Statement macros over any object type. Never installed.
 *
 * Concurrency: the table's search and the push onto the dead list run under the lock
 * that guards the registry (the runtime's registry_lock); the dead list is freed when
 * the registry ends, when no other thread may use it. */
#ifndef KILN_BASE_REGISTRY_H
#define KILN_BASE_REGISTRY_H

#include "sys_alloc.h"

/* Sets slot (an int) to the first empty entry of table[0 .. count), or to -1 when every
 * entry holds an object. */
#define KILN_REGISTRY_FREE_SLOT(slot, table, count)                    \
    do {                                                               \
        (slot) = -1;                                                   \
        for (int kiln_slot_ = 0; kiln_slot_ < (count); kiln_slot_++)   \
            if (!(table)[kiln_slot_]) {                                \
                (slot) = kiln_slot_;                                   \
                break;                                                 \
            }                                                          \
    } while (0)

/* Puts the record of a destroyed object at the head of the dead list head, linked
 * through the object's field link. */
#define KILN_DEAD_LIST_PUSH(head, object, link) \
    do {                                        \
        (object)->link = (head);                \
        (head) = (object);                      \
    } while (0)

/* Frees (kiln_sys_free) every record on the dead list head, whose objects are of type
 * type, and empties the list. */
#define KILN_DEAD_LIST_FREE(type, head, link)      \
    do {                                           \
        type *kiln_dead_ = (head);                 \
        while (kiln_dead_) {                       \
            type *kiln_next_ = kiln_dead_->link;   \
            kiln_sys_free(kiln_dead_);            \
            kiln_dead_ = kiln_next_;               \
        }                                          \
        (head) = NULL;                             \
    } while (0)

#endif /* KILN_BASE_REGISTRY_H */
