"""ProxAnn's released data as plain tables: the user-study inputs, people's answers, the LLM
proxies' answers and the per-topic coherences (Hoyle, Calvo-Bartolomé, Boyd-Graber and Resnik,
ACL 2025; ``ahoho/proxann``, ``topicbench data fetch proxann``).

Every reader checks its file at the door and raises :class:`ProxAnnDataError` naming the file,
the place in it and the fix. Topics are keyed as ProxAnn keys them after normalisation:
``"<dataset>/<model>/<topic>"``, e.g. ``"bills-labeled/mallet/4"``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .io import check_regular_file, read_text
from .proxann_release import (COHERENCES, HUMAN_RESPONSES, LLM_ANSWER_FILES, LLM_ANSWERS, PROXANN_COMMIT,
                              STUDY_INPUTS)
from .validation import InputError

#: The topic models and collections of the study, as they appear in the study's model paths.
STUDY_MODELS = ("mallet", "ctm", "bertopic", "category-45")
STUDY_DATASETS = ("wikitext-labeled", "bills-labeled")
#: Qualtrics writes two header rows (question text, import ids) below the column names.
QUALTRICS_HEADER_ROWS = 2
#: ProxAnn's study window and its cut for responses that were too quick (process_responses).
STUDY_START = "2024-12-06 09:00:00"
MIN_MINUTES = 5
EVALUATION_DOCUMENTS = 7
FIX = f"give the files of ahoho/proxann at {PROXANN_COMMIT[:12]} (`topicbench data fetch proxann`)"


class ProxAnnDataError(InputError):
    """A ProxAnn file that is missing, unreadable or not of the released shape."""


@dataclass(frozen=True)
class StudyInputs:
    """What people (and the LLM proxies) were shown.

    Attributes
    ----------
    topics : pandas.DataFrame
        One row per topic: ``topic``, ``dataset``, ``model``, ``source_key`` (the key the
        survey's ``id`` column holds) and ``words`` (a tuple, best first).
    documents : pandas.DataFrame
        One row per shown document: ``topic``, ``role`` (``exemplar``, ``evaluation`` or
        ``distractor``), ``position`` (order shown), ``doc_id``, ``text``, ``theta`` (the
        model's θ of the document for the topic; NaN for the distractor) and ``assigned``
        (``assigned_to_k``: 1 when the topic is the document's main topic).
    """

    topics: pd.DataFrame
    documents: pd.DataFrame

    def evaluation_documents(self) -> pd.DataFrame:
        """The evaluation documents only, sorted by topic and position."""
        table = self.documents[self.documents["role"] == "evaluation"]
        return table.sort_values(["topic", "position"]).reset_index(drop=True)


def topic_key(source_key: str) -> str:
    """ProxAnn's normalised key of a study model path, e.g. ``.../bills-labeled/.../mallet/.../159/4``
    -> ``bills-labeled/mallet/4`` (``normalize_key`` of their ``utils.py``)."""
    parts = str(source_key).strip("/").split("/")
    model = next((part for part in parts if part in STUDY_MODELS), None)
    dataset = next((part for part in parts if part in STUDY_DATASETS), None)
    if model is None or not parts[-1].isdigit():
        raise ProxAnnDataError(f"topic key {source_key!r} names no study model ({', '.join(STUDY_MODELS)}) "
                               f"or does not end in a topic number; {FIX}")
    # The first pilot rounds' paths named no collection: ProxAnn files them under Wikitext.
    return f"{dataset or 'wikitext-labeled'}/{model}/{parts[-1]}"


def read_study_inputs(paths) -> StudyInputs:
    """The user-study inputs of one or more ``config_*.json`` files (``data/json_out``).

    Each maps a model path -> topic -> ``{"topic_words", "exemplar_docs", "eval_docs",
    "distractor_doc"}``; evaluation documents carry ``doc_id``, ``text``, ``prob`` (θ) and
    ``assigned_to_k``.

    Raises
    ------
    ProxAnnDataError
        A file is missing, not JSON, or an entry lacks one of those keys (the message names it).
    """
    topics, documents = [], []
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        data = _read_json(path, "study input file")
        if not isinstance(data, dict) or not data:
            raise ProxAnnDataError(f"{path}: expected an object of model paths; {FIX}")
        for model_path, by_topic in data.items():
            if not isinstance(by_topic, dict):
                raise ProxAnnDataError(f"{path}: {model_path!r} is not an object of topics; {FIX}")
            for topic, entry in by_topic.items():
                source_key = f"{model_path}/{topic}"
                key = topic_key(source_key)
                where = f"{path}: {source_key}"
                topics.append(_study_topic(entry, key, source_key, where))
                documents.extend(_study_documents(entry, key, where))
    topic_table = pd.DataFrame(topics)
    repeated = topic_table["topic"][topic_table["topic"].duplicated()]
    if len(repeated):
        raise ProxAnnDataError(f"topic {repeated.iloc[0]} is given twice across {paths}: give each study file once")
    return StudyInputs(topic_table, pd.DataFrame(documents))


def _study_topic(entry, key: str, source_key: str, where: str) -> dict:
    for field in ("topic_words", "exemplar_docs", "eval_docs", "distractor_doc"):
        if not isinstance(entry, dict) or field not in entry:
            raise ProxAnnDataError(f"{where} has no {field!r}; {FIX}")
    words = entry["topic_words"]
    if not isinstance(words, list) or not words or not all(isinstance(word, str) for word in words):
        raise ProxAnnDataError(f"{where}: topic_words is not a non-empty list of words; {FIX}")
    dataset, model, _ = key.split("/")
    return {"topic": key, "dataset": dataset, "model": model, "source_key": source_key, "words": tuple(words)}


def _study_documents(entry, key: str, where: str) -> list:
    rows = []
    for role, field in (("exemplar", "exemplar_docs"), ("evaluation", "eval_docs")):
        shown = entry[field]
        if not isinstance(shown, list) or not shown:
            raise ProxAnnDataError(f"{where}: {field} is not a non-empty list of documents; {FIX}")
        for position, document in enumerate(shown):
            needed = ("doc_id", "text", "prob") + (("assigned_to_k",) if role == "evaluation" else ())
            missing = [name for name in needed if not isinstance(document, dict) or name not in document]
            if missing:
                raise ProxAnnDataError(f"{where}: {field}[{position}] has no {missing[0]!r}; {FIX}")
            theta = _number(document["prob"], f"{where}: {field}[{position}].prob")
            assigned = document.get("assigned_to_k", 1)
            rows.append({"topic": key, "role": role, "position": position, "doc_id": document["doc_id"],
                         "text": str(document["text"]), "theta": theta, "assigned": int(assigned)})
    distractor = entry["distractor_doc"]
    text = distractor.get("text", "") if isinstance(distractor, dict) else ""
    rows.append({"topic": key, "role": "distractor", "position": 0, "doc_id": None, "text": str(text),
                 "theta": float("nan"), "assigned": 0})
    return rows


def read_human_responses(path, study: StudyInputs, *, start=STUDY_START, min_minutes=MIN_MINUTES) -> pd.DataFrame:
    """People's answers in ProxAnn's Qualtrics export, one row per (response, evaluation document).

    Responses are filtered as ProxAnn's ``process_responses`` does: only real responses
    (``Status`` "IP Address") from ``start`` on that reached the ranking page; each gets the
    failed checks of their "loose" rule and ``removed`` when the weighted count exceeds 1.

    Returns
    -------
    pandas.DataFrame
        Columns ``response`` (row number in the export), ``topic``, ``annotator`` (the
        participant id as released), ``category`` (the label they wrote), ``seconds``,
        ``failures``, ``removed``, ``position`` (0-6, order shown), ``fit`` (1-5 Likert) and
        ``rank`` (1 = fits best; the distractor took one of 1-8).

    Raises
    ------
    ProxAnnDataError
        A column is missing, an answer is not of the survey's form, or a response names a topic
        the study inputs lack (the message names the row and column).
    """
    path = check_regular_file(path, "ProxAnn responses file")
    raw = _read_export(path)
    raw = raw.iloc[QUALTRICS_HEADER_ROWS:]
    raw = raw[(raw["Status"] == "IP Address") & (raw["StartDate"] >= start)]
    seconds = pd.to_numeric(raw["Duration (in seconds)"], errors="coerce")
    if seconds.isna().any() or len(seconds) < 3:  # the cut below skips two responses
        raise ProxAnnDataError(f"{path}: 'Duration (in seconds)' is not a number in every response, or there "
                               f"are fewer than 3 responses from {start} on; {FIX}")
    # ProxAnn's cut: the 5% quantile of durations (its slice skips the first two responses), at most 5 minutes.
    too_quick_below = min(np.quantile(seconds.iloc[2:], 0.05), 60 * min_minutes)
    words_by_key = dict(zip(study.topics["source_key"], study.topics["words"]))
    rows = []
    for line, row in raw.iterrows():
        if row["rank_99"] == "":
            continue  # left before ranking
        where = f"{path} record {line + 1}"  # counting Qualtrics' two header records
        if row["id"] not in words_by_key:
            raise ProxAnnDataError(f"{where}: topic {row['id']!r} is not in the study inputs: give the "
                                   f"config_*.json files the survey was built from; {FIX}")
        failures = _failed_checks(row, words_by_key[row["id"]], float(row["Duration (in seconds)"]) < too_quick_below,
                                  where)
        response = {"response": line, "topic": topic_key(row["id"]), "annotator": row["Q22"],
                    "category": row["cluster_label"], "seconds": float(row["Duration (in seconds)"]),
                    "failures": failures, "removed": failures > 1}
        for position in range(EVALUATION_DOCUMENTS):
            rows.append({**response, "position": position,
                         "fit": _leading_int(row[f"{position + 1}_loop_fit_a"], f"{where} {position + 1}_loop_fit_a"),
                         "rank": _leading_int(row[f"rank_{position}"], f"{where} rank_{position}")})
    return pd.DataFrame(rows)


def _read_export(path: Path) -> pd.DataFrame:
    """The Qualtrics export as text cells, every column ProxAnn reads checked present."""
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as error:
        raise ProxAnnDataError(f"{path} is not a Qualtrics CSV export ({error}); {FIX}") from None
    needed = ["Status", "StartDate", "Duration (in seconds)", "id", "Q22", "cluster_label", "practice_purpose",
              "11_loop_fit_a", "11_loop_familiarity", "rank_99"]
    needed += [f"practice_rank_{i}" for i in range(4)]
    needed += [f"{i + 1}_loop_fit_a" for i in range(EVALUATION_DOCUMENTS)]
    needed += [f"rank_{i}" for i in range(EVALUATION_DOCUMENTS)]
    missing = [column for column in needed if column not in raw.columns]
    if missing:
        raise ProxAnnDataError(f"{path} has no column {missing[0]!r}: not ProxAnn's survey export; {FIX}")
    return raw


def _failed_checks(row, words: tuple, too_quick: bool, where: str) -> int:
    """ProxAnn's weighted count of failed attention checks (the "loose" removal rule)."""
    failed_category = row["cluster_label"] in " ".join(words)  # a label copied from the top words
    failed_purpose = "single category" not in row["practice_purpose"]
    failed_fit_check = not row["11_loop_fit_a"].startswith("2")
    failed_familiarity = not row["11_loop_familiarity"].startswith("I am not familiar")
    failed_distractor = row["rank_99"] not in ("7", "8")  # the sponge review ranked near the top
    practice = [_leading_int(row[f"practice_rank_{i}"], f"{where} practice_rank_{i}") for i in range(4)]
    failed_practice = practice[0] not in (1, 2) or practice[3] != 4
    return (2 * failed_distractor + 2 * failed_fit_check + 2 * failed_category + too_quick + failed_purpose
            + failed_familiarity + failed_practice)


def people_answers(responses: pd.DataFrame, *, min_people: int = 2) -> pd.DataFrame:
    """The answers ProxAnn scores: responses kept by the loose rule, of topics that kept at
    least ``min_people`` of them (``collect_fit_rank_data``)."""
    kept = responses[~responses["removed"]]
    people = kept.groupby("topic")["response"].nunique()
    return kept[kept["topic"].isin(people.index[people >= min_people])].reset_index(drop=True)


def read_llm_answers(folder) -> pd.DataFrame:
    """The answers of one LLM proxy over its seeds: ``folder`` holds one run folder per seed
    (``..._seed<N>_...``), each with ``llm_results_q2.json`` (fit) and ``llm_results_q3.json``
    (rank), as under ProxAnn's ``data/llm_out/mean/<dataset>/<llm>``.

    Returns
    -------
    pandas.DataFrame
        Columns ``llm`` (the folder's name), ``seed``, ``topic``, ``position``, ``fit`` (the
        expected Likert score, 1-5) and ``rank`` (higher = fits better, as released).
    """
    folder = Path(folder)
    runs = sorted(path for path in folder.glob("*") if path.is_dir()) if folder.is_dir() else []
    if not runs:
        raise ProxAnnDataError(f"{folder} holds no run folders of an LLM's answers; {FIX}")
    rows = []
    for run in runs:
        seed = re.search(r"_seed(\d+)_", run.name)
        if seed is None:
            raise ProxAnnDataError(f"{run}: the run folder's name carries no _seed<N>_; {FIX}")
        fits = _answers_by_topic(run / "llm_results_q2.json", "fit_data")
        ranks = _answers_by_topic(run / "llm_results_q3.json", "rank_data")
        if set(fits) != set(ranks):
            raise ProxAnnDataError(f"{run}: the fit and rank files answer different topics; {FIX}")
        for topic, fit in fits.items():
            if len(fit) != len(ranks[topic]):
                raise ProxAnnDataError(f"{run}: topic {topic} has {len(fit)} fit but {len(ranks[topic])} rank answers")
            rows.extend({"llm": folder.name, "seed": int(seed.group(1)), "topic": topic, "position": position,
                         "fit": fit_value, "rank": rank_value}
                        for position, (fit_value, rank_value) in enumerate(zip(fit, ranks[topic])))
    return pd.DataFrame(rows)


def _answers_by_topic(path: Path, field: str) -> dict:
    data = _read_json(path, "LLM answers file")
    if not isinstance(data, list):
        raise ProxAnnDataError(f"{path}: expected a list of topics; {FIX}")
    answers = {}
    for index, item in enumerate(data):
        values = item.get(field) if isinstance(item, dict) else None
        if not isinstance(values, list) or len(values) != 1 or not isinstance(values[0], list) or "id" not in item:
            raise ProxAnnDataError(f"{path}: item {index} has no id or no {field} of one list of answers; {FIX}")
        answers[topic_key(item["id"])] = [_number(value, f"{path}: item {index} {field}") for value in values[0]]
    return answers


def read_coherences(path) -> pd.DataFrame:
    """Per-topic NPMI and C_V as ProxAnn computed them (``data/cohrs/all_cohrs_<dataset>.csv``):
    columns ``topic``, ``npmi``, ``cv``."""
    path = check_regular_file(path, "ProxAnn coherence file")
    try:
        table = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise ProxAnnDataError(f"{path} is not a CSV file ({error}); {FIX}") from None
    missing = [column for column in ("id", "npmi", "cv") if column not in table.columns]
    if missing:
        raise ProxAnnDataError(f"{path} has no column {missing[0]!r}; expected id,npmi,cv; {FIX}")
    for column in ("npmi", "cv"):
        if not pd.api.types.is_numeric_dtype(table[column]):
            raise ProxAnnDataError(f"{path}: column {column!r} is not numeric in every row; {FIX}")
    return pd.DataFrame({"topic": [topic_key(key) for key in table["id"]], "npmi": table["npmi"], "cv": table["cv"]})


def _read_json(path, what: str):
    text = read_text(check_regular_file(path, what), what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ProxAnnDataError(f"{path} is not JSON (line {error.lineno}, column {error.colno}: {error.msg}); "
                               f"{FIX}") from None


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProxAnnDataError(f"{where} is {value!r}, expected a number; {FIX}")
    return float(value)


def _leading_int(answer: str, where: str) -> int:
    """The number a survey answer starts with: ``"4 - It mostly fits the category"`` -> 4."""
    head = str(answer).split("-")[0].strip()
    if not head.isdigit():
        raise ProxAnnDataError(f"{where} is {answer!r}, expected an answer starting with a number; {FIX}")
    return int(head)


@dataclass(frozen=True)
class ProxAnnRelease:
    """ProxAnn's Bills data, read: the study inputs, people's kept answers (the loose rule,
    topics with two people or more), each released LLM's answers (all seeds) and the
    coherences. See :mod:`~topicbench.core.proxann_data` for the tables' columns."""

    study: StudyInputs
    people: pd.DataFrame
    llm_answers: dict
    coherences: pd.DataFrame


def read_release(folder) -> ProxAnnRelease:
    """The release under ``folder`` (a checkout of ``ahoho/proxann`` or the fetched dataset).

    Raises
    ------
    ProxAnnDataError
        A file is missing or malformed (the message names it and the fix).
    """
    folder = Path(folder)
    study = read_study_inputs([folder / path for path in STUDY_INPUTS])
    people = people_answers(read_human_responses(folder / HUMAN_RESPONSES, study))
    llms = sorted({llm for llm, *_ in LLM_ANSWER_FILES})
    answers = {llm: read_llm_answers(folder / LLM_ANSWERS / llm) for llm in llms}
    return ProxAnnRelease(study, people, answers, read_coherences(folder / COHERENCES))
