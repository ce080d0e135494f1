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
    with pytest.raises(InputError, match="is not Hoyle et al.'s all_data.json .*topicbench data fetch hoyle2021"):
        read_human_judgments(tmp_path / "x.json")


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
