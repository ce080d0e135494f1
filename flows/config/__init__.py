"""A benchmark's config: ``model`` (the dataclasses, validated against the registries and
fingerprinted), ``file`` (a YAML file read with nothing accepted silently) and ``schema`` (the
published JSON Schema). The config's classes are re-exported here, the documented import path.
"""

from topicbench.flows.config.model import (  # noqa: F401 (re-exported)
    DEFAULT_TRACKING_DATABASE, DEFAULT_TRACKING_URI, DEFAULT_METRICS, CorpusSpec, ModelSpec, BenchmarkConfig, default_config,
)
