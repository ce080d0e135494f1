"""Input checks for the public functions of ``core``: the only place input errors are raised.

Each message says what is wrong, where, and how to fix it.
"""

from __future__ import annotations

import math

import numpy as np


class InputError(ValueError):
    """Bad input to topicbench: the message names the problem and, where possible, the fix."""


def check_kappa(kappa: float) -> float:
    """Check the mean number of topics per document, kappa >= 1 (the E-LDA paper's objective)."""
    try:
        value = float(kappa)
    except (TypeError, ValueError):
        raise InputError(f"kappa must be a number >= 1, got {kappa!r}") from None
    if not math.isfinite(value) or value < 1:
        raise InputError(
            f"kappa must be >= 1 (every document gets at least one topic), got {kappa!r}"
        )
    return value


def check_epsilon(epsilon: float) -> float:
    """Check the parallel algorithm's accuracy parameter, 0 < epsilon < 1 (the E-LDA paper's algorithms)."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.number)) or not 0 < epsilon < 1:
        raise InputError(f"epsilon must lie in (0, 1), got {epsilon!r}")
    return float(epsilon)


def check_budget(kappa: float, n_documents: int, n_topics: int) -> int:
    """Resolve the global budget k = floor(kappa * D) and check that it can be met.

    A document can link each candidate topic at most once, so k <= D * |candidates|.
    """
    kappa = check_kappa(kappa)
    if n_documents < 1:
        raise InputError("the corpus has no documents: nothing to assign topics to")
    if n_topics < 1:
        raise InputError("there are no candidate topics")
    budget = int(math.floor(kappa * n_documents + 1e-9))
    if budget > n_documents * n_topics:
        raise InputError(
            f"budget k = floor(kappa * D) = {budget} is larger than documents x topics = "
            f"{n_documents} x {n_topics} = {n_documents * n_topics}: lower kappa to at most "
            f"{n_topics}"
        )
    return budget


def check_num_topics_fit(num_topics: int, n_documents: int, n_words: int, *, where: str, corpus: str) -> None:
    """Check that K topics can be fitted on a corpus of ``n_documents`` over ``n_words`` words.

    A topic is told apart by the documents and words it takes, so no model can fit more topics
    than the corpus has document-word cells (documents x vocabulary): such a K is a mistake (2000
    for 200, a range's high end) that would only cost time and memory.
    """
    cells = n_documents * n_words
    if num_topics > cells:
        raise InputError(
            f"{where}: K = {num_topics} topics is beyond corpus {corpus!r}, which has {n_documents} documents x "
            f"{n_words} words = {cells} document-word cells: no model can fit more topics than that; "
            f"give K at most {cells}"
        )


def check_topic_matrix(log_phi, n_words: int, *, name: str = "log_phi") -> np.ndarray:
    """Check a user-given topic matrix of log-scores, shape (topics, vocabulary)."""
    matrix = np.asarray(log_phi, dtype=np.float64)
    if matrix.ndim != 2:
        raise InputError(f"{name} must be a 2-d array (topics x words), got {matrix.ndim} dimensions")
    if matrix.shape[0] == 0:
        raise InputError(f"{name} has no topics (0 rows)")
    if matrix.shape[1] != n_words:
        raise InputError(
            f"{name} has {matrix.shape[1]} columns but the corpus vocabulary has {n_words} words: "
            "the topic matrix must use the corpus vocabulary, in its order"
        )
    bad = ~np.isfinite(matrix)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        kind = "NaN" if np.isnan(matrix[row, col]) else "infinite"
        raise InputError(
            f"{name} has {int(bad.sum())} NaN or infinite values (first: {kind} at topic {row}, "
            f"word {col}); give log-probabilities with a finite floor, e.g. log(phi + 1e-100)"
        )
    return matrix


def check_labels(labels, n_topics: int, *, name: str = "labels") -> list[str]:
    """Check one label per topic."""
    labels = [str(label) for label in labels]
    if len(labels) != n_topics:
        raise InputError(f"{name} has {len(labels)} entries for {n_topics} topics")
    return labels


def check_vocabulary_matches(topic_vocabulary, corpus_vocabulary, *, name: str = "log_phi") -> None:
    """Check that a topic matrix's vocabulary is the corpus vocabulary, in the same order."""
    topic_vocabulary = list(topic_vocabulary)
    corpus_vocabulary = list(corpus_vocabulary)
    if topic_vocabulary == corpus_vocabulary:
        return
    missing = [w for w in topic_vocabulary if w not in set(corpus_vocabulary)]
    detail = (
        f"{len(missing)} of its words are not in the corpus (e.g. {missing[:5]})"
        if missing
        else "the words are the same but in another order or with duplicates"
    )
    raise InputError(
        f"the vocabulary of {name} ({len(topic_vocabulary)} words) does not match the corpus "
        f"vocabulary ({len(corpus_vocabulary)} words): {detail}"
    )


def check_candidates_match_corpus(
    candidates, corpus, *, name: str = "the candidates", fix: str = "build candidates over the corpus vocabulary",
) -> None:
    """Check that candidate topics score the corpus's words and that the corpus has tokens.

    Parameters
    ----------
    candidates : Candidates
        Anything with ``n_words`` (the width of the topic matrix).
    corpus : Corpus
        Anything with ``n_words``, ``n_documents``, ``n_tokens`` and ``name``.
    name : str
        What the candidates are, as the message names them (e.g. "the frozen topics").
    fix : str
        How to fix a vocabulary mismatch, appended to the message.
    """
    if candidates.n_words != corpus.n_words:
        raise InputError(
            f"{name} cover {candidates.n_words} words but the corpus vocabulary has {corpus.n_words}: {fix}"
        )
    if corpus.n_documents == 0 or corpus.n_tokens == 0:
        raise InputError(f"corpus {corpus.name!r} has no tokens")
