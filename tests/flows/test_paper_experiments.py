"""The paper's experiments as shipped files (flows/experiments/*.yaml): found by name, valid
configs, and the paper's config built from them equal to the one the code built before them; and
where ``topicbench paper`` reads the corpora from (``--data``, ``$TOPICBENCH_DATA``, the data cache)."""

from __future__ import annotations

import hashlib
import json

import pytest

from topicbench.core.constants import GENERATORS
from topicbench.core.datasets import COMPLETE_MARKER, DATASETS
from topicbench.core.validation import InputError
from topicbench.flows.config.model import BenchmarkConfig
from topicbench.flows.experiments import PAPER_EXPERIMENTS, experiment_names, read_experiment
from topicbench.flows.paper import paper_config, set1_config, set2_config

PAPER_CORPORA = ("congress", "reuters", "20ng_politics")
SET2_METRICS = ["umass", "npmi", "cv", "embedding_pairwise", "embedding_centroid", "topic_diversity", "inverted_rbo"]


def _gibbs(label: str, alpha: float, optimize_alpha: bool) -> dict:
    return {"label": label, "metrics": None, "model": "gibbs_lda", "num_topics": 100,
            "settings": {"alpha": alpha, "eta": 0.01, "iterations": 1000, "optimize_alpha": optimize_alpha}}


def _set2(model: str, label=None, num_topics=None, settings=None) -> dict:
    return {"label": label, "metrics": SET2_METRICS, "model": model, "num_topics": num_topics, "settings": settings or {}}


#: ``paper_config(DATA, tracking_uri="sqlite:///x.db")`` as flows/paper.py built it from its Python
#: constants before the experiment files held them (the data folder written as DATA).
PAPER_DEFAULT = {
    "experiment": "paper",
    "corpora": [{"name": name, "source": f"DATA/{name}", "preprocessing": {"preprocessed": True}} for name in PAPER_CORPORA],
    "models": [
        _gibbs("gibbs", 1.0, False), _gibbs("gibbs_sparse", 0.1, False), _gibbs("gibbs_bayes", 0.1, True),
        _set2("elda", "elda_raw_umass", settings={"generator": "raw_umass", "kappa": 2.0}),
        _set2("elda", "elda_exp_umass", settings={"generator": "exp_umass", "kappa": 2.0}),
        _set2("elda", "elda_cooccurrence", settings={"generator": "cooccurrence", "kappa": 2.0}),
        _set2("bertopic"), _set2("prodlda", num_topics=100), _set2("etm", num_topics=100), _set2("ctm", num_topics=100),
        _set2("fastopic", num_topics=100),
        _set2("fastopic", "fastopic_vocab2000", 100, {"vocab_size": 2000}),
        _set2("fastopic", "fastopic_vocab1000", 100, {"vocab_size": 1000}),
    ],
    "seeds": [0, 1, 2],
    "metrics": ["log_likelihood_own", "log_likelihood_elda", "log_likelihood_randk", "umass", "npmi", "topic_diversity",
                "cv", "embedding_pairwise", "embedding_centroid", "inverted_rbo"],
    "top_n": [5, 10, 15, 20, 25],
    "tracking_uri": "sqlite:///x.db",
    "workers": 2,
    "scheduler": None,
    "report_sections": ["summary", "k_comparison", "changed_settings", "data_and_settings", "paper_notes", "notes",
                        "paper_set1", "paper_set2", "set1",
                        "coherence", "diversity", "training", "fit_time", "robustness", "topics", "elda_topics",
                        "failed_runs"],
    "llm": None,
    "search": None,
}

#: SHA-256 of the canonical JSON (data folder written as DATA), report sections left out, of the
#: configs the code built from its Python constants before the experiment files held them, for
#: other options (recomputed when the K section and "Data and settings" joined the report
#: sections: with the old sections put back, each hashed to its earlier value).
BEFORE = {
    "set1 default": "d393e92a4d87476505a4b7034fc189bec65a98296747fb2219310291b9c9af1c",
    "set2 default": "cdcbc8bfda2b78a055cc24ec803ff907662658f3718e5ec51eae22eb6fd28af0",
    "paper, every option": "58fdd10a1cb863cd0b342f782952ebc8a0c85cf932157ec5662cc0e87df86bb5",
    "paper, the comparison models": "0651bd389f7c08d374c0d7d611848c5fd6a6905c9b0010faa548b78200b92845",
    "paper, no baselines": "afb5e33ea16953df689f58a3e6f94427bd8c662513d1be0f16406a23cdb45c88",
    "paper, baseline settings": "e10f9472555d6777c576757372ea0b12d8f8cc59010af34dce50650bbdb3defa",
    "paper, llm": "e45bc54716e1ac4ced8f45d38b11ca88fb2f309fec3d24ef97cc271928a02ffd",
    "set2 of benchmarks/bench_flow_memory.py": "aeeaa8b9798217c28f6d62fcf81564552b8799b277f5228d15d4652c0cf389cc",
}


@pytest.fixture
def data(tmp_path):
    """A data folder holding the paper's three corpora (empty folders: a config only checks they exist)."""
    folder = tmp_path / "data"
    for name in PAPER_CORPORA:
        (folder / name).mkdir(parents=True)
    return folder


def _written(config: BenchmarkConfig, data) -> dict:
    written = config.to_dict()
    for corpus in written["corpora"]:
        corpus["source"] = corpus["source"].replace(str(data), "DATA")
    return written


def _sha256(written: dict) -> str:
    """Of the config without its report sections: which sections a report shows changes no fit, and
    the sections have grown since (the K section and "Data and settings", issues 47 and 48)."""
    written = {key: value for key, value in written.items() if key != "report_sections"}
    return hashlib.sha256(json.dumps(written, sort_keys=True).encode()).hexdigest()


def test_the_paper_config_from_its_experiment_files_is_the_one_its_constants_built(data):
    assert _written(paper_config(data, tracking_uri="sqlite:///x.db"), data) == PAPER_DEFAULT


def test_every_option_gives_the_config_it_gave_before_the_experiment_files(data):
    uri = "sqlite:///x.db"
    built = {
        "set1 default": set1_config(data, tracking_uri=uri),
        "set2 default": set2_config(data, tracking_uri=uri),
        "paper, every option": paper_config(data, seeds=(3, 5), iterations=50, corpora=("reuters", "congress"), workers=4,
                                            tracking_uri="sqlite:///y.db", baselines=("etm", "prodlda", "fastopic")),
        "paper, the comparison models": paper_config(data, tracking_uri=uri, corpora=("congress",), baselines=(
            "nmf", "lsi", "hdp", "keynmf", "s3", "gmm", "ctm", "bertopic")),
        "paper, no baselines": paper_config(data, tracking_uri=uri, baselines=()),
        "paper, baseline settings": paper_config(data, tracking_uri=uri, corpora=("congress",), baselines=("elda", "fastopic"),
                                                 baseline_settings={"fastopic": {"epochs": 3}}),
        "paper, llm": paper_config(data, tracking_uri=uri, corpora=("congress",),
                                   llm={"base_url": "http://127.0.0.1:8080/v1", "model": "smollm2"}),
        "set2 of benchmarks/bench_flow_memory.py": set2_config(data, seeds=(0,), corpora=("congress",), baselines=(),
                                                                tracking_uri="sqlite:///s.db", workers=1, experiment="flow-memory"),
    }
    assert {case: _sha256(_written(config, data)) for case, config in built.items()} == BEFORE


def test_every_shipped_experiment_is_a_valid_config_as_it_stands(tmp_path, monkeypatch):
    # as files, their corpora are datasets of the data cache: fetched ones here
    cache = tmp_path / "cache"
    for dataset in DATASETS.values():
        (cache / dataset.name / dataset.content).parent.mkdir(parents=True)
        (cache / dataset.name / dataset.content).write_text("tax cut\ttrain\n")
        (cache / dataset.name / COMPLETE_MARKER).write_text("{}")
    monkeypatch.setenv("TOPICBENCH_DATA", str(cache))
    monkeypatch.chdir(tmp_path)  # no folder named like a corpus here
    assert set(PAPER_EXPERIMENTS) <= set(experiment_names())
    for name in experiment_names():
        config = BenchmarkConfig.from_dict(read_experiment(name), where=name).validate(name)
        assert config.experiment == name and all(corpus.resolved_source().startswith(str(cache)) for corpus in config.corpora)


def test_the_paper_sets_agree_where_they_run_as_one_benchmark():
    one, two = (read_experiment(name) for name in PAPER_EXPERIMENTS)
    assert {key: one[key] for key in ("corpora", "seeds", "workers", "report_sections")} == {
        key: two[key] for key in ("corpora", "seeds", "workers", "report_sections")}
    assert [corpus["name"] for corpus in one["corpora"]] == list(PAPER_CORPORA)
    # Set 2 runs E-LDA with every keyword generator there is
    assert [m["settings"]["generator"] for m in two["models"] if m["model"] == "elda"] == list(GENERATORS)


def test_an_unknown_experiment_is_one_line_naming_the_shipped_ones():
    with pytest.raises(InputError) as error:
        read_experiment("paper-set3")
    assert str(error.value) == f"unknown experiment 'paper-set3'; the shipped experiments: {', '.join(experiment_names())}"
    with pytest.raises(InputError, match="unknown experiment"):
        read_experiment("../paper-set1")


def test_the_corpora_are_read_from_data_else_topicbench_data_else_the_data_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("TOPICBENCH_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    cache = tmp_path / "user-cache" / "topicbench" / "data"  # where `topicbench data fetch` puts them
    given, variable = tmp_path / "given", tmp_path / "variable"
    for folder in (cache, given, variable):
        (folder / "congress").mkdir(parents=True)

    def source():
        return paper_config(**options).corpora[0].source

    options = dict(corpora=("congress",), baselines=(), tracking_uri="sqlite:///x.db")
    assert source() == str(cache / "congress")
    monkeypatch.setenv("TOPICBENCH_DATA", str(variable))
    assert source() == str(variable / "congress")
    options["data"] = given
    assert source() == str(given / "congress")


def test_missing_corpora_say_where_they_were_looked_for_and_how_to_give_the_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPICBENCH_DATA", str(tmp_path / "cache"))
    with pytest.raises(InputError) as error:
        paper_config(corpora=("congress", "reuters"), tracking_uri="sqlite:///x.db")
    message = str(error.value)
    assert message.startswith(f"paper corpora missing from {tmp_path / 'cache'}: congress, reuters (the data cache, "
                              "from $TOPICBENCH_DATA); give the folder that holds them with --data FOLDER or "
                              "TOPICBENCH_DATA=FOLDER, or fetch them")
    assert "topicbench data fetch reuters" in message and "\n" not in message and "shared" not in message
    with pytest.raises(InputError, match=r"missing from .*given: congress \(the folder given by --data\)"):
        paper_config(tmp_path / "given", corpora=("congress",), tracking_uri="sqlite:///x.db")
    (tmp_path / "given" / "nyt").mkdir(parents=True)
    with pytest.raises(InputError, match="--corpora: 'nyt' is not a corpus of the paper; its corpora: congress, reuters, "
                                         "20ng_politics"):
        paper_config(tmp_path / "given", corpora=("nyt",), tracking_uri="sqlite:///x.db")


def test_paper_help_shows_the_experiment_files_defaults_and_no_source_tree_folder(capsys):
    from topicbench.flows.cli.main import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["paper", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    set1 = read_experiment(PAPER_EXPERIMENTS[0])
    assert f"(default: {' '.join(map(str, set1['seeds']))})" in text and f"(default: {set1['workers']})" in text
    assert "$TOPICBENCH_DATA" in text and "shared" not in text
