"""Where a corpus's vocabulary comes from (``vocabulary_from``): the training documents by default,
test-only words counted and dropped; corpora it does not concern keep their fingerprints."""

from __future__ import annotations

import pytest

from topicbench.core.io import read_octis_folder
from topicbench.core.preprocess import PreprocessConfig, corpus_from_token_lists, preprocess
from topicbench.core.validation import InputError

PRE = PreprocessConfig(preprocessed=True)
DOCS = [["gamma", "alpha", "beta"], ["beta", "beta", "gamma"], ["alpha", "delta"], ["delta", "epsilon"]]


def write_octis(folder, lines):
    folder.mkdir()
    (folder / "corpus.tsv").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return folder


def test_vocabulary_from_training_documents_drops_and_counts_test_only_words(tmp_path):
    folder = write_octis(tmp_path / "man", ["epoll waits events\ttrain", "events waits\ttrain",
                                           "epoll specifics specifics events\ttest", "zebi\tval"])
    corpus = read_octis_folder(folder, PRE)
    # counted from the two training documents only: events 2, waits 2, epoll 1
    assert corpus.vocabulary == ("events", "waits", "epoll")
    assert "specifics" not in corpus.word_index and "zebi" not in corpus.word_index
    assert (corpus.vocabulary_from, corpus.test_only_words, corpus.test_only_tokens) == ("train", 1, 2)
    test = corpus.split("test")
    assert [[corpus.vocabulary[t] for t in test.document(0)]] == [["epoll", "events"]]
    assert (test.test_only_words, test.test_only_tokens) == (1, 2)  # the held-out split says what it lost
    assert corpus.preprocessing["vocabulary_from"] == "train"
    assert corpus.dropped_documents == (3,)  # the val document had only a word outside the vocabulary


def test_min_df_counts_training_documents():
    partitions = ["train", "train", "test", "test"]
    docs = [["a", "b"], ["a", "c"], ["b", "d"], ["b", "d"]]
    corpus = corpus_from_token_lists(docs, partitions=partitions, config=PreprocessConfig(preprocessed=True, min_df=2))
    assert corpus.vocabulary == ("a",)  # b is in 3 documents, but in 1 training document
    everything = corpus_from_token_lists(
        docs, partitions=partitions, config=PreprocessConfig(preprocessed=True, min_df=2, vocabulary_from="all"))
    assert everything.vocabulary == ("b", "a", "d")
    assert (everything.vocabulary_from, everything.test_only_words) == ("all", 0)
    assert "vocabulary_from" not in everything.preprocessing


# Fingerprints made by the code before vocabulary_from existed (same documents, same calls):
# a corpus that the setting does not concern must keep its fingerprint (committed bundles,
# the paper's experiments and resumed runs match on it).
FINGERPRINTS_BEFORE = {
    "train and val": "841b6bc5beb54542be9df032b8b92ddeb4cf38d9a3a27b1ee69e533c96f80c4d",
    "no partitions": "21fd1ee37eca5b372077fea84919a6cfcc5354e8de0a888c78697e926bf8af98",
    "raw text": "ff9011998ade13811bda8f90de232ebf118a922210012eed032663aee4b4b3f3",
    "given vocabulary": "e6dd32ea0dcea24ac38c247c9f9e77a7aa5ee3635dcde243286aff5dbe69eb72",
}


def test_corpora_without_a_test_partition_or_with_a_given_vocabulary_keep_their_fingerprints():
    made = {
        "train and val": corpus_from_token_lists(DOCS, partitions=["train", "train", "val", "val"]),
        "no partitions": corpus_from_token_lists(DOCS),
        "raw text": preprocess(["The cats and the dogs", "cats, cats and mice!", "dogs bark"],
                               partitions=["train", "val", "train"], name="raw"),
        "given vocabulary": corpus_from_token_lists(DOCS, vocabulary=["alpha", "beta", "gamma", "delta", "epsilon"],
                                                    partitions=["train", "train", "test", "test"]),
    }
    assert {name: corpus.fingerprint() for name, corpus in made.items()} == FINGERPRINTS_BEFORE
    assert made["train and val"].vocabulary_from == "all" and made["given vocabulary"].vocabulary_from == "given"
    assert made["train and val"].test_only_tokens == 0


def test_a_test_split_changes_the_fingerprint_only_where_the_vocabulary_changed():
    partitions = ["train", "train", "test", "test"]
    from_train = corpus_from_token_lists(DOCS, partitions=partitions)
    from_all = corpus_from_token_lists(DOCS, partitions=partitions,
                                       config=PreprocessConfig(preprocessed=True, vocabulary_from="all"))
    assert from_train.fingerprint() != from_all.fingerprint()
    assert from_train.n_words == 3 and from_all.n_words == 5
    assert (from_train.test_only_words, from_train.test_only_tokens) == (2, 3)  # delta twice, epsilon once


def test_vocabulary_from_refuses_other_values():
    with pytest.raises(InputError, match="vocabulary_from"):
        PreprocessConfig(vocabulary_from="test")
    with pytest.raises(InputError, match="vocabulary_from"):
        PreprocessConfig.from_dict({"vocabulary_from": True})
