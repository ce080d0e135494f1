"""What every E-LDA kernel module shares: numba's options, and the CSR segments kernels walk.

A CSR ``indptr`` cuts an array into consecutive segments (a document's words, a row's entries, a
column's topics); :func:`offsets_of` builds one from lengths, :func:`longest_document` finds the
longest segment, which sizes per-thread work arrays.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from topicbench.core.kernel_cache import load_cached_kernels_directly

#: numba options of the kernels: cached on disk (loaded by :mod:`.._kernel_cache`), releasing the GIL.
PARALLEL = dict(parallel=True, cache=True, nogil=True)
SERIAL = dict(cache=True, nogil=True)

#: Work items per parallel loop over words, dealt cyclically: words come most frequent first,
#: so contiguous blocks would leave one thread with all the long rows.
CYCLIC_CHUNKS = 64


@nb.njit(**SERIAL)
def offsets_of(lengths):
    """CSR offsets (an ``indptr``) of consecutive segments of these lengths: 0, then running sums."""
    indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    for i in range(len(lengths)):
        indptr[i + 1] = indptr[i] + lengths[i]
    return indptr


@nb.njit(**SERIAL)
def longest_document(doc_indptr, first, stop):
    """The most distinct words of any of documents first .. stop - 1 (the longest of these segments)."""
    longest = 0
    for d in range(first, stop):
        longest = max(longest, doc_indptr[d + 1] - doc_indptr[d])
    return longest


# a cached kernel loads without numba's compiler start-up (0.3-0.5 s a process): see _kernel_cache
load_cached_kernels_directly(globals())
