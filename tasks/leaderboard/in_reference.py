"""A headline coherence a fit lacks for top words outside the reference corpus, ranked as its value
over the words the reference has: one word never removes a model from the leaderboard (on its
dataset, nor across datasets), and its cell says what was dropped
(:mod:`~topicbench.tasks.report.in_reference`, the report's rule)."""

from __future__ import annotations

import pandas as pd

from topicbench.tasks.report.in_reference import in_reference_keys, in_reference_note

#: The column of the score table that holds, on a row standing in for a missing headline score, what
#: was dropped (NaN on the others).
IN_REFERENCE_NOTE = "in_reference_note"


def with_in_reference_scores(table: pd.DataFrame, headline) -> pd.DataFrame:
    """``table`` (one row per run and score: ``run_id``, ``corpus``, ``entry``, ``score``,
    ``value``, ``num_topics_used``, ...) with a row ``score = key`` for each headline ``key`` a
    run has no value of and an in-reference value of, that value in it and the footnote (over its
    model's seeds on the dataset) in :data:`IN_REFERENCE_NOTE`."""
    added = []
    for key, _ in headline:
        keys = in_reference_keys(key)
        if keys is None:
            continue
        scored = set(table.run_id[(table.score == key) & table.value.notna()])
        stand_in = table[(table.score == keys[0]) & table.value.notna() & ~table.run_id.isin(scored)]
        if stand_in.empty:
            continue
        counts = _wide(table[table.run_id.isin(stand_in.run_id) & table.score.isin(keys)], keys)
        for (corpus, entry), rows in stand_in.groupby(["corpus", "entry"], sort=False):
            note = in_reference_note(key, counts.loc[rows.run_id.tolist()], keys)
            added.append(rows.assign(score=key, **{IN_REFERENCE_NOTE: note}))
    if not added:
        return table.assign(**{IN_REFERENCE_NOTE: None}) if IN_REFERENCE_NOTE not in table else table
    return pd.concat([table.assign(**{IN_REFERENCE_NOTE: None}), *added], ignore_index=True)


def in_reference_notes(table: pd.DataFrame, key: str) -> dict:
    """entry -> the footnote of its ``key`` value where that value is an in-reference one."""
    rows = table[(table.score == key) & table[IN_REFERENCE_NOTE].notna()] if IN_REFERENCE_NOTE in table else table[:0]
    return dict(zip(rows.entry, rows[IN_REFERENCE_NOTE]))


def _wide(rows: pd.DataFrame, keys) -> pd.DataFrame:
    """The runs of ``rows`` as one row each (index ``run_id``): the in-reference keys as columns,
    and the topics each run used."""
    wide = rows.pivot_table(index="run_id", columns="score", values="value", aggfunc="first")
    topics = rows.drop_duplicates("run_id").set_index("run_id").num_topics_used
    return wide.reindex(columns=list(keys)).assign(num_topics_used=pd.to_numeric(topics, errors="coerce"))
