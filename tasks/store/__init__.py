"""Everything MLflow: whether a store can be used, the runs written to it, and how they are found.

- ``checks`` -- a tracking URI checked before any work; ``moved`` -- a copied sqlite store repointed;
  ``tracking_error`` -- the error of a store that cannot be used; ``mlflow_schema`` -- MLflow's
  tables and schema revisions; ``tracking_settings`` -- the environment's tracking settings and
  topicbench's defaults of MLflow's client; ``new_store`` -- a new sqlite store copied from an empty
  one of MLflow's schema.
- ``filters`` -- runs searched by tag with user text as data.
- ``tracking`` -- the :class:`~topicbench.tasks.store.tracking.Tracker`: one parent run per
  benchmark, one nested run per fit; ``fit_record`` -- what a fit logs, as plain values;
  ``records`` -- what every run records to be repeatable; ``artifacts`` -- a run's files;
  ``traces`` -- the LLM requests as MLflow traces; ``runs_view`` -- the UI's runs table.
- ``claims`` -- which process fits which run key; ``locks`` -- locks of a whole store (sqlite's
  lock file, PostgreSQL's advisory locks); ``spool`` -- fits that could not be logged yet;
  ``interrupts`` and ``abandoned`` -- what a stop leaves behind.
"""
