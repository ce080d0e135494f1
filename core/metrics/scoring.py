"""Scoring one model output: every requested metric that applies, and why the others do not.

:func:`score` is the one entry point the benchmark uses; it decides which metrics apply (from each
metric's ``needs``, :mod:`topicbench.core.metrics.needs`), applies the top-N policy below and returns
:class:`Scores`.

Top-N policy
------------
Topic-level metrics are scored for each N of the settings' grid (``MetricSettings.top_n``). Some
models return topics shorter than the grid's largest N (BERTopic keeps only the words its c-TF-IDF
ranks). Such an output is scored at the N its shortest topic allows, the same N for every metric,
and the left-out N are recorded among the skipped entries under the key ``"top_n N1,N2"`` with the
reason ``"<model>'s shortest topic has S words"``. When no N fits, the topic-level metrics are
skipped with that reason.

Out-of-reference words
----------------------
A coherence whose topics rank words the reference corpus lacks is skipped with that reason, and
scored in its place over each topic's top words the reference has (``npmi_in_reference@10``, and
``npmi_in_reference_topics@10`` the topics scored; :mod:`~topicbench.core.metrics.coherence_in_reference`):
a fit with such words gets both the reason and the partial score, any other fit neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..output import TopicModelOutput
from ..validation import InputError
from .context import MetricContext, MetricRun
from .registry import METRICS


@dataclass(frozen=True)
class Scores:
    """One output's scores; unpacks as ``values, skipped = score(...)``, as it always has.

    Attributes
    ----------
    values : dict of str -> float
        Score key (``"umass@10"``, ``"perplexity"``) -> value.
    skipped : dict of str -> str
        Metric name, or ``"top_n N1,N2"`` for N left out by the top-N policy -> the reason.
    topic_scores : dict of str -> tuple of float
        Score key -> each topic's own value (in the order of ``output.topics``; NaN where a topic
        has none), for the metrics that average per-topic values (coherence, embedding
        coherence, the LLM judges): what a reader judges one topic by. Not compared by ``==``
        (NaN is unequal to itself); the values it averages to are.
    """

    values: dict
    skipped: dict
    topic_scores: dict = field(default_factory=dict, compare=False)

    def __iter__(self):
        return iter((self.values, self.skipped))


def scored_top_n(top_n, topics) -> tuple[tuple, tuple]:
    """The top-N policy: (the N of ``top_n`` every topic is long enough for, the N left out)."""
    shortest = min(len(words) for words in topics)
    return tuple(n for n in top_n if n <= shortest), tuple(n for n in top_n if n > shortest)


def score(output: TopicModelOutput, context: MetricContext, metrics, *, seed: int | None,
          heldout_theta: np.ndarray | None = None, on_metric=None) -> Scores:
    """Score one output with the named metrics; those that do not apply are skipped with a reason.

    Parameters
    ----------
    output : TopicModelOutput
    context : MetricContext
        The corpus's inputs and caches (co-occurrence counts are counted once per reference,
        window and word set, and reused by every output scored with this context).
    metrics : sequence of str
        Names in :data:`~topicbench.core.metrics.registry.METRICS`, scored in this order.
    seed : int or None
        Seeds the run's random generator, the only randomness of the scores (RandK offsets, a
        random label split): the same seed gives the same scores.
    heldout_theta : ndarray (K, D_test), optional
        The model's θ of ``context.inputs.heldout_corpus``, for the held-out metrics.
    on_metric : callable, optional
        ``on_metric(name)`` as each metric starts (a progress display names it).

    Returns
    -------
    Scores

    Raises
    ------
    InputError
        Bad input (an unknown metric name, a malformed matrix, two metrics returning one key).
    """
    skipped = {}
    top_n, left_out = scored_top_n(context.inputs.settings.top_n, output.topics)
    if left_out:
        shortest = min(len(words) for words in output.topics)
        skipped["top_n " + ",".join(map(str, left_out))] = f"{output.model}'s shortest topic has {shortest} words"
    run = MetricRun(context, top_n=top_n, rng=np.random.default_rng(seed), heldout_doc_topic=heldout_theta)
    values: dict = {}
    for name in metrics:
        spec = METRICS.get(name)
        if on_metric is not None:
            on_metric(name)
        problem = spec.not_applicable(output, run)
        if problem is not None:
            skipped[name] = problem.reason
            values.update(spec.in_reference_scores(output, run))
            continue
        result = spec.compute_scores(output, run)
        clash = sorted(set(result) & set(values))
        if clash:
            raise InputError(f"metric {name!r} returns {clash[0]!r}, already returned by another metric")
        values.update(result)
    return Scores(values, skipped, run.topic_scores)
