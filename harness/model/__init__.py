"""The chart's vocabulary: cells, rows, columns, outcomes, errors, settings and the results file; imports no torch."""
