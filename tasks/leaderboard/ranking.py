"""The leaderboard: result bundles -> models ranked per dataset and across datasets.

:func:`load_bundle` reads a bundle's tables; :func:`build_leaderboard`, a pure function of them,
returns a :class:`Leaderboard`; :mod:`topicbench.tasks.leaderboard.render` writes it as HTML and
Markdown.

The rules it applies, each stated on the page:

- **What ranks.** Only FINISHED fits. Each dataset is ranked in one version: the fingerprint and
  preprocessing of the first bundle that holds it. A fit of that dataset with another fingerprint
  or preprocessing is never ranked with the others (one line says which bundle and why).
- **Headline metrics.** Of :data:`HEADLINE_KEYS`, those that some ranked fit was scored on (or
  the ones asked for); each ranks in its metric's own direction, from the metric registry.
- **Per dataset.** A model's score is its mean over seeds with a Student-t interval over seeds
  (:func:`~topicbench.core.metrics.stats.seed_interval`: none under 3 seeds; a deterministic
  model, one value on every seed, is said to be one, never given a zero-width interval); its rank
  has an interval derived from those intervals (:func:`~topicbench.core.metrics.stats.rank_bounds`).
- **Across datasets.** :mod:`topicbench.tasks.leaderboard.cross`: one ranking per headline
  metric, the datasets its blocks, the test only with enough datasets, models at another K apart.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from topicbench.core.metrics.stats import rank_bounds, seed_interval
from topicbench.core.validation import InputError

from topicbench.tasks.leaderboard.cross import cross_rankings
from topicbench.tasks.leaderboard.in_reference import in_reference_notes, with_in_reference_scores
from topicbench.tasks.report.render import format_number
from topicbench.tasks.report.tables import higher_is_better
from topicbench.tasks.report.unranked import unranked_by

#: The headline metrics, in the order the page shows them: coherence against the reference corpus
#: (NPMI, C_V) and topic diversity at N = 10, and an LLM's judgments where a bundle has them.
HEADLINE_KEYS = ("npmi@10", "cv@10", "topic_diversity@10", "llm_rating", "llm_intrusion")
RUN_COLUMNS = ("run_id", "corpus", "model", "model_class", "seed", "status", "num_topics_used", "num_topics",
               "settings", "preprocessing", "corpus_fingerprint", "corpus_source", "fit_seconds", "peak_memory_mb")
SCORE_COLUMNS = ("run_id", "score", "value")


class LeaderboardError(InputError):
    """Bundles that cannot be ranked: the message names the bundle, the problem and the fix."""


@dataclass(frozen=True)
class Bundle:
    """One bundle's manifest and tables (``runs``: one row a run; ``scores``: one row a score)."""

    folder: str
    manifest: dict
    runs: pd.DataFrame
    scores: pd.DataFrame

    @property
    def name(self) -> str:
        return str(self.manifest.get("experiment") or Path(self.folder).name)


def load_bundle(folder) -> Bundle:
    """The manifest and the runs and scores tables of the bundle in ``folder`` (format 2 or later),
    all of the bundle read and checked first by :func:`topicbench.tasks.results.bundle_checks.check_bundle`."""
    from topicbench.tasks.results.bundle_checks import check_bundle

    checked = check_bundle(folder)
    manifest = checked.manifest
    if not manifest.get("tables"):
        raise LeaderboardError(f"{folder}: bundle format {manifest.get('bundle_format')!r} has no tables; export it "
                               "again with this topicbench (`topicbench import` it, then `topicbench export`)")
    tables = checked.tables_named(("runs", "scores"))
    return Bundle(str(folder), manifest, tables["runs"], tables["scores"])


@dataclass(frozen=True)
class Entry:
    """One model on one dataset: its record, ``scores`` (score key ->
    :class:`~topicbench.core.metrics.stats.SeedInterval`), ``ranks`` (score key ->
    :class:`~topicbench.core.metrics.stats.RankBounds`) and ``unranked`` (score key -> (its
    SeedInterval, the reason it is not ranked: outside the metric's range or worse than the
    uniform model, :func:`~topicbench.tasks.report.unranked.unranked_by`), kept out of ``scores``);
    ``in_reference`` (score key -> what was dropped, where its score is a coherence over the words
    the reference corpus has: :mod:`~topicbench.tasks.leaderboard.in_reference`)."""

    model: str
    bundle: str
    model_class: str
    seeds: tuple
    num_topics: str
    topics: float
    settings: dict
    fit_seconds: float
    peak_memory_mb: float
    scores: dict
    ranks: dict
    unranked: dict = field(default_factory=dict)
    in_reference: dict = field(default_factory=dict)


@dataclass(frozen=True)
class DatasetBoard:
    """The models on one dataset, best first by the dataset's first headline metric (a model
    without it below the others, by the next)."""

    corpus: str
    fingerprint: str
    source: str
    preprocessing: dict
    entries: tuple


@dataclass(frozen=True)
class Leaderboard:
    """Everything the page shows; ``headline`` is ((key, higher is better), ...); ``crosses``:
    the :class:`~topicbench.tasks.leaderboard.cross.CrossRanking` of each (metric, K group)."""

    bundles: tuple
    headline: tuple
    datasets: tuple
    crosses: tuple
    set_aside: tuple
    judges: tuple


def build_leaderboard(bundles, metrics=None) -> Leaderboard:
    """The leaderboard of ``bundles`` (:class:`Bundle`), ranked on ``metrics`` (score keys;
    default: :data:`HEADLINE_KEYS` that the bundles scored)."""
    if not bundles:
        raise LeaderboardError("no bundle given; name at least one bundle folder")
    runs, scores, set_aside, versions = _ranked_runs(bundles)
    if runs.empty:
        raise LeaderboardError("no FINISHED fit in " + ", ".join(b.folder for b in bundles)
                               + ": nothing to rank; export a benchmark whose fits finished")
    table = runs.merge(scores, on="run_id", how="left")
    headline = _headline(metrics, set(table["score"].dropna()))
    table = with_in_reference_scores(table, headline)  # a coherence lacking for words outside the reference
    datasets = tuple(_dataset_board(corpus, runs[runs.corpus == corpus], table[table.corpus == corpus],
                                    headline, versions[corpus]) for corpus in sorted(versions))
    return Leaderboard(tuple(bundles), headline, datasets, cross_rankings(datasets, headline), tuple(set_aside),
                       judges(bundles))


def _headline(metrics, scored: set) -> tuple:
    keys = list(dict.fromkeys(metrics)) if metrics else [key for key in HEADLINE_KEYS if key in scored]
    for key in keys:
        if higher_is_better(key) is None:
            raise LeaderboardError(f"{key!r} is not a metric's score key with a direction (e.g. npmi@10); "
                                   "`topicbench metrics list` lists them")
        if key not in scored:
            raise LeaderboardError(f"--metric {key}: no ranked fit of these bundles has it; the bundles scored "
                                   f"{', '.join(sorted(scored)) or 'nothing'}")
    if not keys:
        raise LeaderboardError(f"the bundles have none of the headline metrics ({', '.join(HEADLINE_KEYS)}); "
                               "name the metrics to rank on with --metric")
    return tuple((key, higher_is_better(key)) for key in keys)


def _canonical(value) -> str:
    """A JSON string or mapping as canonical JSON (keys sorted), so equal settings compare equal."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, sort_keys=True)


def _ranked_runs(bundles):
    """The FINISHED fits that rank, labelled with their model's leaderboard name; the lines saying
    what was set aside; and each dataset's version (fingerprint, source, preprocessing)."""
    versions, kept, scores, set_aside = {}, [], [], []
    for bundle in bundles:
        runs = bundle.runs[(bundle.runs.status == "FINISHED") & bundle.runs.corpus.notna() & bundle.runs.model.notna()]
        for corpus, on_corpus in runs.groupby("corpus", sort=True):
            # the version a dataset ranks in: its first bundle's (most of its fits', were they to differ)
            preprocessing = on_corpus.preprocessing.map(_canonical)
            reference = versions.setdefault(corpus, (on_corpus.corpus_fingerprint.mode().iloc[0],
                                                     on_corpus.corpus_source.iloc[0], preprocessing.mode().iloc[0],
                                                     bundle.name))
            same = ((on_corpus.corpus_fingerprint == reference[0])
                    & (preprocessing == reference[2]))
            if (~same).any():
                set_aside.append(_set_aside_line(bundle.name, corpus, on_corpus[~same], reference))
            kept.append(on_corpus[same].assign(bundle=bundle.name, folder=bundle.folder))
        scores.append(bundle.scores[list(SCORE_COLUMNS)])
    runs = pd.concat(kept, ignore_index=True) if kept else pd.DataFrame(columns=[*RUN_COLUMNS, "bundle", "folder"])
    twice = runs[runs.run_id.duplicated(keep=False)]
    if not twice.empty:
        raise LeaderboardError(f"run {twice.run_id.iloc[0]} is in more than one of the bundles given (of "
                               f"experiment {', '.join(sorted(set(twice.bundle)))}): name each bundle once")
    runs["entry"] = _entry_names(runs)
    _refuse_twice_fitted(runs)
    return runs, pd.concat(scores, ignore_index=True), set_aside, versions


def _refuse_twice_fitted(runs: pd.DataFrame) -> None:
    """Two ranked fits of one (corpus, model, seed) would count that seed twice in the model's
    mean and interval: one line naming them instead."""
    twice = runs[runs.duplicated(["entry", "corpus", "seed"], keep=False)]
    if not twice.empty:
        first = twice.iloc[0]
        same = twice[(twice.entry == first.entry) & (twice.corpus == first.corpus) & (twice.seed == first.seed)]
        raise LeaderboardError(f"{Path(first.folder) / 'tables' / 'runs.parquet'}: {len(same)} fits of model "
                               f"{first.entry} on {first.corpus} with seed {first.seed} (runs "
                               f"{', '.join(map(str, same.run_id))}): a leaderboard counts each seed once; export the "
                               "experiment again with this topicbench (one run per run key) or name it once")


def _set_aside_line(bundle: str, corpus: str, runs: pd.DataFrame, reference) -> str:
    fingerprints = sorted(set(runs.corpus_fingerprint) - {reference[0]})
    if fingerprints:
        why = (f"fingerprint {', '.join(f[:12] for f in fingerprints)} where the leaderboard's {corpus} is "
               f"{reference[0][:12]} (bundle {reference[3]})")
    else:
        why = f"preprocessing other than the leaderboard's {corpus} (bundle {reference[3]})"
    return (f"{len(runs)} fits of {corpus} in bundle {bundle} are not ranked with the others: made with {why}; "
            "different data or preprocessing are never ranked together")


def _entry_names(runs: pd.DataFrame) -> pd.Series:
    """Each run's model as the leaderboard names it: the model, or "model (bundle)" where two
    bundles hold a model of that name that is not one model. It is one where every bundle fitted
    it with the same settings (K included) and no dataset is in two of them: a leaderboard built in
    pieces, a bundle per dataset, ranks each model across its datasets."""
    if runs.empty:
        return pd.Series([], dtype=object)
    one_model = {model: _one_model_across_bundles(group) for model, group in runs.groupby("model")}
    return runs.apply(lambda run: run.model if one_model[run.model] else f"{run.model} ({run.bundle})", axis=1)


def _one_model_across_bundles(runs: pd.DataFrame) -> bool:
    if runs.bundle.nunique() == 1:
        return True
    settings = runs.settings.map(_canonical) + "|" + runs.num_topics.map(lambda k: "" if pd.isna(k) else str(k))
    datasets_in_two = (runs.groupby("corpus").bundle.nunique() > 1).any()
    return settings.nunique() == 1 and not datasets_in_two


def seed_intervals(samples: dict, higher: bool) -> tuple[dict, dict]:
    """Each model's mean score over its seeds with its Student-t interval, and its rank with the
    interval those intervals allow.

    Parameters
    ----------
    samples : dict
        model -> its scores, one a seed.
    higher : bool
        Whether a higher score is better (rank 1 is the best).

    Returns
    -------
    scores, ranks : dict
        model -> :class:`~topicbench.core.metrics.stats.SeedInterval` and model ->
        :class:`~topicbench.core.metrics.stats.RankBounds`.
    """
    scores = {model: seed_interval(values) for model, values in samples.items()}
    ranks = dict(zip(scores, rank_bounds(list(scores.values()), higher)))
    return scores, ranks


def _dataset_board(corpus: str, runs: pd.DataFrame, table: pd.DataFrame, headline, version) -> DatasetBoard:
    scores, ranks, unranked = {}, {}, {}
    for key, higher in headline:
        scored = table[table.score == key].dropna(subset=["value"])
        samples = {entry: group.value.to_numpy() for entry, group in scored.groupby("entry", sort=True)}
        for entry, reason in unranked_by(key, table).items():  # shown with its reason, never ranked
            unranked.setdefault(entry, {})[key] = (seed_interval(samples.pop(entry)), reason)
        if samples:
            scores[key], ranks[key] = seed_intervals(samples, higher)
    notes = {key: in_reference_notes(table, key) for key, _ in headline}
    entries = [replace(_entry(name, fits, {k: v[name] for k, v in scores.items() if name in v},
                              {k: v[name] for k, v in ranks.items() if name in v}, unranked.get(name, {})),
                       in_reference={k: found[name] for k, found in notes.items() if name in found})
               for name, fits in runs.groupby("entry", sort=True)]
    order = [key for key, _ in headline if key in scores]

    def sort_key(entry: Entry):
        # by rank on the dataset's first headline metric; a model without it below, by the next
        return tuple(entry.ranks[key].rank if key in entry.ranks else math.inf for key in order), entry.model

    return DatasetBoard(corpus, version[0], str(version[1]), json.loads(version[2]) if version[2].startswith("{") else {},
                        tuple(sorted(entries, key=sort_key)))


def _entry(name: str, fits: pd.DataFrame, scores: dict, ranks: dict, unranked: dict) -> Entry:
    first = fits.iloc[0]
    used = pd.to_numeric(fits.num_topics_used, errors="coerce").dropna()
    asked = pd.to_numeric(pd.Series([first.num_topics]), errors="coerce").iloc[0]  # None where the model chose K
    if used.empty or (used == asked).all():
        topics, num_topics = asked, ("—" if pd.isna(asked) else plain_number(asked))
    else:
        topics = used.mean()
        num_topics = f"{plain_number(topics)} used" + ("" if pd.isna(asked) else f" (of {plain_number(asked)})")
    settings = json.loads(_canonical(first.settings)) if isinstance(first.settings, str) else {}
    return Entry(name, first.bundle, str(first.model_class), tuple(sorted(int(s) for s in fits.seed)), num_topics,
                 float(topics), settings if isinstance(settings, dict) else {},
                 float(pd.to_numeric(fits.fit_seconds).mean()), float(pd.to_numeric(fits.peak_memory_mb).mean()),
                 scores, ranks, unranked)


def plain_number(value: float) -> str:
    """A count or a rank as a reader reads it: whole where it is (100), else 3 digits (22.3, 1.50)."""
    return str(int(value)) if float(value).is_integer() else format_number(value, 3)


def judges(bundles) -> tuple:
    """One (bundle, judge record) pair for each bundle that an LLM judged: its manifest's
    ``judge`` (model, settings, calibration)."""
    return tuple((bundle.name, bundle.manifest["judge"]) for bundle in bundles
                 if isinstance(bundle.manifest.get("judge"), dict) and bundle.manifest["judge"])
