"""A registry of named choices (models, metrics, generators), with lazy imports and plugins.

Plugins are entry points of other installed distributions (``[project.entry-points."GROUP"]`` in
their ``pyproject.toml``): the entry point's name is the registry name, its value
``package.module:attribute``. Reading them takes the installed metadata only; a plugin is
imported when its name is asked for, so a broken plugin breaks only the runs that name it.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import logging

from .validation import InputError

logger = logging.getLogger(__name__)


class PluginError(InputError):
    """A plugin cannot serve its name: a clash, an import failure or the wrong kind of object.
    The message names the plugin's distribution and entry point."""


class Registry:
    """Names -> objects. ``register(name, obj)`` or ``register(name, lazy="module:attribute")``;
    ``get`` fails with the list of choices.

    Parameters
    ----------
    kind : str
        What the entries are ("model"), for messages.
    plugin_group : str, optional
        Entry-point group whose entries of installed distributions join the built-in ones
        (read on first use, or again by :meth:`discover_plugins`).
    check_plugin : callable, optional
        ``check_plugin(name, obj)`` raises TypeError or ValueError, with the reason, when a
        loaded plugin's object cannot serve as ``name``; the registry adds whose plugin it is.
    """

    def __init__(self, kind: str, *, plugin_group: str | None = None, check_plugin=None, suggest=None):
        self.kind = kind
        self.plugin_group = plugin_group
        self._check_plugin = check_plugin
        self._suggest = suggest  # name -> a hint for an unknown name, or None
        self._entries: dict = {}
        self._plugins: dict | None = None  # name -> [EntryPoint], read on first use
        self._loaded_plugins: dict = {}

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
        """The object registered as ``name``: a built-in one, or a plugin's (imported now)."""
        plugins = self.plugins()
        if name in plugins:
            return self._load_plugin(name, plugins[name])
        if name not in self._entries:
            raise InputError(f"Unknown {self.kind} {name!r}{self._hint(name)}. Available: {', '.join(self.names())}")
        entry = self._entries[name]
        if isinstance(entry, _Lazy):
            entry = self._entries[name] = entry.load()
        return entry

    def _hint(self, name) -> str:
        """What the user may have meant: the registry's own hint (a score's metric, say), else the
        closest name; "" when nothing is close."""
        hint = self._suggest(name) if self._suggest is not None else None
        if hint is None:
            close = difflib.get_close_matches(str(name), self.names(), n=1, cutoff=0.75)
            hint = f"did you mean {close[0]!r}?" if close else None
        return f" ({hint})" if hint else ""

    def names(self) -> list[str]:
        """Every name, built-in and plugin, sorted."""
        return sorted(set(self._entries) | set(self.plugins()))

    def builtin_names(self) -> list[str]:
        """The names registered in this package (not by plugins), sorted."""
        return sorted(self._entries)

    def plugins(self) -> dict:
        """Plugin name -> its entry points (more than one when distributions clash); nothing imported."""
        if self._plugins is None:
            self.discover_plugins()
        return {name: list(points) for name, points in self._plugins.items()}

    def plugin_source(self, name: str) -> dict | None:
        """Where the plugin ``name`` comes from: ``{"distribution", "version", "entry_point"}``
        (for the run records), or None for a built-in name or an unknown one."""
        points = self.plugins().get(name)
        if not points or name in self._entries:
            return None
        point = points[0]
        dist = getattr(point, "dist", None)
        return {"distribution": dist.name if dist is not None else "", "version": dist.version if dist is not None else "",
                "entry_point": f"{point.name} = {point.value}"}

    def discover_plugins(self) -> dict:
        """Read the plugin group's entry points of the installed distributions again (after an
        install, or a change of ``sys.path``) and forget the plugins loaded so far."""
        found: dict = {}
        if self.plugin_group:
            try:
                points = importlib.metadata.entry_points(group=self.plugin_group)
            except Exception as error:  # a malformed distribution must not stop the built-in entries
                logger.warning("cannot read the %r entry points of the installed distributions: %s: %s",
                               self.plugin_group, type(error).__name__, error)
                points = ()
            for point in points:
                found.setdefault(point.name, []).append(point)
        self._plugins, self._loaded_plugins = found, {}
        return self.plugins()

    def _load_plugin(self, name: str, points: list):
        if name in self._entries:
            raise PluginError(
                f"{self._describe(points[0])} takes the name of the built-in {self.kind} {name!r}; "
                "rename the entry point in that distribution's pyproject.toml, or uninstall it"
            )
        if len(points) > 1:
            raise PluginError(
                f"{len(points)} plugins claim the {self.kind} name {name!r}: "
                f"{'; '.join(sorted(self._describe(point) for point in points))}; rename or uninstall all but one"
            )
        if name not in self._loaded_plugins:
            point = points[0]
            try:
                obj = point.load()
            except Exception as error:
                raise PluginError(f"{self._describe(point)} could not be imported: {type(error).__name__}: {error}") from error
            if self._check_plugin is not None:
                try:
                    self._check_plugin(name, obj)
                except (TypeError, ValueError) as problem:
                    raise PluginError(f"{self._describe(point)}: {problem}") from None
            self._loaded_plugins[name] = obj
        return self._loaded_plugins[name]

    def _describe(self, point) -> str:
        dist = getattr(point, "dist", None)
        distribution = f"distribution {dist.name} {dist.version}" if dist is not None else "an unnamed distribution"
        return (f"{self.kind} plugin {point.name!r} (entry point '{point.name} = {point.value}' "
                f"in group {point.group!r} of {distribution})")

    def __contains__(self, name) -> bool:
        return name in self._entries or name in self.plugins()

    def __iter__(self):
        return iter(self.names())


class _Lazy:
    def __init__(self, path: str):
        self.path = path

    def load(self):
        module, _, attribute = self.path.partition(":")
        return getattr(importlib.import_module(module), attribute)
