"""The state of a benchmark's runs: which are done, claimed by another process, spooled or to be
fitted, and what became of each fit (logged, kept in the spool, or recorded FAILED).

A run is a :class:`Job`, known across processes by its key (everything that decides its result).
No fit is lost to the store: one that cannot be logged (the tracking server went away, the store's
disk filled up, an interrupt during its logging) is kept in the spool
(:mod:`~topicbench.tasks.store.spool`), and the next run of the same config logs it without
refitting. A spooled fit that cannot be logged is named once in a warning with why, moved aside
(:meth:`~topicbench.tasks.store.spool.Spool.set_aside`) and fitted again. The :class:`Ledger`
keeps what became of this process's runs, for the flow's summary and its last line.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from topicbench.baselines.registry import MODELS
from topicbench.core.corpus import Corpus
from topicbench.tasks.llm.judge import judge_record
from topicbench.tasks.store.checks import TrackingError, store_unavailable
from topicbench.tasks.store.fit_record import FitRecord
from topicbench.tasks.store.interrupts import exception_chain, raise_interrupt_behind
from topicbench.tasks.store.records import settings_key
from topicbench.tasks.store.spool import Spool, UnusableEntry
from topicbench.tasks.store.tracking import Tracker, claimed_params, log_failed_run, log_model_run, run_record

from topicbench.flows.config.model import BenchmarkConfig, CorpusSpec, ModelSpec
from .console import CONSOLE


@dataclass(frozen=True, eq=False)
class Job:
    """One (corpus, model, seed) run; ``matched_to``: the label of the model whose K on this corpus
    and seed it was given (``num_topics: {match: LABEL}``), recorded with the run."""

    corpus: CorpusSpec
    corpus_data: Corpus
    model: ModelSpec
    seed: int
    config: BenchmarkConfig
    matched_to: str | None = None

    @property
    def metrics(self) -> tuple:
        return tuple(self.model.metrics) if self.model.metrics is not None else tuple(self.config.metrics)

    @property
    def key(self) -> str:
        """Hash of everything that decides the run's result (resume matches on it)."""
        parts = [self.corpus_data.fingerprint(), self.model.model, self.model.num_topics, self.model.settings,
                 self.seed, sorted(self.metrics), list(self.config.top_n)]
        if self.llm is not None:  # who judged, and how (runs without LLM metrics keep their keys)
            endpoint, judge = self.llm
            parts.append({"llm_model": endpoint.model, "judge": judge_record(judge)})
        if self.config.coherence_settings() != ("error", "train"):  # scored otherwise (default runs keep their keys)
            parts.append({"coherence": self.config.coherence_settings()})
        return settings_key(*parts)

    @property
    def llm(self):
        """(endpoint, judge settings) when this run's metrics or its model (TopicGPT) ask an LLM, else None."""
        asking = set(self.metrics) & set(self.config.llm_metrics()) or getattr(MODELS.get(self.model.model), "asks_llm", False)
        return self.config.llm_settings() if asking else None

    @property
    def label(self) -> str:
        return f"{self.model.name}@{self.corpus.name} seed {self.seed}"

    @property
    def embedding_key(self):
        """(corpus, embedding model) when the model reads document embeddings, else None."""
        if not getattr(MODELS.get(self.model.model), "uses_document_embeddings", False):
            return None
        return (self.corpus.name, self.model.settings.get("embedding_model"))

    def record(self) -> dict:
        record = run_record(self.corpus_data, self.model, self.seed, self.config)
        if self.matched_to is not None:  # num_topics is then the K that model used here
            record["num_topics_matched_to"] = self.matched_to
        return record


#: The metric of a finished fit that holds the K it used (E-LDA's and HDP's are their fits' own).
TOPICS_USED_METRIC = "num_topics_used"


def matched_jobs(config: BenchmarkConfig, splits: dict, fitted: list, topics_used: dict) -> tuple:
    """The runs of the config's models whose K is matched (``num_topics: {match: LABEL}``), each at
    the K the model LABEL used on the same corpus and seed, and a line for each run that has none
    because that fit did not finish. ``fitted``: the jobs of the models with a K of their own;
    ``topics_used``: run key -> the K of its finished fit (:data:`TOPICS_USED_METRIC`)."""
    by_run = {(job.corpus.name, job.model.name, job.seed): job for job in fitted}
    jobs, missing = [], []
    for corpus in config.corpora:
        for model in (spec for spec in config.models if spec.matched_label is not None):
            for seed in config.seeds:
                target = by_run[(corpus.name, model.matched_label, seed)]
                k = topics_used.get(target.key)
                if k is None or not k == k:  # not finished, or a store that logged no K (NaN)
                    missing.append(f"{model.name}@{corpus.name} seed {seed}: not fitted, as its K matches "
                                   f"{target.label}, which did not finish (its run failed, was stopped or logged no "
                                   f"{TOPICS_USED_METRIC}); fix that run and rerun the same command")
                    continue
                jobs.append(Job(corpus, splits[corpus.name][0], model.with_topics(int(round(k))), seed, config,
                                matched_to=model.matched_label))
    return jobs, missing


@dataclass
class Ledger:
    """What became of the runs this process claimed: labels logged (``from_spool`` of them logged
    from the spool), failed (with their error), spooled; and the error that showed the store gone."""

    spool: Spool
    logged: list = field(default_factory=list)
    from_spool: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    spooled: list = field(default_factory=list)
    store_gone: BaseException | None = None


# -- which runs are done, held elsewhere, or this process's -----------------------------------------


def sort_claims(jobs: list, claims: dict, log) -> tuple:
    """(jobs finished elsewhere or before, jobs other processes hold, jobs this process claimed),
    each in the order of ``jobs``; says so on the console."""
    finished = [job for job in jobs if claims[job].finished_by]
    held = [job for job in jobs if claims[job].held_by]
    for job in held:
        log.info("%s: claimed by %s (waited for after this process's runs)", job.label, claims[job].held_by,
                 extra=CONSOLE)
    won = [job for job in jobs if claims[job].run_id]
    log.info("%d runs: %d already finished (skipped), %d fitted by other processes, %d to run",
             len(jobs), len(finished), len(held), len(won), extra=CONSOLE)
    return finished, held, won


@dataclass(frozen=True)
class HeldRuns:
    """One look at runs other processes held: those now ``finished`` elsewhere, those this process
    ``won`` (claimed again, with their ``claims``), and those still ``held``."""

    finished: list
    won: list
    claims: dict
    held: list


def look_at_held(held: list, parent: str, tracker: Tracker) -> HeldRuns:
    """Where the runs of ``held`` stand now; those whose claim ended otherwise than FINISHED
    (KILLED, FAILED, or its owner gone) are claimed again under ``parent``."""
    states = tracker.claim_states(held)
    finished = [job for job, state in states.items() if state == "finished"]
    free = [job for job, state in states.items() if state is None]
    still_held = [job for job, state in states.items() if state == "held"]
    if not free:
        return HeldRuns(finished, [], {}, still_held)
    claims = tracker.claim_jobs(parent, free)  # another process may claim them first: any outcome is possible
    return HeldRuns(finished + [job for job in free if claims[job].finished_by],
                    [job for job in free if claims[job].run_id], claims,
                    still_held + [job for job in free if claims[job].held_by])


# -- what became of each fit ------------------------------------------------------------------------


def record_failure(tracker: Tracker, run_id: str, job: Job, error: BaseException, ledger: Ledger) -> None:
    """A failed fit as its FAILED run (unless the store is gone: the claim then goes stale and the
    next run fits it again)."""
    ledger.failed.append(f"{job.label}: {type(error).__name__}: {error}")
    if ledger.store_gone is None:
        try:
            log_failed_run(tracker, run_id, job, error)
        except Exception as failure:
            raise_interrupt_behind(failure)
            if not store_unavailable(failure):
                raise
            ledger.store_gone = failure
    tracker.open_runs.discard(run_id)


def log_or_spool(tracker: Tracker, run_id: str, job: Job, scored, ledger: Ledger, log) -> None:
    """Log a scored fit to its claimed run and remove its artifacts' temporary folder; or keep it
    in the spool when the store is gone or full, or when an interrupt stops its logging (which is
    then raised again)."""
    record = FitRecord.of(scored, job.label)
    if ledger.store_gone is None:
        try:
            with scored.artifacts.local_folder() as folder:
                log_model_run(tracker, run_id, record, folder)
        except BaseException as error:
            _spool(ledger, job, record, scored.artifacts)
            if not (isinstance(error, Exception) and store_unavailable(error)):
                log.warning("%s: its logging stopped (%s); the fit is kept in %s", job.label, short_reason(error),
                            ledger.spool.folder)
                raise_interrupt_behind(error)
                raise
            ledger.store_gone = error
            log.warning("the tracking store at %s stopped answering (%s): finished fits are kept in %s from now on, "
                        "to be logged by the same command once it answers", tracker.tracking_uri,
                        short_reason(error), ledger.spool.folder, extra=CONSOLE)
        else:
            ledger.logged.append(job.label)
            scored.artifacts.remove()
        tracker.open_runs.discard(run_id)
        return
    _spool(ledger, job, record, scored.artifacts)
    tracker.open_runs.discard(run_id)


def _spool(ledger: Ledger, job: Job, record: FitRecord, artifacts) -> None:
    try:
        ledger.spool.put(job.key, record, artifacts)
    except OSError as error:
        raise TrackingError(
            f"could not log the fit of {job.label}, nor keep it in the spool {ledger.spool.folder} ({error}); its "
            f"artifacts are in {artifacts.path or 'memory'}: free some space, or set TOPICBENCH_SPOOL to another disk"
        ) from error
    ledger.spooled.append(job.label)


# -- spooled fits of earlier runs -------------------------------------------------------------------


def log_spooled_fits(todo: list, claims: dict, tracker: Tracker, ledger: Ledger, progress, log) -> list:
    """Log the spooled fits of ``todo`` (fitted by an earlier run that could not log them) to
    their new claims; returns the jobs still to fit (no usable spooled fit)."""
    spooled, to_fit = ledger.spool.keys(), []
    for job in todo:
        if job.key in spooled:
            spooled.discard(job.key)  # two jobs of one key: the second is fitted
            if _log_spooled(tracker, claims[job].run_id, job, ledger, log):
                progress.run_done(job.label)
                continue
        to_fit.append(job)
    return to_fit


def _log_spooled(tracker: Tracker, run_id: str, job: Job, ledger: Ledger, log) -> bool:
    """Log the spooled fit of ``job`` to its new claim, then drop it from the spool (unless the
    store is gone again: it stays there). An entry that cannot be logged is moved aside: when
    that shows before anything is logged, False (the job is to be fitted now); when the store
    refuses it midway, its run is recorded FAILED (the next run fits it again)."""
    if ledger.store_gone is None:
        try:
            record, artifacts = ledger.spool.entry(job.key)
            _check_params_agree(record, job)
        except UnusableEntry as error:
            _set_aside(ledger, job, str(error), "fitted again now", log)
            return False
        record = replace(record, tags={**record.tags, "topicbench.logged_from_spool": str(ledger.spool.folder / job.key)})
        try:
            log_model_run(tracker, run_id, record, artifacts)
        except Exception as error:
            raise_interrupt_behind(error)
            if not store_unavailable(error):
                reason = f"the store refused it: {short_reason(error)}"
                aside = _set_aside(ledger, job, reason, "its run is FAILED and the next run fits it again", log)
                record_failure(tracker, run_id, job, UnusableEntry(f"its spooled fit ({aside}) could not be logged: "
                                                                   f"{reason}"), ledger)
                return True
            ledger.store_gone = error
        else:
            ledger.spool.remove(job.key)
            ledger.logged.append(job.label)
            ledger.from_spool.append(job.label)
            log.info("%s: logged from the spool, not refitted", job.label, extra=CONSOLE)
            return True
    ledger.spooled.append(job.label)
    tracker.open_runs.discard(run_id)
    return True


def _check_params_agree(record: FitRecord, job: Job) -> None:
    """An :class:`UnusableEntry` when ``record`` gives a param of ``job``'s claimed run another
    value (MLflow refuses to change a param, and would refuse it after logging part of it)."""
    claimed = claimed_params(job)
    clashes = sorted(name for name, value in record.params.items() if claimed.get(name, value) != value)
    if clashes:
        raise UnusableEntry(f"its params {', '.join(clashes[:5])} differ from those of the run it was fitted for "
                            f"(e.g. {clashes[0]}={record.params[clashes[0]]!r}, not {claimed[clashes[0]]!r})"[:500])


def _set_aside(ledger: Ledger, job: Job, reason: str, outcome: str, log) -> str:
    """Move the spool entry of ``job`` aside (kept, never deleted) and say so once, with
    ``reason`` and ``outcome``; where it went (or, if it could not be moved, where it is)."""
    entry = ledger.spool.folder / job.key
    try:
        where = f"moved to {ledger.spool.set_aside(job.key, reason)}"
    except OSError as error:
        where = f"left in place, as it could not be moved aside ({error.strerror or error})"
    log.warning("%s: the spooled fit in %s cannot be logged (%s); %s, %s", job.label, entry, reason, where, outcome,
                extra=CONSOLE)
    return where


# -- a store gone ---------------------------------------------------------------------------------


def store_gone_message(tracking_uri: str, ledger: Ledger) -> str:
    """The last line of a benchmark whose store stopped answering: why, and where its fits are."""
    reason = short_reason(ledger.store_gone) if ledger.store_gone is not None else "unknown"
    if not ledger.spooled:
        return (f"the tracking store at {tracking_uri} stopped answering ({reason}); no fit was lost: the same "
                f"command resumes once it answers")
    return (f"the tracking store at {tracking_uri} stopped answering ({reason}): {len(ledger.spooled)} fitted runs "
            f"are kept in {ledger.spool.folder}; run the same command once the store answers to log them without "
            f"refitting")


def short_reason(error: BaseException) -> str:
    """What the store's failure was, in a few words."""
    text = " ".join(str(cause) for cause in exception_chain(error))
    for words, reason in (("Connection refused", "connection refused"), ("disk is full", "its disk is full"),
                          ("No space left", "its disk is full"), ("timed out", "timed out"),
                          ("Max retries exceeded", "no answer")):
        if words in text:
            return reason
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
