"""The vectorised synthetic LDA corpus generator and the OCTIS folder writer."""

from __future__ import annotations

import numpy as np
import pytest

from topicbench.core.io import load_corpus, write_octis_folder
from topicbench.core.preprocess import PreprocessConfig
from topicbench.core.synthetic import synthetic_lda_corpus
from topicbench.core.validation import InputError


@pytest.mark.parametrize("n_documents, n_words, n_topics", [(2_000, 5_000, 50), (300, 97, 7), (50, 40, 40)])
def test_the_corpus_has_the_requested_size_and_every_word(n_documents, n_words, n_topics):
    corpus = synthetic_lda_corpus(n_documents, n_words, n_topics=n_topics, seed=3)
    assert corpus.n_documents == n_documents
    assert corpus.n_words == n_words
    assert np.all(np.bincount(corpus.token_ids, minlength=n_words) >= 1)  # every word occurs
    assert corpus.token_ids.dtype == np.int32 and corpus.token_ids.max() < n_words
    assert np.all(np.diff(corpus.doc_offsets) >= 1)
    assert corpus.doc_offsets[-1] == corpus.n_tokens


def test_the_same_seed_gives_the_same_corpus_and_another_seed_another():
    first = synthetic_lda_corpus(3_000, 2_000, seed=11)
    again = synthetic_lda_corpus(3_000, 2_000, seed=11)
    other = synthetic_lda_corpus(3_000, 2_000, seed=12)
    np.testing.assert_array_equal(first.token_ids, again.token_ids)
    np.testing.assert_array_equal(first.doc_offsets, again.doc_offsets)
    assert first.fingerprint() == again.fingerprint() != other.fingerprint()


def test_documents_mostly_use_their_own_few_topics():
    """Small alpha: a document's words come from few topic blocks; Zipf: each block's first word
    is its most frequent."""
    n_words, n_topics = 1_000, 10
    corpus = synthetic_lda_corpus(2_000, n_words, n_topics=n_topics, doc_length=40, alpha=0.05, seed=0)
    block = n_words // n_topics
    topics_per_doc = [len(np.unique(corpus.document(d) // block)) for d in range(corpus.n_documents)]
    assert np.median(topics_per_doc) <= 2
    counts = np.bincount(corpus.token_ids, minlength=n_words).reshape(n_topics, block)
    assert np.all(counts.argmax(axis=1) == 0)
    assert corpus.preprocessing["alpha"] == 0.05 and corpus.preprocessing["seed"] == 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_documents=0, n_words=10), "n_documents must be a positive integer"),
        (dict(n_documents=10, n_words=2.5), "n_words must be a positive integer"),
        (dict(n_documents=10, n_words=10, n_topics=11), r"n_topics \(11\) must not exceed n_words"),
        (dict(n_documents=10, n_words=10, n_topics=5, alpha=0), "doc_length and alpha must be > 0"),
        (dict(n_documents=3, n_words=1_000), "cannot hold all 1000 words"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        synthetic_lda_corpus(**kwargs)


def test_an_octis_folder_reads_back_as_the_same_corpus(tmp_path):
    corpus = synthetic_lda_corpus(500, 200, n_topics=5, seed=2)
    folder = write_octis_folder(corpus, tmp_path / "synthetic")
    read = load_corpus(folder, PreprocessConfig(preprocessed=True))
    assert read.vocabulary == corpus.vocabulary
    np.testing.assert_array_equal(read.token_ids, corpus.token_ids)
    np.testing.assert_array_equal(read.doc_offsets, corpus.doc_offsets)
    assert read.partitions == ("train",) * 500
    lines = (folder / "corpus.tsv").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 500 and lines[0].endswith("\ttrain")


def test_partitions_and_labels_are_written(tmp_path):
    from topicbench.core.preprocess import corpus_from_token_lists

    corpus = corpus_from_token_lists(
        [["a", "b"], ["b"], ["c", "a"]], vocabulary=("a", "b", "c"),
        partitions=["train", "val", "test"], labels=["x", "y", "x"],
    )
    folder = write_octis_folder(corpus, tmp_path / "small")
    assert (folder / "corpus.tsv").read_text(encoding="utf-8") == "a b\ttrain\tx\nb\tval\ty\nc a\ttest\tx\n"
    read = load_corpus(folder, PreprocessConfig(preprocessed=True))
    assert read.partitions == corpus.partitions and read.labels == corpus.labels
