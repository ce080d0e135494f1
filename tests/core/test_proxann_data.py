"""Readers of ProxAnn's released files, on small files of the released shape written here."""

from __future__ import annotations

import csv
import json

import pytest

from topicbench.core.proxann_data import (EVALUATION_DOCUMENTS, ProxAnnDataError, people_answers,
                                          read_coherences, read_human_responses, read_llm_answers,
                                          read_study_inputs, topic_key)

MODEL_PATH = "data/models/final_models/model-runs/bills-labeled/vocab_15k/k-50/mallet/alpha_1.0/159"
THETAS = (0.9, 0.8, 0.6, 0.5, 0.3, 0.1, 0.0)


def _study(tmp_path, topics=("4", "40")):
    entry = lambda: {"topic_words": ["labor", "employee", "wage"],
                     "exemplar_docs": [{"doc_id": 1, "text": "exemplar", "prob": 0.95}],
                     "eval_docs": [{"doc_id": 10 + i, "text": f"doc {i}", "prob": theta,
                                    "assigned_to_k": int(theta > 0.4)} for i, theta in enumerate(THETAS)],
                     "distractor_doc": {"text": "sponges"}}
    path = tmp_path / "config_bills_part1.json"
    path.write_text(json.dumps({MODEL_PATH: {topic: entry() for topic in topics}}))
    return path


def _response(topic="4", *, person="p1", label="Worker rights", sponge="8", fit_check="2 - It mostly doesn't fit",
              seconds="900", fits=(5, 5, 4, 4, 2, 1, 1)):
    row = {"StartDate": "2024-12-10 10:00:00", "Status": "IP Address", "Duration (in seconds)": seconds,
           "id": f"{MODEL_PATH}/{topic}", "Q22": person, "cluster_label": label,
           "practice_purpose": "To understand when groups of documents are related to a single category",
           "11_loop_fit_a": fit_check, "11_loop_familiarity": "I am not familiar enough", "rank_99": sponge}
    row.update({f"practice_rank_{i}": str(i + 1) for i in range(4)})
    row.update({f"{i + 1}_loop_fit_a": f"{fit} - answer" for i, fit in enumerate(fits)})
    row.update({f"rank_{i}": str(i + 1) for i in range(EVALUATION_DOCUMENTS)})
    return row


def _export(tmp_path, responses, drop=None):
    columns = [column for column in responses[0] if column != drop]
    path = tmp_path / "responses.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerow({column: "question text" for column in columns})
        writer.writerow({column: '{"ImportId":"x"}' for column in columns})
        writer.writerows(responses)
    return path


def test_topic_key_normalises_model_paths():
    assert topic_key(f"{MODEL_PATH}/23") == "bills-labeled/mallet/23"
    with pytest.raises(ProxAnnDataError, match="names no study model"):
        topic_key("data/models/lda/23")


def test_study_inputs_tables(tmp_path):
    study = read_study_inputs(_study(tmp_path))
    assert study.topics["topic"].tolist() == ["bills-labeled/mallet/4", "bills-labeled/mallet/40"]
    evaluation = study.evaluation_documents()
    assert len(evaluation) == 14 and evaluation["theta"].tolist()[:7] == list(THETAS)
    assert study.documents["role"].value_counts().to_dict() == {"evaluation": 14, "exemplar": 2, "distractor": 2}


def test_study_inputs_name_a_missing_field(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({MODEL_PATH: {"4": {"topic_words": ["a"], "exemplar_docs": [], "eval_docs": []}}}))
    with pytest.raises(ProxAnnDataError, match="has no 'distractor_doc'"):
        read_study_inputs(path)


def test_responses_filtered_by_proxann_loose_rule(tmp_path):
    study = read_study_inputs(_study(tmp_path))
    responses = [_response(person=f"p{i}") for i in range(3)]
    responses.append(_response(person="careless", sponge="1", fit_check="5 - fits"))  # 2 + 2 failures
    responses.append(_response(person="one slip", sponge="1"))  # 2: still > 1, removed
    responses.append(_response(topic="40", person="alone"))
    answers = read_human_responses(_export(tmp_path, responses), study)
    removed = answers.groupby("annotator")["removed"].first()
    assert removed.to_dict() == {"alone": False, "careless": True, "one slip": True, "p0": False, "p1": False,
                                 "p2": False}
    assert answers.loc[answers["annotator"] == "p0", "fit"].tolist() == [5, 5, 4, 4, 2, 1, 1]
    kept = people_answers(answers)
    assert kept["topic"].unique().tolist() == ["bills-labeled/mallet/4"]  # topic 40 kept one person only
    assert kept["response"].nunique() == 3


def test_responses_name_a_missing_column_and_a_bad_answer(tmp_path):
    study = read_study_inputs(_study(tmp_path))
    with pytest.raises(ProxAnnDataError, match="no column 'rank_99'"):
        read_human_responses(_export(tmp_path, [_response()] * 3, drop="rank_99"), study)
    bad = [_response(), _response(), _response(fits=(5, 5, "x", 4, 2, 1, 1))]
    with pytest.raises(ProxAnnDataError, match="3_loop_fit_a is 'x - answer'"):
        read_human_responses(_export(tmp_path, bad), study)


def test_llm_answers_over_seeds(tmp_path):
    for seed in (106, 249):
        run = tmp_path / "llm" / f"q1_then_q3_mean,q1_then_q2_mean_temp1.0_seed{seed}_2025"
        run.mkdir(parents=True)
        item = {"id": "bills-labeled/mallet/4"}
        (run / "llm_results_q2.json").write_text(json.dumps([{**item, "fit_data": [[4.5, 3.0, 1.2]]}]))
        (run / "llm_results_q3.json").write_text(json.dumps([{**item, "rank_data": [[3, 2, 1]]}]))
    answers = read_llm_answers(tmp_path / "llm")
    assert sorted(answers["seed"].unique()) == [106, 249]
    assert answers[answers["seed"] == 106]["fit"].tolist() == [4.5, 3.0, 1.2]


def test_llm_answers_name_a_malformed_file(tmp_path):
    run = tmp_path / "llm" / "run_seed1_x"
    run.mkdir(parents=True)
    (run / "llm_results_q2.json").write_text("[{\"id\": \"bills-labeled/mallet/4\", \"fit_data\": 3}]")
    (run / "llm_results_q3.json").write_text("not json")
    with pytest.raises(ProxAnnDataError, match="item 0 has no id or no fit_data"):
        read_llm_answers(tmp_path / "llm")


def test_coherences(tmp_path):
    path = tmp_path / "all_cohrs_bills.csv"
    path.write_text("id,npmi,cv\nbills-labeled/mallet/4,0.05,0.49\n")
    assert read_coherences(path).to_dict("records") == [{"topic": "bills-labeled/mallet/4", "npmi": 0.05, "cv": 0.49}]
    path.write_text("id,npmi\nbills-labeled/mallet/4,0.05\n")
    with pytest.raises(ProxAnnDataError, match="no column 'cv'"):
        read_coherences(path)
