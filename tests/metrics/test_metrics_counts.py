"""Window and document co-occurrence counts: by hand, against gensim's accumulators, and their
bookkeeping (subsets, listed pairs, shards)."""

from __future__ import annotations

import numpy as np
import pytest
from gensim.corpora import Dictionary
from gensim.topic_coherence.text_analysis import CorpusAccumulator, WordOccurrenceAccumulator

from metrics_helpers import random_corpus, tiny_reference
from topicbench.core.corpus import Corpus
from topicbench.core.metrics import counts as counts_module
from topicbench.core.metrics.counts import CooccurrenceCounts, count_for_topics, topic_pairs
from topicbench.core.validation import InputError

A, B, C, D = 0, 1, 2, 3


def joint(counts, u, v):
    local = counts.local_ids([u, v])
    return int(counts.joint_counts(local[0], local[1]))


def test_document_counts_by_hand():
    # documents {a, b}, {a, b, c}, {c}, {d}
    counts = CooccurrenceCounts.build(tiny_reference(), None, [A, B, C, D])
    assert counts.n_windows == 4
    assert counts.occurrences.tolist() == [2, 2, 2, 1]
    assert (joint(counts, A, B), joint(counts, A, C), joint(counts, B, C), joint(counts, A, D)) == (2, 1, 1, 0)
    assert joint(counts, C, C) == 2  # the diagonal holds D(w), as in gensim
    np.testing.assert_array_equal(counts.joint, counts.joint.T)


def test_sliding_window_counts_by_hand_follow_gensims_rule():
    # window 2: d0 = a a b -> [a a], [a b]; d1 = a b a c -> [a b], [b a], [a c]; d2 = [c]; d3 = [d].
    # gensim marks the word leaving at the left edge absent even when it is still inside the window:
    # in d0's window [a b], "a" left with the first token, so it is absent. Presence per window:
    # {a}, {b}, {a, b}, {a, b} (a leaves and re-enters: stays), {a, c}, {c}, {d}.
    counts = CooccurrenceCounts.build(tiny_reference(), 2, [A, B, C, D])
    assert counts.n_windows == 7
    assert counts.occurrences.tolist() == [4, 3, 2, 1]
    assert (joint(counts, A, B), joint(counts, A, C), joint(counts, B, C), joint(counts, C, D)) == (2, 1, 0, 0)


def test_short_and_empty_documents_are_one_window_each():
    # doc0 = a b (shorter than the window), doc1 empty, doc2 = b a b a (one window of 4)
    corpus = Corpus(vocabulary=("a", "b"), token_ids=np.array([0, 1, 1, 0, 1, 0], dtype=np.int32),
                    doc_offsets=np.array([0, 2, 2, 6]))
    for window, expected in ((5, 3), (4, 3), (None, 3), (3, 4)):
        assert CooccurrenceCounts.build(corpus, window, [0, 1]).n_windows == expected
    texts = corpus.texts()
    dictionary = Dictionary(texts)
    ids = set(dictionary.token2id.values())
    for window in (1, 2, 3, 4, 5):
        reference = WordOccurrenceAccumulator(ids, dictionary).accumulate(texts, window)
        ours = CooccurrenceCounts.build(corpus, window, [0, 1])
        assert ours.n_windows == reference.num_docs
        assert joint(ours, 0, 1) == reference[(dictionary.token2id["a"], dictionary.token2id["b"])]


def _gensim_counts(corpus, window, words):
    texts = corpus.texts()
    dictionary = Dictionary(texts)
    ids = {dictionary.token2id[corpus.vocabulary[w]] for w in words}
    if window is None:
        accumulator = CorpusAccumulator(ids).accumulate([dictionary.doc2bow(t) for t in texts])
    else:
        accumulator = WordOccurrenceAccumulator(ids, dictionary).accumulate(texts, window)
    gid = {w: dictionary.token2id[corpus.vocabulary[w]] for w in words}
    matrix = np.array([[accumulator[gid[u]] if u == v else accumulator[(gid[u], gid[v])] for v in words] for u in words])
    return accumulator.num_docs, matrix


@pytest.mark.parametrize("seed", range(25))
def test_counts_equal_gensims_accumulators_on_random_corpora(seed):
    rng = np.random.default_rng([seed, 5])
    corpus = random_corpus(rng, n_documents=(3, 15), n_words=(3, 12), doc_length=(1, 25))
    frequencies = np.bincount(corpus.token_ids, minlength=corpus.n_words)
    words = np.flatnonzero(frequencies)[: rng.integers(2, 9)]
    for window in (None, 1, 2, 3, 5, 10):
        counts = CooccurrenceCounts.build(corpus, window, words)
        n_windows, expected = _gensim_counts(corpus, window, counts.word_ids)
        assert counts.n_windows == n_windows, window
        np.testing.assert_array_equal(counts.joint, expected, err_msg=f"window {window}")
        # listed pairs give the same counts as the dense matrix
        pairs = topic_pairs(counts.word_ids[None, :])
        listed = CooccurrenceCounts.build(corpus, window, words, pairs=pairs)
        local = listed.local_ids(pairs)
        np.testing.assert_array_equal(
            listed.joint_counts(local[:, 0], local[:, 1]), counts.joint[local[:, 0], local[:, 1]]
        )


def test_counts_of_a_subset_are_the_counts_of_the_superset(make_random_corpus):
    corpus = make_random_corpus(3, n_documents=(20, 20), n_words=(30, 30), doc_length=(5, 40))
    small = np.arange(0, 12, 2)
    large = np.arange(20)
    for window in (None, 4):
        sub = CooccurrenceCounts.build(corpus, window, small)
        sup = CooccurrenceCounts.build(corpus, window, large)
        local = sup.local_ids(small)
        np.testing.assert_array_equal(sub.joint, sup.joint[np.ix_(local, local)])
        assert sup.covers(small) and not sub.covers(large)


def test_shards_merge_into_the_whole(make_random_corpus):
    corpus = make_random_corpus(11, n_documents=(30, 30), n_words=(15, 15))
    words = np.arange(10)
    pairs = topic_pairs(words.reshape(2, 5))
    for window in (None, 3):
        whole = CooccurrenceCounts.build(corpus, window, words)
        first, second = corpus.subset(range(0, 13)), corpus.subset(range(13, 30))
        merged = CooccurrenceCounts.build(first, window, words).merge(CooccurrenceCounts.build(second, window, words))
        np.testing.assert_array_equal(merged.joint, whole.joint)
        assert merged.n_windows == whole.n_windows
        np.testing.assert_array_equal(merged.word_frequencies, whole.word_frequencies)
        listed = CooccurrenceCounts.build(first, window, words, pairs=pairs).merge(
            CooccurrenceCounts.build(second, window, words, pairs=pairs))
        local = listed.local_ids(pairs)
        np.testing.assert_array_equal(listed.joint_counts(local[:, 0], local[:, 1]), whole.joint[local[:, 0], local[:, 1]])
    with pytest.raises(InputError, match="only counts over the same"):
        whole.merge(CooccurrenceCounts.build(corpus, 5, words))


def test_listed_pairs_mode_counts_only_pairs_that_share_a_topic(make_random_corpus, monkeypatch):
    corpus = make_random_corpus(2, n_documents=(20, 20), n_words=(20, 20))
    topics = np.array([[0, 1, 2], [3, 4, 5]])
    monkeypatch.setattr(counts_module, "DENSE_COUNTS_MAX_WORDS", 4)
    counts = count_for_topics(corpus, 3, topics)
    assert not counts.is_dense and len(counts.pair_keys) == 6
    assert counts.covers([0, 1, 2], topic_pairs(topics[:1]))
    assert not counts.covers([0, 3], [[0, 3]])
    with pytest.raises(InputError, match="do not cover some scored word pairs"):
        counts.joint_counts(np.array([0]), np.array([3]))
    with pytest.raises(InputError, match="too many for dense pair counts"):
        CooccurrenceCounts.build(corpus, 3, np.arange(6))


def test_counting_errors(make_random_corpus):
    corpus = make_random_corpus(1)
    with pytest.raises(InputError, match="window must be a positive integer"):
        CooccurrenceCounts.build(corpus, 0, [0])
    with pytest.raises(InputError, match="word ids must lie in"):
        CooccurrenceCounts.build(corpus, 3, [corpus.n_words])
    counts = CooccurrenceCounts.build(corpus, 3, [0, 1])
    with pytest.raises(InputError, match="do not cover the word"):
        counts.local_ids([2])
