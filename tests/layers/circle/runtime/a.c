/* An include circle: a includes b ... */
#include "a.h"
#include "b.h"
int a_fn(int v) { return v; }
