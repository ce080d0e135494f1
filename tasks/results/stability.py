"""Stability across seeds, scored once and kept with the runs: do a model's seeds find the same topics?

Two steps, each its own function: read every (corpus, model)'s seed runs back from their MLflow
artifacts (``output/``, one model at a time, into a temporary folder removed after that model) and
score them with :mod:`topicbench.core.metrics.stability` (pure: :func:`model_stability`). The
report sets the numbers out as tables (:mod:`topicbench.tasks.report.stability`).

Runs imported from a result bundle without their matrices carry what the exporting store found
(:data:`STABILITY_ARTIFACT`, with the run keys it covers): it stands in for their outputs where
those cannot be read and the runs are the very ones it covered.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from topicbench.core.validation import InputError

from topicbench.tasks.results.runs import finished_runs

logger = logging.getLogger(__name__)

#: The similarities scored, and the column titles they are shown under.
STABILITY_MEASURES = ("jensen_shannon", "top_words")
#: Seed of the shuffles of the chance level: the same report shows the same chance level.
CHANCE_SEED = 0
#: The numbers of each measure in a row of :attr:`StabilityFindings.table` (``{measure}_{name}``).
MEASURE_NUMBERS = ("mean", "sd", "share_mean", "share_sd", "chance", "chance_sd", "chance_error", "chance_p")
#: The numbers of a measure read on a sample of the words (Jensen-Shannon of dense many-word runs,
#: :mod:`topicbench.core.metrics.stability_sampled`): the sampling error of the mean and the share;
#: with ``sampled_words`` (NaN: every word read) in the row.
SAMPLED_NUMBERS = ("error", "share_error")
#: Where :func:`topicbench.tasks.store.artifacts.write_output_artifacts` puts a run's output.
OUTPUT_ARTIFACT = "output"
#: A bundle's record of a fit's model's stability (:func:`topicbench.tasks.results.bundle_tables.stability_records`):
#: read where the matrices did not travel with the runs.
STABILITY_ARTIFACT = "stability.json"
#: The version of the stability scoring a kept record holds; raised when the numbers it gives change
#: (2: the chance level a permutation test over every pair of seeds; deterministic models not scored).
STABILITY_VERSION = 2
#: The row column saying a row came from an older scoring's record (absent or NaN: this version's).
VERSION_COLUMN = "stability_version"


@dataclass(frozen=True)
class UnreadableRun:
    """A finished run whose output could not be read back (no ``output/`` artifact, a store that
    did not answer, a damaged file)."""

    corpus: str
    model: str
    seed: int
    run_id: str
    reason: str


@dataclass(frozen=True, eq=False)
class StabilityFindings:
    """What the stability section shows, as numbers.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per (corpus, model) with two or more readable seeds: ``corpus``, ``model``,
        ``seeds`` (how many), ``pairs`` (pairs of seeds), ``deterministic`` (1.0 where every seed
        gave the same fit: then every number below is NaN, stability being not applicable),
        ``permutations`` and ``sampled_topics`` of the chance test (NaN: every topic shuffled) and,
        for each measure of :data:`STABILITY_MEASURES`, ``{measure}_mean``/``_sd`` (mean matched
        similarity over the pairs), ``{measure}_share_mean``/``_share_sd`` (share of topics
        reappearing), ``{measure}_chance``/``_chance_sd`` (the permutation null's mean and sd),
        ``{measure}_chance_error`` (its sampling error, 0 when exact) and ``{measure}_chance_p``
        (the one-sided permutation p of the similarity against it:
        :func:`~topicbench.core.metrics.stability_chance.chance_test`); ``sampled_words`` (NaN:
        every word read) and ``jensen_shannon_error``/``_share_error``, the sampling error of the
        mean and the share where dense many-word runs were read on a sample of their words
        (:mod:`~topicbench.core.metrics.stability_sampled`; 0 where every word was read).
    one_seed : tuple of (corpus, model)
        Pairs with a single finished seed: nothing to compare.
    unreadable : tuple of UnreadableRun
    not_compared : tuple of (corpus, model, reason)
        Pairs left with fewer than two readable seeds, or whose seeds do not compare (different
        vocabularies).
    """

    table: pd.DataFrame
    one_seed: tuple = ()
    unreadable: tuple = ()
    not_compared: tuple = ()


def model_stability(topic_words, vocabularies, seeds, measures=STABILITY_MEASURES, chance_seed: int = CHANCE_SEED) -> dict:
    """The stability numbers of one model's seed runs (one row of :attr:`StabilityFindings.table`
    without its corpus and model).

    Parameters
    ----------
    topic_words : sequence of ndarray or ConstantPlusSparse
        Each seed's p(word | topic), two or more, over one vocabulary.
    vocabularies : sequence of sequences of str
        Each run's vocabulary (checked to be one and the same).
    seeds : sequence of int
        Each run's seed (its label).
    measures : sequence of str
    chance_seed : int
        Seed of the samples and shuffles of the chance test, which draws from every pair of seeds
        (:func:`~topicbench.core.metrics.stability_chance.chance_test`).
    """
    from topicbench.core.metrics.stability import checked_runs, identical_fits, seed_stability
    from topicbench.core.metrics.stability_chance import chance_test
    from topicbench.core.metrics.stability_sampled import word_sample

    nan = float("nan")
    matrices, seeds = checked_runs(topic_words, vocabularies, seeds)  # one vocabulary, or an InputError
    row = {"seeds": len(seeds), "pairs": len(seeds) * (len(seeds) - 1) // 2, "deterministic": 0.0,
           "permutations": nan, "sampled_topics": nan, "sampled_words": nan}
    for measure in measures:
        if identical_fits(matrices):  # one fit: nothing to match, and no chance level to test against
            row["deterministic"] = 1.0
            row.update({f"{measure}_{name}": nan for name in MEASURE_NUMBERS})
            continue
        # dense many-word runs: their Jensen-Shannon read on a sample of the words, its error stated
        words = word_sample(matrices, np.random.default_rng(chance_seed)) if measure == "jensen_shannon" else None
        row.update({f"{measure}_{name}": 0.0 for name in SAMPLED_NUMBERS})  # every word read: exact
        if words is None:
            summary = seed_stability(matrices, measure, labels=seeds)
        else:
            summary = _sampled_summary(matrices, seeds, words, row)
        test = chance_test(matrices, measure, rng=np.random.default_rng(chance_seed),
                           observed=summary.mean_similarity, words=words)
        row.update({"permutations": test.permutations,
                    "sampled_topics": nan if test.sampled_topics is None else test.sampled_topics,
                    f"{measure}_mean": summary.mean_similarity, f"{measure}_sd": summary.sd_similarity,
                    f"{measure}_share_mean": summary.mean_share, f"{measure}_share_sd": summary.sd_share,
                    f"{measure}_chance": test.chance, f"{measure}_chance_sd": test.chance_sd,
                    f"{measure}_chance_error": test.chance_error, f"{measure}_chance_p": test.p_value})
    return row


def _sampled_summary(topic_words, seeds, words, row: dict):
    """The Jensen-Shannon summary of dense many-word runs read on ``words``, its sampling errors
    and the sample's size put in ``row``."""
    from topicbench.core.metrics.stability import REAPPEARANCE_THRESHOLD
    from topicbench.core.metrics.stability_sampled import sampled_seed_stability

    summary, errors = sampled_seed_stability(topic_words, list(seeds), words, REAPPEARANCE_THRESHOLD["jensen_shannon"])
    row.update({"sampled_words": words.size, **{f"jensen_shannon_{name}": value for name, value in errors.items()}})
    return summary


def stability_applies(topic_words) -> bool:
    """Whether stability across seeds means anything for these runs of one model: False where
    every seed gave the same fit (a deterministic model, whose stability would be 1 by
    construction and is "not applicable: deterministic, one fit"). For rankings and search
    objectives, which must not reward such a model."""
    from topicbench.core.metrics.stability import identical_fits

    return not identical_fits(topic_words)


def read_topic_word(folder) -> tuple:
    """A saved output's topic-word matrix (in its own form) and vocabulary, without reading its
    topic-document matrix (which can be far larger, and stability never needs)."""
    import json

    from topicbench.core.output import read_matrix

    folder = Path(folder)
    vocabulary = tuple(json.loads((folder / "output.json").read_text(encoding="utf-8"))["vocabulary"])
    with np.load(folder / "matrices.npz") as arrays:  # an npz reads only the arrays asked for
        return read_matrix(arrays, "topic_word_matrix"), vocabulary


def collect_stability(tracking_uri: str, runs: pd.DataFrame, measures=STABILITY_MEASURES, *,
                      client=None) -> StabilityFindings:
    """Score the stability of every (corpus, model) of the run table (of
    :func:`topicbench.tasks.results.store.collect_runs`) with two or more finished seeds, reading their
    outputs from the tracking store one model at a time (through ``client``, default an
    MlflowClient of ``tracking_uri``). A run that cannot be read is named in the findings, never
    an error: the report renders without it."""
    from mlflow.tracking import MlflowClient

    client = client or MlflowClient(tracking_uri)
    done = finished_runs(runs).drop_duplicates(["corpus", "model", "seed"])  # a rerun seed counts once
    rows, one_seed, unreadable, not_compared = [], [], [], []
    for (corpus, model), group in done.groupby(["corpus", "model"], sort=True):
        if len(group) < 2:
            one_seed.append((corpus, model))
            continue
        row, failed, why_not = _seed_runs_stability(client, group.sort_values("seed"), measures)
        unreadable.extend(UnreadableRun(corpus, model, seed, run_id, reason) for seed, run_id, reason in failed)
        if row is None:
            not_compared.append((corpus, model, why_not))
        else:
            rows.append({"corpus": corpus, "model": model, **row})
    return StabilityFindings(pd.DataFrame(rows), tuple(one_seed), tuple(unreadable), tuple(not_compared))


def _seed_runs_stability(client, group: pd.DataFrame, measures) -> tuple:
    """(:func:`model_stability` row or None, unreadable runs, why there is no row) of one model's
    seed runs. Their outputs live only inside this call (a temporary folder, and matrices freed on
    return), so a report holds one model's seeds at a time."""
    # what was found before for these very runs (by an earlier report, or by the bundle they were
    # imported from without their matrices): finished runs never change, so neither does this
    recorded = _recorded_stability(client, group, measures)
    if recorded is not None and recorded.get("version", 1) == STABILITY_VERSION:
        return recorded["row"], [], recorded["not_compared"] or ""
    with tempfile.TemporaryDirectory(prefix="topicbench-stability-") as folder:
        read, failed = _download_outputs(client, group, Path(folder))
    if len(read) < 2 and recorded is not None:
        # an older scoring's numbers, kept where the outputs did not travel (a bundle exported
        # without its matrices): shown as scored before the test, never dropped
        return _older_row(recorded), [], recorded["not_compared"] or ""
    for seed, run_id, reason in failed:
        logger.warning("run %s: cannot read its %s/ artifact (%s)", run_id, OUTPUT_ARTIFACT, reason)
    if len(read) < 2:
        return None, failed, f"{len(read)} of {len(group)} seeds readable"
    seeds, matrices, vocabularies = zip(*read)
    try:
        row, why_not = model_stability(matrices, vocabularies, seeds, measures), ""
    except InputError as error:  # seeds over different vocabularies, or too few words
        row, why_not = None, str(error)
    if not failed:  # a run that could not be read this time may be readable next time: not kept
        _record_stability(client, group, measures, row, why_not)
    return row, failed, why_not


def stability_record(corpus: str, model: str, run_keys, measures, row: dict | None, why_not: str | None) -> str:
    """The :data:`STABILITY_ARTIFACT` of one model's seed runs: its stability ``row`` (or why its
    seeds were not compared) and the run keys and measures it covers, as a bundle's fits and a
    store's runs keep it; a row of an older scoring (:data:`VERSION_COLUMN`) keeps its version."""
    import json

    version = STABILITY_VERSION
    if row is not None and VERSION_COLUMN in row:
        row = dict(row)
        older = row.pop(VERSION_COLUMN)
        version = version if older is None or older != older else int(older)  # NaN: this version's
    return json.dumps({"corpus": corpus, "model": model, "run_keys": sorted(str(key) for key in run_keys),
                       "measures": list(measures), "version": version, "row": row,
                       "not_compared": why_not or None}, indent=1, sort_keys=True)


def _record_stability(client, group: pd.DataFrame, measures, row: dict | None, why_not: str) -> None:
    """Keep what was found with each of the runs (best effort: a store that takes no artifacts
    only means the next report scores them again)."""
    text = stability_record(group.corpus.iloc[0], group.model.iloc[0], group.run_key, measures,
                            None if row is None else {key: _plain(value) for key, value in row.items()}, why_not)
    try:
        with tempfile.TemporaryDirectory(prefix="topicbench-stability-") as folder:
            path = Path(folder) / STABILITY_ARTIFACT
            path.write_text(text, encoding="utf-8")
            for run_id in group.run_id:
                client.log_artifact(run_id, str(path))
    except Exception as error:  # noqa: BLE001 - the findings are in hand; only their reuse is lost
        logger.info("runs %s: stability not kept with the runs (%s)", list(group.run_id), error)


def _plain(value):
    """A number as JSON keeps it (numpy scalars are not JSON)."""
    return int(value) if isinstance(value, (int, np.integer)) else float(value)


def _older_row(recorded: dict) -> dict | None:
    """An older scoring's row, marked with its version (:data:`VERSION_COLUMN`) so that a bundle
    exported again keeps saying which scoring gave it."""
    row = recorded.get("row")
    return None if row is None else {**row, VERSION_COLUMN: int(recorded.get("version", 1))}


def _recorded_stability(client, group: pd.DataFrame, measures) -> dict | None:
    """The :data:`STABILITY_ARTIFACT` a bundle gave these runs (imported without their matrices),
    where it covers exactly these runs and measures, of any scoring version; else None."""
    import json

    from topicbench.tasks.results.store import local_artifact

    try:
        with tempfile.TemporaryDirectory(prefix="topicbench-stability-") as folder:
            path = (local_artifact(group.run_id.iloc[0], STABILITY_ARTIFACT)
                    or client.download_artifacts(group.run_id.iloc[0], STABILITY_ARTIFACT, folder))
            recorded = json.loads(Path(path).read_text(encoding="utf-8"))
    except Exception as error:  # noqa: BLE001 - no record: the outputs are read, and named if unreadable
        logger.debug("runs %s: no %s (%s)", list(group.run_id), STABILITY_ARTIFACT, error)
        return None
    covers = recorded.get("run_keys") == sorted(str(key) for key in group.run_key)
    return recorded if covers and recorded.get("measures") == list(measures) else None


def _download_outputs(client, group: pd.DataFrame, folder: Path) -> tuple[list, list]:
    """(seed, topic-word matrix, vocabulary) of each run of ``group`` that could be read, and
    (seed, run id, reason) of each that could not."""
    from topicbench.tasks.results.store import local_artifact

    read, failed = [], []
    for seed, run_id in zip(group.seed, group.run_id):
        target = folder / str(run_id)
        target.mkdir()
        try:
            local = local_artifact(run_id, OUTPUT_ARTIFACT)  # read in place where the store's files are local
            if local is None:
                client.download_artifacts(run_id, OUTPUT_ARTIFACT, str(target))
            matrix, vocabulary = read_topic_word(local or target / OUTPUT_ARTIFACT)
        except FileNotFoundError:  # a run imported without its matrices: the same words every time
            failed.append((int(seed), run_id, f"no {OUTPUT_ARTIFACT}/matrices.npz"))
            continue
        except Exception as error:  # a report is still a report without this run; it names it
            failed.append((int(seed), run_id, _first_line(error)))
            continue
        read.append((int(seed), matrix, vocabulary))
    return read, failed


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:200].rstrip(".")
