/* An include circle: base/ is fine. */
