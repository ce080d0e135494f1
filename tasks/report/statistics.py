"""The report's statistics: paired tests across seeds (Experiment Set 1) and how far the ranking
of models under one metric agrees with another (Kendall's tau and the pairs that flip).

Pure functions of the run table of :func:`topicbench.tasks.results.store.collect_runs`, returning
:class:`~topicbench.tasks.report.tables.ReportTable` of numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from topicbench.core.metrics.stats import ALPHA, holm, paired_test

from .summary import gap_reason
from .tables import ReportTable, Share, estimate, finished_runs, higher_is_better

#: Set 1's three log posteriors (the E-LDA paper's experiments): the LDA's own assignment, E-LDA on its topics, RandK.
SET1_COLUMNS = (
    ("log_likelihood_own", "LDA (own) ×1e6"), ("log_likelihood_elda", "E-LDA ×1e6"), ("log_likelihood_randk", "RandK ×1e6"),
)
#: The metrics whose ranking of the models is set against UMass's.
RANKING_METRICS = (("npmi", "NPMI"), ("cv", "C_V"), ("embedding_pairwise", "embedding"), ("topic_diversity", "diversity"))
FLIPS_SHOWN = 3
#: Fewer models than this and a Kendall's tau carries a caution (it takes few values).
TAU_MODELS_ENOUGH = 5


def set1_table(runs: pd.DataFrame) -> ReportTable:
    """Per corpus and LDA variant: the log posterior (x10^6) of the LDA's own token assignment,
    of E-LDA on its topics and of RandK, how often E-LDA beats the LDA, and the paired t-test's
    p-value of E-LDA against the LDA across seeds. The best of the three is bold in its row where
    it beats both others by the paired t-test over the seeds, Holm-corrected (:func:`paired_best`)."""
    keys = [key for key, _ in SET1_COLUMNS]
    done = finished_runs(runs)
    if not set(keys) <= set(done.columns):
        return ReportTable(pd.DataFrame())
    rows, best, tips = [], set(), {}
    for (corpus, model), group in done.dropna(subset=keys).groupby(["corpus", "model"]):
        own, elda, randk = (group[key].to_numpy() / 1e6 for key in keys)
        p = paired_test(elda, own).p_value if len(group) >= 2 else None
        row = {"corpus": corpus, "LDA variant": model, "seeds": len(group)}
        row.update({title: estimate(values) for (_, title), values in zip(SET1_COLUMNS, (own, elda, randk))})
        row.update({"E-LDA > LDA in": Share(int((elda > own).sum()), len(group)), "paired p (E-LDA vs LDA)": p})
        higher = _common_direction(keys)
        if higher is not None:
            top, largest = paired_best([own, elda, randk], higher)
            cell = (len(rows), SET1_COLUMNS[top][1])
            tips[cell] = ("the best mean; paired t against the other two, Holm-adjusted: "
                          + (f"largest p {largest:.2g}" if largest is not None else "not testable (fewer than 2 seeds, "
                                                                                   "or differences that do not vary)"))
            best.update([cell] if largest is not None and largest < ALPHA else [])
        rows.append(row)
    note = ("Bold: the best of the three log posteriors in its row (higher is better) where it beats both others by the "
            f"paired t-test over the seeds, Holm-corrected, at α = {ALPHA:g} (p in the hover).")
    return ReportTable(pd.DataFrame(rows), frozenset(best), {"paired p (E-LDA vs LDA)": "{:.2g}"}, note, tips=tips)


def paired_best(samples: list, higher: bool) -> tuple[int, float | None]:
    """The position of the best mean of ``samples`` (arrays over the same seeds, in the same
    order) and the largest Holm-adjusted p of the paired t-test of it against each other one; None
    where one cannot be tested (fewer than 2 seeds, or differences the same on every seed: a test
    on zero variance says nothing)."""
    means = [float(np.mean(sample)) for sample in samples]
    top = int(np.argmax(means) if higher else np.argmin(means))
    raw = []
    for i, other in enumerate(samples):
        differences = np.asarray(samples[top], dtype=float) - np.asarray(other, dtype=float)
        if i != top:
            raw.append(None if differences.size < 2 or np.ptp(differences) == 0 else paired_test(samples[top], other).p_value)
    adjusted = holm(raw)
    return top, None if any(p is None for p in adjusted) else max(adjusted, default=None)


def _common_direction(keys) -> bool | None:
    directions = {higher_is_better(key) for key in keys}
    return directions.pop() if len(directions) == 1 else None


@dataclass(frozen=True)
class Flip:
    """Two models ranked one way under the base metric and the other way under another; ranks
    are 1 for the best."""

    first: str
    second: str
    base_ranks: tuple
    other_ranks: tuple

    @property
    def size(self) -> int:
        """How far apart the two are under both rankings together (a large flip is a strong
        disagreement, not a swap of neighbours)."""
        return abs(self.base_ranks[0] - self.base_ranks[1]) + abs(self.other_ranks[0] - self.other_ranks[1])


def ranking_flips(base: pd.Series, other: pd.Series, base_higher: bool, other_higher: bool) -> list[Flip]:
    """Every pair of models the two metrics order oppositely, the largest flips first."""
    base_ranks = base.rank(ascending=not base_higher, method="min").astype(int)
    other_ranks = other.rank(ascending=not other_higher, method="min").astype(int)
    flips = [
        Flip(a, b, (int(base_ranks[a]), int(base_ranks[b])), (int(other_ranks[a]), int(other_ranks[b])))
        for a, b in combinations(base.index, 2)
        if np.sign(base_ranks[a] - base_ranks[b]) * np.sign(other_ranks[a] - other_ranks[b]) < 0
    ]
    return sorted(flips, key=lambda flip: (-flip.size, flip.first, flip.second))


def ranking_agreement(runs: pd.DataFrame, n: int = 10, corpora=None) -> ReportTable:
    """Per corpus and metric: does the ranking of the models by mean UMass@n agree with that
    metric's? Kendall's tau (of the two orders, each metric's own direction taken as better),
    how many pairs flip, the largest flips, and each metric's best model."""
    from scipy.stats import kendalltau

    base = f"umass@{n}"
    done = finished_runs(runs)
    rows = []
    for corpus in corpora or sorted(done.corpus.unique()):
        means = done[done.corpus == corpus].groupby("model").mean(numeric_only=True)
        for metric, title in RANKING_METRICS:
            column = f"{metric}@{n}"
            if base not in means or column not in means or len(means[[base, column]].dropna()) < 2:
                continue
            pair = means[[base, column]].dropna()
            base_higher, other_higher = higher_is_better(base), higher_is_better(column)
            sign = 1 if base_higher == other_higher else -1
            tau = sign * kendalltau(pair[base], pair[column]).statistic
            flips = ranking_flips(pair[base], pair[column], base_higher, other_higher)
            rows.append({
                "corpus": corpus, "against": title, "models": len(pair),
                "Kendall tau": tau if np.isfinite(tau) else None,
                "pairs that flip": Share(len(flips), len(pair) * (len(pair) - 1) // 2),
                "largest flips": tuple(flips[:FLIPS_SHOWN]),
                "best under UMass": _best_model(pair[base], base_higher),
                "best under the other": _best_model(pair[column], other_higher),
            })
    counts = sorted({row["models"] for row in rows})
    few = [count for count in counts if count < TAU_MODELS_ENOUGH]
    # descriptive: the models are all there are, not a sample, and over a few an interval on τ would say little
    note = (f"Kendall's tau is descriptive, over {' or '.join(map(str, counts))} models' means: no interval. " if rows else "")
    note += (f"Caution: over {' or '.join(map(str, few))} models, Kendall's tau takes only a few values (3 models: "
             "-1, -1/3, 1/3 or 1), so one swapped pair moves it far: read it as a hint, not evidence." if few else "")
    note = note.strip()
    left_out = _not_ranked(runs, base, corpora or sorted(done.corpus.unique()))
    if rows and left_out:  # a model without the base score is in no ranking: say which and why
        note = f"{note} Not ranked, without UMass@{n}: {'; '.join(left_out)}.".strip()
    return ReportTable(pd.DataFrame(rows), formats={"Kendall tau": "{:.2f}"}, note=note)


def _not_ranked(runs: pd.DataFrame, base: str, corpora) -> list[str]:
    """``model on corpus (why)`` for each model with runs on a corpus but no ``base`` score there."""
    done, left_out = finished_runs(runs), []
    for corpus in corpora:
        ranked = set(done[done.corpus == corpus].dropna(subset=[base]).model) if base in done else set()
        left_out += [f"{model} on {corpus} ({gap_reason(runs, corpus, model, base)})"
                     for model in sorted(set(runs[runs.corpus == corpus].model) - ranked)]
    return left_out


def _best_model(values: pd.Series, higher: bool) -> str:
    return values.idxmax() if higher else values.idxmin()
