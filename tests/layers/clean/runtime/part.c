/* A clean tree: calls and includes its pair back.
 * layering: one unit with runtime/r.c — the fixture's pair: each half calls the other */
#include "part.h"
#include "r.h"
int part_fn(int v) { return r_fn(v); }
