"""``MODELS``: registry names -> :class:`~topicbench.baselines.base.TopicModel` classes.

Entries are lazy so that optional heavy packages are imported only when a model is named.
"""

from topicbench.core.registry import Registry

MODELS = Registry("model")
MODELS.register("elda", lazy="topicbench.baselines.elda:ELDAModel")
MODELS.register("gensim_lda", lazy="topicbench.baselines.gensim_lda:GensimLDA")
MODELS.register("gibbs_lda", lazy="topicbench.baselines.gibbs_lda:GibbsLDA")
MODELS.register("prodlda", lazy="topicbench.baselines.prodlda:ProdLDA")
MODELS.register("ctm", lazy="topicbench.baselines.ctm:CTM")
MODELS.register("etm", lazy="topicbench.baselines.etm:ETM")
MODELS.register("bertopic", lazy="topicbench.baselines.bertopic:BERTopicModel")
MODELS.register("fastopic", lazy="topicbench.baselines.fastopic:FASTopic")
