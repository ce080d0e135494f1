"""Keyword topic generators (spec §2) and user-given topic matrices as candidates."""

from __future__ import annotations

import math

import numpy as np
import pytest

import naive
from conftest import CANDIDATE_TOLERANCE, random_corpus
from topicbench.core.elda.model import ELDA
from topicbench.core.elda.generators import GENERATORS, keyword_candidates, topic_matrix_candidates
from topicbench.core.elda.greedy import fast_greedy
from topicbench.core.preprocess import corpus_from_token_lists
from topicbench.core.validation import InputError

E = 1e-5


def assert_candidates_close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=CANDIDATE_TOLERANCE, atol=CANDIDATE_TOLERANCE)


# ------------------------------------------------------------------------------------------------
# Against the dense reference
# ------------------------------------------------------------------------------------------------


def generator_corpora():
    """Random corpora, plus ones whose vocabulary has words that occur in no document (all-zero
    co-occurrence rows: a keyword topic that is the row constant everywhere), first, inside and last."""
    for seed in range(12):
        yield f"random{seed}", random_corpus(np.random.default_rng([seed, 7]))
    docs = [["b", "c", "c"], ["c", "e"], ["b", "e", "e", "b"]]
    for vocabulary in (["a", "b", "c", "d", "e"], ["b", "c", "e", "a", "d"], ["a", "d", "b", "c", "e"]):
        yield "absent:" + "".join(vocabulary), corpus_from_token_lists(docs, vocabulary=vocabulary)
    # a training split keeps the full vocabulary: words only in other partitions are absent
    whole = corpus_from_token_lists(
        [["x", "y"], ["y", "z", "z"], ["w", "v"], ["x", "x", "u"]],
        partitions=["train", "train", "test", "train"],
    )
    yield "split", whole.split("train")


@pytest.mark.parametrize("generator", GENERATORS)
@pytest.mark.parametrize("name, corpus", list(generator_corpora()), ids=lambda x: x if isinstance(x, str) else "")
def test_keyword_candidates_equal_dense_reference(name, corpus, generator):
    candidates = keyword_candidates(corpus, generator, collapse=False)
    reference = naive.naive_candidates(corpus, generator)
    assert candidates.n_topics == corpus.n_words
    assert candidates.n_words == corpus.n_words
    assert candidates.generator == generator
    assert candidates.labels == tuple(corpus.vocabulary)
    assert candidates.keywords == tuple((w,) for w in range(corpus.n_words))
    assert_candidates_close(candidates.to_dense(), reference)
    for t in range(candidates.n_topics):
        assert_candidates_close(candidates.row(t), reference[t])


@pytest.mark.parametrize("generator", GENERATORS)
@pytest.mark.parametrize("name, corpus", list(generator_corpora()), ids=lambda x: x if isinstance(x, str) else "")
def test_collapsed_candidates_are_the_distinct_rows(name, corpus, generator):
    """Collapsing keeps the first row of each group of identical rows, in vocabulary order, and
    labels it with the group's keywords joined by '---'."""
    reference = naive.naive_candidates(corpus, generator)
    groups = naive.identical_row_groups(naive.dense_cooccurrence(naive.dense_doc_term(corpus)))
    candidates = keyword_candidates(corpus, generator)
    assert candidates.n_topics == len(groups)
    assert candidates.keywords == tuple(tuple(g) for g in groups)
    assert candidates.labels == tuple("---".join(corpus.vocabulary[w] for w in g) for g in groups)
    assert_candidates_close(candidates.to_dense(), reference[[g[0] for g in groups]])
    for g in groups:  # the members of a group really are the same row
        for w in g[1:]:
            assert_candidates_close(reference[w], reference[g[0]])


def test_cooccurrence_counts_short_and_long_rows_alike():
    """C = B^T B against the dense product, on a corpus whose rows of C take both ways out of the
    kernel: frequent words co-occur with most of the vocabulary (read off in word order), rare
    words with a few words (sorted)."""
    from topicbench.core.elda.kernels.cooccurrence import DENSE_ROW_FRACTION
    from topicbench.core.elda.generators import document_cooccurrence

    rng = np.random.default_rng(11)
    n_words = 40 * DENSE_ROW_FRACTION
    frequent = [f"f{w}" for w in range(6)]
    docs = [frequent + [f"r{w}" for w in rng.choice(n_words, size=3, replace=False)] for _ in range(60)]
    corpus = corpus_from_token_lists(docs, vocabulary=frequent + [f"r{w}" for w in range(n_words)])
    cooc = document_cooccurrence(corpus)
    lengths = np.diff(cooc.indptr)
    assert (lengths * DENSE_ROW_FRACTION > corpus.n_words).any() and (lengths * DENSE_ROW_FRACTION <= corpus.n_words).any()
    assert all((np.diff(cooc.indices[cooc.indptr[u] : cooc.indptr[u + 1]]) > 0).all() for u in range(corpus.n_words))
    np.testing.assert_array_equal(cooc.toarray(), naive.dense_cooccurrence(naive.dense_doc_term(corpus)))


def test_document_words_are_the_doc_term_arrays(make_random_corpus):
    corpus = make_random_corpus(5)
    indptr, words, counts = corpus.document_words
    np.testing.assert_array_equal(indptr, corpus.doc_term.indptr)
    np.testing.assert_array_equal(words, corpus.doc_term.indices)
    np.testing.assert_array_equal(counts, corpus.doc_term.data)
    np.testing.assert_array_equal(corpus.doc_term.toarray(), naive.dense_doc_term(corpus))


# ------------------------------------------------------------------------------------------------
# Hand-checked tiny corpus
# ------------------------------------------------------------------------------------------------
#
# d0 = a a b, d1 = b c c, d2 = c. Binary B: d0 {a, b}, d1 {b, c}, d2 {c}.
# C = B^T B: C[a,a] = 1 (d0), C[a,b] = 1 (d0), C[a,c] = 0; C[b,b] = 2 (d0, d1), C[b,c] = 1 (d1);
# C[c,c] = 2 (d1, d2). Token counts do not matter, only which documents hold a word.
#        a  b  c
#    a [ 1  1  0 ]   row sum 2 -> normaliser 2 + 3e
#    b [ 1  2  1 ]   row sum 4 -> normaliser 4 + 3e
#    c [ 0  1  2 ]   row sum 3 -> normaliser 3 + 3e


def test_hand_checked_cooccurrence(tiny_corpus):
    L = keyword_candidates(tiny_corpus, "cooccurrence").to_dense()
    expected = np.array([[1, 1, 0], [1, 2, 1], [0, 1, 2]]) + E   # C + e, unnormalised
    assert_candidates_close(L, expected)
    # the reference's C from the corpus's own (sparse, counting) document-term matrix
    np.testing.assert_array_equal(naive.dense_cooccurrence(tiny_corpus.doc_term), expected - E)


def test_hand_checked_raw_umass(tiny_corpus):
    L = keyword_candidates(tiny_corpus, "raw_umass").to_dense()
    assert L[0, 0] == pytest.approx(math.log((1 + E) / (2 + 3 * E)), rel=1e-12)   # ~ log 1/2
    assert L[0, 2] == pytest.approx(math.log(E / (2 + 3 * E)), rel=1e-12)         # ~ -12.206
    assert L[1, 1] == pytest.approx(math.log((2 + E) / (4 + 3 * E)), rel=1e-12)   # ~ log 1/2
    assert L[1, 2] == pytest.approx(math.log((1 + E) / (4 + 3 * E)), rel=1e-12)   # ~ log 1/4
    assert L[2, 0] == pytest.approx(math.log(E / (3 + 3 * E)), rel=1e-12)         # ~ -12.612
    assert L[2, 2] == pytest.approx(math.log((2 + E) / (3 + 3 * E)), rel=1e-12)   # ~ log 2/3
    # every row is a log-distribution
    np.testing.assert_allclose(np.exp(L).sum(axis=1), 1.0, rtol=1e-12)


def test_hand_checked_exp_umass(tiny_corpus):
    # logsumexp of row a = (1+e, 1+e, e) is e + log(2 exp(1) + 1), so
    # L[a,a] = 1 - log(2 exp(1) + 1) ~ -0.862 and L[a,c] = -log(2 exp(1) + 1) ~ -1.862.
    # row b = (1+e, 2+e, 1+e): logsumexp = e + log(2 exp(1) + exp(2)) = e + 1 + log(2 + exp(1)),
    # so L[b,b] = 1 - log(2 + exp(1)) ~ -0.551. Row c = (e, 1+e, 2+e): L[c,c] = 2 - log(1 + exp(1) + exp(2)).
    L = keyword_candidates(tiny_corpus, "exp_umass").to_dense()
    assert L[0, 0] == pytest.approx(1 - math.log(2 * math.e + 1), rel=1e-12)
    assert L[0, 2] == pytest.approx(-math.log(2 * math.e + 1), rel=1e-12)
    assert L[1, 1] == pytest.approx(1 - math.log(2 + math.e), rel=1e-12)
    assert L[2, 2] == pytest.approx(2 - math.log(1 + math.e + math.e**2), rel=1e-12)
    assert L[2, 0] == pytest.approx(-math.log(1 + math.e + math.e**2), rel=1e-12)
    np.testing.assert_allclose(np.exp(L).sum(axis=1), 1.0, rtol=1e-12)


def test_exp_umass_is_not_raw_umass(tiny_corpus):
    """The paper's Exp-UMass (a softmax over counts), not the public code's (= Raw-UMass)."""
    raw = keyword_candidates(tiny_corpus, "raw_umass").to_dense()
    exp = keyword_candidates(tiny_corpus, "exp_umass").to_dense()
    assert np.abs(raw - exp).max() > 0.1


def test_epsilon_is_used(tiny_corpus):
    L = keyword_candidates(tiny_corpus, "cooccurrence", epsilon=0.5).to_dense()
    assert_candidates_close(L, np.array([[1, 1, 0], [1, 2, 1], [0, 1, 2]]) + 0.5)
    raw = keyword_candidates(tiny_corpus, "raw_umass", epsilon=0.5).to_dense()
    assert raw[0, 2] == pytest.approx(math.log(0.5 / (2 + 1.5)), rel=1e-12)


# ------------------------------------------------------------------------------------------------
# Collapsing identical rows
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("generator", GENERATORS)
def test_words_in_the_same_documents_collapse(generator):
    # x and y occur in exactly the same documents (0 and 1), so their rows of C are equal:
    # C[x] = C[y] = (x 2, y 2, z 1, w 0). Vocabulary by frequency: x, y, z (2 each, alphabetical), w.
    corpus = corpus_from_token_lists([["x", "y", "z"], ["y", "x"], ["z", "w"]])
    assert corpus.vocabulary == ("x", "y", "z", "w")
    candidates = keyword_candidates(corpus, generator)
    assert candidates.labels == ("x---y", "z", "w")
    assert candidates.keywords == ((0, 1), (2,), (3,))
    reference = naive.naive_candidates(corpus, generator)
    assert_candidates_close(candidates.to_dense(), reference[[0, 2, 3]])
    # without collapsing, both rows are there and equal
    full = keyword_candidates(corpus, generator, collapse=False)
    assert full.n_topics == 4
    np.testing.assert_array_equal(full.row(0), full.row(1))


def test_non_adjacent_groups_of_three_collapse():
    # p, r and t always occur together (documents 0 and 1); q and s do not.
    docs = [["p", "r", "q", "t"], ["t", "p", "r", "q"], ["s", "q"]]
    corpus = corpus_from_token_lists(docs, vocabulary=["p", "q", "r", "s", "t"])
    candidates = keyword_candidates(corpus, "raw_umass")
    assert candidates.labels == ("p---r---t", "q", "s")
    assert candidates.keywords == ((0, 2, 4), (1,), (3,))
    # a fit over collapsed candidates reports the joined label
    model = ELDA(kappa=1, generator="raw_umass").fit(corpus)
    labels = {row["label"] for row in model.solution_.topic_table()}
    assert labels <= {"p---r---t", "q", "s"} and "p---r---t" in labels


def test_collapsing_does_not_change_the_solution(make_random_corpus):
    """Identical rows can never both be useful to a document: the greedy F is the same."""
    for seed in range(5):
        corpus = make_random_corpus(seed, n_words=(20, 40), doc_length=(1, 4))
        for generator in GENERATORS:
            collapsed = keyword_candidates(corpus, generator)
            full = keyword_candidates(corpus, generator, collapse=False)
            assert collapsed.n_topics < full.n_topics  # short documents: many identical rows
            f_collapsed = fast_greedy(corpus, collapsed, 1).log_posterior
            f_full = fast_greedy(corpus, full, 1).log_posterior
            assert f_collapsed == pytest.approx(f_full, rel=1e-9)


# ------------------------------------------------------------------------------------------------
# Topic matrices
# ------------------------------------------------------------------------------------------------


def test_topic_matrix_round_trips_to_dense():
    rng = np.random.default_rng(3)
    log_phi = np.log(rng.dirichlet(np.full(12, 0.3), size=6) + 1e-100)
    log_phi[1] = -2.5                       # a constant row: nothing stored
    log_phi[2, :4] = log_phi[2].min()       # the minimum repeated
    log_phi[3, 5] = 0.0                     # an exact zero above the row's minimum is kept
    log_phi[4, 7] = -0.0
    vocabulary = [f"w{i}" for i in range(12)]
    labels = [f"topic {t}" for t in range(6)]
    candidates = topic_matrix_candidates(log_phi, labels, vocabulary=vocabulary)
    np.testing.assert_array_equal(candidates.to_dense(), log_phi)
    assert candidates.labels == tuple(labels)
    assert candidates.n_topics == 6 and candidates.n_words == 12
    assert candidates.generator == "topic_matrix"
    for t in range(6):
        np.testing.assert_array_equal(candidates.row(t), log_phi[t])
    # default labels
    assert topic_matrix_candidates(log_phi, vocabulary=vocabulary).labels == tuple(f"topic_{t}" for t in range(6))


def test_top_words():
    vocabulary = ["a", "b", "c", "d"]
    log_phi = np.log(np.array([[0.1, 0.4, 0.4, 0.1], [0.25, 0.25, 0.25, 0.25]]))
    candidates = topic_matrix_candidates(log_phi, vocabulary=vocabulary)
    assert candidates.top_words(0, 3, vocabulary) == ["b", "c", "a"]  # ties: lower word id first
    assert candidates.top_words(1, 2, vocabulary) == ["a", "b"]


@pytest.mark.parametrize("bad, kind", [(np.nan, "NaN"), (np.inf, "infinite"), (-np.inf, "infinite")])
def test_topic_matrix_with_nan_or_inf_raises(bad, kind):
    log_phi = np.log(np.full((3, 4), 0.25))
    log_phi[1, 2] = bad
    with pytest.raises(InputError, match=rf"NaN or infinite values \(first: {kind} at topic 1, word 2\)"):
        topic_matrix_candidates(log_phi, vocabulary=list("abcd"))


def test_topic_matrix_nan_is_named():
    log_phi = np.zeros((2, 3))
    log_phi[0, 0] = np.nan
    with pytest.raises(InputError, match="NaN"):
        topic_matrix_candidates(log_phi, vocabulary=list("abc"))


def test_topic_matrix_width_must_match_vocabulary(tiny_corpus):
    with pytest.raises(InputError, match="has 4 columns but the corpus vocabulary has 3 words"):
        topic_matrix_candidates(np.zeros((2, 4)), vocabulary=tiny_corpus.vocabulary)
    # candidates built over another vocabulary are refused by the optimiser as well
    other = topic_matrix_candidates(np.zeros((2, 4)))
    with pytest.raises(InputError, match="candidates cover 4 words but the corpus vocabulary has 3"):
        fast_greedy(tiny_corpus, other, 1)


def test_topic_matrix_shape_and_labels_are_checked():
    with pytest.raises(InputError, match="must be a 2-d array"):
        topic_matrix_candidates(np.zeros(3), vocabulary=list("abc"))
    with pytest.raises(InputError, match="no topics"):
        topic_matrix_candidates(np.zeros((0, 3)), vocabulary=list("abc"))
    with pytest.raises(InputError, match="labels has 1 entries for 2 topics"):
        topic_matrix_candidates(np.zeros((2, 3)), ["only one"], vocabulary=list("abc"))


def test_unknown_generator_raises(tiny_corpus):
    with pytest.raises(InputError, match="unknown generator 'umass'; available: raw_umass, exp_umass, cooccurrence"):
        keyword_candidates(tiny_corpus, "umass")
    with pytest.raises(InputError, match="unknown generator 'umass'"):
        ELDA(generator="umass").fit(tiny_corpus)


def test_topic_matrix_vocabulary_must_match_the_corpus(tiny_corpus):
    vocabulary = list(tiny_corpus.vocabulary)
    log_phi = np.log(np.full((2, len(vocabulary)), 1.0 / len(vocabulary)))
    same = topic_matrix_candidates(log_phi, vocabulary=vocabulary, topic_vocabulary=vocabulary)
    assert same.n_topics == 2
    with pytest.raises(InputError, match="does not match the corpus vocabulary"):
        topic_matrix_candidates(log_phi, vocabulary=vocabulary, topic_vocabulary=vocabulary[::-1])
    renamed = ["zzz"] + vocabulary[1:]
    with pytest.raises(InputError, match="not in the corpus"):
        topic_matrix_candidates(log_phi, vocabulary=vocabulary, topic_vocabulary=renamed)


def test_probabilities_are_distributions_for_every_generator(tiny_corpus):
    for generator in ("raw_umass", "exp_umass", "cooccurrence"):
        candidates = keyword_candidates(tiny_corpus, generator, collapse=False)
        probabilities = candidates.distributions().toarray()
        np.testing.assert_allclose(probabilities.sum(axis=1), 1.0)
    raw = keyword_candidates(tiny_corpus, "raw_umass", collapse=False)
    counts = keyword_candidates(tiny_corpus, "cooccurrence", collapse=False)
    # co-occurrence rows are normalised counts: the keyword's raw-UMass distribution, not a softmax
    np.testing.assert_allclose(counts.distributions().toarray(), np.exp(raw.to_dense()), rtol=1e-12)


def test_every_generator_has_a_naive_twin():
    """The generator list lives in core alone; the tests cover each name through its naive twin."""
    assert set(GENERATORS) == set(naive.GENERATORS)
    assert len(set(GENERATORS)) == len(GENERATORS)


# ------------------------------------------------------------------------------------------------
# The column stores: unsorted entries, sorted columns, the heads exact greedy sorts
# ------------------------------------------------------------------------------------------------


def reference_columns(candidates):
    """Each word's stored entries (topic, value), by value high to low, ties by topic id."""
    indptr, indices, values = candidates.indptr, candidates.indices, candidates.values
    columns = [[] for _ in range(candidates.n_words)]
    for t in range(candidates.n_topics):
        for p in range(indptr[t], indptr[t + 1]):
            columns[indices[p]].append((-values[p], t))
    return [[(t, -negative) for negative, t in sorted(column)] for column in columns]


def as_lists(col_indptr, col_topics, col_values):
    return [list(zip(col_topics[col_indptr[v]:col_indptr[v + 1]].tolist(),
                     col_values[col_indptr[v]:col_indptr[v + 1]].tolist())) for v in range(len(col_indptr) - 1)]


@pytest.mark.parametrize("name, corpus", list(generator_corpora()))
def test_column_entries_columns_and_heads_hold_the_stored_entries(name, corpus):
    """``column_entries``: every stored entry of each word, in any order; ``columns``: sorted by
    value (ties: lower topic id); ``column_heads``: the entries above the lowest best score of the
    word's slots, in the same order."""
    from topicbench.core.elda.kernels.column_sort import column_heads
    from topicbench.core.elda.solution import DocumentArrays

    rng = np.random.default_rng(len(name))
    for candidates in (keyword_candidates(corpus, "raw_umass"), keyword_candidates(corpus, "cooccurrence"),
                       topic_matrix_candidates(np.round(rng.normal(size=(6, corpus.n_words)), 1),
                                               vocabulary=corpus.vocabulary)):
        expected = reference_columns(candidates)
        assert not candidates.has_sorted_columns
        entries = as_lists(*candidates.column_entries)
        assert [sorted(column) for column in entries] == [sorted(column) for column in expected]
        docs = DocumentArrays.from_corpus(corpus)
        best = rng.choice(candidates.values, size=len(docs.words)) if candidates.n_stored else np.zeros(len(docs.words))
        floor = np.full(corpus.n_words, np.inf)
        np.minimum.at(floor, docs.words, best)
        heads = as_lists(*column_heads(candidates.column_entries, docs.words, best))
        assert heads == [[(t, x) for t, x in column if x > floor[v]] for v, column in enumerate(expected)]
        assert as_lists(*candidates.columns) == expected and candidates.has_sorted_columns
