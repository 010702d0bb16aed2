/* A clean tree: alloc/ includes base/ and the public headers. */
#ifndef FIXTURE_ALLOC_X_H
#define FIXTURE_ALLOC_X_H
#include <kiln/types.h>
#include "../base/common.h"
fixture_value x_fn(fixture_value v);
#endif
