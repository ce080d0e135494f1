"""The pure core: E-LDA (:mod:`topicbench.core.elda`), the metrics every model is scored by (:mod:`topicbench.core.metrics`), and
what both stand on: corpora, preprocessing, the output contract, input checks and registries.

Pure algorithms only: nothing here imports Prefect, MLflow or the other topicbench packages.

- ``elda/`` -- E-LDA: candidates, exact greedy, the parallel algorithm (Dask), its numba kernels,
  out-of-sample (causal) inference.
- ``metrics/`` -- scores of any model's output: coherence, diversity, held-out fit, labels, LLM
  judges, stability, statistics.
- ``corpus``, ``io``, ``preprocess``, ``datasets``, ``synthetic`` -- a corpus in memory, read from
  files or by name, tokenised and pruned; ``jsonl`` -- JSON Lines that stay one record a line.
- ``output``, ``topic_word`` -- the one output every model returns (OCTIS-compatible).
- ``validation``, ``schema`` -- input checks: the only place input errors are raised.
- ``registry`` -- named choices (models, metrics, generators) with plugins.
- ``search_space``, ``selection`` -- a search's space and objectives; the one-standard-error rule
  and the Pareto front.
- ``constants`` -- numeric defaults shared by E-LDA and its callers.
- ``proxann_data``, ``proxann_release`` -- ProxAnn's and Hoyle et al.'s released judgments.
- ``redaction`` -- the one place secrets are taken out of text.
- ``dask_cluster``, ``threads``, ``precompile``, ``kernel_cache`` -- local Dask clusters, thread
  counts, numba's kernel cache and its precompilation.
- ``elda_release`` -- the E-LDA authors' data release converted to an OCTIS folder.
"""
