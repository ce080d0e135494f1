"""Corpus readers, preprocessing and the Corpus container."""

from __future__ import annotations

import logging
import shutil

import numpy as np
import pytest

from topicbench.core.corpus import Corpus
from topicbench.core.io import load_corpus, read_octis_folder, read_text_file
from topicbench.core.preprocess import PreprocessConfig, corpus_from_token_lists, preprocess, tokenize
from topicbench.core.validation import InputError

PRE = PreprocessConfig(preprocessed=True)


def write_octis(folder, lines, vocabulary=None, *, newline="\n"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.tsv").write_bytes((newline.join(lines) + newline).encode("utf-8"))
    if vocabulary is not None:
        (folder / "vocabulary.txt").write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    return folder


def words_of(corpus):
    return corpus.texts()


# ------------------------------------------------------------------------------------------------
# OCTIS folders
# ------------------------------------------------------------------------------------------------


def test_octis_folder_with_labels_and_vocabulary(tmp_path):
    folder = write_octis(
        tmp_path / "mini",
        ["gamma alpha beta\ttrain\tsport", "beta beta\tval\tnews", "alpha delta\ttest\tsport"],
        vocabulary=["delta", "gamma", "beta", "alpha", "unused"],
    )
    corpus = load_corpus(folder, PRE)
    assert isinstance(corpus, Corpus)
    # vocabulary.txt fixes the words and their order, including words no document uses
    assert corpus.vocabulary == ("delta", "gamma", "beta", "alpha", "unused")
    assert words_of(corpus) == [["gamma", "alpha", "beta"], ["beta", "beta"], ["alpha", "delta"]]
    assert corpus.document(0).tolist() == [1, 3, 2]
    assert corpus.partitions == ("train", "val", "test")
    assert corpus.labels == ("sport", "news", "sport")
    assert corpus.name == "mini"
    assert corpus.source == str(folder.resolve())
    assert (corpus.n_documents, corpus.n_words, corpus.n_tokens) == (3, 5, 7)
    assert corpus.doc_offsets.tolist() == [0, 3, 5, 7]
    assert corpus.doc_term.toarray().tolist() == [[0, 1, 1, 1, 0], [0, 0, 2, 0, 0], [1, 0, 0, 1, 0]]
    assert corpus.dropped_documents == ()
    # a given vocabulary is kept as published: vocabulary_from played no part and is not recorded
    assert corpus.preprocessing == {k: v for k, v in PRE.to_dict().items() if k != "vocabulary_from"}
    assert corpus.vocabulary_from == "given" and corpus.test_only_words == 0
    assert load_corpus(folder, PRE, name="other").name == "other"


def test_octis_folder_without_labels_or_vocabulary(tmp_path):
    # corpus frequency: beta 3, alpha 2, gamma 2, delta 1 -> beta, then alpha/gamma alphabetical, delta
    folder = write_octis(tmp_path / "plain", ["gamma alpha beta\ttrain", "beta beta gamma\ttrain", "alpha delta\ttest"])
    corpus = read_octis_folder(folder, PreprocessConfig(preprocessed=True, vocabulary_from="all"))
    assert corpus.vocabulary == ("beta", "alpha", "gamma", "delta")
    assert (corpus.vocabulary_from, corpus.test_only_words, corpus.test_only_tokens) == ("all", 0, 0)
    assert corpus.labels is None
    assert corpus.partitions == ("train", "train", "test")
    assert words_of(corpus) == [["gamma", "alpha", "beta"], ["beta", "beta", "gamma"], ["alpha", "delta"]]


def test_octis_folder_with_windows_line_endings(tmp_path):
    folder = write_octis(tmp_path / "crlf", ["one two\ttrain\tx", "two three\ttest\ty"], newline="\r\n")
    corpus = load_corpus(folder, PRE)
    assert corpus.partitions == ("train", "test")
    assert corpus.labels == ("x", "y")


def test_octis_folder_default_preprocessing(tmp_path):
    folder = write_octis(tmp_path / "raw", ["The Cats and the DOGS\ttrain", "cats, cats!\ttrain"])
    corpus = load_corpus(folder)  # lower case, English stop words removed, words of 2+ letters
    assert words_of(corpus) == [["cats", "dogs"], ["cats", "cats"]]
    assert corpus.vocabulary == ("cats", "dogs")


def test_octis_malformed_line_names_its_number(tmp_path):
    folder = write_octis(tmp_path / "bad", ["alpha beta\ttrain", "no partition here", "x\ttrain"])
    with pytest.raises(InputError, match=r"corpus\.tsv line 2: expected 'text<TAB>partition\[<TAB>label\]', got 1 field$"):
        load_corpus(folder, PRE)
    folder = write_octis(tmp_path / "bad4", ["alpha\ttrain", "b\ttrain", "c\ttrain\tl\textra"])
    with pytest.raises(InputError, match="line 3: expected .* got 4 fields"):
        load_corpus(folder, PRE)


def test_octis_bad_partition_name(tmp_path):
    folder = write_octis(tmp_path / "part", ["alpha\ttrain", "beta\ttraining"])
    with pytest.raises(InputError, match="line 2: partition must be one of train, val, test, got 'training'"):
        load_corpus(folder, PRE)


def test_octis_labels_on_some_lines_only(tmp_path):
    folder = write_octis(tmp_path / "mixed", ["alpha\ttrain\tx", "beta\ttrain", "gamma\ttest\ty"])
    with pytest.raises(InputError, match="line 2: has no label while other lines do"):
        load_corpus(folder, PRE)


def test_octis_folder_errors(tmp_path):
    (tmp_path / "empty_folder").mkdir()
    with pytest.raises(InputError, match="is not an OCTIS corpus folder: corpus.tsv is missing"):
        load_corpus(tmp_path / "empty_folder")
    folder = tmp_path / "empty_file"
    folder.mkdir()
    (folder / "corpus.tsv").write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="corpus.tsv is empty"):
        load_corpus(folder, PRE)
    folder = write_octis(tmp_path / "empty_vocab", ["alpha\ttrain"], vocabulary=[])
    with pytest.raises(InputError, match="vocabulary.txt is empty"):
        load_corpus(folder, PRE)
    folder = write_octis(tmp_path / "dupe_vocab", ["alpha\ttrain"], vocabulary=["alpha", "beta", "alpha"])
    with pytest.raises(InputError, match="lists 1 words twice"):
        load_corpus(folder, PRE)
    folder = tmp_path / "latin1"
    folder.mkdir()
    (folder / "corpus.tsv").write_bytes("caf\xe9\ttrain\n".encode("latin-1"))
    with pytest.raises(InputError, match="is not UTF-8 text"):
        load_corpus(folder, PRE)


def test_unknown_words_against_a_given_vocabulary(tmp_path, caplog):
    folder = write_octis(
        tmp_path / "unknown", ["alpha zeta beta\ttrain", "zeta zeta\ttrain", "beta eta\ttest"],
        vocabulary=["alpha", "beta"],
    )
    with pytest.raises(InputError, match=r"4 tokens \(2 distinct words\) are not in the given vocabulary, e\.g\. 'zeta', 'eta'; pass unknown_words='drop'"):
        load_corpus(folder, PRE)
    drop = PreprocessConfig(preprocessed=True, unknown_words="drop")
    with caplog.at_level(logging.WARNING, logger="topicbench.core.preprocess"):
        corpus = load_corpus(folder, drop)
    assert words_of(corpus) == [["alpha", "beta"], ["beta"]]
    # the second document had only unknown words: dropped, and counted
    assert corpus.dropped_documents == (1,)
    assert corpus.partitions == ("train", "test")
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("not in the given vocabulary" in m and "dropped them" in m for m in messages)
    assert any("dropped 1 of 3 documents" in m for m in messages)


# ------------------------------------------------------------------------------------------------
# Text files, the built-in corpus
# ------------------------------------------------------------------------------------------------


def test_text_file_one_document_a_line(tmp_path, caplog):
    path = tmp_path / "docs.txt"
    path.write_text("Apples and oranges\n\nOranges, apples; PEARS!\n   \nthe of and\nplums\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="topicbench.core.preprocess"):
        corpus = load_corpus(path)
    assert words_of(corpus) == [["apples", "oranges"], ["oranges", "apples", "pears"], ["plums"]]
    assert corpus.name == "docs"
    assert corpus.source == str(path.resolve())
    # input lines 1, 3 and 4 (0-based) have no word left: dropped, recorded, counted in a warning
    assert corpus.dropped_documents == (1, 3, 4)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "dropped 3 of 6 documents" in warnings[0]
    assert corpus.summary()["dropped_documents"] == 3
    assert read_text_file(path).fingerprint() == corpus.fingerprint()


def test_a_tokenised_corpus_keeps_each_kept_documents_text_and_a_preprocessed_one_its_tokens(tmp_path):
    path = tmp_path / "docs.txt"
    path.write_text("Apples and oranges.\n\nOranges, apples; PEARS!\nplums\n", encoding="utf-8")
    corpus = load_corpus(path)
    # the text as read, beside the tokens, for the documents kept (line 1 was dropped)
    assert corpus.raw_texts == ("Apples and oranges.", "Oranges, apples; PEARS!", "plums")
    assert corpus.document_text(1) == "Oranges, apples; PEARS!"
    assert corpus.subset([2, 0]).raw_texts == ("plums", "Apples and oranges.")
    given_as_tokens = load_corpus(path, PRE)
    assert given_as_tokens.raw_texts is None  # nothing kept twice: the text is the tokens joined
    assert given_as_tokens.document_text(1) == "Oranges, apples; PEARS!"
    assert given_as_tokens.fingerprint() == load_corpus(path, PRE).fingerprint()
    with pytest.raises(InputError, match="2 raw texts for 3 documents"):
        Corpus(vocabulary=corpus.vocabulary, token_ids=corpus.token_ids, doc_offsets=corpus.doc_offsets,
               raw_texts=("a", "b"))


def test_preprocessed_mode_splits_on_single_spaces_only(tmp_path):
    path = tmp_path / "pre.txt"
    path.write_text("The  Running\tdogs, 42 and x\nB\n", encoding="utf-8")
    corpus = load_corpus(path, PRE)
    # nothing lower-cased, stemmed or removed; only single spaces separate tokens (a tab does not)
    assert words_of(corpus) == [["The", "Running\tdogs,", "42", "and", "x"], ["B"]]
    assert tokenize("a  b ", PRE) == ["a", "b"]
    # the other settings are ignored in this mode
    assert tokenize("The cats", PreprocessConfig(preprocessed=True, stem=True, stopwords="english")) == ["The", "cats"]


def test_builtin_corpus():
    corpus = load_corpus()
    assert corpus.name == "lee"
    assert corpus.n_documents == 300
    assert corpus.n_tokens > 10_000
    assert load_corpus("lee").fingerprint() == corpus.fingerprint()


def test_missing_path_and_empty_file(tmp_path):
    with pytest.raises(InputError, match="corpus not found: .*nowhere"):
        load_corpus(tmp_path / "nowhere")
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="empty.txt is empty: it has no documents"):
        load_corpus(empty)


def test_all_documents_empty_raises(tmp_path):
    path = tmp_path / "stop.txt"
    path.write_text("the and of\n\n42 17\n", encoding="utf-8")
    with pytest.raises(InputError, match="no document has 1 or more tokens after preprocessing"):
        load_corpus(path)
    with pytest.raises(InputError, match="is empty: it has no documents"):
        preprocess([])


# ------------------------------------------------------------------------------------------------
# PreprocessConfig
# ------------------------------------------------------------------------------------------------


def test_lowercase_and_token_pattern():
    # default pattern: runs of 2+ letters between word boundaries ("a" is too short; "7up" and
    # "x_y" hold a digit or underscore, so no boundary isolates their letters)
    assert tokenize("Apple apple APPLE a 7up x_y", PreprocessConfig()) == ["apple", "apple", "apple"]
    assert tokenize("Apple apple", PreprocessConfig(lowercase=False)) == ["Apple", "apple"]
    assert tokenize("ab-cd x7y", PreprocessConfig(token_pattern=r"\S+", stopwords="none")) == ["ab-cd", "x7y"]


def test_stopwords():
    text = "the cat and the hat"
    assert tokenize(text, PreprocessConfig()) == ["cat", "hat"]
    assert tokenize(text, PreprocessConfig(stopwords="none")) == ["the", "cat", "and", "the", "hat"]
    assert tokenize(text, PreprocessConfig(stopwords=("cat",))) == ["the", "and", "the", "hat"]
    listed = PreprocessConfig(stopwords=["hat"])
    assert listed.stopwords == ("hat",)
    assert tokenize(text, listed) == ["the", "cat", "and", "the"]
    with pytest.raises(InputError, match="stopwords must be one of 'english', 'none' or a list of strings, got 'french'"):
        PreprocessConfig(stopwords="french")


def test_snowball_stemming():
    config = PreprocessConfig(stem=True)
    assert tokenize("running runs dogs generously", config) == ["run", "run", "dog", "generous"]
    assert tokenize("running", PreprocessConfig()) == ["running"]
    corpus = preprocess(["running dogs", "the dog runs"], config)
    assert corpus.vocabulary == ("dog", "run")
    assert corpus.preprocessing["stem"] is True


def test_document_frequency_limits():
    texts = ["apple banana cherry", "apple banana", "apple date", "apple banana"]
    # document frequencies: apple 4, banana 3, cherry 1, date 1
    assert preprocess(texts, PreprocessConfig(min_df=2)).vocabulary == ("apple", "banana")
    assert preprocess(texts, PreprocessConfig(max_df=3)).vocabulary == ("banana", "cherry", "date")
    assert preprocess(texts, PreprocessConfig(max_df=0.75)).vocabulary == ("banana", "cherry", "date")
    assert preprocess(texts, PreprocessConfig(min_df=0.5, max_df=0.8)).vocabulary == ("banana",)
    # pruned words leave their documents; a document left empty is dropped
    pruned = preprocess(texts, PreprocessConfig(min_df=2, max_df=3))
    assert [doc for doc in words_of(pruned)] == [["banana"], ["banana"], ["banana"]]
    assert pruned.dropped_documents == (2,)


def test_min_doc_length(caplog):
    texts = ["one two three", "four five", "six seven eight nine", "ten"]
    with caplog.at_level(logging.WARNING, logger="topicbench.core.preprocess"):
        corpus = preprocess(texts, PreprocessConfig(preprocessed=True, min_doc_length=3))
    assert corpus.n_documents == 2
    assert corpus.dropped_documents == (1, 3)
    assert any("dropped 2 of 4 documents with fewer than 3 tokens" in r.getMessage() for r in caplog.records)
    with pytest.raises(InputError, match="min_doc_length must be an integer >= 1, got 0"):
        PreprocessConfig(min_doc_length=0)


def test_config_checks_and_round_trip():
    with pytest.raises(InputError, match="unknown_words must be one of"):
        PreprocessConfig(unknown_words="ignore")
    with pytest.raises(InputError, match="is not a regular expression"):
        PreprocessConfig(token_pattern="([a-z")
    with pytest.raises(InputError, match="preprocessing: unknown setting 'lemmatize'"):
        PreprocessConfig.from_dict({"lemmatize": True})
    config = PreprocessConfig(stem=True, min_df=2, stopwords=("x", "y"))
    assert PreprocessConfig.from_dict(config.to_dict()) == config
    assert PreprocessConfig.from_dict(None) == PreprocessConfig()


# ------------------------------------------------------------------------------------------------
# Fingerprints
# ------------------------------------------------------------------------------------------------


def test_fingerprint_stable_and_sensitive(tmp_path):
    lines = ["Cats chase mice\ttrain", "Dogs chase cats\ttest", "Mice run\ttrain"]
    folder = write_octis(tmp_path / "fp", lines)
    first = load_corpus(folder).fingerprint()
    assert load_corpus(folder).fingerprint() == first
    assert len(first) == 64 and int(first, 16) >= 0
    # the same content elsewhere: same fingerprint (the path is not part of it)
    shutil.copytree(folder, tmp_path / "copy")
    assert load_corpus(tmp_path / "copy").fingerprint() == first
    # preprocessing changes it, even when the tokens come out the same
    assert load_corpus(folder, PreprocessConfig(stem=True)).fingerprint() != first
    assert load_corpus(folder, PreprocessConfig(min_doc_length=1, max_df=0.99)).fingerprint() != first
    # so do the tokens, the partitions and the vocabulary order
    write_octis(tmp_path / "fp2", [lines[0], "Dogs chase dogs\ttest", lines[2]])
    assert load_corpus(tmp_path / "fp2").fingerprint() != first
    write_octis(tmp_path / "fp3", [lines[0], "Dogs chase cats\ttrain", lines[2]])
    assert load_corpus(tmp_path / "fp3").fingerprint() != first
    a = corpus_from_token_lists([["x", "y"]], vocabulary=["x", "y"])
    b = corpus_from_token_lists([["x", "y"]], vocabulary=["y", "x"])
    assert a.fingerprint() != b.fingerprint()


# ------------------------------------------------------------------------------------------------
# Corpus.subset / split
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def labelled():
    return corpus_from_token_lists(
        [["a", "b"], ["b", "c", "c"], ["d"], ["a", "a", "e"]],
        partitions=["train", "test", "train", "val"],
        labels=["x", "y", "x", "z"],
        name="lab",
        config=PreprocessConfig(preprocessed=True, vocabulary_from="all"),  # every word, whatever its partition
    )


def test_subset(labelled):
    sub = labelled.subset([3, 0])
    assert sub.vocabulary == labelled.vocabulary
    assert words_of(sub) == [["a", "a", "e"], ["a", "b"]]
    assert sub.partitions == ("val", "train")
    assert sub.labels == ("z", "x")
    assert sub.name == "lab"
    assert labelled.subset([1], name="one").name == "one"
    np.testing.assert_array_equal(sub.doc_term.toarray(), labelled.doc_term.toarray()[[3, 0]])


def test_split(labelled):
    train = labelled.split("train")
    assert words_of(train) == [["a", "b"], ["d"]]
    assert train.partitions == ("train", "train")
    assert train.labels == ("x", "x")
    assert train.name == "lab[train]"
    assert train.vocabulary == labelled.vocabulary  # words of other partitions stay in it
    assert labelled.split("test").n_documents == 1
    no_partitions = corpus_from_token_lists([["a"]], name="np")
    with pytest.raises(ValueError, match="corpus 'np' has no partitions"):
        no_partitions.split("train")


def test_split_rejects_an_unknown_partition_name(labelled):
    """A misspelt partition must not silently give a corpus of 0 documents (which no reader would
    ever build): OCTIS partitions are train, val and test."""
    with pytest.raises(ValueError, match="partition"):
        labelled.split("training")


def test_corpus_views(labelled):
    assert labelled.word_index == {w: i for i, w in enumerate(labelled.vocabulary)}
    assert labelled.doc_term.dtype == np.int32
    assert labelled.doc_term.sum() == labelled.n_tokens == 9
    summary = labelled.summary()
    assert summary["documents"] == 4 and summary["vocabulary"] == 5 and summary["tokens"] == 9
    assert summary["fingerprint"] == labelled.fingerprint()
    with pytest.raises(InputError, match="partitions has 1 entries for 2 documents"):
        corpus_from_token_lists([["a"], ["b"]], partitions=["train"])


def test_segment_ids_and_token_documents_match_a_loop():
    from topicbench.core.corpus import segment_ids

    offsets = [0, 0, 3, 4, 4, 7]
    expected = [d for d in range(len(offsets) - 1) for _ in range(offsets[d + 1] - offsets[d])]
    assert segment_ids(offsets).tolist() == expected
    assert segment_ids([0]).tolist() == []
    corpus = corpus_from_token_lists([["a", "b"], ["c"], ["a", "a", "c"]])
    documents = corpus.token_documents
    assert documents.dtype == "int64" and documents.tolist() == [0, 0, 1, 2, 2, 2]
    for d in range(corpus.n_documents):
        assert (documents == d).sum() == len(corpus.document(d))


# ------------------------------------------------------------------------------------------------
# Files that are not what a reader expects (issue 29)
# ------------------------------------------------------------------------------------------------


def test_a_byte_order_mark_is_not_part_of_the_first_word(tmp_path):
    text_file = tmp_path / "bom.txt"
    text_file.write_bytes("\ufeffbudget tax\nwar troops\n".encode("utf-8"))
    folder = write_octis(tmp_path / "bom", ["\ufeffbudget tax\ttrain", "war troops\ttrain"])
    for corpus in (read_text_file(text_file, PRE), read_octis_folder(folder, PRE)):
        assert "budget" in corpus.vocabulary
        assert not any("\ufeff" in word for word in corpus.vocabulary)


def test_nul_bytes_are_refused_naming_the_line(tmp_path):
    text_file = tmp_path / "nul.txt"
    text_file.write_bytes(b"budget tax\nwar\x00troops\n")
    with pytest.raises(InputError, match=r"nul.txt line 2: holds a NUL byte \(byte 14\)"):
        read_text_file(text_file, PRE)
    folder = write_octis(tmp_path / "nul_vocab", ["budget\ttrain"], vocabulary=["budget"])
    (folder / "vocabulary.txt").write_bytes(b"budget\n\x00\n")
    with pytest.raises(InputError, match="vocabulary.txt line 2: holds a NUL byte"):
        read_octis_folder(folder, PRE)


@pytest.mark.timeout(20)
def test_pipes_and_devices_are_refused_before_they_are_opened(tmp_path):
    import os

    os.mkfifo(tmp_path / "pipe")  # nobody writes it: opening it to read would block forever
    with pytest.raises(InputError, match=r"pipe is not a regular file \(it is a pipe\)"):
        load_corpus(tmp_path / "pipe", PRE)
    with pytest.raises(InputError, match=r"/dev/zero is not a regular file \(it is a device\)"):
        load_corpus("/dev/zero", PRE)
    folder = tmp_path / "octis"
    folder.mkdir()
    os.mkfifo(folder / "corpus.tsv")
    with pytest.raises(InputError, match=r"corpus.tsv is not a regular file \(it is a pipe\)"):
        load_corpus(folder, PRE)


def test_a_symbolic_link_loop_is_a_clear_error(tmp_path):
    (tmp_path / "loop.txt").symlink_to(tmp_path / "loop.txt")
    with pytest.raises(InputError, match="Too many levels of symbolic links"):
        load_corpus(tmp_path / "loop.txt", PRE)


@pytest.mark.parametrize("text", ["a/b", "../../escaped", "/etc/passwd", "..", ".", "", "-rf", "x\ny", "a\\b", "C:\\x", "z" * 300])
def test_user_text_becomes_one_file_name_inside_its_folder(tmp_path, text):
    from topicbench.core.io import file_name_for

    name = file_name_for(text)
    assert name and "/" not in name and "\\" not in name and not name.startswith((".", "-")) and len(name) <= 89
    target = (tmp_path / name).resolve()
    assert target.parent == tmp_path.resolve()


def test_file_names_keep_plain_names_and_keep_different_texts_apart():
    from topicbench.core.io import file_name_for

    assert file_name_for("congress") == "congress" and file_name_for("20ng_politics") == "20ng_politics"
    assert file_name_for("zeitung_ä") == "zeitung_ä"
    assert len({file_name_for(text) for text in ("a/b", "a_b", "a b", "a:b")}) == 4
