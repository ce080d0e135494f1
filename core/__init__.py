"""The pure core: E-LDA (:mod:`.elda`), the metrics every model is scored by (:mod:`.metrics`), and
what both stand on: corpora, preprocessing, the output contract, input checks and registries.

Pure algorithms only: nothing here imports Prefect, MLflow or the other topicbench packages.

==========================  ===========================================================================
room / module               what
==========================  ===========================================================================
``elda/``                   E-LDA: candidates, exact greedy, the parallel algorithm (Dask), kernels,
                            out-of-sample inference
``metrics/``                scores of any model's output: coherence, diversity, held-out, labels,
                            LLM judges, stability, statistics
``corpus``, ``io``,         a corpus in memory, read from files or by name, tokenised and pruned
``preprocess``, ``datasets``,
``synthetic``
``output``, ``topic_word``  the one output every model returns (OCTIS-compatible)
``validation``, ``schema``  input checks: the only place input errors are raised
``registry``                named choices (models, metrics, generators) with plugins
``search_space``,           a search's space and objectives; the one-standard-error rule and Pareto front
``selection``
``constants``               numeric defaults shared by E-LDA and its callers
``proxann_data``,           ProxAnn's and Hoyle et al.'s released judgments, read and checked
``proxann_release``
``redaction``               the one place secrets are taken out of text
``dask_cluster``,           local Dask clusters, thread counts, numba's kernel cache and precompilation
``threads``, ``precompile``,
``_kernel_cache``
``elda_release``            the E-LDA authors' data release converted to an OCTIS folder
==========================  ===========================================================================
"""
