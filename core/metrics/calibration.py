"""How well a topic score agrees with people: Spearman's ρ against human judgments of the same
topics, with bootstrap intervals, and whether it ranks the models as people do.

The judgments are Hoyle et al.'s (NeurIPS 2021): 300 topics of MALLET LDA, D-VAE and ETM on
Wikitext and the New York Times, each with its top 20 words, the mean of people's 1-3 ratings,
the share of people who found the intruder, and the automated coherences Hoyle et al. computed
(``all_data.json`` of ``ahoho/topics``; ``topicbench data fetch hoyle2021``). Stammbach et al.
(EMNLP 2023) compared LLM judges with these the same way: ρ over topics, bootstrapped.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..validation import InputError

#: The automated coherences of the file reported beside an LLM's scores: key -> name.
AUTOMATED_MEASURES = {"c_npmi_10_full": "npmi", "c_v_full": "cv", "c_uci_full": "uci", "u_mass_full": "umass"}
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
    """The topics of an ``all_data.json`` (Hoyle et al. 2021), in file order."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        topics = []
        for dataset, by_model in data.items():
            for model, entry in by_model.items():
                metrics = entry["metrics"]
                for index, words in enumerate(entry["topics"]):
                    topics.append(JudgedTopic(
                        dataset, model, index, tuple(words), float(metrics["ratings_scores_avg"][index]),
                        float(metrics["intrusion_scores_avg"][index]),
                        {name: float(metrics[key][index]) for key, name in AUTOMATED_MEASURES.items() if key in metrics},
                    ))
    except (OSError, ValueError, KeyError, TypeError, IndexError) as error:
        raise InputError(f"{path} is not Hoyle et al.'s all_data.json ({type(error).__name__}: {error}); fetch it with "
                         "`topicbench data fetch hoyle2021`") from None
    if not topics:
        raise InputError(f"{path} holds no judged topics")
    return topics


@dataclass(frozen=True)
class Correlation:
    """Spearman's ρ of a score against people's judgments over ``n`` topics, with a percentile
    bootstrap interval (topics resampled with replacement)."""

    rho: float
    low: float
    high: float
    n: int

    @property
    def weak(self) -> bool:
        return not math.isfinite(self.rho) or self.rho < WEAK_RHO or not self.low > 0

    def as_text(self) -> str:
        if not math.isfinite(self.rho):
            return "–"
        return f"{self.rho:.2f} [{self.low:.2f}, {self.high:.2f}]"


def spearman_interval(scores, human, rng: np.random.Generator, *, draws: int = 1000, level: float = 0.95) -> Correlation:
    """Spearman's ρ of ``scores`` against ``human`` over the topics where both are known, and its
    ``level`` percentile bootstrap interval from ``draws`` resamples of those topics."""
    from scipy.stats import spearmanr

    x, y = np.asarray(scores, dtype=np.float64), np.asarray(human, dtype=np.float64)
    known = np.isfinite(x) & np.isfinite(y)
    x, y = x[known], y[known]
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return Correlation(math.nan, math.nan, math.nan, int(len(x)))
    rho = float(spearmanr(x, y).statistic)
    picks = rng.integers(0, len(x), size=(draws, len(x)))
    resampled = [spearmanr(x[p], y[p]).statistic for p in picks if np.ptp(x[p]) > 0 and np.ptp(y[p]) > 0]
    low, high = np.nanquantile(resampled, [(1 - level) / 2, (1 + level) / 2]) if resampled else (math.nan, math.nan)
    return Correlation(rho, float(low), float(high), int(len(x)))


def model_ranking_agreement(topics, scores) -> dict:
    """Per dataset: Kendall's τ between the models ranked by their mean ``scores`` and ranked by
    people's mean rating (1: the same order; -1: reversed), and both orders, best first."""
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
        }
    return agreement


def calibration_table(topics, scores_by_measure: dict, rng: np.random.Generator, *, draws: int = 1000) -> list:
    """One row per measure (the LLM's and the file's automated ones): ρ against people's ratings
    and intrusion accuracy with intervals, and the model-ranking agreement per dataset."""
    measures = dict(scores_by_measure)
    for name in AUTOMATED_MEASURES.values():
        values = [topic.automated.get(name, math.nan) for topic in topics]
        if any(math.isfinite(v) for v in values):
            measures.setdefault(name, values)
    ratings = [topic.human_rating for topic in topics]
    intrusion = [topic.human_intrusion for topic in topics]
    rows = []
    for name, values in measures.items():
        rows.append({
            "measure": name,
            "rating": spearman_interval(values, ratings, rng, draws=draws),
            "intrusion": spearman_interval(values, intrusion, rng, draws=draws),
            "ranking": model_ranking_agreement(topics, values),
            "scored": int(np.isfinite(np.asarray(values, dtype=np.float64)).sum()),
        })
    return rows
