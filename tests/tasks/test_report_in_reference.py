"""A coherence missing for top words out of the reference: the coherence over the words the
reference has, ranked in the model's cell with the words and topics dropped as its footnote
(issue 47, item 4; before it, issue 38 showed it beside a dash, unranked)."""

from __future__ import annotations

import json

import pandas as pd

from topicbench.tasks.report.render import format_table
from topicbench.tasks.report.summary import IN_REFERENCE_NOTE, summary_table
from topicbench.tasks.report.tables import Estimate, Gap, higher_is_better

REASON = "topic 3: the word 'zzz' does not occur in the reference corpus 'c1'"


def _runs():
    rows = [{"model": "lda", "seed": seed, "npmi@10": 0.10 + 0.01 * seed, "num_topics_used": 10} for seed in (0, 1)]
    rows += [{"model": "prodlda", "seed": seed, "npmi_in_reference@10": 0.04 + 0.02 * seed,
              "npmi_in_reference_topics@10": 7.0 + seed, "num_topics_used": 10,
              "skipped_metrics": json.dumps({"npmi": REASON})} for seed in (0, 1)]
    return pd.DataFrame([{"corpus": "c1", "status": "FINISHED", **row} for row in rows])


def test_a_coherence_missing_for_out_of_reference_words_is_ranked_over_the_in_reference_words():
    """Issue 47, item 4: one word outside the reference never removes a model from a comparison:
    its coherence over the words the reference has is ranked in its cell, with a footnote that
    states the words and topics dropped."""
    runs = _runs().assign(**{"npmi_in_reference_dropped@10": [None, None, 1.0, 3.0]})
    table = summary_table(runs, [("npmi@10", "NPMI@10")], models=["lda", "prodlda"], corpora=["c1"])
    lda, prodlda = table.cells["NPMI@10 · c1"]
    assert isinstance(lda, Estimate) and isinstance(prodlda, Estimate)
    assert prodlda.mean == 0.05 and prodlda.n == 2 and prodlda.mark == 1
    assert set(table.ranks) == {(0, "NPMI@10 · c1"), (1, "NPMI@10 · c1")}
    assert table.ranks[(0, "NPMI@10 · c1")] == 1 and table.ranks[(1, "NPMI@10 · c1")] == 2
    assert format_table(table)["NPMI@10 · c1"][1].startswith("0.0500") and "¹" in format_table(table)["NPMI@10 · c1"][1]
    assert ("¹ npmi@10 over the words the reference corpus has: 2 of its topics' top-10 words are not in the "
            "reference corpus and left out (none taken in their place); 7.5 of 10 topics keep 2 or more") in table.note
    assert "–¹" not in table.note  # a value, not a gap
    assert higher_is_better("npmi_in_reference_topics@10") is None  # a count: never marked best
    assert higher_is_better("npmi_in_reference_dropped@10") is None


def test_an_in_reference_value_that_ranks_first_is_its_columns_best():
    runs = _runs().assign(**{"npmi_in_reference@10": [None, None, 0.30, 0.31]})
    table = summary_table(runs, [("npmi@10", "NPMI@10")], models=["lda", "prodlda"], corpora=["c1"])
    assert table.ranks[(1, "NPMI@10 · c1")] == 1


def test_a_store_without_the_dropped_count_still_says_words_were_left_out():
    table = summary_table(_runs(), [("npmi@10", "NPMI@10")], models=["lda", "prodlda"], corpora=["c1"])
    assert "top words not in the reference corpus are left out" in table.note
    assert table.ranks[(1, "NPMI@10 · c1")] == 2


def test_a_gap_without_out_of_reference_words_shows_its_reason_alone():
    runs = _runs().drop(columns=["npmi_in_reference@10", "npmi_in_reference_topics@10"])
    table = summary_table(runs, [("npmi@10", "NPMI@10")], models=["lda", "prodlda"], corpora=["c1"])
    assert table.cells["NPMI@10 · c1"][1].partial is None
    assert format_table(table)["NPMI@10 · c1"][1] == "–¹" and IN_REFERENCE_NOTE not in table.note
