/* Calls b. */
#include "shared.h"
int a_fn(int v) { return v > 0 ? b_fn(v - 1) : 0; }
