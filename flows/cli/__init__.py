"""The ``topicbench`` command line: ``main`` (the parser and how a command ends), ``startup``, and one
module per command family: ``benchmark`` (run, serve, report, paper), ``search``, ``bundle``
(export, import), ``leaderboard``, ``catalog`` (models, metrics, schema), ``data``, ``elda``
(elda, compile), ``judge`` (judge calibrate, both protocols), ``ui``; ``common`` holds what they
share.
"""
