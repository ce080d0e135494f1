"""One number per model from its topics' own scores, weighted by how much of the corpus each
topic holds: what a model's coherence is when models of different K are set side by side.

A model's score (``npmi@10``) is the plain mean over its topics, so a topic that one document
uses counts as much as one that half the corpus uses, and the mean moves with K. The
prevalence-weighted mean counts each topic by its share of the corpus (the mean over documents
of p(topic | document), the ``share`` of the run's topics): a model is scored by the topics its
documents are made of.

>>> prevalence_weighted_mean([0.2, 0.0, -0.1], [0.5, 0.3, 0.2])
0.08
>>> top_k_means([0.2, 0.0, -0.1], [0.5, 0.3, 0.2]).round(3).tolist()  # k = 1, 2, 3 most prevalent
[0.2, 0.1, 0.033]
"""

from __future__ import annotations

import numpy as np

from topicbench.core.validation import InputError


def _paired(scores, shares) -> tuple[np.ndarray, np.ndarray]:
    """(scores, shares) as float arrays of one length, the topics without a finite score left out."""
    scores, shares = np.asarray(scores, dtype=float), np.asarray(shares, dtype=float)
    if scores.shape != shares.shape or scores.ndim != 1:
        raise InputError(f"one score and one share per topic: got {scores.shape} scores and {shares.shape} shares")
    if (shares < 0).any() or not np.isfinite(shares).all():
        raise InputError("a topic's share of the corpus is a finite number >= 0")
    kept = np.isfinite(scores)
    return scores[kept], shares[kept]


def prevalence_weighted_mean(scores, shares) -> float | None:
    """Σ share·score / Σ share over the topics with a finite score; None where they hold no share.

    Parameters
    ----------
    scores : array of float, one per topic
        Each topic's own score (NaN: not scored, left out).
    shares : array of float, one per topic
        Each topic's share of the corpus (need not sum to 1: the weights are normalised over the
        topics kept).
    """
    scores, shares = _paired(scores, shares)
    total = shares.sum()
    return float(np.dot(scores, shares) / total) if total > 0 else None


def top_k_means(scores, shares) -> np.ndarray:
    """The plain mean over the k most prevalent topics, for k = 1 .. the topics with a finite score
    (ties in share keep the topics' order): how a model's mean moves as fewer of its rarer topics
    count. Its last value is the model's plain mean; an empty array where no topic has a score."""
    scores, shares = _paired(scores, shares)
    order = np.argsort(-shares, kind="stable")
    return np.cumsum(scores[order]) / np.arange(1, len(scores) + 1)
