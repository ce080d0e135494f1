"""topicbench: an evaluation suite for E-LDA and established topic models.

The code lives in the repository's top-level folders, installed as sub-packages:
``core`` -> ``topicbench.core`` (pure algorithms), ``baselines`` -> ``topicbench.baselines``
(model adapters), ``tasks`` -> ``topicbench.tasks`` (Prefect tasks) and ``flows`` ->
``topicbench.flows`` (flows and the command line).
"""

__version__ = "0.1.0"
