/* An include circle: ... and b includes a, with no marker in either. */
#include "b.h"
#include "a.h"
int b_fn(int v) { return a_fn(v); }
