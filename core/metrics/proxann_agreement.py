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
- **topic-ranking τ**: Kendall's τ, over topics, between the judge's θ-agreement and people's.
  The figure is τ on the topics as given; its 95% interval is a percentile bootstrap of
  :data:`~.bootstrap.BOOTSTRAP_RESAMPLES` (2,000) paired resamples of the topics. ProxAnn's own
  protocol (50 resamples, ``RandomState(42)``, their mean and standard deviation as "τ (SE)") is
  replayed beside it (:func:`proxann_replay`), never as the figure: its mean is one seed's draw
  around τ (Llama-3.1-8B's fit: 0.16 at seed 42, 0.075-0.143 at seeds 0-19, τ 0.12);
- **people's own ranking τ**: one person left out per topic at random, τ over topics between the
  rest's θ-agreement and the left-out person's (ProxAnn's ``loo_from_corr_data``, 100 draws): the
  mean over draws, and their spread over which person is left out (not a standard error); a draw
  with an undefined τ is dropped, and counted.

A τ of constant answers is undefined (NaN): topic pairs with a NaN are left out of a topic-ranking
τ, as ProxAnn's ``nan_policy="omit"`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..validation import InputError
from .bootstrap import (BOOTSTRAP_RESAMPLES, BootstrapInterval, kendall_tau_b_resampled, paired_resamples,
                        percentile_interval)
from .llm_documents import kendall_tau_b

#: ProxAnn's resamples of topics (Table 4) and of left-out people (its "Human" row).
TOPIC_RESAMPLES, PEOPLE_RESAMPLES = 50, 100
PROXANN_SEED = 42
ANSWERS = ("fit", "rank")


class AgreementInputError(InputError):
    """Answers that cannot be scored: a missing column, or topics and documents that do not match."""


@dataclass(frozen=True)
class RankingTau:
    """Kendall's τ between two rankings of topics: the point estimate and its bootstrap interval.

    Attributes
    ----------
    tau : float
        τ on the topics as given (topics where either score is undefined left out): the figure.
    interval : BootstrapInterval
        Its percentile bootstrap over paired resamples of those topics (``low``, ``high``,
        ``se``, ``resamples``, ``undefined``, ``method``).
    n_topics : int
        Topics with both scores defined.
    """

    tau: float
    interval: BootstrapInterval
    n_topics: int


@dataclass(frozen=True)
class ProxAnnReplay:
    """ProxAnn's protocol, replayed draw for draw: the ``mean`` and standard deviation (``se``,
    their "SE") of τ over ``resamples`` (50) resamples of the topics at ``seed`` (42), and the
    2.5-97.5 percentiles of those resamples. A seed's draw, shown as such, never as the figure."""

    mean: float
    se: float
    low: float
    high: float
    resamples: int
    seed: int

    def as_text(self) -> str:
        return f"ProxAnn's protocol: mean of {self.resamples} resamples at seed {self.seed}"


@dataclass(frozen=True)
class PeopleTau:
    """People's own topic-ranking τ over draws of who is left out.

    Attributes
    ----------
    mean : float
        Mean τ over the draws with a defined τ.
    spread : float
        Their standard deviation: the spread over which person is left out, not a standard error
        of the mean (the topics are the same in every draw).
    low, high : float
        The 2.5 and 97.5 percentiles of those draws.
    draws, dropped : int
        Draws made; of them, those with an undefined τ (a left-out person with constant answers
        on a topic), dropped.
    n_topics : int
    """

    mean: float
    spread: float
    low: float
    high: float
    draws: int
    dropped: int
    n_topics: int

    def dropped_text(self) -> str:
        return f"{self.dropped} of {self.draws} draws had an undefined τ and were dropped"


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


def _check_scores(judge_scores, people_scores) -> tuple:
    judge_scores = np.asarray(judge_scores, dtype=np.float64)
    people_scores = np.asarray(people_scores, dtype=np.float64)
    if judge_scores.shape != people_scores.shape or judge_scores.ndim != 1 or len(judge_scores) < 2:
        raise AgreementInputError(f"topic-ranking τ needs two per-topic scores of the same length >= 2, got "
                                  f"{judge_scores.shape} and {people_scores.shape}")
    return judge_scores, people_scores


def topic_ranking_tau(judge_scores, people_scores, *, n_resamples: int = BOOTSTRAP_RESAMPLES,
                      seed: int = 0) -> RankingTau:
    """Kendall's τ-b between two per-topic scores (same topics, same order: sorted by topic),
    with its percentile bootstrap interval over ``n_resamples`` paired resamples of the topics.

    Topics where either score is undefined (NaN) are left out of τ and of the resamples.

    Parameters
    ----------
    judge_scores, people_scores : array-like of shape (n_topics,)
        E.g. a judge's ``fit_tau`` and people's ``fit_tau``, or NPMI and people's ``fit_tau``.
    """
    judge_scores, people_scores = _check_scores(judge_scores, people_scores)
    defined = np.isfinite(judge_scores) & np.isfinite(people_scores)
    first, second = judge_scores[defined], people_scores[defined]
    n_topics = int(defined.sum())
    if n_topics < 2:
        return RankingTau(math.nan, percentile_interval([math.nan] * n_resamples, n_topics), n_topics)
    picks = paired_resamples(n_topics, n_resamples, np.random.default_rng(seed))
    interval = percentile_interval(kendall_tau_b_resampled(first, second, picks), n_topics)
    return RankingTau(kendall_tau_b(first, second), interval, n_topics)


def proxann_replay(judge_scores, people_scores, *, n_resamples: int = TOPIC_RESAMPLES, seed: int = PROXANN_SEED,
                   resample_judge: bool = True) -> ProxAnnReplay:
    """ProxAnn's "τ (SE)", replayed: the mean and standard deviation of τ over ``n_resamples``
    resamples of the topics.

    The draws are ProxAnn's: ``numpy.random.RandomState(seed)``, one ``randint(0, n, n)`` per
    resample (what ``DataFrame.sample(frac=1, replace=True)`` draws), so that ``seed=42`` gives
    their Table 4 figures; topic pairs with a NaN are left out of each τ (their
    ``nan_policy="omit"``).

    Parameters
    ----------
    resample_judge : bool
        ``False`` keeps ``judge_scores`` in its original order while people's scores are
        resampled, as ProxAnn's notebook did for NPMI and C_V (their lists were not resampled
        with the table): the pairing is then broken, and τ is near 0 whatever NPMI is. Only
        for reproducing their NPMI figure.
    """
    judge_scores, people_scores = _check_scores(judge_scores, people_scores)
    n_topics = len(judge_scores)
    draws = np.random.RandomState(seed)
    resampled = []
    for _ in range(n_resamples):
        chosen = np.sort(draws.randint(0, n_topics, size=n_topics))
        first = judge_scores[chosen] if resample_judge else judge_scores
        resampled.append(_tau_omitting_nan(first, people_scores[chosen]))
    values = np.asarray([value for value in resampled if np.isfinite(value)])
    if not len(values):
        return ProxAnnReplay(math.nan, math.nan, math.nan, math.nan, n_resamples, seed)
    low, high = np.percentile(values, [2.5, 97.5])
    return ProxAnnReplay(float(values.mean()), float(values.std()), float(low), float(high), n_resamples, seed)


def people_ranking_tau(people: pd.DataFrame, documents: pd.DataFrame, *, n_resamples: int = PEOPLE_RESAMPLES,
                       seed: int = 0, use_assignments: bool = False) -> dict:
    """People's own topic-ranking agreement: per draw, one person per topic is left out at
    random; τ over topics between the θ-agreement of the others and of the left-out person.

    Returns ``{"fit": PeopleTau, "rank": PeopleTau}``. As in ProxAnn, a draw where a topic's
    left-out person gave constant answers (τ undefined) gives no τ and is dropped (pandas'
    ``mean`` skips it there); here the dropped draws are counted. The spread is the standard
    deviation of the draws (ddof 1, pandas'): how much τ moves with who is left out.
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
    return {answer: _people_tau(values, len(by_topic)) for answer, values in taus.items()}


def _people_tau(draws, n_topics: int) -> PeopleTau:
    values = np.asarray(draws, dtype=np.float64)
    kept = values[np.isfinite(values)]
    dropped = int(len(values) - len(kept))
    if not len(kept):
        return PeopleTau(math.nan, math.nan, math.nan, math.nan, len(values), dropped, n_topics)
    low, high = np.percentile(kept, [2.5, 97.5])
    spread = float(np.std(kept, ddof=1)) if len(kept) > 1 else math.nan
    return PeopleTau(float(kept.mean()), spread, float(low), float(high), len(values), dropped, n_topics)


#: The suffix of a coherence's row replaying ProxAnn's pairing (its list not resampled with the topics).
PROXANN_PAIRING = " (ProxAnn's pairing)"


def calibration_table(judges: dict, people: pd.DataFrame, documents: pd.DataFrame, coherences=None, *,
                      use_assignments: bool = False, n_resamples: int = BOOTSTRAP_RESAMPLES,
                      seed: int = 0) -> pd.DataFrame:
    """ProxAnn's Table 4 for one collection: per judge (and coherence), the topic-ranking τ of
    its fit and rank θ-agreement against people's, with its bootstrap interval, ProxAnn's
    protocol replayed beside it, and the mean per-document agreement with people.

    Parameters
    ----------
    judges : dict
        Name -> answers with ``topic``, ``position``, ``fit``, ``rank`` (one per document).
    coherences : pandas.DataFrame, optional
        ``topic`` and one column per coherence (``npmi``, ``cv``): each is ranked against
        people's θ-agreement, paired topic by topic (the row named as the column). A second row,
        named with :data:`PROXANN_PAIRING`, replays ProxAnn's notebook, which resampled the topics
        but not the coherence beside them (see :func:`proxann_replay`): it has the replay only.
    n_resamples, seed : int
        The bootstrap's resamples and seed (ProxAnn's replay keeps its own 50 at seed 42).

    Returns
    -------
    pandas.DataFrame
        One row per (scorer, answer): ``scorer``, ``answer`` (fit or rank), ``tau`` (τ on the
        topics as given), ``se`` (bootstrap standard error), ``low`` and ``high`` (95% percentile
        bootstrap), ``n_topics``, ``resamples``, ``undefined`` (resamples with no τ), ``method``,
        ``proxann_tau`` and ``proxann_se`` (ProxAnn's protocol: mean and standard deviation of 50
        resamples at seed 42), ``document_tau`` (mean over topics of the judge's τ against people's
        means; NaN for a coherence).
    """
    people_agreement = people_topic_agreement(people, documents, use_assignments=use_assignments)
    rows = []

    def add(name, answer, scores, of_people, document_tau=math.nan):
        tau = topic_ranking_tau(scores, of_people, n_resamples=n_resamples, seed=seed)
        rows.append(_row(name, answer, tau, proxann_replay(scores, of_people), document_tau))

    for name, answers in judges.items():
        agreement = judge_topic_agreement(answers, people, documents, use_assignments=use_assignments)
        paired = agreement.merge(people_agreement, on="topic", suffixes=("", "_of_people"))
        for answer in ANSWERS:
            add(name, answer, paired[f"{answer}_tau"], paired[f"{answer}_tau_of_people"],
                float(paired[f"{answer}_tau_people"].mean()))
    if coherences is not None:
        paired = people_agreement.merge(coherences, on="topic")
        names = [column for column in coherences.columns if column != "topic"]
        for name in names:
            for answer in ANSWERS:
                add(name, answer, paired[name], paired[f"{answer}_tau"])
        for name in names:
            for answer in ANSWERS:
                replay = proxann_replay(paired[name], paired[f"{answer}_tau"], resample_judge=False)
                rows.append(_replay_row(name + PROXANN_PAIRING, answer, replay, len(paired)))
    return pd.DataFrame(rows)


def _row(name: str, answer: str, tau: RankingTau, replay: ProxAnnReplay, document_tau: float) -> dict:
    interval = tau.interval
    return {"scorer": name, "answer": answer, "tau": tau.tau, "se": interval.se, "low": interval.low,
            "high": interval.high, "n_topics": tau.n_topics, "resamples": interval.resamples,
            "undefined": interval.undefined, "method": interval.method, "proxann_tau": replay.mean,
            "proxann_se": replay.se, "document_tau": document_tau}


def _replay_row(name: str, answer: str, replay: ProxAnnReplay, n_topics: int) -> dict:
    """A row with ProxAnn's replay only: its pairing has no point estimate of its own."""
    return {"scorer": name, "answer": answer, "tau": math.nan, "se": math.nan, "low": math.nan, "high": math.nan,
            "n_topics": n_topics, "resamples": 0, "undefined": 0, "method": replay.as_text(),
            "proxann_tau": replay.mean, "proxann_se": replay.se, "document_tau": math.nan}
