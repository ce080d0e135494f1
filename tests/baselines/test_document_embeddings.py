"""Document embeddings from the offline sentence-transformers model, cached per corpus."""

import numpy as np

from topicbench.baselines import embeddings
from synthetic_lda import lee_corpus, small_synthetic, synthetic_words  # noqa: F401 (fixtures used by name)


def test_document_embeddings_are_unit_vectors_cached_per_corpus(small_synthetic, tmp_path, monkeypatch):
    monkeypatch.setattr(embeddings, "_DOCUMENT_EMBEDDINGS", {})
    corpus = small_synthetic.corpus.subset(range(4), name="four")
    first = embeddings.document_embeddings(corpus, cache_dir=tmp_path)
    assert first.shape == (4, 384) and first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, rtol=1e-5)
    assert len(list(tmp_path.glob("document_embeddings_*.npy"))) == 1
    assert embeddings.document_embeddings(corpus, cache_dir=tmp_path) is first  # in-process cache
    refreshed = embeddings.document_embeddings(corpus, cache_dir=tmp_path, refresh=True)
    assert refreshed is not first
    np.testing.assert_array_equal(refreshed, first)
    direct = embeddings.embed_texts([" ".join(words) for words in corpus.texts()])
    np.testing.assert_allclose(first, direct, atol=1e-5)


def test_corpus_texts_join_the_tokens(tiny_corpus):
    assert embeddings.corpus_texts(tiny_corpus) == ["a a b", "b c c", "c"]
