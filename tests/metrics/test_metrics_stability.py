"""Topic stability across seeds: hand-computed similarities, permutations, chance, and the
constant-plus-sparse path against dense naive twins (scipy's Jensen-Shannon distance, RBO by its
definition)."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon
from scipy.special import rel_entr

from topicbench.core.metrics import stability_kernels as _stability_kernels
from topicbench.core.metrics import stability as stability_module
from topicbench.core.metrics import topic_similarity as similarity_module
from topicbench.core.metrics.stability import (
    MEASURES,
    chance_stability,
    match_topics,
    seed_stability,
    shuffled_words,
    stability,
    topic_similarity,
)
from topicbench.core.metrics.topic_similarity import top_word_ids
from topicbench.core.output import TopicModelOutput
from topicbench.core.topic_word import ConstantPlusSparse
from topicbench.core.validation import InputError

#: The constant-plus-sparse computation against the dense one (and the naive twins), on similarities.
EXACT = 1e-12
#: ... and on Jensen-Shannon divergences (bits): sums of |V| terms of at most 1 round to about 1e-15.
DIVERGENCE_EXACT = 1e-14
#: Unrelated random topics against the chance level (20 shuffles): 0.04 is about 4 sd of the
#: top-words chance draws (sd ≈ 0.01) and over 10 sd of the Jensen-Shannon ones (sd ≈ 0.003).
CHANCE_TOLERANCE = 0.04


# ------------------------------------------------------------------------------------------------
# Naive twins and instances
# ------------------------------------------------------------------------------------------------


def naive_js_similarity(a, b):
    """1 - the Jensen-Shannon distance (base 2), pair by pair on dense rows, as scipy's
    ``jensenshannon(x, y, base=2)`` computes it (KL to the midpoint by ``rel_entr``), its divergence
    clipped at 0 (for (nearly) equal rows it can round below 0, where scipy returns NaN)."""
    def distance(x, y):
        m = (x + y) / 2
        divergence = (rel_entr(x, m).sum() + rel_entr(y, m).sum()) / 2 / np.log(2)
        return np.sqrt(max(divergence, 0.0))

    return np.array([[1 - distance(x, y) for y in b] for x in a])


def assert_same_js(similarity, expected):
    """Same JS similarities: divergences JSD = (1 - s)^2 to DIVERGENCE_EXACT everywhere, similarities to
    EXACT where JSD >= 1e-6. Closer pairs are ill-conditioned for any method: a rounding error d in
    JSD moves its square root by d / (2 sqrt(JSD)) (scipy and this module both miss the exact
    similarity of two near-identical keyword topics, JSD = 4.8e-9, by 5.8e-13, on opposite sides)."""
    assert np.abs((1 - similarity) ** 2 - (1 - expected) ** 2).max() < DIVERGENCE_EXACT
    separated = (1 - expected) ** 2 >= 1e-6
    assert np.abs(similarity - expected)[separated].max(initial=0.0) < EXACT


def naive_rbo(s, t, p):
    """RBO_ext of two equal-length lists by Webber et al.'s Eq. 32, overlap by overlap."""
    n = len(s)
    overlaps = [len(set(s[:d]) & set(t[:d])) for d in range(1, n + 1)]
    return (1 - p) / p * sum(x / d * p**d for d, x in enumerate(overlaps, start=1)) + overlaps[-1] / n * p**n


def naive_top_words_similarity(a, b, n, p=0.9):
    tops_a = [list(np.argsort(-row, kind="stable")[:n]) for row in a]
    tops_b = [list(np.argsort(-row, kind="stable")[:n]) for row in b]
    return np.array([[naive_rbo(s, t, p) for t in tops_b] for s in tops_a])


def random_constant_plus_sparse(n_rows, n_words, rng, *, small_constants=False):
    """Rows summing to 1: a random constant (0 in some rows; tiny for ``small_constants``) plus
    random stored entries, some below the constant, some rows storing nothing or everything."""
    constants, columns, values, indptr = [], [], [], [0]
    for r in range(n_rows):
        n = int(rng.choice([0, n_words, *rng.integers(1, n_words, size=4)]))
        stored = np.sort(rng.choice(n_words, size=n, replace=False))
        constant = 0.0 if r % 5 == 4 else rng.uniform(0.5, 1.5) * (1e-6 if small_constants else 1.0)
        entries = rng.gamma(0.7, size=n) * (rng.uniform(size=n) > 0.1)  # some stored zeros
        constants.append(constant)
        columns.append(stored)
        values.append(entries)
        indptr.append(indptr[-1] + n)
    matrix = ConstantPlusSparse(np.array(constants), np.array(indptr, dtype=np.int64),
                                np.concatenate(columns).astype(np.int64), np.concatenate(values), n_words)
    totals = matrix.row_sums()
    if np.any(totals == 0):  # a row of zeros has no distribution: give it a constant
        constants = np.where(totals == 0, 1.0, matrix.row_constants)
        matrix = ConstantPlusSparse(constants, matrix.indptr, matrix.indices, matrix.values, n_words)
    return matrix.normalised_rows()


def keyword_like(n_rows, n_words, rng, epsilon=1e-5):
    """E-LDA's keyword topics: p = (count + eps) / norm at stored words, eps / norm elsewhere, with
    row totals spread over six orders of magnitude (so most pairs take the series, some the merge)."""
    constants, columns, values, indptr = [], [], [], [0]
    for _ in range(n_rows):
        n = int(rng.integers(0, n_words // 2))
        counts = rng.integers(1, 50, size=n) * 10.0 ** rng.integers(0, 6)
        norm = counts.sum() + n_words * epsilon
        constants.append(epsilon / norm)
        columns.append(np.sort(rng.choice(n_words, size=n, replace=False)))
        values.append((counts + epsilon) / norm)
        indptr.append(indptr[-1] + n)
    return ConstantPlusSparse(np.array(constants), np.array(indptr, dtype=np.int64),
                              np.concatenate(columns).astype(np.int64), np.concatenate(values), n_words)


def near_series_bound(n_rows, n_words, rng):
    """Constants 1/41 to 1/20 of every stored value: pairs on both sides of the series' bound (0.05)."""
    indptr = np.concatenate([[0], np.cumsum(rng.integers(1, min(20, n_words), size=n_rows))]).astype(np.int64)
    columns = np.concatenate([np.sort(rng.choice(n_words, size=int(n), replace=False)) for n in np.diff(indptr)])
    matrix = ConstantPlusSparse(rng.uniform(0.9e-3, 1e-3, n_rows), indptr, columns.astype(np.int64),
                                rng.uniform(20.5e-3, 40e-3, indptr[-1]), n_words)
    return matrix.normalised_rows()


def permuted_rows(matrix, order):
    return matrix.take(order) if isinstance(matrix, ConstantPlusSparse) else matrix[order]


def output(matrix, vocabulary, seed):
    matrix = np.asarray(matrix)
    topics = [[vocabulary[v] for v in np.argsort(-row, kind="stable")[:3]] for row in matrix]
    documents = np.full((len(matrix), 2), 1.0 / len(matrix))
    return TopicModelOutput(model="toy", vocabulary=tuple(vocabulary), topics=topics, topic_word_matrix=matrix,
                            topic_document_matrix=documents, seed=seed)


# ------------------------------------------------------------------------------------------------
# Hand-computed examples
# ------------------------------------------------------------------------------------------------


def test_jensen_shannon_two_by_two_by_hand():
    a = np.array([[1.0, 0.0], [0.5, 0.5]])
    b = np.array([[0.0, 1.0], [1.0, 0.0]])
    # JSD([1, 0], [0, 1]) = 1 bit (disjoint) and JSD([1, 0], [1, 0]) = 0. For p = [.5, .5], q = [0, 1]:
    # m = [.25, .75], KL(p||m) = .5 log2 2 + .5 log2(2/3) = 1 - .5 log2 3, KL(q||m) = log2(4/3) = 2 - log2 3,
    # JSD = (3 - 1.5 log2 3) / 2 = 1.5 - .75 log2 3 ≈ 0.31128, and likewise against [1, 0].
    half = 1 - math.sqrt(1.5 - 0.75 * math.log2(3))
    expected = np.array([[0.0, 1.0], [half, half]])
    assert 1 - jensenshannon([0.5, 0.5], [0.0, 1.0], base=2) == pytest.approx(half, abs=EXACT)  # scipy agrees
    assert np.abs(topic_similarity(a, b) - expected).max() < EXACT
    # the same rows as constants plus stored entries: a1 is the constant 0.5 with nothing stored
    sparse_a = ConstantPlusSparse(np.array([0.0, 0.5]), np.array([0, 1, 1]), np.array([0]), np.array([1.0]), 2)
    sparse_b = ConstantPlusSparse(np.zeros(2), np.array([0, 1, 2]), np.array([1, 0]), np.array([1.0, 1.0]), 2)
    for first, second in ((sparse_a, sparse_b), (sparse_a, b), (a, sparse_b)):
        assert np.abs(topic_similarity(first, second) - expected).max() < EXACT
    score = stability(a, b, "jensen_shannon")
    # the matching pairs a0 with b1 (similarity 1) and a1 with b0 (≈ 0.442); threshold 0.5
    assert score.rows.tolist() == [0, 1] and score.columns.tolist() == [1, 0]
    assert score.mean_matched_similarity == pytest.approx((1 + half) / 2, abs=EXACT)
    assert score.share_reappearing == 0.5
    assert score.n_pairs == 2 and score.threshold == 0.5


def ranked(top, n_words=6):
    """A distribution whose top 3 words are ``top`` in that order (0.4, 0.3, 0.2), the rest equal."""
    row = np.full(n_words, 0.1 / (n_words - 3))
    row[list(top)] = [0.4, 0.3, 0.2]
    return row


def test_top_words_two_by_two_by_hand():
    a = np.array([ranked((0, 1, 2)), ranked((3, 4, 5))])
    b = np.array([ranked((1, 0, 3)), ranked((5, 4, 3))])
    # p = 0.9, N = 3: w_1 = 0.1, w_2 = 0.045, w_3 = 0.027 + 0.9^3 / 3 = 0.27; RBO = sum_d w_d X_d.
    # a0 (0 1 2) vs b0 (1 0 3): X = 0, 2, 2 -> 0.63;   a0 vs b1 (5 4 3): disjoint -> 0
    # a1 (3 4 5) vs b0: X = 0, 0, 1 -> 0.27;            a1 vs b1: X = 0, 1, 3 -> 0.045 + 0.81 = 0.855
    expected = np.array([[0.63, 0.0], [0.27, 0.855]])
    similarity = topic_similarity(a, b, "top_words", top_n=3)
    assert np.abs(similarity - expected).max() < EXACT
    score = stability(a, b, "top_words", top_n=3)
    assert score.columns.tolist() == [0, 1]
    assert score.mean_matched_similarity == pytest.approx((0.63 + 0.855) / 2, abs=EXACT)
    assert score.share_reappearing == 1.0
    assert stability(a, b, "top_words", top_n=3, threshold=0.7).share_reappearing == 0.5


# ------------------------------------------------------------------------------------------------
# Permutations, rectangles and chance
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("measure", MEASURES)
@pytest.mark.parametrize("form", ["dense", "constant_plus_sparse"])
def test_a_permutation_of_the_same_topics_scores_one(measure, form):
    rng = np.random.default_rng(3)
    if form == "dense":
        topics = rng.dirichlet(np.full(80, 0.1), size=12)
    else:
        topics = random_constant_plus_sparse(12, 80, rng, small_constants=True)
    order = rng.permutation(12)
    score = stability(topics, permuted_rows(topics, order), measure)
    assert score.mean_matched_similarity == pytest.approx(1.0, abs=EXACT)
    assert score.share_reappearing == 1.0
    assert score.n_pairs == 12
    assert np.array_equal(order[score.columns], score.rows)  # each topic found its own copy
    if measure == "jensen_shannon":
        assert np.all(score.matched_similarities == 1.0)  # identical rows: exactly 0 divergence


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("measure", MEASURES)
def test_unrelated_random_topics_score_near_chance(measure, seed):
    rng = np.random.default_rng(seed)
    a = rng.dirichlet(np.full(400, 0.1), size=30)
    b = rng.dirichlet(np.full(400, 0.1), size=30)
    score = stability(a, b, measure)
    chance = chance_stability(a, b, measure, rng=np.random.default_rng(100 + seed), draws=20)
    assert chance.n_pairs == 20
    assert abs(score.mean_matched_similarity - chance.mean_similarity) < CHANCE_TOLERANCE
    assert chance.mean_similarity < 0.3 and score.share_reappearing == chance.mean_share == 0.0
    # the same topics, perturbed, sit far above chance
    noisy = a * rng.uniform(0.8, 1.2, size=a.shape)
    noisy /= noisy.sum(axis=1, keepdims=True)
    assert stability(a, noisy[::-1], measure).mean_matched_similarity > chance.mean_similarity + 0.4


@pytest.mark.parametrize("measure", MEASURES)
def test_rectangular_runs_count_unmatched_topics_as_not_reappearing(measure):
    rng = np.random.default_rng(5)
    a = rng.dirichlet(np.full(300, 0.05), size=5)
    b = a[[3, 0, 1]]  # three of A's five topics
    for first, second in ((a, b), (b, a)):
        score = stability(first, second, measure)
        assert score.n_pairs == 3 and (score.n_topics_a, score.n_topics_b) == (len(first), len(second))
        # three matched pairs of similarity 1 over max(K_A, K_B) = 5
        assert score.mean_matched_similarity == pytest.approx(3 / 5, abs=EXACT)
        assert score.share_reappearing == pytest.approx(3 / 5)
    score = stability(a, b, measure)
    assert dict(zip(score.rows.tolist(), score.columns.tolist())) == {3: 0, 0: 1, 1: 2}


# ------------------------------------------------------------------------------------------------
# The constant-plus-sparse path against the dense one
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_constant_plus_sparse_equals_dense_and_the_naive_twins(seed):
    rng = np.random.default_rng(seed)
    n_words = int(rng.integers(5, 40))
    a = random_constant_plus_sparse(int(rng.integers(1, 9)), n_words, rng, small_constants=seed % 2 == 1)
    b = random_constant_plus_sparse(int(rng.integers(1, 9)), n_words, rng)
    dense_a, dense_b = a.toarray(), b.toarray()
    expected_js = naive_js_similarity(dense_a, dense_b)
    n = int(rng.integers(1, n_words + 1))
    expected_top = naive_top_words_similarity(dense_a, dense_b, n)
    dense_js = topic_similarity(dense_a, dense_b)
    for first, second in ((a, b), (dense_a, b), (a, dense_b), (dense_a, dense_b)):
        assert_same_js(topic_similarity(first, second), expected_js)
        assert_same_js(topic_similarity(first, second), dense_js)
        assert np.abs(topic_similarity(first, second, "top_words", top_n=n) - expected_top).max() < EXACT


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("kind", [keyword_like, near_series_bound])
def test_keyword_topics_take_the_series_and_match_the_naive_twin(kind, seed):
    rng = np.random.default_rng(seed)
    n_words = int(rng.integers(8, 60))
    a, b = kind(int(rng.integers(1, 9)), n_words, rng), kind(int(rng.integers(1, 9)), n_words, rng)
    expected = naive_js_similarity(a.toarray(), b.toarray())
    assert_same_js(topic_similarity(a, b), expected)
    assert_same_js(topic_similarity(a, b), topic_similarity(a.toarray(), b.toarray()))
    # the kernel with the series switched off (ratio 0: only c = 0 or a row storing nothing takes it)
    prepared_a = similarity_module.prepare(a, "jensen_shannon", 10, 0.9)
    prepared_b = similarity_module.prepare(b, "jensen_shannon", 10, 0.9)
    arguments = (prepared_a.arrays, prepared_a.moments, prepared_b.arrays, prepared_b.moments, n_words)
    merged = _stability_kernels.js_sparse_sparse(*arguments, 0.0)
    series = _stability_kernels.js_sparse_sparse(*arguments, _stability_kernels.SERIES_RATIO)
    assert_same_js(1 - np.sqrt(series), 1 - np.sqrt(merged))


@pytest.mark.parametrize("seed", range(4))
def test_top_word_ids_match_a_stable_argsort_with_ties(seed):
    rng = np.random.default_rng(seed)
    matrix = rng.integers(0, 4, size=(7, 15)).astype(np.float64)  # many ties
    for n in (1, 3, 14, 15):
        assert np.array_equal(top_word_ids(matrix, n), np.argsort(-matrix, axis=1, kind="stable")[:, :n])


@pytest.mark.parametrize("seed", range(3))
def test_ranked_word_lists_score_as_the_top_words_measure_of_their_matrices(seed):
    from topicbench.core.metrics.topic_similarity import ranked_words_similarity

    rng = np.random.default_rng(seed)
    a, b = rng.dirichlet(np.full(40, 0.3), size=6), rng.dirichlet(np.full(40, 0.3), size=4)
    vocabulary = np.array([f"w{v}" for v in range(40)])
    words_a, words_b = vocabulary[top_word_ids(a, 10)].tolist(), vocabulary[top_word_ids(b, 10)].tolist()
    expected = topic_similarity(a, b, "top_words", top_n=10)
    assert np.abs(ranked_words_similarity(words_a, words_b) - expected).max() < EXACT
    # a shorter list lowers N for every pair; extra words past it are not read
    short = ranked_words_similarity([words_a[0][:5]], [words_b[0] + ["extra"]], top_n=10)
    assert short[0, 0] == pytest.approx(topic_similarity(a[:1], b[:1], "top_words", top_n=5)[0, 0], abs=EXACT)
    with pytest.raises(InputError, match="at least one word"):
        ranked_words_similarity([[]], words_b)


def test_a_scipy_sparse_matrix_is_read_as_constant_zero_plus_sparse():
    import scipy.sparse as sp

    rng = np.random.default_rng(1)
    a = rng.dirichlet(np.full(30, 0.05), size=4) * (rng.uniform(size=(4, 30)) > 0.5)
    a /= a.sum(axis=1, keepdims=True)
    b = rng.dirichlet(np.full(30, 0.3), size=3)
    assert np.abs(topic_similarity(sp.csr_matrix(a), b) - naive_js_similarity(a, b)).max() < EXACT


# ------------------------------------------------------------------------------------------------
# Across seeds, chance and matching
# ------------------------------------------------------------------------------------------------


def test_seed_stability_averages_over_every_pair_of_runs():
    rng = np.random.default_rng(2)
    vocabulary = [f"w{i}" for i in range(50)]
    topics = rng.dirichlet(np.full(50, 0.05), size=2)
    runs = [output(topics, vocabulary, 11), output(topics[::-1], vocabulary, 12), output(topics[:1], vocabulary, 13)]
    summary = seed_stability(runs, "jensen_shannon")
    # pairs: (11, 12) the same two topics -> 1; (11, 13), (12, 13): one of two topics matched exactly -> 1/2
    assert summary.labels == ((11, 12), (11, 13), (12, 13))
    assert summary.n_pairs == 3
    assert summary.mean_similarity == pytest.approx(2 / 3, abs=EXACT)
    assert summary.sd_similarity == pytest.approx(math.sqrt(1 / 12), abs=EXACT)  # sd of (1, 1/2, 1/2)
    assert summary.mean_share == pytest.approx(2 / 3) and summary.sd_share == pytest.approx(math.sqrt(1 / 12))
    matrices = seed_stability([topics, topics[::-1]], "top_words", vocabularies=[vocabulary, vocabulary])
    assert matrices.labels == ((0, 1),) and matrices.mean_similarity == pytest.approx(1.0, abs=EXACT)
    assert math.isnan(matrices.sd_similarity)


def test_runs_over_different_vocabularies_are_refused():
    rng = np.random.default_rng(4)
    topics = rng.dirichlet(np.full(4, 0.5), size=2)
    runs = [output(topics, ["a", "b", "c", "d"], 0), output(topics, ["a", "b", "x", "d"], 1)]
    with pytest.raises(InputError, match=r"run 1's vocabulary differs from run 0's at word 2 \('x' vs 'c'\)"):
        seed_stability(runs)
    with pytest.raises(InputError, match="vocabulary differs"):
        seed_stability([topics, topics], vocabularies=[["a", "b", "c", "d"], ["a", "b", "c", "e"]])
    with pytest.raises(InputError, match="run A has 4 words and run B 3"):
        stability(topics, np.full((2, 3), 1 / 3))
    with pytest.raises(InputError, match="run 1 has 3 words and run 0 4"):
        seed_stability([topics, np.full((2, 3), 1 / 3)])
    with pytest.raises(InputError, match="two or more runs"):
        seed_stability(runs[:1])


def test_chance_is_reproducible_and_shuffles_keep_each_topic_s_values():
    rng = np.random.default_rng(6)
    sparse = random_constant_plus_sparse(6, 25, rng)
    dense = sparse.toarray()
    first = chance_stability(dense, sparse, "jensen_shannon", rng=np.random.default_rng(9), draws=3)
    again = chance_stability(dense, sparse, "jensen_shannon", rng=np.random.default_rng(9), draws=3)
    assert first.as_dict() == again.as_dict() and first.labels == (("a", 0), ("a", 1), ("a", 2))
    shuffled = shuffled_words(sparse, np.random.default_rng(0))
    assert isinstance(shuffled, ConstantPlusSparse)
    assert np.array_equal(np.sort(shuffled.toarray(), axis=1), np.sort(dense, axis=1))
    assert np.array_equal(np.sort(shuffled_words(dense, np.random.default_rng(0)), axis=1), np.sort(dense, axis=1))


def test_match_topics_maximises_the_total_and_allows_rectangles():
    similarity = np.array([[0.9, 0.8, 0.1], [0.85, 0.2, 0.3]])
    rows, columns, matched = match_topics(similarity)
    # greedy would take 0.9 then 0.3 (1.2); the best total is 0.8 + 0.85 = 1.65
    assert rows.tolist() == [0, 1] and columns.tolist() == [1, 0] and matched.tolist() == [0.8, 0.85]
    with pytest.raises(InputError, match="NaN or infinite"):
        match_topics([[0.1, np.nan]])
    with pytest.raises(InputError, match="non-empty 2-d"):
        match_topics(np.zeros((0, 3)))


def test_bad_inputs_name_the_problem():
    topics = np.full((2, 4), 0.25)
    with pytest.raises(InputError, match="unknown stability measure 'cosine'"):
        stability(topics, topics, "cosine")
    with pytest.raises(InputError, match="top_n = 5 exceeds the vocabulary of 4 words"):
        stability(topics, topics, "top_words", top_n=5)
    with pytest.raises(InputError, match="must sum to 1"):
        stability(topics * 2, topics)
    with pytest.raises(InputError, match="threshold must be a similarity in"):
        stability(topics, topics, threshold=1.5)
    unsorted = ConstantPlusSparse(np.array([0.1]), np.array([0, 2]), np.array([3, 1]), np.array([0.4, 0.4]), 4)
    with pytest.raises(InputError, match="ascending and distinct"):
        stability(unsorted, topics[:1])
    with pytest.raises(InputError, match="numpy Generator"):
        chance_stability(topics, topics, rng=0)


@pytest.mark.parametrize("module", [stability_module, similarity_module], ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted and result.failed == 0
