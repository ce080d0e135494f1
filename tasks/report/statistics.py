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

from topicbench.core.metrics.stats import paired_test

from .summary import gap_reason
from .tables import ReportTable, Share, best_rows, estimate, finished_runs, higher_is_better

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
    p-value of E-LDA against the LDA across seeds. The best of the three is marked per row."""
    keys = [key for key, _ in SET1_COLUMNS]
    done = finished_runs(runs)
    if not set(keys) <= set(done.columns):
        return ReportTable(pd.DataFrame())
    rows, best = [], set()
    for (corpus, model), group in done.dropna(subset=keys).groupby(["corpus", "model"]):
        own, elda, randk = (group[key].to_numpy() / 1e6 for key in keys)
        p = paired_test(elda, own).p_value if len(group) >= 2 else None
        row = {"corpus": corpus, "LDA variant": model, "seeds": len(group)}
        row.update({title: estimate(values) for (_, title), values in zip(SET1_COLUMNS, (own, elda, randk))})
        row.update({"E-LDA > LDA in": Share(int((elda > own).sum()), len(group)), "paired p (E-LDA vs LDA)": p})
        means = [row[title].mean for _, title in SET1_COLUMNS]
        best.update((len(rows), SET1_COLUMNS[i][1]) for i in best_rows(means, _common_direction(keys)))
        rows.append(row)
    note = "Bold: the best of the three log posteriors in each row (higher is better)."
    return ReportTable(pd.DataFrame(rows), frozenset(best), {"paired p (E-LDA vs LDA)": "{:.2g}"}, note)


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
    few = sorted({row["models"] for row in rows if row["models"] < TAU_MODELS_ENOUGH})
    note = (f"Caution: over {' or '.join(map(str, few))} models, Kendall's tau takes only a few values (3 models: "
            "-1, -1/3, 1/3 or 1), so one swapped pair moves it far: read it as a hint, not evidence." if few else "")
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
