/* A bad tree: base/ includes a file that does not exist. */
#include "missing.h"
