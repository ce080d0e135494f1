r"""Embedding coherence from given word vectors (pairwise and centroid).

Nothing is loaded here: the caller passes word vectors, e.g. from
``topicbench.baselines.embeddings.word_vectors(vocabulary)`` (all-MiniLM-L6-v2, cached per
vocabulary). Vectors are normalised to unit length, so every similarity is a cosine.

For a topic's top-N words with unit vectors u_1..u_N:

- pairwise:  E_pair(t) = 2 / (N(N−1)) · Σ_{i<j} u_i · u_j
- centroid:  E_cent(t) = 1/N · Σ_i u_i · c / ‖c‖,   c = 1/N · Σ_i u_i

(the mean cosine of each word with the topic's centroid, which equals ‖c‖). Pairwise lies in
[−1, 1], centroid in [0, 1]; higher is better.
Words without a vector (or with an all-zero vector) are out of vocabulary: an error, or dropped
and counted (``oov="drop"``).

>>> import numpy as np
>>> vectors = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
>>> scores = embedding_coherence([["a", "b", "c"]], vectors, ["a", "b", "c"], top_n=3)
>>> round(scores.mean[3], 6)    # (cos 45° + cos 90° + cos 45°) / 3
0.471405
"""

from __future__ import annotations

import numpy as np

from topicbench.core.constants import COHERENCE_TOP_N
from ..validation import InputError
from ._topics import TopicScores, resolve_topics

#: Embedding coherence variants.
EMBEDDING_KINDS = ("pairwise", "centroid")


def unit_vectors(vectors) -> tuple[np.ndarray, np.ndarray]:
    """Rows scaled to unit length, and which rows are usable (finite, non-zero)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[1] == 0:
        raise InputError(f"word vectors must be a 2-d array (words x dimensions), got shape {vectors.shape}")
    norms = np.linalg.norm(vectors, axis=1)
    usable = np.isfinite(norms) & (norms > 0)
    unit = np.zeros_like(vectors)
    unit[usable] = vectors[usable] / norms[usable, None]
    return unit, usable


def embedding_coherence(topics, vectors, vocabulary, top_n=COHERENCE_TOP_N, *, kind: str = "pairwise",
                        oov: str = "error") -> TopicScores:
    """Pairwise or centroid embedding coherence of each topic, for every N of ``top_n``.

    Parameters
    ----------
    topics : list of list of str
    vectors : ndarray, shape (n_words, dim)
        Word vectors, row i for ``vocabulary[i]``.
    vocabulary : sequence of str
        The words of the rows of ``vectors``.
    top_n : int or sequence of int
        N >= 2 for pairwise, >= 1 for centroid.
    kind : {"pairwise", "centroid"}
    oov : {"error", "drop"}
    """
    if kind not in EMBEDDING_KINDS:
        raise InputError(f"kind must be one of {', '.join(EMBEDDING_KINDS)}, got {kind!r}")
    vocabulary = list(vocabulary)
    unit, usable = unit_vectors(vectors)
    if len(vocabulary) != len(unit):
        raise InputError(f"{len(unit)} word vectors for a vocabulary of {len(vocabulary)} words")
    index = {word: i for i, word in enumerate(vocabulary)}
    resolved = resolve_topics(
        topics, index, usable, top_n, oov=oov, reference="the word vectors",
        minimum_n=2 if kind == "pairwise" else 1,
    )
    topic_vectors = unit[resolved.word_ids]  # (n_topics, max_n, dim)
    per_topic = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        if kind == "pairwise":
            # One batched BLAS product at the largest N; each N reads its top-left block.
            gram = np.matmul(topic_vectors, topic_vectors.transpose(0, 2, 1))  # (n_topics, max_n, max_n)
            for n in resolved.top_n:
                upper = np.triu_indices(n, k=1)
                per_topic[n] = gram[:, upper[0], upper[1]].mean(axis=1)
        else:
            for n in resolved.top_n:
                # 1/N Σ_i u_i · c / ‖c‖ = c · c / ‖c‖ = ‖c‖: the score is the centroid's length
                # (undefined, NaN, for a zero centroid)
                centroid_norm = np.linalg.norm(topic_vectors[:, :n].mean(axis=1), axis=1)
                per_topic[n] = np.where(centroid_norm > 0, centroid_norm, np.nan)
    return TopicScores(
        metric=f"embedding_{kind}",
        top_n=resolved.top_n,
        per_topic=per_topic,
        dropped_words=resolved.dropped,
        settings={"kind": kind, "dimensions": int(unit.shape[1]), "oov": oov},
    )
