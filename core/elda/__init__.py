"""E-LDA (Breuer, ICML 2025): keyword-anchored topics linked to documents by greedy submodular
maximisation, exactly and in logarithmically many parallel rounds.

=========================  ===========================================================================
module                     what
=========================  ===========================================================================
``model``                  :class:`~topicbench.core.elda.model.ELDA`, the estimator (re-exported here)
``generators``             keyword candidates (raw UMass, ...) and any topic matrix as candidates
``greedy``                 exact lazy greedy (1 - 1/e)
``parallel``               the low-adaptivity parallel algorithm over a shard executor
``dask_shards``            that executor on a Dask cluster; ``shard_rounds``: one shard's rounds
``mapped_candidates``      candidates memory-mapped once for every worker on a machine
``solution``               ordered links, F, token topics, and their writers
``inference``              independence-preserving (out-of-sample, causal) inference
``_kernels/``              the numba kernels (private: arrays in, arrays out)
=========================  ===========================================================================
"""

from topicbench.core.elda.model import ELDA

__all__ = ["ELDA"]
