"""Scores against K, and verdicts only where models were fitted at the same K.

Coherence and diversity move with K, so a model with 2,552 topics and one with 100 are not
compared by their means. Pure functions of the run table of
:func:`topicbench.tasks.results.store.collect_runs` (and of each topic's own scores,
:func:`topicbench.tasks.results.store.collect_topic_scores`):

- every run as a point (K, score) (:func:`k_points`), which the K section draws per model;
- the models whose runs share a K on the same corpus and seed (:func:`same_k_groups`: a model
  fitted with ``num_topics: {match: LABEL}``, or two models given the same K), and the verdict of
  each such group, the best against the rest by Welch's t over seeds, Holm-corrected
  (:func:`same_k_verdicts`, :func:`~topicbench.core.metrics.stats.best_against_rest`);
- where one number per model is still shown at unequal K, the prevalence-weighted mean over all
  its topics (:func:`weighted_mean_table`), and how the plain mean over the k most prevalent
  topics moves with k (:func:`top_k_curves`), for the models whose runs hold per-topic scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from topicbench.core.metrics.prevalence import prevalence_weighted_mean, top_k_means
from topicbench.core.metrics.stats import ALPHA, best_against_rest

from .summary import TOPICS_USED, mark_gaps
from .tables import Estimate, Gap, ReportTable, estimate, finished_runs, higher_is_better

#: The report section that draws every score against K (:mod:`~topicbench.tasks.report.k_section`).
K_SECTION = "k_comparison"
#: What the same-K verdicts say, under their table (the test itself is said once per section).
SAME_K_RULE = ("Each row: models whose runs used the same K on the same corpus and seed (a model fitted with "
               "num_topics: {match: LABEL}, or models given the same K), and per score the model whose mean beats "
               "every other's, where one does.")


def k_points(runs: pd.DataFrame, key: str) -> pd.DataFrame:
    """One row per finished run with both a K and a value of ``key``: corpus, model, model_class
    (the registry's name: E-LDA's variants share it), seed, ``k`` and ``value``."""
    done = finished_runs(runs)
    columns = ["corpus", "model", "model_class", "seed", "k", "value"]
    if done.empty or TOPICS_USED not in done or key not in done:
        return pd.DataFrame(columns=columns)
    found = done.assign(k=done[TOPICS_USED], value=done[key],
                        model_class=done["model_class"] if "model_class" in done else done["model"])
    found = found[np.isfinite(found.k.astype(float)) & np.isfinite(found.value.astype(float))]
    return found[columns].reset_index(drop=True)


@dataclass(frozen=True)
class SameK:
    """Models whose runs on ``corpus`` used the same K seed by seed: ``k_by_seed`` ((seed, K), ...)."""

    corpus: str
    k_by_seed: tuple
    models: tuple

    @property
    def k_text(self) -> str:
        """K as a reader reads it: ``37``, or ``37, 41`` (seed by seed) where it moves with the seed."""
        ks = [k for _, k in self.k_by_seed]
        return f"{ks[0]:g}" if len(set(ks)) == 1 else ", ".join(f"{k:g}" for k in ks) + " (by seed)"


def same_k_groups(runs: pd.DataFrame, *, models, corpora) -> list[SameK]:
    """Per corpus, each set of two or more ``models`` whose finished runs used the same K on the
    same seeds (every seed the same K for all of them), in the models' order."""
    done = finished_runs(runs)
    groups = []
    if done.empty or TOPICS_USED not in done:
        return groups
    for corpus in corpora:
        by_k: dict = {}
        for model in models:
            mine = done[(done.corpus == corpus) & (done.model == model)]
            ks = tuple(sorted((int(seed), float(k)) for seed, k in zip(mine.seed, mine[TOPICS_USED]) if pd.notna(k)))
            if ks and len(ks) == len(mine):
                by_k.setdefault(ks, []).append(model)
        groups += [SameK(corpus, ks, tuple(found)) for ks, found in by_k.items() if len(found) >= 2]
    return groups


def _group_samples(runs: pd.DataFrame, group: SameK, key: str) -> list:
    done = finished_runs(runs)
    seeds = [seed for seed, _ in group.k_by_seed]
    return [done[(done.corpus == group.corpus) & (done.model == model) & done.seed.isin(seeds)][key].dropna()
            .to_numpy(dtype=float) if key in done else None for model in group.models]


#: A same-K verdict that cannot be given, and why (never a bare dash).
TOO_FEW_SCORED = "not compared: fewer than two of these models have this score"


def same_k_verdict(samples: list, models, higher: bool) -> str:
    """The verdict of one group on one score: the best model where it beats every other at α
    (:func:`~topicbench.core.metrics.stats.best_against_rest`), else that none does, with the
    largest Holm-adjusted p; :data:`TOO_FEW_SCORED` where fewer than two models have a value."""
    test = best_against_rest([s if s is not None and len(s) else None for s in samples], higher)
    if test.best is None or not test.adjusted:
        return TOO_FEW_SCORED
    tested = [p for p in test.adjusted.values() if p is not None]
    untested = len(test.adjusted) - len(tested)
    largest = f"Holm-adjusted p ≤ {max(tested):.2g}" if tested else "not testable"
    if untested and tested:
        largest += f"; {untested} not testable"
    if test.clear:
        return f"{models[test.best]} ({largest})"
    why = ("not testable: fewer than 2 seeds, or no seed variance (deterministic)" if not tested
           else f"{largest}, not below α = {ALPHA:g}" if not untested else largest)
    return f"no clear best ({models[test.best]} has the best mean; {why})"


def same_k_verdicts(runs: pd.DataFrame, keys, *, models, corpora) -> ReportTable:
    """One row per group of models fitted at the same K (:func:`same_k_groups`): corpus, K, the
    models, and per score of ``keys`` ((score key, title) pairs) the verdict (:func:`same_k_verdict`)."""
    rows = []
    for group in same_k_groups(runs, models=models, corpora=corpora):
        row = {"corpus": group.corpus, "K": group.k_text, "models": ", ".join(group.models)}
        for key, title in keys:
            higher = higher_is_better(key)
            if higher is not None:
                row[title] = same_k_verdict(_group_samples(runs, group, key), group.models, higher)
        rows.append(row)
    if not rows:
        return ReportTable(pd.DataFrame())
    return ReportTable(pd.DataFrame(rows).fillna(TOO_FEW_SCORED), note=SAME_K_RULE, title="Verdicts at the same K", tested=True)


def weighted_mean_table(topic_scores: Mapping, keys, *, models, corpora) -> ReportTable:
    """Per corpus, each model's prevalence-weighted mean over all its topics
    (:func:`~topicbench.core.metrics.prevalence.prevalence_weighted_mean`) per seed, then mean ±
    sd over seeds, one column per (score key, title) of ``keys``; the best bold only where it
    beats every other (:func:`~topicbench.core.metrics.stats.best_against_rest`). ``topic_scores`` maps
    (corpus, model, seed) to a frame with a row per topic: its ``share`` and a column per score
    key; a model without them gets a :class:`~topicbench.tasks.report.tables.Gap`."""
    columns, best = {}, set()
    for corpus in corpora:
        for key, title in keys:
            values = []
            for model in models:
                frames = [frame for (c, m, _), frame in sorted(topic_scores.items(), key=lambda item: item[0][2])
                          if (c, m) == (corpus, model) and key in frame]
                means = [prevalence_weighted_mean(frame[key], frame.share) for frame in frames]
                values.append(estimate([m for m in means if m is not None]) or Gap(
                    f"its runs hold no per-topic {key} with their topics' shares (tracked before topics were scored "
                    "one by one, or the metric does not apply)"))
            if not any(isinstance(value, Estimate) for value in values):
                continue
            column = f"{title} · {corpus}"
            columns[column] = values
            test = best_against_rest([v.values if isinstance(v, Estimate) else None for v in values],
                                     bool(higher_is_better(key)))
            if test.clear:
                best.add((test.best, column))
    if not columns:
        return ReportTable(pd.DataFrame())
    cells, footnotes = mark_gaps(pd.DataFrame({"model": pd.Series(models, dtype=object),
                                               **{c: pd.Series(v, dtype=object) for c, v in columns.items()}}))
    note = ("Each cell: per seed, the mean of the model's topics' own scores weighted by each topic's share of the "
            "corpus (every topic counted, none cut), then the mean over seeds." + footnotes)
    return ReportTable(cells, frozenset(best), note=note, title="One number per model at unequal K: the "
                       "prevalence-weighted mean over all topics", tested=True)


def top_k_curves(topic_scores: Mapping, key: str, *, corpus: str, models) -> tuple:
    """Per model with per-topic scores of ``key`` on ``corpus``: (model, k = 1.., the mean over its
    seeds of the plain mean over the k most prevalent topics), up to the fewest topics any of its
    seeds scored (HDP's K moves with the seed). Plain tuples: a plot request keyed by its data."""
    curves = []
    for model in models:
        per_seed = [top_k_means(frame[key], frame.share) for (c, m, _), frame in topic_scores.items()
                    if (c, m) == (corpus, model) and key in frame]
        per_seed = [curve for curve in per_seed if len(curve)]
        if not per_seed:
            continue
        length = min(len(curve) for curve in per_seed)
        mean = np.mean([curve[:length] for curve in per_seed], axis=0)
        curves.append((model, tuple(range(1, length + 1)), tuple(float(v) for v in mean)))
    return tuple(curves)


def k_advice(groups: list, corpus: str, *, shown: bool) -> str:
    """What the K caution of ``corpus`` points to: the K section where the report has it, the
    same-K fits it holds (from ``groups``, :func:`same_k_groups`), and how to add one."""
    mine = [group for group in groups if group.corpus == corpus]
    held = ("; fits at the same K here: " + "; ".join(f"{', '.join(g.models)} at K = {g.k_text}" for g in mine)
            if mine else "; no two models here share a K")
    where = ("the section \"K: every score against the number of topics\" draws each score against K, gives "
             "verdicts only from fits at the same K and one number per model as a prevalence-weighted mean" if shown
             else f"add the report section {K_SECTION} to draw each score against K")
    return (f"{where}{held}. To compare a model at another's K by design, give it num_topics: {{match: LABEL}} "
            "(or a grid, num_topics: [20, 50, 100])")
