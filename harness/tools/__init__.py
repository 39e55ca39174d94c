"""Commands that start matrix runs: bench and repeat."""
