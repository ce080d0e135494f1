r"""Label-based scores for corpora with document labels (e.g. m10).

- Classification: a scikit-learn logistic regression (a linear model) on the document–topic
  features θ_d (the columns of the topic-document matrix) is trained on one split and scored on
  the other: accuracy and macro-F1 = (1/C) Σ_c F1_c.
- Clustering of each document's main topic m_d = argmax_k θ_d[k] (ties: the lowest k):
  NMI(labels, m) (arithmetic normalisation, scikit-learn's default),
  purity = (1/D) Σ_k max_c n_kc with n_kc = |{d : m_d = k, y_d = c}|, inverse purity = (1/D)
  Σ_c max_k n_kc (how whole each label stays), harmonic purity = (1/D) Σ_c n_c max_k F_kc with
  F_kc = 2 P_kc R_kc / (P_kc + R_kc), P_kc = n_kc / n_k, R_kc = n_kc / n_c (the F-measure of
  Amigó et al. 2009, as TopicGPT's code computes it: ``topicgpt_python/utils.py::calculate_purity``,
  Pham et al., NAACL 2024; not the harmonic mean of purity and inverse purity), and the adjusted
  Rand index ARI(labels, m) (Hubert and Arabie 1985; scikit-learn's). Purity alone rewards many
  topics (one document a topic scores 1); inverse purity, harmonic purity and ARI do not.

>>> clustering_scores(np.array([[0.9, 0.8, 0.1], [0.1, 0.2, 0.9]]), ["x", "x", "y"])["purity"]
1.0
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from topicbench.core.constants import LABEL_CLASSIFIER_C, LABEL_CLASSIFIER_MAX_ITER, LABEL_TEST_FRACTION
from ..validation import InputError

logger = logging.getLogger(__name__)


def _check_doc_topic(doc_topic, labels) -> tuple:
    """(θ, labels as str): a dense θ as float64, a sparse one (E-LDA's) kept sparse, as CSC."""
    theta = sp.csc_matrix(doc_topic, dtype=np.float64) if sp.issparse(doc_topic) else np.asarray(doc_topic, dtype=np.float64)
    if theta.ndim != 2:
        raise InputError(f"the topic-document matrix must be 2-d (topics x documents), got shape {theta.shape}")
    if labels is None:
        raise InputError("label-based scores need a label per document: the corpus has no labels")
    labels = np.asarray(list(labels), dtype=object)
    if len(labels) != theta.shape[1]:
        raise InputError(f"{len(labels)} labels for {theta.shape[1]} documents")
    missing = [d for d, label in enumerate(labels) if label is None or label == ""]
    if missing:
        raise InputError(f"{len(missing)} documents have no label (first: document {missing[0]})")
    if not np.all(np.isfinite(theta.data if sp.issparse(theta) else theta)):
        raise InputError("the topic-document matrix holds NaN or infinite values")
    return theta, labels.astype(str)


def main_topics(doc_topic) -> np.ndarray:
    """Each document's main topic argmax_k θ_d[k] (ties: the lowest k); θ dense or sparse (then
    its entries are probabilities, so a column's maximum is a stored entry)."""
    if not sp.issparse(doc_topic):
        return np.argmax(np.asarray(doc_topic), axis=0)
    columns = sp.csc_matrix(doc_topic)
    columns.sum_duplicates()
    columns.sort_indices()
    lengths = np.diff(columns.indptr)
    document = np.repeat(np.arange(columns.shape[1]), lengths)
    # per column, the stored entries by value high to low, then by topic: the first is the argmax
    order = np.lexsort((columns.indices, -columns.data, document))
    first = columns.indptr[:-1][lengths > 0]
    main = np.zeros(columns.shape[1], dtype=np.int64)
    main[lengths > 0] = columns.indices[order[first]]
    return main


def clustering_scores(doc_topic, labels) -> dict:
    """NMI, purity, inverse purity, harmonic purity and ARI of each document's main topic against
    its label (the module's formulas)."""
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    theta, labels = _check_doc_topic(doc_topic, labels)
    clusters = main_topics(theta)
    _, label_ids = np.unique(labels, return_inverse=True)
    table = np.zeros((theta.shape[0], label_ids.max() + 1), dtype=np.int64)
    np.add.at(table, (clusters, label_ids), 1)
    topic_sizes, label_sizes = table.sum(axis=1, keepdims=True), table.sum(axis=0, keepdims=True)
    f_measure = 2 * table / (topic_sizes + label_sizes)  # 2PR / (P + R) = 2 n_kc / (n_k + n_c); n_c >= 1
    return {
        "nmi": float(normalized_mutual_info_score(labels, clusters)),
        "purity": float(table.max(axis=1).sum() / len(labels)),
        "inverse_purity": float(table.max(axis=0).sum() / len(labels)),
        "harmonic_purity": float((label_sizes.ravel() * f_measure.max(axis=0)).sum() / len(labels)),
        "ari": float(adjusted_rand_score(labels, clusters)),
    }


def train_test_split_indices(labels, rng: np.random.Generator, *, partitions=None,
                             test_fraction: float = LABEL_TEST_FRACTION) -> tuple[np.ndarray, np.ndarray]:
    """Train and test documents: the OCTIS partitions when the corpus has both "train" and "test"
    (validation documents join training), otherwise a stratified random split drawn from ``rng``."""
    labels = np.asarray(labels)
    if partitions is not None:
        partitions = np.asarray(list(partitions))
        if len(partitions) != len(labels):
            raise InputError(f"{len(partitions)} partitions for {len(labels)} documents")
        test = np.flatnonzero(partitions == "test")
        train = np.flatnonzero(partitions != "test")
        if len(test) and len(train):
            return train, test
    if not 0 < test_fraction < 1:
        raise InputError(f"test_fraction must lie in (0, 1), got {test_fraction}")
    if rng is None:
        raise InputError("a random split needs an rng (np.random.default_rng(seed))")
    from sklearn.model_selection import train_test_split

    classes, sizes = np.unique(labels, return_counts=True)
    stratify = labels if sizes.min() >= 2 else None
    train, test = train_test_split(
        np.arange(len(labels)), test_size=test_fraction, stratify=stratify,
        random_state=int(rng.integers(2**31 - 1)),
    )
    return np.sort(train), np.sort(test)


def classification_scores(doc_topic, labels, rng: np.random.Generator | None = None, *, partitions=None,
                          test_fraction: float = LABEL_TEST_FRACTION) -> dict:
    """Accuracy and macro-F1 of a logistic regression on document–topic features.

    Parameters
    ----------
    doc_topic : ndarray (K, D)
        θ, the topic-document matrix.
    labels : sequence of str (D,)
    rng : numpy.random.Generator, optional
        For the random split (and nothing else) when the corpus has no train/test partitions.
    partitions : sequence of str (D,), optional
        OCTIS partitions ("train", "val", "test").
    test_fraction : float
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, f1_score

    theta, labels = _check_doc_topic(doc_topic, labels)
    train, test = train_test_split_indices(labels, rng, partitions=partitions, test_fraction=test_fraction)
    if len(np.unique(labels[train])) < 2:
        raise InputError("the training documents hold a single label: a classifier needs two or more")
    features = theta.T.tocsr() if sp.issparse(theta) else theta.T
    classifier = LogisticRegression(C=LABEL_CLASSIFIER_C, max_iter=LABEL_CLASSIFIER_MAX_ITER)
    classifier.fit(features[train], labels[train])
    predicted = classifier.predict(features[test])
    return {
        "classification_accuracy": float(accuracy_score(labels[test], predicted)),
        "classification_macro_f1": float(f1_score(labels[test], predicted, average="macro")),
        "train_documents": int(len(train)),
        "test_documents": int(len(test)),
    }
