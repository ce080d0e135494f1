"""The benchmark config's declared schema: published for editors, kept current, checked strictly,
and read safely from YAML (no key twice, no alias bomb, no file that is not a file)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import jsonschema
import pytest
import yaml

from topicbench.core.validation import InputError
from topicbench.flows.cli.main import main
from topicbench.flows.config.model import BenchmarkConfig, default_config
from topicbench.flows.config.file import count_values, read_yaml_config
from topicbench.flows.config.schema import SCHEMA_FILE_NAME, config_schema

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / SCHEMA_FILE_NAME


def test_the_published_schema_is_the_generated_one():
    """``topicbench-config.schema.json`` is what this package declares (rewrite it with
    ``topicbench schema --out topicbench-config.schema.json`` after changing a setting)."""
    assert json.loads(PUBLISHED.read_text(encoding="utf-8")) == config_schema(plugins=False)


def test_the_published_schema_is_valid_json_schema_and_accepts_the_documented_configs():
    schema = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]  # the front door and the manual
    blocks = [block for page in pages for block in re.findall(r"```yaml\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)]
    assert re.search(r"```yaml\n", (ROOT / "README.md").read_text(encoding="utf-8")), "the README shows a config"
    builtin = set(schema["$defs"]["model"]["properties"]["model"]["enum"])
    checked = 0
    for block in blocks:
        data = yaml.safe_load(block)
        # a plugin's model is in the schema that `topicbench schema` prints where the plugin is installed
        if isinstance(data, dict) and "models" in data and all(m["model"] in builtin for m in data["models"]):
            jsonschema.Draft202012Validator(schema).validate(data)  # as an editor's plain validator does
            checked += 1
    assert checked


@pytest.mark.parametrize("bad, path", [
    ({"seeds": [True]}, ["seeds", 0]),
    ({"seeds": [4294967296]}, ["seeds", 0]),
    ({"models": [{"model": "gensim_lda", "num_topics": 4, "settings": {"passes": "10"}}]}, ["models", 0, "settings", "passes"]),
    ({"models": [{"model": "elda", "settings": {"kappa": True}}]}, ["models", 0, "settings", "kappa"]),
    ({"corpora": [{"name": "x", "preprocessing": {"preprocessed": "no"}}]}, ["corpora", 0, "preprocessing", "preprocessed"]),
    ({"metrics": ["umass", "umass"]}, ["metrics"]),
])
def test_an_editor_flags_what_topicbench_refuses(bad, path):
    """The published schema and topicbench's own check agree: an editor shows the same mistake."""
    data = {"models": [{"model": "elda"}], **bad}
    errors = list(jsonschema.Draft202012Validator(json.loads(PUBLISHED.read_text(encoding="utf-8"))).iter_errors(data))
    assert any(list(error.absolute_path) == path for error in errors), [e.message for e in errors]
    with pytest.raises(InputError):
        BenchmarkConfig.from_dict(data)


def test_the_schema_spells_out_each_models_settings_with_its_defaults():
    schema = config_schema(plugins=False)
    by_model = {branch["if"]["properties"]["model"]["const"]: branch["then"]["properties"]["settings"]
                for branch in schema["$defs"]["model"]["allOf"]}
    assert set(by_model) >= {"bertopic", "ctm", "elda", "etm", "fastopic", "gensim_lda", "gibbs_lda", "prodlda",
                             "nmf", "lsi", "hdp", "keynmf", "s3", "gmm"}
    assert by_model["nmf"]["properties"]["init"] == {"default": None}  # None: scikit-learn's choice, checked by nmf
    assert by_model["gensim_lda"]["properties"]["alpha"] == {"anyOf": [{"type": "number", "maximum": 10000.0}, {"enum": ["auto"]}],
                                                          "default": 0.1}
    assert by_model["gibbs_lda"]["properties"]["optimize_alpha"] == {"type": "boolean", "default": False}
    assert by_model["prodlda"]["properties"]["hidden_sizes"] == {"type": "array", "items": {"maximum": 10000},
                                                             "default": [100, 100]}
    assert by_model["elda"]["additionalProperties"] is False


def test_topicbench_schema_prints_it(capsys, tmp_path):
    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["title"] == "topicbench benchmark config"
    assert main(["schema", "--out", str(tmp_path / "schema.json")]) == 0
    assert json.loads((tmp_path / "schema.json").read_text()) == printed


def test_the_built_in_config_passes_its_own_schema():
    assert default_config().models


# -- reading YAML -------------------------------------------------------------------------------


def test_a_key_given_twice_names_both_lines(tmp_path):
    path = tmp_path / "twice.yaml"
    path.write_text("experiment: a\nmodels: [{model: elda}]\nexperiment: b\n")
    with pytest.raises(InputError, match=r"line 3, column 1: the key 'experiment' is given twice \(first at line 1\)"):
        read_yaml_config(path)


def test_merge_keys_may_still_be_overridden(tmp_path):
    """YAML's ``<<`` merge is how shared settings are written once; overriding one is no mistake."""
    path = tmp_path / "merge.yaml"
    path.write_text(
        "base: &base {passes: 1, iterations: 50}\n"
        "models:\n  - {model: gensim_lda, num_topics: 4, settings: {<<: *base, passes: 2}}\n"
    )
    data = read_yaml_config(path)
    assert data["models"][0]["settings"] == {"passes": 2, "iterations": 50}


@pytest.mark.timeout(30)
def test_an_alias_bomb_is_refused_at_once_wherever_it_sits(tmp_path):
    layers = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    layers += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 10)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(layers) + "\ncorpora: [{name: x, preprocessing: {stopwords: *l9}}]\n")
    assert path.stat().st_size < 700
    started = time.monotonic()
    with pytest.raises(InputError, match="expands to more than 1,000,000 values"):
        read_yaml_config(path)
    assert time.monotonic() - started < 5


def test_shared_values_count_as_often_as_they_are_used():
    shared = ["a", "b", "c"]
    assert count_values({"x": shared, "y": shared}, 100, "t") == 1 + 2 + 2 * 4
    nested = [shared] * 3
    assert count_values([nested, nested], 100, "t") == 1 + 2 * (1 + 3 * 4)
    with pytest.raises(InputError, match="more than 20 values"):
        count_values([nested, nested], 20, "t")


def test_a_value_that_contains_itself_is_refused():
    loop = []
    loop.append(loop)
    with pytest.raises(InputError, match="contains itself"):
        count_values({"x": loop}, 100, "t")


def test_a_config_with_a_byte_order_mark_reads(tmp_path):
    path = tmp_path / "bom.yaml"
    path.write_bytes("\ufeffexperiment: bom\nmodels: [{model: elda}]\n".encode("utf-8"))
    assert BenchmarkConfig.from_yaml(path).experiment == "bom"


EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))


@pytest.mark.parametrize("example", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_every_example_config_passes_every_check(example):
    """The configs the README points at are checked as a run would check them (an LLM example with
    the endpoint its command line gives; a search example's search block too)."""
    from conftest import SHARED_DATA_PATH
    from topicbench.flows.config.file import read_yaml_config
    from topicbench.flows.search_plan import SearchPlan

    data = read_yaml_config(example)
    if "llm" in data and "base_url" not in data["llm"]:
        data["llm"] = {**data["llm"], "base_url": "http://127.0.0.1:8080/v1", "model": "any"}
    for corpus in data.get("corpora", []):  # a paper corpus by name: ../shared/data holds it where it is not fetched
        if (SHARED_DATA_PATH / corpus["source"]).is_dir():
            corpus.update(source=str(SHARED_DATA_PATH / corpus["source"]), preprocessing={"preprocessed": True})
    try:
        config = BenchmarkConfig.from_dict(data, where=example.name)
    except InputError as error:
        if "topicbench data fetch" not in str(error):
            raise
        pytest.skip(f"{example.name} reads a dataset by name that is not fetched here: {error}")
    if config.search is not None:
        assert SearchPlan.from_config(config).objectives
