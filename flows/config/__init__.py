"""A benchmark's config: ``model`` (the dataclasses, validated against the registries and
fingerprinted), ``file`` (a YAML file read with nothing accepted silently) and ``schema`` (the
published JSON Schema). The config's classes are re-exported here, the documented import path.
"""

#: The config's public names, re-exported from :mod:`.model` on first use (a reader of
#: :mod:`.file` or :mod:`.schema` alone does not import the model and its registries).
PUBLIC = ("DEFAULT_TRACKING_DATABASE", "DEFAULT_TRACKING_URI", "DEFAULT_METRICS", "CorpusSpec", "ModelSpec",
          "BenchmarkConfig", "default_config")
__all__ = list(PUBLIC)


def __getattr__(name: str):
    if name in PUBLIC:
        from topicbench.flows.config import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
