"""numba kernels of the E-LDA core. Private: arrays and records of arrays in, arrays out; callers validate.

Candidate topics are stored as ``L[t, v] = row_constant[t]`` except at stored entries
(``L[t, v] > row_constant[t]``), kept twice: row-major (word ids sorted, for look-ups) and
column-major with each column sorted by value, high to low (for pruned gain scans). A gain scan
of word v stops at the first entry whose value does not beat the token's current best score,
so after a document's first link most of each column is skipped (the E-LDA paper).

One module per job, each importing only those listed before it:

- :mod:`.records`: the named records the kernels read (documents, candidate rows and columns,
  links, gain caches, ...), built by the classes that own the arrays;
- :mod:`.segments`: numba's options and CSR segment helpers every module shares;
- :mod:`.cooccurrence`: document co-occurrence counts and the keyword candidates read off them;
- :mod:`.column_sort`: column stores and their sort by value;
- :mod:`.gains`: gains of topics on documents and the evaluation of a document's best topics;
- :mod:`.first_round`: FastInitialize's first round;
- :mod:`.lazy_greedy`: FastInitialize's second round, FastGreedy's heap and its chain rounds;
- :mod:`.document_rounds`: the low-adaptivity rounds and out-of-sample links;
- :mod:`.readout`: token topics from links, and each row's largest entries.

This package imports none of them: a caller imports the module it needs.
"""
