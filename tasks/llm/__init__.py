"""The LLM endpoint: where and how the LLM metrics and TopicGPT ask an OpenAI-compatible server.

``endpoint`` (settings, errors) -> ``http`` (exchanges that end on time and stay small) ->
``replies`` (a reply checked as data) -> ``client`` (one chat completion with retries) ->
``cache`` (answers on disk) -> ``judge`` (the metrics' questions asked and scored).

The scoring of the answers is pure and lives in :mod:`topicbench.core.metrics` (``llm_judging``,
``llm_documents``); the requests' traces are kept by :mod:`topicbench.tasks.store.traces`; the
calibration against people is :mod:`topicbench.flows.judge` and :mod:`topicbench.flows.judge_proxann`.
"""
