/* A bad tree: jobs/ includes alloc/ (they never include each other). */
#include "../alloc/x.h"
