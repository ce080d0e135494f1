"""The search flow: per (corpus, model), a study over the model's space (a grid, or Optuna's TPE or
NSGA-II), several seeds per point, each seed's fit the same tracked nested run as a benchmark's,
all under one parent run per search; then each model's setting chosen by the one-standard-error
rule, a recommendation across the models, a report, and a config with the chosen settings whose
runs are the search's own fits (so running it fits nothing the search fitted); the choosing is
:mod:`~topicbench.flows.search_choice`'s.

Trials are asked in batches (per model ``search.batch``; a grid's whole grid at once), and a
batch's trials x seeds are fitted together on the config's task runner (Dask workers, local or
``--scheduler``), so the workers stay busy. Shared work is done once per corpus: the corpus is
read and split in this process once; document embeddings are computed once per corpus into their
on-disk cache; each worker process builds the corpus's metric context (its co-occurrence counts)
on its first fit and every later trial on it reuses it (each run's ``topicbench.metric_context``
tag says which; the report counts them).

Resume: a study's state is in Optuna's storage and every fit in the tracking store by its run
key, so a search stopped at any point (Ctrl-C, SIGKILL, a lost worker or server) continues where
it stopped: trials asked and not told are taken up first, and their finished seeds are read back,
not fitted again. A study answers for one definition (space, objectives, sampler, model, seeds,
corpus; :class:`~topicbench.tasks.search.study.ModelStudy`): a search whose space changed searches the
new one, and a point asked twice is one point. Before any fit: the study storage is not the
tracking store (:func:`~topicbench.tasks.search.study.check_storage`), and each model's largest K fits
each corpus once it is read.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from prefect import flow, get_run_logger

from topicbench.core.search_space import STABILITY, point_label, point_model
from topicbench.tasks.run.corpus import check_topics_fit, coherence_references, corpus_splits, load_corpus
from topicbench.tasks.store.spool import Spool
from topicbench.tasks.search.study import ModelStudy, check_storage, open_storage, study_name
from topicbench.tasks.store.checks import (
    TrackingError,
    check_free_space,
    check_tracking_uri,
    store_unavailable,
)
from topicbench.tasks.store.tracking import Tracker
from topicbench.tasks.search.trial_results import trial_result

from .benchmark import fit_jobs, raise_flow_error
from .benchmark_runs import Job, Ledger, store_gone_message
from topicbench.flows.config.model import BenchmarkConfig, ModelSpec
from .console import CONSOLE
from .runtime import prefect_defaults, shared_prefect_server, task_runner, uses_worker_processes
from .search_choice import chosen_configs, choose, recommend, seed_warnings, with_chosen_topics
from .search_plan import SearchPlan

logger = logging.getLogger(__name__)


@dataclass
class SearchCounts:
    """What the search did, for its summary and report: batches, trials told, fits run by this
    process, fits found finished (earlier runs, other processes), and the shared work."""

    batches: int = 0
    trials_told: int = 0
    fits_run: int = 0
    fits_found: int = 0
    corpus_reads: int = 0
    metric_context_builds: int = 0
    fits_scored: int = 0
    failed: list = field(default_factory=list)


@flow(name="search", validate_parameters=False)
def search(config: BenchmarkConfig, plan: SearchPlan, storage_url: str) -> dict:
    """Run the search of ``config`` (its :class:`SearchPlan` ``plan``) and choose each model's
    setting; returns the summary (:func:`summarise`). Exits as the benchmark flow does: an
    interrupt or an error ends the parent and the claimed runs KILLED or FAILED and raises."""
    tracker = Tracker(config.tracking_uri, config.experiment)
    ledger = Ledger(Spool.of(config.tracking_uri, config.experiment))
    parent = tracker.open_study_parent(config, config.experiment)
    try:
        with tracker.heartbeat():
            studies, counts = _search(config, plan, storage_url, tracker, parent, ledger)
        outcome = summarise(config, plan, studies, counts, parent, tracker.client)
        tracker.close_parent(parent, outcome_record(outcome), counts.failed)
        return outcome
    except BaseException as error:  # interrupts included: nothing is left RUNNING
        tracker.abandon(error)
        if not isinstance(error, Exception):
            raise
        if not isinstance(error, TrackingError) and (ledger.store_gone is not None or store_unavailable(error)):
            ledger.store_gone = ledger.store_gone or error
            raise TrackingError(store_gone_message(config.tracking_uri, ledger)) from error
        raise


def _search(config: BenchmarkConfig, plan: SearchPlan, storage_url: str, tracker: Tracker, parent: str,
            ledger: Ledger):
    log = get_run_logger()
    counts = SearchCounts()
    splits = {}
    for spec in config.corpora:  # read, preprocessed and split once per corpus, for every trial
        splits[spec.name] = corpus_splits(load_corpus(spec))
        counts.corpus_reads += 1
        plan.check_corpus(spec.name, *splits[spec.name])
    check_topics_fit(splits, plan.largest_num_topics(config.models))
    coherence_references(config, splits)  # a reference a corpus cannot give fails here, before any fit
    storage = open_storage(storage_url)
    studies = {
        (corpus.name, model.name): (corpus, model, ModelStudy(
            storage, study_name(config.experiment, corpus.name, model.name), plan.space_of(model.name),
            plan.objectives, plan.sampler, plan.trials, plan.seed,
            _fitted_as(config, plan, splits[corpus.name][0], model)))
        for corpus in config.corpora for model in config.models
    }
    limit = plan.batch if plan.batch is not None else (None if plan.sampler == "grid" else max(1, config.workers))
    while True:
        batch = [(corpus, model, pending) for corpus, model, study in studies.values() for pending in study.pending(limit)]
        if not batch:
            break
        counts.batches += 1
        trials = [(pending, _trial_jobs(config, corpus, splits, model, pending.point)) for corpus, model, pending in batch]
        jobs = [job for _, trial_jobs in trials for job in trial_jobs]
        log.info("batch %d: %d trials x %d seeds (%s)", counts.batches, len(trials), len(config.seeds),
                 ", ".join(sorted({f"{p.study.name.rsplit('/', 1)[-1]} #{p.number}" for p, _ in trials})[:6])
                 + (", ..." if len(trials) > 6 else ""), extra=CONSOLE)
        finished_before, done_elsewhere = fit_jobs(jobs, config, tracker, parent, splits, ledger, log)
        counts.fits_found += len(finished_before) + len(done_elsewhere)
        counts.fits_run += len(jobs) - len(finished_before) - len(done_elsewhere)
        runs = tracker.finished_runs(job.key for job in jobs)
        for pending, trial_jobs in trials:
            result = trial_result(tracker.client, trial_jobs, runs, plan.objectives, plan.stability_measure)
            counts.failed += [f"{job.label}: the fit failed" for job in trial_jobs if job.seed in result.missing_seeds]
            pending.study.tell(pending, [result.value(o.key) for o in plan.objectives], result.attributes())
            counts.trials_told += 1
    _count_shared_work(studies, counts)
    return studies, counts


def _fitted_as(config: BenchmarkConfig, plan: SearchPlan, corpus, model: ModelSpec) -> dict:
    """What a study's trial values depend on besides its space, objectives and sampler: the
    model as configured, the seeds and the corpus (so that a study never answers for another)."""
    uses_stability = any(o.key == STABILITY for o in plan.objectives)
    stability = {"stability_measure": plan.stability_measure} if uses_stability else {}
    return {"model": model.model, "num_topics": model.num_topics, "settings": model.settings,
            "metrics": list(model.metrics) if model.metrics is not None else None, "seeds": list(config.seeds),
            "corpus": corpus.fingerprint(), **stability}


def _trial_jobs(config, corpus, splits: dict, model: ModelSpec, point: dict) -> list:
    """One job per seed of the model at ``point`` (its label names the point)."""
    num_topics, settings = point_model(model.num_topics, model.settings, point)
    spec = ModelSpec(model.model, num_topics, settings, point_label(model.name, point), model.metrics)
    return [Job(corpus, splits[corpus.name][0], spec, seed, config) for seed in config.seeds]


def _count_shared_work(studies: dict, counts: SearchCounts) -> None:
    """Of every trial's finished fits, how many built the corpus's metric context (the rest reused
    a worker's)."""
    for _, _, study in studies.values():
        for trial in study.finished_trials():
            counts.metric_context_builds += int(trial.user_attrs.get("context_builds", 0))
            counts.fits_scored += len(trial.user_attrs.get("seeds", []))


def summarise(config: BenchmarkConfig, plan: SearchPlan, studies: dict, counts: SearchCounts, parent: str,
              client=None) -> dict:
    """The search's outcome: each model's choice (with its chosen fit's topics, read through
    ``client`` where given), the recommendation across models per corpus, the warnings that hold
    for every choice, the counts, the chosen configs
    (:func:`~topicbench.flows.search_choice.chosen_configs`)."""
    choices = [choose(plan, corpus.name, model.name, study) for corpus, model, study in studies.values()]
    if client is not None:
        choices = [with_chosen_topics(client, choice, plan.objectives[0]) for choice in choices]
    corpora = list(dict.fromkeys(choice.corpus for choice in choices))
    return {"experiment": config.experiment, "parent_run_id": parent, "choices": choices, "counts": counts,
            "recommendations": [recommend(plan, [c for c in choices if c.corpus == corpus]) for corpus in corpora],
            "warnings": seed_warnings(config.seeds), "chosen_configs": chosen_configs(config, choices)}


def outcome_record(outcome: dict) -> dict:
    """The outcome as JSON for the parent run's ``summary.json``."""
    return {
        "experiment": outcome["experiment"],
        "choices": [{"corpus": c.corpus, "model": c.label, "chosen": c.point, "best": c.best, "rule": c.rule,
                     "messages": list(c.messages)} for c in outcome["choices"]],
        "recommendations": [{"corpus": r.corpus, "recommendation": r.headline(), "rule": r.rule,
                             "disagreements": list(r.disagreements)} for r in outcome["recommendations"]],
        "warnings": list(outcome["warnings"]),
        "counts": dict(vars(outcome["counts"])),
    }


def run_search(config: BenchmarkConfig, plan: SearchPlan, storage_url: str) -> dict:
    """Run the search flow on the config's task runner (checks first, as :func:`run_benchmark`)."""
    check_tracking_uri(config.tracking_uri)
    check_storage(storage_url, config.tracking_uri)
    check_free_space(config.tracking_uri)
    prefect_defaults()
    with shared_prefect_server(uses_worker_processes(config.workers, config.scheduler)):
        runner = task_runner(config.workers, config.scheduler)
        state = search.with_options(task_runner=runner)(config, plan, storage_url, return_state=True)
    raise_flow_error(state)
    return state.result()
