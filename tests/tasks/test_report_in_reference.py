"""The summary beside a coherence's gap for top words out of the reference: the coherence over the
words the reference has, labelled, with the topics it averages (issue 38, item 3)."""

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


def test_a_gap_for_out_of_reference_words_shows_the_in_reference_score_beside_its_reason():
    table = summary_table(_runs(), [("npmi@10", "NPMI@10")], models=["lda", "prodlda"], corpora=["c1"])
    lda, prodlda = table.cells["NPMI@10 · c1"]
    assert isinstance(lda, Estimate) and isinstance(prodlda, Gap)
    assert prodlda.reason == f"npmi does not apply to prodlda: {REASON}"
    assert prodlda.partial.value.mean == 0.05 and prodlda.partial.value.n == 2
    assert (prodlda.partial.topics, prodlda.partial.of) == (7.5, 10)
    assert format_table(table)["NPMI@10 · c1"][1] == "–¹ (in-reference words: 0.0500, 7.50 of 10 topics)"
    assert IN_REFERENCE_NOTE in table.note and f"–¹ npmi does not apply to prodlda: {REASON}." in table.note
    assert set(table.ranks) == {(0, "NPMI@10 · c1")}  # the partial value is not ranked against full ones
    assert higher_is_better("npmi_in_reference_topics@10") is None  # a count: never marked best


def test_a_gap_without_out_of_reference_words_shows_its_reason_alone():
    runs = _runs().drop(columns=["npmi_in_reference@10", "npmi_in_reference_topics@10"])
    table = summary_table(runs, [("npmi@10", "NPMI@10")], models=["lda", "prodlda"], corpora=["c1"])
    assert table.cells["NPMI@10 · c1"][1].partial is None
    assert format_table(table)["NPMI@10 · c1"][1] == "–¹" and IN_REFERENCE_NOTE not in table.note
