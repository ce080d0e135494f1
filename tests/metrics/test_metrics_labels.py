"""Label-based scores: classification on document-topic features, NMI and purity of main topics."""

from __future__ import annotations

import numpy as np
import pytest

from topicbench.core.metrics.labels import classification_scores, clustering_scores, main_topics
from topicbench.core.validation import InputError


def test_purity_and_nmi_by_hand():
    # main topics 0 0 1 1 2 2; labels x x x y y y
    theta = np.array([
        [0.9, 0.8, 0.1, 0.0, 0.1, 0.2],
        [0.1, 0.2, 0.6, 0.7, 0.2, 0.1],
        [0.0, 0.0, 0.3, 0.3, 0.7, 0.7],
    ])
    labels = ["x", "x", "x", "y", "y", "y"]
    assert main_topics(theta).tolist() == [0, 0, 1, 1, 2, 2]
    scores = clustering_scores(theta, labels)
    # topic 0: 2 x; topic 1: 1 x, 1 y; topic 2: 2 y -> purity (2 + 1 + 2) / 6
    assert scores["purity"] == pytest.approx(5 / 6)
    # NMI = 2 I / (H(labels) + H(clusters)): I = H(labels) - H(labels | clusters) = ln 2 - (1/3) ln 2
    mutual = np.log(2) - np.log(2) / 3
    assert scores["nmi"] == pytest.approx(2 * mutual / (np.log(2) + np.log(3)))
    perfect = clustering_scores(np.array([[1, 1, 0, 0], [0, 0, 1, 1]]), ["x", "x", "y", "y"])
    assert perfect == {"nmi": pytest.approx(1.0), "purity": 1.0, "inverse_purity": 1.0, "harmonic_purity": 1.0,
                       "ari": 1.0}


def test_inverse_purity_harmonic_purity_and_ari_by_hand():
    # the table of test_purity_and_nmi_by_hand: topic x label counts [[2, 0], [1, 1], [0, 2]]
    theta = np.array([
        [0.9, 0.8, 0.1, 0.0, 0.1, 0.2],
        [0.1, 0.2, 0.6, 0.7, 0.2, 0.1],
        [0.0, 0.0, 0.3, 0.3, 0.7, 0.7],
    ])
    scores = clustering_scores(theta, ["x", "x", "x", "y", "y", "y"])
    # each label keeps at most 2 of its 3 documents in one topic
    assert scores["inverse_purity"] == pytest.approx(4 / 6)
    # F = 2 n_kc / (n_k + n_c): best for x is topic 0 (2 * 2 / 5), for y topic 2 (the same); weighted by n_c
    assert scores["harmonic_purity"] == pytest.approx((3 * 0.8 + 3 * 0.8) / 6)
    # ARI: sum C(n_kc, 2) = 2, topics' sum C(n_k, 2) = 3, labels' = 6, C(6, 2) = 15
    expected = 3 * 6 / 15
    assert scores["ari"] == pytest.approx((2 - expected) / ((3 + 6) / 2 - expected))


def test_harmonic_purity_is_topicgpts_and_ari_sklearns_on_random_clusterings():
    """TopicGPT's ``calculate_purity`` (``topicgpt_python/utils.py``), transcribed, on random
    main topics: many topics, some empty, labels of unequal sizes."""
    from sklearn.metrics import adjusted_rand_score
    from sklearn.metrics.cluster import contingency_matrix

    rng = np.random.default_rng(3)
    for _ in range(5):
        theta = rng.dirichlet([0.2] * 9, size=60).T
        labels = rng.choice(["a", "b", "c", "d"], size=60, p=[0.5, 0.3, 0.15, 0.05])
        scores = clustering_scores(theta, labels)
        table = contingency_matrix(labels, main_topics(theta))  # labels x topics
        precision = table / table.sum(axis=0).reshape(1, -1)
        recall = table / table.sum(axis=1).reshape(-1, 1)
        with np.errstate(invalid="ignore"):  # as in TopicGPT: 0/0 where a label misses a topic, then 0
            f1 = np.nan_to_num(2 * (precision * recall) / (precision + recall))
        sizes = table.sum(axis=1)
        assert scores["harmonic_purity"] == pytest.approx((np.amax(f1, axis=1) * sizes).sum() / table.sum())
        assert scores["inverse_purity"] == pytest.approx((np.amax(recall, axis=1) * sizes).sum() / table.sum())
        assert scores["ari"] == pytest.approx(adjusted_rand_score(labels, main_topics(theta)))


def test_one_topic_per_document_is_pure_but_not_aligned():
    labels = ["x", "y"] * 5
    scores = clustering_scores(np.eye(10), labels)
    assert scores["purity"] == 1.0
    assert scores["inverse_purity"] == pytest.approx(0.2)
    assert scores["ari"] == pytest.approx(0.0)


def test_classification_on_separable_features():
    rng = np.random.default_rng(0)
    labels = np.array(["x", "y"] * 40)
    theta = np.where(labels == "x", 0.9, 0.1)[None, :] * np.array([[1.0], [0.0]]) + np.where(
        labels == "x", 0.1, 0.9)[None, :] * np.array([[0.0], [1.0]])
    theta += rng.uniform(0, 0.02, theta.shape)
    theta /= theta.sum(axis=0)
    scores = classification_scores(theta, labels, np.random.default_rng(1))
    assert scores["classification_accuracy"] == 1.0
    assert scores["classification_macro_f1"] == 1.0
    assert scores["test_documents"] == 20  # 25 % held out


def test_classification_uses_partitions_and_is_seeded():
    rng = np.random.default_rng(5)
    labels = rng.choice(["a", "b", "c"], 60)
    theta = rng.dirichlet(np.ones(4), 60).T
    partitions = ["train"] * 40 + ["val"] * 5 + ["test"] * 15
    scores = classification_scores(theta, labels, partitions=partitions)
    assert (scores["train_documents"], scores["test_documents"]) == (45, 15)
    first = classification_scores(theta, labels, np.random.default_rng(9))
    assert first == classification_scores(theta, labels, np.random.default_rng(9))


def test_label_errors():
    theta = np.full((2, 4), 0.5)
    with pytest.raises(InputError, match="the corpus has no labels"):
        clustering_scores(theta, None)
    with pytest.raises(InputError, match="3 labels for 4 documents"):
        clustering_scores(theta, ["a", "b", "c"])
    with pytest.raises(InputError, match="have no label"):
        clustering_scores(theta, ["a", None, "b", "b"])
    with pytest.raises(InputError, match="needs an rng"):
        classification_scores(theta, ["a", "b", "a", "b"], None)
