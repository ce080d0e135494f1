"""Slow, dense reference twins of the E-LDA core, written straight from the spec.

Spec: ../shared/docs/elda-spec.md, sections 1-3. Nothing here imports the code under test except
the :class:`Corpus` container (read through its public fields only). Everything is dense numpy:
for small instances only.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

#: beta = log(1e-100): the null topic every document has from the start (spec §1).
BETA = math.log(1e-100)

#: The smoothing of the keyword generators (spec §2).
EPSILON = 1e-5

GENERATORS = ("raw_umass", "exp_umass", "cooccurrence")


# --------------------------------------------------------------------------------------------
# Corpus views
# --------------------------------------------------------------------------------------------


def documents(corpus) -> list[np.ndarray]:
    """Token ids of each document (reading order), from the corpus's flat arrays."""
    offsets = np.asarray(corpus.doc_offsets)
    tokens = np.asarray(corpus.token_ids)
    return [tokens[offsets[d] : offsets[d + 1]].astype(np.int64) for d in range(len(offsets) - 1)]


def dense_doc_term(corpus) -> np.ndarray:
    """D x V token counts, built from the token lists (not from ``corpus.doc_term``)."""
    counts = np.zeros((len(corpus.doc_offsets) - 1, len(corpus.vocabulary)), dtype=np.int64)
    for d, doc in enumerate(documents(corpus)):
        np.add.at(counts[d], doc, 1)
    return counts


def dense_cooccurrence(doc_term) -> np.ndarray:
    """C = B^T B with B the binary document-word matrix: documents containing both words."""
    doc_term = doc_term.toarray() if hasattr(doc_term, "toarray") else np.asarray(doc_term)
    binary = (doc_term > 0).astype(np.int64)
    return binary.T @ binary


# --------------------------------------------------------------------------------------------
# Keyword generators (spec §2), dense, all |V| rows (no collapsing)
# --------------------------------------------------------------------------------------------


def naive_candidates(corpus, generator: str, epsilon: float = EPSILON) -> np.ndarray:
    """Dense L (|V| x |V|): row w* is the keyword w*'s topic."""
    smoothed = dense_cooccurrence(dense_doc_term(corpus)).astype(np.float64) + epsilon
    if generator == "raw_umass":
        return np.log(smoothed) - np.log(smoothed.sum(axis=1, keepdims=True))
    if generator == "exp_umass":
        return smoothed - logsumexp(smoothed, axis=1, keepdims=True)
    if generator == "cooccurrence":
        return smoothed
    raise ValueError(f"unknown generator {generator!r}")


def identical_row_groups(matrix: np.ndarray) -> list[list[int]]:
    """Groups of rows that are exactly equal, each group in row order, groups by first row."""
    groups: dict[bytes, list[int]] = {}
    for row in range(matrix.shape[0]):
        groups.setdefault(np.ascontiguousarray(matrix[row]).tobytes(), []).append(row)
    return sorted(groups.values(), key=lambda group: group[0])


# --------------------------------------------------------------------------------------------
# Objective and gains (spec §1)
# --------------------------------------------------------------------------------------------


def _topics_by_document(links, n_documents: int) -> list[list[int]]:
    topics = [[] for _ in range(n_documents)]
    for d, t in np.asarray(links, dtype=np.int64).reshape(-1, 2):
        topics[int(d)].append(int(t))
    return topics


def best_scores(L: np.ndarray, doc: np.ndarray, topics) -> np.ndarray:
    """B_d[i] = max(beta, max over the document's topics of L[t, w_i]), per token."""
    scores = np.full(len(doc), BETA)
    for t in topics:
        scores = np.maximum(scores, L[t, doc])
    return scores


def objective(L: np.ndarray, corpus, links) -> float:
    """F(E) = sum_d sum_i max(beta, max_{t in E_d} L[t, w_{d,i}])."""
    docs = documents(corpus)
    topics = _topics_by_document(links, len(docs))
    return float(sum(best_scores(L, doc, topics[d]).sum() for d, doc in enumerate(docs)))


def gains(L: np.ndarray, doc: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """gain(t, d) = sum_i max(0, L[t, w_i] - B_d[i]) for every topic t."""
    return np.maximum(0.0, L[:, doc] - scores[None, :]).sum(axis=1)


def token_topics(L: np.ndarray, corpus, links) -> np.ndarray:
    """Each token's topic: argmax over its document's links of L[t, w] (ties: lowest topic id)."""
    docs = documents(corpus)
    topics = _topics_by_document(links, len(docs))
    out = []
    for d, doc in enumerate(docs):
        linked = np.array(sorted(topics[d]), dtype=np.int64)
        # np.argmax returns the first maximum: with topics sorted, that is the lowest topic id
        out.append(linked[np.argmax(L[linked][:, doc], axis=0)])
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


# --------------------------------------------------------------------------------------------
# Greedy (spec §3)
# --------------------------------------------------------------------------------------------


def _word_counts(doc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct words of a document (sorted) and their counts."""
    words, counts = np.unique(doc, return_counts=True)
    return words, counts.astype(np.float64)


def word_gains(L: np.ndarray, words: np.ndarray, counts: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """gain(t, d) = sum_i max(0, L[t, w_i] - B_d[i]), with the tokens of one word grouped:
    sum over distinct words w (sorted) of n_w max(0, L[t, w] - B_d[w]). Grouping makes two
    documents with the same multiset of words get bitwise-equal gains."""
    return (counts[None, :] * np.maximum(0.0, L[:, words] - scores[None, :])).sum(axis=1)


def budget_of(kappa: float, n_documents: int) -> int:
    return int(math.floor(kappa * n_documents))


def naive_greedy(L: np.ndarray, corpus, kappa: float):
    """FastInitialize, then greedy where every step recomputes every (document, topic) gain.

    FastInitialize: each document links its best topic on the empty solution (ties: lowest topic
    id). Then, until |E| = floor(kappa D): compute each document's best unlinked topic (ties: lowest
    topic id) and its gain, and link the document with the largest gain (ties: lowest document id).
    This is the order of the spec's heap of (gain desc, document asc) entries: only the popped
    document's gains change, so recomputing all of them selects the same entry.

    Returns (links as an int64 array (k, 2), gains as a float array (k,)).
    """
    L = np.asarray(L, dtype=np.float64)
    docs = [_word_counts(doc) for doc in documents(corpus)]
    n_docs, n_topics = len(docs), L.shape[0]
    budget = budget_of(kappa, n_docs)
    if budget > n_docs * n_topics:
        raise ValueError("budget larger than documents x topics")
    scores = [np.full(len(words), BETA) for words, _ in docs]
    linked = np.zeros((n_docs, n_topics), dtype=bool)
    links, link_gains = [], []

    def link(d, t, g):
        linked[d, t] = True
        scores[d] = np.maximum(scores[d], L[t, docs[d][0]])
        links.append((d, t))
        link_gains.append(g)

    # FastInitialize, round 1 (every document, on the empty solution).
    for d, (words, counts) in enumerate(docs):
        g = word_gains(L, words, counts, scores[d])
        t = int(np.argmax(g))  # first maximum = lowest topic id
        link(d, t, float(g[t]))
    # Greedy: recompute everything, take (max gain, lowest document, lowest topic).
    while len(links) < budget:
        best_gain = np.full(n_docs, -np.inf)
        best_topic = np.full(n_docs, -1)
        for d, (words, counts) in enumerate(docs):
            g = word_gains(L, words, counts, scores[d])
            g[linked[d]] = -np.inf
            t = int(np.argmax(g))
            if np.isfinite(g[t]):
                best_gain[d], best_topic[d] = g[t], t
        d = int(np.argmax(best_gain))  # first maximum = lowest document id
        link(d, int(best_topic[d]), float(best_gain[d]))
    return np.array(links, dtype=np.int64).reshape(-1, 2), np.array(link_gains, dtype=np.float64)


def greedy_choices(L: np.ndarray, corpus, links) -> np.ndarray:
    """All (document, topic) gains (D x |Phi|) given the links made so far (linked: -inf)."""
    L = np.asarray(L, dtype=np.float64)
    docs = documents(corpus)
    topics = _topics_by_document(links, len(docs))
    out = np.empty((len(docs), L.shape[0]))
    for d, doc in enumerate(docs):
        words, counts = _word_counts(doc)
        out[d] = word_gains(L, words, counts, best_scores(L, words, topics[d]))
        out[d, topics[d]] = -np.inf
    return out
