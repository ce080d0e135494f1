"""The "Data and settings" section's blocks: what a report's numbers rest on, so that a reader
holding only the report can judge and repeat them.

Pure functions of the record :func:`topicbench.tasks.results.data_settings.data_and_settings`
makes (from a store, or from a bundle's copy of it): a table of the corpora (documents per
partition, vocabulary and how it was built, labels, test-only words dropped from held-out scoring,
fingerprint), one of each corpus's preprocessing, one of every model's resolved settings and seeds,
and the package versions. Every setting is printed with its type (:func:`typed_value`: ``true``,
``0.1``, ``"english"``), as the config takes it, never as the text MLflow keeps.
"""

from __future__ import annotations

import json

import pandas as pd

from .tables import ReportTable

#: Characters of a corpus fingerprint shown (the whole is in the bundle's record and the run's params).
FINGERPRINT_SHOWN = 16
#: Labels listed by name in the corpora table; the others are counted.
LABELS_SHOWN = 12


def typed_value(value) -> str:
    """A setting as the config writes it (JSON): ``true``, ``8``, ``0.1``, ``"english"``, ``null``,
    ``["a", "b"]``; a value JSON cannot hold as its text."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _counts(counts, shown: int | None = None) -> str:
    """``{"train": 642, "test": 108}`` as ``train 642, test 108`` (the first ``shown``, then how many more)."""
    if not isinstance(counts, dict):
        return "" if counts is None else str(counts)
    items = list(counts.items())
    listed = ", ".join(f"{name} {count}" for name, count in items[:shown])
    return listed + (f", and {len(items) - shown} more" if shown is not None and len(items) > shown else "")


def vocabulary_built(record: dict) -> str:
    """How a corpus's vocabulary was built, in words, from its record: from which documents and
    with which frequency limits and stop words."""
    settings = record.get("preprocessing") or {}
    origin = {"train": "counted from the training documents only (test-only words dropped)",
              "all": "counted from every document, test included", "given": "given (a vocabulary.txt, as published)"}
    built = origin.get(record.get("vocabulary_from"), "counted from every document (recorded before the choice was logged)")
    limits = [f"{name} = {typed_value(settings[name])}" for name in ("min_df", "max_df") if name in settings]
    if "stopwords" in settings:
        limits.append(f"stop words: {typed_value(settings['stopwords'])}")
    return built + (f"; {', '.join(limits)}" if limits and record.get("vocabulary_from") != "given" else "")


def _dropped(record: dict) -> str | None:
    words, tokens = record.get("test_only_words"), record.get("test_only_tokens")
    if words is None and tokens is None:
        return None
    counted = lambda count, noun: f"{count} {noun}{'' if count == 1 else 's'}"
    return counted(words, "word") + (f" ({counted(tokens, 'token')})" if tokens is not None else "")


def corpora_table(record: dict, corpora) -> ReportTable:
    """One row per corpus: documents (per partition), tokens, vocabulary and how it was built,
    labels and their counts, test-only words dropped from held-out scoring, fingerprint."""
    rows = []
    for corpus in corpora:
        found = (record.get("corpora") or {}).get(corpus)
        if found is None:
            continue
        partitions = found.get("partitions")
        if isinstance(partitions, dict):  # the whole corpus, where the models were fitted on its training part
            documents = f"{sum(partitions.values())} ({_counts(partitions)})"
        else:
            documents = str(found.get("documents", ""))
        labels = found.get("labels")
        rows.append({
            "corpus": corpus, "documents (per partition)": documents or None, "tokens": found.get("tokens"),
            "vocabulary": found.get("vocabulary"), "vocabulary built": vocabulary_built(found),
            "labels (documents each)": (f"{found.get('label_count', len(labels))}: {_counts(labels, LABELS_SHOWN)}"
                                        if isinstance(labels, dict) else "none"),
            "test-only words dropped from held-out scoring": _dropped(found),
            "fingerprint": str(found.get("fingerprint", ""))[:FINGERPRINT_SHOWN] or None,
        })
    cells = pd.DataFrame(rows)
    if not cells.empty and cells["test-only words dropped from held-out scoring"].isna().all():
        cells = cells.drop(columns="test-only words dropped from held-out scoring")  # not recorded by these runs
    return ReportTable(cells, title="Corpora", unit="count", note=(
        "Documents: those left after preprocessing (empty ones dropped), per OCTIS partition; tokens, vocabulary "
        "and labels: of the documents the models were fitted on (the training partition where there is a test "
        "one); fingerprint: the first characters of the SHA-256 of their tokens, vocabulary, partitions, labels "
        "and preprocessing."))


def preprocessing_table(record: dict, corpora) -> ReportTable:
    """Each preprocessing setting (rows) of each corpus (columns), printed with its type."""
    settings = {corpus: (record.get("corpora") or {}).get(corpus, {}).get("preprocessing") or {} for corpus in corpora}
    names = list(dict.fromkeys(name for found in settings.values() for name in found))
    if not names:
        return ReportTable(pd.DataFrame())
    cells = pd.DataFrame({"setting": names, **{corpus: [typed_value(found[name]) if name in found else None
                                                         for name in names] for corpus, found in settings.items()}})
    return ReportTable(cells, title="Preprocessing", note="Each setting as the config writes it (JSON: true, 0.1, "
                                                          "\"english\").")


def models_table(record: dict, corpora, models) -> ReportTable:
    """One row per (corpus, model): the model behind the label, K asked, seeds, every setting as
    fitted (asked, defaults filled in) and the values the model resolved (``resolved.*``), and any
    count of test-only words its held-out scoring dropped."""
    order = {(c, m): (i, j) for i, c in enumerate(corpora) for j, m in enumerate(models)}
    entries = sorted(record.get("models") or [], key=lambda e: order.get((e.get("corpus"), e.get("model")), (1e9, 1e9)))
    rows = [{
        "corpus": entry.get("corpus"), "model": entry.get("model"), "model name": entry.get("model_name"),
        "K asked": typed_value(entry.get("num_topics")), "seeds": ", ".join(map(str, entry.get("seeds") or [])),
        "settings (as fitted)": tuple(f"{k} = {typed_value(v)}" for k, v in (entry.get("settings") or {}).items()),
        "resolved": tuple(f"{k} = {typed_value(v)}" for k, v in (entry.get("resolved") or {}).items()),
        "held-out: test-only dropped": tuple(f"{k} = {typed_value(v)}"
                                             for k, v in (entry.get("heldout_dropped") or {}).items()),
    } for entry in entries]
    cells = pd.DataFrame(rows)
    for column in ("resolved", "held-out: test-only dropped"):
        if column in cells and not any(cells[column]):
            cells = cells.drop(columns=column)
    return ReportTable(cells, title="Models: settings and seeds", note=(
        "Settings as fitted: every setting the model was built with (the config's, its defaults filled in); "
        "resolved: what the model chose where a setting leaves it open (an \"auto\" prior, a K it found). "
        "K asked: null where the model chooses its own."))


def versions_table(record: dict) -> ReportTable:
    """Each package's version; where runs differ, every version found."""
    found: dict = {}
    for entry in record.get("models") or []:
        for package, version in (entry.get("versions") or {}).items():
            found.setdefault(package, {})[str(version)] = None
    cells = pd.DataFrame({"package": list(found), "version": [", ".join(versions) + (" (runs differ)" if len(versions) > 1 else "")
                                                             for versions in found.values()]})
    return ReportTable(cells, title="Package versions")


def data_settings_blocks(record: dict | None, corpora, models) -> tuple:
    """The section's blocks: a paragraph, then the corpora, preprocessing, models and versions
    tables (each one that has rows)."""
    tables = [corpora_table(record, corpora), preprocessing_table(record, corpora),
              models_table(record, corpora, models), versions_table(record)]
    return ("What the numbers above rest on, as the runs recorded it: the corpora as the models read them, how "
            "each was preprocessed, and each model's settings, seeds and package versions. A bundle carries the "
            "same record, so a report made from a bundle shows it too.", *(t for t in tables if not t.empty))
