"""A run's artifacts, written where the run was fitted and logged by the flow from there.

A fit scored on its worker writes its output (``output/`` with ``output.json`` and
``matrices.npz``, ``topics.json``, ``topics.csv``; ``topic_scores.csv``, each topic's own
scores; ``topic_documents.json``, each topic's documents and example excerpts) to a temporary
folder and sends the flow its
:class:`ArtifactFolder`: the folder's path when the flow runs on the same host (a local cluster,
or in-process), or else the files' bytes, since the flow cannot read another host's disk. The
flow logs the folder to MLflow and then removes it.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from topicbench.core.output import TopicModelOutput

#: Prefix of the temporary folders a fit's artifacts are written to.
FOLDER_PREFIX = "topicbench-run-"

#: Each topic's own scores: a row per topic (``topic``: its row in ``topics.json``), a column per
#: score key (``npmi@10``); the model-level scores are their means.
TOPIC_SCORES = "topic_scores.csv"

#: What each topic is about in the documents (:func:`topic_documents`): its share, the documents
#: it is the main topic of (by label where the corpus has labels) and, for the most prevalent
#: topics, example documents.
TOPIC_DOCUMENTS = "topic_documents.json"
#: Topics with example documents (the most prevalent), examples per topic, characters per excerpt.
EXAMPLE_TOPICS, EXAMPLES_PER_TOPIC, EXCERPT_CHARS = 20, 3, 200

#: The artifact holding every question an LLM metric asked of a run, one JSON record a line.
LLM_RECORDS = "llm/requests.jsonl"
#: The artifact holding every question a model that asks an LLM (TopicGPT) asked during its fit.
LLM_FIT_RECORDS = "llm/fit_requests.jsonl"
#: The run's log of library warnings raised while it was fitted and scored, one line per distinct
#: warning with its count (:mod:`topicbench.tasks.run.fit_warnings`).
FIT_WARNINGS = "warnings.log"


def write_output_artifacts(output: TopicModelOutput, folder) -> Path:
    """Write what a tracked run keeps of an output to ``folder``: ``output/`` (its matrices in
    their own form, :meth:`TopicModelOutput.save`), ``topics.json`` and ``topics.csv``."""
    import pandas as pd  # imported here for its import cost: only artifact writing needs it

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    output.save(folder / "output")
    labels = output.topic_labels or [None] * output.n_topics
    records = [{"topic": k, "label": labels[k], "words": " ".join(words)} for k, words in enumerate(output.topics)]
    (folder / "topics.json").write_text(json.dumps(records, indent=1, ensure_ascii=False), encoding="utf-8")
    pd.DataFrame(records).to_csv(folder / "topics.csv", index=False)
    return folder


def topic_scores_text(topic_scores: dict) -> str:
    """:data:`TOPIC_SCORES`'s text from score key -> one value per topic (NaN: an empty cell)."""
    import pandas as pd  # imported here for its import cost, as above

    frame = pd.DataFrame({key: list(values) for key, values in topic_scores.items()})
    frame.insert(0, "topic", range(len(frame)))
    return frame.to_csv(index=False, float_format="%.6g")


def topic_documents(topic_document, corpus, *, example_topics: int = EXAMPLE_TOPICS,
                    examples: int = EXAMPLES_PER_TOPIC, excerpt_chars: int = EXCERPT_CHARS) -> dict:
    """What each topic is about in the corpus it was fitted on, for a reader to judge it.

    Parameters
    ----------
    topic_document : ndarray or scipy sparse matrix, shape (K, D)
        p(topic | document) of the fitted documents (``TopicModelOutput.topic_document_matrix``).
    corpus : Corpus
        Those D documents, in that order; its ``labels`` where it has them.
    example_topics, examples, excerpt_chars : int
        Example documents are given for the ``example_topics`` most prevalent topics, the
        ``examples`` documents with the highest p(topic | document) each (ties: the lower document
        first), each as an excerpt of at most ``excerpt_chars`` characters.

    Returns
    -------
    dict
        ``documents`` (D), ``labels`` (the corpus's distinct labels, sorted; None without labels)
        and ``topics``: one record per topic, most prevalent first (ties: the lower topic), with
        ``topic`` (its row in ``topics.json``), ``share`` (the mean of p(topic | document)),
        ``documents`` (how many documents it is the main topic of: their largest p(topic |
        document), ties to the lower topic), ``by_label`` (those documents per label; labelled
        corpora only) and, for the most prevalent, ``examples``: ``{"document": index in the
        corpus, "weight": p(topic | document), "excerpt": text}``. The corpus keeps its
        documents as the model saw them (after preprocessing), so an excerpt is the document's
        words in their order, cut at a word with "…".
    """
    import scipy.sparse as sp  # imported here for its import cost, as above

    n_topics, n_documents = topic_document.shape
    if n_documents != corpus.n_documents:
        raise ValueError(f"the topic-document matrix has {n_documents} documents and the corpus "
                         f"{corpus.n_documents}: they must be the fitted documents")
    rows = sp.csr_matrix(topic_document, dtype=np.float64) if sp.issparse(topic_document) else None
    matrix = rows if rows is not None else np.asarray(topic_document, dtype=np.float64)
    shares = np.asarray(matrix.sum(axis=1), dtype=np.float64).ravel() / max(n_documents, 1)
    main = np.asarray(matrix.argmax(axis=0)).ravel()  # sparse and dense alike: the first largest
    counts = np.bincount(main, minlength=n_topics)
    order = np.lexsort((np.arange(n_topics), -shares))
    labels = None if corpus.labels is None else np.asarray(corpus.labels, dtype=object)
    records = []
    for place, topic in enumerate(order):
        record = {"topic": int(topic), "share": float(shares[topic]), "documents": int(counts[topic])}
        if labels is not None and counts[topic]:
            found, numbers = np.unique(labels[main == topic].astype(str), return_counts=True)
            record["by_label"] = {str(label): int(number) for label, number in zip(found, numbers)}
        if place < example_topics:
            record["examples"] = [
                {"document": int(d), "weight": float(w), "excerpt": excerpt(corpus, d, excerpt_chars)}
                for d, w in _heaviest_documents(matrix, topic, examples)]
        records.append(record)
    distinct = None if labels is None else sorted({str(label) for label in labels})
    return {"documents": int(n_documents), "labels": distinct, "topics": records}


def _heaviest_documents(matrix, topic: int, n: int) -> list:
    """(document, weight) of the ``n`` documents where ``topic`` weighs most (weight > 0),
    heaviest first, ties by the lower document."""
    if isinstance(matrix, np.ndarray):
        documents, weights = np.arange(matrix.shape[1]), matrix[topic]
    else:
        start, stop = matrix.indptr[topic], matrix.indptr[topic + 1]
        documents, weights = matrix.indices[start:stop], matrix.data[start:stop]
    order = np.lexsort((documents, -weights))[:n]
    return [(documents[i], weights[i]) for i in order if weights[i] > 0]


def excerpt(corpus, document: int, chars: int = EXCERPT_CHARS) -> str:
    """Document ``document`` of ``corpus`` as its words in order, at most ``chars`` characters:
    cut after the last whole word that fits, with "…" (a first word longer than that is cut)."""
    words = [corpus.vocabulary[t] for t in corpus.document(document)]
    text = " ".join(words)
    if len(text) <= chars:
        return text
    cut = text[:chars - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"


def topic_documents_text(output: TopicModelOutput, corpus) -> str | None:
    """:data:`TOPIC_DOCUMENTS`'s text: :func:`topic_documents` of the output's fitted documents;
    None where the output's topic-document matrix is not over ``corpus``'s documents (the run's
    topics are then shown without examples)."""
    if output.topic_document_matrix.shape[1] != corpus.n_documents:
        return None
    return json.dumps(topic_documents(output.topic_document_matrix, corpus), indent=1, ensure_ascii=False)


@dataclass(frozen=True)
class ArtifactFolder:
    """Where a run's artifacts are: ``path`` on ``host``, or, from another host, ``files``
    (relative path -> bytes) and no path.

    Attributes
    ----------
    host : str
        The host that wrote them.
    path : str or None
        Their temporary folder on ``host`` (None once packed into ``files``).
    files : dict of str -> bytes
        The files, when they were written on a host other than the flow's.
    """

    host: str
    path: str | None
    files: dict = field(default_factory=dict)

    @classmethod
    def write(cls, output: TopicModelOutput, flow_host: str, extra: dict | None = None) -> "ArtifactFolder":
        """Write ``output``'s artifacts (and ``extra``: relative path -> text) to a new temporary
        folder; pack them into bytes (and remove the folder) when ``flow_host`` is not this host."""
        folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
        try:
            write_output_artifacts(output, folder)
            for name, text in (extra or {}).items():
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                (folder / name).write_text(text, encoding="utf-8")
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        host = socket.gethostname()
        if host == flow_host:
            return cls(host=host, path=str(folder))
        files = {str(f.relative_to(folder)): f.read_bytes() for f in sorted(folder.rglob("*")) if f.is_file()}
        shutil.rmtree(folder, ignore_errors=True)
        return cls(host=host, path=None, files=files)

    @contextlib.contextmanager
    def local_folder(self):
        """A folder on this host holding the artifacts, for the block: the written folder itself,
        or a temporary one the packed files are written to (removed after the block)."""
        if self.path is not None:
            if self.host != socket.gethostname() or not Path(self.path).is_dir():
                raise FileNotFoundError(
                    f"the run's artifacts folder {self.path} of host {self.host} is not on this host "
                    f"({socket.gethostname()}): they are sent as files only to a flow on another host"
                )
            yield Path(self.path)
            return
        with tempfile.TemporaryDirectory(prefix=FOLDER_PREFIX) as folder:
            for name, data in self.files.items():
                target = Path(folder) / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            yield Path(folder)

    def remove(self) -> None:
        """Delete the written folder (when it is on this host); nothing else to free."""
        if self.path is not None and self.host == socket.gethostname():
            shutil.rmtree(self.path, ignore_errors=True)
