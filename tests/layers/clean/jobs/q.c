/* A clean tree: a jobs/ file. */
#include "q.h"
int q_fn(int v) { return 2 * v; }
