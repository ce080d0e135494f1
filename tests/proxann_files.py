"""A small ProxAnn release written in the released layout (``ahoho/proxann``'s ``data/``), for the
tests of ``topicbench data fetch proxann`` and ``topicbench judge calibrate --protocol proxann``
that must run without the real files: three Bills topics (two of Mallet, one of CTM), three people
on each, every released LLM's answers for one seed, and the coherences.

Tests import it as ``from proxann_files import write_release`` (``tests/`` is on ``sys.path``).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from topicbench.core.proxann_release import COHERENCES, HUMAN_RESPONSES, LLM_ANSWER_FILES, LLM_ANSWERS, STUDY_INPUTS

MODEL_PATHS = {model: f"data/models/final_models/model-runs/bills-labeled/vocab_15k/k-50/{model}/alpha_1.0/159"
               for model in ("mallet", "ctm")}
#: (model, topic number, top words) of the small study; the first two go to part 1, the last to part 2.
TOPICS = (("mallet", "4", ("farm", "crop", "subsidy")), ("mallet", "40", ("tax", "credit", "income")),
          ("ctm", "7", ("river", "water", "dam")))
THETAS = (0.9, 0.8, 0.6, 0.5, 0.3, 0.1, 0.0)
PEOPLE = 3


def topic_keys() -> list:
    """The normalised keys of the small study's topics (``bills-labeled/mallet/4``, ...)."""
    return [f"bills-labeled/{model}/{number}" for model, number, _ in TOPICS]


def write_release(root) -> Path:
    """The small release under ``root`` (``root/data/...``, the paths of the real one); returns ``root``."""
    root = Path(root)
    parts = ({}, {})
    for index, (model, number, words) in enumerate(TOPICS):
        parts[index // 2].setdefault(MODEL_PATHS[model], {})[number] = _study_entry(words)
    for path, part in zip(STUDY_INPUTS, parts):
        _write(root / path, json.dumps(part))
    _write_responses(root / HUMAN_RESPONSES)
    coherences = "".join(f"{key},{0.01 * i:.2f},{0.4 + 0.1 * i:.1f}\n" for i, key in enumerate(topic_keys()))
    _write(root / COHERENCES, "id,npmi,cv\n" + coherences)
    for llm in sorted({llm for llm, *_ in LLM_ANSWER_FILES}):
        run = root / LLM_ANSWERS / llm / "q1_then_q3_mean,q1_then_q2_mean_temp1.0_0.0_0.0_seed7_20250101_0000"
        fits = [{"id": f"{MODEL_PATHS[model]}/{number}", "fit_data": [[5.0 - 0.5 * p for p in range(7)]]}
                for model, number, _ in TOPICS]
        ranks = [{"id": item["id"], "rank_data": [[7.0 - p for p in range(7)]]} for item in fits]
        _write(run / "llm_results_q2.json", json.dumps(fits))
        _write(run / "llm_results_q3.json", json.dumps(ranks))
    return root


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _study_entry(words) -> dict:
    return {"topic_words": list(words),
            "exemplar_docs": [{"doc_id": k, "text": f"An exemplar about {words[0]} number {k}.", "prob": 0.95}
                              for k in range(2)],
            "eval_docs": [{"doc_id": 10 + p, "text": f"Document {p} on {words[p % len(words)]} and more.",
                           "prob": theta, "assigned_to_k": int(theta > 0.4)} for p, theta in enumerate(THETAS)],
            "distractor_doc": {"text": "A review of a kitchen sponge."}}


def _write_responses(path: Path) -> None:
    """The Qualtrics export: column names, two header records, then one response per person and topic
    (each passing ProxAnn's attention checks; person ``i`` swaps documents ``i`` and ``i + 1``)."""
    rows = []
    for model, number, _ in TOPICS:
        for person in range(PEOPLE):
            order = list(range(7))
            order[person], order[person + 1] = order[person + 1], order[person]
            row = {"StartDate": "2024-12-10 10:00:00", "Status": "IP Address", "Duration (in seconds)": "900",
                   "id": f"{MODEL_PATHS[model]}/{number}", "Q22": f"person-{person}", "cluster_label": "Public policy",
                   "practice_purpose": "To understand when documents are related to a single category",
                   "11_loop_fit_a": "2 - It mostly doesn't fit", "11_loop_familiarity": "I am not familiar enough",
                   "rank_99": "8"}
            row.update({f"practice_rank_{i}": str(i + 1) for i in range(4)})
            row.update({f"{p + 1}_loop_fit_a": f"{max(1, 5 - order.index(p) // 2)} - answer" for p in range(7)})
            row.update({f"rank_{p}": str(order.index(p) + 1) for p in range(7)})
            rows.append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerow({column: "question text" for column in rows[0]})
        writer.writerow({column: '{"ImportId":"x"}' for column in rows[0]})
        writer.writerows(rows)
