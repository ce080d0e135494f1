"""Preprocessing: raw texts -> tokens -> :class:`Corpus`, with every setting recorded."""

from __future__ import annotations

import itertools
import logging
import re
from collections import Counter
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

from .corpus import Corpus
from .schema import boolean, check_schema, integer, share
from .validation import InputError

logger = logging.getLogger(__name__)

UNKNOWN_WORD_POLICIES = ("error", "drop")
#: Which documents a vocabulary built here is counted from (a given vocabulary.txt stays as it is).
VOCABULARY_SOURCES = ("train", "all")

#: Every preprocessing setting's type and range (JSON Schema): checked by
#: :class:`PreprocessConfig`, and part of the benchmark config's published schema.
PREPROCESSING_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "preprocessed": {**boolean(), "description": "take the texts as they are: tokens split on single spaces"},
        "lowercase": boolean(),
        "token_pattern": {"type": "string", "minLength": 1, "description": "regular expression whose matches are the tokens"},
        "stopwords": {"anyOf": [{"enum": ["english", "none"]}, {"type": "array", "items": {"type": "string"}}],
                      "description": "'english' (gensim's list), 'none', or the words themselves"},
        "stem": {**boolean(), "description": "Snowball (English) stemming"},
        "min_df": {"anyOf": [integer(1), share()], "description": "keep words in at least this many documents (a number in (0, 1]: a share)"},
        "max_df": {"anyOf": [integer(1), share()], "description": "keep words in at most this many documents (a number in (0, 1]: a share)"},
        "min_doc_length": {**integer(1), "description": "drop documents with fewer tokens than this"},
        "unknown_words": {"enum": list(UNKNOWN_WORD_POLICIES), "description": "tokens missing from a given vocabulary.txt"},
        "vocabulary_from": {"enum": list(VOCABULARY_SOURCES),
                            "description": "build the vocabulary from the 'train' documents (default; test-only words are "
                                           "dropped and counted) or from 'all' partitions; no effect without a test "
                                           "partition or with a given vocabulary.txt"},
    },
}


@dataclass(frozen=True)
class PreprocessConfig:
    """How raw text becomes tokens. Recorded with every result (``to_dict``).

    Parameters
    ----------
    preprocessed : bool
        Take the texts as they are: tokens split on single spaces, nothing else changed
        (the ``../shared/data`` corpora). All other text settings are then ignored.
    lowercase : bool
    token_pattern : str
        Regular expression whose matches are the tokens (default: words of 2+ letters).
    stopwords : str or tuple of str
        ``"english"`` (gensim's list), ``"none"``, or the words themselves.
    stem : bool
        Snowball (English) stemming, as in the E-LDA paper's preprocessing.
    min_df, max_df : int or float
        Keep words in at least ``min_df`` and at most ``max_df`` documents (a float is a share
        of documents). Ignored when a vocabulary is given.
    min_doc_length : int
        Drop documents with fewer tokens than this after preprocessing (counted, with a warning).
    unknown_words : {"error", "drop"}
        What to do with tokens missing from a given vocabulary.
    vocabulary_from : {"train", "all"}
        Where a corpus has both a train and a test partition, build its vocabulary (and its
        ``min_df``/``max_df`` shares) from the training documents only (``"train"``): a held-out
        score over words the model could never have seen does not test the model. The test
        documents' words outside it are dropped and counted (:attr:`~topicbench.core.corpus.Corpus.test_only_words`,
        :attr:`~topicbench.core.corpus.Corpus.test_only_tokens`). ``"all"`` counts every partition. No effect on a corpus
        without a test partition or with a given vocabulary (both keep their vocabulary and
        fingerprint): it enters the recorded preprocessing only where it changed the vocabulary.
    """

    preprocessed: bool = False
    lowercase: bool = True
    token_pattern: str = r"(?u)\b[^\W\d_]{2,}\b"
    stopwords: str | tuple = "english"
    stem: bool = False
    min_df: int | float = 1
    max_df: int | float = 1.0
    min_doc_length: int = 1
    unknown_words: str = "error"
    vocabulary_from: str = "train"

    def __post_init__(self):
        # every type strictly (a YAML 'no' is not false, true is not a count), before any use
        check_schema({name: getattr(self, name) for name in self.__dataclass_fields__}, PREPROCESSING_SCHEMA, "preprocessing")
        if isinstance(self.stopwords, list):
            object.__setattr__(self, "stopwords", tuple(self.stopwords))
        try:
            re.compile(self.token_pattern)
        except re.error as error:
            raise InputError(f"token_pattern {self.token_pattern!r} is not a regular expression: {error}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, settings: dict | None) -> "PreprocessConfig":
        settings = dict(settings or {})
        check_schema(settings, PREPROCESSING_SCHEMA, "preprocessing")
        return cls(**settings)


def tokenize(text: str, config: PreprocessConfig) -> list[str]:
    """One document's tokens under ``config``."""
    if config.preprocessed:
        return list(filter(None, text.split(" ")))  # no empty tokens from repeated spaces
    if config.lowercase:
        text = text.lower()
    tokens = _pattern(config.token_pattern).findall(text)
    stopwords = _stopwords(config.stopwords)
    if stopwords:
        tokens = [t for t in tokens if t not in stopwords]
    if config.stem:
        tokens = _stemmer().stemWords(tokens)
    return tokens


def preprocess(
    texts,
    config: PreprocessConfig | None = None,
    *,
    vocabulary=None,
    partitions=None,
    labels=None,
    name: str = "corpus",
    source: str = "",
) -> Corpus:
    """Raw texts -> :class:`Corpus`.

    Documents left with fewer than ``config.min_doc_length`` tokens are dropped with a warning
    that counts them; their input positions are kept in ``Corpus.dropped_documents``.
    """
    config = config or PreprocessConfig()
    texts = list(texts)
    documents = [tokenize(text, config) for text in texts]
    return build_corpus(
        documents,
        vocabulary=vocabulary,
        config=config,
        partitions=partitions,
        labels=labels,
        name=name,
        source=source,
        # preprocessed texts are their tokens: Corpus.document_text joins them, nothing is kept twice
        raw_texts=None if config.preprocessed else texts,
    )


def build_corpus(
    documents: list,
    *,
    vocabulary=None,
    config: PreprocessConfig | None = None,
    partitions=None,
    labels=None,
    name: str = "corpus",
    source: str = "",
    raw_texts=None,
) -> Corpus:
    """Token lists -> :class:`Corpus` (vocabulary, frequency pruning, empty-document removal);
    ``raw_texts``, each document's text as read, are kept for the documents kept."""
    config = config or PreprocessConfig(preprocessed=True)
    if len(documents) == 0:
        raise InputError(f"corpus {name!r} is empty: it has no documents")
    for values, what in ((partitions, "partitions"), (labels, "labels"), (raw_texts, "raw_texts")):
        if values is not None and len(values) != len(documents):
            raise InputError(f"{what} has {len(values)} entries for {len(documents)} documents")

    given_vocabulary = vocabulary is not None
    vocabulary, test_only, from_train = _corpus_vocabulary(documents, vocabulary, config, partitions, name)
    index = {word: i for i, word in enumerate(vocabulary)}
    documents = _map_to_ids(documents, index, config, given_vocabulary=given_vocabulary)

    keep = [d for d, doc in enumerate(documents) if len(doc) >= config.min_doc_length]
    dropped = tuple(d for d, doc in enumerate(documents) if len(doc) < config.min_doc_length)
    if dropped:
        logger.warning(
            "corpus %r: dropped %d of %d documents with fewer than %d tokens after preprocessing "
            "(first input lines: %s)",
            name, len(dropped), len(documents), config.min_doc_length,
            ", ".join(str(d + 1) for d in dropped[:5]),
        )
    if not keep:
        raise InputError(
            f"corpus {name!r}: no document has {config.min_doc_length} or more tokens after "
            "preprocessing (check the stop words, frequency limits and the file's content)"
        )
    lengths = np.array([len(documents[d]) for d in keep], dtype=np.int64)
    offsets = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    tokens = np.fromiter(
        itertools.chain.from_iterable(documents[d] for d in keep), dtype=np.int32, count=int(offsets[-1])
    )
    pick = (lambda values: None if values is None else tuple(str(values[d]) for d in keep))
    return Corpus(
        vocabulary=tuple(vocabulary),
        token_ids=tokens,
        doc_offsets=offsets,
        partitions=pick(partitions),
        labels=pick(labels),
        name=name,
        source=source,
        preprocessing=recorded_preprocessing(config, from_train),
        dropped_documents=dropped,
        raw_texts=None if raw_texts is None else tuple(str(raw_texts[d]) for d in keep),
        vocabulary_from="given" if given_vocabulary else ("train" if from_train else "all"),
        test_only_words=len(test_only), test_only_tokens=sum(test_only.values()),
    )


def _corpus_vocabulary(documents, vocabulary, config: PreprocessConfig, partitions, name: str):
    """(the vocabulary: given, or by frequency over the training documents or all of them; the
    test-only words (word -> tokens), counted where it comes from the training documents; whether
    it does)."""
    if vocabulary is not None:
        return _checked_vocabulary(vocabulary), Counter(), False
    if config.vocabulary_from != "train" or not has_test_split(partitions):
        return _vocabulary_by_frequency(documents, config), Counter(), False
    training = [doc for doc, part in zip(documents, partitions) if part == "train"]
    test_only = _test_only_words(documents, partitions)
    if test_only:
        logger.info("corpus %r: %d test tokens (%d words) not in the training documents are dropped "
                    "(vocabulary_from='train')", name, sum(test_only.values()), len(test_only))
    return _vocabulary_by_frequency(training, config), test_only, True


def has_test_split(partitions) -> bool:
    """Whether documents are split into train and test (what the benchmark holds out)."""
    return partitions is not None and "train" in partitions and "test" in partitions


def recorded_preprocessing(config: PreprocessConfig, from_train: bool) -> dict:
    """The settings a corpus records (and fingerprints): ``vocabulary_from`` only where the
    vocabulary was built from the training documents, so that every corpus whose vocabulary it
    did not change keeps the fingerprint it had before the setting existed."""
    settings = config.to_dict()
    if not from_train:
        del settings["vocabulary_from"]
    return settings


def _test_only_words(documents, partitions) -> Counter:
    """word -> its tokens in test documents, for the words no training document has."""
    in_train = set(itertools.chain.from_iterable(doc for doc, part in zip(documents, partitions) if part == "train"))
    return Counter(token for doc, part in zip(documents, partitions) if part == "test"
                   for token in doc if token not in in_train)


def corpus_from_token_lists(
    documents,
    vocabulary=None,
    *,
    name: str = "corpus",
    **metadata,
) -> Corpus:
    """Build a :class:`Corpus` from documents given as lists of word strings or word ids.

    Without ``vocabulary`` the words are ordered by corpus frequency, most frequent first
    (ties: alphabetical). Used by tests and synthetic corpora; readers go through
    :func:`build_corpus`.
    """
    return build_corpus(
        [list(doc) for doc in documents], vocabulary=vocabulary, name=name, **metadata
    )


def _checked_vocabulary(vocabulary) -> tuple:
    """A given vocabulary as a tuple, refused when it lists a word twice."""
    vocabulary = tuple(vocabulary)
    if len(set(vocabulary)) != len(vocabulary):
        dupes = [w for w, c in Counter(vocabulary).items() if c > 1]
        raise InputError(f"the vocabulary lists {len(dupes)} words twice, e.g. {dupes[:5]}")
    return vocabulary


def _vocabulary_by_frequency(documents, config: PreprocessConfig) -> tuple:
    """Words by corpus frequency, most frequent first (ties alphabetical), after df pruning."""
    frequency = Counter()
    doc_frequency = Counter()
    for doc in documents:
        frequency.update(doc)
        doc_frequency.update(set(doc))
    n_docs = len(documents)
    min_df = config.min_df if isinstance(config.min_df, int) else config.min_df * n_docs
    max_df = config.max_df if isinstance(config.max_df, int) else config.max_df * n_docs
    words = [w for w, df in doc_frequency.items() if min_df <= df <= max_df]
    words.sort(key=lambda w: (-frequency[w], w))
    return tuple(words)


def _map_to_ids(documents, index: dict, config: PreprocessConfig, *, given_vocabulary: bool):
    unknown = Counter()
    mapped = []
    for doc in documents:
        try:
            ids = list(map(index.__getitem__, doc))  # every word known: the common case, in C
        except KeyError:
            ids = [index.get(token, -1) for token in doc]
            unknown.update(t for t, i in zip(doc, ids) if i < 0)
            ids = [i for i in ids if i >= 0]
        mapped.append(ids)
    if unknown and given_vocabulary:
        examples = ", ".join(repr(w) for w, _ in unknown.most_common(5))
        message = (
            f"{sum(unknown.values())} tokens ({len(unknown)} distinct words) are not in the given "
            f"vocabulary, e.g. {examples}"
        )
        if config.unknown_words == "error":
            raise InputError(message + "; pass unknown_words='drop' to drop them")
        logger.warning("%s; dropped them (unknown_words='drop')", message)
    return mapped


@lru_cache(maxsize=8)
def _pattern(token_pattern: str):
    return re.compile(token_pattern)


@lru_cache(maxsize=8)
def _stopwords(stopwords) -> frozenset:
    if stopwords == "none":
        return frozenset()
    if stopwords == "english":  # gensim's list, without gensim's import (core/stopwords.py)
        from .stopwords import ENGLISH_STOPWORDS

        return ENGLISH_STOPWORDS
    return frozenset(stopwords)


@lru_cache(maxsize=1)
def _stemmer():
    import snowballstemmer

    return snowballstemmer.stemmer("english")
