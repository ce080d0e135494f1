"""Deprecated: moved to :mod:`topicbench.core.elda.inference` (E-LDA's room); this path is kept for one
release and warns on import."""

import warnings

from topicbench.core.elda.inference import *  # noqa: F401,F403 (the public names, re-exported)

warnings.warn(
    "topicbench.core.inference moved to topicbench.core.elda.inference; the old path goes in the next release",
    DeprecationWarning, stacklevel=2,
)
