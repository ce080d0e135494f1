"""Everything with side effects below the flows, in rooms by concern. A room imports only rooms
on a lower floor (``tests/test_library_hygiene.py`` enforces it), never another room's ``_private``
names:

==========  ===========================================================================  =====
room        what                                                                         floor
==========  ===========================================================================  =====
``llm/``    the LLM endpoint: settings, HTTP, replies as data, cache, the judge           1
``store/``  everything MLflow: tracking, checks, filters, moved stores, claims, spool,    2
            records, artifacts, traces
``run/``    what runs on a worker: the Prefect tasks (corpus, embeddings, fit) and the    3
            metric context
``search/`` a search's studies and what its trials scored                                4
``results/`` runs read as tables from a store or a bundle; bundle export and import;       3
            stability kept with the runs
``report/`` the report built from those tables and written (Markdown, HTML, plots)       4
``leaderboard/`` result bundles ranked per dataset and across datasets                    5
==========  ===========================================================================  =====

Where a new feature goes: a new way to reach an endpoint in ``llm/``; anything that reads or
writes the tracking store in ``store/``; work done per fit in ``run/``; a new view of runs that a
report and a bundle both need in ``results/``; a new section in ``report/``.
"""
