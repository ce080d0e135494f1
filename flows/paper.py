"""The paper's two experiments (spec §4) as configs of the benchmark flow.

- Set 1 (posterior quality with the topics held fixed): Gibbs LDA, K = 100, beta = 0.01, in the
  Gibbs / Gibbs-Sparse / Gibbs-Bayes settings; each run is scored by the log posterior of its own
  token assignment, of E-LDA on its topics with the matched budget, and of RandK.
- Set 2 (semantic quality): E-LDA with each keyword generator (kappa = 2) and every baseline that
  has landed, scored by coherence over the N grid (UMass, NPMI, C_V, embedding) and diversity;
  plus the diagnostic runs (flows/paper_report.py::SET2_DIAGNOSTICS) that change one setting of a
  baseline whose ratio misses the paper's, to measure why.
"""

from __future__ import annotations

import logging
import shlex
from contextlib import contextmanager
from pathlib import Path

from topicbench.baselines.gibbs_lda import PAPER_SETTINGS
from topicbench.core.constants import GENERATORS

from .benchmark import run_benchmark
from topicbench.flows.config.model import BenchmarkConfig
from .paper_report import (  # noqa: F401  the paper's figures and tables, importable from here as before
    PAPER_NOTES, PAPER_SET1, PAPER_SET2_UMASS5_RATIO, SET2_DIAGNOSTICS, set1_against_paper, set2_against_paper,
)

logger = logging.getLogger(__name__)

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
PAPER_CORPORA = ("congress", "reuters", "20ng_politics")
SET1_METRICS = ("log_likelihood_own", "log_likelihood_elda", "log_likelihood_randk", "umass", "npmi", "topic_diversity")
SET2_METRICS = ("umass", "npmi", "cv", "embedding_pairwise", "embedding_centroid", "topic_diversity", "inverted_rbo")
#: The paper's report: the summary, then the ordinary sections, with the paper's own
#: (flows/paper_report.py) after the settings flags.
PAPER_REPORT_SECTIONS = (
    "summary", "changed_settings", "paper_notes", "notes", "paper_set1", "paper_set2", "set1", "coherence", "diversity",
    "training", "fit_time", "robustness", "topics", "elda_topics", "failed_runs",
)
SET2_BASELINES = {
    "bertopic": {},
    "prodlda": {"num_topics": 100},
    "etm": {"num_topics": 100},
    "ctm": {"num_topics": 100},
    "fastopic": {"num_topics": 100},
}
#: Models Set 2 takes when ``--baselines`` names them (not run by default: they are not the
#: paper's), at the paper's K; HDP chooses its own.
SET2_MORE_BASELINES = {
    "nmf": {"num_topics": 100},
    "lsi": {"num_topics": 100},
    "hdp": {},
    "keynmf": {"num_topics": 100},
    "s3": {"num_topics": 100},
    "gmm": {"num_topics": 100},
}


def default_data_folder() -> Path:
    """Where the paper's corpora are read without ``--data``: ../shared/data when it exists, else
    the data cache of ``topicbench data fetch`` (``$TOPICBENCH_DATA``)."""
    from topicbench.core.datasets import data_home

    return SHARED_DATA if SHARED_DATA.is_dir() else data_home()


def _corpora(data: Path, corpora) -> list[dict]:
    missing = [name for name in corpora if not (Path(data) / name).is_dir()]
    if missing:
        from topicbench.core.validation import InputError

        fetch = "; ".join(f"topicbench data fetch {name}" for name in missing)
        raise InputError(f"paper corpora missing from {data}: {', '.join(missing)} (give --data PATH, "
                         f"or fetch them into the data cache: {fetch})")
    return [{"name": name, "source": str(Path(data) / name), "preprocessing": {"preprocessed": True}} for name in corpora]


def set1_config(data=SHARED_DATA, *, seeds=(0, 1, 2), iterations: int = 1000, corpora=PAPER_CORPORA,
                tracking_uri: str, workers: int = 2, experiment: str = "paper-set1") -> BenchmarkConfig:
    models = [
        {"model": "gibbs_lda", "label": label, "num_topics": 100,
         "settings": {**settings, "eta": 0.01, "iterations": iterations}}
        for label, settings in PAPER_SETTINGS.items()
    ]
    return BenchmarkConfig.from_dict({
        "experiment": experiment, "corpora": _corpora(data, corpora), "models": models, "seeds": list(seeds),
        "metrics": list(SET1_METRICS), "tracking_uri": tracking_uri, "workers": workers,
        "report_sections": list(PAPER_REPORT_SECTIONS),
    }, where="paper set 1")


def set2_config(data=SHARED_DATA, *, seeds=(0, 1, 2), iterations: int = 1000, corpora=PAPER_CORPORA,
                baselines=tuple(SET2_BASELINES), baseline_settings: dict | None = None,
                tracking_uri: str, workers: int = 2, experiment: str = "paper-set2") -> BenchmarkConfig:
    from topicbench.baselines.registry import MODELS

    models = [
        {"model": "elda", "label": f"elda_{generator}", "settings": {"kappa": 2.0, "generator": generator},
         "metrics": list(SET2_METRICS)}
        for generator in GENERATORS
    ]
    models.append({"model": "gibbs_lda", "label": "gibbs", "num_topics": 100,
                   "settings": {**PAPER_SETTINGS["gibbs"], "eta": 0.01, "iterations": iterations}})
    for name in baselines:
        MODELS.get(name)  # an unknown name is an error naming the registered ones, not skipped
        spec = dict({**SET2_MORE_BASELINES, **SET2_BASELINES}.get(name, {}))
        models.append({"model": name, **spec, "settings": dict((baseline_settings or {}).get(name, {})),
                       "metrics": list(SET2_METRICS)})
    # the runs that measure why a baseline misses the paper's range: one setting changed each
    models += [
        {"model": d.model, "label": label, **SET2_BASELINES.get(d.model, {}), "settings": dict(d.settings),
         "metrics": list(SET2_METRICS)}
        for label, d in SET2_DIAGNOSTICS.items() if d.model in baselines
    ]
    return BenchmarkConfig.from_dict({
        "experiment": experiment, "corpora": _corpora(data, corpora), "models": models, "seeds": list(seeds),
        "metrics": list(SET2_METRICS), "tracking_uri": tracking_uri, "workers": workers,
        "report_sections": list(PAPER_REPORT_SECTIONS),
    }, where="paper set 2")


def paper_config(data=SHARED_DATA, *, seeds=(0, 1, 2), iterations: int = 1000, corpora=PAPER_CORPORA,
                 baselines=tuple(SET2_BASELINES), baseline_settings: dict | None = None,
                 tracking_uri: str, workers: int = 2, experiment: str = "paper", llm: dict | None = None) -> BenchmarkConfig:
    """Sets 1 and 2 as one benchmark, so each Gibbs run is fitted once and serves both; with
    ``llm`` (a config's ``llm:`` block) every model's topics are also judged by that LLM, and the
    report gains its "Judged by an LLM" section."""
    one = set1_config(data, seeds=seeds, iterations=iterations, corpora=corpora, tracking_uri=tracking_uri, workers=workers)
    two = set2_config(data, seeds=seeds, iterations=iterations, corpora=corpora, baselines=baselines,
                      baseline_settings=baseline_settings, tracking_uri=tracking_uri, workers=workers)
    models = [m for m in one.to_dict()["models"]] + [m for m in two.to_dict()["models"] if m["label"] != "gibbs"]
    metrics = list(dict.fromkeys(list(SET1_METRICS) + list(SET2_METRICS)))
    extra = {}
    if llm is not None:
        metrics += ["llm_rating", "llm_intrusion"]
        extra = {"llm": llm, "report_sections": [*one.report_sections, "llm_judged"]}
    return BenchmarkConfig.from_dict({
        **one.to_dict(), "experiment": experiment, "models": models, "metrics": metrics, **extra,
    }, where="paper")


def run_paper(*, data=SHARED_DATA, seeds=(0, 1, 2), iterations: int = 1000, workers: int = 2, tracking_uri: str,
              out="results/paper", baselines=tuple(SET2_BASELINES), baseline_settings: dict | None = None,
              corpora=PAPER_CORPORA, notes: str = "", scheduler: str | None = None, llm: dict | None = None,
              bundle=None):
    """Run the paper's experiments as one benchmark and write its report to ``out`` through the
    report flow (the paper's sections come from its config); the fits run on ``workers`` local
    Dask worker processes, or on the Dask cluster at ``scheduler``. With ``bundle`` (a folder),
    one piece of the paper: the bundle's runs are imported first and the experiment exported back
    into it at the end (:func:`resumed_from_bundle`). Returns the benchmark flow's final state."""
    from .report import report

    config = paper_config(data, seeds=seeds, iterations=iterations, corpora=corpora, baselines=baselines,
                          baseline_settings=baseline_settings, tracking_uri=tracking_uri, workers=workers, llm=llm)
    if scheduler:
        config = config.replace(scheduler=scheduler)
    command = f"topicbench paper --seeds {' '.join(map(str, seeds))} --workers {workers} --iterations {iterations}"
    if bundle is not None:
        command += f" --bundle {shlex.quote(str(bundle))}"
    with resumed_from_bundle(bundle, tracking_uri, config.experiment):
        state = run_benchmark(config)
        report(config.experiment, tracking_uri, str(out), command=command, notes=notes, sections=config.report_sections)
    return state


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
