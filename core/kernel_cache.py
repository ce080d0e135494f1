"""numba's on-disk cache of this package's kernels, loaded without numba's compiler start-up.

Before numba loads a cached kernel it refreshes its whole target context, as if to compile: it
imports every implementation module (numpy's, and through its BLAS check all of ``scipy.linalg``)
and installs their typing and lowering registries. That is 0.3-0.5 s on the first kernel call of
every process (a tenth of ``topicbench elda`` on congress, and again in every Dask worker), and a
cached kernel needs none of it. Its machine code calls only numba's runtime (NRT, initialised
here); the C helpers and math functions that numba links when it creates the context; for
``parallel=True``, the threading layer, which the cached kernel's own start-up launches; and for
typed dicts, sets and strings, the hash secrets, installed by the modules that reading the cached
kernel imports (``tests/core/test_kernel_cache.py`` runs one kernel of each kind).

Only the loading is changed. A cache miss (a first run, an edited kernel, another numba) compiles
as numba always does, and its compiler refreshes the context first. Another package's cached
functions (umap's, pynndescent's) load as numba loads them. The override reads numba 0.68's
cache internals (numba is pinned in pyproject.toml); the tests fail on a numba that moves them.
"""

from __future__ import annotations

from numba.core.caching import FunctionCache
from numba.core.dispatcher import Dispatcher
from numba.core.runtime import rtsys


class KernelCache(FunctionCache):
    """A kernel's :class:`numba.core.caching.FunctionCache` whose loads skip the context refresh."""

    def load_overload(self, sig, target_context):
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)


def load_cached_kernels_directly(namespace: dict) -> None:
    """Give every cached numba kernel in ``namespace`` (a kernel module's ``globals()``) a
    :class:`KernelCache`."""
    for value in namespace.values():
        if isinstance(value, Dispatcher) and type(value._cache) is FunctionCache:
            value._cache.__class__ = KernelCache  # the same cache (no state added), another load
