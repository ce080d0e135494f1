"""TopicGPT (Pham et al., NAACL 2024): an LLM proposes topic labels from sampled documents, merges
near-duplicates, and assigns each document to one of them, through the project's LLM endpoint.

The authors' package (``topicgpt_python``) cannot be installed beside the pinned stack (it needs
vllm and a CUDA torch) and imports several cloud SDKs at import time, so this is the published
protocol with the authors' prompt files (``topicbench.baselines._topicgpt_protocol``, checked against their
SHA-256 by the tests).

The model asks an LLM, but ``baselines`` may not import ``tasks``, where the endpoint's client
lives: the caller hands the model an *asker* before :meth:`TopicGPT.fit`
(:meth:`TopicGPT.ask_with`), any object with ``ask(requests) -> replies`` over
:class:`~topicbench.core.metrics.llm_judging.JudgeRequest` and
:class:`~topicbench.core.metrics.llm_judging.JudgeReply`. The fit task gives it
:class:`topicbench.tasks.llm.judge.EndpointJudge` for the config's ``llm:`` block: the judges'
cache, token budget, concurrency, retries, redaction and records, so a re-run with the same seed
asks nothing and its cost is tracked (``fit_llm_requests`` and tokens).

References
----------
C. M. Pham, A. Hoyle, S. Sun, P. Resnik, M. Iyyer, "TopicGPT: A Prompt-based Topic Modeling
Framework", NAACL 2024, §2 (generation, refinement, assignment with self-correction), §3
(harmonic purity, ARI, NMI against gold labels).
"""

from __future__ import annotations

import logging

import numpy as np

from topicbench.core.constants import OUTPUT_TOP_WORDS
from topicbench.core.corpus import Corpus
from topicbench.core.metrics.llm_judging import JudgeRequest
from topicbench.core.output import TopicModelOutput
from topicbench.core.validation import InputError

from . import _topicgpt_protocol as protocol
from .base import ModelError, TopicModel, normalize_rows, require_integers, top_words_of
from .bounds import MAX_TOP_WORDS, MAX_TOPICS

#: The most documents, reply tokens and document words of the prompts (each sampled document is
#: one request; 100,000 tokens is about the longest context an endpoint takes).
MAX_PROMPT_COUNT = 100_000
#: The most refinement requests.
MAX_MERGE_PROMPTS = 10_000

logger = logging.getLogger(__name__)

class TopicGPT(TopicModel):
    """TopicGPT's top-level topics: generate -> refine -> assign (-> correct), one LLM request each.

    1. **Generate**: for each of ``sample_size`` documents drawn with the seed (all, in a random
       order, when the corpus is smaller), the authors' generation prompt shows the topics so far
       (labels only; first the authors' seed topic) and the document; each top-level line of the
       reply adds a topic or counts an existing one once more (labels compared without case).
    2. **Refine**: the authors' loop: the two most similar pairs of topics (cosine of their
       all-MiniLM-L6-v2 embeddings above ``merge_threshold``, pairs not shown before) go to the
       refinement prompt until no pair is left or ``max_merge_prompts`` were asked; then topics
       proposed less than ``removal_threshold`` of the total count are dropped, and the
       ``max_topics`` most proposed kept.
    3. **Assign**: every document, with the topic list (labels and descriptions), to the authors'
       assignment prompt, concurrently. A reply that names no listed topic, or one not in the
       list, is asked once more with the authors' correction prompt (their single round).

    Settings
    --------
    sample_size : int
        Documents the topics are generated from (the authors sample; default 100; at most
        :data:`MAX_PROMPT_COUNT`, 100,000).
    max_topics : int
        Most topics kept after refinement (the most often proposed; at most 100,000).
    temperature : float
        Sampling temperature of every request (the authors' default 0; at most 2).
    max_reply_tokens : int
        The token limit of each reply (at most 100,000).
    max_document_words : int
        Words of a document shown in a prompt (its first ones; the authors truncate to the
        model's context in tokens; at most 100,000).
    refine : bool
        Run the refinement step (it needs the bundled sentence-transformers model).
    merge_threshold : float
        Cosine similarity above which two topics are shown to the refinement prompt (authors 0.5;
        at most 1).
    max_merge_prompts : int
        Most refinement requests (the authors' loop has no limit; a weak model can keep it going;
        at most :data:`MAX_MERGE_PROMPTS`, 10,000).
    removal_threshold : float
        Share of the total count below which a topic is dropped (authors 0.01; 0 keeps all; at
        most 1).
    top_words : int
        Words per topic in the output's topic lists (at most 1000).

    Notes
    -----
    Each document has one topic, the first listed topic its reply names (the authors' ``metric_calc``
    keeps the first topic named, listed or not; θ has rows for listed topics only): θ is one-hot, and a
    document no reply assigns (after the correction) has a uniform column, counted as
    ``unassigned_documents_``. A topic's word distribution is the word counts of the documents
    assigned to it, normalised (the corpus's tokens, after preprocessing). Topics no document is
    assigned to are dropped, so K is what the assignment uses. TopicGPT chooses its own number of
    topics; ``num_topics`` is refused. Labels are the output's ``topic_labels``, descriptions in
    ``extra["topic_descriptions"]``. Where it differs from the authors' code: the top level of their
    hierarchy only; documents cut to ``max_document_words`` words, not to the model's context in
    tokens (so no topic list is pruned by embedding similarity); the correction asked at
    ``temperature`` (theirs at 1.0); a seed topic kept only where the LLM proposes it again.
    """

    name = "topicgpt"
    family = "LLM prompting (generate, refine, assign)"
    defaults = {
        "sample_size": 100,
        "max_topics": 50,
        "temperature": 0.0,
        "max_reply_tokens": 500,
        "max_document_words": 300,
        "refine": True,
        "merge_threshold": 0.5,
        "max_merge_prompts": 50,
        "removal_threshold": 0.01,
        "top_words": OUTPUT_TOP_WORDS,
    }
    setting_maxima = {
        "sample_size": MAX_PROMPT_COUNT, "max_topics": MAX_TOPICS, "temperature": 2.0,
        "max_reply_tokens": MAX_PROMPT_COUNT, "max_document_words": MAX_PROMPT_COUNT, "merge_threshold": 1.0,
        "max_merge_prompts": MAX_MERGE_PROMPTS, "removal_threshold": 1.0, "top_words": MAX_TOP_WORDS,
    }
    reproducible = False  # the endpoint's sampling decides; with its replies cached, a re-run is identical
    topics_decided_by = "the LLM's generation and refinement (max_topics caps them)"
    #: The fit asks an LLM: the caller must hand it an asker (:meth:`ask_with`) first.
    asks_llm = True

    def __init__(self, num_topics=None, *, random_state: int = 0, **settings):
        super().__init__(num_topics, random_state=random_state, **settings)
        self._asker = None

    def ask_with(self, asker) -> "TopicGPT":
        """Ask the LLM through ``asker`` (``ask(list of JudgeRequest) -> list of JudgeReply``);
        returns the model."""
        if not callable(getattr(asker, "ask", None)):
            raise InputError(f"{self.name}: the asker must have a method ask(requests), got {type(asker).__name__}")
        self._asker = asker
        return self

    def check_num_topics(self, num_topics) -> None:
        if num_topics is not None:
            raise InputError(f"{self.name}: num_topics is not a setting of TopicGPT (the LLM chooses the topics); "
                             "leave it out and cap them with max_topics")

    def _check_settings(self, settings: dict) -> None:
        require_integers(self.name, settings, {"sample_size": 1, "max_topics": 1, "max_reply_tokens": 16,
                                               "max_document_words": 5, "max_merge_prompts": 0, "top_words": 1})
        checks = (("temperature", 0.0, 2.0), ("merge_threshold", -1.0, 1.0), ("removal_threshold", 0.0, 1.0))
        for key, low, high in checks:
            value = settings[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
                raise InputError(f"{self.name}: {key} must be a number in [{low:g}, {high:g}], got {value!r}")

    def _fit(self, corpus: Corpus):
        if self._asker is None:
            raise InputError(f"{self.name}: it asks an LLM and was given no endpoint: give the config an llm: block "
                             "(base_url, model) or run with --llm-base-url URL --llm-model NAME (in Python: "
                             "model.ask_with(asker) before fit)")
        rng = np.random.default_rng(self.random_state)
        topics = self._generate(corpus, rng)
        generated = len([topic for topic in topics if topic.count > 0])
        if self.settings["refine"]:
            topics = self._refine(topics)
        topics = protocol.drop_rare(topics, self.settings["removal_threshold"])
        kept = sorted(range(len(topics)), key=lambda i: -topics[i].count)[: self.settings["max_topics"]]
        topics = [topics[i] for i in sorted(kept)]  # the most proposed, in the order they were first proposed
        if not topics:
            raise ModelError(f"{self.name}: the LLM proposed no topic in the format '[1] Label: description' for any of "
                             f"{min(self.settings['sample_size'], corpus.n_documents)} sampled documents; a stronger "
                             "model, or more documents (sample_size), may")
        assigned = self._assign(corpus, topics)
        return self._output(corpus, topics, assigned, generated)

    def _request(self, task: str, prompt: str) -> JudgeRequest:
        """One request as the authors ask it: their system message, then the prompt."""
        return JudgeRequest(task, (("system", protocol.SYSTEM_MESSAGE), ("user", prompt)),
                            self.settings["max_reply_tokens"], temperature=float(self.settings["temperature"]))

    def _generate(self, corpus: Corpus, rng) -> list:
        """Step 1: one request per sampled document, in turn (each sees the topics so far)."""
        template = protocol.prompt_text("generation_1.txt")
        topics = protocol.seed_topics(protocol.prompt_text("seed_1.md"))
        sample = rng.permutation(corpus.n_documents)[: self.settings["sample_size"]]
        for step, d in enumerate(sample, start=1):
            document = protocol.excerpt(corpus.document_text(int(d)), self.settings["max_document_words"])
            prompt = protocol.generation_prompt(template, topics, document)
            (reply,) = self._asker.ask([self._request("topicgpt_generation", prompt)])
            protocol.add_generated(topics, reply.text)
            self._progress(step, len(sample))
        return topics

    def _refine(self, topics: list) -> list:
        """Step 2: merge the most similar pairs through the refinement prompt, as the authors loop."""
        from .embeddings import embed_texts

        template = protocol.prompt_text("refinement.txt")
        topics = [topic for topic in topics if topic.count > 0]
        asked: list = []
        for _ in range(self.settings["max_merge_prompts"]):
            if len(topics) < 2:
                break
            lines = [topic.line() for topic in topics]
            vectors = embed_texts(lines)
            shown = protocol.similar_pairs(vectors @ vectors.T, lines, asked, self.settings["merge_threshold"])
            if not shown:
                break
            (reply,) = self._asker.ask([self._request("topicgpt_refinement", template.format(Topics="\n".join(shown)))])
            topics = protocol.apply_merges(topics, reply.text)
        return topics

    def _assign(self, corpus: Corpus, topics: list) -> list:
        """Step 3: each document's topic index (None: unassigned), with one round of correction."""
        tree = "\n".join(topic.line() for topic in topics)
        labels = [topic.label for topic in topics]
        words = self.settings["max_document_words"]
        documents = [protocol.excerpt(corpus.document_text(d), words) for d in range(corpus.n_documents)]
        template = protocol.prompt_text("assignment.txt")
        requests = [self._request("topicgpt_assignment", template.format(Document=doc, tree=tree)) for doc in documents]
        replies = self._asker.ask(requests)
        read = [protocol.read_assignment(reply.text, labels) for reply in replies]
        again = [d for d, (_, flagged) in enumerate(read) if flagged]
        if again:
            template = protocol.prompt_text("correction.txt")
            requests = [self._request("topicgpt_correction", template.format(
                Document=documents[d], tree=tree, Message=protocol.correction_message(replies[d].text))) for d in again]
            for d, reply in zip(again, self._asker.ask(requests)):
                read[d] = protocol.read_assignment(reply.text, labels)
        logger.info("%s: %d of %d documents were asked again with the correction prompt", self.name, len(again),
                    corpus.n_documents)
        return [topic for topic, _ in read]

    def _output(self, corpus: Corpus, topics: list, assigned: list, generated: int):
        """θ one-hot on each document's topic (uniform where none), word counts of each topic's
        documents normalised; topics without documents dropped."""
        used = sorted({k for k in assigned if k is not None})
        if not used:
            raise ModelError(f"{self.name}: the LLM assigned none of the {corpus.n_documents} documents to one of its "
                             f"{len(topics)} topics, even after the correction prompt")
        row_of = {k: row for row, k in enumerate(used)}
        theta = np.full((len(used), corpus.n_documents), 1.0 / len(used))
        counts = np.zeros((len(used), corpus.n_words))
        for d, k in enumerate(assigned):
            if k is not None:
                theta[:, d] = 0.0
                theta[row_of[k], d] = 1.0
                np.add.at(counts[row_of[k]], corpus.document(d), 1.0)
        unassigned = sum(k is None for k in assigned)
        sizes = [sum(k == topic for k in assigned) for topic in used]
        topic_word = normalize_rows(counts)
        kept = [topics[k] for k in used]
        output = TopicModelOutput(
            model=self.name, vocabulary=tuple(corpus.vocabulary),
            topics=top_words_of(topic_word, corpus.vocabulary, self.settings["top_words"]),
            topic_word_matrix=topic_word, topic_document_matrix=theta, topic_labels=[t.label for t in kept],
            extra={"topic_descriptions": [t.description for t in kept], "topic_sizes": sizes,
                   "unassigned_documents": unassigned},
        )
        return output, {"num_topics_": len(used), "generated_topics_": generated, "unassigned_documents_": unassigned}
