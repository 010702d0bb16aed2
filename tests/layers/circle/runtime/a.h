/* An include circle: a.h on its own includes nothing. */
int a_fn(int v);
