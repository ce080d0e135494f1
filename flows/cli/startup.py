"""Start-up of the ``topicbench`` command: modules that are imported but never used, deferred.

numba's first kernel call imports ``scipy.linalg`` (its check for a BLAS), and scipy's array-API
layer then reads every attribute of ``numpy``, which imports ``numpy.f2py``, the Fortran wrapper
generator (about 1,100 regular expressions compiled, 0.1 s). No command uses it. Here it is
registered as a lazy module (:class:`importlib.util.LazyLoader`): ``numpy.f2py`` exists as usual,
and the first use of any of its attributes runs the real import.
"""

from __future__ import annotations

import importlib.util
import sys

#: Imported by a library's start-up, never used by a command.
UNUSED_AT_STARTUP = ("numpy.f2py",)


def defer_imports(names=UNUSED_AT_STARTUP) -> list[str]:
    """Register each of ``names`` (a submodule, not yet imported) to load on first use; returns
    those deferred. A name already imported, or not installed, is left as it is."""
    deferred = []
    for name in names:
        if name in sys.modules:
            continue
        parent_name, _, child = name.rpartition(".")
        try:
            parent = importlib.import_module(parent_name) if parent_name else None
            spec = importlib.util.find_spec(name)
        except ImportError:
            continue
        if spec is None or spec.loader is None:
            continue
        spec.loader = importlib.util.LazyLoader(spec.loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        if parent is not None:
            # as an import sets it: else numpy's module __getattr__ would import the name again
            setattr(parent, child, module)
        deferred.append(name)
    return deferred
