"""Whether a metric applies to an output: each name a metric may list in its ``needs``, checked here
and nowhere else.

A metric that does not apply (a model without token assignments, a corpus without labels or a
held-out split, topics shorter than every N of the grid, topic words the reference corpus never
uses) is not an error: :func:`unmet_need` returns a :class:`MetricNotApplicable` with the reason, the
scoring records that reason and goes on. :class:`~topicbench.core.validation.InputError` is kept for
bad input (a malformed matrix, an unknown setting), which still raises.

=====================  ==========================================================================
``token_topics``       the output's per-token topics (``output.token_topics``)
``labels``             document labels of two or more classes (``MetricInputs.labels``, or else ``corpus.labels``)
``heldout``            ``MetricInputs.heldout_corpus`` and the model's θ for it (``MetricRun.heldout_doc_topic``)
``probability_model``  a model whose topic-word rows are p(w | k) of a model of the words, so that Σ_k θ_dk φ_kw
                       is a probability of the document's words (not NMF, LSI or c-TF-IDF weights: such a
                       model says why in ``output.extra["not_a_probability_model"]``)
``top_words``          a non-empty N grid, every topic at least its largest N words long
``rbo_words``          every topic at least ``MetricSettings.rbo_top_n`` words long
``two_topics``         two or more topics
``corpus``             the corpus the model was fitted on (token order of ``token_topics``)
``reference``          a reference corpus (``reference``, or else ``corpus``) that uses every scored topic word
``varied_reference``   a reference corpus in which words occur apart: two or more documents, not every word in
                       every one (else coherence is undefined: :func:`~.coherence.reference_degeneracy`)
``out_of_reference``   a reference corpus that lacks some of the topics' top words and has at least two of
                       some topic's (the coherence over the in-reference words, scored in the full one's place)
``word_vectors``       word vectors (given, or built by the context) for every scored topic word
``rng``                ``MetricRun.rng``, a ``numpy.random.Generator``
``llm``                an LLM judge in the context, every judged topic at least its ``top_words`` words long
``documents``          the corpus the model was fitted on, θ over its documents, and as many documents as a
                       topic shows (``JudgeSettings.exemplar_documents + evaluation_documents``)
=====================  ==========================================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from topicbench.core.constants import IN_REFERENCE_MIN_WORDS, NOT_A_PROBABILITY_MODEL
from ._topics import too_short, topic_word_problem
from .coherence import reference_degeneracy
from .coherence_in_reference import has_out_of_reference_words, in_reference_top_words
from .context import MetricRun


class MetricNotApplicable(Exception):
    """A metric does not apply to this output or context; not an error of the input.

    Attributes
    ----------
    metric : str
    reason : str
        Why, as the scoring records it (``"gibbs_lda assigns no topics to tokens"``).
    """

    def __init__(self, metric: str, reason: str, needs: str):
        self.metric = metric
        self.reason = reason
        super().__init__(f"metric {metric!r} needs {needs}")


@dataclass(frozen=True)
class Missing:
    """An unmet need: the reason recorded, and what is needed (with how to give it)."""

    reason: str
    needs: str


def _token_topics(output, run: MetricRun):
    met = output.token_topics is not None
    return None if met else Missing(f"{output.model} assigns no topics to tokens",
                                    f"token assignments, which the {output.model!r} output does not have")


def _labels(output, run: MetricRun):
    labels = run.inputs.document_labels
    if labels is None:
        return Missing("the corpus has no labels", "document labels: the corpus has none (set MetricInputs(labels=...))")
    # a corpus of one class has nothing to classify: that is the corpus, not bad input
    if len(set(labels)) < 2:
        return Missing("the corpus has a single label", "documents of two or more labels")
    return None


def _heldout(output, run: MetricRun):
    needs = "held-out documents and the model's theta for them: set heldout_corpus and heldout_doc_topic"
    if run.inputs.heldout_corpus is None:
        return Missing("no held-out split", needs)
    if run.heldout_doc_topic is None:
        return Missing(f"{output.model} cannot infer held-out documents", needs)
    return None


def _probability_model(output, run: MetricRun):
    reason = output.extra.get(NOT_A_PROBABILITY_MODEL)
    return Missing(f"not a probability model: {reason}",
                   "topic-word rows that are word probabilities of a model of the words") if reason else None


def _top_words(output, run: MetricRun):
    shortest = min(len(words) for words in output.topics)
    met = bool(run.top_n) and shortest >= max(run.top_n)
    return None if met else Missing(f"{output.model}'s shortest topic has {shortest} words",
                                    "topics at least as long as the largest N of the top-N grid")


def _rbo_words(output, run: MetricRun):
    depth = run.settings.rbo_top_n
    short = [k for k, words in enumerate(output.topics) if len(words) < depth]
    return Missing(too_short(short[0], len(output.topics[short[0]]), depth),
                   f"topics of at least {depth} words") if short else None


def _two_topics(output, run: MetricRun):
    met = len(output.topics) >= 2
    return None if met else Missing(f"{output.model} has a single topic", "two or more topics")


def _corpus(output, run: MetricRun):
    met = run.inputs.corpus is not None
    return None if met else Missing("no corpus the model was fitted on",
                                    "the corpus the model was fitted on: set MetricInputs(corpus=...)")


def _rng(output, run: MetricRun):
    met = isinstance(run.rng, np.random.Generator)
    return None if met else Missing(
        "no random generator", "a random generator: score with a seed (or MetricRun(rng=np.random.default_rng(seed)))"
    )


def _reference(output, run: MetricRun):
    reference = run.inputs.reference_corpus
    if reference is None:
        return Missing("no reference corpus", "a reference corpus: set MetricInputs(reference=...) or corpus=...")
    problem = topic_word_problem(
        output.topics, reference.word_index, run.context.reference_known(), max(run.top_n, default=1),
        oov=run.settings.oov, reference=f"the reference corpus {reference.name!r}",
    )
    return None if problem is None else Missing(problem, f"topic words the reference corpus uses: {problem}")


def _varied_reference(output, run: MetricRun):
    reference = run.inputs.reference_corpus
    if reference is None:
        return None  # no reference at all: the need ``reference`` says so
    problem = reference_degeneracy(reference, run.context.reference_known())
    return None if problem is None else Missing(problem, "a reference corpus of two or more documents that differ "
                                                         "in their words")


def _out_of_reference(output, run: MetricRun):
    reference = run.inputs.reference_corpus
    if reference is None:
        return Missing("no reference corpus", "a reference corpus: set MetricInputs(reference=...) or corpus=...")
    n, known = max(run.top_n, default=1), run.context.reference_known()
    if not has_out_of_reference_words(output.topics, reference.word_index, known, n):
        return Missing(f"every top {n} word of {output.model}'s topics occurs in the reference corpus {reference.name!r}",
                       "top words out of the reference corpus (the full measure applies)")
    if all(len(ids) < IN_REFERENCE_MIN_WORDS for ids in in_reference_top_words(output.topics, reference.word_index, known, n)):
        return Missing(f"no topic of {output.model} keeps {IN_REFERENCE_MIN_WORDS} of its top {n} words in the reference "
                       f"corpus {reference.name!r}", f"topics with {IN_REFERENCE_MIN_WORDS} top words in the reference corpus")
    return None


def _word_vectors(output, run: MetricRun):
    if not run.context.has_word_vectors:
        return Missing("no word vectors", "word vectors: set MetricInputs(word_vectors=..., vector_vocabulary=...)")
    vectors, vocabulary = run.context.word_vectors()
    if len(vocabulary) != len(vectors):
        return None  # bad input: the metric raises it
    problem = topic_word_problem(
        output.topics, run.context.vector_index(), run.context.usable_vectors(), max(run.top_n, default=1),
        oov=run.settings.oov, reference="the word vectors",
    )
    return None if problem is None else Missing(problem, f"word vectors of the topic words: {problem}")


def _llm(output, run: MetricRun):
    if run.context.judge is None:
        return Missing("no LLM endpoint is configured",
                       "an LLM endpoint: an llm: block in the config (base_url, model), or --llm-base-url and --llm-model")
    depth = run.context.judge_settings.top_words
    short = [k for k, words in enumerate(output.topics) if len(words) < depth]
    return Missing(too_short(short[0], len(output.topics[short[0]]), depth),
                   f"topics of at least {depth} words") if short else None


def _documents(output, run: MetricRun):
    corpus = run.inputs.corpus
    if corpus is None:
        return Missing("no corpus the model was fitted on",
                       "the documents the model was fitted on: set MetricInputs(corpus=...)")
    columns = output.topic_document_matrix.shape[1]
    if columns != corpus.n_documents:
        return Missing(f"{output.model}'s theta covers {columns} documents, the corpus {corpus.n_documents}",
                       "theta over the documents of MetricInputs.corpus")
    settings = run.context.judge_settings
    shown = settings.exemplar_documents + settings.evaluation_documents
    if corpus.n_documents < shown:
        return Missing(f"the corpus has {corpus.n_documents} documents, fewer than the {shown} shown per topic",
                       f"at least {shown} documents (llm.exemplar_documents + llm.evaluation_documents)")
    return None


_CHECKS = {
    "token_topics": _token_topics,
    "labels": _labels,
    "heldout": _heldout,
    "probability_model": _probability_model,
    "top_words": _top_words,
    "rbo_words": _rbo_words,
    "two_topics": _two_topics,
    "corpus": _corpus,
    "reference": _reference,
    "varied_reference": _varied_reference,
    "out_of_reference": _out_of_reference,
    "word_vectors": _word_vectors,
    "rng": _rng,
    "llm": _llm,
    "documents": _documents,
}

#: Names a metric may list in ``needs``.
NEEDS = tuple(_CHECKS)


def unmet_need(metric: str, needs, output, run: MetricRun) -> MetricNotApplicable | None:
    """The first of ``needs`` (in their order) that ``output`` and ``run`` do not meet, or None.

    Parameters
    ----------
    metric : str
        The metric's name, for the message.
    needs : sequence of str
        Names from :data:`NEEDS`; list ``top_words`` before ``reference`` and ``word_vectors``,
        whose word checks read the largest N.
    output : TopicModelOutput
    run : MetricRun
    """
    for need in needs:
        missing = _CHECKS[need](output, run)
        if missing is not None:
            return MetricNotApplicable(metric, missing.reason, missing.needs)
    return None
