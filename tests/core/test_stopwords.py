"""core/stopwords.py is gensim's English stop-word list, kept as data so that reading it does not
import gensim; and the Lee corpus is found where gensim keeps it, also without importing gensim."""

from __future__ import annotations

from gensim.parsing.preprocessing import STOPWORDS
from gensim.test.utils import datapath

from topicbench.core.io import builtin_corpus_path
from topicbench.core.preprocess import PreprocessConfig, preprocess
from topicbench.core.stopwords import ENGLISH_STOPWORDS


def test_the_copy_is_the_installed_gensims_list():
    assert ENGLISH_STOPWORDS == frozenset(STOPWORDS)


def test_english_stopwords_are_removed_with_that_list():
    corpus = preprocess(["the quick fox jumps over the lazy dog", "a quick dog naps"],
                        PreprocessConfig(stopwords="english", min_df=1, stem=False))
    assert set(corpus.vocabulary) == {"quick", "fox", "jumps", "lazy", "dog", "naps"}


def test_the_builtin_corpus_is_gensims_lee_file():
    assert str(builtin_corpus_path()) == datapath("lee_background.cor")
