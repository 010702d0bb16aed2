/* A clean tree: runtime/ includes alloc/, jobs/ and its own files. */
#include "r.h"
#include "part.h"
#include "../alloc/x.h"
#include "../jobs/q.h"
int r_fn(int v) { return v > 0 ? part_fn(v - 1) : q_fn(v); }
fixture_value fixture_run(fixture_value v) { return x_fn(r_fn(v)); }
