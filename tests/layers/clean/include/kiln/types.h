/* A clean tree: a public header. */
#ifndef FIXTURE_KILN_TYPES_H
#define FIXTURE_KILN_TYPES_H
typedef int fixture_value;
#endif
