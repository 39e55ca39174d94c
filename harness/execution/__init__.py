"""Running one cell: the styles built from a case, a builder per row, the checks, and what a runner process runs."""
