"""Topic models behind one interface: ``Model(num_topics, random_state=seed, **settings).fit(corpus)``
returns the model, with the shared ``TopicModelOutput`` in ``output_`` and the resolved values in
``resolved_`` (see :class:`topicbench.baselines.base.TopicModel`)."""
