"""Runs read as tables, from an MLflow store or from a result bundle, by everything that shows them.

**Read** -- ``sources`` (:class:`~topicbench.tasks.results.sources.RunSource`, the one interface):
``store`` reads a tracking store, ``bundle_source`` a bundle's tables; ``runs`` holds the run
states and the per-topic scores every reader keeps; ``stability`` scores stability across seeds once
and keeps it with the runs; ``calibration_runs`` finds the judge's calibrations.

**Share** -- ``bundle`` exports an experiment's finished runs as files and imports them into any
store; ``bundle_tables`` writes and reads their tidy tables (Parquet), ``bundle_scores`` their
``scores.jsonl`` (one line per run and score: a diff a reviewer can read); ``data_settings`` what
the runs rest on (corpora, preprocessing, labels, settings, seeds, versions), read from a store
and kept in a bundle.

The report (:mod:`topicbench.tasks.report`) and the leaderboard
(:mod:`topicbench.tasks.leaderboard`) read runs only through this room.
"""
