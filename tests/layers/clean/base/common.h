/* A clean tree: base/ includes nothing of the tree. */
#ifndef FIXTURE_BASE_COMMON_H
#define FIXTURE_BASE_COMMON_H
#define FIXTURE_UNUSED(x) ((void)(x))
#endif
