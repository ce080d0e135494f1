"""``MODELS``: registry names -> :class:`~topicbench.baselines.base.TopicModel` classes.

Entries are lazy so that optional heavy packages are imported only when a model is named.
"""

from topicbench.core.registry import Registry

MODELS = Registry("model")
MODELS.register("elda", lazy="topicbench.baselines.elda:ELDAModel")
