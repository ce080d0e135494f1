"""The models people compare against (NMF, LSI, HDP, KeyNMF, S³, GMM; issue 41) in the flows:
``models list`` says what each is and needs, and the paper's Set 2 takes them by name."""

from __future__ import annotations

from topicbench.flows.cli.catalog import model_catalog
from topicbench.flows.paper import SET2_BASELINES, paper_config

COMPARISON_MODELS = ("nmf", "lsi", "hdp", "keynmf", "s3", "gmm")


def test_models_list_gives_each_models_family_needs_and_held_out_inference():
    entries = {entry["name"]: entry for entry in model_catalog()}
    assert len(entries) >= 14 and set(COMPARISON_MODELS) <= set(entries)
    assert all(entry["family"] for entry in entries.values() if entry["error"] is None)
    assert entries["nmf"]["needs"] == ["K (num_topics)"] and entries["nmf"]["family"] == "matrix factorisation"
    assert entries["hdp"]["needs"][0].startswith("no K, chosen by initial_k") and entries["hdp"]["token_topics"]
    assert entries["bertopic"]["needs"][0].startswith("K optional")
    for name in ("keynmf", "s3", "gmm", "fastopic"):
        assert "document embeddings" in entries[name]["needs"], name
    assert "document embeddings" not in entries["lsi"]["needs"]
    assert all(entries[name]["infers_held_out"] for name in COMPARISON_MODELS)
    assert entries["elda"]["infers_held_out"] is False


def test_models_list_says_what_each_model_reaches_beyond_the_machine():
    """Issue 47: which models need a download or an endpoint (none downloads; TopicGPT asks one)."""
    entries = {entry["name"]: entry for entry in model_catalog() if entry["error"] is None}
    assert entries["topicgpt"]["offline"].startswith("asks an LLM endpoint")
    assert "all-MiniLM-L6-v2" in entries["bertopic"]["offline"] and entries["lsi"]["offline"] == "nothing downloaded"
    assert all(entry["offline"] for entry in entries.values())


def test_paper_set2_takes_the_comparison_models_by_name_at_the_papers_k(tmp_path):
    (tmp_path / "congress").mkdir()
    config = paper_config(tmp_path, corpora=("congress",), tracking_uri="sqlite:///x.db", baselines=COMPARISON_MODELS)
    models = {model.name: model for model in config.models if model.model in COMPARISON_MODELS}
    assert set(models) == set(COMPARISON_MODELS)
    assert models["hdp"].num_topics is None
    assert {models[name].num_topics for name in COMPARISON_MODELS if name != "hdp"} == {100}
    # the paper's own run is unchanged: they join only when named
    default = paper_config(tmp_path, corpora=("congress",), tracking_uri="sqlite:///x.db")
    assert not {model.model for model in default.models} & set(COMPARISON_MODELS)
    assert not set(SET2_BASELINES) & set(COMPARISON_MODELS)
