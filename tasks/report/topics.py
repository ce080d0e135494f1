"""The report's topics tables: each model's most prevalent topics with their words and own scores,
example documents, documents by label, and the topics of other models matched to them.

Pure functions of the run table (:func:`topicbench.tasks.results.store.collect_runs`), each topic list
read from a run's ``topics_json`` column (the facts :func:`~topicbench.tasks.results.store.collect_runs`
attached: prevalence, own scores, example documents, label counts). Every table says how many of
a model's topics it shows ("5 of 81").
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from .tables import ReportTable, TopicWords, finished_runs


def elda_topics(runs: pd.DataFrame, limit: int = 15, words: int = 10) -> dict:
    """(corpus, E-LDA variant) -> its topics from one seed: keyword label and top words, titled
    with how many of its topics are shown (``"elda on lee: 15 of 81 topics"``)."""
    if "topics_json" not in runs:
        return {}
    if "model_class" in runs:
        runs = runs[runs.model_class == "elda"]
    topics = {}
    for (corpus, model), group in runs.dropna(subset=["topics_json"]).groupby(["corpus", "model"]):
        every = json.loads(group.iloc[0]["topics_json"])
        rows = [(record.get("label") or "", " ".join(record["words"].split()[:words])) for record in every[:limit]]
        topics[(corpus, model)] = ReportTable(pd.DataFrame(rows, columns=["keyword(s)", "top words"]),
                                              title=f"{model} on {corpus}: {shown_of(len(rows), len(every))} topics")
    return topics


def shown_of(shown: int, total: int) -> str:
    """``"15 of 81"``, or ``"all 5"`` where nothing is left out."""
    return f"all {total}" if shown >= total else f"{shown} of {total}"


def first_seed_topics(runs: pd.DataFrame) -> dict:
    """(corpus, model) -> the topic records (``topics.json``'s, with the facts
    :func:`topicbench.tasks.results.store.collect_runs` added) of its first finished seed, the most
    prevalent first where every record's prevalence is known, else in the model's own order."""
    if "topics_json" not in runs:
        return {}
    done = finished_runs(runs).dropna(subset=["topics_json"]).sort_values("seed", kind="stable")
    first = {}
    for pair, group in done.groupby(["corpus", "model"]):
        records = json.loads(group.iloc[0]["topics_json"])
        if all("prevalence" in record for record in records):
            records = sorted(records, key=lambda record: -record["prevalence"])
        first[pair] = records
    return first


def model_topics(runs: pd.DataFrame, *, corpora, models, topics: int = 5, words: int = 8,
                 scored_by=()) -> list[ReportTable]:
    """One table per corpus (titled by it): each model's first ``topics`` topics from its first
    seed (the most prevalent first where the run's prevalence was read, else in the model's own
    order), its top ``words`` words each, with each topic's own score for every ``(score key,
    label)`` of ``scored_by`` its run logged; models in the order of ``models``."""
    first = first_seed_topics(runs)
    tables = []
    for corpus in corpora:
        shown = [model for model in models if (corpus, model) in first]
        rows = [_topic_row(model, first[(corpus, model)], topics, words, scored_by) for model in shown]
        if rows:
            counts = ", ".join(f"{model} {shown_of(topics, len(first[(corpus, model)]))}" for model in shown)
            tables.append(ReportTable(pd.DataFrame(rows), title=corpus, note=f"Topics shown: {counts}."))
    return tables


def _topic_row(model: str, records: list, topics: int, words: int, scored_by) -> dict:
    row = {"model": model}
    for place, record in enumerate(records[:topics], start=1):
        own = record.get("scores", {})
        scores = tuple((label, own[key]) for key, label in scored_by if key in own)
        row[f"topic {place}"] = TopicWords(tuple(record["words"].split()[:words]), record.get("prevalence"), scores)
    return row


#: Labels given a column of their own in a topics-by-label table (the most frequent); the others
#: are summed in one column.
LABEL_COLUMNS = 10


def topic_examples(runs: pd.DataFrame, *, corpora, models, topics: int = 5, words: int = 8) -> list[ReportTable]:
    """One table per (corpus, model) whose first seed logged example documents: its ``topics``
    most prevalent topics, each with the number of documents it is the main topic of and its
    example documents (``"#17: excerpt…"``, document 17 of the corpus, counted from 0), titled
    with how many of its topics are shown."""
    first = first_seed_topics(runs)
    tables = []
    for corpus, model in _pairs(first, corpora, models):
        records = first[(corpus, model)]
        shown = [record for record in records[:topics] if record.get("examples") is not None]
        if not shown:
            continue
        rows = [{"topic": TopicWords(tuple(record["words"].split()[:words]), record.get("prevalence")),
                 "main topic of": record.get("documents"),
                 "example documents": tuple(f"#{example['document']}: {example['excerpt']}"
                                            for example in record["examples"]) or None}
                for record in shown]
        tables.append(ReportTable(pd.DataFrame(rows), unit="count",
                                  title=f"{model} on {corpus}: {shown_of(len(shown), len(records))} topics, "
                                        "with example documents"))
    return tables


def topics_by_label(runs: pd.DataFrame, *, corpora, models, topics: int = 5, words: int = 4) -> list[ReportTable]:
    """One table per (corpus, model) whose first seed counted its documents by label: a row per
    shown topic (the ``topics`` most prevalent) and one for all the others, a column per label
    (the :data:`LABEL_COLUMNS` most frequent; the rest in ``"other labels"``), each cell the
    documents of that label whose main topic that is."""
    first = first_seed_topics(runs)
    tables = []
    for corpus, model in _pairs(first, corpora, models):
        records = first[(corpus, model)]
        if not any("by_label" in record for record in records):
            continue
        totals = _label_counts(records)
        ranked = sorted(totals, key=lambda label: (-totals[label], label))
        columns, rest = ranked[:LABEL_COLUMNS], ranked[LABEL_COLUMNS:]
        rows = [_label_row(" ".join(record["words"].split()[:words]), [record], columns, rest)
                for record in records[:topics]]
        if len(records) > topics:
            rows.append(_label_row(f"the other {len(records) - topics} topics", records[topics:], columns, rest))
        tables.append(ReportTable(pd.DataFrame(rows), unit="count", title=(
            f"{model} on {corpus}: documents by main topic and label, {shown_of(topics, len(records))} topics "
            f"in rows, {shown_of(len(columns), len(ranked))} labels in columns")))
    return tables


def _label_counts(records: list) -> dict:
    """Label -> documents of that label whose main topic is one of ``records``."""
    counts = {}
    for record in records:
        for label, count in record.get("by_label", {}).items():
            counts[label] = counts.get(label, 0) + count
    return counts


def _label_row(name: str, records: list, columns: list, rest: list) -> dict:
    counts = _label_counts(records)
    row = {"topic": name}
    for label in columns:  # a label named like a column of ours is marked, not merged into it
        row[f"{label} (label)" if label in ("topic", "other labels") else label] = counts.get(label, 0)
    if rest:
        row["other labels"] = sum(counts.get(label, 0) for label in rest)
    return row


def matched_topics(runs: pd.DataFrame, *, corpora, models, topics: int = 5, words: int = 8) -> list[ReportTable]:
    """One table per corpus with two or more models: the first model's (in the order of
    ``models``) ``topics`` most prevalent topics, and beside each, the topic of every other model
    closest to it among all of that model's topics, by the rank-biased overlap of their top words
    (:func:`~topicbench.core.metrics.topic_similarity.ranked_words_similarity`; shown as
    ``RBO``); None where no topic of that model shares a top word."""
    from topicbench.core.metrics.topic_similarity import ranked_words_similarity

    first = first_seed_topics(runs)
    tables = []
    for corpus in corpora:
        present = [model for model in models if (corpus, model) in first]
        if len(present) < 2:
            continue
        reference, others = present[0], present[1:]
        shown = first[(corpus, reference)][:topics]
        rows = [{reference: TopicWords(tuple(record["words"].split()[:words]), record.get("prevalence"))}
                for record in shown]
        for model in others:
            candidates = first[(corpus, model)]
            similarity = ranked_words_similarity([record["words"].split() for record in shown],
                                                 [record["words"].split() for record in candidates])
            for row, scores in zip(rows, similarity):
                best = int(np.argmax(scores))  # ties: the more prevalent topic
                match = candidates[best]
                row[model] = TopicWords(tuple(match["words"].split()[:words]), match.get("prevalence"),
                                        (("RBO", float(scores[best])),)) if scores[best] > 0 else None
        tables.append(ReportTable(pd.DataFrame(rows), title=(
            f"{corpus}: {reference}'s topics ({shown_of(len(shown), len(first[(corpus, reference)]))}) and the "
            "closest topic of each other model")))
    return tables


def _pairs(first: dict, corpora, models) -> list:
    """The (corpus, model) pairs of ``first`` in the order of ``corpora``, then ``models``."""
    return [(corpus, model) for corpus in corpora for model in models if (corpus, model) in first]
