"""Shared helpers of the metrics tests: gensim as the coherence reference, small corpora, topics.

(Not a conftest: ``tests/conftest.py`` is imported by name elsewhere, so a second conftest on the
path could shadow it. For the same reason the suite's conftest helpers are loaded here by path, so
that another folder's ``conftest.py`` on ``sys.path`` cannot stand in for it.)
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from topicbench.core.corpus import Corpus
from topicbench.core.preprocess import corpus_from_token_lists


def _suite_conftest():
    path = Path(__file__).resolve().parents[1] / "conftest.py"
    spec = importlib.util.spec_from_file_location("topicbench_suite_conftest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SUITE = _suite_conftest()
#: tests/conftest.py's helpers: skip with a reason when ../shared/data (or a corpus) is absent,
#: small random corpora, and beta = log(1e-100).
require_shared_data = _SUITE.require_shared_data
random_corpus = _SUITE.random_corpus
BETA = _SUITE.BETA

#: Our coherence values must equal gensim CoherenceModel's within this absolute difference (issue 5).
GENSIM_TOLERANCE = 1e-9

#: Our measure names -> gensim's.
GENSIM_NAMES = {"umass": "u_mass", "uci": "c_uci", "npmi": "c_npmi", "cv": "c_v"}


def gensim_per_topic(topics, texts, measure: str, top_n, *, window=None, dictionary=None) -> dict:
    """gensim's per-topic coherence for each N, accumulating once (at the largest N) and reusing
    the accumulator for smaller N, with ``processes=1``."""
    from gensim.corpora import Dictionary
    from gensim.models.coherencemodel import CoherenceModel

    dictionary = dictionary if dictionary is not None else Dictionary(texts)
    grid = sorted(top_n, reverse=True)
    model = CoherenceModel(
        topics=topics, texts=texts, dictionary=dictionary, coherence=GENSIM_NAMES[measure],
        topn=grid[0], window_size=window, processes=1,
    )
    values = {}
    for n in grid:
        model.topn = n
        values[n] = np.asarray(model.get_coherence_per_topic(), dtype=np.float64)
    return values


def tiny_reference() -> Corpus:
    """Four documents over a, b, c, d with counts that are easy to check by hand.

    d0 = a a b, d1 = a b a c, d2 = c, d3 = d.
    """
    return corpus_from_token_lists(
        [["a", "a", "b"], ["a", "b", "a", "c"], ["c"], ["d"]], vocabulary=["a", "b", "c", "d"], name="tiny"
    )


def keyword_topics(corpus: Corpus, keywords, n: int) -> list[list[str]]:
    """Topics of the n words that share the most documents with each keyword (keyword first)."""
    binary = corpus.doc_term.copy()
    binary.data[:] = 1
    topics = []
    for keyword in keywords:
        w = corpus.word_index[keyword]
        together = np.asarray(binary[binary[:, w].nonzero()[0]].sum(axis=0)).ravel()
        together[w] = np.iinfo(np.int64).max
        order = np.lexsort((np.arange(corpus.n_words), -together))[:n]
        topics.append([corpus.vocabulary[i] for i in order])
    return topics


def random_topics(corpus: Corpus, rng: np.random.Generator, n_topics: int, n: int, *, pool: int | None = None):
    """Topics of n distinct words drawn from the ``pool`` most frequent words (all words if None)."""
    frequencies = np.bincount(corpus.token_ids, minlength=corpus.n_words)
    by_frequency = np.argsort(-frequencies, kind="stable")
    by_frequency = by_frequency[frequencies[by_frequency] > 0]
    pool_ids = by_frequency[: pool or len(by_frequency)]
    return [[corpus.vocabulary[i] for i in rng.choice(pool_ids, n, replace=False)] for _ in range(n_topics)]


def spy_on_counting(monkeypatch) -> list:
    """The windows counted from now on, one entry per ``CooccurrenceCounts.build`` call."""
    from topicbench.core.metrics.counts import CooccurrenceCounts

    builds = []
    original = CooccurrenceCounts.build.__func__

    def counting_build(cls, reference, window, word_ids, **kwargs):
        builds.append(window)
        return original(cls, reference, window, word_ids, **kwargs)

    monkeypatch.setattr(CooccurrenceCounts, "build", classmethod(counting_build))
    return builds
