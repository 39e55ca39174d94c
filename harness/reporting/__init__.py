"""The reports: SUPPORT.md, MATRIX.md, the picture, diffs, history and speed figures; imports no torch."""
