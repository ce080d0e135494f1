"""Degenerate data gets reasons, not ranks (issue 46, item 8): coherence over a reference of one
document, or one where every word is in every document, is undefined with a reason (not -1 ranked
first); a report whose sections have nothing to show says why each is missing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from topicbench.core.metrics.context import MetricContext, MetricInputs, MetricSettings
from topicbench.core.metrics.scoring import score
from topicbench.core.output import TopicModelOutput
from topicbench.core.preprocess import corpus_from_token_lists

WORDS = "budget tax spending deficit revenue cut economy jobs war troops iraq military".split()
COHERENCE = ("umass", "uci", "npmi", "cv")


def _scores(documents):
    corpus = corpus_from_token_lists(documents, name="tiny")
    k = 2
    output = TopicModelOutput(model="m", vocabulary=corpus.vocabulary, topics=[WORDS[:10], WORDS[2:12]],
                              topic_word_matrix=np.full((k, corpus.n_words), 1.0 / corpus.n_words),
                              topic_document_matrix=np.full((k, corpus.n_documents), 1.0 / k))
    context = MetricContext(MetricInputs(corpus=corpus, settings=MetricSettings(top_n=(5, 10))))
    return score(output, context, [*COHERENCE, "topic_diversity"], seed=0)


@pytest.mark.parametrize("documents, reason", [
    ([WORDS * 3], "the reference corpus 'tiny' has 1 document: coherence needs at least two"),
    ([WORDS, WORDS[::-1], WORDS[4:] + WORDS[:4]], "every word of the reference corpus 'tiny' occurs in every one of "
                                                  "its 3 documents: no word occurs apart from another"),
])
def test_coherence_over_a_reference_whose_words_never_occur_apart_is_not_applicable(documents, reason):
    values, skipped = _scores(documents)
    assert not any(key.startswith(COHERENCE) for key in values)  # no -1 to rank
    assert all(skipped[measure].startswith(reason) for measure in COHERENCE)
    assert values["topic_diversity@10"] == pytest.approx(0.6)  # what does not need co-occurrence is scored


def test_a_reference_whose_documents_differ_is_scored():
    values, skipped = _scores([WORDS, WORDS[:6], WORDS[6:]])
    assert "npmi@10" in values and not set(COHERENCE) & set(skipped)


# -- end to end: a benchmark on degenerate corpora, and its report ------------------------------


def _run(tmp_path, name: str, lines: list, metrics: list) -> str:
    """Run a benchmark of two Gibbs LDAs on a corpus of ``lines`` through the command line; its report.md."""
    from topicbench.flows.cli.main import main

    corpus = tmp_path / name
    corpus.mkdir()
    (corpus / "corpus.tsv").write_text("".join(f"{line}\ttrain\n" for line in lines))
    config = tmp_path / f"{name}.yaml"
    config.write_text(json.dumps({
        "experiment": name, "corpora": [{"name": name, "source": str(corpus), "preprocessing": {"preprocessed": True}}],
        "models": [{"model": "gibbs_lda", "num_topics": 2, "settings": {"iterations": 20, "top_words": 10}},
                   {"model": "gibbs_lda", "label": "gibbs_sparse", "num_topics": 2,
                    "settings": {"alpha": 0.1, "iterations": 20, "top_words": 10}}],
        "seeds": [0], "metrics": metrics, "top_n": [5, 10],
    }))
    out = tmp_path / f"{name}-report"
    code = main(["run", str(config), "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}", "--out", str(out)])
    assert code == 0
    return (out / "report.md").read_text()


@pytest.mark.usefixtures("prefect_server")
def test_a_one_document_corpus_reports_why_coherence_is_undefined_instead_of_ranking_it(tmp_path):
    text = _run(tmp_path, "one-document", [" ".join(WORDS * 4)], ["npmi", "umass", "topic_diversity"])
    summary = text[text.index("## Summary"):text.index("**Contents**")]
    assert "-1.00" not in text and "−1.00" not in text
    assert "| NPMI@10 · one-document" not in summary  # no column ranked: the reason instead
    assert ("Not shown: no model has a value of UMass@10, NPMI@10 on any corpus. Why: umass, npmi do not apply to "
            "gibbs_lda, gibbs_sparse: the reference corpus 'one-document' has 1 document") in summary


@pytest.mark.usefixtures("prefect_server")
def test_a_one_word_vocabulary_report_says_why_each_section_is_missing(tmp_path):
    text = _run(tmp_path, "one-word", ["tax tax tax"] * 6, ["npmi", "umass", "topic_diversity", "inverted_rbo"])
    for title in ("Summary: who wins where", "Coherence against N", "Topic diversity"):
        section = text[text.index(f"## {title}"):].split("\n## ", 1)[0]
        assert "Not shown: no model has a value of" in section, section
        assert "not apply to gibbs_lda, gibbs_sparse: gibbs_lda's shortest topic has 1 words" in section, section


# -- a TopicGPT generation reply of 3000 well-formed topics -----------------------------------------


class ThousandsOfTopics:
    """An LLM that answers every generation prompt with 3000 well-formed topics, and assigns every
    document to the first."""

    def ask(self, requests):
        from topicbench.core.metrics.llm_judging import JudgeReply

        many = "\n".join(f"[1] Topic {i}: Mentions matter {i}." for i in range(3000))
        return [JudgeReply(many if request.task == "topicgpt_generation" else "[1] Topic 0: the first")
                for request in requests]


def test_a_generation_reply_of_3000_topics_is_read_up_to_its_maximum_with_a_warning(caplog):
    from topicbench.baselines import _topicgpt_protocol as protocol
    from topicbench.baselines.topicgpt import TopicGPT

    topics = protocol.seed_topics(protocol.prompt_text("seed_1.md"))
    reply = "\n".join(f"[1] Topic {i}: Mentions matter {i}." for i in range(3000))
    with caplog.at_level("WARNING"):
        assert protocol.add_generated(topics, reply) == protocol.MAX_TOPICS_PER_REPLY
    assert "listed 3000 topics for one document; the first 20 were read, 2980 left out" in caplog.text
    assert len(protocol.drop_rare(topics, 0.01)) == protocol.MAX_TOPICS_PER_REPLY  # not "no topic in the format"
    corpus = corpus_from_token_lists([WORDS[:6], WORDS[6:]], name="two")
    model = TopicGPT(refine=False, sample_size=1).ask_with(ThousandsOfTopics()).fit(corpus)
    assert model.generated_topics_ == protocol.MAX_TOPICS_PER_REPLY and model.output_.topic_labels == ["Topic 0"]


def test_topics_all_under_the_removal_threshold_are_said_to_be_so():
    from topicbench.baselines import _topicgpt_protocol as protocol
    from topicbench.baselines.base import ModelError

    once_each = [protocol.Topic(f"Topic {i}", "d", 1) for i in range(200)]
    with pytest.raises(ModelError, match=r"each of the 200 topics the LLM proposed was proposed fewer than "
                                         r"removal_threshold 0.01 x 200 = 2 times \(at most 1\)"):
        protocol.drop_rare(once_each, 0.01)
