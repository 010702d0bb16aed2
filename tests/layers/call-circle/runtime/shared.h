/* A call circle hidden by a shared header: both files include only this one, so the
 * include graph has no circle; their objects call each other. */
#ifndef FIXTURE_SHARED_H
#define FIXTURE_SHARED_H
int a_fn(int v);
int b_fn(int v);
#endif
