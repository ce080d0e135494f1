"""The one output contract every model returns (E-LDA and baselines alike), OCTIS-compatible."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .corpus import segment_ids
from .validation import InputError

#: Rows/columns of probability matrices must sum to 1 within this tolerance.
PROBABILITY_TOLERANCE = 1e-6


@dataclass(frozen=True, eq=False)
class TopicModelOutput:
    """A fitted topic model's output.

    Parameters
    ----------
    model : str
        Registry name of the model that produced it.
    vocabulary : tuple of str
        Column order of ``topic_word_matrix`` (the corpus vocabulary).
    topics : list of list of str
        Each topic's words, best first (OCTIS ``"topics"``).
    topic_word_matrix : ndarray, shape (n_topics, n_words)
        p(word | topic); rows sum to 1 (OCTIS ``"topic-word-matrix"``).
    topic_document_matrix : ndarray, shape (n_topics, n_documents)
        p(topic | document); columns sum to 1 (OCTIS ``"topic-document-matrix"``).
    token_topics : ndarray of int64, shape (n_tokens,), optional
        Each token's topic (row of ``topic_word_matrix``), for models that assign tokens; -1 for a
        token with no topic.
    topic_labels : list of str, optional
        A label per topic (E-LDA: its keywords).
    settings : dict
        Every setting the model was fitted with, resolved values included.
    seed : int or None
    fit_seconds : float
    peak_memory_mb : float or None
        Peak resident memory during the fit, where measured.
    extra : dict
        Model-specific results (e.g. E-LDA's log posterior and budget), JSON-serialisable.
    """

    model: str
    vocabulary: tuple
    topics: list
    topic_word_matrix: np.ndarray
    topic_document_matrix: np.ndarray
    token_topics: np.ndarray | None = None
    topic_labels: list | None = None
    settings: dict = field(default_factory=dict)
    seed: int | None = None
    fit_seconds: float = 0.0
    peak_memory_mb: float | None = None
    extra: dict = field(default_factory=dict)

    @property
    def n_topics(self) -> int:
        return len(self.topics)

    def to_octis(self) -> dict:
        """The OCTIS output dict: ``topics``, ``topic-word-matrix``, ``topic-document-matrix``."""
        return {
            "topics": [list(words) for words in self.topics],
            "topic-word-matrix": self.topic_word_matrix,
            "topic-document-matrix": self.topic_document_matrix,
        }

    def top_words(self, n: int) -> list[list[str]]:
        """Each topic's n best words; an error if a topic has fewer."""
        short = [k for k, words in enumerate(self.topics) if len(words) < n]
        if short:
            raise InputError(
                f"{self.model}: topic {short[0]} has {len(self.topics[short[0]])} words, fewer than "
                f"top-N = {n} ({len(short)} topics are short)"
            )
        return [list(words[:n]) for words in self.topics]

    def check(self, n_documents: int | None = None, n_tokens: int | None = None) -> "TopicModelOutput":
        """Check the contract's invariants; raise :class:`InputError` naming the first broken one."""
        name = self.model
        vocabulary = set(self.vocabulary)
        tw, td = np.asarray(self.topic_word_matrix), np.asarray(self.topic_document_matrix)
        n_topics = len(self.topics)
        if n_topics == 0:
            raise InputError(f"{name}: the output has no topics")
        if tw.shape != (n_topics, len(self.vocabulary)):
            raise InputError(f"{name}: topic-word matrix has shape {tw.shape}, expected {(n_topics, len(self.vocabulary))}")
        if td.ndim != 2 or td.shape[0] != n_topics:
            raise InputError(f"{name}: topic-document matrix has shape {td.shape}, expected ({n_topics}, documents)")
        if n_documents is not None and td.shape[1] != n_documents:
            raise InputError(f"{name}: topic-document matrix covers {td.shape[1]} documents, the corpus has {n_documents}")
        for matrix, axis, what in ((tw, 1, "topic-word rows"), (td, 0, "topic-document columns")):
            if not np.all(np.isfinite(matrix)) or (matrix < 0).any():
                raise InputError(f"{name}: {what} hold negative, NaN or infinite values")
            sums = matrix.sum(axis=axis)
            worst = int(np.argmax(np.abs(sums - 1.0))) if sums.size else 0
            if sums.size and abs(sums[worst] - 1.0) > PROBABILITY_TOLERANCE:
                raise InputError(f"{name}: {what} must sum to 1; entry {worst} sums to {sums[worst]:.6g}")
        for k, words in enumerate(self.topics):
            if not words:
                raise InputError(f"{name}: topic {k} has no words")
            bad = [w for w in words if not w or w not in vocabulary]
            if bad:
                raise InputError(f"{name}: topic {k} lists words outside the vocabulary or empty: {bad[:5]}")
            if len(set(words)) != len(words):
                raise InputError(f"{name}: topic {k} lists a word twice")
        if self.token_topics is not None:
            tokens = np.asarray(self.token_topics)
            if n_tokens is not None and len(tokens) != n_tokens:
                raise InputError(f"{name}: {len(tokens)} token topics for {n_tokens} tokens")
            if len(tokens) and (tokens.min() < -1 or tokens.max() >= n_topics):
                raise InputError(f"{name}: token topics must lie in [-1, {n_topics - 1}]")
        if self.topic_labels is not None and len(self.topic_labels) != n_topics:
            raise InputError(f"{name}: {len(self.topic_labels)} labels for {n_topics} topics")
        return self

    def save(self, folder) -> Path:
        """Write ``output.json`` (topics, labels, settings, timings, extra) and ``matrices.npz``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        meta = {
            "model": self.model,
            "vocabulary": list(self.vocabulary),
            "topics": [list(words) for words in self.topics],
            "topic_labels": self.topic_labels,
            "settings": self.settings,
            "seed": self.seed,
            "fit_seconds": self.fit_seconds,
            "peak_memory_mb": self.peak_memory_mb,
            "extra": self.extra,
        }
        (folder / "output.json").write_text(json.dumps(meta, indent=1, default=_json_default), encoding="utf-8")
        arrays = {"topic_word_matrix": self.topic_word_matrix, "topic_document_matrix": self.topic_document_matrix}
        if self.token_topics is not None:
            arrays["token_topics"] = self.token_topics
        np.savez_compressed(folder / "matrices.npz", **arrays)
        return folder

    @classmethod
    def load(cls, folder) -> "TopicModelOutput":
        folder = Path(folder)
        meta = json.loads((folder / "output.json").read_text(encoding="utf-8"))
        with np.load(folder / "matrices.npz") as arrays:
            token_topics = arrays["token_topics"] if "token_topics" in arrays.files else None
            return cls(
                model=meta["model"],
                vocabulary=tuple(meta["vocabulary"]),
                topics=meta["topics"],
                topic_word_matrix=arrays["topic_word_matrix"],
                topic_document_matrix=arrays["topic_document_matrix"],
                token_topics=token_topics,
                topic_labels=meta["topic_labels"],
                settings=meta["settings"],
                seed=meta["seed"],
                fit_seconds=meta["fit_seconds"],
                peak_memory_mb=meta["peak_memory_mb"],
                extra=meta["extra"],
            )


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def topic_document_from_token_topics(token_topics, doc_offsets, n_topics: int) -> np.ndarray:
    """p(topic | document) as each document's share of tokens per topic (tokens at -1 ignored;
    a document with none is spread evenly)."""
    token_topics = np.asarray(token_topics)
    n_docs = len(doc_offsets) - 1
    token_doc = segment_ids(doc_offsets)
    keep = token_topics >= 0
    counts = np.zeros((n_topics, n_docs))
    np.add.at(counts, (token_topics[keep], token_doc[keep]), 1.0)
    totals = counts.sum(axis=0)
    empty = totals == 0
    counts[:, empty] = 1.0 / n_topics
    counts[:, ~empty] /= totals[~empty]
    return counts
