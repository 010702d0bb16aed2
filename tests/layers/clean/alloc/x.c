/* A clean tree: x.c and x.h are one node. */
#include "x.h"
fixture_value x_fn(fixture_value v) { return v + 1; }
