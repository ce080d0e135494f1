"""What runs where the fits run (a Dask worker or the flow's process): the Prefect tasks that load a
corpus (``corpus``), embed its documents (``embeddings``) and fit and score one model with one seed
(``fit``), the metric context they share (``metric_context``) and where a fit's progress goes
(``progress``).
"""
