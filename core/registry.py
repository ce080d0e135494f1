"""A registry of named choices (models, metrics, generators), with lazy imports."""

from __future__ import annotations

import importlib

from .validation import InputError


class Registry:
    """Names -> objects. ``register(name, obj)`` or ``register(name, lazy="module:attribute")``;
    ``get`` fails with the list of choices."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict = {}

    def register(self, name: str, obj=None, *, lazy: str | None = None):
        """Register ``obj`` (or, with ``lazy``, an import path resolved on first ``get``).
        Without ``obj`` and ``lazy`` it returns a decorator."""
        if obj is None and lazy is None:
            return lambda target: self.register(name, target)
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = obj if obj is not None else _Lazy(lazy)
        return obj

    def get(self, name: str):
        if name not in self._entries:
            raise InputError(f"Unknown {self.kind} {name!r}. Available: {', '.join(self.names())}")
        entry = self._entries[name]
        if isinstance(entry, _Lazy):
            entry = self._entries[name] = entry.load()
        return entry

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name) -> bool:
        return name in self._entries

    def __iter__(self):
        return iter(self.names())


class _Lazy:
    def __init__(self, path: str):
        self.path = path

    def load(self):
        module, _, attribute = self.path.partition(":")
        return getattr(importlib.import_module(module), attribute)
