"""The named records the E-LDA kernels read: arrays grouped by what they hold, read by name.

numba takes a :func:`~collections.namedtuple` of arrays as one argument and reads its fields by
attribute, at no cost at run time (its fields are passed as separate values). A kernel that reads
a corpus, the candidates and a run's state therefore takes a few records instead of two dozen
positional arrays whose order one file defined and another had to match. The classes that own the
arrays build the records: :class:`~topicbench.core.elda.solution.DocumentArrays` its :class:`Documents`,
:class:`~topicbench.core.elda.generators.Candidates` its :class:`Rows` and :class:`Columns`, the
greedy run (:mod:`topicbench.core.elda.greedy`) its :class:`Links`, :class:`GainCache` and
:class:`GreedyState`, a shard (:mod:`topicbench.core.elda.shard_rounds`) its :class:`ShardRecord`.

Plain Python (no numba import), so that any module can build a record.
"""

from __future__ import annotations

from collections import namedtuple

#: A corpus as the kernels read it: document d's distinct words are ``words[indptr[d]:indptr[d + 1]]``
#: (int64), with their counts in ``counts`` (float64).
Documents = namedtuple("Documents", "indptr words counts")

#: Candidate rows: ``L[t, v] = constants[t]`` except at the stored entries of row t,
#: ``words[indptr[t]:indptr[t + 1]]`` (ascending) with ``values``; ``by_constant``: topic ids by
#: row constant, high to low (ties: lower id first).
Rows = namedtuple("Rows", "constants by_constant indptr words values")

#: Candidate columns: column v holds (topic, value) of every stored entry of word v,
#: ``topics/values[indptr[v]:indptr[v + 1]]``, sorted by value high to low where a scan reads them.
Columns = namedtuple("Columns", "indptr topics values")

#: Exact greedy's links: link k is (``doc[k]``, ``topic[k]``) with gain ``gain[k]``; each document's
#: links form a list from its latest, ``head[d]`` (-1: none), through ``next`` (-1: the end).
Links = namedtuple("Links", "head doc topic next gain")

#: Each document's next-best topics at its last full evaluation (``topics``, ``size`` of them),
#: upper bounds of their gains (``bounds``), and a bound on every topic left out (``rest_bound``).
GainCache = namedtuple("GainCache", "topics bounds size rest_bound")

#: What exact greedy changes as it links: each (document, distinct word) slot's best score, the
#: links (:class:`Links`) and the gain caches (:class:`GainCache`). Parallel kernels take the three
#: parts as arguments (a numba parallel loop cannot read a record that holds records).
GreedyState = namedtuple("GreedyState", "best links cache")

#: FastGreedy's max-heap of (gain, document, topic): larger gain first, ties: lower document id.
Heap = namedtuple("Heap", "gain doc topic")

#: A chain round: its ``threshold`` and ``cap`` (most links a chain makes), the documents it extends
#: (``active``), every document's chain head (``topic``, ``gain``) and the running minimum gain of
#: its chain (``floor``).
Chains = namedtuple("Chains", "threshold cap active topic gain floor")

#: Each document's linked topics as CSR: document d's are ``topics[indptr[d]:indptr[d + 1]]``.
DocLinks = namedtuple("DocLinks", "indptr topics")

#: A shard's state between rounds: best scores, links (:class:`DocLinks`), and each document's
#: cached top topics and gains at its links.
ShardRecord = namedtuple("ShardRecord", "best links top_topics top_gains")

#: FastInitialize's dense first-round rows: one int16 row over the topics per dense word
#: (``rows``), its ``quantum``, and each word's row (``row_of_word``, -1: read its column).
DenseRows = namedtuple("DenseRows", "rows quantum row_of_word")

#: Document co-occurrence counts as CSR (``counts[indptr[u]:indptr[u + 1]]`` at word ids
#: ``indices``), and the documents' words or the words' documents as segments of ids.
CountRows = namedtuple("CountRows", "indptr indices counts")
Segments = namedtuple("Segments", "indptr ids")
