"""The error of a tracking store that cannot be used, raised by every check of the store room."""

from __future__ import annotations


class TrackingError(RuntimeError):
    """The tracking store cannot be used (unsupported URI, unreachable server, unwritable, damaged
    or foreign database, another MLflow's schema)."""
