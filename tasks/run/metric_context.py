"""The metric context of a corpus (one per corpus, its counts shared by every output); scoring is
:func:`topicbench.core.metrics.scoring.score`, called where each output was fitted.

:func:`process_metric_context` keeps the contexts of the process (a Dask worker scores every
output it fits, :mod:`topicbench.tasks.run.fit`): one per corpus and metric settings, built on first
use and reused by every later output of that corpus, so its counts are made once per worker.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from topicbench.core.corpus import Corpus
from topicbench.core.metrics.context import MetricContext, MetricInputs, MetricSettings
from topicbench.core.metrics.registry import METRICS


def _embed_words(vocabulary):
    """Word vectors of the offline sentence model, cached on disk per vocabulary."""
    from topicbench.baselines.embeddings import word_vectors

    return word_vectors(vocabulary)


#: Metric contexts a process keeps (least recently used dropped first): a benchmark's corpora.
CONTEXTS_KEPT = 4

_contexts: OrderedDict = OrderedDict()  # key -> (MetricContext, lock held while scoring with it)
_contexts_lock = threading.Lock()


def build_metric_context(corpus: Corpus, metrics, top_n, heldout: Corpus | None = None, *, llm=None,
                         llm_budget: str | None = None, reference: Corpus | None = None,
                         oov: str = "error") -> MetricContext:
    """What the metrics need for one corpus; word vectors (when a metric needs them) are embedded on
    first use, once per vocabulary; with ``llm`` ((endpoint, judge settings)) and a metric that
    asks an LLM, the judge that asks that endpoint. Coherence counts in ``reference`` (default:
    ``corpus``) and treats the top words it lacks by ``oov`` (a config's ``coherence`` block)."""
    inputs = MetricInputs(corpus=corpus, reference=reference, heldout_corpus=heldout,
                          settings=MetricSettings(top_n=tuple(top_n), oov=oov))
    wants_vectors = any("word_vectors" in METRICS.get(name).needs for name in metrics)
    judge, judge_settings = None, None
    if llm is not None and any("llm" in METRICS.get(name).needs for name in metrics):
        from topicbench.tasks.llm.judge import EndpointJudge

        endpoint, judge_settings = llm
        judge = EndpointJudge(endpoint, budget=llm_budget)
    return MetricContext(inputs, embed_words=_embed_words if wants_vectors else None, judge=judge,
                         judge_settings=judge_settings)


def process_metric_context(corpus: Corpus, metrics, top_n, heldout: Corpus | None = None, *, llm=None,
                           llm_budget: str | None = None, reference: Corpus | None = None, oov: str = "error"):
    """This process's metric context of ``corpus`` (built on first use, then reused) and the lock
    to hold while scoring with it (its caches grow in place; fits may end in several threads).

    Keyed by the corpus's and the held-out corpus's fingerprints and the metric settings (the N
    grid and oov, whether word vectors are wanted, the reference corpus), so every output of one corpus shares its counts.
    """
    context, lock, _ = process_metric_context_built(corpus, metrics, top_n, heldout, llm=llm, llm_budget=llm_budget,
                                                    reference=reference, oov=oov)
    return context, lock


def process_metric_context_built(corpus: Corpus, metrics, top_n, heldout: Corpus | None = None, *, llm=None,
                                 llm_budget: str | None = None, reference: Corpus | None = None, oov: str = "error"):
    """:func:`process_metric_context`, and whether this call built the context (True) or found
    it (False): a search counts how often its shared work was done."""
    wants_vectors = any("word_vectors" in METRICS.get(name).needs for name in metrics)
    key = (corpus.fingerprint(), heldout.fingerprint() if heldout is not None else None,
           repr(MetricSettings(top_n=tuple(top_n), oov=oov)), wants_vectors, repr(llm), llm_budget,
           reference.fingerprint() if reference is not None else None)
    with _contexts_lock:
        built = key not in _contexts
        if built:
            _contexts[key] = (build_metric_context(corpus, metrics, top_n, heldout, llm=llm, llm_budget=llm_budget,
                                                   reference=reference, oov=oov),
                              threading.Lock())
            while len(_contexts) > CONTEXTS_KEPT:
                _contexts.popitem(last=False)
        _contexts.move_to_end(key)
        return (*_contexts[key], built)
