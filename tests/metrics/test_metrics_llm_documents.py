"""The document-level LLM metrics (``core/metrics/llm_documents.py``, ProxAnn's protocol) against a
scripted judge: what is shown is drawn across θ as ProxAnn draws it, the expected fit comes from
known log-probabilities, the ranking from pairwise choices, and the agreement with θ is Kendall's
τ-b, checked against pairs counted by hand."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import scipy.sparse as sp

from topicbench.core.metrics.context import MetricContext, MetricInputs
from topicbench.core.metrics.llm_document_prompts import (
    FIT_PROMPT, LABEL_PROMPT, RANK_PROMPT, choice_probabilities, expected_fit, parse_choice, parse_fit, parse_label,
)
from topicbench.core.metrics.llm_documents import (
    bradley_terry, excerpt, excerpt_token_limit, kendall_tau_b, token_counter, topic_documents,
)
from topicbench.core.metrics.llm_judging import JudgeReply, JudgeSettings, is_answer
from topicbench.core.metrics.registry import METRICS
from topicbench.core.metrics.scoring import score
from topicbench.core.output import TopicModelOutput
from topicbench.core.preprocess import PreprocessConfig, preprocess
from topicbench.core.validation import InputError

N_DOCUMENTS = 24
SETTINGS = JudgeSettings(document_topics=2, exemplar_documents=3, evaluation_documents=5, retries=1, rating_samples=2)


def corpus_of(n=N_DOCUMENTS):
    texts = [f"Item{d} speaks of budget tax vote law court river song game film farm. It goes on. And on."
             for d in range(n)]
    return preprocess(texts, PreprocessConfig(stopwords="none"))


def output_of(corpus, theta) -> TopicModelOutput:
    n_topics = theta.shape[0]
    words = [w for w in corpus.vocabulary if not w.startswith("item")][:10]
    return TopicModelOutput(model="toy", vocabulary=corpus.vocabulary, topics=[list(words)] * n_topics,
                            topic_word_matrix=np.full((n_topics, corpus.n_words), 1 / corpus.n_words),
                            topic_document_matrix=theta, seed=0)


def shown_items(text: str) -> list:
    """The document ids an excerpt shows (each document's text starts with Item<d>)."""
    return [int(d) for d in re.findall(r"Item(\d+)", text)]


class ScriptedJudge:
    """Answers each request with ``answers[task](request)`` and keeps every request it was asked."""

    def __init__(self, **answers):
        self.answers = {"label": lambda request: JudgeReply("CATEGORY: Public budgets"), **answers}
        self.asked = []

    def ask(self, requests):
        self.asked.extend(requests)
        return [self.answers[request.task](request) for request in requests]


def planned_fit(fits: dict):
    """Fit replies whose log-probabilities put p on "5" and 1 - p on "1" (expected 1 + 4p), with p
    planned per document."""
    def answer(request):
        p = fits[shown_items(request.messages[-1][1])[0]]
        return JudgeReply("5", (("5", math.log(p)), ("1", math.log(1 - p)), ("The", math.log(1e-3))))
    return answer


def naive_tau(first, second) -> float:
    """Kendall's τ of two sequences without ties: (concordant - discordant) pairs / all pairs."""
    n, total = len(first), 0
    for i in range(n):
        for j in range(i + 1, n):
            total += np.sign(first[i] - first[j]) * np.sign(second[i] - second[j])
    return total / (n * (n - 1) / 2)


def theta_of(n_topics=3, n=N_DOCUMENTS, seed=0):
    return np.random.default_rng(seed).dirichlet([0.3] * n_topics, size=n).T


# -- what is shown ------------------------------------------------------------------------------


def test_evaluation_documents_are_drawn_across_theta_as_proxann_draws_them():
    theta = np.array([0.9, 0.8, 0.7, 0.5, 0.45, 0.3, 0.1, 0.0, 0.0, 0.05])
    settings = JudgeSettings(exemplar_documents=2, evaluation_documents=4)
    shown = topic_documents(theta, 0, [f"w{i}" for i in range(12)], settings, seed=0)
    assert shown.exemplars == (0, 1)  # the highest θ
    # targets 0.7, 0.467, 0.233, 0 over the others: 0.7 -> doc 2, 0.467 -> doc 4 (0.45), 0.233 -> doc 5 (0.3),
    # 0 -> doc 7 or 8 (a tie, broken by the seed)
    assert shown.evaluation[:3] == (2, 4, 5) and shown.evaluation[3] in (7, 8)
    assert shown.theta[:3] == (0.7, 0.45, 0.3) and shown.words == tuple(f"w{i}" for i in range(10))
    ties = {topic_documents(theta, 0, ["w"] * 10, settings, seed=s).evaluation[3] for s in range(20)}
    assert ties == {7, 8}
    assert topic_documents(theta, 0, ["w"] * 10, settings, seed=3) == topic_documents(theta, 0, ["w"] * 10, settings,
                                                                                       seed=3)


def test_an_excerpt_ends_its_sentence_and_fits_the_token_limit():
    settings = JudgeSettings(excerpt_words=4)
    text = "one two three four five six. seven eight nine ten"
    assert excerpt(text, settings, 100, token_counter(None)) == "one two three four five six."
    assert excerpt("a b c d e f g h i j", settings, 100, token_counter(None)) == "a b c d"  # no period within 8 words
    words = lambda text: len(text.split())  # noqa: E731 (a tokenizer of one token a word)
    assert excerpt(text, settings, 3, words) == "one two three"
    assert token_counter(None)("x" * 9) == 3  # ceil(9 / 4): the stated estimate
    counted = type("Judge", (), {"count_tokens": staticmethod(words)})()
    assert token_counter(counted)("a b c") == 3  # the endpoint's tokenizer where the judge has one


def test_a_context_too_small_for_the_excerpts_is_an_input_error():
    assert excerpt_token_limit(JudgeSettings(), token_counter(None)) > 100
    with pytest.raises(InputError, match="llm.context_tokens 300 leaves"):
        excerpt_token_limit(JudgeSettings(context_tokens=300), token_counter(None))


# -- reading replies ----------------------------------------------------------------------------


def test_the_expected_fit_comes_from_the_first_tokens_probabilities():
    # p(4) = 0.5 and p(5) = 0.25 + 0.25 over two spellings, renormalised over "1".."5": 4.5
    top = (("4", math.log(0.5)), ("5", math.log(0.25)), (" 5", math.log(0.25)), ("The", math.log(0.3)))
    assert expected_fit(top) == pytest.approx(4.5)
    assert expected_fit((("1", math.log(0.2)), ("3", math.log(0.2)))) == pytest.approx(2.0)
    assert expected_fit((("six", -0.1),)) is None and expected_fit(None) is None
    assert choice_probabilities((("A", math.log(0.6)), (" a", math.log(0.1)), ("B", math.log(0.3)))) == pytest.approx(
        (0.7, 0.3))


@pytest.mark.parametrize("text, value", [("4", 4), ("Score: 2.", 2), ("4 or 5", None), ("6", None), ("", None)])
def test_a_fit_is_read_only_when_the_reply_gives_one(text, value):
    assert parse_fit(text) == value


@pytest.mark.parametrize("text, value", [("A", "A"), ("'B'.", "B"), ("Document A", "A"), ("A and B", None),
                                         ("Both", None), (None, None)])
def test_a_choice_is_read_only_when_the_reply_names_one_document(text, value):
    assert parse_choice(text) == value


def test_a_category_is_the_first_line_without_its_prefix():
    assert parse_label("CATEGORY: **Public budgets**\nbecause ...") == "Public budgets"
    assert parse_label('"Farming"') == "Farming"
    assert parse_label("  \n") is None and parse_label(None) is None


def test_the_cache_keeps_only_document_answers():
    from topicbench.core.metrics.llm_judging import JudgeRequest

    fit = JudgeRequest("fit", (("user", "x"),), 5)
    assert is_answer(fit, JudgeReply("4")) and not is_answer(fit, JudgeReply("very well"))
    assert is_answer(JudgeRequest("rank", (("user", "x"),), 5), JudgeReply("B"))
    assert not is_answer(JudgeRequest("label", (("user", "x"),), 5), JudgeReply(""))


# -- agreement ------------------------------------------------------------------------------------


def test_bradley_terry_ranks_a_round_robin_by_wins_and_ties_equal_records():
    wins = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]  # 0 beats all, 1 beats 2 and 3, ...
    strengths = bradley_terry(4, wins)
    assert list(np.argsort(-strengths)) == [0, 1, 2, 3]
    cycle = bradley_terry(3, [(0, 1), (1, 2), (2, 0)])
    assert cycle[0] == cycle[1] == cycle[2]
    assert math.isnan(kendall_tau_b([0.3, 0.2, 0.1], cycle))  # the judge's answers tie: no τ


def test_llm_fit_is_kendalls_tau_b_between_theta_and_the_expected_fits():
    corpus, theta = corpus_of(), theta_of()
    output = output_of(corpus, theta)
    fits = {d: 0.05 + 0.9 * ((7 * d) % N_DOCUMENTS) / N_DOCUMENTS for d in range(N_DOCUMENTS)}  # a scrambled order
    judge = ScriptedJudge(fit=planned_fit(fits))
    scores = score(output, MetricContext(MetricInputs(corpus=corpus), judge=judge, judge_settings=SETTINGS),
                   ["llm_fit"], seed=0)
    prevalent = np.argsort(-theta.sum(axis=1), kind="stable")[:2]
    expected = []
    for topic in sorted(prevalent):
        shown = topic_documents(theta[topic], topic, output.topics[topic], SETTINGS, 0)
        expected.append(naive_tau(shown.theta, [1 + 4 * fits[d] for d in shown.evaluation]))
    assert scores.values["llm_fit"] == pytest.approx(np.mean(expected))
    assert scores.values["llm_fit_answered"] == 1.0
    assert not math.isnan(scores.topic_scores["llm_fit"][sorted(prevalent)[0]])
    # one label and five fits per topic, each asked once: log-probabilities need no samples
    assert [r.task for r in judge.asked].count("label") == 2 and [r.task for r in judge.asked].count("fit") == 10
    label = next(r for r in judge.asked if r.task == "label")
    assert label.temperature == 0.0 and "KEYWORDS: " + " ".join(output.topics[0]) in label.messages[-1][1]
    assert LABEL_PROMPT.split("{keywords}")[0] in label.messages[-1][1]
    fit = next(r for r in judge.asked if r.task == "fit")
    assert fit.messages[-1][1].startswith(FIT_PROMPT.split("{document}")[0].format(category="Public budgets"))


def test_llm_rank_is_kendalls_tau_b_between_theta_and_the_judges_ranking():
    corpus, theta = corpus_of(), theta_of(seed=1)
    output = output_of(corpus, theta)
    preference = {d: (5 * d) % N_DOCUMENTS for d in range(N_DOCUMENTS)}  # the judge's own order of documents

    def choose(request):
        a, b = shown_items(request.messages[-1][1])
        p_a = 0.8 if preference[a] > preference[b] else 0.2
        return JudgeReply("A", (("A", math.log(p_a)), ("B", math.log(1 - p_a))))

    judge = ScriptedJudge(rank=choose)
    scores = score(output, MetricContext(MetricInputs(corpus=corpus), judge=judge, judge_settings=SETTINGS),
                   ["llm_rank"], seed=0)
    expected = []
    for topic in sorted(np.argsort(-theta.sum(axis=1), kind="stable")[:2]):
        shown = topic_documents(theta[topic], topic, output.topics[topic], SETTINGS, 0)
        expected.append(naive_tau(shown.theta, [preference[d] for d in shown.evaluation]))
    assert scores.values["llm_rank"] == pytest.approx(np.mean(expected))
    # every pair of 5 documents, in both orders: 20 questions a topic
    assert [r.task for r in judge.asked].count("rank") == 40
    assert RANK_PROMPT.split("{category}")[0] in next(r for r in judge.asked if r.task == "rank").messages[-1][1]


def test_a_judge_that_always_picks_the_first_document_ranks_nothing():
    corpus = corpus_of()
    judge = ScriptedJudge(rank=lambda request: JudgeReply("A", (("A", math.log(0.9)), ("B", math.log(0.1)))))
    scores = score(output_of(corpus, theta_of()), MetricContext(MetricInputs(corpus=corpus), judge=judge,
                                                               judge_settings=SETTINGS), ["llm_rank"], seed=0)
    assert math.isnan(scores.values["llm_rank"]) and scores.values["llm_rank_answered"] == 0.0


def test_without_log_probabilities_the_fit_is_the_mean_of_sampled_answers():
    corpus, theta = corpus_of(), theta_of()
    output = output_of(corpus, theta)
    judge = ScriptedJudge(fit=lambda request: JudgeReply(str(1 + shown_items(request.messages[-1][1])[0] % 5)))
    scores = score(output, MetricContext(MetricInputs(corpus=corpus), judge=judge, judge_settings=SETTINGS),
                   ["llm_fit"], seed=0)
    expected = []
    for topic in sorted(np.argsort(-theta.sum(axis=1), kind="stable")[:2]):
        shown = topic_documents(theta[topic], topic, output.topics[topic], SETTINGS, 0)
        expected.append(kendall_tau_b(shown.theta, [1 + d % 5 for d in shown.evaluation]))
    assert scores.values["llm_fit"] == pytest.approx(np.mean(expected))
    fits = [r for r in judge.asked if r.task == "fit"]
    assert len(fits) == 2 * 5 * SETTINGS.rating_samples  # rating_samples answers a document
    assert {r.temperature for r in fits} == {0.0, SETTINGS.temperature}


def test_a_topic_without_a_category_is_asked_again_then_counted_missing():
    corpus = corpus_of()
    judge = ScriptedJudge(label=lambda request: JudgeReply("  "))
    scores = score(output_of(corpus, theta_of()), MetricContext(MetricInputs(corpus=corpus), judge=judge,
                                                               judge_settings=SETTINGS), ["llm_fit"], seed=0)
    assert math.isnan(scores.values["llm_fit"]) and scores.values["llm_fit_answered"] == 0.0
    assert [r.task for r in judge.asked] == ["label"] * 2 * (1 + SETTINGS.retries)


def test_sparse_theta_is_judged_as_its_dense_twin():
    corpus = corpus_of()
    theta = theta_of(n_topics=4)
    theta[theta < 0.2] = 0.0  # E-LDA's links: most documents hold no share of a topic
    theta /= theta.sum(axis=0)
    fits = {d: 0.05 + 0.9 * ((11 * d) % N_DOCUMENTS) / N_DOCUMENTS for d in range(N_DOCUMENTS)}
    results = []
    for matrix in (theta, sp.csc_matrix(theta), sp.csr_matrix(theta)):
        judge = ScriptedJudge(fit=planned_fit(fits))
        context = MetricContext(MetricInputs(corpus=corpus), judge=judge, judge_settings=SETTINGS)
        results.append(score(output_of(corpus, matrix), context, ["llm_fit"], seed=0).values)
    assert results[0] == results[1] == results[2]
    assert results[0]["llm_fit_answered"] == 1.0


# -- registry and needs ------------------------------------------------------------------------


def test_the_document_metrics_are_registered_with_their_direction_and_needs():
    for name in ("llm_fit", "llm_rank"):
        spec = METRICS.get(name)
        assert spec.higher_is_better and spec.needs == ("llm", "documents")
        assert spec.outputs == (name, f"{name}_answered") and "ProxAnn" in spec.description


def test_the_document_metrics_need_theta_over_the_corpus_and_enough_documents():
    corpus = corpus_of()
    judge = ScriptedJudge()
    small = corpus_of(6)
    cases = [
        (MetricContext(MetricInputs(corpus=corpus)), output_of(corpus, theta_of()), "no LLM endpoint"),
        (MetricContext(MetricInputs(corpus=corpus), judge=judge, judge_settings=SETTINGS),
         output_of(corpus, theta_of(n=10)), "theta covers 10 documents, the corpus 24"),
        (MetricContext(MetricInputs(corpus=small), judge=judge, judge_settings=SETTINGS),
         output_of(small, theta_of(n=6)), "fewer than the 8 shown per topic"),
    ]
    for context, output, reason in cases:
        skipped = score(output, context, ["llm_fit", "llm_rank"], seed=0).skipped
        assert reason in skipped["llm_fit"] and reason in skipped["llm_rank"]
    assert judge.asked == []
