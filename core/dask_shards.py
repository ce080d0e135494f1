"""Deprecated: moved to :mod:`topicbench.core.elda.dask_shards` (E-LDA's room); this path is kept for one
release and warns on import."""

import warnings

from topicbench.core.elda.dask_shards import *  # noqa: F401,F403 (the public names, re-exported)

warnings.warn(
    "topicbench.core.dask_shards moved to topicbench.core.elda.dask_shards; the old path goes in the next release",
    DeprecationWarning, stacklevel=2,
)
