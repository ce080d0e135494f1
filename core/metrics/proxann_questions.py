"""The questions people answered in ProxAnn's user study, asked of an LLM judge: per study topic,
the category (top words and the exemplars shown to people), each evaluation document's fit, and
every pair of evaluation documents in both orders, through the question builders and answer
readers of :mod:`.llm_documents` (the same prompts as ``llm_fit`` and ``llm_rank``).

The answers come back per document, in the order people saw them, so that
:mod:`.proxann_agreement` and :mod:`.alternative_annotator` score them beside people's and the released
LLMs': ``fit`` the expected (or mean sampled) 1-5 score, ``rank`` the document's rank by its
Bradley-Terry strength (1 = least related, ties averaged), as ProxAnn's ``rank_data``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .llm_documents import (TopicDocuments, _pair_winners, ask_categories, ask_fits, ask_pair_choices,
                            bradley_terry, excerpt, excerpt_token_limit, token_counter)
from .llm_judging import JudgeSettings


def study_questions(topics: pd.DataFrame, documents: pd.DataFrame, judge, settings: JudgeSettings) -> list:
    """The :class:`~.llm_documents.TopicQuestions` of the study's ``topics`` (rows of
    :attr:`~topicbench.core.proxann_data.StudyInputs.topics`; ``shown.topic`` is the row's
    position), their documents cut to excerpts for the judge's context and their categories
    asked (a non-answer asked again up to ``retries`` times).

    Documents are keyed by position: exemplar ``k`` as ``-(k + 1)``, evaluation document ``p``
    as ``p``, so that answers map back to the documents people rated.
    """
    count_tokens = token_counter(judge)
    limit = excerpt_token_limit(settings, count_tokens)
    prepared = {}
    for index, topic in enumerate(topics["topic"]):
        shown_here = documents[documents["topic"] == topic]
        exemplars = shown_here[shown_here["role"] == "exemplar"].sort_values("position")
        evaluation = shown_here[shown_here["role"] == "evaluation"].sort_values("position")
        texts = {-(int(k) + 1): text for k, text in zip(exemplars["position"], exemplars["text"])}
        texts.update({int(p): text for p, text in zip(evaluation["position"], evaluation["text"])})
        shown = TopicDocuments(index, tuple(topics["words"].iloc[index])[:10],
                               tuple(-(int(k) + 1) for k in exemplars["position"]),
                               tuple(int(p) for p in evaluation["position"]), tuple(evaluation["theta"]))
        prepared[index] = (shown, {key: excerpt(text, settings, limit, count_tokens) for key, text in texts.items()})
    return ask_categories(prepared, judge, settings)


def study_answers(topics: pd.DataFrame, questions: list, judge, settings: JudgeSettings) -> pd.DataFrame:
    """The judge's fit and rank answers to the evaluation documents of ``questions``.

    Returns
    -------
    pandas.DataFrame
        Columns ``topic`` (the study's key), ``position``, ``category``, ``fit`` and ``rank``
        (NaN where the judge named no category, or gave no answer for the document).
    """
    fits = ask_fits(questions, judge, settings)
    ranks = _document_ranks(questions, judge, settings)
    rows = []
    for question in questions:
        shown = question.shown
        for slot, position in enumerate(shown.evaluation):
            values = fits.get((shown.topic, position))
            rows.append({"topic": topics["topic"].iloc[shown.topic], "position": position,
                         "category": question.category, "fit": float(np.mean(values)) if values else math.nan,
                         "rank": ranks.get(shown.topic, [math.nan] * len(shown.evaluation))[slot]})
    return pd.DataFrame(rows)


def _document_ranks(questions, judge, settings: JudgeSettings) -> dict:
    """{topic: rank per evaluation slot}: every pair asked in both orders, as
    :func:`~.llm_documents.rank_agreement` asks; ranks of the Bradley-Terry strengths."""
    from scipy.stats import rankdata

    choices = ask_pair_choices(questions, judge, settings)
    ranks = {}
    for question in questions:
        comparisons = _pair_winners(question, choices) if question.category is not None else []
        if comparisons:
            ranks[question.shown.topic] = list(rankdata(bradley_terry(len(question.shown.evaluation), comparisons)))
    return ranks
