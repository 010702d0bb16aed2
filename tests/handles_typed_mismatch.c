/* tests/handles_typed_mismatch.c — compiled at configure time, never linked: typed
 * handles of two tables are distinct types, so passing a bullet handle to enemy_get must
 * not compile. With -DKILN_TYPED_OK the right handle is passed and the file compiles
 * (so a failure means the type check, not a broken file). */
#include <kiln/handles.h>

struct enemy { float pos[3]; int health; };
struct bullet { float velocity[2]; };
KILN_HANDLE_TYPE(enemy, struct enemy)
KILN_HANDLE_TYPE(bullet, struct bullet)

int health_of(enemy_table enemies, enemy_handle target, bullet_handle shot);

int health_of(enemy_table enemies, enemy_handle target, bullet_handle shot) {
#ifdef KILN_TYPED_OK
    (void)shot;
    struct enemy *e = enemy_get(enemies, target);
#else
    (void)target;
    struct enemy *e = enemy_get(enemies, shot);
#endif
    return e ? e->health : -1;
}
