"""Prefect tasks: thin wrappers with all the side effects (I/O, tracking)."""
