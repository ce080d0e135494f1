"""Matrices whose rows are a constant plus a few stored entries, as keyword topics are.

A keyword topic's p(v | t) takes one value for every word that never co-occurs with its keyword
and its own value for each word that does (:mod:`topicbench.core.elda.generators`). E-LDA keeps
thousands of such topics (about 8,000 on reuters): as a dense |topics| x |V| array that is 1.5 GB,
as a constant per row plus the stored entries a fraction of it. :class:`ConstantPlusSparse` is
that form, with what the output contract and the metrics read from it (row sums, entries at
(row, column) pairs, products with a dense matrix, an elementwise map such as the log) and
:meth:`~ConstantPlusSparse.toarray` for a user who asks for the dense matrix.

>>> m = ConstantPlusSparse(np.array([0.1, 0.25]), np.array([0, 1, 3]), np.array([2, 0, 1]),
...                        np.array([0.8, 0.5, 0.25]), n_columns=3)
>>> m.toarray().tolist()
[[0.1, 0.1, 0.8], [0.5, 0.25, 0.25]]
>>> m.row_sums().tolist()
[1.0, 1.0]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # scipy.sparse is imported where used: `topicbench elda` never needs it
    import scipy.sparse as sp

from .corpus import segment_ids
from .validation import InputError


@dataclass(frozen=True, eq=False)
class ConstantPlusSparse:
    """A matrix whose row r is ``row_constants[r]`` except at its stored entries.

    Parameters
    ----------
    row_constants : ndarray of float64, shape (n_rows,)
        Each row's value at every column it does not store.
    indptr, indices, values : ndarrays
        The stored entries as CSR rows: row r stores ``values[indptr[r]:indptr[r + 1]]`` at the
        columns ``indices[indptr[r]:indptr[r + 1]]`` (sorted, distinct).
    n_columns : int
    """

    row_constants: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    n_columns: int

    def __post_init__(self):
        n_rows = len(self.row_constants)
        if len(self.indptr) != n_rows + 1 or self.indptr[0] != 0 or len(self.indices) != self.indptr[-1]:
            raise InputError(
                f"a constant-plus-sparse matrix of {n_rows} rows needs indptr of {n_rows + 1} entries from 0 "
                f"to the number of stored entries; got {len(self.indptr)} entries ending at {self.indptr[-1]} "
                f"for {len(self.indices)} stored entries"
            )
        if len(self.values) != len(self.indices):
            raise InputError(f"{len(self.values)} stored values for {len(self.indices)} stored columns")
        if len(self.indices) and (self.indices.min() < 0 or self.indices.max() >= self.n_columns):
            raise InputError(f"stored columns must lie in [0, {self.n_columns - 1}]")

    # -- shape and size ------------------------------------------------------------------------

    ndim = 2
    dtype = np.dtype(np.float64)
    #: numpy's operators defer to this class (``dense @ matrix`` calls :meth:`__rmatmul__`)
    #: instead of making it dense through ``__array__``.
    __array_ufunc__ = None

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.row_constants), int(self.n_columns))

    @property
    def n_stored(self) -> int:
        return int(self.indptr[-1])

    @property
    def nbytes(self) -> int:
        """Bytes held (the dense matrix would take ``8 * rows * columns``)."""
        return sum(a.nbytes for a in (self.row_constants, self.indptr, self.indices, self.values))

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def stored(self) -> sp.csr_matrix:
        """The stored entries as a scipy CSR matrix (zeros elsewhere; shares the arrays)."""
        import scipy.sparse as sp

        return sp.csr_matrix((self.values, self.indices, self.indptr), shape=self.shape, copy=False)

    @property
    def _rows_of_stored(self) -> np.ndarray:
        return segment_ids(self.indptr)

    # -- dense on request ----------------------------------------------------------------------

    def row(self, r: int) -> np.ndarray:
        """Row ``r`` as a dense vector."""
        out = np.full(self.n_columns, self.row_constants[r], dtype=np.float64)
        span = slice(self.indptr[r], self.indptr[r + 1])
        out[self.indices[span]] = self.values[span]
        return out

    def toarray(self) -> np.ndarray:
        """The dense matrix (rows x columns): only for a user who asks for it (``to_octis()``)."""
        out = np.repeat(self.row_constants[:, None], self.n_columns, axis=1).astype(np.float64)
        out[self._rows_of_stored, self.indices] = self.values
        return out

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("a ConstantPlusSparse matrix cannot be viewed as a dense array without a copy")
        dense = self.toarray()
        return dense if dtype is None else dense.astype(dtype)

    # -- what the contract and the metrics read ------------------------------------------------

    def take(self, rows) -> "ConstantPlusSparse":
        """The given rows, in the given order."""
        rows = np.asarray(rows, dtype=np.int64)
        lengths = np.diff(self.indptr)[rows]
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        positions = np.repeat(self.indptr[rows] - indptr[:-1], lengths) + np.arange(indptr[-1], dtype=np.int64)
        return ConstantPlusSparse(
            self.row_constants[rows].astype(np.float64), indptr, self.indices[positions],
            self.values[positions].astype(np.float64), self.n_columns,
        )

    def unstored_counts(self) -> np.ndarray:
        """How many columns of each row take the row's constant."""
        return self.n_columns - np.diff(self.indptr)

    def row_sums(self) -> np.ndarray:
        stored = np.bincount(self._rows_of_stored, weights=self.values, minlength=len(self.row_constants))
        return self.row_constants * self.unstored_counts() + stored

    def all_finite(self) -> bool:
        return bool(np.all(np.isfinite(self.row_constants)) and np.all(np.isfinite(self.values)))

    def min(self) -> float:
        """The smallest entry (a row's constant counts only where the row leaves a column unstored)."""
        constants = self.row_constants[self.unstored_counts() > 0]
        return float(min(constants.min(initial=np.inf), self.values.min(initial=np.inf)))

    def map(self, function) -> "ConstantPlusSparse":
        """``function`` applied to every entry (an elementwise ufunc such as ``np.log``)."""
        return ConstantPlusSparse(
            np.asarray(function(self.row_constants), dtype=np.float64), self.indptr, self.indices,
            np.asarray(function(self.values), dtype=np.float64), self.n_columns,
        )

    def entries(self, rows, columns) -> np.ndarray:
        """The entries at the (row, column) pairs."""
        rows = np.asarray(rows, dtype=np.int64)
        columns = np.asarray(columns, dtype=np.int64)
        out = self.row_constants[rows].astype(np.float64)
        if self.n_stored == 0:
            return out
        n_columns = np.int64(self.n_columns)
        stored_keys = self._rows_of_stored * n_columns + self.indices  # ascending: rows, then sorted columns
        keys = rows * n_columns + columns
        at = np.minimum(np.searchsorted(stored_keys, keys), len(stored_keys) - 1)
        found = stored_keys[at] == keys
        out[found] = self.values[at[found]]
        return out

    def __rmatmul__(self, left) -> np.ndarray:
        """``left @ self`` as a dense (n, columns) array, for a dense ``left`` of shape (n, rows)."""
        left = np.asarray(left, dtype=np.float64)
        if left.ndim != 2 or left.shape[1] != self.shape[0]:
            raise InputError(f"cannot multiply a {left.shape} matrix by a {self.shape} one")
        import scipy.sparse as sp

        # self = constants (every column) + (stored value - constant) at the stored entries
        excess = sp.csr_matrix(
            (self.values - self.row_constants[self._rows_of_stored], self.indices, self.indptr), shape=self.shape,
        )
        product = np.asarray((excess.T @ left.T).T)  # sparse x dense: no dense copy of self
        product += (left @ self.row_constants)[:, None]
        return product

    def top_columns(self, n: int) -> list[np.ndarray]:
        """Each row's ``n`` largest entries' columns, largest first, ties by lower column: what
        ``np.argsort(-row, kind="stable")[:n]`` gives, without the dense rows."""
        # imported here: every module that names a model's output imports this one, and numba's
        # import (0.3-1 s of CPU) belongs to the fit and the scoring, not to a command's start
        import numba

        from topicbench.core.elda.kernels.readout import rows_top_entries

        width = min(int(n), self.n_columns)
        above, counts = rows_top_entries(
            self.indptr, self.indices, self.values, self.row_constants, width, numba.get_num_threads()
        )
        tops = []
        for r in range(len(self.row_constants)):
            top = above[r, : counts[r]]
            if len(top) < width:  # then the columns at the constant, in column order, then those below it
                top = np.concatenate([top, self._columns_at_or_below_constant(r, width - len(top))])
            tops.append(top)
        return tops

    def _columns_at_or_below_constant(self, r: int, k: int) -> np.ndarray:
        """Row ``r``'s first ``k`` columns after those above its constant (see :meth:`top_columns`)."""
        span = slice(self.indptr[r], self.indptr[r + 1])
        columns, values, constant = self.indices[span].astype(np.int64), self.values[span], self.row_constants[r]
        not_at_constant = columns[values != constant]
        first = np.arange(min(self.n_columns, k + len(not_at_constant)), dtype=np.int64)
        at_constant = first[~np.isin(first, not_at_constant)][:k]
        if len(at_constant) == k:
            return at_constant
        below = values < constant
        ranked = columns[below][np.lexsort((columns[below], -values[below]))]
        return np.concatenate([at_constant, ranked[: k - len(at_constant)]])

    # -- distributions of score rows -----------------------------------------------------------

    def softmax_rows(self) -> "ConstantPlusSparse":
        """Each row's softmax, exp(x - max) / sum, in the same form."""
        rows = self._rows_of_stored
        peak = np.where(self.unstored_counts() > 0, self.row_constants, -np.inf)
        np.maximum.at(peak, rows, self.values)
        constants = np.exp(self.row_constants - peak)
        values = np.exp(self.values - peak[rows])
        return self._divided(constants, values)

    def normalised_rows(self) -> "ConstantPlusSparse":
        """Each row divided by its sum (rows of non-negative scores, e.g. counts)."""
        return self._divided(self.row_constants.astype(np.float64), self.values.astype(np.float64))

    def _divided(self, constants: np.ndarray, values: np.ndarray) -> "ConstantPlusSparse":
        rows = self._rows_of_stored
        totals = constants * self.unstored_counts() + np.bincount(rows, weights=values, minlength=len(constants))
        return ConstantPlusSparse(constants / totals, self.indptr, self.indices, values / totals[rows], self.n_columns)

    # -- files ---------------------------------------------------------------------------------

    def to_arrays(self, prefix: str) -> dict:
        """The arrays to save (``np.savez``), named ``<prefix>.<part>``; read back by :meth:`from_arrays`."""
        return {
            f"{prefix}.row_constants": self.row_constants, f"{prefix}.indptr": self.indptr,
            f"{prefix}.indices": self.indices, f"{prefix}.values": self.values,
            f"{prefix}.n_columns": np.int64(self.n_columns),
        }

    @classmethod
    def from_arrays(cls, arrays, prefix: str) -> "ConstantPlusSparse":
        return cls(
            np.asarray(arrays[f"{prefix}.row_constants"]), np.asarray(arrays[f"{prefix}.indptr"]),
            np.asarray(arrays[f"{prefix}.indices"]), np.asarray(arrays[f"{prefix}.values"]),
            int(arrays[f"{prefix}.n_columns"]),
        )
