"""E-LDA inference core: corpora, keyword topic generators, exact and parallel E-LDA.

Pure algorithms only: nothing here imports Prefect, MLflow or the other topicbench packages.
"""
