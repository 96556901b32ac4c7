"""sim package (see README)."""
