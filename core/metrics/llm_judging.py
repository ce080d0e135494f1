"""Topic quality as people judge it, asked of a large language model: rating and word intrusion.

Automated coherence disagrees with people (Hoyle et al., NeurIPS 2021); an LLM asked what people
were asked tracks them better (Stammbach et al., EMNLP 2023). Two tasks, worded as in Stammbach
et al.'s code (``dominiksinsaarland/evaluating-topic-model-output``):

- **rating**: a topic's top 10 words, shuffled, rated 1 (not very related) to 3 (very related).
  Where the endpoint returns log-probabilities of its first token, a topic's score is the
  expected rating over the answers "1", "2" and "3" (their probabilities renormalised); otherwise
  the mean of :attr:`JudgeSettings.rating_samples` sampled answers.
- **intrusion** (Chang et al., NeurIPS 2009): five of the topic's top 10 words and one intruder,
  shuffled; the score is the share of draws in which the intruder is picked. The intruder is
  likely in another topic and unlikely in this one: one of another topic's top 10 words that is
  none of this topic's top 50 (Hoyle et al.'s rule), drawn with a seeded generator.

A reply that is not an answer (no rating, no word of those shown) is asked again, up to
:attr:`JudgeSettings.retries` more times, then counted as missing: never guessed. Every prompt is
a pure function of the output, the seed and the settings, so the same run asks the same
questions, which a cache answers the second time.

This module is pure: the asking is done by the judge of the metric context, any object with
``ask(requests) -> replies`` (:class:`JudgeRequest` in, :class:`JudgeReply` out, in order);
``topicbench.tasks.llm.judge`` asks an OpenAI-compatible endpoint with a cache.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ..output import is_scipy_sparse
from ..topic_word import ConstantPlusSparse

#: Stammbach et al. 2023, the rating prompt without a corpus description.
RATING_PROMPT = (
    "You are a helpful assistant evaluating the top words of a topic model output for a given topic. "
    "Please rate how related the following words are to each other on a scale from 1 to 3 "
    '("1" = not very related, "2" = moderately related, "3" = very related). \n'
    "Reply with a single number, indicating the overall appropriateness of the topic."
)
#: Stammbach et al. 2023, the intrusion prompt without a corpus description.
INTRUSION_PROMPT = (
    "You are a helpful assistant evaluating the top words of a topic model output for a given topic. "
    "Select which word is the least related to all other words. If multiple words do not fit, choose "
    "the word that is most out of place.\nReply with a single word."
)
RATINGS = ("1", "2", "3")
#: task -> ``check(request, reply) -> bool``, for the tasks other modules ask (their questions are
#: built there, so a check is registered before any of them is asked): :func:`is_answer` reads it.
ANSWER_CHECKS: dict = {}
_TASK_IDS = {"rating": 1, "intrusion": 2}


@dataclass(frozen=True)
class JudgeSettings:
    """How the tasks are asked; recorded with every run.

    Parameters
    ----------
    top_words : int
        Words of a topic rated, and the pool intrusion shows words from (Stammbach et al.: 10).
    rating_samples : int
        Answers averaged per topic when the endpoint gives no log-probabilities (Stammbach et
        al. drew 3 at temperature 1).
    intrusion_draws : int
        Intruders drawn per topic.
    intrusion_words : int
        Topic words shown beside the intruder (Stammbach et al.: 5).
    intruder_exclusion : int
        An intruder is none of the topic's top this-many words (Hoyle et al.: 50).
    max_topics : int
        Topics judged per output: the most prevalent ones (by their share of documents), so that
        a model with 8,000 topics costs what one with 50 does.
    retries : int
        Further requests when a reply is not an answer, before it counts as missing.
    temperature : float
        Sampling temperature (Stammbach et al.: 1.0 for ratings); the document-level tasks ask
        their first time at 0 (ProxAnn) and sample further answers at this temperature.
    document_topics : int
        Topics judged per output by ``llm_fit`` and ``llm_rank``: the most prevalent ones (ProxAnn's
        study: 8 a model).
    exemplar_documents : int
        Highest-θ documents shown with the top words when the judge names a topic's category
        (ProxAnn: 7).
    evaluation_documents : int
        Documents drawn across θ whose fit the judge rates and ranks (ProxAnn: 7; ranking asks
        every pair in both orders, n (n - 1) requests).
    excerpt_words : int
        Words of a document shown, extended to the end of the sentence (ProxAnn: 100).
    context_tokens : int
        The endpoint's context; excerpts are shortened so that the longest prompt fits.
    """

    top_words: int = 10
    rating_samples: int = 3
    intrusion_draws: int = 3
    intrusion_words: int = 5
    intruder_exclusion: int = 50
    max_topics: int = 50
    retries: int = 2
    temperature: float = 1.0
    document_topics: int = 8
    exemplar_documents: int = 7
    evaluation_documents: int = 7
    excerpt_words: int = 100
    context_tokens: int = 2048


@dataclass(frozen=True)
class JudgeRequest:
    """One chat request: the task, its messages as ``((role, content), ...)``, the reply's token
    limit, and which ask of the same question it is (``sample``; part of the cache key)."""

    task: str
    messages: tuple
    max_tokens: int
    sample: int = 0
    temperature: float = 1.0

    def as_messages(self) -> list:
        return [{"role": role, "content": content} for role, content in self.messages]


@dataclass(frozen=True)
class JudgeReply:
    """The endpoint's answer: its text, and the first generated token's top log-probabilities
    as ``((token, logprob), ...)`` where the endpoint gives them; ``error`` when no answer came
    (the endpoint failed after its retries: the question counts as missing)."""

    text: str | None
    top_logprobs: tuple | None = None
    error: str | None = None


@dataclass(frozen=True)
class TopicJudgements:
    """Per judged topic (by row index): its score, or NaN when every ask went unanswered."""

    topics: tuple
    scores: tuple

    @property
    def answered(self) -> int:
        return sum(not math.isnan(value) for value in self.scores)

    def mean(self) -> float:
        values = [value for value in self.scores if not math.isnan(value)]
        return float(np.mean(values)) if values else float("nan")

    def per_topic(self, n_topics: int) -> np.ndarray:
        """One value per topic of the output: its score where judged, NaN elsewhere."""
        values = np.full(n_topics, np.nan)
        values[list(self.topics)] = self.scores
        return values


# -- what is asked ----------------------------------------------------------------------------


def judged_topics(output, max_topics: int) -> list:
    """The rows judged: the ``max_topics`` most prevalent topics (largest share of documents
    summed over documents; ties by row), in row order."""
    matrix = output.topic_document_matrix
    prevalence = np.asarray(matrix.sum(axis=1)).ravel() if is_scipy_sparse(matrix) else np.asarray(matrix).sum(axis=1)
    order = np.lexsort((np.arange(len(prevalence)), -prevalence))
    return sorted(int(t) for t in order[:max_topics])


def rating_request(words, settings: JudgeSettings, seed: int, topic: int, sample: int) -> JudgeRequest:
    """The rating question of one topic: its top words in an order drawn from (seed, topic, sample)."""
    shown = list(words[: settings.top_words])
    _generator(seed, "rating", topic, sample).shuffle(shown)
    return JudgeRequest("rating", (("system", RATING_PROMPT), ("user", ", ".join(shown))), max_tokens=5,
                        sample=sample, temperature=settings.temperature)


def intrusion_request(words, intruder: str, settings: JudgeSettings, seed: int, topic: int, draw: int,
                      sample: int = 0) -> JudgeRequest:
    """One intrusion question: ``intrusion_words`` of the topic's top words and the intruder, shuffled."""
    rng = _generator(seed, "intrusion", topic, draw)
    pool = list(words[: settings.top_words])
    shown = [pool[i] for i in rng.permutation(len(pool))[: settings.intrusion_words]] + [intruder]
    rng.shuffle(shown)
    user = ", ".join(f'"{word}"' for word in shown)
    return JudgeRequest("intrusion", (("system", INTRUSION_PROMPT), ("user", user)), max_tokens=15,
                        sample=sample, temperature=settings.temperature)


def intruders(output, topics, settings: JudgeSettings, seed: int) -> dict:
    """{(topic, draw): intruder word} of an output's judged ``topics``, each topic's words ranked
    by its topic-word row (:func:`draw_intruders`)."""
    depth = max(settings.intruder_exclusion, settings.top_words)
    ranked = [[output.vocabulary[w] for w in row[:depth]] for row in _top_word_ids(output, depth)]
    return draw_intruders(ranked, topics, settings, seed)


def draw_intruders(ranked_words, topics, settings: JudgeSettings, seed: int) -> dict:
    """{(topic, draw): intruder word} for each of ``topics`` with a candidate: a word among another
    topic's top ``top_words`` and none of this topic's top ``intruder_exclusion`` (Chang et al.
    2009; Hoyle et al. 2021), drawn from (seed, topic, draw). ``ranked_words`` holds each topic's
    words, best first (as many as are known, up to ``intruder_exclusion``).

    Where topics overlap so much that no other topic's top word lies outside this one's top 50 (a
    few undertrained topics over a small vocabulary), the exclusion is halved until one does, down
    to the words that could be shown (``top_words``); a topic with none even then has no intruder."""
    heads = [set(words[: settings.top_words]) for words in ranked_words]
    drawn = {}
    for topic in topics:
        others = set().union(*(heads[u] for u in range(len(heads)) if u != topic))
        candidates, depth = [], settings.intruder_exclusion
        while True:
            candidates = sorted(others - set(ranked_words[topic][:depth]))
            if candidates or depth <= settings.top_words:
                break
            depth = max(depth // 2, settings.top_words)
        if not candidates:
            continue
        for draw in range(settings.intrusion_draws):
            drawn[topic, draw] = candidates[_generator(seed, "intruder", topic, draw).integers(len(candidates))]
    return drawn


def _top_word_ids(output, n: int) -> list:
    """Each topic's ``n`` most probable word ids, best first."""
    matrix = output.topic_word_matrix
    if isinstance(matrix, ConstantPlusSparse):
        return matrix.top_columns(n)
    dense = np.asarray(matrix)
    return list(np.argsort(-dense, axis=1, kind="stable")[:, :n])


def _generator(seed: int, purpose: str, topic: int, index: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), _TASK_IDS.get(purpose, 3), int(topic), int(index)])


# -- reading replies --------------------------------------------------------------------------


def parse_rating(text: str | None) -> int | None:
    """The rating a reply gives: its first standalone 1, 2 or 3 (\"3\", \"Rating: 2.\"); None
    when it gives none, or names more than one of them ("2 or 3")."""
    if not text:
        return None
    found = re.findall(r"(?<![\d.])([123])(?!\d|\.\d)", text)
    return int(found[0]) if found and len(set(found)) == 1 else None


def parse_intruder(text: str | None, shown) -> str | None:
    """The word of ``shown`` a reply picks: the reply itself, stripped of quotes and
    punctuation, or the only shown word it contains; None otherwise."""
    if not text:
        return None
    words = {word.lower(): word for word in shown}
    cleaned = re.sub(r"^[\s\"'`*.:]+|[\s\"'`*.:!]+$", "", text.strip()).lower()
    if cleaned in words:
        return words[cleaned]
    mentioned = {word for key, word in words.items() if re.search(rf"(?<!\w){re.escape(key)}(?!\w)", text.lower())}
    return mentioned.pop() if len(mentioned) == 1 else None


def expected_rating(top_logprobs) -> float | None:
    """The expected rating under the first token's probabilities of "1", "2" and "3"
    (renormalised over the three); None when none of them is among the top log-probabilities."""
    if not top_logprobs:
        return None
    best = {}
    for token, logprob in top_logprobs:
        key = str(token).strip()
        if key in RATINGS and logprob is not None and math.isfinite(logprob):
            best[key] = max(best.get(key, -math.inf), float(logprob))
    if not best:
        return None
    peak = max(best.values())
    weights = {key: math.exp(value - peak) for key, value in best.items()}
    return sum(int(key) * weight for key, weight in weights.items()) / sum(weights.values())


def shown_words(request: JudgeRequest) -> list:
    """The words an intrusion request shows (its user message)."""
    return re.findall(r'"([^"]*)"', request.messages[-1][1])


def is_answer(request: JudgeRequest, reply: JudgeReply) -> bool:
    """Whether ``reply`` answers ``request`` as the scoring reads it: a rating from its
    log-probabilities or its text (:func:`expected_rating`, :func:`parse_rating`), or one of the
    words shown (:func:`parse_intruder`); for another task, any text. A cache keeps only
    answers: a non-answer kept would answer every later run the same way, and score nothing."""
    if reply.error is not None:
        return False
    if request.task == "rating":
        return expected_rating(reply.top_logprobs) is not None or parse_rating(reply.text) is not None
    if request.task == "intrusion":
        return parse_intruder(reply.text, shown_words(request)) is not None
    if request.task in ANSWER_CHECKS:
        return ANSWER_CHECKS[request.task](request, reply)
    return bool(reply.text)


# -- scoring ------------------------------------------------------------------------------------


def judge_ratings(output, judge, settings: JudgeSettings, seed: int) -> TopicJudgements:
    """The ratings of an output's most prevalent topics (:func:`rate_topics`)."""
    return rate_topics(output.topics, judged_topics(output, settings.max_topics), judge, settings, seed)


def judge_intrusion(output, judge, settings: JudgeSettings, seed: int) -> TopicJudgements:
    """The intrusion scores of an output's most prevalent topics (:func:`intrusion_scores`)."""
    topics = judged_topics(output, settings.max_topics)
    return intrusion_scores(output.topics, topics, intruders(output, topics, settings, seed), judge, settings, seed)


def rate_topics(word_lists, topics, judge, settings: JudgeSettings, seed: int) -> TopicJudgements:
    """Each of ``topics``' rating (rows of ``word_lists``, words best first): expected from
    log-probabilities where the endpoint gives them, else the mean of ``rating_samples`` parsed
    answers; an ask that is not answered is asked again, up to ``retries`` more times."""
    ratings = {topic: [] for topic in topics}
    expected = {}
    asked = {topic: 0 for topic in topics}
    limit = settings.rating_samples + settings.retries
    pending = list(topics)
    while pending:
        requests = [rating_request(word_lists[t], settings, seed, t, asked[t]) for t in pending]
        for topic, reply in zip(pending, judge.ask(requests)):
            asked[topic] += 1
            from_logprobs = expected_rating(reply.top_logprobs)
            if from_logprobs is not None and not ratings[topic]:
                expected[topic] = from_logprobs
                continue
            rating = parse_rating(reply.text)
            if rating is not None:
                ratings[topic].append(rating)
        pending = [t for t in topics if t not in expected and len(ratings[t]) < settings.rating_samples and asked[t] < limit]
    scores = tuple(expected[t] if t in expected else (float(np.mean(ratings[t])) if ratings[t] else math.nan) for t in topics)
    return TopicJudgements(tuple(topics), scores)


def intrusion_scores(word_lists, topics, drawn: dict, judge, settings: JudgeSettings, seed: int) -> TopicJudgements:
    """Each of ``topics``' share of draws (``drawn``: (topic, draw) -> intruder) whose intruder
    was picked, over the answered draws; NaN for a topic with no intruder or no answered draw."""
    picks = {key: None for key in drawn}
    asked = {key: 0 for key in drawn}
    pending = list(drawn)
    while pending:
        requests = [intrusion_request(word_lists[t], drawn[t, d], settings, seed, t, d, asked[t, d]) for t, d in pending]
        for key, request, reply in zip(pending, requests, judge.ask(requests)):
            asked[key] += 1
            picks[key] = parse_intruder(reply.text, shown_words(request))
        pending = [key for key in drawn if picks[key] is None and asked[key] <= settings.retries]
    scores = []
    for topic in topics:
        hits = [picks[topic, d] == drawn[topic, d] for d in range(settings.intrusion_draws) if picks.get((topic, d)) is not None]
        scores.append(float(np.mean(hits)) if hits else math.nan)
    return TopicJudgements(tuple(topics), tuple(scores))
