"""A search's state: its studies in Optuna's durable storage (``study``) and what each trial scored,
read back from its seeds' runs (``trial_results``). The search flow is :mod:`topicbench.flows.search`.
"""
