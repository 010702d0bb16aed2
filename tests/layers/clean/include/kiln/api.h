/* A clean tree: a public header includes public headers only. */
#ifndef FIXTURE_KILN_API_H
#define FIXTURE_KILN_API_H
#include <kiln/types.h>
fixture_value fixture_run(fixture_value v);
#endif
