"""Topics as people use them, asked of an LLM: how well documents fit a topic and rank, against θ (ProxAnn).

ProxAnn (Hoyle, Calvo-Bartolomé, Boyd-Graber and Resnik, ACL 2025; code ``ahoho/proxann`` at
3583fa4, ``src/proxann/llm_annotations/``) shows a person, or an LLM in their place, a topic's top
words and exemplar documents, asks for the category they share, then how well each of a few
evaluation documents fits it and how they rank; the answers are compared with the model's own θ.
Per judged topic (the :attr:`~.llm_judging.JudgeSettings.document_topics` most prevalent):

1. **exemplars**: the topic's ``exemplar_documents`` highest-θ documents (ProxAnn's ``thetas``
   selection; their user study sampled above an elbow of θ).
2. **evaluation documents**, drawn across θ as ProxAnn's ``DocSelector._select_ids_nparts``:
   ``evaluation_documents`` targets evenly spaced from the largest θ of the other documents
   down to 0, each taken by the unpicked document whose θ is closest. Ties are broken by a
   permutation drawn from (seed, topic): a sparse θ (E-LDA's links) puts most documents at 0.
3. **label** (their ``q1`` prompt): the top 10 words and the exemplars' excerpts; the reply is the
   category. Without ProxAnn's two few-shot examples, which would take most of a small
   endpoint's context.
4. **fit** (``q2_mean``): each evaluation document's fit to the category, 1 to 5. Where the
   endpoint returns log-probabilities, the expected score over the first token's "1" to "5",
   renormalised over the five (ProxAnn's ``extract_info_mean_q2`` sums k p(k) without
   renormalising: the same where the five hold the mass); else the mean of ``rating_samples``
   sampled answers.
5. **rank** (``q3_mean``): every pair of evaluation documents, asked in both orders. A pair goes
   to the document with the larger probability of being picked, summed over both orders (from
   the log-probabilities of "A" and "B", ProxAnn's ``extract_info_mean_q3``; a parsed answer
   counts 1); equal sums compare nothing. Bradley-Terry strengths of the comparisons (ProxAnn:
   ``choix.ilsr_pairwise``) are the judge's ranking.
6. **agreement**: Kendall's τ-b (``scipy.stats.kendalltau``, as ProxAnn's
   ``compute_llm_tm_corrs``) between the evaluation documents' θ and the fit scores
   (``llm_fit``) or the strengths (``llm_rank``), in [-1, 1]. A topic whose answers are all
   equal has no τ and counts as unanswered.

Excerpts are the first ``excerpt_words`` words of a document's text, extended to the end of the
sentence (ProxAnn's ``extend_to_full_sentence``; here to at most twice as many words), then
shortened to :func:`excerpt_token_limit` tokens so that the label prompt, which shows the most
text, fits ``context_tokens``. Tokens are counted by ``judge.count_tokens(text)`` where the judge
has one, else estimated at one per :data:`~topicbench.core.constants.LLM_CHARS_PER_TOKEN` characters.
ProxAnn's prompts, and how a reply is read, are :mod:`.llm_document_prompts`'s. The requests and
the reading of answers follow :mod:`.llm_judging`: pure functions of the output, the corpus, the
seed and the settings, a non-answer asked again up to ``retries`` times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from topicbench.core.constants import BRADLEY_TERRY_ALPHA, LLM_CHARS_PER_TOKEN
from ..output import is_scipy_sparse
from ..validation import InputError
from .llm_document_prompts import (
    LABEL_PROMPT, LABEL_SYSTEM_PROMPT, LABEL_TOKENS, LABEL_WORDS, TEMPLATE_TOKENS, choice_probabilities, expected_fit,
    fit_request, label_request, parse_choice, parse_fit, parse_label, rank_request,
)
from .llm_judging import JudgeSettings, TopicJudgements, judged_topics


@dataclass(frozen=True)
class TopicDocuments:
    """What a topic's questions show: its top words, exemplar and evaluation documents (ids, the
    evaluation ones by θ high to low) and the evaluation documents' θ."""

    topic: int
    words: tuple
    exemplars: tuple
    evaluation: tuple
    theta: tuple


# -- what is shown ------------------------------------------------------------------------------


def topic_documents(theta, topic: int, words, settings: JudgeSettings, seed: int) -> TopicDocuments:
    """The exemplar and evaluation documents of one topic, from its row of θ (one value per
    document): exemplars by θ high to low (ties: the lower id), evaluation documents drawn across
    θ (see the module's step 2)."""
    theta = np.asarray(theta, dtype=np.float64)
    exemplars = np.lexsort((np.arange(len(theta)), -theta))[: settings.exemplar_documents]
    order = np.random.default_rng([int(seed), 4, int(topic)]).permutation(len(theta))
    candidates = theta[order].copy()
    candidates[np.isin(order, exemplars)] = np.inf
    top = candidates[np.isfinite(candidates)].max()
    picked = []
    for target in np.linspace(top, 0.0, settings.evaluation_documents):
        position = int(np.argmin(np.abs(candidates - target)))
        picked.append(int(order[position]))
        candidates[position] = np.inf
    picked.sort(key=lambda d: (-theta[d], d))
    return TopicDocuments(int(topic), tuple(words[:LABEL_WORDS]), tuple(int(d) for d in exemplars), tuple(picked),
                          tuple(float(theta[d]) for d in picked))


def theta_row(matrix, topic: int) -> np.ndarray:
    """Row ``topic`` of a topic-document matrix, dense or sparse (E-LDA's), as float64."""
    if is_scipy_sparse(matrix):
        return np.asarray(matrix.tocsr()[topic].toarray(), dtype=np.float64).ravel()
    return np.asarray(matrix[topic], dtype=np.float64).ravel()


def token_counter(judge):
    """``count(text) -> tokens``: the judge's own ``count_tokens`` where it has one (the endpoint's
    tokenizer), else the estimate of one token per ``LLM_CHARS_PER_TOKEN`` characters."""
    counter = getattr(judge, "count_tokens", None)
    return counter if callable(counter) else (lambda text: math.ceil(len(text) / LLM_CHARS_PER_TOKEN))


def excerpt_token_limit(settings: JudgeSettings, count_tokens) -> int:
    """Tokens one excerpt may take: the context less the label prompt's own text, its chat
    template and its reply, shared among the exemplars (two at least: a ranking question shows
    two documents). Raises :class:`~topicbench.core.validation.InputError` when too few are left."""
    overhead = count_tokens(LABEL_SYSTEM_PROMPT + LABEL_PROMPT.format(keywords=" ".join(["keywords"] * LABEL_WORDS),
                                                                     documents=""))
    shown = max(settings.exemplar_documents, 2)
    limit = (settings.context_tokens - overhead - TEMPLATE_TOKENS - LABEL_TOKENS - 4 * shown) // shown
    if limit < 16:
        raise InputError(f"llm.context_tokens {settings.context_tokens} leaves {limit} tokens for each of "
                         f"{shown} document excerpts: raise it to the endpoint's context, or lower "
                         "llm.exemplar_documents")
    return limit


def excerpt(text: str, settings: JudgeSettings, limit: int, count_tokens) -> str:
    """A document as shown: its first ``excerpt_words`` words, extended to the end of the
    sentence (at most twice as many words), then cut by words to ``limit`` tokens."""
    words = text.split()
    shown = words[: settings.excerpt_words]
    rest = words[settings.excerpt_words: 2 * settings.excerpt_words]
    end = next((i for i, word in enumerate(rest) if "." in word), None)
    if end is not None:
        shown = shown + rest[: end + 1]
    result = " ".join(shown)
    while len(shown) > 1 and count_tokens(result) > limit:
        shown = shown[: max(1, min(len(shown) - 1, len(shown) * limit // max(count_tokens(result), 1)))]
        result = " ".join(shown)
    return result


# -- scoring ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicQuestions:
    """A judged topic's documents, as shown (excerpts by document id), and its category (None
    when no reply named one)."""

    shown: TopicDocuments
    excerpts: dict
    category: str | None


def _collect(keys, build, read, judge, wanted: int, limit: int) -> dict:
    """{key: [values read]}: each key's question asked (``build(key, ask)``) until ``wanted``
    values are read or a final one, at most ``limit`` times. ``read(reply)`` returns (value,
    final) or None for a non-answer; a final value replaces those read before it."""
    values = {key: [] for key in keys}
    final = set()
    asked = dict.fromkeys(keys, 0)
    pending = list(keys)
    while pending:
        for key, reply in zip(pending, judge.ask([build(key, asked[key]) for key in pending])):
            asked[key] += 1
            read_value = read(reply)
            if read_value is None or key in final:
                continue
            if read_value[1]:  # a final value stands alone (an expectation over every answer)
                values[key] = [read_value[0]]
                final.add(key)
            else:
                values[key].append(read_value[0])
        pending = [key for key in keys if key not in final and len(values[key]) < wanted and asked[key] < limit]
    return values


def topic_questions(output, corpus, judge, settings: JudgeSettings, seed: int) -> list:
    """The :class:`TopicQuestions` of an output's ``document_topics`` most prevalent topics, their
    categories asked (a non-answer asked again up to ``retries`` times)."""
    count_tokens = token_counter(judge)
    limit = excerpt_token_limit(settings, count_tokens)
    prepared = {}
    for topic in judged_topics(output, settings.document_topics):
        shown = topic_documents(theta_row(output.topic_document_matrix, topic), topic, output.topics[topic], settings,
                                seed)
        excerpts = {d: excerpt(corpus.document_text(d), settings, limit, count_tokens)
                    for d in shown.exemplars + shown.evaluation}
        prepared[topic] = (shown, excerpts)
    return ask_categories(prepared, judge, settings)


def ask_categories(prepared: dict, judge, settings: JudgeSettings) -> list:
    """A :class:`TopicQuestions` per entry of ``prepared`` (key -> (shown, excerpts by document
    key)), its category asked from the top words and the exemplars' excerpts (a non-answer asked
    again up to ``retries`` times; None where none came)."""

    def build(key, ask):
        shown, excerpts = prepared[key]
        return label_request(shown, [excerpts[d] for d in shown.exemplars], settings, ask)

    def read(reply):
        category = parse_label(reply.text)
        return None if category is None else (category, True)

    labels = _collect(list(prepared), build, read, judge, 1, 1 + settings.retries)
    return [TopicQuestions(shown, excerpts, (labels[key] or [None])[0]) for key, (shown, excerpts) in prepared.items()]


def fit_agreement(questions, judge, settings: JudgeSettings) -> TopicJudgements:
    """Each topic's τ-b between its evaluation documents' θ and their fit scores (expected from
    log-probabilities, else the mean of ``rating_samples`` answers); NaN without a category, a
    fit for two documents, or a τ (all answers equal)."""
    fits = ask_fits(questions, judge, settings)
    scores = []
    for question in questions:
        shown = question.shown
        pairs = [(theta, np.mean(fits[shown.topic, d])) for d, theta in zip(shown.evaluation, shown.theta)
                 if fits.get((shown.topic, d))]
        scores.append(kendall_tau_b(*zip(*pairs)) if len(pairs) >= 2 else math.nan)
    return TopicJudgements(tuple(q.shown.topic for q in questions), tuple(scores))


def ask_fits(questions, judge, settings: JudgeSettings) -> dict:
    """{(topic, evaluation document): fit values read} for the questions with a category: each
    document's fit to the category, expected from log-probabilities, else ``rating_samples``
    sampled answers."""
    by_topic = {q.shown.topic: q for q in questions if q.category is not None}
    keys = [(topic, d) for topic, q in by_topic.items() for d in q.shown.evaluation]

    def build(key, ask):
        question = by_topic[key[0]]
        return fit_request(question.category, question.excerpts[key[1]], settings, ask)

    def read(reply):
        expected = expected_fit(reply.top_logprobs)
        if expected is not None:
            return expected, True
        score = parse_fit(reply.text)
        return None if score is None else (float(score), False)

    return _collect(keys, build, read, judge, settings.rating_samples, settings.rating_samples + settings.retries)


def rank_agreement(questions, judge, settings: JudgeSettings) -> TopicJudgements:
    """Each topic's τ-b between its evaluation documents' θ and their Bradley-Terry strengths from
    the judge's pairwise choices (every pair asked in both orders); NaN without a category, a
    comparison, or a τ."""
    choices = ask_pair_choices(questions, judge, settings)
    scores = []
    for question in questions:
        comparisons = _pair_winners(question, choices)
        if not comparisons:
            scores.append(math.nan)
            continue
        strengths = bradley_terry(len(question.shown.evaluation), comparisons)
        scores.append(kendall_tau_b(question.shown.theta, strengths))
    return TopicJudgements(tuple(q.shown.topic for q in questions), tuple(scores))


def ask_pair_choices(questions, judge, settings: JudgeSettings) -> dict:
    """{(topic, i, j, flipped): (P(first), P(second)) read} for the questions with a category:
    every pair of evaluation slots asked in both orders (position bias cancels)."""
    by_topic = {q.shown.topic: q for q in questions if q.category is not None}
    keys = [(topic, i, j, flipped) for topic, q in by_topic.items() for i in range(len(q.shown.evaluation))
            for j in range(i + 1, len(q.shown.evaluation)) for flipped in (False, True)]

    def build(key, ask):
        topic, i, j, flipped = key
        question = by_topic[topic]
        first, second = (question.shown.evaluation[j], question.shown.evaluation[i]) if flipped else (
            question.shown.evaluation[i], question.shown.evaluation[j])
        return rank_request(question.category, question.excerpts[first], question.excerpts[second], settings, ask)

    def read(reply):
        probabilities = choice_probabilities(reply.top_logprobs)
        if probabilities is None:
            choice = parse_choice(reply.text)
            probabilities = None if choice is None else ((1.0, 0.0) if choice == "A" else (0.0, 1.0))
        return None if probabilities is None else (probabilities, True)

    return _collect(keys, build, read, judge, 1, 1 + settings.retries)


def _pair_winners(question: TopicQuestions, choices: dict) -> list:
    """(winner, loser) positions among the evaluation documents: per pair, the one with the larger
    probability of being picked summed over both orders (equal sums: no comparison)."""
    winners = []
    n = len(question.shown.evaluation)
    for i in range(n):
        for j in range(i + 1, n):
            mass_i = mass_j = 0.0
            for flipped in (False, True):
                for p_first, p_second in choices.get((question.shown.topic, i, j, flipped), ()):
                    mass_i += p_second if flipped else p_first
                    mass_j += p_first if flipped else p_second
            if mass_i != mass_j:
                winners.append((i, j) if mass_i > mass_j else (j, i))
    return winners


def bradley_terry(n_items: int, comparisons, alpha: float = BRADLEY_TERRY_ALPHA) -> np.ndarray:
    """Bradley-Terry strengths s of ``n_items`` from (winner, loser) pairs: the maximiser of
    Σ log σ(s_winner - s_loser) - (α/2) ‖s‖² (scipy's L-BFGS), rounded to 6 decimals so that
    items with the same record tie. With every pair compared once, the strengths rank the items
    as their numbers of wins do."""
    from scipy.optimize import minimize
    from scipy.special import expit

    winners, losers = (np.asarray(side, dtype=np.int64) for side in zip(*comparisons))

    def objective(strengths):
        margin = strengths[winners] - strengths[losers]
        slope = -expit(-margin)
        gradient = np.bincount(winners, slope, n_items) - np.bincount(losers, slope, n_items) + alpha * strengths
        return np.logaddexp(0.0, -margin).sum() + 0.5 * alpha * strengths @ strengths, gradient

    result = minimize(objective, np.zeros(n_items), jac=True, method="L-BFGS-B", options={"gtol": 1e-10})
    return np.round(result.x, 6)


def kendall_tau_b(first, second) -> float:
    """Kendall's τ-b of two paired sequences (scipy); NaN where either is constant."""
    from scipy.stats import kendalltau

    first, second = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    if len(first) < 2 or np.ptp(first) == 0 or np.ptp(second) == 0:
        return math.nan
    return float(kendalltau(first, second, variant="b").statistic)
