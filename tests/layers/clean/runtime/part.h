/* A clean tree: the second half of the documented pair. */
#ifndef FIXTURE_RUNTIME_PART_H
#define FIXTURE_RUNTIME_PART_H
int part_fn(int v);
#endif
