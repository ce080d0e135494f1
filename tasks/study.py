"""A search's studies in Optuna's durable storage: one study per (corpus, model), asked for trials
in batches and told each trial's objective values once all its seeds are fitted.

The storage lives beside the tracking store (:func:`default_storage`), so a search killed at any
point resumes where it stopped: trials that were asked and not told (RUNNING in the storage) are
the first ones the next run takes up, with their points as asked, and their seeds already fitted
are found in the tracking store by run key, never fitted again. A grid's points are enqueued once
(skipped when already there), so the grid is walked exactly once however often it is resumed.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path

from topicbench.core.validation import InputError

logger = logging.getLogger(__name__)

#: The file beside a sqlite tracking database that holds the searches' studies.
STUDIES_FILE = "optuna-studies.db"
#: Where the studies go for a tracking server or PostgreSQL store (on the machine that runs the
#: search, which is the one process that asks and tells).
LOCAL_STUDIES_FOLDER = Path("results") / "search"


def default_storage(tracking_uri: str) -> str:
    """Where a search keeps its studies: beside a sqlite tracking database (``optuna-studies.db``
    in its folder), else in ``results/search/optuna-studies.db`` under the working folder (a
    tracking server's machine is not this one's; a PostgreSQL store's alembic table is MLflow's)."""
    if tracking_uri.startswith("sqlite:///"):
        database = Path(tracking_uri[len("sqlite:///"):]).expanduser()
        return f"sqlite:///{(database.parent / STUDIES_FILE).as_posix()}"
    return f"sqlite:///{(LOCAL_STUDIES_FOLDER.resolve() / STUDIES_FILE).as_posix()}"


def open_storage(url: str):
    """Optuna's storage at ``url``: a ``.journal`` file (JournalFileBackend, for shared
    filesystems) or any RDB URL; its folder is created. Unusable: one line naming it."""
    import optuna

    try:
        if url.endswith(".journal"):
            from optuna.storages.journal import JournalFileBackend, JournalStorage

            path = Path(url).expanduser()
            path.parent.mkdir(parents=True, exist_ok=True)
            return JournalStorage(JournalFileBackend(str(path)))
        if url.startswith("sqlite:///"):
            Path(url[len("sqlite:///"):]).expanduser().parent.mkdir(parents=True, exist_ok=True)
        return optuna.storages.RDBStorage(url, engine_kwargs={"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {})
    except Exception as error:  # noqa: BLE001 - any failure of the storage is the same one line
        raise InputError(f"search storage {url}: cannot be opened ({type(error).__name__}: {error}); give "
                         "search.storage an Optuna RDB URL or a .journal file") from None


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
    space : SearchSpace or None
        None: one point, the model as configured.
    objectives : sequence of Objective
    sampler : str
        ``grid``, ``tpe`` or ``nsga2``.
    trials : int or None
        The study's trial budget (a grid: its size).
    seed : int
    """

    def __init__(self, storage, name: str, space, objectives, sampler: str, trials: int | None, seed: int):
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)  # its INFO line per trial would bury the progress display
        self.name, self.space, self.sampler_name = name, space, sampler
        points = space.grid() if (space is not None and sampler == "grid") else [{}] if space is None else None
        self.budget = len(points) if points is not None else trials
        self.distributions = _distributions(space) if space is not None else {}
        self.study = optuna.create_study(
            storage=storage, study_name=name, directions=[o.direction for o in objectives],
            sampler=_sampler(sampler if points is None else "grid", seed), load_if_exists=True,
        )
        stored = self.study.directions
        if [d.name.lower() for d in stored] != [o.direction for o in objectives]:
            raise InputError(f"search study {name!r} was run with other objectives ({len(stored)}, "
                             f"{', '.join(d.name.lower() for d in stored)}); give the search another experiment name")
        if points is not None:
            for point in points:  # once: a point already in the study (in any state) is skipped
                self.study.enqueue_trial(point, skip_if_exists=True)

    def pending(self, limit: int | None) -> list:
        """The trials to fit now: every one asked earlier and never told (a run that stopped),
        then new ones up to ``limit`` (None: as many as the budget leaves)."""
        import optuna
        from optuna.trial import TrialState

        resumed = [
            PendingTrial(self, frozen.number, dict(frozen.params), optuna.trial.Trial(self.study, frozen._trial_id))
            for frozen in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        ]
        started = len(self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL,
                                                                    TrialState.RUNNING, TrialState.PRUNED)))
        room = max(0, self.budget - started)
        if limit is not None:
            room = min(room, max(0, limit - len(resumed)))
        asked = []
        for _ in range(room):
            trial = self.study.ask(self.distributions)
            asked.append(PendingTrial(self, trial.number, dict(trial.params), trial))
        return resumed + asked

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
        from optuna.trial import TrialState

        return self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL))


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

