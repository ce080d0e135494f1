"""E-LDA's output as what it is: constant-plus-sparse topic-word rows and a sparse topic-document
matrix, never a dense |topics| x |V| array unless asked for (``to_octis()``, ``toarray()``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import random_corpus
from topicbench.core.elda.generators import keyword_candidates
from topicbench.core.elda.greedy import fast_greedy
from topicbench.core.output import TopicModelOutput, topic_document_from_token_topics
from topicbench.core.preprocess import corpus_from_token_lists
from topicbench.core.topic_word import ConstantPlusSparse
from topicbench.core.validation import InputError

GENERATORS = ("raw_umass", "exp_umass", "cooccurrence")


def stored_where(constants, dense, mask) -> ConstantPlusSparse:
    """The entries of ``dense`` where ``mask`` holds, stored explicitly, on rows of ``constants``."""
    rows, columns = np.nonzero(mask)  # row-major: CSR order
    indptr = np.zeros(len(constants) + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=len(constants)), out=indptr[1:])
    return ConstantPlusSparse(constants, indptr, columns, dense[rows, columns], dense.shape[1])


def random_constant_plus_sparse(rng: np.random.Generator, n_rows=7, n_columns=11, density=0.3):
    """(matrix, its dense twin): row 0 stores every column, row 1 none, the others some."""
    mask = rng.random((n_rows, n_columns)) < density
    mask[0], mask[1] = True, False
    constants = rng.normal(size=n_rows)
    dense = np.repeat(constants[:, None], n_columns, axis=1)
    dense[mask] = rng.normal(size=int(mask.sum()))
    return stored_where(constants, dense, mask), dense


def sparse_corpus(seed=0):
    """Documents of several themes, so that keyword rows store a minority of the vocabulary."""
    rng = np.random.default_rng(seed)
    themes = [[f"t{t}w{w}" for w in range(25)] for t in range(8)]
    documents = [list(rng.choice(themes[d % 8], size=int(rng.integers(4, 12)))) for d in range(160)]
    return corpus_from_token_lists(documents, name="themes")


def test_a_constant_plus_sparse_matrix_reads_like_its_dense_twin():
    rng = np.random.default_rng(1)
    matrix, dense = random_constant_plus_sparse(rng)
    assert matrix.shape == dense.shape and matrix.ndim == 2
    np.testing.assert_array_equal(matrix.toarray(), dense)
    np.testing.assert_array_equal(np.asarray(matrix), dense)
    np.testing.assert_array_equal(matrix.row(3), dense[3])
    rows = np.array([4, 0, 4, 1])
    np.testing.assert_array_equal(matrix.take(rows).toarray(), dense[rows])
    pairs_r, pairs_c = rng.integers(0, 7, 50), rng.integers(0, 11, 50)
    np.testing.assert_array_equal(matrix.entries(pairs_r, pairs_c), dense[pairs_r, pairs_c])
    np.testing.assert_allclose(matrix.row_sums(), dense.sum(axis=1), rtol=1e-13, atol=1e-13)
    assert matrix.min() == dense.min()
    left = rng.random((5, 7))
    np.testing.assert_allclose(left @ matrix, left @ dense, rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(matrix.map(np.exp).toarray(), np.exp(dense))


@pytest.mark.parametrize("n", [1, 4, 11, 30])
def test_top_columns_are_the_dense_stable_argsort(n):
    rng = np.random.default_rng(6)
    n_rows, n_columns = 12, 11
    mask = rng.random((n_rows, n_columns)) < 0.4
    mask[0], mask[1] = True, False
    constants = rng.normal(size=n_rows)
    dense = np.repeat(constants[:, None], n_columns, axis=1)
    dense[mask] = rng.normal(size=int(mask.sum()))  # above and below the constants
    mask[2, 5], dense[2, 5] = True, constants[2]  # a stored entry equal to its row's constant
    mask[3, :4], dense[3, :4] = True, 7.0  # tied stored entries
    matrix = stored_where(constants, dense, mask)
    for r, top in enumerate(matrix.top_columns(n)):
        np.testing.assert_array_equal(top, np.argsort(-dense[r], kind="stable")[:n], err_msg=f"row {r}")


@pytest.mark.parametrize("generator", GENERATORS)
def test_the_elda_output_lists_each_topics_words_as_its_candidate_does(generator):
    corpus = random_corpus(np.random.default_rng(7), n_documents=(40, 40), n_words=(60, 60))
    candidates = keyword_candidates(corpus, generator)
    solution = fast_greedy(corpus, candidates, 2.0)
    for top_n in (3, 25, 80):
        expected = [candidates.top_words(int(t), top_n, corpus.vocabulary) for t in solution.topics_used]
        assert solution.to_output(top_n=top_n).topics == expected


def test_softmax_and_normalised_rows_match_the_dense_formulas():
    rng = np.random.default_rng(2)
    matrix, dense = random_constant_plus_sparse(rng)
    shifted = np.exp(dense - dense.max(axis=1, keepdims=True))
    np.testing.assert_allclose(matrix.softmax_rows().toarray(), shifted / shifted.sum(axis=1, keepdims=True), rtol=1e-14)
    positive = matrix.map(np.abs)
    np.testing.assert_allclose(
        positive.normalised_rows().toarray(), np.abs(dense) / np.abs(dense).sum(axis=1, keepdims=True), rtol=1e-14
    )


def test_a_malformed_constant_plus_sparse_matrix_is_refused():
    with pytest.raises(InputError, match="needs indptr of 3 entries"):
        ConstantPlusSparse(np.zeros(2), np.array([0, 1]), np.array([0]), np.array([1.0]), 3)
    with pytest.raises(InputError, match="stored columns must lie in \\[0, 2\\]"):
        ConstantPlusSparse(np.zeros(2), np.array([0, 1, 1]), np.array([3]), np.array([1.0]), 3)
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(ConstantPlusSparse(np.zeros(1), np.array([0, 0]), np.array([], dtype=np.int64), np.array([]), 2),
                   copy=False)


@pytest.mark.parametrize("generator", GENERATORS)
def test_the_elda_output_holds_no_dense_matrix_and_equals_the_dense_distributions(generator):
    corpus = sparse_corpus()
    candidates = keyword_candidates(corpus, generator)
    solution = fast_greedy(corpus, candidates, 2.0)
    output = solution.to_output()
    topic_word, topic_document = output.topic_word_matrix, output.topic_document_matrix
    assert isinstance(topic_word, ConstantPlusSparse) and sp.issparse(topic_document)
    n_topics = len(solution.topics_used)
    # the stored form is far smaller than the dense matrices it stands for
    assert topic_word.nbytes < 0.6 * 8 * n_topics * corpus.n_words
    assert topic_document.data.nbytes < 0.6 * 8 * n_topics * corpus.n_documents
    # the dense distributions by their formulas: normalised count rows, else softmax(L)
    L = candidates.to_dense()[solution.topics_used]
    if generator == "cooccurrence":
        dense = L / L.sum(axis=1, keepdims=True)
    else:
        dense = np.exp(L - L.max(axis=1, keepdims=True))
        dense /= dense.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(topic_word.toarray(), dense, rtol=1e-13, atol=1e-300)
    output.check(corpus.n_documents, corpus.n_tokens)
    octis = output.to_octis()
    assert type(octis["topic-word-matrix"]) is np.ndarray and type(octis["topic-document-matrix"]) is np.ndarray
    np.testing.assert_array_equal(octis["topic-word-matrix"], topic_word.toarray())
    np.testing.assert_array_equal(octis["topic-document-matrix"], topic_document.toarray())


def test_the_sparse_topic_document_matrix_has_the_dense_shares():
    # document 0: topics 0, 0, 2; document 1: no topic (spread evenly); document 2: topic 1
    token_topics = np.array([0, 2, 0, -1, -1, 1])
    offsets = np.array([0, 3, 5, 6])
    shares = topic_document_from_token_topics(token_topics, offsets, 3)
    expected = np.array([[2 / 3, 1 / 3, 0.0], [0.0, 1 / 3, 1.0], [1 / 3, 1 / 3, 0.0]])
    assert sp.issparse(shares)
    np.testing.assert_array_equal(shares.toarray(), expected)


def test_an_output_saved_in_its_own_form_is_read_back_in_it(tmp_path):
    corpus = random_corpus(np.random.default_rng(3), n_documents=(20, 20), n_words=(30, 30))
    output = fast_greedy(corpus, keyword_candidates(corpus, "raw_umass"), 2.0).to_output()
    loaded = TopicModelOutput.load(output.save(tmp_path / "elda"))
    assert isinstance(loaded.topic_word_matrix, ConstantPlusSparse) and sp.issparse(loaded.topic_document_matrix)
    for part in ("row_constants", "indptr", "indices", "values"):
        np.testing.assert_array_equal(getattr(loaded.topic_word_matrix, part), getattr(output.topic_word_matrix, part))
    assert loaded.topic_word_matrix.n_columns == corpus.n_words
    assert (loaded.topic_document_matrix != output.topic_document_matrix).nnz == 0
    np.testing.assert_array_equal(loaded.token_topics, output.token_topics)
    assert loaded.topics == output.topics and loaded.extra == output.extra
    with np.load(tmp_path / "elda" / "matrices.npz") as arrays:
        assert "topic_word_matrix" not in arrays.files and "topic_word_matrix.row_constants" in arrays.files
    # a dense output (a baseline's) is saved and read back as before
    dense = replace(output, topic_word_matrix=output.topic_word_matrix.toarray(),
                    topic_document_matrix=output.topic_document_matrix.toarray())
    again = TopicModelOutput.load(dense.save(tmp_path / "dense"))
    assert type(again.topic_word_matrix) is np.ndarray and type(again.topic_document_matrix) is np.ndarray
    np.testing.assert_array_equal(again.topic_word_matrix, dense.topic_word_matrix)


def test_a_sparse_output_that_breaks_the_contract_is_refused():
    corpus = random_corpus(np.random.default_rng(4), n_documents=(15, 15), n_words=(20, 20))
    output = fast_greedy(corpus, keyword_candidates(corpus, "cooccurrence"), 2.0).to_output()
    topic_word = output.topic_word_matrix
    doubled = ConstantPlusSparse(topic_word.row_constants * 2, topic_word.indptr, topic_word.indices,
                                 topic_word.values * 2, topic_word.n_columns)
    with pytest.raises(InputError, match="topic-word rows must sum to 1"):
        replace(output, topic_word_matrix=doubled).check()
    negative = output.topic_document_matrix.copy()
    negative.data[0] = -negative.data[0]
    with pytest.raises(InputError, match="topic-document columns hold negative"):
        replace(output, topic_document_matrix=negative).check()
