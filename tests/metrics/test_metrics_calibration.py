"""Agreement of a topic score with people (``core/metrics/calibration.py``), on hand-made judgments."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from topicbench.core.metrics.calibration import (
    calibration_table, model_ranking_agreement, read_human_judgments, spearman_interval,
)
from topicbench.core.validation import InputError


def _judgments(tmp_path, n=6):
    data = {}
    for dataset in ("wikitext", "nytimes"):
        data[dataset] = {}
        for m, model in enumerate(("mallet", "dvae", "etm")):
            ratings = [1.0 + 0.5 * m + 0.1 * i for i in range(n)]  # mallet < dvae < etm
            data[dataset][model] = {
                "topics": [[f"{model}{i}w{j}" for j in range(20)] for i in range(n)],
                "metrics": {"ratings_scores_avg": ratings, "intrusion_scores_avg": [r / 3 for r in ratings],
                            "c_npmi_10_full": [0.1 * r for r in ratings], "u_mass_full": [-r for r in ratings]},
            }
    path = tmp_path / "all_data.json"
    path.write_text(json.dumps(data))
    return path


def test_the_file_is_read_topic_by_topic(tmp_path):
    topics = read_human_judgments(_judgments(tmp_path))
    assert len(topics) == 36
    first = topics[0]
    assert (first.dataset, first.model, first.index, first.human_rating) == ("wikitext", "mallet", 0, 1.0)
    assert len(first.words) == 20 and first.automated == pytest.approx({"npmi": 0.1, "umass": -1.0})


def test_a_file_that_is_not_the_judgments_is_one_line(tmp_path):
    (tmp_path / "x.json").write_text('{"wikitext": {"mallet": {"topics": []}}}')
    with pytest.raises(InputError, match=r"x.json: wikitext.mallet.metrics is missing; give Hoyle et al.'s all_data.json "
                       r"\(`topicbench data fetch hoyle2021`\)"):
        read_human_judgments(tmp_path / "x.json")


def _spoiled(change):
    """Hand-made judgments (one dataset, one model, three topics) after ``change(data)``."""
    def spoil(tmp_path):
        data = {"wikitext": {"mallet": {"topics": [["river", "lake"], ["piano", "tax"], ["vote", "party"]], "metrics": {
            "ratings_scores_avg": [2.9, 1.1, 2.8], "intrusion_scores_avg": [0.9, 0.2, 1.0],
            "c_npmi_10_full": [0.2, None, 0.1]}}}}
        change(data)
        return json.dumps(data, allow_nan=True)
    return spoil


def _metrics(data):
    return data["wikitext"]["mallet"]["metrics"]


#: (what is wrong, the file's text from tmp_path, the end of the message after "<file>: ")
BAD_JUDGMENTS = [
    ("not JSON", lambda tmp: '{"wikitext": {"mallet": ', "is not JSON (line 1, column 25: Expecting value)"),
    ("a key twice", lambda tmp: '{"wikitext": {}, "wikitext": {}}', "the key 'wikitext' is given twice in one object"),
    ("a list, not datasets", lambda tmp: "[1, 2]", "the file is a list, expected an object of datasets"),
    ("no datasets", lambda tmp: "{}", "the file is an empty object, expected an object of datasets"),
    ("a dataset of no models", _spoiled(lambda d: d.update(nytimes={})), "nytimes is an empty object, expected an object of models"),
    ("a model that is a list", _spoiled(lambda d: d["wikitext"].update(etm=[])), "wikitext.etm is an empty list, expected an object"),
    ("no topics", _spoiled(lambda d: d["wikitext"]["mallet"].pop("topics")), "wikitext.mallet.topics is missing"),
    ("empty topics", _spoiled(lambda d: d["wikitext"]["mallet"].update(topics=[])), "wikitext.mallet.topics is an empty list"),
    ("an empty topic", _spoiled(lambda d: d["wikitext"]["mallet"]["topics"].__setitem__(1, [])),
     "wikitext.mallet.topics[1] is an empty list, expected a non-empty list of words"),
    ("a word that is a number", _spoiled(lambda d: d["wikitext"]["mallet"]["topics"][2].__setitem__(1, 7)),
     "wikitext.mallet.topics[2][1] is 7, expected a word"),
    ("a blank word", _spoiled(lambda d: d["wikitext"]["mallet"]["topics"][0].append(" ")),
     "wikitext.mallet.topics[0][2] is an empty string, expected a word"),
    ("metrics a list", _spoiled(lambda d: d["wikitext"]["mallet"].update(metrics=[1])),
     "wikitext.mallet.metrics is a list, expected an object of per-topic lists"),
    ("no ratings", _spoiled(lambda d: _metrics(d).pop("ratings_scores_avg")), "wikitext.mallet.metrics.ratings_scores_avg is missing"),
    ("fewer ratings than topics", _spoiled(lambda d: _metrics(d)["ratings_scores_avg"].pop()),
     "wikitext.mallet.metrics.ratings_scores_avg has 2 values for 3 topics"),
    ("more intrusion scores than topics", _spoiled(lambda d: _metrics(d)["intrusion_scores_avg"].append(0.5)),
     "wikitext.mallet.metrics.intrusion_scores_avg has 4 values for 3 topics"),
    ("a rating null", _spoiled(lambda d: _metrics(d)["ratings_scores_avg"].__setitem__(2, None)),
     "wikitext.mallet.metrics.ratings_scores_avg[2] is missing"),
    ("a rating NaN", _spoiled(lambda d: _metrics(d)["ratings_scores_avg"].__setitem__(0, float("nan"))),
     "wikitext.mallet.metrics.ratings_scores_avg[0] is missing"),
    ("a rating a string", _spoiled(lambda d: _metrics(d)["ratings_scores_avg"].__setitem__(1, "2.5")),
     "wikitext.mallet.metrics.ratings_scores_avg[1] is a string ('2.5'), expected a number"),
    ("a rating true", _spoiled(lambda d: _metrics(d)["ratings_scores_avg"].__setitem__(1, True)),
     "wikitext.mallet.metrics.ratings_scores_avg[1] is True, expected a number"),
    ("a rating off the 1-3 scale", _spoiled(lambda d: _metrics(d)["ratings_scores_avg"].__setitem__(1, 4.5)),
     "wikitext.mallet.metrics.ratings_scores_avg[1] is 4.5, outside 1-3"),
    ("an intrusion share above 1", _spoiled(lambda d: _metrics(d)["intrusion_scores_avg"].__setitem__(0, 90)),
     "wikitext.mallet.metrics.intrusion_scores_avg[0] is 90, outside 0-1"),
    ("an infinite coherence", _spoiled(lambda d: _metrics(d)["c_npmi_10_full"].__setitem__(0, float("inf"))),
     "wikitext.mallet.metrics.c_npmi_10_full[0] is inf, expected a number"),
    ("too few coherences", _spoiled(lambda d: _metrics(d)["c_npmi_10_full"].pop()),
     "wikitext.mallet.metrics.c_npmi_10_full has 2 values for 3 topics"),
]


@pytest.mark.parametrize("name, text, message", BAD_JUDGMENTS, ids=[case[0] for case in BAD_JUDGMENTS])
def test_each_level_of_the_judgments_is_checked_and_the_place_named(tmp_path, name, text, message):
    path = tmp_path / "judgments.json"
    path.write_text(text(tmp_path))
    with pytest.raises(InputError) as raised:
        read_human_judgments(path)
    assert str(raised.value).startswith(f"{path}: {message}" if not message.startswith("is not") else f"{path} {message}")
    assert "\n" not in str(raised.value)


def test_a_judgments_file_that_is_not_a_file_or_too_large_is_refused_before_reading(tmp_path):
    import os

    os.mkfifo(tmp_path / "pipe.json")  # reading it would block forever
    with pytest.raises(InputError, match="is not a regular file"):
        read_human_judgments(tmp_path / "pipe.json")
    with open(tmp_path / "huge.json", "wb") as huge:
        huge.truncate(65 * 2**20)
    with pytest.raises(InputError, match="huge.json is 65 MiB; a judgments file is at most 64 MiB"):
        read_human_judgments(tmp_path / "huge.json")


def test_a_coherence_not_computed_is_nan_not_an_error(tmp_path):
    path = tmp_path / "judgments.json"
    path.write_text(_spoiled(lambda data: None)(tmp_path))
    topics = read_human_judgments(path)
    assert [t.human_rating for t in topics] == [2.9, 1.1, 2.8] and math.isnan(topics[1].automated["npmi"])


def test_rho_and_its_interval():
    rng = np.random.default_rng(0)
    same = spearman_interval([1, 2, 3, 4, 5, 6], [10, 20, 30, 40, 50, 60], rng, draws=200)
    assert same.rho == 1.0 and same.n == 6 and not same.weak
    reversed_ = spearman_interval([1, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1], rng, draws=200)
    assert reversed_.rho == -1.0 and reversed_.weak
    noise = spearman_interval(rng.normal(size=300), rng.normal(size=300), rng, draws=300)
    assert abs(noise.rho) < 0.15 and noise.low < 0 < noise.high and noise.weak
    partial = spearman_interval([1, math.nan, 3, 4], [1, 2, 3, 4], rng, draws=50)
    assert partial.n == 3  # topics without a score are left out
    assert math.isnan(spearman_interval([1, 1, 1], [1, 2, 3], rng).rho)  # a constant score says nothing


def test_models_are_ranked_as_people_rank_them_or_not(tmp_path):
    topics = read_human_judgments(_judgments(tmp_path))
    people = [t.human_rating for t in topics]
    agree = model_ranking_agreement(topics, people)
    assert agree["wikitext"]["tau"] == pytest.approx(1.0)
    opposite = model_ranking_agreement(topics, [-value for value in people])
    assert opposite["nytimes"]["by_score"] == list(reversed(opposite["nytimes"]["by_people"]))


def test_the_table_has_the_llms_and_the_files_measures(tmp_path):
    topics = read_human_judgments(_judgments(tmp_path))
    rows = calibration_table(topics, {"llm_rating": [t.human_rating for t in topics]}, np.random.default_rng(0), draws=100)
    by_name = {row["measure"]: row for row in rows}
    assert list(by_name) == ["llm_rating", "npmi", "umass"]
    assert by_name["llm_rating"]["rating"].rho == pytest.approx(1.0) and by_name["umass"]["rating"].rho == pytest.approx(-1.0)


def test_the_interval_resamples_dataset_model_clusters_not_topics():
    # 6 (dataset, model) clusters of 20 topics; within a cluster every topic is the same topic: the
    # 120 topics hold 6 independent observations, and only a clustered bootstrap knows it
    rng = np.random.default_rng(3)
    cluster_scores, cluster_people = rng.normal(size=6), rng.normal(size=6)
    labels = [(dataset, model) for dataset in ("wikitext", "nytimes") for model in ("mallet", "dvae", "etm")]
    clusters = [label for label in labels for _ in range(20)]
    scores, people = np.repeat(cluster_scores, 20), np.repeat(cluster_people, 20)
    clustered = spearman_interval(scores, people, np.random.default_rng(0), clusters=clusters)
    independent = spearman_interval(scores, people, np.random.default_rng(0))
    assert clustered.rho == independent.rho  # the same point: only the interval differs
    assert clustered.high - clustered.low > 1.5 * (independent.high - independent.low)
    assert clustered.method == "percentile bootstrap, 2,000 resamples of 6 (dataset, model) clusters, 120 topics"
    assert independent.method.startswith("percentile bootstrap, 2,000 resamples of 120 topics, treated as independent "
                                         "(no (dataset, model) grouping)")


def test_a_file_of_one_group_says_its_interval_treats_topics_as_independent(tmp_path):
    topics = [t for t in read_human_judgments(_judgments(tmp_path)) if (t.dataset, t.model) == ("wikitext", "etm")]
    rows = calibration_table(topics, {}, np.random.default_rng(0), draws=200)
    assert rows[0]["rating"].method == ("percentile bootstrap, 200 resamples of 6 topics, treated as independent "
                                        "(1 (dataset, model) group(s))")
    everything = calibration_table(read_human_judgments(_judgments(tmp_path)), {}, np.random.default_rng(0), draws=200)
    assert everything[0]["rating"].method.startswith("percentile bootstrap, 200 resamples of 6 (dataset, model) "
                                                     "clusters")
    assert everything[0]["ranking"]["wikitext"]["models"] == 3  # the τ over 3 models: descriptive


def test_cluster_labels_must_match_the_topics():
    with pytest.raises(InputError, match="2 cluster labels for 3 topics"):
        spearman_interval([1, 2, 3], [1, 2, 3], np.random.default_rng(0), clusters=["a", "b"])
