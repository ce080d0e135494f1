"""Cached kernels load without numba's compiler start-up (core/kernel_cache.py), and run right.

Each check runs in fresh processes over a fresh numba cache: the first process compiles and
stores the kernels (a cache miss, numba's usual path), the second loads them through
:class:`KernelCache`. What the second loads must give the first's results, come from the cache,
and leave numba's implementation registries unloaded (their import is the start-up saved).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from topicbench.core.kernel_cache import KernelCache
from topicbench.core.precompile import KERNEL_MODULES

# Kernels that link to each kind of symbol a cached kernel can need: numba's runtime (arrays),
# the threading layer (prange), and the hash secrets (a typed dict keyed by strings).
KERNELS = textwrap.dedent('''
    import numba
    import numpy as np

    from topicbench.core.kernel_cache import load_cached_kernels_directly


    @numba.njit(cache=True)
    def cumulative(values):
        return np.cumsum(values)


    @numba.njit(cache=True, parallel=True)
    def parallel_squares(n):
        out = np.empty(n)
        for i in numba.prange(n):
            out[i] = i * i
        return out.sum()


    @numba.njit(cache=True)
    def distinct_words(n):
        seen = {}
        for i in range(n):
            word = "w" + str(i % 3)
            seen[word] = seen[word] + 1 if word in seen else 1
        return len(seen), seen["w1"]


    load_cached_kernels_directly(globals())
''')

RUN = textwrap.dedent('''
    import json
    import numpy as np
    from numba.core.base import BaseContext

    refreshes = []  # numba's start-up: refreshing the target context's registries
    refresh = BaseContext.refresh
    BaseContext.refresh = lambda self: (refreshes.append(1), refresh(self))[1]
    import cached_kernels as k

    results = {
        "cumulative": k.cumulative(np.arange(5)).tolist(),
        "parallel_squares": k.parallel_squares(1000),
        "distinct_words": list(k.distinct_words(10)),
    }
    hits = {name: sum(getattr(k, name).stats.cache_hits.values()) for name in results}
    print(json.dumps({"results": results, "hits": hits, "refreshes": len(refreshes)}))
''')


def _run(folder, cache) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join([str(folder), *sys.path])}
    done = subprocess.run([sys.executable, "-c", RUN], cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_kernels_compiled_then_loaded_from_the_cache_give_the_same_results(tmp_path):
    (tmp_path / "cached_kernels.py").write_text(KERNELS, encoding="utf-8")
    compiled = _run(tmp_path, tmp_path / "numba-cache")
    loaded = _run(tmp_path, tmp_path / "numba-cache")
    assert compiled["hits"] == {"cumulative": 0, "parallel_squares": 0, "distinct_words": 0}
    assert loaded["hits"] == {"cumulative": 1, "parallel_squares": 1, "distinct_words": 1}
    assert loaded["results"] == compiled["results"] == {
        "cumulative": [0, 1, 3, 6, 10], "parallel_squares": float(sum(i * i for i in range(1000))),
        "distinct_words": [3, 3],
    }
    # numba's own loading would have refreshed the context (imported every implementation module)
    assert compiled["refreshes"] > 0 and loaded["refreshes"] == 0


@pytest.mark.parametrize("module", KERNEL_MODULES, ids=[m.__name__.removeprefix("topicbench.core.") for m in KERNEL_MODULES])
def test_every_cached_kernel_of_the_package_loads_directly(module):
    dispatchers = [value for value in vars(module).values() if hasattr(value, "py_func") and hasattr(value, "_cache")]
    assert dispatchers
    assert all(isinstance(kernel._cache, KernelCache) for kernel in dispatchers)
