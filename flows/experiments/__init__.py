"""Named experiments shipped as YAML configs (as lm-evaluation-harness ships its tasks): each file
here is a benchmark config, named by its file's stem. ``topicbench paper`` reads the paper's two,
``paper-set1`` and ``paper-set2`` (:data:`PAPER_EXPERIMENTS`), and applies its options on top
(flows/paper.py).

The files are package data, read through :mod:`importlib.resources`, so they are found the same
way in a source checkout and in an installed package.
"""

from __future__ import annotations

from importlib.resources import as_file, files

from topicbench.core.validation import InputError
from topicbench.flows.config.file import read_yaml_config

#: The E-LDA paper's experiments, Set 1 and Set 2, which ``topicbench paper`` runs as one benchmark.
PAPER_EXPERIMENTS = ("paper-set1", "paper-set2")
SUFFIX = ".yaml"


def experiment_names() -> list[str]:
    """The names of the shipped experiments (their files' stems), sorted."""
    return sorted(entry.name[: -len(SUFFIX)] for entry in files(__name__).iterdir() if entry.name.endswith(SUFFIX))


def read_experiment(name: str) -> dict:
    """The config data of the shipped experiment ``name``, as its file holds it (read with the
    checks of :func:`~topicbench.flows.config.file.read_yaml_config`; checked as a config by
    :meth:`~topicbench.flows.config.model.BenchmarkConfig.from_dict` once its corpora are found).
    An unknown name is an :class:`InputError` naming the experiments there are."""
    names = experiment_names()
    if name not in names:
        raise InputError(f"unknown experiment {name!r}; the shipped experiments: {', '.join(names)}")
    with as_file(files(__name__) / f"{name}{SUFFIX}") as path:
        return read_yaml_config(path)
