/* A clean tree: jobs/ includes base/, never alloc/. */
#ifndef FIXTURE_JOBS_Q_H
#define FIXTURE_JOBS_Q_H
#include "../base/common.h"
int q_fn(int v);
#endif
