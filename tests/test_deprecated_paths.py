"""Import paths a plugin or a script may use keep working for one release after a move (issue
45): the old module warns and gives the same objects; the documented package paths give them
without a warning."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

#: Old path -> (new path, a public name both must give).
MOVED = {
    "topicbench.core.generators": ("topicbench.core.elda.generators", "keyword_candidates"),
    "topicbench.core.greedy": ("topicbench.core.elda.greedy", "fast_greedy"),
    "topicbench.core.parallel": ("topicbench.core.elda.parallel", "parallel_elda"),
    "topicbench.core.dask_shards": ("topicbench.core.elda.dask_shards", "dask_executor"),
    "topicbench.core.inference": ("topicbench.core.elda.inference", "infer_topics"),
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_warns_once_and_gives_the_same_objects(old):
    new, name = MOVED[old]
    code = (f"import warnings; warnings.simplefilter('always')\n"
            f"with warnings.catch_warnings(record=True) as caught:\n"
            f"    import {old} as old\n"
            f"import {new} as new\n"
            f"assert old.{name} is new.{name}\n"
            f"moved = [w for w in caught if issubclass(w.category, DeprecationWarning) and '{new}' in str(w.message)]\n"
            f"assert len(moved) == 1, [str(w.message) for w in caught]\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_every_moved_name_exists_where_it_went():
    for new, name in MOVED.values():
        assert hasattr(importlib.import_module(new), name), f"{new}.{name}"


def test_the_documented_package_paths_give_their_names_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from topicbench.core.elda import ELDA
        from topicbench.core.elda.model import ELDA as model_elda
        from topicbench.flows.config import BenchmarkConfig, default_config
        from topicbench.flows.config.model import BenchmarkConfig as model_config
    assert ELDA is model_elda and BenchmarkConfig is model_config and callable(default_config)
