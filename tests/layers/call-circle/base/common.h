/* A call circle hidden by a shared header: base/ is fine. */
