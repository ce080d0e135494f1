"""A search's studies in Optuna's durable storage: one study per (corpus, model), asked for trials
in batches and told each trial's objective values once all its seeds are fitted.

The storage lives beside the tracking store (:func:`default_storage`), so a search killed at any
point resumes where it stopped: trials that were asked and not told (RUNNING in the storage) are
the first ones the next run takes up, with their points as asked, and their seeds already fitted
are found in the tracking store by run key, never fitted again. A grid's points are enqueued once
(skipped when already there), so the grid is walked exactly once however often it is resumed.

A study answers for one definition only: its name ends with a digest of its space, objectives,
sampler, model, seeds and corpus (:meth:`ModelStudy.definition`), so a search run again after any
of them changed opens a new study and searches the new space (the fits they share are read from
the tracking store, not refitted), and never answers from trials of another space. A point a
sampler asks again is not fitted again, and a study whose space is used up stops asking.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from topicbench.core.validation import InputError

from topicbench.tasks.store.checks import lock_file_of, sqlite_path, uri_scheme
from topicbench.tasks.store.mlflow_schema import MLFLOW_TABLES

logger = logging.getLogger(__name__)

#: The file beside a sqlite tracking database that holds the searches' studies.
STUDIES_FILE = "optuna-studies.db"
#: Where the studies go for a tracking server or PostgreSQL store (on the machine that runs the
#: search, which is the one process that asks and tells).
LOCAL_STUDIES_FOLDER = Path("results") / "search"
#: How long a search waits for another process that creates the same sqlite storage.
STORAGE_LOCK_SECONDS = 300.0


def default_storage(tracking_uri: str) -> str:
    """Where a search keeps its studies: beside a sqlite tracking database (``optuna-studies.db``
    in its folder), else in ``results/search/optuna-studies.db`` under the working folder (a
    tracking server's machine is not this one's; a PostgreSQL store's alembic table is MLflow's)."""
    if tracking_uri.startswith("sqlite:///"):
        database = Path(tracking_uri[len("sqlite:///"):]).expanduser()
        return f"sqlite:///{(database.parent / STUDIES_FILE).as_posix()}"
    return f"sqlite:///{(LOCAL_STUDIES_FOLDER.resolve() / STUDIES_FILE).as_posix()}"


def check_storage(url: str, tracking_uri: str) -> None:
    """Before any work: ``url`` is a ``.journal`` file or an RDB URL, and not the tracking store.

    Optuna writes its own tables and its own ``alembic_version`` into an RDB storage, so the
    tracking database given as the storage (as its URL, or as its file) would be changed and then
    refused by both libraries; a journal appended to a database damages it.

    Raises
    ------
    InputError
        Naming the storage, what it is and the fix.
    """
    fix = (f"give --storage (or search.storage) another file, e.g. {default_storage(tracking_uri)} (the default), "
           "or a .journal file")
    tracking_file = sqlite_path(tracking_uri)
    if url.endswith(".journal") or "://" not in url:
        path = Path(url).expanduser()
        if tracking_file is not None and _same_file(path, tracking_file.expanduser()):
            raise InputError(f"the search storage {url} is the tracking database: {fix}")
        if "://" not in url and not url.endswith(".journal"):
            raise InputError(f"the search storage {url!r} is neither an Optuna RDB URL (sqlite:///PATH, "
                             "postgresql://USER@HOST/DATABASE) nor a .journal file")
        if path.is_dir() or (path.is_file() and _is_sqlite(path)):
            raise InputError(f"the search storage {url} is {'a folder' if path.is_dir() else 'a sqlite database'}, "
                             f"not an Optuna journal: {fix}")
        return
    database = sqlite_path(url)
    if database is not None:
        database = database.expanduser()
        if tracking_file is not None and _same_file(database, tracking_file.expanduser()):
            raise InputError(f"the search storage {url} is the tracking database: {fix}")
        if database.is_file() and MLFLOW_TABLES <= _sqlite_tables(database):
            raise InputError(f"the search storage {url} is an MLflow tracking database: {fix}")
    elif uri_scheme(url) == uri_scheme(tracking_uri) and _same_database(url, tracking_uri):
        raise InputError(f"the search storage {url} is the tracking database: {fix}")


def open_storage(url: str):
    """Optuna's storage at ``url``: a ``.journal`` file (JournalFileBackend, for shared
    filesystems) or any RDB URL; its folder is created. A new sqlite storage is created under a
    lock beside it (``optuna-studies.db.lock``): two searches starting at once would both create
    its tables and version row, and one would fail. Unusable: one line naming it."""
    import optuna
    from filelock import FileLock, Timeout

    try:
        if url.endswith(".journal"):
            from optuna.storages.journal import JournalFileBackend, JournalStorage

            path = Path(url).expanduser()
            path.parent.mkdir(parents=True, exist_ok=True)
            return JournalStorage(JournalFileBackend(str(path)))
        database = sqlite_path(url)
        if database is None:
            return optuna.storages.RDBStorage(url)
        database = database.expanduser()
        database.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(lock_file_of(database)))
        with lock.acquire(timeout=STORAGE_LOCK_SECONDS):
            return optuna.storages.RDBStorage(url, engine_kwargs={"connect_args": {"timeout": 60}})
    except Timeout:
        raise InputError(f"another process has held the lock {lock.lock_file} of the search storage for "
                         f"{STORAGE_LOCK_SECONDS:.0f} s; if no topicbench search is running, "
                         "delete that file") from None
    except Exception as error:  # noqa: BLE001 - any failure of the storage is the same one line
        raise InputError(f"search storage {url}: cannot be opened ({type(error).__name__}: {error}); give "
                         "search.storage an Optuna RDB URL or a .journal file") from None


def _same_file(path: Path, other: Path) -> bool:
    """Whether two paths name one file (links included), whether or not it exists yet."""
    if path.exists() and other.exists():
        return os.path.samefile(path, other)
    return path.resolve() == other.resolve()


def _is_sqlite(path: Path) -> bool:
    with open(path, "rb") as file:
        return file.read(16) == b"SQLite format 3\x00"


def _sqlite_tables(path: Path) -> set:
    """The tables of the sqlite database ``path`` (read-only; none for a file that is not one)."""
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            connection.close()
    except sqlite3.DatabaseError:
        return set()


def _same_database(url: str, other: str) -> bool:
    """Whether two SQLAlchemy URLs name one database (host, port and database; drivers and users aside)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        first, second = make_url(url), make_url(other)
    except ArgumentError:
        return False
    return (first.host, first.port, first.database) == (second.host, second.port, second.database)


def study_name(experiment: str, corpus: str, label: str) -> str:
    return f"{experiment}/{corpus}/{label}"


@dataclass
class PendingTrial:
    """A trial to fit: its number in its study, its point and the study's handle."""

    study: "ModelStudy"
    number: int
    point: dict
    trial: object  # optuna.trial.Trial


class ModelStudy:
    """The study of one (corpus, model label): its space, directions and sampler.

    Parameters
    ----------
    storage : optuna storage
    name : str
        The study as people read it (``experiment/corpus/label``); the stored study's name adds
        the digest of its :meth:`definition`.
    space : SearchSpace or None
        None: one point, the model as configured.
    objectives : sequence of Objective
    sampler : str
        ``grid``, ``tpe`` or ``nsga2``.
    trials : int or None
        The study's trial budget (a grid: its size): how many points it asks at most.
    seed : int
    fitted_as : dict, optional
        What else a trial's values depend on (the model and its settings, the seeds, the corpus's
        fingerprint), as JSON values: part of the definition.
    """

    def __init__(self, storage, name: str, space, objectives, sampler: str, trials: int | None, seed: int,
                 fitted_as: dict | None = None):
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)  # its INFO line per trial would bury the progress display
        self.name, self.space, self.sampler_name = name, space, sampler
        points = space.grid() if (space is not None and sampler == "grid") else [{}] if space is None else None
        self.budget = len(points) if points is not None else trials
        self.size = len(points) if points is not None else space.size()
        self.distributions = _distributions(space) if space is not None else {}
        definition = self.definition(space, objectives, sampler, fitted_as or {})
        digest = hashlib.sha256(json.dumps(definition, sort_keys=True, default=str).encode()).hexdigest()[:8]
        self.study = optuna.create_study(
            storage=storage, study_name=f"{name}@{digest}", directions=[o.direction for o in objectives],
            sampler=_sampler(sampler if points is None else "grid", seed), load_if_exists=True,
        )
        if "definition" not in self.study.user_attrs:  # what the digest stands for, for whoever opens the storage
            self.study.set_user_attr("definition", json.loads(json.dumps(definition, default=str)))
        if points is not None:
            for point in points:  # once: a point already in the study (in any state) is skipped
                self.study.enqueue_trial(point, skip_if_exists=True)

    @staticmethod
    def definition(space, objectives, sampler: str, fitted_as: dict) -> dict:
        """Everything a trial's values depend on: the space, the objectives and their directions,
        the sampler, and ``fitted_as``. Not the trial budget, the batch or the sampler's seed: a
        study run again with more trials goes on."""
        return {"space": dataclasses.asdict(space) if space is not None else None,
                "objectives": [[o.key, o.direction] for o in objectives], "sampler": sampler, **fitted_as}

    def pending(self, limit: int | None) -> list:
        """The trials to fit now: every one asked earlier and never told (a run that stopped),
        then new ones up to ``limit`` (None: as many as the budget leaves), until the space is
        used up. A point asked again is told at once (:meth:`_tell_repeat`), not fitted again."""
        import optuna
        from optuna.trial import TrialState

        resumed = [
            PendingTrial(self, frozen.number, dict(frozen.params), optuna.trial.Trial(self.study, frozen._trial_id))
            for frozen in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        ]
        earlier = self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL,
                                                               TrialState.RUNNING, TrialState.PRUNED))
        first_of = {}
        for frozen in earlier:
            first_of.setdefault(_point_key(frozen.params), frozen)
        budget_left = self.budget - len(earlier)  # a repeated point counts: the loop below ends
        room = budget_left if limit is None else min(budget_left, max(0, limit - len(resumed)))
        asked = []
        while len(asked) < room and budget_left > 0:
            if self.size is not None and len(first_of) >= self.size:
                logger.info("search study %s: every one of its %d points was asked; it stops", self.name, self.size)
                break
            trial = self.study.ask(self.distributions)
            budget_left -= 1
            point = dict(trial.params)
            if _point_key(point) in first_of:
                self._tell_repeat(trial, first_of[_point_key(point)])
                continue
            first_of[_point_key(point)] = trial
            asked.append(PendingTrial(self, trial.number, point, trial))
        return resumed + asked

    def _tell_repeat(self, trial, first) -> None:
        """Trial ``trial`` asks the point of trial ``first`` again: told ``first``'s values when it
        is complete (the sampler learns nothing new, and nothing is fitted), else PRUNED (as
        Optuna's FAQ does for repeated points); ``duplicate_of`` names ``first`` either way."""
        from optuna.trial import TrialState

        number = first.number
        trial.set_user_attr("duplicate_of", number)
        logger.info("search study %s: trial #%d asks the point of trial #%d again; not fitted again",
                    self.name, trial.number, number)
        if getattr(first, "state", None) == TrialState.COMPLETE:
            self.study.tell(trial, first.values if len(first.values) > 1 else first.values[0])
        else:
            self.study.tell(trial, state=TrialState.PRUNED)

    def tell(self, pending: PendingTrial, values: list, attributes: dict) -> None:
        """Record a trial's objective values (NaN in any: the trial FAILED, every seed's fit or
        score missing) and what the report reads of it."""
        from optuna.trial import TrialState

        for key, value in attributes.items():
            pending.trial.set_user_attr(key, value)
        if any(not math.isfinite(v) for v in values):
            self.study.tell(pending.number, state=TrialState.FAIL)
        else:
            self.study.tell(pending.number, values if len(values) > 1 else values[0])

    def finished_trials(self) -> list:
        """One finished trial per point, the first one told of it (complete before failed): a
        point asked again (here, or in a study of an earlier version that fitted repeats) is one
        point of the search, with its seeds once."""
        from optuna.trial import TrialState

        chosen = {}
        for trial in self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL)):
            key = _point_key(trial.params)
            if key not in chosen or (chosen[key].state != TrialState.COMPLETE and trial.state == TrialState.COMPLETE):
                chosen[key] = trial
        return sorted(chosen.values(), key=lambda trial: trial.number)


def _point_key(params: dict) -> tuple:
    """A point as a hashable key (its dimensions in name order)."""
    return tuple(sorted(params.items()))


def _sampler(name: str, seed: int):
    import optuna

    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed)
    return optuna.samplers.RandomSampler(seed=seed)  # a grid's trials are all enqueued: never consulted


def _distributions(space) -> dict:
    """Optuna distributions of a space's dimensions: a list is categorical (its values in order), a
    range integer or float, stepped or log-uniform."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    distributions = {}
    for d in space.dimensions:
        if d.values is not None:
            distributions[d.name] = CategoricalDistribution(list(d.values))
        elif d.is_integer:
            distributions[d.name] = IntDistribution(int(d.low), int(d.high), step=int(d.step or 1), log=d.log)
        else:
            distributions[d.name] = FloatDistribution(float(d.low), float(d.high), step=d.step, log=d.log)
    return distributions


def storage_label(url: str) -> str:
    """The storage as the command's last lines name it."""
    return url if not url.startswith("sqlite:///") else url[len("sqlite:///"):]

