/* c's header. */
