"""Deprecated: moved to :mod:`topicbench.core.elda.generators` (E-LDA's room); this path is kept for one
release and warns on import."""

import warnings

from topicbench.core.elda.generators import *  # noqa: F401,F403 (the public names, re-exported)

warnings.warn(
    "topicbench.core.generators moved to topicbench.core.elda.generators; the old path goes in the next release",
    DeprecationWarning, stacklevel=2,
)
