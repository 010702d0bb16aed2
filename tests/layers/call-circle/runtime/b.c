/* Calls a. */
#include "shared.h"
int b_fn(int v) { return a_fn(v); }
