"""What a search trial scored, read back from its seeds' tracked runs: each objective per seed, the
stability of its seeds' topics (from the runs' ``output/`` artifacts), and its cost.

Reading from the store, not from the fits just made, gives the same answer for a trial fitted now,
fitted by an earlier (interrupted) run of the search, or fitted by another process.
"""

from __future__ import annotations

import logging
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from topicbench.core.search_space import STABILITY
from topicbench.tasks.store.fit_record import METRIC_CONTEXT_TAG

logger = logging.getLogger(__name__)


@dataclass
class TrialResult:
    """One trial's seeds as tracked.

    Attributes
    ----------
    seeds : list of int
        The seeds whose runs finished.
    missing_seeds : list of int
        Seeds with no finished run (their fit failed).
    per_seed : dict
        Objective key -> values, one per finished seed (NaN where a score is missing); for
        ``stability``, one per pair of seeds (NaN for a deterministic trial: not applicable).
    fit_seconds : list of float
    run_ids : list of str
    context_builds : int
        Of the seeds' scorings, how many built the corpus's metric context (the others reused one).
    deterministic : bool
        Its seeds' fits were read and are identical (the model ignores its seed): stability, which
        would be 1 by construction, does not apply to it and is not scored.
    """

    seeds: list = field(default_factory=list)
    missing_seeds: list = field(default_factory=list)
    per_seed: dict = field(default_factory=dict)
    fit_seconds: list = field(default_factory=list)
    run_ids: list = field(default_factory=list)
    context_builds: int = 0
    deterministic: bool = False

    def value(self, key: str) -> float:
        """The objective's value: the mean of its finite per-seed values (NaN for none)."""
        finite = [v for v in self.per_seed.get(key, []) if math.isfinite(v)]
        return sum(finite) / len(finite) if finite else math.nan

    def attributes(self) -> dict:
        """What the study keeps of the trial (JSON values)."""
        return {"seeds": self.seeds, "missing_seeds": self.missing_seeds,
                "per_seed": {k: [_json_number(v) for v in vs] for k, vs in self.per_seed.items()},
                "fit_seconds": self.fit_seconds, "run_ids": self.run_ids, "context_builds": self.context_builds,
                "deterministic": self.deterministic}


def trial_result(client, jobs: list, runs_by_key: dict, objectives, stability_measure: str) -> TrialResult:
    """The :class:`TrialResult` of a trial whose seeds are ``jobs`` (one per seed), their finished
    runs found in ``runs_by_key``."""
    result = TrialResult()
    finished = []
    for job in jobs:
        run = runs_by_key.get(job.key)
        if run is None:
            result.missing_seeds.append(job.seed)
            continue
        finished.append((job, run))
        result.seeds.append(job.seed)
        result.run_ids.append(run.info.run_id)
        result.fit_seconds.append(float(run.data.metrics.get("fit_seconds", math.nan)))
        result.context_builds += run.data.tags.get(METRIC_CONTEXT_TAG) == "built"
    for objective in objectives:
        if objective.key == STABILITY:
            scores, result.deterministic = seed_pair_stability(client, [run for _, run in finished], stability_measure)
            result.per_seed[STABILITY] = scores
        else:
            result.per_seed[objective.key] = [float(run.data.metrics.get(objective.tracked_key, math.nan))
                                              for _, run in finished]
    return result


def seed_pair_stability(client, runs: list, measure: str) -> tuple[list, bool]:
    """(mean matched similarity of every pair of ``runs``' topics, whether their fits are
    identical), read from their ``output/`` artifacts (downloaded to a temporary folder removed
    afterwards); no pairs for fewer than two runs. Identical fits (a deterministic model) give NaN
    for every pair: their similarity is 1 by construction, not a stability a search may reward."""
    from topicbench.core.metrics.stability import seed_stability
    from topicbench.core.output import TopicModelOutput

    if len(runs) < 2:
        return [], False
    with tempfile.TemporaryDirectory(prefix="topicbench-stability-") as folder:
        outputs = []
        for i, run in enumerate(runs):
            target = Path(folder) / str(i)
            target.mkdir()
            client.download_artifacts(run.info.run_id, "output", str(target))
            outputs.append(TopicModelOutput.load(target / "output"))
        if identical_fits(outputs):
            pairs = len(outputs) * (len(outputs) - 1) // 2
            return [math.nan] * pairs, True
        summary = seed_stability(outputs, measure)
    return [float(score.mean_matched_similarity) for score in summary.scores], False


def identical_fits(outputs: list) -> bool:
    """Whether every output has the same topics as the first (the same topic-word matrix, exactly)."""
    import numpy as np

    def dense(output):
        matrix = output.topic_word_matrix
        return matrix.toarray() if hasattr(matrix, "toarray") else np.asarray(matrix)

    if len({output.topic_word_matrix.shape for output in outputs}) > 1:  # a different K: not the same fit
        return False
    first = dense(outputs[0])
    return all(np.array_equal(first, dense(other)) for other in outputs[1:])


def fit_topics(client, run_id: str) -> list | None:
    """A tracked fit's topics (its ``topics.json``), each its top words in one string; None where
    the run has none (the report says so rather than failing)."""
    import json

    try:
        with tempfile.TemporaryDirectory(prefix="topicbench-topics-") as folder:
            path = client.download_artifacts(run_id, "topics.json", folder)
            records = json.loads(Path(path).read_text(encoding="utf-8"))
        return [str(record["words"]) for record in records]
    except Exception as error:  # a report without the topics is still a report
        logger.warning("run %s: its topics.json could not be read (%s)", run_id, error)
        return None


def _json_number(value: float):
    return float(value) if math.isfinite(value) else None
