/* A clean tree: the first half of a documented pair.
 * layering: one unit with runtime/part.c — the fixture's pair: each half calls the other */
#ifndef FIXTURE_RUNTIME_R_H
#define FIXTURE_RUNTIME_R_H
#include <kiln/api.h>
int r_fn(int v);
#endif
