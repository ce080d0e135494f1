"""Issue 47, item 4 on the leaderboard: a model whose NPMI is missing because one top word is not in
the reference corpus keeps its place, ranked on its coherence over the words the reference has, on
its dataset and across datasets, and its cell says what was dropped."""

from __future__ import annotations

from test_leaderboard import write_bundle

from topicbench.tasks.leaderboard.ranking import build_leaderboard, load_bundle
from topicbench.tasks.leaderboard.render import dataset_table


def _scores(prodlda_npmi: list) -> dict:
    return {
        ("man", "lda"): {"npmi@10": [0.10, 0.11, 0.12], "topic_diversity@10": [0.5, 0.5, 0.6]},
        ("man", "prodlda"): {"npmi_in_reference@10": prodlda_npmi, "npmi_in_reference_topics@10": [19.0, 20.0, 20.0],
                             "npmi_in_reference_dropped@10": [1.0, 1.0, 1.0], "topic_diversity@10": [0.8, 0.8, 0.9]},
    }


def test_a_model_without_npmi_for_one_word_is_ranked_on_its_in_reference_npmi(tmp_path):
    board = build_leaderboard([load_bundle(write_bundle(tmp_path / "b", _scores([0.20, 0.21, 0.22])))])
    (dataset,) = board.datasets
    entries = {entry.model: entry for entry in dataset.entries}
    assert entries["prodlda"].scores["npmi@10"].mean == 0.21
    assert entries["prodlda"].ranks["npmi@10"].rank == 1 and entries["lda"].ranks["npmi@10"].rank == 2
    note = entries["prodlda"].in_reference["npmi@10"]
    assert "1 of its topics' top-10 words is not in the reference corpus" in note
    assert "19.7 of 20 topics keep 2 or more" in note
    assert entries["lda"].in_reference == {}
    row = next(row for row in dataset_table(dataset, board.headline).rows if row[1].text == "prodlda")
    npmi = row[2]
    assert npmi.text == "0.210" and "in-reference words only" in npmi.detail and note in npmi.title
    (npmi_cross,) = [cross for cross in board.crosses if cross.metric == "npmi@10"]
    assert set(npmi_cross.models) == {"lda", "prodlda"}  # the cross ranking keeps it too


def test_a_full_value_is_never_replaced(tmp_path):
    scores = _scores([0.20, 0.21, 0.22])
    scores[("man", "prodlda")]["npmi@10"] = [0.01, 0.02, 0.03]
    board = build_leaderboard([load_bundle(write_bundle(tmp_path / "b", scores))])
    entries = {entry.model: entry for entry in board.datasets[0].entries}
    assert entries["prodlda"].scores["npmi@10"].mean == 0.02 and entries["prodlda"].in_reference == {}
