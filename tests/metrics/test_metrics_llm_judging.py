"""The LLM metrics' questions and the reading of their answers (``core/metrics/llm_judging.py``),
against a scripted judge: what is asked is a pure function of the output and the seed, a reply
that is not an answer is asked again and then counted missing, never guessed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topicbench.core.metrics.context import MetricContext
from topicbench.core.metrics.llm_judging import (
    INTRUSION_PROMPT, RATING_PROMPT, JudgeReply, JudgeSettings, draw_intruders, expected_rating, intrusion_request,
    judge_intrusion, judge_ratings, judged_topics, parse_intruder, parse_rating, rate_topics, rating_request,
    shown_words,
)
from topicbench.core.metrics.registry import METRICS
from topicbench.core.metrics.scoring import score
from topicbench.core.output import TopicModelOutput

WORDS = [f"w{i:02d}" for i in range(40)]


class ScriptedJudge:
    """Answers each request with ``answer(request)`` and keeps every request it was asked."""

    def __init__(self, answer):
        self.answer = answer
        self.asked = []

    def ask(self, requests):
        self.asked.extend(requests)
        return [self.answer(request) for request in requests]


def make_output(n_topics=4, prevalence=None, seed=0) -> TopicModelOutput:
    """Topics over 40 words, topic k's mass on words 10k..10k+9 (best first by index)."""
    phi = np.full((n_topics, 40), 1e-4)
    for k in range(n_topics):
        phi[k, 10 * k % 40: 10 * k % 40 + 10] = np.linspace(1.0, 0.5, 10)
    phi /= phi.sum(axis=1, keepdims=True)
    shares = np.asarray(prevalence if prevalence is not None else [1.0] * n_topics, dtype=float)
    theta = np.tile((shares / shares.sum())[:, None], (1, 6))
    topics = [[WORDS[w] for w in np.argsort(-row, kind="stable")[:12]] for row in phi]
    return TopicModelOutput(model="toy", vocabulary=tuple(WORDS), topics=topics, topic_word_matrix=phi,
                            topic_document_matrix=theta, seed=seed)


# -- reading replies ----------------------------------------------------------------------------


@pytest.mark.parametrize("text, rating", [
    ("3", 3), (" 2\n", 2), ("Rating: 1.", 1), ('"3"', 3), ("I'd say 2 out of 3", None), ("2 or 3", None),
    ("3.5", None), ("10", None), ("", None), (None, None), ("very related", None), ("The words are 1", 1),
])
def test_a_rating_is_read_only_when_the_reply_gives_one(text, rating):
    assert parse_rating(text) == rating


@pytest.mark.parametrize("text, word", [
    ("piano", "piano"), ('"Piano".', "piano"), ("The odd one out is piano", "piano"), ("budget or piano", None),
    ("guitar", None), ("", None), ("**tax**", "tax"),
])
def test_an_intruder_is_read_only_when_the_reply_names_one_shown_word(text, word):
    assert parse_intruder(text, ["budget", "tax", "piano", "deficit"]) == word


def test_the_expected_rating_comes_from_the_first_tokens_probabilities():
    # p(1) : p(2) : p(3) = 1 : 2 : 1 -> 2.0; other tokens are ignored
    top = (("The", -0.1), ("1", math.log(0.1)), ("2", math.log(0.2)), ("3", math.log(0.1)))
    assert expected_rating(top) == pytest.approx(2.0)
    assert expected_rating((("3", -0.01), (" 3", -5.0))) == pytest.approx(3.0)  # " 3" is also a 3
    assert expected_rating((("The", -0.1), ("A", -2.0))) is None
    assert expected_rating(None) is None


# -- what is asked --------------------------------------------------------------------------------


def test_questions_are_the_papers_prompts_and_repeat_exactly_for_the_same_seed():
    settings = JudgeSettings()
    first = rating_request(WORDS[:12], settings, seed=7, topic=3, sample=0)
    assert first.messages[0] == ("system", RATING_PROMPT)
    shown = first.messages[1][1].split(", ")
    assert sorted(shown) == sorted(WORDS[:10])  # the top 10, shuffled
    assert rating_request(WORDS[:12], settings, seed=7, topic=3, sample=0) == first
    assert rating_request(WORDS[:12], settings, seed=7, topic=3, sample=1) != first
    intrusion = intrusion_request(WORDS[:12], "zebra", settings, seed=7, topic=3, draw=0)
    assert intrusion.messages[0] == ("system", INTRUSION_PROMPT)
    words = shown_words(intrusion)
    assert len(words) == 6 and "zebra" in words and set(words) - {"zebra"} <= set(WORDS[:10])


def test_the_most_prevalent_topics_are_judged():
    output = make_output(4, prevalence=[0.1, 0.4, 0.2, 0.3])
    assert judged_topics(output, 2) == [1, 3]
    assert judged_topics(output, 10) == [0, 1, 2, 3]


def test_an_intruder_is_another_topics_top_word_and_none_of_this_topics_top_50():
    ranked = [["a", "b", "c"], ["c", "d", "e"], ["f", "g", "h"]]
    settings = JudgeSettings(top_words=2, intruder_exclusion=3, intrusion_draws=20)
    drawn = draw_intruders(ranked, [0, 1, 2], settings, seed=1)
    # topic 0 excludes a b c; the others' top 2 are c d f g
    assert {drawn[0, d] for d in range(20)} <= {"d", "f", "g"}
    assert {drawn[1, d] for d in range(20)} <= {"a", "b", "f", "g"}
    assert drawn == draw_intruders(ranked, [0, 1, 2], settings, seed=1)
    assert len({drawn[0, d] for d in range(20)}) > 1  # drawn, not always the first


def test_overlapping_topics_relax_the_exclusion_down_to_the_shown_words():
    # every other topic's top 2 lies in this topic's top 4, but not in its top 2
    ranked = [["a", "b", "c", "d"], ["c", "d", "a", "b"]]
    settings = JudgeSettings(top_words=2, intruder_exclusion=4, intrusion_draws=5)
    drawn = draw_intruders(ranked, [0, 1], settings, seed=0)
    assert {drawn[0, d] for d in range(5)} <= {"c", "d"} and {drawn[1, d] for d in range(5)} <= {"a", "b"}
    assert draw_intruders([["a", "b"], ["a", "b"]], [0, 1], settings, seed=0) == {}  # the same topic twice: none


# -- scoring ------------------------------------------------------------------------------------


def test_ratings_from_log_probabilities_take_one_request_per_topic():
    judge = ScriptedJudge(lambda r: JudgeReply("x", (("2", math.log(0.5)), ("3", math.log(0.5)))))
    judged = judge_ratings(make_output(), judge, JudgeSettings(), seed=0)
    assert judged.scores == (2.5, 2.5, 2.5, 2.5) and len(judge.asked) == 4


def test_without_log_probabilities_ratings_are_the_mean_of_samples():
    answers = iter(["3", "1", "2"] * 10)
    judge = ScriptedJudge(lambda r: JudgeReply(next(answers)))
    judged = rate_topics([WORDS[:10]], [0], judge, JudgeSettings(rating_samples=3), seed=0)
    assert judged.scores == (2.0,) and len(judge.asked) == 3
    assert len({request.sample for request in judge.asked}) == 3  # three different asks, three cache keys


def test_a_reply_that_is_not_a_rating_is_asked_again_then_missing_never_guessed():
    judge = ScriptedJudge(lambda r: JudgeReply("these words are about money"))
    judged = rate_topics([WORDS[:10], WORDS[10:20]], [0, 1], judge, JudgeSettings(rating_samples=1, retries=2), seed=0)
    assert all(math.isnan(value) for value in judged.scores) and judged.answered == 0
    assert len(judge.asked) == 2 * 3  # one ask and two retries per topic
    assert math.isnan(judged.mean())


def test_intrusion_counts_the_draws_whose_intruder_was_picked():
    output = make_output(4)
    settings = JudgeSettings(intrusion_draws=4, intruder_exclusion=10)  # the toy vocabulary has 40 words

    def pick_the_intruder_of_topic_0_only(request):
        words = shown_words(request)
        topic_0 = {f"w{i:02d}" for i in range(10)}
        odd = [w for w in words if w not in topic_0]
        return JudgeReply(odd[0] if len(odd) == 1 else words[0])

    judged = judge_intrusion(output, ScriptedJudge(pick_the_intruder_of_topic_0_only), settings, seed=0)
    assert judged.scores[0] == 1.0
    assert all(value < 1.0 for value in judged.scores[1:])


def test_the_metrics_are_registered_and_need_a_judge():
    output = make_output()
    scores = score(output, MetricContext(), ["llm_rating", "llm_intrusion"], seed=0)
    assert scores.values == {} and "no LLM endpoint" in scores.skipped["llm_rating"]
    judge = ScriptedJudge(lambda r: JudgeReply("3") if r.task == "rating" else JudgeReply(shown_words(r)[0]))
    scores = score(output, MetricContext(judge=judge, judge_settings=JudgeSettings(rating_samples=1, intruder_exclusion=10)),
                   ["llm_rating", "llm_intrusion"], seed=0)
    assert scores.values["llm_rating"] == 3.0 and scores.values["llm_rating_answered"] == 1.0
    assert 0.0 <= scores.values["llm_intrusion"] <= 1.0
    assert METRICS.get("llm_rating").higher_is_better and METRICS.get("llm_intrusion").owns("llm_intrusion_answered")
