"""E-LDA (Breuer, ICML 2025): keyword-anchored topics linked to documents by greedy submodular
maximisation, exactly and in logarithmically many parallel rounds.

- ``model`` -- :class:`~topicbench.core.elda.model.ELDA`, the estimator (importable from here too).
- ``generators`` -- keyword candidates (raw UMass, ...) and any topic matrix as candidates.
- ``greedy`` -- exact lazy greedy (1 - 1/e).
- ``parallel`` -- the low-adaptivity parallel algorithm over a shard executor; ``dask_shards`` --
  that executor on a Dask cluster; ``shard_rounds`` -- one shard's rounds.
- ``mapped_candidates`` -- candidates memory-mapped once for every worker on a machine.
- ``solution`` -- ordered links, F, token topics, and their writers.
- ``inference`` -- independence-preserving (out-of-sample, causal) inference.
- ``kernels/`` -- the numba kernels (arrays in, arrays out; callers validate).
"""

__all__ = ["ELDA"]


def __getattr__(name: str):
    """``from topicbench.core.elda import ELDA``, the documented path, imported on first use: a
    kernel or a generator imported alone does not pull in the estimator (and its imports)."""
    if name == "ELDA":
        from topicbench.core.elda.model import ELDA

        return ELDA
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
