"""The alternative annotator test of a document-level judge against people, as ProxAnn ran it
(Calderon, Reichart and Dror, 2025, "The Alternative Annotator Test for LLM-as-a-Judge"; ProxAnn's
``evaluation_scripts/alt_test_tm_eval.ipynb`` at 3583fa4, Table 3 with pseudo-annotators
per collection).

People answered different topics, so each topic's responses are shuffled and dealt to
pseudo-annotators 0, 1, 2, ... (the i-th shuffled response of every topic goes to pseudo-annotator
i); those who hold an answer for every topic are tested. Leaving each such annotator out in turn,
for every item (a document, or a topic's whole answer vector) the judge and the left-out person
are scored by their closeness to the remaining people (negative RMSE); the judge "wins" an item
when its score is at least the person's. The **advantage probability** is the share of items the
judge wins, averaged over left-out annotators; the **winning rate** the share of annotators for
whom a one-sided test (t-test, or Wilcoxon's) rejects, at Benjamini-Yekutieli FDR ``q``, that the
person beats the judge by more than ``epsilon``. Both are averaged over ``n_resamples`` deals.
People's rank answers are ``max(1, n_shown - rank)``, as ProxAnn clips them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from topicbench.core.metrics.proxann_agreement import ANSWERS, AgreementInputError, _check_columns

EPSILON, FDR_Q, RESAMPLES, SEED = 0.1, 0.05, 10, 42
LEVELS = ("document", "topic")
TESTS = ("ttest", "wilcoxon")


@dataclass(frozen=True)
class AltTestResult:
    """The alternative annotator test of one judge for one answer (fit or rank) and level.

    Attributes
    ----------
    advantage_probability, advantage_sd : float
        Mean (and standard deviation over deals) of the judge's advantage probability.
    winning_rate : float
        Mean share of left-out annotators the judge beats (see the module docstring).
    n_annotators : int
        Pseudo-annotators tested per deal.
    """

    advantage_probability: float
    advantage_sd: float
    winning_rate: float
    n_annotators: int


def alternative_annotator_test(judge: pd.DataFrame, people: pd.DataFrame, *, answer: str = "fit",
                               level: str = "document", test: str = "ttest", epsilon: float = EPSILON,
                               q: float = FDR_Q, n_resamples: int = RESAMPLES, seed: int = SEED) -> AltTestResult:
    """Run the test of ``judge`` (``topic``, ``position``, ``fit``, ``rank``: one answer per
    document) against ``people`` (``topic``, ``response``, ``position``, ``fit``, ``rank``).

    Raises
    ------
    AgreementInputError
        An unknown ``answer``, ``level`` or ``test``, a missing column, or fewer than two people on
        every topic the judge answered.
    """
    for value, allowed, name in ((answer, ANSWERS, "answer"), (level, LEVELS, "level"), (test, TESTS, "test")):
        if value not in allowed:
            raise AgreementInputError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    _check_columns(judge, ("topic", "position", answer), "the judge's answers")
    _check_columns(people, ("topic", "response", "position", answer), "people's answers")
    judged = _item_vectors(judge, answer)
    people = people[people["topic"].isin(judged)]
    if people.empty:
        raise AgreementInputError("the judge answered none of the topics people answered: give answers to the "
                                  "same study inputs")
    if answer == "rank":
        shown = people.groupby("topic")["position"].transform("nunique") + 1  # + the distractor
        people = people.assign(rank=np.maximum(1, shown - people["rank"]))
    rng = np.random.default_rng(seed)
    results = [_one_deal(judged, _deal(people, answer, rng), level, test, epsilon, q) for _ in range(n_resamples)]
    advantages = [result[0] for result in results]
    return AltTestResult(float(np.mean(advantages)), float(np.std(advantages, ddof=1)) if n_resamples > 1 else 0.0,
                         float(np.mean([result[1] for result in results])), results[0][2])


def _item_vectors(answers: pd.DataFrame, answer: str) -> dict:
    """topic -> the answers to its documents, in position order."""
    ordered = answers.sort_values(["topic", "position"])
    return {topic: group[answer].to_numpy(dtype=np.float64) for topic, group in ordered.groupby("topic")}


def _deal(people: pd.DataFrame, answer: str, rng) -> dict:
    """pseudo-annotator -> topic -> answer vector: each topic's responses shuffled and dealt."""
    dealt = {}
    for topic, group in people.sort_values(["topic", "response", "position"]).groupby("topic", sort=True):
        vectors = [responses[answer].to_numpy(dtype=np.float64) for _, responses in group.groupby("response")]
        for annotator, index in enumerate(rng.permutation(len(vectors))):
            dealt.setdefault(annotator, {})[topic] = vectors[index]
    return dealt


def _one_deal(judged: dict, dealt: dict, level: str, test: str, epsilon: float, q: float) -> tuple:
    topics = sorted(judged)
    holders = {topic: [a for a in dealt if topic in dealt[a]] for topic in topics}
    complete = [a for a in dealt if all(topic in dealt[a] for topic in topics)]
    if not complete or any(len(holders[topic]) < 2 for topic in topics):
        raise AgreementInputError("the alternative annotator test needs at least two people on every judged topic")
    advantages, p_values = [], []
    for left_out in complete:
        judge_wins, person_wins = [], []
        for topic in topics:
            rest = np.array([dealt[a][topic] for a in holders[topic] if a != left_out])
            person, model = dealt[left_out][topic], judged[topic]
            if level == "document":
                person_score = -np.sqrt(np.mean((person[None, :] - rest) ** 2, axis=0))
                model_score = -np.sqrt(np.mean((model[None, :] - rest) ** 2, axis=0))
            else:
                person_score = np.atleast_1d(-np.mean(np.sqrt(np.mean((rest - person) ** 2, axis=1))))
                model_score = np.atleast_1d(-np.mean(np.sqrt(np.mean((rest - model) ** 2, axis=1))))
            judge_wins.extend(model_score >= person_score)
            person_wins.extend(person_score >= model_score)
        differences = np.asarray(person_wins, dtype=np.float64) - np.asarray(judge_wins, dtype=np.float64)
        p_values.append(_p_value(differences, epsilon, test))
        advantages.append(float(np.mean(judge_wins)))
    winning_rate = len(_benjamini_yekutieli(p_values, q)) / len(complete)
    return float(np.mean(advantages)), winning_rate, len(complete)


def _p_value(differences: np.ndarray, epsilon: float, test: str) -> float:
    """One-sided p-value that the person's edge over the judge is below ``epsilon``."""
    from scipy.stats import ttest_1samp, wilcoxon

    if test == "ttest":
        if np.all(differences == 1):
            return 1.0
        if np.all(differences == -1):
            return 0.0
        return float(ttest_1samp(differences, epsilon, alternative="less").pvalue)
    return float(wilcoxon(differences - epsilon, alternative="less", method="exact").pvalue)


def _benjamini_yekutieli(p_values, q: float) -> list:
    """Indices of the hypotheses rejected at FDR ``q`` under arbitrary dependence."""
    p_values = np.asarray(p_values, dtype=np.float64)
    m = len(p_values)
    order = np.argsort(p_values)
    thresholds = np.arange(1, m + 1) / m * q / np.sum(1.0 / np.arange(1, m + 1))
    passing = np.nonzero(p_values[order] <= thresholds)[0]
    return [] if not len(passing) else list(order[: passing[-1] + 1])


def constant_judge(answers: pd.DataFrame, fit: float) -> pd.DataFrame:
    """A judge that gives every document of ``answers`` (``topic``, ``position``) the fit ``fit``
    and ties each topic's documents (each the middle rank, ``(n + 1) / 2`` of its ``n``, as a
    ranking that ties them all averages): scored by :func:`alternative_annotator_test` like any
    judge, it is what a constant answer gets, the floor a judge's advantage is read against."""
    frame = answers[["topic", "position"]].drop_duplicates().copy()
    frame["fit"] = float(fit)
    frame["rank"] = (frame.groupby("topic")["position"].transform("count") + 1) / 2
    return frame.reset_index(drop=True)
