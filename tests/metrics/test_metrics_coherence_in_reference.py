"""core/metrics/coherence_in_reference.py: coherence over the top words the reference has (issue 38,
item 3), checked against gensim's CoherenceModel on the restricted word lists; and the scoring that
puts it beside the gap of a coherence that does not apply."""

from __future__ import annotations

import numpy as np
import pytest

from metrics_helpers import GENSIM_TOLERANCE, gensim_per_topic, spy_on_counting
from topicbench.core.metrics.coherence_in_reference import coherence_in_reference, in_reference_top_words
from topicbench.core.metrics.context import MetricContext, MetricInputs, MetricSettings
from topicbench.core.metrics.registry import METRICS, metric_for_key
from topicbench.core.metrics.scoring import score
from topicbench.core.output import TopicModelOutput
from topicbench.core.preprocess import corpus_from_token_lists
from topicbench.core.validation import InputError

THEMES = [
    "budget tax spending deficit revenue cut economy jobs",
    "war troops iraq military soldiers defense security army",
    "school teacher education student college learning class exam",
    "health care hospital doctor patient insurance medicine clinic",
]


@pytest.fixture(scope="module")
def corpus():
    rng = np.random.default_rng(0)
    documents = []
    for d in range(60):
        words = THEMES[d % 4].split() * 2 + THEMES[(d + 1) % 4].split()[:3]
        documents.append(list(rng.permutation(words)))
    # the last health documents alone use "clinic" and "insurance": a reference without them lacks both
    return corpus_from_token_lists(documents, name="themes")


@pytest.fixture(scope="module")
def reference(corpus):
    lacks = {corpus.word_index["clinic"], corpus.word_index["insurance"]}
    return corpus.subset([d for d in range(corpus.n_documents) if not lacks & set(corpus.document(d).tolist())],
                         name="without clinic")


def topics_with_gaps():
    """Four topics: in-reference words, two out-of-reference words mixed in, and one topic of
    out-of-reference words but one."""
    return [
        ["budget", "tax", "clinic", "spending", "deficit", "revenue"],
        ["war", "insurance", "troops", "clinic", "iraq", "army"],
        ["school", "teacher", "education", "student", "college", "exam"],
        ["clinic", "insurance", "xylophone", "health", "zither", "quasar"],
    ]


def reference_texts(reference):
    return [[reference.vocabulary[t] for t in reference.document(d)] for d in range(reference.n_documents)]


@pytest.mark.parametrize("measure, window", [("umass", None), ("npmi", 10), ("cv", 110)])
def test_each_topic_is_scored_over_its_in_reference_top_words_as_gensim_scores_them(corpus, reference, measure, window):
    topics = topics_with_gaps()
    scores = coherence_in_reference(topics, reference, (measure,), (4, 6))[measure]
    texts = reference_texts(reference)
    known = np.bincount(reference.token_ids, minlength=reference.n_words) > 0
    for n in (4, 6):
        kept = in_reference_top_words(topics, reference.word_index, known, n)
        assert [len(ids) for ids in kept] == list(scores.words_kept[n])
        for k, ids in enumerate(kept):
            words = [reference.vocabulary[i] for i in ids]
            assert words == [w for w in topics[k][:n] if w not in {"clinic", "insurance", "xylophone", "zither", "quasar"}]
            if len(words) < 2:
                assert np.isnan(scores.per_topic[n][k])
                continue
            expected = gensim_per_topic([words], texts, measure, (len(words),), window=window)[len(words)][0]
            assert scores.per_topic[n][k] == pytest.approx(expected, abs=GENSIM_TOLERANCE)
    # topic 3 keeps one word ("health"): left out of the mean, and the count says so
    assert scores.topics_scored(6) == 3
    assert scores.mean[6] == pytest.approx(np.mean(scores.per_topic[6][:3]))
    assert scores.as_dict()[f"{measure}_in_reference_topics@6"] == 3.0


def test_one_count_per_window_serves_every_measure(corpus, reference, monkeypatch):
    builds = spy_on_counting(monkeypatch)
    counts = {}
    coherence_in_reference(topics_with_gaps(), reference, ("uci", "npmi"), (6,), counts=counts)
    assert builds == [10]
    coherence_in_reference(topics_with_gaps()[:2], reference, ("npmi",), (4,), counts=counts)
    assert builds == [10]  # covered: nothing counted again


def test_topics_without_two_in_reference_words_anywhere_are_an_error(reference):
    with pytest.raises(InputError, match="no topic keeps 2 of its top 3 words in the reference corpus"):
        coherence_in_reference([["clinic", "xylophone", "health"]], reference, ("npmi",), 3)


def make_output(corpus, topics, model):
    k = len(topics)
    rng = np.random.default_rng(k)
    return TopicModelOutput(model=model, vocabulary=corpus.vocabulary, topics=topics,
                            topic_word_matrix=rng.dirichlet(np.ones(corpus.n_words), size=k),
                            topic_document_matrix=rng.dirichlet(np.ones(k), size=corpus.n_documents).T)


def test_a_fit_with_out_of_reference_words_gets_the_reason_and_the_in_reference_score(corpus, reference):
    context = MetricContext(MetricInputs(corpus=corpus, reference=reference, settings=MetricSettings(top_n=(5,))))
    gapped = score(make_output(corpus, topics_with_gaps(), "neural"), context, ["npmi", "topic_diversity"], seed=0)
    assert gapped.skipped["npmi"].startswith("topic 0: the word 'clinic' does not occur in the reference corpus")
    assert "npmi@5" not in gapped.values and "topic_diversity@5" in gapped.values
    assert gapped.values["npmi_in_reference_topics@5"] == 3.0
    # top-5 words the reference lacks: clinic; insurance, clinic; none; clinic, insurance, xylophone, zither
    assert gapped.values["npmi_in_reference_dropped@5"] == 7.0
    direct = coherence_in_reference(topics_with_gaps(), reference, ("npmi",), (5,))["npmi"]
    assert gapped.values["npmi_in_reference@5"] == direct.mean[5]
    assert len(gapped.topic_scores["npmi_in_reference@5"]) == 4  # each topic's own (NaN where not scored)

    whole = score(make_output(corpus, [t.split()[:5] for t in THEMES[:3]], "lda"), context, ["npmi"], seed=0)
    assert set(whole.values) == {"npmi@5"} and whole.skipped == {}  # neither the reason nor the partial score


def test_the_in_reference_keys_belong_to_their_measure():
    for key in ("npmi_in_reference@10", "npmi_in_reference_topics@10", "npmi_in_reference_dropped@10"):
        assert metric_for_key(key) is METRICS.get("npmi")
    assert metric_for_key("umass_in_reference@5") is METRICS.get("umass")
    assert not METRICS.get("topic_diversity").owns("topic_diversity_in_reference@10")
