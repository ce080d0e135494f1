"""NMF, LSI and HDP are their packages' models: each wrapper's output is what scikit-learn's
``NMF``, gensim's ``LsiModel`` and tomotopy's ``HDPModel``, run here directly on the same input
with the same seed, give, made distributions as the wrappers' docstrings say."""

from __future__ import annotations

import numpy as np
import pytest

from topicbench.baselines.hdp import HDP
from topicbench.baselines.lsi import LSI
from topicbench.baselines.nmf import NMF
from topicbench.core.validation import InputError
from synthetic_lda import lee_corpus  # noqa: F401 (fixture used by name)

NUM_TOPICS, SEED = 5, 7


@pytest.fixture(scope="module")
def small_lee(lee_corpus):  # noqa: F811
    return lee_corpus.subset(range(80), name="lee80")


def bag_of_words(corpus):
    doc_term = corpus.doc_term
    return [
        list(zip(doc_term.indices[start:end].tolist(), doc_term.data[start:end].tolist()))
        for start, end in zip(doc_term.indptr[:-1], doc_term.indptr[1:])
    ]


def row_normalised(matrix):
    matrix = np.asarray(matrix, dtype=np.float64)
    return matrix / matrix.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("features", ["tfidf", "counts"])
def test_nmf_is_scikit_learns_nmf_on_tfidf_or_counts(small_lee, features):
    from sklearn.decomposition import NMF as SklearnNMF
    from sklearn.feature_extraction.text import TfidfTransformer

    counts = small_lee.doc_term.astype(np.float64)
    x = TfidfTransformer().fit_transform(counts) if features == "tfidf" else counts
    package = SklearnNMF(NUM_TOPICS, random_state=SEED)
    doc_topic = package.fit_transform(x)

    model = NMF(NUM_TOPICS, random_state=SEED, features=features).fit(small_lee)
    output = model.output_
    np.testing.assert_array_equal(output.topic_word_matrix, row_normalised(package.components_))
    scale = package.components_.sum(axis=1)  # H's row scale, moved into W
    np.testing.assert_array_equal(output.topic_document_matrix, row_normalised(doc_topic * scale).T)
    assert output.extra["iterations"] == package.n_iter_
    assert output.extra["reconstruction_error"] == package.reconstruction_err_
    assert model.init_ == "nndsvda"
    held_out = small_lee.subset(range(10))
    np.testing.assert_allclose(model.transform(held_out), row_normalised(package.transform(x[:10]) * scale).T)


def test_nmf_shares_do_not_depend_on_how_the_scale_is_split_between_w_and_h():
    """W H = (W c)(H / c) for any positive c per topic: the same factorisation, the same shares.
    Normalising W alone would give topic 0 (H's rows summing to 4 against 1) a share of 0.5 here,
    where it carries 0.8 of the reconstruction."""
    from topicbench.baselines.nmf import document_topics

    w, h = np.array([[1.0, 1.0], [2.0, 0.5]]), np.array([[3.0, 1.0], [0.5, 0.5]])
    rescale = np.array([10.0, 0.1])
    shares = document_topics(w, h)
    np.testing.assert_allclose(document_topics(w * rescale, h / rescale[:, None]), shares)
    np.testing.assert_allclose(shares[:, 0], [0.8, 0.2])  # (1·4, 1·1) of 5
    np.testing.assert_allclose(shares.sum(axis=0), 1.0)
    reconstruction = w @ h
    np.testing.assert_allclose(shares, (w * h.sum(axis=1)).T / reconstruction.sum(axis=1))


def test_lsi_is_gensims_lsimodel_on_tfidf_with_absolute_weights(small_lee):
    from gensim.matutils import corpus2dense
    from gensim.models import LsiModel, TfidfModel

    id2word = dict(enumerate(small_lee.vocabulary))
    tfidf = TfidfModel(bag_of_words(small_lee), id2word=id2word)
    weighted = list(tfidf[bag_of_words(small_lee)])
    package = LsiModel(weighted, num_topics=NUM_TOPICS, id2word=id2word, random_seed=SEED)
    coordinates = corpus2dense(package[weighted], num_terms=NUM_TOPICS, num_docs=small_lee.n_documents)

    output = LSI(NUM_TOPICS, random_state=SEED).fit(small_lee).output_
    np.testing.assert_array_equal(output.topic_word_matrix, row_normalised(np.abs(package.get_topics())))
    np.testing.assert_array_equal(output.topic_document_matrix, row_normalised(np.abs(coordinates).T).T)
    # the topic's words in gensim's own order (by |weight|); words whose |weights| tie may come in
    # another order, since gensim's argsort is numpy's unstable sort, whose tie order differs
    # between CPUs (SIMD sorts): compared by the weights gensim gives each word, as for HDP
    word_id = {word: i for i, word in id2word.items()}
    for k, words in enumerate(output.topics):
        weight = np.abs(package.projection.u.T[k])
        ranked = package.show_topic(k, topn=5)
        np.testing.assert_array_equal(weight[[word_id[word] for word in words[:5]]],
                                      weight[[word_id[word] for word, _ in ranked]])


def test_the_lsi_fidelity_check_accepts_ties_in_any_order_and_nothing_else():
    weight = np.array([0.5, 0.3, 0.3, 0.1])
    assert np.array_equal(weight[[0, 2, 1]], weight[[0, 1, 2]])       # a tie swapped: the same weights
    assert not np.array_equal(weight[[0, 3, 1]], weight[[0, 1, 2]])   # another word: other weights


def test_hdp_is_tomotopys_hdpmodel_on_its_live_topics(small_lee):
    import tomotopy

    package = tomotopy.HDPModel(seed=SEED)
    for d in range(small_lee.n_documents):
        package.add_doc([small_lee.vocabulary[t] for t in small_lee.document(d)])
    package.train(60, workers=1, parallel=tomotopy.ParallelScheme.NONE)
    live = [k for k in range(package.k) if package.is_live_topic(k)]

    model = HDP(random_state=SEED, iterations=60).fit(small_lee)
    output = model.output_
    assert model.num_topics_ == output.n_topics == package.live_k == len(live)
    column = np.array([small_lee.word_index[word] for word in package.used_vocabs])
    unused = np.setdiff1d(np.arange(small_lee.n_words), column)
    assert unused.size  # 80 documents use part of the vocabulary: the words the others hold keep their prior share
    eta, topic_tokens = package.eta, np.asarray(package.get_count_by_topics(), dtype=np.float64)
    for row, k in enumerate(live):
        # tomotopy's (n_kw + η) / (n_k + V'η) over the V' words used, renormalised over all V words
        used, everywhere = topic_tokens[k] + column.size * eta, topic_tokens[k] + small_lee.n_words * eta
        np.testing.assert_allclose(output.topic_word_matrix[row, column],
                                   np.asarray(package.get_topic_word_dist(k)) * used / everywhere, rtol=1e-5)
        np.testing.assert_allclose(output.topic_word_matrix[row, unused], eta / everywhere, rtol=1e-6)
        # the package's top words (ties in any order: tomotopy's is not the corpus's; a word with no
        # count in a small topic ties with the unused words)
        ours = [output.topic_word_matrix[row, small_lee.word_index[word]] for word in output.topics[row][:5]]
        np.testing.assert_allclose(ours, [p * used / everywhere for _, p in package.get_topic_words(k, top_n=5)],
                                   rtol=1e-5)
    theta = np.array([document.get_topic_dist() for document in package.docs])[:, live]
    np.testing.assert_allclose(output.topic_document_matrix, row_normalised(theta).T, rtol=1e-6)
    assert model.alpha_ == pytest.approx(package.alpha) and model.gamma_ == pytest.approx(package.gamma)
    # each token's topic is the sampler's, renumbered to the live topics
    first = package.docs[0]
    np.testing.assert_array_equal(live_index(live, first.topics), output.token_topics[: len(first.words)])
    assert output.extra["training_steps"][-1] == 60 and len(output.extra["training_loss"]) == 7


def live_index(live, topics):
    return np.array([live.index(k) for k in topics])


@pytest.mark.parametrize(
    "model, settings, message",
    [
        (NMF, {"features": "binary"}, "nmf: features must be one of"),
        (NMF, {"beta_loss": "kullback-leibler"}, "nmf: beta_loss 'kullback-leibler' needs solver 'mu'"),
        (NMF, {"l1_ratio": 1.5}, r"nmf: setting .l1_ratio. must be a number <= 1, got 1.5"),
        (NMF, {"init": "svd"}, "nmf: init must be one of"),
        (LSI, {"power_iters": -1}, "lsi: power_iters must be an integer >= 0"),
        (LSI, {"decay": 0.0}, "lsi: decay must be a positive number"),
        (HDP, {"gamma": -1.0}, "hdp: gamma must be a positive number"),
        (HDP, {"initial_k": 1}, "hdp: initial_k must be an integer >= 2"),
    ],
)
def test_bad_settings_are_refused_naming_the_setting(model, settings, message):
    with pytest.raises(InputError, match=message):
        model(NUM_TOPICS, **settings)


def test_nmf_without_a_loss_curve_reports_scikit_learns_own_stopping_rule(small_lee):
    stopped = NMF(NUM_TOPICS, random_state=SEED, max_iter=2).fit(small_lee).output_.extra
    finished = NMF(NUM_TOPICS, random_state=SEED).fit(small_lee).output_.extra
    assert stopped["iterations"] == 2 and stopped["converged"] is False
    assert finished["iterations"] < 200 and finished["converged"] is True
    assert "training_loss" not in finished and finished["training_loss_kind"].startswith("no curve")
