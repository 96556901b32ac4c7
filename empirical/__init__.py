"""empirical package (see README)."""
