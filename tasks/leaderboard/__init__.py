"""The leaderboard: result bundles -> models ranked per dataset (``ranking``) and across datasets
(``cross``: one ranking per headline metric, the datasets its blocks); the page as blocks and
Markdown (``render``) and as HTML (``page_html``); the results as data, ``leaderboard.json`` and
Every Eval Ever records (``records``); and the files written (``write``).
"""
