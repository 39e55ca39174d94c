"""Built-in cases: one small module each, each defining one `Case`."""
