"""MLflow logging: one parent run per benchmark (or search), one nested run per (corpus, model, seed).

Everything goes through an explicit ``MlflowClient`` (no global active run), from the flow's
process. Which process fits which nested run is settled by :mod:`.claims` (the base of
:class:`Tracker`); whether a store can be used, and what its errors say, by
:mod:`~topicbench.tasks.store.checks`. A claimed run is described when it is won (the run's
record and the corpus as an input) and filled when its fit returns
(:class:`~topicbench.tasks.store.fit_record.FitRecord`: what was asked, as the fitted model's
``get_params()``, and what it resolved, its tags, metrics and artifacts).

Every call to a tracking server is bounded: MLflow's client retries a request
``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` times, backing off from ``MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR``
seconds (topicbench's defaults, 5 and 1 s: about 30 s for a server that is gone, a restart's
worth; MLflow's own, 7 and 2 s, spent about 4 minutes a call), each try waiting at most
``MLFLOW_HTTP_REQUEST_TIMEOUT`` seconds; the environment overrides them. They are set, with
MLflow's other settings of topicbench, by :func:`~topicbench.tasks.store.tracking_settings.use_tracking_defaults`
where runs start (the command line, a :class:`Tracker`), never on import. A store found gone
(:func:`~topicbench.tasks.store.checks.store_unavailable`) is not waited on again: the flow spools
what it cannot log.
"""

from __future__ import annotations

import json
import logging
import random
import time
import traceback

from prefect import task
from prefect.cache_policies import NONE

from topicbench.core.io import file_name_for
from topicbench.core.redaction import redact

from topicbench.tasks.store.fit_record import FitRecord
from topicbench.tasks.store.records import git_commit, package_versions
from topicbench.tasks.store.claims import (
    END_REASON,
    ERROR_TAG,
    FIT_ROLE,
    PARENT_ROLE,
    ROLE_TAG,
    RUN_KEY,
    STUDY_ROLE,
    Owner,
    RunClaims,
)
from topicbench.tasks.store.locks import creation_lock, store_lock
from topicbench.tasks.store.new_store import create_from_template
from topicbench.tasks.store.checks import check_tracking_uri, lost_insert_race, sqlite_path, store_unavailable
from topicbench.tasks.store.tracking_error import TrackingError
from topicbench.tasks.store.tracking_settings import use_tracking_defaults
from topicbench.tasks.store.filters import search_runs

logger = logging.getLogger(__name__)

#: Tries of logging a corpus as a run's input: two processes logging one new dataset at once race
#: on the store's table of datasets, and the loser's insert fails; its next try finds the row.
INPUT_TRIES = 5


def local_artifact_location(tracking_uri: str, experiment: str) -> str | None:
    """For a sqlite file store, artifacts beside the database (``<db folder>/mlartifacts/<experiment>``)
    rather than MLflow's default ``./mlruns`` under whatever folder the command ran in; for any
    other store, None (the server's or MLflow's default)."""
    database = sqlite_path(tracking_uri)
    if database is None:
        return None
    folder = database.resolve().parent / "mlartifacts" / file_name_for(experiment)
    return folder.as_uri()


def _make_database_folder(uri: str) -> None:
    """Create the folder of a sqlite database (MLflow does not, and retries for minutes instead)."""
    path = sqlite_path(uri)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise TrackingError(f"cannot create the folder of the tracking database {path}: {error}") from None


class Tracker(RunClaims):
    """Reads and writes the runs of one MLflow experiment. The claims' attributes (``open_runs``,
    ``owner``, ``parent_id``) are :class:`~topicbench.tasks.store.claims.RunClaims`'s.

    Parameters
    ----------
    tracking_uri : str
        The MLflow store (checked by :func:`~topicbench.tasks.store.checks.check_tracking_uri` first).
    experiment : str
        The experiment's name; created when missing.

    Attributes
    ----------
    client : MlflowClient
        The store's client.
    experiment_id : str
        The experiment's id.
    """

    def __init__(self, tracking_uri: str, experiment: str):
        from mlflow.tracking import MlflowClient

        use_tracking_defaults()
        check_tracking_uri(tracking_uri)
        _make_database_folder(tracking_uri)
        super().__init__(tracking_uri, experiment)
        with creation_lock(tracking_uri):  # a fresh database's migration, the experiment's creation
            create_from_template(tracking_uri)  # a new sqlite store: copied, not migrated from scratch
            self.client = MlflowClient(tracking_uri)
            self.experiment_id = self._experiment_id(experiment)

    def _experiment_id(self, name: str) -> str:
        """The experiment's id, created when missing. On a server (no lock) another process may
        create it between our look-up and our creation: ours then fails, and its is read."""
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            return found.experiment_id
        try:
            return self.client.create_experiment(name, artifact_location=local_artifact_location(self.tracking_uri, name))
        except Exception as error:
            found = self.client.get_experiment_by_name(name)
            if found is None:
                raise
            logger.debug("experiment %r was created by another process meanwhile (%s)", name, error)
            return found.experiment_id

    # -- parents ------------------------------------------------------------------------------

    def open_parent(self, config) -> str:
        run = self.client.create_run(
            self.experiment_id,
            run_name=f"{config.experiment}-benchmark",
            tags={"topicbench.role": PARENT_ROLE, "experiment": config.experiment,
                  "topicbench.config_fingerprint": config.fingerprint(), **self._liveness_tags()},
        )
        run_id = run.info.run_id
        self.parent_id = run_id  # what an LLM token budget is counted against
        self.open_runs.add(run_id)
        self.client.log_batch(run_id, params=_params({
            "config_fingerprint": config.fingerprint(), "git_commit": git_commit(),
            "corpora": ",".join(c.name for c in config.corpora),
            "models": ",".join(m.name for m in config.models),
            "seeds": ",".join(map(str, config.seeds)), "metrics": ",".join(config.metrics),
            "top_n": ",".join(map(str, config.top_n)),
        }))
        self._log_json(run_id, config.to_dict(), "config.json")
        return run_id

    def open_study_parent(self, config, study: str) -> str:
        """The one parent run of search ``study``: created on its first run, reopened (RUNNING,
        owned by this process) on every later one, so that every trial of the study, however
        often it was resumed, is a nested run of one parent. Raises
        :class:`~topicbench.tasks.store.tracking_error.TrackingError` when a live process holds it (that
        search is running now)."""
        with store_lock(self.tracking_uri):
            self.kill_stale_runs()
            found = search_runs(self.client, [self.experiment_id], tags={ROLE_TAG: STUDY_ROLE, "topicbench.study": study},
                                max_results=1, order_by=["attributes.start_time ASC"])
            run_id = self._reopened(found[0], study) if found else self.client.create_run(
                self.experiment_id, run_name=f"{study}-search", tags={
                    "topicbench.role": STUDY_ROLE, "topicbench.study": study, "experiment": config.experiment,
                    **self._liveness_tags()}).info.run_id
        self.parent_id = run_id
        self.open_runs.add(run_id)
        self._log_json(run_id, config.to_dict(), "config.json")
        return run_id

    def _reopened(self, run, study: str) -> str:
        """The earlier parent ``run`` of ``study``, RUNNING again and owned by this process."""
        run_id = run.info.run_id
        if run.info.status == "RUNNING":
            holder = Owner.from_tags(run.data.tags)
            if holder != self.owner:
                raise TrackingError(f"search {study!r} is running in another process ({holder}); "
                                    "wait for it, or stop it (its trials are resumed by the next run)")
        self.client.update_run(run_id, status="RUNNING")
        self._set_tags(run_id, self._liveness_tags())
        for stale_tag in (END_REASON, ERROR_TAG):  # why it stopped last time, no longer true
            if stale_tag in run.data.tags:
                self.client.delete_tag(run_id, stale_tag)
        return run_id

    def finished_runs(self, keys) -> dict:
        """{run key: the newest FINISHED fit run of that key} for ``keys`` (one search of the
        experiment)."""
        wanted = set(keys)
        runs = search_runs(self.client, [self.experiment_id], tags={ROLE_TAG: FIT_ROLE}, status="FINISHED",
                           order_by=["attributes.start_time ASC"])
        return {run.data.tags.get(RUN_KEY): run for run in runs if run.data.tags.get(RUN_KEY) in wanted}

    def close_parent(self, run_id: str, summary: dict, failed: list) -> None:
        self._log_json(run_id, summary, "summary.json")
        self.client.set_tag(run_id, "topicbench.failed_runs", str(len(failed)))
        self._terminate(run_id, "FAILED" if failed else "FINISHED")

    # -- nested runs --------------------------------------------------------------------------

    def claim_jobs(self, parent_id: str, jobs) -> dict:
        """:meth:`~topicbench.tasks.store.claims.RunClaims.claim_jobs`, then each run won described: its record (``job.record()``),
        its changed settings and the corpus as an input."""
        claims = super().claim_jobs(parent_id, jobs)
        for job, claim in claims.items():
            if claim.run_id is not None:
                self._describe(claim.run_id, job)
        return claims

    def _describe(self, run_id: str, job) -> None:
        """What a claimed run will fit: its params, changed settings and the corpus as an input."""
        self.client.log_batch(run_id, params=_params(job.record()))
        changed = changed_settings(job.model.model, job.model.settings)
        if changed:
            self.client.set_tag(run_id, "topicbench.changed_settings", json.dumps(changed, default=str)[:4900])
        self._log_corpus_input(run_id, job)

    def log_fit(self, run_id: str, record: FitRecord, artifacts) -> str:
        """Fill the claimed run ``run_id`` with a finished fit's ``record`` (what was asked as
        ``settings.<name>`` and its resolved values as ``resolved.<name>`` params, tags, metrics
        and training curve) and the files of the folder ``artifacts``, and end it FINISHED."""
        from mlflow.entities import Metric

        params = _params(record.params)
        for start in range(0, len(params), 100):  # MLflow takes at most 100 params a batch
            self.client.log_batch(run_id, params=params[start : start + 100])
        self._set_tags(run_id, record.tags)
        stamp = int(time.time() * 1000)
        entries = [Metric(name, value, stamp, 0) for name, value in record.metrics.items()]
        # an iterative fit's loss per epoch as the history of ``training_loss``, which MLflow's
        # UI and the report plot
        entries += [Metric("training_loss", value, stamp, step) for step, value in record.curve]
        for start in range(0, len(entries), 900):
            self.client.log_batch(run_id, metrics=entries[start : start + 900])
        self.client.log_artifacts(run_id, str(artifacts))
        self._log_llm_traces(run_id, artifacts)
        self._terminate(run_id, "FINISHED")
        return run_id

    def _log_llm_traces(self, run_id: str, artifacts) -> None:
        """The LLM metrics' requests of the run as traces (:mod:`~topicbench.tasks.store.traces`)."""
        from topicbench.tasks.store.traces import log_traces, read_records

        records = read_records(artifacts)
        if records:
            traced = log_traces(self.tracking_uri, self.experiment_id, run_id, records)
            self.client.set_tag(run_id, "topicbench.llm_traces", str(traced))

    def log_failed_run(self, run_id: str, job, error: BaseException) -> str:
        """Record ``error`` (message and traceback) on the claimed run ``run_id`` and end it FAILED."""
        message = redact(f"{type(error).__name__}: {error}")
        self.client.set_tag(run_id, ERROR_TAG, message[:4900])
        text = redact("".join(traceback.format_exception(type(error), error, error.__traceback__)))
        self.client.log_text(run_id, text, "error.txt")
        self._terminate(run_id, "FAILED")
        return run_id

    # -- helpers ------------------------------------------------------------------------------

    def _terminate(self, run_id: str, status: str) -> None:
        self.client.set_terminated(run_id, status)
        self.open_runs.discard(run_id)

    def _log_json(self, run_id: str, data: dict, name: str) -> None:
        self.client.log_text(run_id, redact(json.dumps(data, indent=1, default=str)), name)

    def _log_corpus_input(self, run_id: str, job) -> None:
        from mlflow.data.meta_dataset import MetaDataset
        from mlflow.data.sources import LocalArtifactDatasetSource
        from mlflow.entities import DatasetInput, InputTag

        corpus = job.corpus_data
        dataset = MetaDataset(
            LocalArtifactDatasetSource(corpus.source or corpus.name), name=corpus.name,
            digest=corpus.fingerprint()[:36],
        )
        inputs = [DatasetInput(dataset._to_mlflow_entity(), tags=[InputTag("mlflow.data.context", "training")])]
        for tries_left in reversed(range(INPUT_TRIES)):
            try:
                self.client.log_inputs(run_id, datasets=inputs)
                return
            except Exception as error:  # MLflow's store looks the dataset up, then inserts it
                if tries_left == 0 or not lost_insert_race(error):
                    raise
                time.sleep(random.uniform(0.05, 0.5))  # apart from the process that won


def worth_retrying(task, task_run, state) -> bool:
    """A logging task is retried unless the store is gone or full (:func:`~topicbench.tasks.store.checks.store_unavailable`):
    MLflow's client has already waited for a server through its own bounded retries."""
    error = state.data if isinstance(state.data, BaseException) else None
    return error is None or not store_unavailable(error)


@task(name="log_model_run", retries=3, retry_delay_seconds=[1, 2, 4], retry_condition_fn=worth_retrying,
      cache_policy=NONE)
def log_model_run(tracker: Tracker, run_id: str, record: FitRecord, artifacts) -> str:
    """:meth:`Tracker.log_fit`, retried on transient failures ("database is locked")."""
    return tracker.log_fit(run_id, record, artifacts)


@task(name="log_failed_run", retries=3, retry_delay_seconds=[1, 2, 4], retry_condition_fn=worth_retrying,
      cache_policy=NONE)
def log_failed_run(tracker: Tracker, run_id: str, job, error: BaseException) -> str:
    return tracker.log_failed_run(run_id, job, error)


def _params(values: dict) -> list:
    from mlflow.entities import Param

    return [Param(str(k)[:250], redact(str(v))[:6000]) for k, v in values.items()]


def claimed_params(job) -> dict:
    """{name: value} of the params a claimed run of ``job`` is described with, as MLflow keeps them."""
    return {param.key: param.value for param in _params(job.record())}


def changed_settings(model: str, settings: dict) -> dict:
    """{setting: [value, default]} for each setting given that differs from the model's default
    (a run trained otherwise than its authors ship the model, which the report flags)."""
    from topicbench.baselines.registry import MODELS

    defaults = MODELS.get(model).defaults
    as_json = lambda value: json.loads(json.dumps(value, default=str))  # (100, 100) == [100, 100]
    return {key: [value, defaults.get(key)] for key, value in settings.items() if as_json(value) != as_json(defaults.get(key))}


#: The most labels a run's ``corpus_labels`` param counts one by one (MLflow keeps 6000
#: characters of a param); ``corpus_label_count`` says how many there are in all.
LABELS_COUNTED = 100


def corpus_count_params(corpus) -> dict:
    """The corpus's documents per partition (of the whole corpus, where this is its training
    partition) and per label (of the documents fitted on; the most frequent :data:`LABELS_COUNTED`)
    as JSON params, for the report's "Data and settings"; none for a corpus without them."""
    from collections import Counter

    found = {}
    if corpus.partition_sizes is not None:  # the training partition of a split corpus: every partition's size
        found["corpus_partitions"] = json.dumps(corpus.partition_sizes)
    elif corpus.partitions is not None:
        found["corpus_partitions"] = json.dumps(dict(Counter(corpus.partitions).most_common()))
    if corpus.labels is not None:
        counts = Counter(str(label) for label in corpus.labels)
        shown = counts.most_common(LABELS_COUNTED)
        while len(text := json.dumps(dict(shown), ensure_ascii=False)) > 6000:  # whole JSON, never cut
            shown = shown[: len(shown) // 2]
        found["corpus_labels"], found["corpus_label_count"] = text, len(counts)
    return found


def run_record(corpus, model_spec, seed: int, config) -> dict:
    """What a (corpus, model, seed) run is, flattened for MLflow params, logged when it is claimed:
    the corpus and its preprocessing, the model, K and seed as asked, the config, package versions,
    the judge of LLM metrics and a plugin's origin. The model's every setting (``settings.<name>``,
    defaults filled in) is logged from the fit's result (:class:`~topicbench.tasks.store.fit_record.FitRecord`)."""
    import numba

    record = {
        "corpus": corpus.name, "corpus_fingerprint": corpus.fingerprint(), "corpus_source": corpus.source,
        "corpus_documents": corpus.n_documents, "corpus_vocabulary": corpus.n_words, "corpus_tokens": corpus.n_tokens,
        # how the vocabulary was made, and the test words and tokens left out of it (held-out scores)
        "corpus_vocabulary_from": corpus.vocabulary_from, "corpus_test_only_words": corpus.test_only_words,
        "corpus_test_only_tokens": corpus.test_only_tokens,
        "model": model_spec.model, "model_label": model_spec.name, "num_topics": model_spec.num_topics, "seed": seed,
        "config_fingerprint": config.fingerprint(), "git_commit": git_commit(), "numba_threads": numba.get_num_threads(),
        "metrics": ",".join(model_spec.metrics or config.metrics), "top_n": ",".join(map(str, config.top_n)),
    }
    record.update({f"preprocessing.{k}": v for k, v in corpus.preprocessing.items()})
    oov, reference = config.coherence_settings()  # what coherence counted in, and did with words it lacks
    record.update({"coherence.oov": oov,
                   "coherence.reference": reference if isinstance(reference, str) else json.dumps(reference, sort_keys=True)})
    record.update(corpus_count_params(corpus))
    record.update({f"version.{k}": v for k, v in package_versions().items()})
    llm_metrics = set(model_spec.metrics or config.metrics) & set(config.llm_metrics())
    if llm_metrics:  # who judged and how (the key's variable's name, never the key)
        from topicbench.tasks.llm.judge import judge_record

        endpoint, judge = config.llm_settings()
        record.update({f"llm.{k}": v for k, v in endpoint.record().items()})
        record.update({f"llm.judge.{k}": v for k, v in judge_record(judge).items()})
    from topicbench.baselines.registry import MODELS

    plugin = MODELS.plugin_source(model_spec.model)
    if plugin is not None:  # a model of another installed package: which entry point, which version
        record.update({"model_plugin": plugin["entry_point"], f"version.{plugin['distribution']}": plugin["version"]})
    return record
