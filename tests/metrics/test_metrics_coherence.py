"""Coherence measures: hand-computed values, agreement with gensim's CoherenceModel to 1e-9 on the
built-in corpus and on congress, count reuse, out-of-vocabulary words and input errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from metrics_helpers import (
    GENSIM_TOLERANCE,
    gensim_per_topic,
    keyword_topics,
    random_corpus,
    random_topics,
    require_shared_data,
    spy_on_counting,
    tiny_reference,
)
from topicbench.core.constants import COHERENCE_TOP_N, UMASS_EPSILON
from topicbench.core.io import load_corpus
from topicbench.core.metrics.coherence import coherence, count_reference, score
from topicbench.core.metrics.coherence_measures import MEASURES
from topicbench.core.metrics.counts import CooccurrenceCounts, topic_pairs
from topicbench.core.preprocess import PreprocessConfig
from topicbench.core.validation import InputError

EPS = UMASS_EPSILON


# ------------------------------------------------------------------------------------------------
# By hand, on the tiny reference (d0 = a a b, d1 = a b a c, d2 = c, d3 = d)
# ------------------------------------------------------------------------------------------------


def test_umass_by_hand_both_smoothings():
    # documents: D = 4; D(a) = D(b) = D(c) = 2, D(d) = 1; D(a,b) = 2, D(a,c) = D(b,c) = 1, D(., d) = 0
    reference = tiny_reference()
    topic = [["a", "b", "c", "d"]]
    n = 4
    # spec §4 with gensim's arithmetic: log((D(wi,wj)/D + eps) / (D(wj)/D)), j ranked above i
    terms = [
        math.log((2 / n + EPS) / (2 / n)),  # b | a
        math.log((1 / n + EPS) / (2 / n)),  # c | a
        math.log((1 / n + EPS) / (2 / n)),  # c | b
        math.log((0 / n + EPS) / (2 / n)),  # d | a
        math.log((0 / n + EPS) / (2 / n)),  # d | b
        math.log((0 / n + EPS) / (2 / n)),  # d | c
    ]
    result = coherence(topic, reference, ["umass"], top_n=(2, 3, 4))["umass"]
    assert result.mean[4] == pytest.approx(sum(terms) / 6, abs=1e-12)
    assert result.mean[3] == pytest.approx(sum(terms[:3]) / 3, abs=1e-12)
    assert result.mean[2] == pytest.approx(terms[0], abs=1e-15)
    # spec §4 as written: log((D(wi,wj) + eps) / D(wj)): differs by log D for pairs that never co-occur
    counted = [math.log((2 + EPS) / 2), math.log((1 + EPS) / 2), math.log((1 + EPS) / 2)] + [math.log(EPS / 2)] * 3
    spec = coherence(topic, reference, ["umass"], top_n=4, smoothing="count")["umass"]
    assert spec.mean[4] == pytest.approx(sum(counted) / 6, abs=1e-12)
    assert result.mean[4] - spec.mean[4] == pytest.approx(3 * math.log(n) / 6, abs=1e-9)
    # epsilon is a setting
    larger = coherence(topic, reference, ["umass"], top_n=4, epsilon=1e-3)["umass"]
    assert larger.mean[4] == pytest.approx(
        (math.log((2 / n + 1e-3) / (2 / n)) + 2 * math.log((1 / n + 1e-3) / (2 / n)) + 3 * math.log(1e-3 / (2 / n))) / 6
    )


def test_npmi_and_uci_by_hand():
    # windows of 2 (7 windows): presence {a}, {b}, {a,b}, {a,b}, {a,c}, {c}, {d}
    # D(a) = 4, D(b) = 3, D(c) = 2, D(d) = 1, D(a,b) = 2, D(a,c) = 1, D(b,c) = 0
    reference = tiny_reference()
    n = 7
    p = {"a": 4 / n, "b": 3 / n, "c": 2 / n}
    joint = {("a", "b"): 2 / n, ("a", "c"): 1 / n, ("b", "c"): 0.0}

    def pmi(u, v):
        return math.log((joint[(u, v)] + EPS) / (p[u] * p[v]))

    def npmi(u, v):
        return pmi(u, v) / -math.log(joint[(u, v)] + EPS)

    windows = {"npmi": 2, "uci": 2}
    result = coherence([["a", "b", "c"]], reference, ["npmi", "uci"], top_n=(2, 3), windows=windows)
    pairs = [("a", "b"), ("a", "c"), ("b", "c")]
    assert result["npmi"].mean[2] == pytest.approx(npmi("a", "b"), abs=1e-15)
    assert result["npmi"].mean[2] == pytest.approx(math.log(7 / 6) / math.log(7 / 2), abs=1e-10)  # eps-free
    assert result["npmi"].mean[3] == pytest.approx(sum(npmi(*q) for q in pairs) / 3, abs=1e-12)
    assert result["uci"].mean[3] == pytest.approx(sum(pmi(*q) for q in pairs) / 3, abs=1e-12)
    assert result["npmi"].settings["window"] == 2


def test_cv_by_hand():
    # C_V of a two-word topic [a, b] over windows of 2: context vectors v_a = (n(a,a), n(a,b)),
    # v_b = (n(b,a), n(b,b)), v_W = v_a + v_b, with n the NPMI and n(w,w) from D(w,w) = D(w)
    reference = tiny_reference()
    n = 7
    pa, pb, pab = 4 / n, 3 / n, 2 / n

    def npmi(joint, first, second):
        return math.log((joint + EPS) / (first * second)) / -math.log(joint + EPS)

    v_a = np.array([npmi(pa, pa, pa), npmi(pab, pa, pb)])
    v_b = np.array([npmi(pab, pa, pb), npmi(pb, pb, pb)])
    v_w = v_a + v_b
    cosine = [float(v @ v_w / np.linalg.norm(v) / np.linalg.norm(v_w)) for v in (v_a, v_b)]
    result = coherence([["a", "b"]], reference, ["cv"], top_n=2, windows={"cv": 2})["cv"]
    assert result.mean[2] == pytest.approx(sum(cosine) / 2, abs=1e-12)


# ------------------------------------------------------------------------------------------------
# Agreement with gensim CoherenceModel
# ------------------------------------------------------------------------------------------------


def assert_agrees_with_gensim(topics, reference, top_n, *, windows=None, measures=tuple(MEASURES)):
    texts = reference.texts()
    ours = coherence(topics, reference, measures, top_n, windows=windows)
    worst = 0.0
    for name in measures:
        window = (windows or {}).get(name)
        expected = gensim_per_topic(topics, texts, name, top_n, window=window)
        for n in top_n:
            difference = np.abs(ours[name].per_topic[n] - expected[n])
            assert np.isnan(ours[name].per_topic[n]).tolist() == np.isnan(expected[n]).tolist()
            worst = max(worst, float(np.nanmax(difference)))
            assert np.nanmax(difference) <= GENSIM_TOLERANCE, (name, n, np.nanmax(difference))
            assert ours[name].mean[n] == pytest.approx(float(np.mean(expected[n])), abs=GENSIM_TOLERANCE)
    return worst


@pytest.fixture(scope="module")
def lee():
    return load_corpus()


def test_agrees_with_gensim_on_the_builtin_corpus(lee):
    rng = np.random.default_rng(2024)
    topics = (
        keyword_topics(lee, ["fires", "government", "police", "australia", "test", "afghanistan"], 25)
        + random_topics(lee, rng, 4, 25, pool=300)
        + random_topics(lee, rng, 3, 25)  # rare words: many pairs never co-occur (the epsilon path)
    )
    worst = assert_agrees_with_gensim(topics, lee, COHERENCE_TOP_N)
    assert worst < 1e-12  # in practice the difference is rounding error


@pytest.mark.parametrize("seed", range(6))
def test_agrees_with_gensim_on_random_corpora_and_windows(seed):
    rng = np.random.default_rng([seed, 17])
    corpus = random_corpus(rng, n_documents=(5, 25), n_words=(8, 20), doc_length=(1, 30))
    topics = random_topics(corpus, rng, 5, 6)
    windows = {"npmi": int(rng.integers(2, 6)), "uci": int(rng.integers(2, 6)), "cv": int(rng.integers(2, 12))}
    assert_agrees_with_gensim(topics, corpus, (2, 4, 6), windows=windows)


@pytest.mark.shared_data
@pytest.mark.slow
def test_agrees_with_gensim_on_congress():
    root = require_shared_data("congress")
    congress = load_corpus(root / "congress", PreprocessConfig(preprocessed=True))
    rng = np.random.default_rng(5)
    topics = keyword_topics(congress, ["tax", "iraq", "health", "energi", "school", "veteran"], 15)
    topics += random_topics(congress, rng, 3, 15, pool=2000) + random_topics(congress, rng, 1, 15)
    assert_agrees_with_gensim(topics, congress, (5, 10, 15))


def test_oov_drop_matches_gensim_and_is_counted(lee):
    topics = keyword_topics(lee, ["fires", "police"], 10)
    topics[0].insert(2, "zzzunknown")
    topics[1].insert(0, "qqqabsent")
    with pytest.raises(InputError, match="'zzzunknown' does not occur in the reference corpus"):
        coherence(topics, lee, ["npmi"], top_n=10)
    dropped = coherence(topics, lee, ["npmi", "umass"], top_n=(5, 10), oov="drop")
    assert dropped["npmi"].dropped_words.tolist() == [1, 1]
    for name in ("npmi", "umass"):
        expected = gensim_per_topic(topics, lee.texts(), name, (5, 10))
        for n in (5, 10):
            np.testing.assert_allclose(dropped[name].per_topic[n], expected[n], atol=GENSIM_TOLERANCE, rtol=0)


def test_a_vocabulary_word_absent_from_the_reference_is_out_of_vocabulary():
    # the reference keeps the training vocabulary, but "d" occurs in none of its documents
    reference = tiny_reference().subset([0, 1, 2])
    with pytest.raises(InputError, match="'d' does not occur"):
        coherence([["a", "b", "d"]], reference, ["umass"], top_n=3)
    result = coherence([["a", "d", "b", "c"]], reference, ["umass"], top_n=3, oov="drop")
    assert result["umass"].dropped_words.tolist() == [1]


# ------------------------------------------------------------------------------------------------
# Count once, score many
# ------------------------------------------------------------------------------------------------


def test_counts_are_made_once_per_window_and_reused(lee, monkeypatch):
    topics = keyword_topics(lee, ["fires", "police", "government"], 25)
    builds = spy_on_counting(monkeypatch)
    cache = {}
    coherence(topics, lee, tuple(MEASURES), COHERENCE_TOP_N, counts=cache)
    assert sorted(builds, key=str) == sorted([None, 10, 110], key=str)  # npmi and uci share window 10
    coherence(topics[:2], lee, tuple(MEASURES), (5, 10), counts=cache)  # a subset: covered
    assert len(builds) == 3
    coherence(keyword_topics(lee, ["test"], 10), lee, ["npmi"], 10, counts=cache)  # new words: recount
    assert len(builds) == 4 and cache[(lee.fingerprint(), 10)].covers(
        [lee.word_index[w] for t in topics for w in t]
    )


def test_count_reference_covers_several_models(lee):
    first = keyword_topics(lee, ["fires"], 25)
    second = keyword_topics(lee, ["police", "test"], 25)
    cache = count_reference(lee, [first, second], ("umass", "cv"))
    assert set(window for _, window in cache) == {None, 110}
    together = score(cache[(lee.fingerprint(), 110)], second, "cv")
    alone = coherence(second, lee, ["cv"])["cv"]
    for n in COHERENCE_TOP_N:
        np.testing.assert_array_equal(together.per_topic[n], alone.per_topic[n])


def test_listed_pair_counts_score_like_dense_counts(lee):
    topics = keyword_topics(lee, ["fires", "police", "government"], 10)
    ids = np.array([[lee.word_index[w] for w in topic] for topic in topics])
    dense = CooccurrenceCounts.build(lee, 10, np.unique(ids))
    listed = CooccurrenceCounts.build(lee, 10, np.unique(ids), pairs=topic_pairs(ids))
    for name in ("npmi", "uci", "cv"):
        a, b = score(dense, topics, name, (5, 10)), score(listed, topics, name, (5, 10))
        for n in (5, 10):
            np.testing.assert_array_equal(a.per_topic[n], b.per_topic[n])


def test_scores_need_covering_counts(lee):
    counts = CooccurrenceCounts.build(lee, 10, [lee.word_index["fires"], lee.word_index["police"]])
    with pytest.raises(InputError, match="do not cover the word 'government'"):
        score(counts, [["fires", "police", "government"]], "npmi", 3)
    assert score(counts, [["fires", "police"]], "npmi", 2).as_dict().keys() == {"npmi@2"}


# ------------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "topics, top_n, match",
    [
        ([], 5, "the topic list is empty"),
        (None, 5, "got None"),
        ([["a", "b"], []], 2, "topic 1 has no words"),
        ([["a", "b", "c"]], 4, r"top-N = 4 is larger than topic 0's word list \(3 words\)"),
        ([["a", "b", "c"]], (2, 3, 5), "top-N = 5 is larger"),
        ([["a", "b"]], 1, "top-N must be >= 2"),
        ([["a", "b"]], 2.5, "top-N must be an integer"),
        ([["a", "b", "a"]], 2, "lists the word 'a' twice"),
        ([["x", "y", "z"]], 2, "shares no words with the topics"),
    ],
)
def test_clear_errors(topics, top_n, match):
    with pytest.raises(InputError, match=match):
        coherence(topics, tiny_reference(), ["umass", "npmi"], top_n)


def test_unknown_measure_and_settings():
    with pytest.raises(InputError, match="Unknown coherence measure 'c_v'. Available: umass, uci, npmi, cv"):
        coherence([["a", "b"]], tiny_reference(), ["c_v"], 2)
    with pytest.raises(InputError, match="smoothing must be one of"):
        coherence([["a", "b"]], tiny_reference(), ["npmi"], 2, smoothing="none")
    with pytest.raises(InputError, match="oov must be one of"):
        coherence([["a", "b"]], tiny_reference(), ["npmi"], 2, oov="ignore")
    with pytest.raises(InputError, match="windows given for unknown measures"):
        coherence([["a", "b"]], tiny_reference(), ["npmi"], 2, windows={"c_npmi": 5})
