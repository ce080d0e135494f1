"""How well a topic score agrees with people: Spearman's ρ against human judgments of the same
topics, with bootstrap intervals, and whether it ranks the models as people do.

The judgments are Hoyle et al.'s (NeurIPS 2021): 300 topics of MALLET LDA, D-VAE and ETM on
Wikitext and the New York Times, each with its top 20 words, the mean of people's 1-3 ratings,
the share of people who found the intruder, and the automated coherences Hoyle et al. computed
(``all_data.json`` of ``ahoho/topics``; ``topicbench data fetch hoyle2021``). Stammbach et al.
(EMNLP 2023) compared LLM judges with these the same way: ρ over topics, bootstrapped.

The 300 topics are 6 groups of 50 (2 datasets × 3 models): topics of one model on one dataset
share its vocabulary, its quality and people's rating session, so they are not independent. The
bootstrap resamples those (dataset, model) clusters whole, not topics (with 6 clusters, a wide
interval: what the design supports); a file with a single group is resampled by topic, and says
that it treats the topics as independent.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..io import check_regular_file, read_text
from .bootstrap import BOOTSTRAP_RESAMPLES, MIN_CLUSTERS, cluster_resamples, paired_resamples, percentile_interval
from ..validation import InputError

#: The automated coherences of the file reported beside an LLM's scores: key -> name.
AUTOMATED_MEASURES = {"c_npmi_10_full": "npmi", "c_v_full": "cv", "c_uci_full": "uci", "u_mass_full": "umass"}
#: People's mean rating is on Hoyle et al.'s 1-3 scale; intrusion accuracy is the share of people
#: who found the intruder.
RATING_RANGE, INTRUSION_RANGE = (1.0, 3.0), (0.0, 1.0)
#: Judgments of a few hundred topics are a few MiB at most; a far larger file is not one.
MAX_JUDGMENTS_BYTES = 64 * 2**20
#: The fix every message of a judgments file ends with.
FIX = "give Hoyle et al.'s all_data.json (`topicbench data fetch hoyle2021`) or a file of its shape"
#: A judge whose answers are (nearly) all the same cannot be measured against people: its ρ or τ
#: is undefined, or rests on the few items it answered otherwise, and a closeness to people's
#: mean (the alternative annotator test) rewards a constant near that mean. Answers are compared
#: rounded to :data:`CONSTANT_DECIMALS` (a fit expected from log-probabilities varies in its
#: last digits), and called constant when one value is at least :data:`CONSTANT_SHARE` of them.
CONSTANT_SHARE, CONSTANT_DECIMALS = 0.9, 1
#: What a table shows for an agreement of a judge with constant answers.
NOT_MEASURABLE = "not measurable: constant answers"
#: A score whose ρ against people is below this, or whose interval reaches 0, is called weak.
WEAK_RHO = 0.3


@dataclass(frozen=True)
class JudgedTopic:
    """One topic people judged: where it comes from, its words (best first), people's mean
    rating (1-3) and intrusion accuracy (0-1), and the automated coherences of the file."""

    dataset: str
    model: str
    index: int
    words: tuple
    human_rating: float
    human_intrusion: float
    automated: dict = field(default_factory=dict)


def read_human_judgments(path) -> list:
    """The topics of an ``all_data.json`` (Hoyle et al. 2021), in file order, every level checked.

    The file maps dataset -> model -> ``{"topics": [[word, ...], ...], "metrics":
    {"ratings_scores_avg": [...], "intrusion_scores_avg": [...], <automated coherences>}}``, one
    rating, intrusion accuracy and coherence per topic (a coherence may be null: not computed).

    Raises
    ------
    JudgmentsError
        The file is not a regular file, too large, not UTF-8 JSON, or not of that shape; the
        message names the place in the file, e.g. ``all_data.json:
        wikitext.mallet.metrics.ratings_scores_avg[3] is missing``.
    """
    path = check_regular_file(path, "judgments file")
    size = path.stat().st_size
    if size > MAX_JUDGMENTS_BYTES:
        raise JudgmentsError(f"{path} is {size / 2**20:.0f} MiB; a judgments file is at most "
                             f"{MAX_JUDGMENTS_BYTES // 2**20} MiB: {FIX}")
    text = read_text(path, "judgments file")
    try:
        data = json.loads(text, object_pairs_hook=_object_without_repeated_keys)
    except json.JSONDecodeError as error:
        raise JudgmentsError(f"{path} is not JSON (line {error.lineno}, column {error.colno}: {error.msg}); {FIX}") from None
    except _RepeatedKey as error:
        raise JudgmentsError(f"{path}: the key {error.args[0]!r} is given twice in one object (a JSON reader would "
                             f"keep only the last): remove one") from None
    except RecursionError:
        raise JudgmentsError(f"{path} is nested too deeply to be a judgments file; {FIX}") from None

    def problem(where: str, what: str) -> JudgmentsError:
        return JudgmentsError(f"{path}: {where} {what}; {FIX}")

    return list(_judged_topics(data, problem))


class JudgmentsError(InputError):
    """A human-judgments file that is not of Hoyle et al.'s shape: the message names the place."""


class _RepeatedKey(ValueError):
    """A key given twice in one JSON object."""


def _object_without_repeated_keys(pairs: list) -> dict:
    found = {}
    for key, value in pairs:
        if key in found:
            raise _RepeatedKey(key)
        found[key] = value
    return found


def _judged_topics(data, problem):
    """Each :class:`JudgedTopic` of the parsed file ``data``; ``problem(where, what)`` makes the
    error for a place in it (``where`` as ``dataset.model.metrics.key[index]``)."""
    if not isinstance(data, dict) or not data:
        raise problem("the file", f"is {_kind(data)}, expected an object of datasets")
    for dataset, by_model in data.items():
        if not isinstance(by_model, dict) or not by_model:
            raise problem(dataset, f"is {_kind(by_model)}, expected an object of models")
        for model, entry in by_model.items():
            where = f"{dataset}.{model}"
            if not isinstance(entry, dict):
                raise problem(where, f"is {_kind(entry)}, expected an object with topics and metrics")
            for key in ("topics", "metrics"):
                if key not in entry:
                    raise problem(f"{where}.{key}", "is missing")
            words = _topic_words(entry["topics"], f"{where}.topics", problem)
            metrics = entry["metrics"]
            if not isinstance(metrics, dict):
                raise problem(f"{where}.metrics", f"is {_kind(metrics)}, expected an object of per-topic lists")
            ratings = _per_topic(metrics, "ratings_scores_avg", len(words), f"{where}.metrics", problem, RATING_RANGE)
            intrusion = _per_topic(metrics, "intrusion_scores_avg", len(words), f"{where}.metrics", problem,
                                   INTRUSION_RANGE)
            automated = {name: _per_topic(metrics, key, len(words), f"{where}.metrics", problem, None)
                         for key, name in AUTOMATED_MEASURES.items() if key in metrics}
            for index, topic in enumerate(words):
                yield JudgedTopic(dataset, model, index, topic, ratings[index], intrusion[index],
                                  {name: values[index] for name, values in automated.items()})


def _topic_words(topics, where: str, problem) -> list:
    """Each topic of ``topics`` as a tuple of words: a non-empty list of non-empty strings."""
    if not isinstance(topics, list) or not topics:
        raise problem(where, f"is {_kind(topics)}, expected a non-empty list of topics (lists of words)")
    for index, topic in enumerate(topics):
        if not isinstance(topic, list) or not topic:
            raise problem(f"{where}[{index}]", f"is {_kind(topic)}, expected a non-empty list of words")
        for position, word in enumerate(topic):
            if not isinstance(word, str) or not word.strip():
                raise problem(f"{where}[{index}][{position}]", f"is {_kind(word)}, expected a word")
    return [tuple(topic) for topic in topics]


def _per_topic(metrics: dict, key: str, n_topics: int, where: str, problem, scale) -> list:
    """``metrics[key]``, one number per topic, as floats. With a ``scale`` (people's judgments)
    every value must be given and lie in it; without (an automated coherence), null is NaN."""
    where = f"{where}.{key}"
    if key not in metrics:
        raise problem(where, "is missing")
    values = metrics[key]
    if not isinstance(values, list):
        raise problem(where, f"is {_kind(values)}, expected a list with one number per topic")
    if len(values) != n_topics:
        raise problem(where, f"has {len(values)} values for {n_topics} topics")
    numbers = []
    for index, value in enumerate(values):
        if value is None and scale is None:
            numbers.append(math.nan)
            continue
        if value is None or (isinstance(value, float) and math.isnan(value)):
            raise problem(f"{where}[{index}]", "is missing")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isinf(value):
            raise problem(f"{where}[{index}]", f"is {_kind(value)}, expected a number")
        if scale is not None and not scale[0] <= value <= scale[1]:
            raise problem(f"{where}[{index}]", f"is {value}, outside {scale[0]:g}-{scale[1]:g}")
        numbers.append(float(value))
    return numbers


def _kind(value) -> str:
    """``value`` in a few words, for messages: ``null``, ``a string ('x')``, ``an object``."""
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        kind = "an object" if isinstance(value, dict) else "a list"
        return kind if value else f"an empty {kind.split()[1]}"
    if isinstance(value, str):
        return f"a string ({value[:40]!r})" if value.strip() else "an empty string"
    return repr(value)[:40]


@dataclass(frozen=True)
class Correlation:
    """Spearman's ρ of a score against people's judgments over ``n`` topics, with a percentile
    bootstrap interval; ``method`` says what was resampled ((dataset, model) clusters, or topics
    treated as independent) and how often."""

    rho: float
    low: float
    high: float
    n: int
    method: str = ""

    @property
    def weak(self) -> bool:
        return not math.isfinite(self.rho) or self.rho < WEAK_RHO or not self.low > 0

    def as_text(self) -> str:
        if not math.isfinite(self.rho):
            return "–"
        return f"{self.rho:.2f} [{self.low:.2f}, {self.high:.2f}]"


@dataclass(frozen=True)
class ConstantAnswers:
    """A judge's answers that are (nearly) all one value: the share of the ``items`` answered
    that gave the most common ``value`` (within its group, where answers are grouped)."""

    value: float
    share: float
    items: int

    def as_text(self, what: str = "items") -> str:
        return f"{NOT_MEASURABLE} ({self.value:g} to {self.share:.0%} of {self.items} {what})"


def constant_answers(values, groups=None, *, share: float = CONSTANT_SHARE) -> ConstantAnswers | None:
    """Whether the answers ``values`` (NaN: not answered, left out) are constant or nearly: one
    value, rounded to :data:`CONSTANT_DECIMALS`, for at least ``share`` of them, or no variance.
    With ``groups`` (one label per answer, e.g. a document's topic), an answer counts as its
    group's most common one: a ranking of each topic's documents that ties them all is constant
    though the tie's value differs with the topic's size. None when they vary (or none was given)."""
    import pandas as pd

    frame = pd.DataFrame({"value": np.round(np.asarray(values, dtype=np.float64), CONSTANT_DECIMALS),
                          "group": 0 if groups is None else list(groups)})
    frame = frame[np.isfinite(frame["value"])]
    if frame.empty:
        return None
    modal = frame.groupby("group")["value"].agg(lambda found: found.value_counts().iloc[0])  # count of the mode
    found = float(modal.sum() / len(frame))
    if found < share:
        return None
    return ConstantAnswers(float(frame["value"].mode().iloc[0]), found, len(frame))


#: What a bootstrap over single topics is called: they are resampled as if independent.
INDEPENDENT_TOPICS = "topics, treated as independent"


def spearman_interval(scores, human, rng: np.random.Generator, *, draws: int = BOOTSTRAP_RESAMPLES,
                      level: float = 0.95, clusters=None) -> Correlation:
    """Spearman's ρ of ``scores`` against ``human`` over the topics where both are known, and its
    ``level`` percentile bootstrap interval from ``draws`` resamples.

    With ``clusters`` (one label per topic, e.g. its (dataset, model)) and at least
    :data:`~.bootstrap.MIN_CLUSTERS` of them among the known topics, whole clusters are
    resampled; otherwise topics are, and ``method`` says they are treated as independent.
    """
    from scipy.stats import spearmanr

    x, y = np.asarray(scores, dtype=np.float64), np.asarray(human, dtype=np.float64)
    known = np.isfinite(x) & np.isfinite(y)
    if clusters is not None and len(clusters) != len(x):
        raise InputError(f"spearman_interval: {len(clusters)} cluster labels for {len(x)} topics; give one per topic")
    x, y = x[known], y[known]
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return Correlation(math.nan, math.nan, math.nan, int(len(x)))
    rho = float(spearmanr(x, y).statistic)
    labels = None if clusters is None else [str(label) for label, kept in zip(clusters, known) if kept]
    grouped = labels is not None and len(set(labels)) >= MIN_CLUSTERS
    if grouped:
        picks, unit, units = cluster_resamples(labels, draws, rng), "(dataset, model) clusters", len(set(labels))
    else:
        why = "no (dataset, model) grouping" if labels is None else f"{len(set(labels))} (dataset, model) group(s)"
        picks, unit, units = paired_resamples(len(x), draws, rng), f"{INDEPENDENT_TOPICS} ({why})", len(x)
    resampled = [spearmanr(x[p], y[p]).statistic if np.ptp(x[p]) > 0 and np.ptp(y[p]) > 0 else math.nan
                 for p in picks]
    interval = percentile_interval(resampled, units, unit, level)
    method = interval.method + (f", {len(x)} topics" if grouped else "")
    return Correlation(rho, interval.low, interval.high, int(len(x)), method)


#: How the models' ranking τ is to be read: over a few models it takes a few values, and an
#: interval over them would say little, so it is descriptive.
RANKING_TAU_READING = ("τ models: Kendall's τ between the models ordered by the measure and by people's mean rating, "
                       "per dataset: descriptive, over {models} models (with 3, τ is -1, -1/3, 1/3 or 1; one swapped "
                       "pair moves it by 2/3), no interval")


def model_ranking_agreement(topics, scores) -> dict:
    """Per dataset: Kendall's τ between the models ranked by their mean ``scores`` and ranked by
    people's mean rating (1: the same order; -1: reversed), both orders, best first, and the
    number of ``models`` (the τ is descriptive: see :data:`RANKING_TAU_READING`)."""
    from scipy.stats import kendalltau

    scores = np.asarray(scores, dtype=np.float64)
    agreement = {}
    for dataset in sorted({topic.dataset for topic in topics}):
        models = sorted({topic.model for topic in topics if topic.dataset == dataset})
        by_score, by_people = [], []
        for model in models:
            rows = [i for i, topic in enumerate(topics) if topic.dataset == dataset and topic.model == model]
            by_score.append(float(np.nanmean(scores[rows])) if np.isfinite(scores[rows]).any() else math.nan)
            by_people.append(float(np.mean([topics[i].human_rating for i in rows])))
        tau = float(kendalltau(by_score, by_people).statistic) if np.isfinite(by_score).all() and len(models) > 1 else math.nan
        agreement[dataset] = {
            "tau": tau,
            "by_score": [m for _, m in sorted(zip(by_score, models), key=lambda pair: -pair[0] if math.isfinite(pair[0]) else math.inf)],
            "by_people": [m for _, m in sorted(zip(by_people, models), key=lambda pair: -pair[0])],
            "models": len(models),
        }
    return agreement


def calibration_table(topics, scores_by_measure: dict, rng: np.random.Generator, *,
                      draws: int = BOOTSTRAP_RESAMPLES) -> list:
    """One row per measure (the LLM's and the file's automated ones): ρ against people's ratings
    and intrusion accuracy with intervals (a bootstrap of the topics' (dataset, model) clusters,
    :func:`spearman_interval`), and the model-ranking agreement per dataset; and
    ``constant``, a :class:`ConstantAnswers` where a judge's scores (``scores_by_measure``, not
    the file's coherences, whose scale the rounding does not fit) are (nearly) all one value,
    whose ρ and τ are then NaN: not measurable (None where they vary)."""
    measures = dict(scores_by_measure)
    for name in AUTOMATED_MEASURES.values():
        values = [topic.automated.get(name, math.nan) for topic in topics]
        if any(math.isfinite(v) for v in values):
            measures.setdefault(name, values)
    ratings = [topic.human_rating for topic in topics]
    intrusion = [topic.human_intrusion for topic in topics]
    clusters = [(topic.dataset, topic.model) for topic in topics]
    rows = []
    for name, values in measures.items():
        constant = constant_answers(values) if name in scores_by_measure else None
        if constant is not None:  # a near-constant judge's ρ rests on its few other answers: not agreement
            undefined = Correlation(math.nan, math.nan, math.nan, constant.items)
            rows.append({"measure": name, "rating": undefined, "intrusion": undefined,
                         "ranking": model_ranking_agreement(topics, np.full(len(values), math.nan)),
                         "scored": constant.items, "constant": constant})
            continue
        rows.append({
            "measure": name,
            "rating": spearman_interval(values, ratings, rng, draws=draws, clusters=clusters),
            "intrusion": spearman_interval(values, intrusion, rng, draws=draws, clusters=clusters),
            "ranking": model_ranking_agreement(topics, values),
            "scored": int(np.isfinite(np.asarray(values, dtype=np.float64)).sum()),
            "constant": None,
        })
    return rows
