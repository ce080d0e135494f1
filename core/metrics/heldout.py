r"""Held-out fit: per-word log-likelihood and perplexity of test documents.

For models that define p(w | d) = Σ_k θ_d[k] φ_k[w], given the topics φ (K × V) and the test
documents' topic proportions θ (K × D_test, supplied by the model: its inference on the test
documents, or a document-completion estimate), with n_dw the count of word w in test document d:

    LL = Σ_d Σ_w n_dw · log Σ_k θ_d[k] φ_k[w],
    per-word LL = LL / Σ_d Σ_w n_dw,         perplexity = exp(−per-word LL).

Probabilities below ``PROBABILITY_FLOOR`` (1e-100) are floored before the log; the number of
tokens floored is reported (a model that gives an observed word probability 0 is penalised by
log 1e-100 per token rather than by −∞).

>>> import numpy as np, scipy.sparse as sp
>>> phi = np.array([[0.5, 0.5], [1.0, 0.0]]); theta = np.array([[1.0], [0.0]])
>>> fit = heldout_log_likelihood(sp.csr_matrix([[2, 0]]), phi, theta)
>>> round(fit.perplexity, 6)
2.0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from topicbench.core.constants import HELDOUT_CHUNK_CELLS as CHUNK_CELLS
from topicbench.core.constants import PROBABILITY_FLOOR
from ..corpus import Corpus
from ..output import check_probabilities, matrix_shape
from ..topic_word import ConstantPlusSparse
from ..validation import InputError


@dataclass(frozen=True)
class HeldOutFit:
    """Held-out fit of a model on test documents.

    Attributes
    ----------
    log_likelihood : float
        LL, summed over all test tokens.
    n_tokens : int
    floored_tokens : int
        Tokens whose probability was below ``PROBABILITY_FLOOR`` and was floored.
    """

    log_likelihood: float
    n_tokens: int
    floored_tokens: int

    @property
    def per_word(self) -> float:
        return self.log_likelihood / self.n_tokens

    @property
    def perplexity(self) -> float:
        return float(np.exp(-self.per_word))

    def as_dict(self) -> dict:
        return {"heldout_log_likelihood": self.per_word, "perplexity": self.perplexity}


def heldout_log_likelihood(test_documents, topic_word_matrix, doc_topic_matrix) -> HeldOutFit:
    """Per-word held-out log-likelihood of test documents (pure function).

    Parameters
    ----------
    test_documents : Corpus or sparse matrix (D_test × V)
        The test documents (word counts), over the vocabulary of ``topic_word_matrix``.
    topic_word_matrix : ndarray or ConstantPlusSparse (K, V)
        φ, rows summing to 1 (a constant-plus-sparse φ is never made dense).
    doc_topic_matrix : ndarray or scipy sparse matrix (K, D_test)
        θ of the test documents, columns summing to 1 (a sparse θ is made dense a chunk at a time).
    """
    counts = test_documents.doc_term if isinstance(test_documents, Corpus) else sp.csr_matrix(test_documents)
    phi = topic_word_matrix
    if not isinstance(phi, ConstantPlusSparse):
        phi = np.asarray(topic_word_matrix, dtype=np.float64)
    theta = sp.csc_matrix(doc_topic_matrix, dtype=np.float64) if sp.issparse(doc_topic_matrix) else (
        np.asarray(doc_topic_matrix, dtype=np.float64))
    if len(matrix_shape(phi)) != 2 or theta.ndim != 2 or theta.shape[0] != phi.shape[0]:
        raise InputError(
            f"shapes do not fit: topic-word {matrix_shape(phi)}, document-topic {theta.shape} (expected (K, V) and (K, D))"
        )
    if counts.shape != (theta.shape[1], phi.shape[1]):
        raise InputError(
            f"the test documents are {counts.shape[0]} x {counts.shape[1]} (documents x words) but "
            f"theta covers {theta.shape[1]} documents and phi {phi.shape[1]} words"
        )
    check_probabilities(phi, 1, "topic-word rows")
    check_probabilities(theta, 0, "document-topic columns")
    if counts.nnz == 0 or counts.sum() == 0:
        raise InputError("the test documents have no tokens")
    counts = counts.tocsr()
    counts.sum_duplicates()
    rows_per_chunk = max(1, CHUNK_CELLS // max(phi.shape[1], 1))
    total, floored = 0.0, 0
    for begin in range(0, counts.shape[0], rows_per_chunk):
        block = counts[begin : begin + rows_per_chunk].tocoo()
        chunk_theta = theta[:, begin : begin + rows_per_chunk]
        chunk_theta = chunk_theta.toarray() if sp.issparse(chunk_theta) else chunk_theta
        word_probability = chunk_theta.T @ phi  # p(w | d) of the chunk
        p = word_probability[block.row, block.col]
        low = p < PROBABILITY_FLOOR
        floored += int(block.data[low].sum())
        total += float(np.dot(block.data, np.log(np.maximum(p, PROBABILITY_FLOOR))))
    return HeldOutFit(log_likelihood=total, n_tokens=int(counts.sum()), floored_tokens=floored)
