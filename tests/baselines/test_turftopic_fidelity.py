"""KeyNMF, S³ and GMM are turftopic's: each wrapper's output is what the package's own
``KeyNMF``, ``SemanticSignalSeparation`` and ``GMM``, run here directly on the same texts,
document embeddings, vocabulary, encoder and seed, give (its ``components_`` and document-topic
matrix, made distributions as the wrappers' docstrings say); and the cached word vectors the
wrappers hand turftopic are the encoder's own."""

from __future__ import annotations

import numpy as np
import pytest

from topicbench.baselines import turftopic_models as ours
from topicbench.baselines.embeddings import corpus_texts, document_embeddings, load_sentence_model
from topicbench.core.preprocess import corpus_from_token_lists
from topicbench.core.validation import InputError
from synthetic_lda import lee_corpus  # noqa: F401 (fixture used by name)

NUM_TOPICS, SEED = 4, 5


@pytest.fixture(scope="module")
def small_corpus(lee_corpus):  # noqa: F811
    """40 Lee documents over their words seen at least 4 times (a vocabulary of about 150), so
    that encoding the words stays quick on a shared CPU."""
    documents = lee_corpus.subset(range(40)).texts()
    counts = {}
    for words in documents:
        for word in words:
            counts[word] = counts.get(word, 0) + 1
    kept = sorted(word for word, count in counts.items() if count >= 4)
    keep = set(kept)
    token_lists = [[word for word in words if word in keep] for words in documents]
    return corpus_from_token_lists([words for words in token_lists if words], vocabulary=kept, name="lee40")


#: Our wrapper of each model.
WRAPPERS = {"keynmf": ours.KeyNMF, "s3": ours.S3, "gmm": ours.GMM}


def package_run(name, corpus):
    """turftopic's own model ``name`` fitted on the corpus's texts and cached embeddings, with
    the encoder and vocabulary the wrappers give it; and its document-topic matrix."""
    from turftopic import GMM, KeyNMF, SemanticSignalSeparation

    package_class = {"keynmf": KeyNMF, "s3": SemanticSignalSeparation, "gmm": GMM}[name]
    encoder = WRAPPERS[name](NUM_TOPICS, random_state=SEED)._encoder(corpus)
    package = package_class(NUM_TOPICS, encoder=encoder, vectorizer=ours.corpus_vectorizer(corpus), random_state=SEED)
    doc_topic = package.fit_transform(corpus_texts(corpus), embeddings=document_embeddings(corpus))
    return package, doc_topic


def distributions(package, doc_topic, corpus):
    """The package's components_ (positive part) over the corpus vocabulary and its document
    proportions (positive part), each normalised, by plain numpy."""
    topic_word = np.zeros((len(package.components_), corpus.n_words))
    for column, word in enumerate(package.get_vocab()):
        topic_word[:, corpus.word_index[word]] = np.maximum(package.components_[:, column], 0)
    theta = np.maximum(np.asarray(doc_topic, dtype=np.float64), 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = theta / theta.sum(axis=1, keepdims=True)
    theta[~np.isfinite(theta).all(axis=1)] = 1 / theta.shape[1]
    return topic_word / topic_word.sum(axis=1, keepdims=True), theta.T


@pytest.mark.parametrize("name", ["keynmf", "s3", "gmm"])
def test_wrapper_output_is_the_packages(small_corpus, name):
    package, doc_topic = package_run(name, small_corpus)
    model = WRAPPERS[name](NUM_TOPICS, random_state=SEED).fit(small_corpus)
    topic_word, theta = distributions(package, doc_topic, small_corpus)
    output = model.output_
    np.testing.assert_allclose(output.topic_word_matrix, topic_word, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(output.topic_document_matrix, theta, rtol=1e-6, atol=1e-12)
    # the topics are the package's own top words, in its order (negative importances included;
    # words of equal importance may come in another order)
    top_words = len(output.topics[0])
    column = {word: c for c, word in enumerate(package.get_vocab())}
    for words, component, (_, ranked) in zip(output.topics, package.components_,
                                             package.get_topics(top_k=top_words)):
        np.testing.assert_array_equal(component[[column[word] for word in words]],
                                      [importance for _, importance in ranked])
        assert len(words) == top_words
    held_out = small_corpus.subset(range(8))
    expected = package.transform(corpus_texts(held_out), embeddings=document_embeddings(held_out))
    np.testing.assert_allclose(model.transform(held_out), distributions(package, expected, small_corpus)[1], rtol=1e-6)


def test_the_cached_word_vectors_are_the_encoders(small_corpus):
    encoder = ours.KeyNMF(NUM_TOPICS)._encoder(small_corpus)
    words = list(small_corpus.vocabulary[:20])
    direct = load_sentence_model(None).encode(words, normalize_embeddings=True)
    np.testing.assert_allclose(encoder.encode(words[::-1]), direct[::-1], atol=1e-5)
    # anything outside the vocabulary goes to the encoder itself
    assert encoder.encode(["not one corpus word"]).shape == (1, direct.shape[1])


@pytest.mark.parametrize(
    "model, settings, message",
    [
        (ours.KeyNMF, {"metric": "euclidean"}, "keynmf: metric must be one of"),
        (ours.KeyNMF, {"top_n": 0}, "keynmf: top_n must be an integer >= 1"),
        (ours.S3, {"feature_importance": "radial"}, "s3: feature_importance must be one of"),
        (ours.GMM, {"weight_prior": "beta"}, "gmm: weight_prior must be one of"),
        (ours.GMM, {"gamma": 0.0}, "gmm: gamma must be a positive number"),
    ],
)
def test_bad_settings_are_refused_naming_the_setting(model, settings, message):
    with pytest.raises(InputError, match=message):
        model(NUM_TOPICS, **settings)
