"""How a document-level judge agrees with people, scored as ProxAnn scores it (Hoyle,
Calvo-Bartolomé, Boyd-Graber and Resnik, ACL 2025; ``ahoho/proxann`` at 3583fa4:
``src/proxann/llm_annotations/utils.py::compute_correlations_one`` and
``evaluation_scripts/top_ranking.ipynb``, Table 4).

Per topic, people's answers are averaged over annotators for each evaluation document (fit: the
1-5 Likert score; rank: ``n_shown - rank``, so that higher fits better, ``n_shown`` counting
the distractor: ProxAnn's ``8 - rank``). Then:

- **θ-agreement** of people, and of a judge: Kendall's τ-b between the answers and the model's θ
  of the documents (or, with ``use_assignments``, the 0/1 "main topic" flag);
- **per-document agreement with people**: τ-b between a judge's answers and people's means;
- **topic-ranking τ**: Kendall's τ, over topics, between the judge's θ-agreement and people's,
  on topics resampled with replacement (ProxAnn: 50 resamples, ``RandomState(42)``; the mean and
  standard deviation of the resamples are the figure and its SE, percentiles the interval);
- **people's own ranking τ**: one person left out per topic at random, τ over topics between the
  rest's θ-agreement and the left-out person's (ProxAnn's ``loo_from_corr_data``, 100 draws).

A τ of constant answers is undefined (NaN): topic pairs with a NaN are left out of a topic-ranking
τ, as ProxAnn's ``nan_policy="omit"`` does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..validation import InputError
from .llm_documents import kendall_tau_b

#: ProxAnn's resamples of topics (Table 4) and of left-out people (its "Human" row).
TOPIC_RESAMPLES, PEOPLE_RESAMPLES = 50, 100
PROXANN_SEED = 42
ANSWERS = ("fit", "rank")


class AgreementInputError(InputError):
    """Answers that cannot be scored: a missing column, or topics and documents that do not match."""


@dataclass(frozen=True)
class RankingTau:
    """Kendall's τ between two rankings of topics, over resamples.

    Attributes
    ----------
    mean, se : float
        Mean and standard deviation of τ over the resamples (ProxAnn's "τ (SE)").
    low, high : float
        The 2.5 and 97.5 percentiles of the resamples: a 95% bootstrap interval.
    point : float
        τ on the topics as given (no resampling).
    n_topics, n_resamples : int
        Topics scored; resamples whose τ was defined.
    """

    mean: float
    se: float
    low: float
    high: float
    point: float
    n_topics: int
    n_resamples: int

    @classmethod
    def of(cls, resampled, point: float, n_topics: int, *, ddof: int = 0) -> "RankingTau":
        values = np.asarray([value for value in resampled if np.isfinite(value)], dtype=np.float64)
        if not len(values):
            return cls(np.nan, np.nan, np.nan, np.nan, point, n_topics, 0)
        low, high = np.percentile(values, [2.5, 97.5])
        se = float(np.std(values, ddof=ddof)) if len(values) > ddof else np.nan
        return cls(float(values.mean()), se, float(low), float(high), point, n_topics, len(values))


def _check_columns(table: pd.DataFrame, columns, what: str) -> None:
    missing = [column for column in columns if column not in table.columns]
    if missing:
        raise AgreementInputError(f"{what} has no column {missing[0]!r}; expected {', '.join(columns)} "
                                  f"(see core/proxann_data.py)")


def people_means(people: pd.DataFrame) -> pd.DataFrame:
    """People's mean fit and mean rank score per (topic, position), with ``n_people``.

    ``people`` holds one row per (response, evaluation document): ``topic``, ``response``,
    ``position``, ``fit`` and ``rank`` (1 = fits best among the documents and the distractor).
    """
    _check_columns(people, ("topic", "response", "position", "fit", "rank"), "people's answers")
    shown = people.groupby("topic")["position"].transform("nunique") + 1  # + the distractor
    scored = people.assign(rank_score=shown - people["rank"])
    means = scored.groupby(["topic", "position"]).agg(fit=("fit", "mean"), rank=("rank_score", "mean"),
                                                     n_people=("response", "nunique"))
    return means.reset_index()


def seed_means(llm_answers: pd.DataFrame) -> pd.DataFrame:
    """An LLM's answers averaged over its seeds per (llm, topic, position), as ProxAnn does."""
    _check_columns(llm_answers, ("llm", "topic", "position", "fit", "rank"), "the LLM's answers")
    return llm_answers.groupby(["llm", "topic", "position"])[list(ANSWERS)].mean().reset_index()


def _with_theta(answers: pd.DataFrame, documents: pd.DataFrame, use_assignments: bool) -> pd.DataFrame:
    _check_columns(documents, ("topic", "position", "theta", "assigned"), "the evaluation documents")
    reference = documents[["topic", "position", "assigned" if use_assignments else "theta"]]
    joined = answers.merge(reference.rename(columns={"assigned": "theta"}), on=["topic", "position"], how="left")
    if joined["theta"].isna().any():
        topic = joined.loc[joined["theta"].isna(), "topic"].iloc[0]
        raise AgreementInputError(f"topic {topic}: an answered document is not among the evaluation documents; "
                                  f"give the study inputs the answers were given to")
    return joined.sort_values(["topic", "position"])


def people_topic_agreement(people: pd.DataFrame, documents: pd.DataFrame, *,
                           use_assignments: bool = False) -> pd.DataFrame:
    """People's θ-agreement per topic: columns ``topic``, ``n_people``, ``fit_tau``, ``rank_tau``
    (τ-b of people's mean answers against θ), sorted by topic."""
    joined = _with_theta(people_means(people), documents, use_assignments)
    rows = [{"topic": topic, "n_people": int(group["n_people"].max()),
             **{f"{answer}_tau": kendall_tau_b(group[answer], group["theta"]) for answer in ANSWERS}}
            for topic, group in joined.groupby("topic", sort=True)]
    return pd.DataFrame(rows)


def judge_topic_agreement(judge: pd.DataFrame, people: pd.DataFrame, documents: pd.DataFrame, *,
                          use_assignments: bool = False) -> pd.DataFrame:
    """A judge's agreement per topic it shares with people.

    ``judge`` has ``topic``, ``position``, ``fit`` and ``rank`` (higher = fits better; one
    answer per document, e.g. :func:`seed_means` of one LLM). Columns: ``topic``, ``fit_tau``
    and ``rank_tau`` (τ-b against θ), ``fit_tau_people`` and ``rank_tau_people`` (τ-b against
    people's mean answers: per-document agreement with people), sorted by topic.
    """
    _check_columns(judge, ("topic", "position", "fit", "rank"), "the judge's answers")
    means = people_means(people)
    shared = judge.merge(means, on=["topic", "position"], suffixes=("", "_people"))
    if shared.empty:
        raise AgreementInputError("the judge answered none of the topics people answered: give answers to the "
                                  "same study inputs")
    joined = _with_theta(shared, documents, use_assignments)
    rows = []
    for topic, group in joined.groupby("topic", sort=True):
        row = {"topic": topic}
        for answer in ANSWERS:
            row[f"{answer}_tau"] = kendall_tau_b(group[answer], group["theta"])
            row[f"{answer}_tau_people"] = kendall_tau_b(group[answer], group[f"{answer}_people"])
        rows.append(row)
    return pd.DataFrame(rows)


def _tau_omitting_nan(first, second) -> float:
    first, second = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    defined = np.isfinite(first) & np.isfinite(second)
    return kendall_tau_b(first[defined], second[defined])


def topic_ranking_tau(judge_scores, people_scores, *, n_resamples: int = TOPIC_RESAMPLES,
                      seed: int = PROXANN_SEED, resample_judge: bool = True) -> RankingTau:
    """Kendall's τ between two per-topic scores (same topics, same order: sorted by topic),
    over topics resampled with replacement.

    The draws are ProxAnn's: ``numpy.random.RandomState(seed)``, one ``randint(0, n, n)`` per
    resample (what ``DataFrame.sample(frac=1, replace=True)`` draws), so that ``seed=42`` gives
    their Table 4 figures.

    Parameters
    ----------
    judge_scores, people_scores : array-like of shape (n_topics,)
        E.g. a judge's ``fit_tau`` and people's ``fit_tau``, or NPMI and people's ``fit_tau``.
    resample_judge : bool
        ``False`` keeps ``judge_scores`` in its original order while people's scores are
        resampled, as ProxAnn's notebook did for NPMI and C_V (their lists were not resampled
        with the table): the pairing is then broken, and τ is near 0 whatever NPMI is. Only
        for reproducing their NPMI figure.
    """
    judge_scores = np.asarray(judge_scores, dtype=np.float64)
    people_scores = np.asarray(people_scores, dtype=np.float64)
    if judge_scores.shape != people_scores.shape or judge_scores.ndim != 1 or len(judge_scores) < 2:
        raise AgreementInputError(f"topic-ranking τ needs two per-topic scores of the same length >= 2, got "
                                  f"{judge_scores.shape} and {people_scores.shape}")
    n_topics = len(judge_scores)
    draws = np.random.RandomState(seed)
    resampled = []
    for _ in range(n_resamples):
        chosen = np.sort(draws.randint(0, n_topics, size=n_topics))
        first = judge_scores[chosen] if resample_judge else judge_scores
        resampled.append(_tau_omitting_nan(first, people_scores[chosen]))
    return RankingTau.of(resampled, _tau_omitting_nan(judge_scores, people_scores), n_topics)


def people_ranking_tau(people: pd.DataFrame, documents: pd.DataFrame, *, n_resamples: int = PEOPLE_RESAMPLES,
                       seed: int = 0, use_assignments: bool = False) -> dict:
    """People's own topic-ranking agreement: per draw, one person per topic is left out at
    random; τ over topics between the θ-agreement of the others and of the left-out person.

    Returns ``{"fit": RankingTau, "rank": RankingTau}``. As in ProxAnn, a draw where a topic's
    left-out person gave constant answers (τ undefined) gives no τ and is skipped (pandas'
    ``mean`` skips it there); the SE is the standard deviation of the draws (ddof 1, pandas').
    ProxAnn drew unseeded; ``seed`` makes the draws repeatable.
    """
    _check_columns(people, ("topic", "response"), "people's answers")
    rng = np.random.default_rng(seed)
    by_topic = people.groupby("topic", sort=True)["response"].unique()
    taus = {answer: [] for answer in ANSWERS}
    for _ in range(n_resamples):
        left_out = [responses[rng.integers(len(responses))] for responses in by_topic]
        held = people["response"].isin(left_out)
        others = people_topic_agreement(people[~held], documents, use_assignments=use_assignments)
        alone = people_topic_agreement(people[held], documents, use_assignments=use_assignments)
        for answer in ANSWERS:
            first, second = others[f"{answer}_tau"].to_numpy(), alone[f"{answer}_tau"].to_numpy()
            defined = np.isfinite(first).all() and np.isfinite(second).all()
            taus[answer].append(kendall_tau_b(first, second) if defined else np.nan)
    return {answer: RankingTau.of(values, np.nan, len(by_topic), ddof=1) for answer, values in taus.items()}


def calibration_table(judges: dict, people: pd.DataFrame, documents: pd.DataFrame, coherences=None, *,
                      use_assignments: bool = False, n_resamples: int = TOPIC_RESAMPLES,
                      seed: int = PROXANN_SEED) -> pd.DataFrame:
    """ProxAnn's Table 4 for one collection: per judge (and coherence), the topic-ranking τ of
    its fit and rank θ-agreement against people's, with SE and interval, and the mean
    per-document agreement with people.

    Parameters
    ----------
    judges : dict
        Name -> answers with ``topic``, ``position``, ``fit``, ``rank`` (one per document).
    coherences : pandas.DataFrame, optional
        ``topic`` and one column per coherence (``npmi``, ``cv``): each is ranked against
        people's θ-agreement with topics resampled in pairs (not as ProxAnn's notebook, see
        :func:`topic_ranking_tau`).

    Returns
    -------
    pandas.DataFrame
        One row per (scorer, answer): ``scorer``, ``answer`` (fit or rank), ``tau``, ``se``,
        ``low``, ``high``, ``point``, ``n_topics``, ``document_tau`` (mean over topics of the
        judge's τ against people's means; NaN for a coherence).
    """
    people_agreement = people_topic_agreement(people, documents, use_assignments=use_assignments)
    rows = []
    for name, answers in judges.items():
        agreement = judge_topic_agreement(answers, people, documents, use_assignments=use_assignments)
        paired = agreement.merge(people_agreement, on="topic", suffixes=("", "_of_people"))
        for answer in ANSWERS:
            tau = topic_ranking_tau(paired[f"{answer}_tau"], paired[f"{answer}_tau_of_people"],
                                    n_resamples=n_resamples, seed=seed)
            rows.append(_row(name, answer, tau, float(paired[f"{answer}_tau_people"].mean())))
    if coherences is not None:
        paired = people_agreement.merge(coherences, on="topic")
        for name in [column for column in coherences.columns if column != "topic"]:
            for answer in ANSWERS:
                tau = topic_ranking_tau(paired[name], paired[f"{answer}_tau"], n_resamples=n_resamples, seed=seed)
                rows.append(_row(name, answer, tau, np.nan))
    return pd.DataFrame(rows)


def _row(name: str, answer: str, tau: RankingTau, document_tau: float) -> dict:
    return {"scorer": name, "answer": answer, "tau": tau.mean, "se": tau.se, "low": tau.low, "high": tau.high,
            "point": tau.point, "n_topics": tau.n_topics, "document_tau": document_tau}
