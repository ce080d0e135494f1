"""The leaderboard across datasets: one ranking per headline metric, the datasets its blocks.

Why these rules (issue 48):

- **Datasets are the blocks.** Friedman's test assumes independent blocks. NPMI, C_V and TD of one
  dataset come from the same fits, and their model means correlate, so (dataset, metric) pairs are
  not independent blocks; and coherence and diversity pull against each other, so mixing them
  ranks a compromise nobody asked for. Each headline metric is ranked on its own, across datasets.
- **A test needs :data:`MIN_DATASETS` datasets.** With fewer, Friedman/Nemenyi has almost no power
  (autorank refuses it); the page says "too few datasets to test (n of 5)", shows the mean ranks
  with their intervals and names the pairs the per-dataset intervals separate on every dataset.
- **K.** Coherence and diversity depend on K, so a model whose K differs by more than
  :data:`~topicbench.tasks.report.summary.K_FACTOR` times from the median K of a dataset's models
  is ranked in a separate group (``"other K"``), never in the main ranking or its diagram.
"""

from __future__ import annotations

import contextlib
import io
import math
import statistics
import warnings
from dataclasses import dataclass

import pandas as pd

from topicbench.core.metrics.stats import ALPHA, rank_bounds, wholly_better

from topicbench.tasks.report.summary import K_FACTOR

#: The fewest datasets (blocks) for Friedman's test and Nemenyi's critical difference (autorank's
#: least number of blocks; Demšar 2006 warns that fewer give the test next to no power).
MIN_DATASETS = 5
MAIN_GROUP = "main"
OTHER_K_GROUP = "other K"


@dataclass(frozen=True)
class CrossRanking:
    """One headline metric ranked across datasets for one K group.

    ``models`` best first by mean rank; ``block_ranks``: model -> its rank on each of ``datasets``
    among this ranking's models (ties share their mean rank, as Friedman's test ranks them);
    ``rank_low``/``rank_high``: the means over the datasets of each model's per-dataset rank bounds
    (:func:`~topicbench.core.metrics.stats.rank_bounds`); ``topics``: model -> (fewest, most) topics
    over the datasets; ``result``: autorank's result, None where there is no test (``reason``
    says why); ``separated``: (better, worse) pairs told apart, ``separated_by`` how; ``left_out``:
    "model (what it lacks)"; ``not_blocks``: the datasets that scored the metric but are not
    blocks, each with why (:func:`choose_blocks`)."""

    metric: str
    higher: bool
    group: str
    datasets: tuple
    models: tuple
    block_ranks: dict
    mean_ranks: dict
    rank_low: dict
    rank_high: dict
    topics: dict
    result: object
    reason: str | None
    separated: tuple
    separated_by: str
    left_out: tuple
    not_blocks: tuple = ()

    def position(self, model: str) -> int:
        """1 + the models with a strictly better mean rank (tied mean ranks share a position)."""
        return 1 + sum(self.mean_ranks[other] < self.mean_ranks[model] for other in self.models)

    def tied(self, model: str) -> bool:
        return any(self.mean_ranks[other] == self.mean_ranks[model] for other in self.models if other != model)


def k_groups(datasets) -> dict:
    """model -> :data:`MAIN_GROUP` or :data:`OTHER_K_GROUP`: other K where, on some dataset, its
    topics differ by more than ``K_FACTOR`` times from the median of that dataset's models."""
    groups = {}
    for board in datasets:
        topics = [e.topics for e in board.entries if math.isfinite(e.topics) and e.topics > 0]
        median = statistics.median(topics) if topics else math.nan
        for entry in board.entries:
            off = (math.isfinite(entry.topics) and entry.topics > 0 and math.isfinite(median)
                   and max(entry.topics / median, median / entry.topics) > K_FACTOR)
            if off or entry.model not in groups:
                groups[entry.model] = OTHER_K_GROUP if off else groups.get(entry.model, MAIN_GROUP)
    return groups


def cross_rankings(datasets, headline) -> tuple:
    """One :class:`CrossRanking` per (headline metric, K group) with a model, main group first."""
    groups = k_groups(datasets)
    found = []
    for key, higher in headline:
        for group in (MAIN_GROUP, OTHER_K_GROUP):
            members = {model for model, g in groups.items() if g == group}
            ranking = cross_ranking(datasets, key, higher, members, group)
            if ranking is not None:
                found.append(ranking)
    return tuple(found)


def cross_ranking(datasets, key: str, higher: bool, members: set, group: str = MAIN_GROUP):
    """``key`` ranked across the datasets that scored it, among the ``members`` that have it on
    every one of them (the others are left out, with what they lack); None without any member."""
    scored = {board.corpus: {e.model: e for e in board.entries if e.model in members and key in e.scores}
              for board in datasets}
    scored = {corpus: entries for corpus, entries in scored.items() if entries}
    having = {model for entries in scored.values() for model in entries}
    if not having:
        return None
    blocks = choose_blocks(scored)
    not_blocks = tuple(f"{corpus} (only {len(scored[corpus])} of {len(having)} models have {key} there)"
                       for corpus in scored if corpus not in blocks)
    complete = sorted(model for model in having if all(model in scored[corpus] for corpus in blocks))
    left_out = tuple(f"{model} (no {key} on {', '.join(c for c in blocks if model not in scored[c])})"
                     for model in sorted(having - set(complete)))
    intervals = {corpus: {m: scored[corpus][m].scores[key] for m in complete} for corpus in blocks}
    data = pd.DataFrame({m: [intervals[c][m].mean * (1 if higher else -1) for c in blocks] for m in complete},
                        index=list(blocks), columns=complete)
    ranks = data.rank(axis=1, ascending=False)  # as Friedman's test ranks each block: ties share their mean
    bounds = {corpus: dict(zip(complete, rank_bounds([intervals[corpus][m] for m in complete], higher)))
              for corpus in blocks}
    mean_ranks = ranks.mean().sort_values(kind="stable").to_dict() if complete else {}
    models = tuple(mean_ranks)
    reason = _no_test_reason(len(models), len(blocks))
    result = None if reason else friedman_nemenyi(data)
    if result is None:
        separated = tuple((a, b) for a in models for b in models
                          if a != b and all(wholly_better(intervals[c][a], intervals[c][b], higher) for c in blocks))
        separated_by = "the per-dataset intervals, on every dataset"
    else:
        separated, separated_by = _separated_by_test(result, mean_ranks), _test_name(result)
    topics = {m: (min(scored[c][m].topics for c in blocks), max(scored[c][m].topics for c in blocks)) for m in models}
    return CrossRanking(key, higher, group, blocks, models, {m: tuple(ranks[m]) for m in models}, mean_ranks,
                        {m: sum(bounds[c][m].best for c in blocks) / len(blocks) for m in models},
                        {m: sum(bounds[c][m].worst for c in blocks) / len(blocks) for m in models},
                        topics, result, reason, separated, separated_by, left_out, not_blocks)


def choose_blocks(scored: dict) -> tuple:
    """The datasets a ranking uses as blocks, of ``scored`` (dataset -> the models scored there):
    those where at least half of the models were scored (or, where none is, those with the most).
    A dataset that few models were fitted on would otherwise leave most models out of the ranking;
    a model that lacks a block is left out instead, and named."""
    models = {model for entries in scored.values() for model in entries}
    blocks = tuple(corpus for corpus, entries in scored.items() if 2 * len(entries) >= len(models))
    most = max(len(entries) for entries in scored.values())
    return blocks or tuple(corpus for corpus, entries in scored.items() if len(entries) == most)


def _no_test_reason(models: int, datasets: int) -> str | None:
    if models < 2:
        return "fewer than two models have a score on every dataset"
    if datasets < MIN_DATASETS:
        return f"too few datasets to test ({datasets} of {MIN_DATASETS})"
    return None


def _test_name(result) -> str:
    if result.cd is None:
        return f"{result.omnibus} test at α = {ALPHA:g}"
    return f"Nemenyi's critical difference {result.cd:.3g} after Friedman's test at α = {ALPHA:g}"


def _separated_by_test(result, mean_ranks: dict) -> tuple:
    """Pairs told apart: with Friedman's p below α, mean ranks further apart than Nemenyi's CD;
    with two models (autorank's Wilcoxon), the test's p below α."""
    if result.pvalue >= ALPHA:
        return ()
    models = list(mean_ranks)
    if result.cd is None:
        return ((models[0], models[1]),)
    return tuple((a, b) for a in models for b in models if mean_ranks[b] - mean_ranks[a] > result.cd)


def friedman_nemenyi(data: pd.DataFrame):
    """autorank's Friedman test and Nemenyi critical difference on ``data`` (one column a model,
    one row a dataset, higher better): its ``RankResult``."""
    from autorank import autorank

    # nonparametric forced: only the ranks within a dataset are compared, as Demšar (2006) advises
    # across datasets; autorank prints that choice, which a library must not, and its effect sizes
    # (unused here) divide by a zero spread where a model has the same rank on every dataset
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        # its normality check (unused: the test is forced nonparametric) warns on constant ranks
        warnings.filterwarnings("ignore", message="scipy.stats.shapiro", category=UserWarning)
        return autorank(data.reset_index(drop=True), alpha=ALPHA, order="descending", force_mode="nonparametric")
