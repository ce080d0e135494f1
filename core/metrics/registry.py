"""The metrics registry: every metric by name, with what it needs and which direction is better.

Calling convention
------------------
A metric is a :class:`MetricSpec`. ``spec(output, run)`` takes one model's
:class:`~topicbench.core.output.TopicModelOutput` and a
:class:`~topicbench.core.metrics.context.MetricRun` (or a ``MetricContext``, for a run with no
randomness and no held-out θ), raises :class:`~topicbench.core.metrics.needs.MetricNotApplicable`
naming the first unmet need, and returns a flat ``dict`` of named float scores:

- topic-level metrics return one key per N of ``run.top_n``: ``"npmi@5"``, ``"npmi@10"``, ...
  (``"inverted_rbo@10"`` uses ``settings.rbo_top_n``);
- corpus-level metrics return their own name (``"log_likelihood_own"``) or the names listed in
  ``spec.outputs`` (``"classification_accuracy"``, ``"classification_macro_f1"``).
- a coherence whose topics have top words the reference corpus lacks does not apply; in its place
  it scores those words the reference has (:meth:`MetricSpec.in_reference_scores`):
  ``"npmi_in_reference@10"`` and ``"npmi_in_reference_topics@10"``, the topics it averages.

To score an output with several metrics, recording the ones that do not apply, use
:func:`topicbench.core.metrics.scoring.score`.

Every key of a spec's result shares the spec's ``higher_is_better``: :func:`metric_for_key` maps a
key back to its spec and :func:`best_index` picks the best of several models' values, which is
how a report marks the best value. The names a spec may list in ``needs`` are
:data:`topicbench.core.metrics.needs.NEEDS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..output import TopicModelOutput
from ..registry import Registry
from ..validation import InputError
from . import coherence as coherence_module
from .coherence_measures import MEASURES as COHERENCE_MEASURES
from .coherence_in_reference import IN_REFERENCE, IN_REFERENCE_DROPPED, IN_REFERENCE_TOPICS, coherence_in_reference
from .context import MetricContext, MetricRun
from .diversity import inverted_rbo, topic_diversity
from .embedding import embedding_coherence
from .heldout import heldout_log_likelihood
from .labels import classification_scores, clustering_scores
from .llm_documents import fit_agreement, rank_agreement, topic_questions
from .llm_judging import judge_intrusion, judge_ratings
from .needs import NEEDS, MetricNotApplicable, unmet_need
from . import ranges
from .ranges import ValidRange
from .posterior import (
    assignment_log_likelihood,
    log_topic_word,
    matched_budget_elda,
    randk_log_likelihood,
)


#: What must hold for a coherence's in-reference score (:meth:`MetricSpec.in_reference_scores`).
IN_REFERENCE_NEEDS = ("top_words", "varied_reference", "out_of_reference")


@dataclass(frozen=True)
class MetricSpec:
    """A registered metric.

    Attributes
    ----------
    name : str
    compute : callable
        ``compute(output, run) -> dict[str, float]``; called only when every need is met.
    higher_is_better : bool
        For every key the metric returns.
    needs : tuple of str
        What must hold for the metric to apply (see :data:`~topicbench.core.metrics.needs.NEEDS`),
        checked in this order.
    aggregate : str
        How per-topic or per-token values become the reported number.
    outputs : tuple of str
        Keys returned when they are not ``name`` or ``name@N``.
    description : str
    valid_range : ValidRange or dict of str -> ValidRange
        The values each key can take (and the baseline it must beat): one range for every key, or
        one per output name (``{"nmi": ..., "ari": ...}``); see :meth:`range_of`.
    in_reference : callable or None
        For a coherence over the reference corpus: ``in_reference(output, run) -> dict``, the same
        measure over each topic's top words that the reference has
        (:mod:`~topicbench.core.metrics.coherence_in_reference`), scored in the metric's place
        where some top words are out of the reference (:meth:`in_reference_scores`), with keys
        ``<name>_in_reference@N`` and ``<name>_in_reference_topics@N`` (the topics scored).
    """

    name: str
    compute: Callable
    higher_is_better: bool
    needs: tuple = ()
    aggregate: str = "mean over topics"
    outputs: tuple = ()
    description: str = ""
    in_reference: Callable | None = None
    valid_range: ValidRange | dict = ranges.UNBOUNDED

    def __post_init__(self):
        unknown = sorted(set(self.needs) - set(NEEDS))
        if unknown:
            raise ValueError(f"metric {self.name!r} needs unknown context fields {unknown}; known: {NEEDS}")
        if isinstance(self.valid_range, dict) and set(self.valid_range) != set(self.outputs):
            raise ValueError(f"metric {self.name!r} gives valid ranges for {sorted(self.valid_range)}, "
                             f"its outputs are {sorted(self.outputs)}")

    def not_applicable(self, output: TopicModelOutput, run: MetricRun) -> MetricNotApplicable | None:
        """Why the metric does not apply to ``output`` in ``run`` (None if it does)."""
        return unmet_need(self.name, self.needs, output, run)

    def compute_scores(self, output: TopicModelOutput, run: MetricRun) -> dict:
        """The scores, as floats, of an output the metric applies to."""
        return {key: float(value) for key, value in self.compute(output, run).items()}

    def __call__(self, output: TopicModelOutput, run: MetricRun | MetricContext) -> dict:
        if isinstance(run, MetricContext):
            run = MetricRun(run)
        problem = self.not_applicable(output, run)
        if problem is not None:
            raise problem
        return self.compute_scores(output, run)

    def owns(self, key: str) -> bool:
        """Whether ``key`` is one of the keys this metric returns (its in-reference ones included)."""
        prefix = key.split("@", 1)[0]
        in_reference = (tuple(f"{self.name}{suffix}" for suffix in (IN_REFERENCE, IN_REFERENCE_TOPICS, IN_REFERENCE_DROPPED))
                        if self.in_reference else ())
        return key == self.name or prefix == self.name or key in self.outputs or prefix in in_reference

    def in_reference_scores(self, output: TopicModelOutput, run: MetricRun) -> dict:
        """The metric over the top words the reference has, where some of the topics' top words are
        out of the reference and a topic keeps two in it (else, or without ``in_reference``, empty):
        the score a table shows beside the metric's gap."""
        if self.in_reference is None or unmet_need(self.name, IN_REFERENCE_NEEDS, output, run):
            return {}
        return {key: float(value) for key, value in self.in_reference(output, run).items()}

    def range_of(self, key: str) -> ValidRange:
        """The valid range of one of the metric's keys (``npmi@10``, ``ari``); a count of topics
        scored in the reference (``npmi_in_reference_topics@10``) is a count."""
        prefix = key.split("@", 1)[0]
        if prefix.endswith((IN_REFERENCE_TOPICS, IN_REFERENCE_DROPPED)):
            return ranges.COUNT
        if isinstance(self.valid_range, ValidRange):
            return self.valid_range
        return self.valid_range[prefix]

    def best_index(self, values) -> int | None:
        """Index of the best of several models' values (NaN ignored; None if all are NaN)."""
        values = np.asarray(values, dtype=np.float64)
        if values.size == 0 or np.isnan(values).all():
            return None
        return int(np.nanargmax(values) if self.higher_is_better else np.nanargmin(values))


def _metric_of_score(name) -> str | None:
    """For a score key asked for as a metric (``nmi``, ``npmi@10``): the metric that returns it."""
    owner = next((spec.name for spec in (METRICS.get(n) for n in METRICS.builtin_names())
                  if spec.name != name and spec.owns(str(name))), None)
    return f"{name!r} is a score of the metric {owner!r}: ask for {owner!r}" if owner else None


#: Every metric, by name.
METRICS = Registry("metric", suggest=_metric_of_score)


def _register(spec: MetricSpec) -> MetricSpec:
    METRICS.register(spec.name, spec)
    return spec


def metric_for_key(key: str) -> MetricSpec:
    """The spec that returns a score key such as ``"npmi@10"`` or ``"classification_macro_f1"``."""
    for name in METRICS:
        spec = METRICS.get(name)
        if spec.owns(key):
            return spec
    raise InputError(f"no metric returns the score {key!r}. Metrics: {', '.join(METRICS.names())}")


def best_index(key: str, values) -> int | None:
    """Which of several models' values of ``key`` is best (by the metric's direction)."""
    return metric_for_key(key).best_index(values)


# ------------------------------------------------------------------------------------------------
# Coherence over the reference corpus
# ------------------------------------------------------------------------------------------------


def _coherence_metric(measure: str) -> Callable:
    def compute(output: TopicModelOutput, run: MetricRun) -> dict:
        settings = run.settings
        results = coherence_module.coherence(
            output.topics, run.inputs.reference_corpus, (measure,), run.top_n, oov=settings.oov,
            epsilon=settings.epsilon, smoothing=settings.smoothing, gamma=settings.gamma,
            windows=settings.windows, counts=run.context.counts,
        )
        run.keep_topic_scores(results[measure].per_topic_by_key())
        return results[measure].as_dict()

    compute.__name__ = f"{measure}_coherence"
    return compute


def _in_reference_metric(measure: str) -> Callable:
    def compute(output: TopicModelOutput, run: MetricRun) -> dict:
        settings = run.settings
        results = coherence_in_reference(
            output.topics, run.inputs.reference_corpus, (measure,), run.top_n, known=run.context.reference_known(),
            epsilon=settings.epsilon, smoothing=settings.smoothing, gamma=settings.gamma,
            windows=settings.windows, counts=run.context.counts,
        )
        run.keep_topic_scores(results[measure].per_topic_by_key())
        return results[measure].as_dict()

    compute.__name__ = f"{measure}_in_reference"
    return compute


for _measure in COHERENCE_MEASURES.values():
    _register(MetricSpec(
        name=_measure.name, compute=_coherence_metric(_measure.name),
        higher_is_better=_measure.higher_is_better, needs=("top_words", "varied_reference", "reference"),
        description=_measure.description, in_reference=_in_reference_metric(_measure.name),
        valid_range=ranges.COHERENCE[_measure.name],
    ))


# ------------------------------------------------------------------------------------------------
# Embedding coherence and diversity
# ------------------------------------------------------------------------------------------------


def _embedding_metric(kind: str) -> Callable:
    def compute(output: TopicModelOutput, run: MetricRun) -> dict:
        vectors, vocabulary = run.context.word_vectors()
        result = embedding_coherence(output.topics, vectors, vocabulary, run.top_n, kind=kind, oov=run.settings.oov)
        run.keep_topic_scores(result.per_topic_by_key())
        return result.as_dict()

    compute.__name__ = f"embedding_{kind}"
    return compute


_register(MetricSpec(
    "embedding_pairwise", _embedding_metric("pairwise"), True, ("top_words", "word_vectors"),
    description="mean cosine of the word vectors of each pair of a topic's top-N words", valid_range=ranges.SIGNED_UNIT,
))
_register(MetricSpec(
    "embedding_centroid", _embedding_metric("centroid"), True, ("top_words", "word_vectors"),
    description="mean cosine of each top-N word's vector with the topic's centroid", valid_range=ranges.SIGNED_UNIT,
))
_register(MetricSpec(
    "topic_diversity",
    lambda output, run: topic_diversity(output.topics, run.top_n).as_dict(),
    True, ("top_words",), aggregate="share of unique words over all topics",
    description="unique words among all topics' top-N / (K N)", valid_range=ranges.PROPORTION,
))
_register(MetricSpec(
    "inverted_rbo",
    lambda output, run: inverted_rbo(
        output.topics, run.settings.rbo_top_n, persistence=run.settings.rbo_persistence
    ).as_dict(),
    True, ("rbo_words", "two_topics"), aggregate="1 - mean over pairs of topics",
    description="1 - mean extrapolated rank-biased overlap over pairs of topics (OCTIS)", valid_range=ranges.PROPORTION,
))


# ------------------------------------------------------------------------------------------------
# Posterior quality (spec §4, Experiment Set 1)
# ------------------------------------------------------------------------------------------------


def _own(output: TopicModelOutput, run: MetricRun) -> dict:
    log_phi = log_topic_word(output.topic_word_matrix)
    return {"log_likelihood_own": assignment_log_likelihood(run.inputs.corpus, log_phi, output.token_topics)}


def _randk(output: TopicModelOutput, run: MetricRun) -> dict:
    log_phi = log_topic_word(output.topic_word_matrix)
    draws = randk_log_likelihood(run.inputs.corpus, log_phi, output.token_topics, run.rng,
                                 draws=run.settings.randk_draws)
    return {"log_likelihood_randk": draws.mean}


def _elda(output: TopicModelOutput, run: MetricRun) -> dict:
    log_phi = log_topic_word(output.topic_word_matrix)
    solution = matched_budget_elda(run.inputs.corpus, log_phi, output.token_topics)
    return {"log_likelihood_elda": solution.log_posterior}


_register(MetricSpec(
    "log_likelihood_own", _own, True, ("corpus", "token_topics"), aggregate="sum over tokens",
    description="sum over tokens of log phi_z[w] for the model's own assignment",
    valid_range=ranges.LOG_PROBABILITY,
))
_register(MetricSpec(
    "log_likelihood_randk", _randk, True, ("corpus", "token_topics", "two_topics", "rng"),
    aggregate="sum over tokens, mean over draws",
    description="the own assignment with topic labels shifted by a random offset (RandK)",
    valid_range=ranges.LOG_PROBABILITY,
))
_register(MetricSpec(
    "log_likelihood_elda", _elda, True, ("corpus", "token_topics"), aggregate="sum over tokens",
    description="E-LDA on the model's topics, budget matched to its mean distinct topics per document",
    valid_range=ranges.LOG_PROBABILITY,
))


# ------------------------------------------------------------------------------------------------
# Held-out fit and labels
# ------------------------------------------------------------------------------------------------


def _heldout(output: TopicModelOutput, run: MetricRun) -> dict:
    return heldout_log_likelihood(
        run.inputs.heldout_corpus, output.topic_word_matrix, run.heldout_doc_topic
    ).as_dict()


_register(MetricSpec(
    "heldout_log_likelihood",
    lambda output, run: {"heldout_log_likelihood": _heldout(output, run)["heldout_log_likelihood"]},
    True, ("probability_model", "heldout"), aggregate="per held-out word",
    description="per-word log-likelihood of held-out documents", valid_range=ranges.HELDOUT_LOG_LIKELIHOOD,
))
_register(MetricSpec(
    "perplexity",
    lambda output, run: {"perplexity": _heldout(output, run)["perplexity"]},
    False, ("probability_model", "heldout"), aggregate="exp(-per-word log-likelihood)",
    description="held-out perplexity", valid_range=ranges.PERPLEXITY,
))
_register(MetricSpec(
    "classification",
    lambda output, run: {
        key: value
        for key, value in classification_scores(
            output.topic_document_matrix, run.inputs.document_labels, run.rng,
            partitions=run.inputs.document_partitions,
        ).items()
        if key.startswith("classification_")
    },
    True, ("labels", "rng"), aggregate="over test documents",
    outputs=("classification_accuracy", "classification_macro_f1"), valid_range=ranges.PROPORTION,
    description="accuracy and macro-F1 of a logistic regression on document-topic features",
))
_register(MetricSpec(
    "clustering",
    lambda output, run: clustering_scores(output.topic_document_matrix, run.inputs.document_labels),
    True, ("labels",), aggregate="over documents",
    outputs=("nmi", "purity", "inverse_purity", "harmonic_purity", "ari"),
    # ARI is chance-corrected: 0 at chance, negative below it, never under -1
    valid_range={**dict.fromkeys(("nmi", "purity", "inverse_purity", "harmonic_purity"), ranges.PROPORTION),
                 "ari": ranges.SIGNED_UNIT},
    description="NMI, purity, inverse purity, harmonic purity (TopicGPT's F-measure) and adjusted Rand index of "
                "each document's main topic against its label",
))


# ------------------------------------------------------------------------------------------------
# Topic quality as people judge it, asked of an LLM (llm_judging)
# ------------------------------------------------------------------------------------------------


def _llm_rating(output: TopicModelOutput, run: MetricRun) -> dict:
    judged = judge_ratings(output, run.context.judge, run.context.judge_settings, output.seed or 0)
    run.keep_topic_scores({"llm_rating": judged.per_topic(len(output.topics))})
    return {"llm_rating": judged.mean(), "llm_rating_answered": judged.answered / max(len(judged.topics), 1)}


def _llm_intrusion(output: TopicModelOutput, run: MetricRun) -> dict:
    judged = judge_intrusion(output, run.context.judge, run.context.judge_settings, output.seed or 0)
    run.keep_topic_scores({"llm_intrusion": judged.per_topic(len(output.topics))})
    return {"llm_intrusion": judged.mean(), "llm_intrusion_answered": judged.answered / max(len(judged.topics), 1)}


_register(MetricSpec(
    "llm_rating", _llm_rating, True, ("llm",), aggregate="mean over the most prevalent topics",
    outputs=("llm_rating", "llm_rating_answered"),
    valid_range={"llm_rating": ValidRange(1.0, 3.0, why="the 1-3 rating scale"), "llm_rating_answered": ranges.PROPORTION},
    description="an LLM's 1-3 rating of how related a topic's top 10 words are (Stammbach et al. 2023); "
                "llm_rating_answered: the share of topics it rated",
))
_register(MetricSpec(
    "llm_intrusion", _llm_intrusion, True, ("llm", "two_topics"), aggregate="mean over the most prevalent topics",
    outputs=("llm_intrusion", "llm_intrusion_answered"), valid_range=ranges.PROPORTION,
    description="how often an LLM picks the intruder among a topic's top words (Chang et al. 2009); "
                "llm_intrusion_answered: the share of topics with an answered draw",
))


# ------------------------------------------------------------------------------------------------
# Topics as people use them, asked of an LLM: documents against theta (llm_documents, ProxAnn)
# ------------------------------------------------------------------------------------------------


def _document_metric(name: str, agreement: Callable) -> Callable:
    def compute(output: TopicModelOutput, run: MetricRun) -> dict:
        judge, settings = run.context.judge, run.context.judge_settings
        questions = topic_questions(output, run.inputs.corpus, judge, settings, output.seed or 0)
        judged = agreement(questions, judge, settings)
        run.keep_topic_scores({name: judged.per_topic(len(output.topics))})
        return {name: judged.mean(), f"{name}_answered": judged.answered / max(len(judged.topics), 1)}

    compute.__name__ = name
    return compute


_register(MetricSpec(
    "llm_fit", _document_metric("llm_fit", fit_agreement), True, ("llm", "documents"),
    aggregate="mean over the most prevalent topics of Kendall's tau-b", outputs=("llm_fit", "llm_fit_answered"),
    valid_range={"llm_fit": ranges.SIGNED_UNIT, "llm_fit_answered": ranges.PROPORTION},
    description="Kendall's tau-b between theta and an LLM's 1-5 fit of evaluation documents to the category it "
                "named from the topic's top words and exemplar documents (ProxAnn, Hoyle et al. 2025); "
                "llm_fit_answered: the share of topics with a tau",
))
_register(MetricSpec(
    "llm_rank", _document_metric("llm_rank", rank_agreement), True, ("llm", "documents"),
    aggregate="mean over the most prevalent topics of Kendall's tau-b", outputs=("llm_rank", "llm_rank_answered"),
    valid_range={"llm_rank": ranges.SIGNED_UNIT, "llm_rank_answered": ranges.PROPORTION},
    description="Kendall's tau-b between theta and an LLM's ranking (Bradley-Terry over pairwise choices) of "
                "evaluation documents by their relation to that category (ProxAnn, Hoyle et al. 2025); "
                "llm_rank_answered: the share of topics with a tau",
))
