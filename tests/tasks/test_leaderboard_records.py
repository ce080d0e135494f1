"""The leaderboard as data: ``leaderboard.json`` holds every cell (mean, Student-t interval with
its method, level and n, the deterministic flag, rank and rank interval, K) and every ranking
across datasets; ``--eee DIR`` writes Every Eval Ever records that validate against the
``every-eval-ever`` package's own schema (0.3.0; tests/data/every_eval_ever says why it is a copy)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import jsonschema
import pytest

from topicbench.core.metrics.stats import DETERMINISTIC, seed_interval
from topicbench.flows.cli.main import main
from topicbench.tasks.leaderboard.records import file_name

from test_leaderboard import write_bundle

SCHEMA = Path(__file__).parents[1] / "data" / "every_eval_ever" / "eval.schema.json"
SCHEMA_SHA256 = "c9c6195aec8a9dfa0b2aba4924ac1aa8a184c9d8ca97cee778cb531088e39b48"

#: A model with seed noise, one that ignores its seed and one with two seeds, on one dataset.
SCORES = {("toy", "noisy"): {"npmi@10": [0.10, 0.12, 0.14], "topic_diversity@10": [0.7, 0.8, 0.9]},
          ("toy", "exact"): {"npmi@10": [0.05, 0.05, 0.05], "topic_diversity@10": [0.4, 0.4, 0.4]},
          ("toy", "two"): {"npmi@10": [0.01, 0.03], "topic_diversity@10": [0.5, 0.6]}}


@pytest.fixture
def written(tmp_path):
    folder = write_bundle(tmp_path / "bundle", SCORES, topics={"exact": 30.0})
    assert main(["leaderboard", str(folder), "--out", str(tmp_path / "page"), "--eee", str(tmp_path / "eee")]) == 0
    return tmp_path / "page", tmp_path / "eee"


def test_leaderboard_json_holds_every_cell_with_its_interval_and_rank(written):
    document = json.loads((written[0] / "leaderboard.json").read_text(encoding="utf-8"))
    cells = {(cell["model"], cell["metric"]): cell for cell in document["cells"]}
    assert len(cells) == 6 and {cell["dataset"] for cell in cells.values()} == {"toy"}
    noisy, exact, two = cells["noisy", "npmi@10"], cells["exact", "npmi@10"], cells["two", "npmi@10"]
    expected = seed_interval(SCORES["toy", "noisy"]["npmi@10"])
    assert noisy["mean"] == pytest.approx(0.12) and noisy["n"] == 3 and not noisy["deterministic"]
    assert noisy["interval"] == {"low": pytest.approx(expected.low), "high": pytest.approx(expected.high),
                                 "level": 0.95, "method": "Student-t over seeds", "df": 2, "n": 3}
    assert noisy["se"] == pytest.approx(0.02 / math.sqrt(3))
    assert (noisy["rank"], noisy["rank_best"], noisy["rank_worst"], noisy["rank_of"]) == (1, 1, 2, 3)
    # deterministic: flagged, no interval and no spread, never a zero
    assert exact["deterministic"] and exact["interval"] is None and exact["se"] is None
    assert exact["interval_method"] == DETERMINISTIC and exact["K"] == 30.0 and exact["K_text"] == "30 used (of 20)"
    assert two["interval"] is None and two["n"] == 2 and "too few seeds" in two["interval_method"]
    (across,) = [c for c in document["across"] if c["metric"] == "npmi@10" and c["group"] == "main"]
    assert across["test"] is None and across["no_test_reason"] == "too few datasets to test (1 of 5)"
    assert [m["model"] for m in across["models"]] == ["noisy", "exact", "two"]
    assert document["rules"]["min_datasets_for_test"] == 5 and document["headline"][0]["metric"] == "npmi@10"


def _schemas() -> list[dict]:
    """The vendored copy, checked to be the package's 0.3.0 schema; and the installed package's
    own schema wherever it is importable."""
    text = SCHEMA.read_bytes()
    assert hashlib.sha256(text).hexdigest() == SCHEMA_SHA256, "tests/data/every_eval_ever/eval.schema.json changed"
    schemas = [json.loads(text)]
    try:
        from every_eval_ever.schema import schema_json
    except ImportError:  # needs Python 3.12 and rich 14: see tests/data/every_eval_ever/README.md
        return schemas
    assert schema_json() == schemas[0]
    return [*schemas, schema_json()]


def test_every_eval_ever_records_validate_against_the_package_s_schema(written):
    schemas = _schemas()
    assert schemas[0]["version"] == "0.3.0"
    paths = sorted(written[1].rglob("*.json"))
    assert [path.relative_to(written[1]).as_posix() for path in paths] == ["toy/exact.json", "toy/noisy.json",
                                                                           "toy/two.json"]
    for path in paths:
        record = json.loads(path.read_text(encoding="utf-8"))
        for schema in schemas:
            jsonschema.Draft7Validator(schema).validate(record)
        assert record["schema_version"] == schemas[0]["version"]
    noisy = json.loads((written[1] / "toy" / "noisy.json").read_text(encoding="utf-8"))
    first = noisy["evaluation_results"][0]
    uncertainty, expected = first["score_details"]["uncertainty"], seed_interval([0.10, 0.12, 0.14])
    assert first["evaluation_name"] == "npmi@10" and first["metric_config"]["lower_is_better"] is False
    assert uncertainty["num_samples"] == 3 and uncertainty["standard_error"]["value"] == pytest.approx(expected.se)
    assert uncertainty["confidence_interval"] == {"lower": pytest.approx(expected.low),
                                                  "upper": pytest.approx(expected.high), "confidence_level": 0.95,
                                                  "method": "Student-t over seeds (df 2)"}
    exact = json.loads((written[1] / "toy" / "exact.json").read_text(encoding="utf-8"))
    for result in exact["evaluation_results"]:
        assert result["score_details"]["uncertainty"] == {"num_samples": 3}  # no zero standard error
        assert result["score_details"]["details"]["deterministic"] == "true"


def test_a_record_that_breaks_the_schema_is_caught():
    """The validation can fail: a record without its results, or with a confidence level of 95."""
    schema = _schemas()[0]
    record = {"schema_version": "0.3.0", "evaluation_id": "x", "retrieved_timestamp": "0",
              "source_metadata": {"source_type": "evaluation_run", "source_organization_name": "t",
                                  "evaluator_relationship": "third_party"},
              "model_info": {"name": "m", "id": "m", "additional_details": {"deployment_type": "unknown",
                                                                            "model_availability": "unknown"}},
              "eval_library": {"name": "topicbench", "version": "0"}}
    with pytest.raises(jsonschema.ValidationError, match="evaluation_results"):
        jsonschema.Draft7Validator(schema).validate(record)
    record["evaluation_results"] = [{"evaluation_name": "npmi@10", "source_data": {"dataset_name": "d", "source_type": "other"},
                                     "metric_config": {"lower_is_better": False},
                                     "score_details": {"score": 0.1, "uncertainty": {"confidence_interval": {
                                         "lower": 0.0, "upper": 0.2, "confidence_level": 95}}}}]
    with pytest.raises(jsonschema.ValidationError, match="95 is greater than the maximum of 1"):
        jsonschema.Draft7Validator(schema).validate(record)


def test_a_name_that_is_not_a_plain_file_name_gets_a_hashed_one():
    assert file_name("gibbs_lda-2.0") == "gibbs_lda-2.0"
    assert file_name("../etc") != file_name("__etc") and "/" not in file_name("../etc")
    assert file_name("a b").startswith("a_b-") and file_name("..") not in ("", ".", "..")
