// tests/handles_typed_mismatch.cpp — compiled at configure time, never linked: a
// kiln::handle<bullet> is no kiln::handle<enemy>, so looking one up in a
// kiln::handle_table<enemy> must not compile. With -DKILN_TYPED_OK the right handle is
// passed and the file compiles (so a failure means the type check, not a broken file).
#include <kiln/kiln.hpp>

struct enemy { float pos[3]; int health; };
struct bullet { float velocity[2]; };

int health_of(kiln::handle_table<enemy> &enemies, kiln::handle<enemy> target,
              kiln::handle<bullet> shot);

int health_of(kiln::handle_table<enemy> &enemies, kiln::handle<enemy> target,
              kiln::handle<bullet> shot) {
#ifdef KILN_TYPED_OK
    (void)shot;
    enemy *e = enemies.get(target);
#else
    (void)target;
    enemy *e = enemies.get(shot);
#endif
    return e ? e->health : -1;
}
