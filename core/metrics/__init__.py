"""Metrics over any model output: coherence, embedding coherence, diversity, posterior quality,
held-out fit, label-based scores and statistics across seeds. Pure functions, no orchestration.

========================  ===============================================================
module                    what
========================  ===============================================================
``counts``                ``CooccurrenceCounts``: document / sliding-window counts of a word set
``coherence_measures``    UMass, UCI, NPMI, C_V as pipelines (``MEASURES``) over window counts
``coherence``             ``score``, ``coherence``: topics scored over a counted reference corpus
``embedding``             pairwise and centroid embedding coherence from given word vectors
``diversity``             topic diversity, inverted RBO
``posterior``             Σ log φ of assignments, RandK, matched-budget E-LDA (spec §4, Set 1)
``heldout``               per-word held-out log-likelihood and perplexity
``labels``                accuracy / macro-F1 on document-topic features; NMI, purity, harmonic purity, ARI
``llm_judging``           word-level LLM judges: rating and intrusion of top words (Stammbach et al.)
``llm_documents``         document-level LLM judges against θ: fit and rank (ProxAnn)
``llm_document_prompts``  ProxAnn's prompts as requests to the judge, and its replies read
``stats``                 mean, sd and paired tests across seeds
``bootstrap``             percentile bootstrap of agreement statistics: paired items or whole clusters
``prevalence``            one number per model at unequal K: the prevalence-weighted mean, top-k means
``stability``             topic stability across seeds (Hungarian matching on JS / RBO); deterministic fits
``stability_chance``      a stability's permutation test against its chance level (shuffled topics)
``registry``              ``METRICS``: every metric by name, its needs and direction
``context``               ``MetricInputs`` (frozen), ``MetricContext`` (per corpus, caches), ``MetricRun``
``needs``                 whether a metric applies; ``MetricNotApplicable``
``ranges``                ``ValidRange``: the values each metric can take and the baseline it must beat
``validity``              ``value_problem``, ``unranked_reason``: why a value cannot be ranked
``scoring``               ``score``: the scores of one output and the skipped metrics with reasons
========================  ===============================================================
"""
