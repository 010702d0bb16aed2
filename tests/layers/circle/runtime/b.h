/* An include circle: b.h on its own includes nothing. */
int b_fn(int v);
