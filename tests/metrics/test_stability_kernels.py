"""The Jensen-Shannon kernel of constant-plus-sparse topics against its pair-by-pair twin.

:func:`~topicbench.core.metrics.stability_kernels.js_sparse_sparse` finds each pair's shared
words through the second matrix's stored entries by column; its twin below is the kernel it
replaced, which walks the second row's stored words for every pair. Both sum the same terms in the
same order, so the divergences must agree to the bit (the report's numbers stay what they were),
on every kind of row: keyword topics (the series), constants near the series' bound (some pairs
merged exactly), zero constants, rows storing nothing or everything, and stored zeros.
"""

from __future__ import annotations

import numba as nb
import numpy as np
import pytest

from topicbench.core.metrics import stability_kernels as kernels
from topicbench.core.metrics import topic_similarity as similarity_module

from test_metrics_stability import keyword_like, near_series_bound, random_constant_plus_sparse


@nb.njit(cache=False)
def pairwise_js_sparse_sparse(a, a_moments, b, b_moments, n_columns, series_ratio):
    """The replaced kernel: per pair, a pass over row j's stored words finds the shared ones."""
    n_a, n_b = a.constants.shape[0], b.constants.shape[0]
    n_terms = a_moments.scaled.shape[1] + 1
    out = np.empty((n_a, n_b), dtype=np.float64)
    for i in range(n_a):
        ca, ca_log = a.constants[i], a.constants_log[i]
        a_start, a_stop = a.indptr[i], a.indptr[i + 1]
        position = np.full(n_columns, -1, dtype=np.int64)
        for p in range(a_start, a_stop):
            position[a.indices[p]] = p
        removed_a, removed_b = np.zeros(n_terms - 1), np.zeros(n_terms - 1)
        for j in range(n_b):
            cb, cb_log = b.constants[j], b.constants_log[j]
            b_start, b_stop = b.indptr[j], b.indptr[j + 1]
            if not (kernels._series_applies(cb, a_moments.smallest[i], series_ratio)
                    and kernels._series_applies(ca, b_moments.smallest[j], series_ratio)):
                out[i, j] = kernels._clip_half(kernels._pair_exact(a, i, b, j, n_columns))
                continue
            a_terms = kernels._terms_needed(cb / a_moments.smallest[i], n_terms) if cb > 0.0 else 2
            b_terms = kernels._terms_needed(ca / b_moments.smallest[j], n_terms) if ca > 0.0 else 2
            total, shared, a_x, a_log, b_x, b_log = 0.0, 0, 0.0, 0.0, 0.0, 0.0
            removed_a[:] = 0.0
            removed_b[:] = 0.0
            for q in range(b_start, b_stop):
                p = position[b.indices[q]]
                if p < 0:
                    continue
                x, y = a.values[p], b.values[q]
                total += kernels._term(x, y, a.values_log[p], b.values_log[q])
                shared += 1
                a_x += x
                b_x += y
                if cb > 0.0:
                    a_log += a_moments.log2[p]
                    kernels._add_powers(removed_a, x, a_moments.smallest[i], a_terms)
                if ca > 0.0:
                    b_log += b_moments.log2[q]
                    kernels._add_powers(removed_b, y, b_moments.smallest[j], b_terms)
            total += kernels._unshared_sum(a_stop - a_start - shared, (cb, cb_log), a_moments.smallest[i],
                                           a_moments.sums[i] - a_x, a_moments.sum_logs[i] - a_log,
                                           a_moments.scaled[i], removed_a, a_terms)
            total += kernels._unshared_sum(b_stop - b_start - shared, (ca, ca_log), b_moments.smallest[j],
                                           b_moments.sums[j] - b_x, b_moments.sum_logs[j] - b_log,
                                           b_moments.scaled[j], removed_b, b_terms)
            neither = n_columns - (a_stop - a_start) - (b_stop - b_start) + shared
            total += neither * kernels._term(ca, cb, ca_log, cb_log)
            out[i, j] = kernels._clip_half(total)
    return out


def _prepared(matrix):
    return similarity_module.prepare(matrix, "jensen_shannon", 10, 0.9)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("kind", [keyword_like, near_series_bound, random_constant_plus_sparse])
def test_column_walk_equals_the_pairwise_kernel_to_the_bit(kind, seed):
    rng = np.random.default_rng(seed)
    n_words = int(rng.integers(5, 90))
    # more rows than ROW_BLOCKS on some seeds: rows of one block share its sums, zeroed between rows
    n_rows = int(rng.integers(1, 12)) if seed % 3 else kernels.ROW_BLOCKS + int(rng.integers(1, 40))
    a, b = kind(n_rows, n_words, rng), kind(int(rng.integers(1, 12)), n_words, rng)
    prepared_a, prepared_b = _prepared(a), _prepared(b)
    for ratio in (0.0, kernels.SERIES_RATIO, 1.0):  # the series never, as the module's, and far past its bound
        arguments = (prepared_a.arrays, prepared_a.moments, prepared_b.arrays, prepared_b.moments, n_words, ratio)
        expected = pairwise_js_sparse_sparse(*arguments)
        assert np.array_equal(kernels.js_sparse_sparse(*arguments), expected)
        swapped = (prepared_b.arrays, prepared_b.moments, prepared_a.arrays, prepared_a.moments, n_words, ratio)
        assert np.array_equal(kernels.js_sparse_sparse(*swapped), pairwise_js_sparse_sparse(*swapped))


def test_column_rows_lists_each_columns_rows_in_order():
    a = keyword_like(7, 30, np.random.default_rng(1))
    prepared = _prepared(a)
    columns = kernels.column_rows(prepared.arrays, prepared.moments, 30)
    dense = a.toarray()
    stored = np.zeros_like(dense, dtype=bool)
    for r in range(7):
        stored[r, a.indices[a.indptr[r]:a.indptr[r + 1]]] = True
    for v in range(30):
        rows = columns.rows[columns.starts[v]:columns.starts[v + 1]]
        assert rows.tolist() == np.flatnonzero(stored[:, v]).tolist()
        assert np.array_equal(columns.values[columns.starts[v]:columns.starts[v + 1]], dense[rows, v])
