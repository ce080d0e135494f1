"""The leaderboard: result bundles -> models ranked per dataset and across datasets
(``ranking``), and its static page (``render``), with the report's number formatting.
"""
