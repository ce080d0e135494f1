"""Everything with side effects below the flows, in rooms by concern. A room imports only the
rooms below it (``tests/test_library_hygiene.py`` enforces the order), never another room's
``_private`` names:

- ``llm/`` -- the LLM endpoint: settings, HTTP, replies read as data, the cache, the judge.
- ``store/`` (above ``llm/``) -- everything MLflow: tracking, checks, filters, moved stores, claims,
  the spool, records, artifacts, traces.
- ``run/`` (above ``store/``) -- what runs on a worker: the Prefect tasks (corpus, embeddings,
  fit) and the metric context.
- ``search/`` (above ``run/``) -- a search's studies and what its trials scored.
- ``results/`` (above ``store/``) -- runs read as tables from a store or a bundle; bundle export
  and import; stability scored once and kept with the runs.
- ``report/`` (above ``results/``) -- the report built from those tables and written (Markdown,
  HTML, plots).
- ``leaderboard/`` (above ``report/``) -- result bundles ranked per dataset and across datasets.

Where a new feature goes: a new way to reach an endpoint in ``llm/``; anything that reads or
writes the tracking store in ``store/``; work done per fit in ``run/``; a view of runs that a
report and a bundle both need in ``results/``; a new section in ``report/``.
"""
