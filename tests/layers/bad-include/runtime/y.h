/* A bad tree: a runtime/ header. */
int y_fn(void);
