"""Synthetic LDA corpora at scale (10^6 documents and more), generated with array operations only.

Each of ``n_topics`` topics owns a block of the vocabulary and draws its words from that block
with Zipf weights (the block's first word most often), so that, as in real text, a few words are
frequent and most are rare, and the co-occurrence matrix stays sparse enough for keyword
candidates at |V| = 10^5. Documents draw topic proportions from a symmetric Dirichlet and a
length from a Poisson distribution (at least one token). Every word of the vocabulary occurs:
a word the draw missed replaces one token of its own topic, chosen at random.

Documents are generated in chunks, so memory is the corpus plus one chunk's topic proportions.
"""

from __future__ import annotations

import numpy as np

from .corpus import Corpus
from .validation import InputError

#: Documents per generation chunk: bounds the Dirichlet draws and cumulative sums in memory.
_CHUNK_DOCUMENTS = 65_536


def synthetic_lda_corpus(
    n_documents: int, n_words: int, *, n_topics: int = 100, doc_length: float = 20.0,
    alpha: float = 0.05, zipf_exponent: float = 1.0, seed: int = 0,
) -> Corpus:
    """A corpus drawn from LDA with block-sparse, Zipf-weighted topics.

    Parameters
    ----------
    n_documents : int
        D, the number of documents.
    n_words : int
        |V|; every word occurs at least once (word ``i`` is named ``w<i>``).
    n_topics : int, default 100
        Topics; topic ``k`` owns words ``[k |V| / K, (k + 1) |V| / K)``.
    doc_length : float, default 20
        Mean document length (Poisson, at least 1 token).
    alpha : float, default 0.05
        Symmetric Dirichlet parameter of the topic proportions (small: few topics a document).
    zipf_exponent : float, default 1
        Word weights within a topic are ``rank ** -zipf_exponent``.
    seed : int, default 0
        The same seed and arguments give the same corpus.

    Returns
    -------
    Corpus
        Its ``preprocessing`` records every argument.
    """
    _check_arguments(n_documents, n_words, n_topics, doc_length, alpha)
    rng = np.random.default_rng(seed)
    lengths = np.maximum(rng.poisson(doc_length, size=n_documents), 1).astype(np.int64)
    offsets = np.zeros(n_documents + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    block_starts = (np.arange(n_topics + 1, dtype=np.int64) * n_words) // n_topics
    if offsets[-1] < n_words:
        raise InputError(
            f"{offsets[-1]} tokens cannot hold all {n_words} words: raise n_documents or doc_length"
        )
    token_topics = np.empty(offsets[-1], dtype=np.int32)
    for first in range(0, n_documents, _CHUNK_DOCUMENTS):
        last = min(first + _CHUNK_DOCUMENTS, n_documents)
        token_topics[offsets[first]:offsets[last]] = _draw_topics(rng, lengths[first:last], n_topics, alpha)
    tokens = _draw_words(rng, token_topics, block_starts, zipf_exponent)
    _cover_vocabulary(rng, tokens, token_topics, block_starts)
    return Corpus(
        vocabulary=tuple(f"w{i}" for i in range(n_words)),
        token_ids=tokens,
        doc_offsets=offsets,
        name=f"synthetic_D{n_documents}_V{n_words}",
        source="topicbench.core.synthetic.synthetic_lda_corpus",
        preprocessing={
            "synthetic": True, "n_documents": n_documents, "n_words": n_words, "n_topics": n_topics,
            "doc_length": doc_length, "alpha": alpha, "zipf_exponent": zipf_exponent, "seed": seed,
        },
    )


def _check_arguments(n_documents, n_words, n_topics, doc_length, alpha) -> None:
    for value, name in ((n_documents, "n_documents"), (n_words, "n_words"), (n_topics, "n_topics")):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError(f"{name} must be a positive integer, got {value!r}")
    if n_topics > n_words:
        raise InputError(f"n_topics ({n_topics}) must not exceed n_words ({n_words}): each topic owns words")
    if not doc_length > 0 or not alpha > 0:
        raise InputError(f"doc_length and alpha must be > 0, got {doc_length!r} and {alpha!r}")


def _draw_topics(rng, lengths: np.ndarray, n_topics: int, alpha: float) -> np.ndarray:
    """Each token's topic, from its document's Dirichlet proportions, for one chunk of documents.

    One ``searchsorted`` for the whole chunk: row ``i``'s cumulative proportions are shifted by
    ``i`` so the rows lie end to end on one increasing axis.
    """
    n_docs = len(lengths)
    theta = rng.dirichlet(np.full(n_topics, alpha), size=n_docs)
    cumulative = np.cumsum(theta, axis=1)
    cumulative[:, -1] = 1.0  # no rounding gap past the last topic
    cumulative += np.arange(n_docs)[:, None]
    doc_of_token = np.repeat(np.arange(n_docs), lengths)
    position = np.searchsorted(cumulative.ravel(), rng.random(len(doc_of_token)) + doc_of_token, side="right")
    return np.minimum(position - doc_of_token * n_topics, n_topics - 1).astype(np.int32)


def _draw_words(rng, token_topics: np.ndarray, block_starts: np.ndarray, zipf_exponent: float) -> np.ndarray:
    """Each token's word: a Zipf-weighted rank within its topic's block of the vocabulary."""
    tokens = np.empty(len(token_topics), dtype=np.int32)
    sizes = np.diff(block_starts)
    for size in np.unique(sizes):  # blocks differ in size by at most one word
        cdf = np.cumsum(np.arange(1, size + 1, dtype=np.float64) ** -zipf_exponent)
        cdf /= cdf[-1]
        picked = np.nonzero(sizes[token_topics] == size)[0]
        ranks = np.minimum(np.searchsorted(cdf, rng.random(len(picked)), side="right"), size - 1)
        tokens[picked] = block_starts[token_topics[picked]] + ranks
    return tokens


def _cover_vocabulary(rng, tokens: np.ndarray, token_topics: np.ndarray, block_starts: np.ndarray) -> None:
    """Give every missing word one token of its own topic, in place, without losing another word.

    A token is taken only from a word that occurs at least twice, so no word goes missing; draws
    that collide are redrawn (few rounds: missing words are rare and tokens many).
    """
    n_words = int(block_starts[-1])
    counts = np.bincount(tokens, minlength=n_words)
    missing = np.nonzero(counts == 0)[0]
    if len(missing) == 0:
        return
    topic_of_word = np.searchsorted(block_starts, np.arange(n_words), side="right") - 1
    by_topic = np.argsort(token_topics, kind="stable")
    topic_starts = np.searchsorted(token_topics[by_topic], np.arange(len(block_starts)))
    if np.any(np.diff(topic_starts) < np.diff(block_starts)):  # then a topic has no spare token
        raise InputError("a topic drew fewer tokens than it has words: raise n_documents or doc_length")
    while len(missing):
        topics = topic_of_word[missing]
        available = topic_starts[topics + 1] - topic_starts[topics]
        chosen = by_topic[topic_starts[topics] + (rng.random(len(missing)) * available).astype(np.int64)]
        chosen, first = np.unique(chosen, return_index=True)  # one missing word per token
        words = missing[first]
        spare = counts[tokens[chosen]] >= 2
        chosen, words = chosen[spare], words[spare]
        np.subtract.at(counts, tokens[chosen], 1)
        spare = counts[tokens[chosen]] >= 1  # two draws may have taken the same word's last spares
        np.add.at(counts, tokens[chosen[~spare]], 1)
        chosen, words = chosen[spare], words[spare]
        tokens[chosen] = words
        counts[words] += 1
        missing = np.nonzero(counts == 0)[0]
