/* A bad tree: alloc/ includes runtime/, a higher layer. */
#include "../base/common.h"
#include "../runtime/y.h"
