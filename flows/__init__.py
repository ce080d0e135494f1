"""Flows and the command line: the benchmark, the search and the paper's reproduction as Prefect
flows, the report and the leaderboard as commands, and the ``topicbench`` command itself.

- ``cli/`` -- the command line: one module per command family (``main`` is the entry point).
- ``config/`` -- a benchmark's config: ``model`` (the dataclasses), ``file`` (reading YAML),
  ``schema`` (the published JSON Schema).
- ``benchmark`` (+ ``benchmark_runs``: which runs are done, claimed or spooled), ``search``
  (+ ``search_plan``, what it will do; ``search_choice``, the settings it recommends), ``paper`` (+ ``paper_report``, the named experiments in ``experiments/``),
  ``serve`` -- the flows.
- ``report`` -- a report from a store or a bundle; ``judge``, ``judge_proxann`` -- calibrations.
- ``runtime`` (Prefect and Dask; ``prefect_server``, the server ``topicbench server`` keeps),
  ``console``, ``progress``, ``worker_progress`` -- how flows run and what they show;
  ``ui_server`` -- MLflow's UI server in one process, for ``topicbench ui``; ``checks`` --
  command-line inputs checked before any work; ``data`` -- ``topicbench data`` downloads, only
  when asked.
"""
