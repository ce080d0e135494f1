"""The one output contract every model returns (E-LDA and baselines alike), OCTIS-compatible.

Baselines return dense matrices. E-LDA returns its matrices as what they are: the topic-word
matrix as a :class:`~topicbench.core.topic_word.ConstantPlusSparse` (a keyword topic is a constant
plus the words that co-occur with its keyword) and the topic-document matrix as a scipy sparse
matrix (a document has a few topics), so no dense |topics| x |V| matrix exists unless a user asks
for one with :meth:`TopicModelOutput.to_octis`.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # scipy.sparse is imported where used: `topicbench elda` never needs it
    import scipy.sparse as sp

from .corpus import segment_ids
from .topic_word import ConstantPlusSparse
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
    topic_word_matrix : ndarray or ConstantPlusSparse, shape (n_topics, n_words)
        p(word | topic); rows sum to 1 (OCTIS ``"topic-word-matrix"``, dense there).
    topic_document_matrix : ndarray or scipy sparse matrix, shape (n_topics, n_documents)
        p(topic | document); columns sum to 1 (OCTIS ``"topic-document-matrix"``, dense there).
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
    topic_word_matrix: np.ndarray | ConstantPlusSparse
    topic_document_matrix: np.ndarray | sp.spmatrix
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
        """The OCTIS output dict: ``topics``, ``topic-word-matrix``, ``topic-document-matrix``
        (dense arrays: a sparse matrix of the output is made dense here, on request)."""
        return {
            "topics": [list(words) for words in self.topics],
            "topic-word-matrix": dense_matrix(self.topic_word_matrix),
            "topic-document-matrix": dense_matrix(self.topic_document_matrix),
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
        tw, td = self.topic_word_matrix, self.topic_document_matrix
        n_topics = len(self.topics)
        if n_topics == 0:
            raise InputError(f"{name}: the output has no topics")
        if matrix_shape(tw) != (n_topics, len(self.vocabulary)):
            raise InputError(f"{name}: topic-word matrix has shape {matrix_shape(tw)}, expected {(n_topics, len(self.vocabulary))}")
        if len(matrix_shape(td)) != 2 or matrix_shape(td)[0] != n_topics:
            raise InputError(f"{name}: topic-document matrix has shape {matrix_shape(td)}, expected ({n_topics}, documents)")
        if n_documents is not None and td.shape[1] != n_documents:
            raise InputError(f"{name}: topic-document matrix covers {td.shape[1]} documents, the corpus has {n_documents}")
        check_probabilities(tw, 1, f"{name}: topic-word rows")
        check_probabilities(td, 0, f"{name}: topic-document columns")
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
        """Write ``output.json`` (topics, labels, settings, timings, extra) and ``matrices.npz``
        (each matrix in its own form: dense, constant plus sparse, or sparse; see :func:`matrix_arrays`)."""
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
        arrays = {**matrix_arrays("topic_word_matrix", self.topic_word_matrix),
                  **matrix_arrays("topic_document_matrix", self.topic_document_matrix)}
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
                topic_word_matrix=read_matrix(arrays, "topic_word_matrix"),
                topic_document_matrix=read_matrix(arrays, "topic_document_matrix"),
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


def topic_document_from_token_topics(token_topics, doc_offsets, n_topics: int) -> sp.csc_matrix:
    """p(topic | document) as each document's share of tokens per topic (tokens at -1 ignored;
    a document with none is spread evenly), sparse: a column stores the topics of its document's
    tokens (all topics for a document with none)."""
    import scipy.sparse as sp  # imported here: see the module's imports

    token_topics = np.asarray(token_topics)
    n_docs = len(doc_offsets) - 1
    token_doc = segment_ids(doc_offsets)
    keep = token_topics >= 0
    counts = sp.csc_matrix(
        (np.ones(int(keep.sum())), (token_topics[keep], token_doc[keep])), shape=(n_topics, n_docs)
    )
    counts.sum_duplicates()
    counts.sort_indices()
    totals = np.asarray(counts.sum(axis=0)).ravel()
    counts.data /= np.repeat(totals, np.diff(counts.indptr))
    empty = np.flatnonzero(totals == 0)
    if len(empty):  # spread evenly: every topic stored in those columns
        per_column = np.where(totals == 0, n_topics, np.diff(counts.indptr))
        indptr = np.zeros(n_docs + 1, dtype=np.int64)
        np.cumsum(per_column, out=indptr[1:])
        indices = np.empty(indptr[-1], dtype=np.int64)
        data = np.empty(indptr[-1])
        filled = np.repeat(totals > 0, per_column)
        indices[filled], data[filled] = counts.indices, counts.data
        indices[~filled], data[~filled] = np.tile(np.arange(n_topics), len(empty)), 1.0 / n_topics
        counts = sp.csc_matrix((data, indices, indptr), shape=(n_topics, n_docs))
    return counts


# -- the matrices in their forms: dense arrays, constant plus sparse, scipy sparse ------------------


def is_scipy_sparse(matrix) -> bool:
    """Whether ``matrix`` is a scipy sparse matrix; a process that never imported scipy.sparse
    holds none, so it is not imported to ask."""
    module = sys.modules.get("scipy.sparse")
    return module is not None and module.issparse(matrix)


def matrix_shape(matrix) -> tuple:
    return tuple(matrix.shape) if isinstance(matrix, ConstantPlusSparse) or is_scipy_sparse(matrix) else np.shape(matrix)


def dense_matrix(matrix) -> np.ndarray:
    """A matrix of any of the output's forms as a dense array (what OCTIS reads)."""
    if isinstance(matrix, ConstantPlusSparse) or is_scipy_sparse(matrix):
        return matrix.toarray()
    return np.asarray(matrix)


def check_probabilities(matrix, axis: int, what: str) -> None:
    """Raise :class:`InputError` unless ``matrix`` is finite, non-negative and sums to 1 along ``axis``."""
    if isinstance(matrix, ConstantPlusSparse):
        if axis != 1:
            raise InputError(f"{what}: a constant-plus-sparse matrix holds distributions in its rows only")
        finite, lowest, sums = matrix.all_finite(), matrix.min(), matrix.row_sums()
    else:
        data = matrix.data if is_scipy_sparse(matrix) else np.asarray(matrix, dtype=np.float64)
        finite, lowest = bool(np.all(np.isfinite(data))), float(data.min(initial=0.0))
        sums = np.asarray(matrix.sum(axis=axis)).ravel()
    if not finite or lowest < 0:  # (min with an initial 0: negative exactly when an entry is)
        raise InputError(f"{what} hold negative, NaN or infinite values")
    worst = int(np.argmax(np.abs(sums - 1.0))) if sums.size else 0
    if sums.size and abs(sums[worst] - 1.0) > PROBABILITY_TOLERANCE:
        raise InputError(f"{what} must sum to 1; entry {worst} sums to {sums[worst]:.6g}")


def matrix_arrays(name: str, matrix) -> dict:
    """The arrays that save ``matrix`` in ``matrices.npz``: ``name`` for a dense array;
    ``name.row_constants``, ``.indptr``, ``.indices``, ``.values``, ``.n_columns`` for a
    :class:`ConstantPlusSparse`; ``name.data``, ``.indices``, ``.indptr``, ``.shape`` (CSC) for a
    scipy sparse matrix."""
    if isinstance(matrix, ConstantPlusSparse):
        return matrix.to_arrays(name)
    if is_scipy_sparse(matrix):
        columns = matrix.tocsc()
        return {f"{name}.data": columns.data, f"{name}.indices": columns.indices,
                f"{name}.indptr": columns.indptr, f"{name}.shape": np.asarray(columns.shape, dtype=np.int64)}
    return {name: np.asarray(matrix)}


def read_matrix(arrays, name: str):
    """A matrix saved by :func:`matrix_arrays`, in the form it was saved in."""
    if name in arrays.files:
        return arrays[name]
    if f"{name}.row_constants" in arrays.files:
        return ConstantPlusSparse.from_arrays(arrays, name)
    if f"{name}.data" in arrays.files:
        import scipy.sparse as sp

        shape = tuple(int(n) for n in arrays[f"{name}.shape"])
        return sp.csc_matrix((arrays[f"{name}.data"], arrays[f"{name}.indices"], arrays[f"{name}.indptr"]), shape=shape)
    raise InputError(f"matrices.npz holds no {name} (its arrays: {', '.join(arrays.files)})")
