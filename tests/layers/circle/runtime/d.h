/* d's header. */
