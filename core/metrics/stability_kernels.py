"""numba kernels of topic stability: Jensen-Shannon divergences between all pairs of topics of two
runs (private; arrays in, arrays out; :mod:`topicbench.core.metrics.stability` validates).

Each pair's divergence, in bits, is summed word by word from

    f(x, y) = x log2 x + y log2 y - (x + y) log2((x + y) / 2)          (f(0, 0) = 0),

so JSD(p, q) = 1/2 sum_v f(p_v, q_v). The x log2 x terms are computed once per entry
(:func:`x_log2_x`), which leaves one logarithm per word and pair. f(x, x) is exactly 0 in floating
point ((x + x) / 2 is x, and doubling commutes with rounding), so identical topics get exactly 0:
a summed-entropy form would leave rounding noise there that the square root of the JS distance
blows up to about 1e-8.

A row of a constant-plus-sparse matrix takes its constant at every column it does not store, so a
pair of such rows is summed over the union of their stored columns (a merge of two sorted lists),
plus f(c_a, c_b) times the number of columns neither stores (:func:`_pair_exact`).

The words one row alone stores take the other row's constant c, and when c is small next to them
(E-LDA's keyword topics: a stored p is at least (1 + eps) / eps = 1e5 times the row's own constant)
their sum comes from the row's moments instead of a pass over them. With u = c / x,

    f(x, c) = c log2 c - c log2 x + x + c - x (1 + u) ln(1 + u) / ln 2,
    x (1 + u) ln(1 + u) = c + sum_{k>=2} (-1)^k c^k x^(1-k) / (k (k - 1))      (|u| < 1),

so sum_v f(x_v, c) over a set of words needs only its size, sum x, sum log2 x and the moments
N_k = sum x (x_min / x)^k (scaled by the row's smallest stored value, so they never overflow;
c^k sum x^(1-k) = (c / x_min)^k N_k). A pair then costs a pass over one row's stored words to find
the shared ones, whose exact terms are added and whose moments are taken off. The series is used
when c <= SERIES_RATIO x_min for both rows (or c = 0, where f(x, 0) = x), with the fewest terms
whose first left out, (1 / ln 2) u^(m+1) N_(m+1) / ((m + 1) m) <= 1.5 u^(m+1) / ((m + 1) m) with
u = c / x_min, is below 1.5e-18, far under rounding (u = 1e-5, E-LDA's usual, needs 3 terms; u =
0.05 needs 12, SERIES_TERMS). Any other pair is merged exactly.
"""

from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from topicbench.core.kernel_cache import load_cached_kernels_directly

_PARALLEL = dict(parallel=True, cache=True, nogil=True)
_SERIAL = dict(cache=True, nogil=True)
LN2 = np.log(2.0)

#: The series for the words one row alone stores is used when the other row's constant is at most
#: this share of the row's smallest stored value ...
SERIES_RATIO = 0.05
#: ... with the terms k = 2..SERIES_TERMS (see the module docstring for the error bound).
SERIES_TERMS = 12
#: Blocks of rows :func:`js_sparse_sparse` shares among its threads (a block holds a row's sums
#: against every row of B): enough to balance 32 threads, few enough that allocating them is free.
ROW_BLOCKS = 64


class SparseRows(NamedTuple):
    """A constant-plus-sparse matrix as the kernels read it: per row its constant (and the
    constant's x log2 x), CSR ``indptr``/``indices`` of its stored columns (sorted per row), and
    the stored values (and their x log2 x)."""

    constants: np.ndarray
    constants_log: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    values_log: np.ndarray


class RowMoments(NamedTuple):
    """What the series reads of each row of a :class:`SparseRows` (:func:`row_moments`): log2 of
    each stored value (0 where it is 0), then per row its smallest stored value, their sum, the sum
    of their log2 and the scaled moments N_k, k = 2..SERIES_TERMS."""

    log2: np.ndarray
    smallest: np.ndarray
    sums: np.ndarray
    sum_logs: np.ndarray
    scaled: np.ndarray


@nb.njit(**_SERIAL)
def _xlx(x):
    return x * np.log2(x) if x > 0.0 else 0.0


@nb.njit(**_SERIAL)
def _term(x, y, x_log_x, y_log_y):
    """f(x, y) of the module docstring, given x log2 x and y log2 y."""
    total = x + y
    if total <= 0.0:
        return 0.0
    return x_log_x + y_log_y - total * np.log2(0.5 * total)


@nb.njit(**_PARALLEL)
def x_log2_x(values):
    """x log2 x of every entry of a 1-d array (0 at 0)."""
    out = np.empty(values.shape[0], dtype=np.float64)
    for i in nb.prange(values.shape[0]):
        out[i] = _xlx(values[i])
    return out


@nb.njit(**_SERIAL)
def _clip_half(total):
    """JSD = total / 2, clipped to [0, 1] bit (rounding can step outside by about 1e-16)."""
    return min(max(0.5 * total, 0.0), 1.0)


@nb.njit(**_PARALLEL)
def js_dense_dense(a, a_log_a, b, b_log_b):
    """(rows of a, rows of b) JS divergences (bits) of two dense row-stochastic matrices."""
    n_a, n_b, n_columns = a.shape[0], b.shape[0], a.shape[1]
    out = np.empty((n_a, n_b), dtype=np.float64)
    for i in nb.prange(n_a):
        for j in range(n_b):
            total = 0.0
            for v in range(n_columns):
                total += _term(a[i, v], b[j, v], a_log_a[i, v], b_log_b[j, v])
            out[i, j] = _clip_half(total)
    return out


@nb.njit(**_PARALLEL)
def js_sparse_dense(a, b, b_log_b):
    """JS divergences between the rows of a constant-plus-sparse matrix ``a`` (:class:`SparseRows`)
    and those of a dense one: each pair walks every column, taking the sparse row's constant
    between its stored columns."""
    n_a, n_b, n_columns = a.constants.shape[0], b.shape[0], b.shape[1]
    indices, values, values_log = a.indices, a.values, a.values_log
    out = np.empty((n_a, n_b), dtype=np.float64)
    for i in nb.prange(n_a):
        c, c_log = a.constants[i], a.constants_log[i]
        start, stop = a.indptr[i], a.indptr[i + 1]
        for j in range(n_b):
            total = 0.0
            p = start
            for v in range(n_columns):
                if p < stop and indices[p] == v:
                    total += _term(values[p], b[j, v], values_log[p], b_log_b[j, v])
                    p += 1
                else:
                    total += _term(c, b[j, v], c_log, b_log_b[j, v])
            out[i, j] = _clip_half(total)
    return out


@nb.njit(**_SERIAL)
def _pair_exact(a, i, b, j, n_columns):
    """sum_v f(a_v, b_v) of row ``i`` of ``a`` and row ``j`` of ``b`` (:class:`SparseRows`): a merge
    of their stored columns, and the columns neither stores in closed form."""
    ca, ca_log, cb, cb_log = a.constants[i], a.constants_log[i], b.constants[j], b.constants_log[j]
    a_start, a_stop, b_start, b_stop = a.indptr[i], a.indptr[i + 1], b.indptr[j], b.indptr[j + 1]
    a_indices, a_values, a_values_log = a.indices, a.values, a.values_log
    b_indices, b_values, b_values_log = b.indices, b.values, b.values_log
    p, q = a_start, b_start
    total = 0.0
    shared = 0
    while p < a_stop and q < b_stop:
        if a_indices[p] == b_indices[q]:
            total += _term(a_values[p], b_values[q], a_values_log[p], b_values_log[q])
            shared += 1
            p += 1
            q += 1
        elif a_indices[p] < b_indices[q]:
            total += _term(a_values[p], cb, a_values_log[p], cb_log)
            p += 1
        else:
            total += _term(ca, b_values[q], ca_log, b_values_log[q])
            q += 1
    for rest in range(p, a_stop):
        total += _term(a_values[rest], cb, a_values_log[rest], cb_log)
    for rest in range(q, b_stop):
        total += _term(ca, b_values[rest], ca_log, b_values_log[rest])
    neither = n_columns - (a_stop - a_start) - (b_stop - b_start) + shared
    return total + neither * _term(ca, cb, ca_log, cb_log)


@nb.njit(**_PARALLEL)
def row_moments(indptr, values, n_terms):
    """Per row of stored values x: x_min (inf if none), sum x, sum log2 x, and the scaled moments
    N_k = sum x (x_min / x)^k, k = 2..n_terms (log and moments 0 where x_min is 0)."""
    n_rows = indptr.shape[0] - 1
    x_min = np.full(n_rows, np.inf)
    sum_x = np.zeros(n_rows)
    sum_log = np.zeros(n_rows)
    scaled = np.zeros((n_rows, n_terms - 1))
    for r in nb.prange(n_rows):
        for p in range(indptr[r], indptr[r + 1]):
            x_min[r] = min(x_min[r], values[p])
            sum_x[r] += values[p]
        if x_min[r] > 0.0 and x_min[r] < np.inf:
            for p in range(indptr[r], indptr[r + 1]):
                sum_log[r] += np.log2(values[p])
                _add_powers(scaled[r], values[p], x_min[r], n_terms)
    return x_min, sum_x, sum_log, scaled


@nb.njit(**_SERIAL)
def _add_powers(out, x, x_min, n_terms):
    """out[k - 2] += x (x_min / x)^k for k = 2..n_terms."""
    ratio = x_min / x
    power = x * ratio
    for k in range(n_terms - 1):
        power *= ratio
        out[k] += power


@nb.njit(**_SERIAL)
def _add_powers_at(out, row, x, x_min, n_terms):
    """:func:`_add_powers` into row ``row`` of a 2-d ``out`` (no view made per call)."""
    ratio = x_min / x
    power = x * ratio
    for k in range(n_terms - 1):
        power *= ratio
        out[row, k] += power


@nb.njit(**_SERIAL)
def _terms_needed(u, most):
    """The fewest terms m (2 <= m <= most) whose first omitted one, u^(m+1) / ((m+1) m), is below
    1e-18 (times sum x / ln 2 <= 1.5: far under rounding); u <= SERIES_RATIO needs at most 12."""
    m = 2
    power = u * u * u
    while m < most and power / ((m + 1) * m) > 1e-18:
        m += 1
        power *= u
    return m


@nb.njit(**_SERIAL)
def _series_applies(c, x_min, series_ratio):
    """Whether sum f(x, c) over a row's words may be taken from its moments: c = 0 (then it is
    sum x), a row storing nothing (x_min = inf), or c <= series_ratio * x_min."""
    if c == 0.0 or x_min == np.inf:
        return True
    return x_min > 0.0 and c <= series_ratio * x_min


@nb.njit(**_SERIAL)
def _unshared_sum(n_unshared, constant, x_min, sum_x, sum_log, scaled, removed, n_terms):
    """sum f(x_v, c) over n_unshared stored words of a row, from their moments (series of the
    module docstring; ``constant`` = (c, c log2 c); N_k = ``scaled[k - 2] - removed[k - 2]``,
    k = 2..n_terms)."""
    c, c_log = constant
    if n_unshared == 0:
        return 0.0
    if c == 0.0:
        return sum_x
    u = c / x_min
    series = 0.0
    power = u
    sign = 1.0
    for k in range(2, n_terms + 1):
        power *= u
        series += sign * power * (scaled[k - 2] - removed[k - 2]) / (k * (k - 1))
        sign = -sign
    return n_unshared * (c_log + c * (1.0 - 1.0 / LN2)) - c * sum_log + sum_x - series / LN2


class ColumnRows(NamedTuple):
    """A :class:`SparseRows`' stored entries by column (:func:`column_rows`): column v's entries
    are those at ``starts[v]:starts[v + 1]`` of ``rows`` (ascending), ``values``, ``values_log``
    (x log2 x) and ``log2``, copied in this order so that a pass over a column reads memory in
    order."""

    starts: np.ndarray
    rows: np.ndarray
    values: np.ndarray
    values_log: np.ndarray
    log2: np.ndarray


class PairSums(NamedTuple):
    """One row of A against every row j of B, summed over their shared stored words: per j,
    whether the series applies (else the pair is merged exactly), its terms for A's and B's row,
    how many words are shared, (sum f, sum x, sum y, sum log2 x, sum log2 y) over them, and the
    moments taken off A's and B's row."""

    series: np.ndarray
    terms: np.ndarray
    shared: np.ndarray
    sums: np.ndarray
    removed_a: np.ndarray
    removed_b: np.ndarray


@nb.njit(**_SERIAL)
def column_rows(b, b_moments, n_columns):
    """:class:`ColumnRows` of the stored entries of ``b`` (:class:`SparseRows`, with its
    :class:`RowMoments`) over ``n_columns``."""
    indptr, indices = b.indptr, b.indices
    starts = np.zeros(n_columns + 1, dtype=np.int64)
    for p in range(indices.shape[0]):
        starts[indices[p] + 1] += 1
    starts = np.cumsum(starts)
    fill = starts[:-1].copy()
    columns = ColumnRows(starts, np.empty(indices.shape[0], dtype=np.int64), np.empty(indices.shape[0]),
                         np.empty(indices.shape[0]), np.empty(indices.shape[0]))
    for r in range(indptr.shape[0] - 1):
        for q in range(indptr[r], indptr[r + 1]):
            at = fill[indices[q]]
            columns.rows[at] = r
            columns.values[at], columns.values_log[at] = b.values[q], b.values_log[q]
            columns.log2[at] = b_moments.log2[q]
            fill[indices[q]] += 1
    return columns


@nb.njit(**_SERIAL)
def _choose_paths(i, a_moments, b, b_moments, constant_a, series_ratio, pair):
    """Per row j of B, whether the pair (i, j) takes the series and with how many terms for each
    row (``constant_a``: row i's constant; as :func:`_series_applies` and :func:`_terms_needed`)."""
    n_terms = a_moments.scaled.shape[1] + 1
    a_min = a_moments.smallest[i]
    for j in range(b.constants.shape[0]):
        cb = b.constants[j]
        pair.series[j] = (_series_applies(cb, a_min, series_ratio)
                          and _series_applies(constant_a, b_moments.smallest[j], series_ratio))
        if pair.series[j]:
            pair.terms[j, 0] = _terms_needed(cb / a_min, n_terms) if cb > 0.0 else 2
            pair.terms[j, 1] = _terms_needed(constant_a / b_moments.smallest[j], n_terms) if constant_a > 0.0 else 2


@nb.njit(**_SERIAL)
def _add_shared(a, a_moments, i, b, b_moments, columns, pair):
    """Add the shared stored words of row i of A and each row of B taking the series into
    ``pair``: A's stored words in ascending column order, so each pair sums its shared words in
    the order a walk over either row's stored columns meets them."""
    ca = a.constants[i]
    for p in range(a.indptr[i], a.indptr[i + 1]):
        v = a.indices[p]
        for k in range(columns.starts[v], columns.starts[v + 1]):
            j = columns.rows[k]
            if not pair.series[j]:
                continue
            x, y = a.values[p], columns.values[k]
            pair.sums[j, 0] += _term(x, y, a.values_log[p], columns.values_log[k])
            pair.shared[j] += 1
            pair.sums[j, 1] += x
            pair.sums[j, 2] += y
            if b.constants[j] > 0.0:  # the moments are read only then
                pair.sums[j, 3] += a_moments.log2[p]
                _add_powers_at(pair.removed_a, j, x, a_moments.smallest[i], pair.terms[j, 0])
            if ca > 0.0:
                pair.sums[j, 4] += columns.log2[k]
                _add_powers_at(pair.removed_b, j, y, b_moments.smallest[j], pair.terms[j, 1])


@nb.njit(**_SERIAL)
def _finish_row(a, a_moments, i, b, b_moments, pair, n_columns, out):
    """JS divergences of row i of A with every row of B into ``out``: a pair taking the series
    from its shared sums and both rows' moments, any other by the exact merge; ``pair`` is zeroed
    again for the next row."""
    ca, ca_log = a.constants[i], a.constants_log[i]
    a_stored = a.indptr[i + 1] - a.indptr[i]
    for j in range(b.constants.shape[0]):
        if not pair.series[j]:
            out[j] = _clip_half(_pair_exact(a, i, b, j, n_columns))
            continue
        cb, cb_log = b.constants[j], b.constants_log[j]
        b_stored = b.indptr[j + 1] - b.indptr[j]
        shared, sums = pair.shared[j], pair.sums[j]
        total = sums[0]
        total += _unshared_sum(a_stored - shared, (cb, cb_log), a_moments.smallest[i], a_moments.sums[i] - sums[1],
                               a_moments.sum_logs[i] - sums[3], a_moments.scaled[i], pair.removed_a[j],
                               pair.terms[j, 0])
        total += _unshared_sum(b_stored - shared, (ca, ca_log), b_moments.smallest[j], b_moments.sums[j] - sums[2],
                               b_moments.sum_logs[j] - sums[4], b_moments.scaled[j], pair.removed_b[j],
                               pair.terms[j, 1])
        total += (n_columns - a_stored - b_stored + shared) * _term(ca, cb, ca_log, cb_log)
        out[j] = _clip_half(total)
        if shared:
            pair.shared[j] = 0
            sums[:] = 0.0
            pair.removed_a[j, :] = 0.0
            pair.removed_b[j, :] = 0.0


@nb.njit(**_SERIAL)
def js_sparse_sparse(a, a_moments, b, b_moments, n_columns, series_ratio):
    """JS divergences between the rows of two constant-plus-sparse matrices (:class:`SparseRows`,
    with their :class:`RowMoments`).

    A pair whose constants are small next to the other row's stored values (or 0; see
    :func:`_series_applies`) is summed over its shared stored words only, the words one row alone
    stores coming from that row's moments minus the shared words' (the series of the module
    docstring); any other pair by the exact merge (:func:`_pair_exact`). The shared words are
    found through B's stored entries by column (:func:`column_rows`): a row of A costs its stored
    words times the rows of B storing each, plus a constant per row of B, not a pass over every
    row of B's stored words.
    """
    out = np.empty((a.constants.shape[0], b.constants.shape[0]), dtype=np.float64)
    _js_blocks(a, a_moments, b, b_moments, column_rows(b, b_moments, n_columns), series_ratio, out)
    return out


@nb.njit(**_PARALLEL)
def _js_blocks(a, a_moments, b, b_moments, columns, series_ratio, out):
    """:func:`js_sparse_sparse` in parallel over blocks of A's rows (i, i + n_blocks, ...), each
    block with its own :class:`PairSums`."""
    n_blocks = min(out.shape[0], ROW_BLOCKS)
    for block in nb.prange(n_blocks):
        _block_rows(a, a_moments, b, b_moments, columns, series_ratio, (block, n_blocks), out)


@nb.njit(**_SERIAL)
def _block_rows(a, a_moments, b, b_moments, columns, series_ratio, span, out):
    """Rows ``span[0]``, ``span[0] + span[1]``, ... of :func:`js_sparse_sparse`'s ``out``."""
    n_b, n_terms = b.constants.shape[0], a_moments.scaled.shape[1] + 1
    pair = PairSums(np.zeros(n_b, dtype=np.bool_), np.full((n_b, 2), 2, dtype=np.int64),
                    np.zeros(n_b, dtype=np.int64), np.zeros((n_b, 5)), np.zeros((n_b, n_terms - 1)),
                    np.zeros((n_b, n_terms - 1)))
    for i in range(span[0], out.shape[0], span[1]):
        _choose_paths(i, a_moments, b, b_moments, a.constants[i], series_ratio, pair)
        _add_shared(a, a_moments, i, b, b_moments, columns, pair)
        _finish_row(a, a_moments, i, b, b_moments, pair, columns.starts.shape[0] - 1, out[i])


# a cached kernel loads without numba's compiler start-up (0.3-0.5 s a process): see _kernel_cache
load_cached_kernels_directly(globals())
