"""The E-LDA paper's two experiments as configs of the benchmark flow. Each is defined by its
experiment file, shipped with the package (flows/experiments/paper-set1.yaml and paper-set2.yaml);
this module applies the command's options on top and runs both as one benchmark, ``paper``.

- Set 1 (posterior quality with the topics held fixed): Gibbs LDA, K = 100, beta = 0.01, in the
  Gibbs / Gibbs-Sparse / Gibbs-Bayes settings; each run is scored by the log posterior of its own
  token assignment, of E-LDA on its topics with the matched budget, and of RandK.
- Set 2 (semantic quality): E-LDA with each keyword generator (kappa = 2), Gibbs LDA and the baselines (the
  paper's, or those ``--baselines`` names), scored by coherence over the N grid (UMass, NPMI, C_V,
  embedding) and diversity; plus the diagnostic runs (flows/paper_report.py::SET2_DIAGNOSTICS) that
  change one setting of a baseline whose ratio misses the paper's, to measure why.

The corpora are read from the data folder: ``--data``, else the data cache where ``topicbench data
fetch`` puts them (``$TOPICBENCH_DATA``, else the user's cache folder).
"""

from __future__ import annotations

import logging
import os
import shlex
from contextlib import contextmanager
from pathlib import Path

from topicbench.core.datasets import DATA_HOME_VARIABLE, data_home
from topicbench.core.validation import InputError
from topicbench.flows.config.model import BenchmarkConfig
from topicbench.flows.experiments import PAPER_EXPERIMENTS, read_experiment

from .benchmark import run_benchmark
from .paper_report import (  # noqa: F401  the paper's figures and tables, importable from here as before
    PAPER_NOTES, PAPER_SET1, PAPER_SET2_UMASS5_RATIO, SET2_DIAGNOSTICS, set1_against_paper, set2_against_paper,
)

logger = logging.getLogger(__name__)

SET1, SET2 = PAPER_EXPERIMENTS
#: The experiment that runs both sets as one benchmark.
PAPER_EXPERIMENT = "paper"
#: The model whose runs ``--iterations`` sets the sweeps of.
GIBBS_MODEL = "gibbs_lda"
#: Set 2's models that ``--baselines`` leaves in place: E-LDA, the method under study, and Gibbs
#: LDA, Set 1's model. Its other models are the baselines ``--baselines`` chooses among.
SET2_OWN_MODELS = ("elda", GIBBS_MODEL)


def __getattr__(name: str):
    """``SET2_METRICS`` and ``SET2_BASELINES``, for the callers that import them: Set 2's metrics
    and the names of its baselines, read from its experiment file."""
    if name == "SET2_METRICS":
        return tuple(read_experiment(SET2)["metrics"])
    if name == "SET2_BASELINES":
        return tuple(model["model"] for model in read_experiment(SET2)["models"] if model["model"] not in SET2_OWN_MODELS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def default_data_folder() -> Path:
    """Where the paper's corpora are read without ``--data``: the data cache, where ``topicbench
    data fetch`` puts them (``$TOPICBENCH_DATA``, else the user's cache folder)."""
    return data_home()


def _data_folder(data) -> tuple[Path, str]:
    """The folder the corpora are read from, and where that folder came from."""
    if data is not None:
        return Path(data), "the folder given by --data"
    if os.environ.get(DATA_HOME_VARIABLE):
        return default_data_folder(), f"the data cache, from ${DATA_HOME_VARIABLE}"
    return default_data_folder(), f"the data cache of `topicbench data fetch`; ${DATA_HOME_VARIABLE} is not set"


def _corpora(listed: list, names, data) -> list[dict]:
    """The experiment's corpora named by ``names`` (None: all of them), each read from the folder
    its source names in the data folder (``data``, else :func:`default_data_folder`)."""
    by_name = {corpus["name"]: corpus for corpus in listed}
    names = list(by_name) if names is None else list(names)
    folder, origin = _data_folder(data)
    missing = [name for name in names if not (folder / by_name.get(name, {}).get("source", name)).is_dir()]
    if missing:
        fetch = "; ".join(f"topicbench data fetch {name}" for name in missing)
        raise InputError(f"paper corpora missing from {folder}: {', '.join(missing)} ({origin}); give the folder "
                         f"that holds them with --data FOLDER or {DATA_HOME_VARIABLE}=FOLDER, or fetch them into "
                         f"the data cache: {fetch}")
    unknown = [name for name in names if name not in by_name]
    if unknown:
        raise InputError(f"--corpora: {unknown[0]!r} is not a corpus of the paper; its corpora: {', '.join(by_name)}")
    return [{**by_name[name], "source": str(folder / by_name[name]["source"])} for name in names]


def _experiment_data(name: str, data, *, corpora, seeds, iterations, workers, tracking_uri: str, experiment) -> dict:
    """The config data of the experiment file ``name`` with the command's options over it (an
    option that is None leaves the file's value)."""
    config = read_experiment(name)
    config["corpora"] = _corpora(config["corpora"], corpora, data)
    if iterations is not None:
        config["models"] = [
            {**model, "settings": {**model.get("settings", {}), "iterations": iterations}}
            if model["model"] == GIBBS_MODEL else model
            for model in config["models"]
        ]
    options = {"seeds": None if seeds is None else list(seeds), "workers": workers, "tracking_uri": tracking_uri,
               "experiment": experiment}
    return {**config, **{key: value for key, value in options.items() if value is not None}}


def set1_config(data=None, *, seeds=None, iterations: int | None = None, corpora=None, tracking_uri: str,
                workers: int | None = None, experiment: str | None = None) -> BenchmarkConfig:
    """Set 1 (paper-set1.yaml) with the options over it: ``data`` is the folder holding the
    corpora (default: :func:`default_data_folder`); ``corpora`` a subset of its corpora;
    ``iterations`` the sweeps of every Gibbs LDA run; None keeps the file's value."""
    return BenchmarkConfig.from_dict(_experiment_data(
        SET1, data, corpora=corpora, seeds=seeds, iterations=iterations, workers=workers, tracking_uri=tracking_uri,
        experiment=experiment,
    ), where=f"experiment {SET1}")


def set2_config(data=None, *, seeds=None, iterations: int | None = None, corpora=None, baselines=None,
                baseline_settings: dict | None = None, tracking_uri: str, workers: int | None = None,
                experiment: str | None = None) -> BenchmarkConfig:
    """Set 2 (paper-set2.yaml) with the options over it, as :func:`set1_config`; ``baselines``
    names the baselines to run (None: those the file lists), ``baseline_settings`` maps a
    baseline's name to settings over its own; the diagnostic runs of each baseline run join."""
    config = _experiment_data(
        SET2, data, corpora=corpora, seeds=seeds, iterations=iterations, workers=workers, tracking_uri=tracking_uri,
        experiment=experiment,
    )
    config["models"] = _set2_models(config["models"], config["metrics"], baselines, baseline_settings or {})
    return BenchmarkConfig.from_dict(config, where=f"experiment {SET2}")


def _set2_models(models: list, metrics: list, baselines, baseline_settings: dict) -> list[dict]:
    """Set 2's own runs, then its baselines (``baselines``, None: those listed, in that order),
    then the diagnostic runs of the baselines run."""
    own = [model for model in models if model["model"] in SET2_OWN_MODELS]
    listed = {model["model"]: model for model in models if model["model"] not in SET2_OWN_MODELS}
    names = list(listed) if baselines is None else list(baselines)
    chosen = [_baseline(name, listed, models, metrics, baseline_settings.get(name, {})) for name in names]
    # the runs that measure why a baseline misses the paper's range: one setting changed each
    diagnostics = [
        {**_baseline(diagnostic.model, listed, models, metrics, diagnostic.settings), "label": label}
        for label, diagnostic in SET2_DIAGNOSTICS.items() if diagnostic.model in names
    ]
    return own + chosen + diagnostics


def _baseline(name: str, listed: dict, models: list, metrics: list, settings: dict) -> dict:
    """The Set 2 run of the registered model ``name`` with ``settings`` over its own: as the
    experiment lists it, else at the experiment's K (unless the model chooses its own number of
    topics), scored by the experiment's metrics."""
    from topicbench.baselines.registry import MODELS

    model_class = MODELS.get(name)  # an unknown name is an error naming the registered ones, not skipped
    spec = listed.get(name)
    if spec is None:
        spec = {"model": name, "metrics": list(metrics)}
        if not model_class.topics_decided_by:
            spec["num_topics"] = _shared_k(models)
    return {**spec, "settings": {**spec.get("settings", {}), **settings}}


def _shared_k(models: list) -> int:
    """The K every model of an experiment that takes one is given (the paper's: 100)."""
    ks = {model["num_topics"] for model in models if model.get("num_topics") is not None}
    if len(ks) != 1:
        raise InputError(f"experiment {SET2}: its models have K {sorted(ks)}, not one K for a baseline it does not list")
    return ks.pop()


def paper_config(data=None, *, seeds=None, iterations: int | None = None, corpora=None, baselines=None,
                 baseline_settings: dict | None = None, tracking_uri: str, workers: int | None = None,
                 experiment: str = PAPER_EXPERIMENT, llm: dict | None = None) -> BenchmarkConfig:
    """Sets 1 and 2 as one benchmark (the options as :func:`set2_config`), so each Gibbs run is
    fitted once and serves both; with ``llm`` (a config's ``llm:`` block) every model's topics are
    also judged by that LLM, and the report gains its "Judged by an LLM" section."""
    options = dict(seeds=seeds, iterations=iterations, corpora=corpora, tracking_uri=tracking_uri, workers=workers)
    one = set1_config(data, **options)
    two = set2_config(data, **options, baselines=baselines, baseline_settings=baseline_settings)
    merged = _merged(one.to_dict(), two.to_dict())
    if llm is not None:
        merged.update(llm=llm, metrics=[*merged["metrics"], "llm_rating", "llm_intrusion"],
                      report_sections=[*merged["report_sections"], "llm_judged"])
    return BenchmarkConfig.from_dict({**merged, "experiment": experiment}, where="paper")


def _merged(one: dict, two: dict) -> dict:
    """Set 1's config with Set 2's models and metrics added; a model both sets define (the Gibbs
    run) is listed once. The sets must agree on everything else: they run as one benchmark."""
    for key in sorted(set(one) - {"experiment", "models", "metrics"}):
        if one[key] != two[key]:
            raise InputError(f"the experiments {SET1} and {SET2} differ in {key} ({one[key]!r} and {two[key]!r}); "
                             "the paper runs them as one benchmark")
    first = {model["label"] or model["model"]: model for model in one["models"]}
    for model in two["models"]:
        name = model["label"] or model["model"]
        if name in first and first[name] != model:
            raise InputError(f"the experiments {SET1} and {SET2} define the model {name!r} differently")
    added = [model for model in two["models"] if (model["label"] or model["model"]) not in first]
    return {**one, "models": one["models"] + added, "metrics": list(dict.fromkeys(one["metrics"] + two["metrics"]))}


def run_paper(*, data=None, seeds=None, iterations: int | None = None, workers: int | None = None, tracking_uri: str,
              out="results/paper", baselines=None, baseline_settings: dict | None = None, corpora=None,
              notes: str = "", scheduler: str | None = None, llm: dict | None = None, bundle=None):
    """Run the paper's experiments as one benchmark (the options as :func:`paper_config`) and
    write its report to ``out`` through the report flow (the paper's sections come from its
    config); the fits run on ``workers`` local Dask worker processes, or on the Dask cluster at
    ``scheduler``. With ``bundle`` (a folder), one piece of the paper: the bundle's runs are
    imported first and the experiment exported back into it at the end
    (:func:`resumed_from_bundle`). Returns the benchmark flow's final state."""
    from .report import report

    config = paper_config(data, seeds=seeds, iterations=iterations, corpora=corpora, baselines=baselines,
                          baseline_settings=baseline_settings, tracking_uri=tracking_uri, workers=workers, llm=llm)
    if scheduler:
        config = config.replace(scheduler=scheduler)
    command = _command_line(config)
    if bundle is not None:
        command += f" --bundle {shlex.quote(str(bundle))}"
    with resumed_from_bundle(bundle, tracking_uri, config.experiment):
        state = run_benchmark(config)
        report(config.experiment, tracking_uri, str(out), command=command, notes=notes, sections=config.report_sections)
    return state


def _command_line(config: BenchmarkConfig) -> str:
    """The ``topicbench paper`` command the report names: the seeds, workers and Gibbs sweeps it ran with."""
    sweeps = [model.settings["iterations"] for model in config.models
              if model.model == GIBBS_MODEL and "iterations" in model.settings]
    command = f"topicbench paper --seeds {' '.join(map(str, config.seeds))} --workers {config.workers}"
    return command + (f" --iterations {sweeps[0]}" if sweeps else "")


def check_paper_bundle(folder, experiment: str = "paper") -> None:
    """``folder`` is a bundle of ``experiment`` (or no bundle yet: a new, writable folder); an
    :class:`~topicbench.core.validation.InputError` naming the problem otherwise, before any work."""
    from topicbench.core.validation import InputError
    from topicbench.tasks.results.bundle import MANIFEST, read_manifest

    from .checks import check_output_folder

    check_output_folder(str(folder), "--bundle")
    if not (Path(folder) / MANIFEST).is_file():
        if Path(folder).is_dir() and any(Path(folder).iterdir()):
            raise InputError(f"--bundle {folder}: a folder that holds files but no {MANIFEST}, so no result bundle; "
                             f"give a bundle (`topicbench export`) or a new folder")
        return
    manifest, _ = read_manifest(folder)
    if manifest.get("experiment") != experiment:
        raise InputError(f"--bundle {folder} holds the runs of experiment {manifest.get('experiment')!r}, not the "
                         f"paper's {experiment!r}: give the paper's bundle (e.g. results/paper/bundle) or a new folder")


@contextmanager
def resumed_from_bundle(folder, tracking_uri: str, experiment: str):
    """Around one piece of the paper: the bundle in ``folder`` (if any yet) imported into the store
    at ``tracking_uri`` first, so its fits are skipped by their run keys, and ``experiment``'s
    finished runs exported back into ``folder`` on every way out (done, failed, interrupted).
    Nothing happens without ``folder``."""
    from topicbench.tasks.results.bundle import MANIFEST, export_bundle, import_bundle

    if folder is None:
        yield
        return
    if (Path(folder) / MANIFEST).is_file():
        counts = import_bundle(folder, tracking_uri)
        logger.info("imported %d runs of %s into %s (%d there already)", counts["imported"], folder, tracking_uri,
                    counts["already_there"])
    try:
        yield
    except BaseException:  # what finished before the failure or Ctrl-C is kept, then it goes on up
        try:
            _export_piece(export_bundle, tracking_uri, experiment, folder)
        except Exception as export_error:  # noqa: BLE001 - the first error is the one to report
            logger.error("the finished runs were not exported to %s (%s); they are in %s: `topicbench export "
                         "--experiment %s --out %s` exports them", folder, export_error, tracking_uri, experiment, folder)
        raise
    _export_piece(export_bundle, tracking_uri, experiment, folder)


def _export_piece(export_bundle, tracking_uri: str, experiment: str, folder) -> None:
    manifest = export_bundle(tracking_uri, experiment, folder)
    logger.info("exported %d finished runs (%d fits) of %r to %s", manifest["runs"], manifest["fits"], experiment, folder)
