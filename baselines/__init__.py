"""Topic models behind one interface: ``fit(corpus, num_topics, seed, **settings) -> TopicModelOutput``."""
