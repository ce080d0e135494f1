"""topicbench search: bad search blocks fail before any fit; a grid and a sampler run as tracked
trials under one parent, choose by the one-standard-error rule, write their report and chosen
config; a second run fits nothing; an interrupted or killed search resumes without fitting any
(corpus, model, seed) twice."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import optuna
import psutil
import pytest
import yaml
from mlflow.tracking import MlflowClient

from topicbench.core.validation import InputError
from topicbench.flows import search as search_module
from topicbench.flows.config import BenchmarkConfig
from topicbench.flows.search import run_search
from topicbench.flows.search_plan import SearchPlan
from topicbench.tasks.study import default_storage
from topicbench.tasks.study_report import study_report, write_study_report

from test_exit_paths import wait_for_fit_claims
from test_run_claims import topicbench, topicbench_env

GENSIM = {"model": "gensim_lda", "num_topics": 4, "settings": {"passes": 2, "iterations": 20, "top_words": 10}}
ELDA = {"model": "elda", "settings": {"generator": "cooccurrence", "top_words": 10}}


def config_data(corpus, store: str, search: dict, models=(GENSIM, ELDA), seeds=(0, 1), **extra) -> dict:
    return {
        "experiment": "tiny-search",
        "corpora": [{"name": "tiny", "source": str(corpus), "preprocessing": {"preprocessed": True}}],
        "models": list(models), "seeds": list(seeds), "metrics": ["npmi", "topic_diversity", "log_likelihood_own"],
        "top_n": [5], "tracking_uri": store, "search": search, **extra,
    }


GRID = {"objectives": ["npmi@5", "stability"],
        "spaces": {"gensim_lda": {"num_topics": [2, 4]}, "elda": {"kappa": [1.0, 2.0]}}}


def plan_error(tiny_octis, tmp_path, search: dict | None, **changes) -> str:
    data = config_data(tiny_octis, f"sqlite:///{tmp_path / 'mlflow.db'}", search)
    data.update(changes)
    with pytest.raises(InputError) as error:
        SearchPlan.from_config(BenchmarkConfig.from_dict(data))
    message = str(error.value)
    assert "\n" not in message
    return message


# -- bad search blocks: one line, before any fit ---------------------------------------------------


@pytest.mark.parametrize("search, expected", [
    (None, "the config has no search: block"),
    ({"objectives": ["npmi@5"], "spaces": {}}, "search.spaces"),
    ({"objectives": ["npmi@5"], "spaces": {"gensim_lda": {}}}, "the space is empty"),
    ({"objectives": ["npmi@5"], "spaces": {"gensim_lda": {"num_topics": [1, 4]}}}, "K must be at least 2, got 1"),
    ({"objectives": ["npmi@5"], "spaces": {"gensim_lda": {"eta_prior": [0.1]}}},
     "gensim_lda.eta_prior: gensim_lda has no setting 'eta_prior'"),
    ({"objectives": ["npmi@5"], "spaces": {"lda": {"num_topics": [2]}}}, "no model is labelled 'lda'"),
    ({"objectives": ["npmi@5"], "spaces": {"elda": {"kappa": [0.5, 2.0]}}}, "at kappa=0.5"),
    ({"objectives": ["cv@5"], "spaces": {"elda": {"kappa": [1.0]}}}, "which is not in the config's metrics"),
    ({"objectives": ["perplexity"], "spaces": {"elda": {"kappa": [1.0]}}}, "not in the config's metrics"),
    ({"objectives": ["npmi@5"], "sampler": "grid", "trials": 5, "spaces": {"elda": {"kappa": [1.0]}}},
     "trials is for sampler tpe or nsga2"),
    ({"objectives": ["npmi@5"], "sampler": "nsga2", "spaces": {"elda": {"kappa": [1.0]}}},
     "nsga2 searches several objectives"),
    ({"objectives": ["npmi@5"], "spaces": {"gensim_lda": {"num_topics": {"low": 2, "high": 8}}}},
     "a grid needs a list or a range with a step"),
    ({"objectives": ["npmi@5"], "sampler": "annealing", "spaces": {"elda": {"kappa": [1.0]}}}, "search.sampler"),
])
def test_a_bad_search_block_is_one_line_before_any_fit(tiny_octis, tmp_path, search, expected):
    assert expected in plan_error(tiny_octis, tmp_path, search)


def test_an_objective_that_cannot_apply_to_a_model_is_refused(tiny_octis, tmp_path):
    prodlda = {"model": "prodlda", "num_topics": 4}
    message = plan_error(tiny_octis, tmp_path, {"objectives": ["log_likelihood_own"], "spaces": {"elda": {"kappa": [1.0]}}},
                         models=[ELDA, prodlda])
    assert "'log_likelihood_own' does not apply to 'prodlda'" in message and "does not assign" in message
    message = plan_error(tiny_octis, tmp_path, {"objectives": ["stability"], "spaces": {"elda": {"kappa": [1.0]}}},
                         seeds=[0])
    assert "stability compares seeds: give two or more seeds" in message


def test_the_command_refuses_a_bad_space_in_seconds_creating_nothing(tiny_octis, tmp_path):
    config = tmp_path / "search.yaml"
    bad = {**GRID, "spaces": {"gensim_lda": {"num_topics": [1, 4]}}}
    config.write_text(yaml.safe_dump(config_data(tiny_octis, f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}", bad)))
    started = time.monotonic()
    done = subprocess.run(topicbench("search", str(config)), env=topicbench_env(tmp_path / "prefect"), cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        f"topicbench: error: {config}: search.spaces.gensim_lda.num_topics: K must be at least 2, got 1"]
    assert time.monotonic() - started < 60
    assert not (tmp_path / "store").exists() and not (tmp_path / "results").exists()


# -- a search end to end ----------------------------------------------------------------------------


def fit_runs(store: str, experiment: str = "tiny-search") -> list:
    client = MlflowClient(store)
    found = client.get_experiment_by_name(experiment)
    return client.search_runs([found.experiment_id], "tags.`topicbench.role` = 'fit'", max_results=1000)


def study_parents(store: str, experiment: str = "tiny-search") -> list:
    client = MlflowClient(store)
    found = client.get_experiment_by_name(experiment)
    return client.search_runs([found.experiment_id], "tags.`topicbench.role` = 'search'", max_results=100)


def assert_each_key_finished_once(store: str, expected: int) -> None:
    finished = [r for r in fit_runs(store) if r.info.status == "FINISHED"]
    keys = [r.data.tags["topicbench.run_key"] for r in finished]
    assert len(keys) == len(set(keys)) == expected


@pytest.mark.usefixtures("prefect_server")
def test_a_grid_search_chooses_reports_and_a_second_run_fits_nothing(tiny_octis, tmp_path):
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = BenchmarkConfig.from_dict(config_data(tiny_octis, store, GRID))
    plan = SearchPlan.from_config(config)
    storage = default_storage(store)
    assert storage == f"sqlite:///{tmp_path / 'optuna-studies.db'}"
    outcome = run_search(config, plan, storage)
    counts = outcome["counts"]
    assert (counts.trials_told, counts.fits_run, counts.fits_found, counts.batches) == (4, 8, 0, 1)
    # the shared work: the corpus read once; the metric context built once in this process for 8 fits
    assert (counts.corpus_reads, counts.fits_scored, counts.metric_context_builds) == (1, 8, 1)
    choices = {c.label: c for c in outcome["choices"]}
    assert set(choices) == {"gensim_lda", "elda"}
    assert choices["gensim_lda"].point in ({"num_topics": 2}, {"num_topics": 4})
    assert choices["elda"].point in ({"kappa": 1.0}, {"kappa": 2.0})
    # E-LDA's fit does not depend on the seed: its topics reappear exactly
    elda_trials = [t for t in choices["elda"].trials if t["state"] == "COMPLETE"]
    assert all(t["per_seed"]["stability"] == [pytest.approx(1.0)] for t in elda_trials)
    # every trial's fit is a nested run of the one parent of the study
    parents = study_parents(store)
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    runs = fit_runs(store)
    assert len(runs) == 8 and {r.data.tags["mlflow.parentRunId"] for r in runs} == {parents[0].info.run_id}
    assert {r.data.tags["model"] for r in runs} == {"gensim_lda[num_topics=2]", "gensim_lda[num_topics=4]",
                                                     "elda[kappa=1]", "elda[kappa=2]"}
    # the report and a config ready for topicbench run
    written = write_study_report(study_report(outcome, plan.objectives, "topicbench search x", storage),
                                 outcome["chosen_config"], tmp_path / "report")
    text = Path(written["markdown"]).read_text()
    assert "## Chosen settings" in text and "## Pareto front" in text and "search_tiny.png" in text
    chosen = BenchmarkConfig.from_dict(yaml.safe_load(Path(written["config"]).read_text()))
    assert chosen.search is None and chosen.experiment == "tiny-search-chosen"
    assert chosen.models[0].num_topics == choices["gensim_lda"].point["num_topics"]
    assert chosen.models[1].settings["kappa"] == choices["elda"].point["kappa"]

    again = run_search(config, plan, storage)
    assert (again["counts"].trials_told, again["counts"].fits_run) == (0, 0)
    assert [c.point for c in again["choices"]] == [c.point for c in outcome["choices"]]
    assert len(fit_runs(store)) == 8 and len(study_parents(store)) == 1


@pytest.mark.usefixtures("prefect_server")
def test_a_sampler_search_asks_in_batches_up_to_its_trials(tiny_octis, tmp_path):
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    search = {"sampler": "tpe", "trials": 3, "batch": 2, "seed": 7, "objectives": ["npmi@5"],
              "spaces": {"gensim_lda": {"num_topics": {"low": 2, "high": 6}}}}
    config = BenchmarkConfig.from_dict(config_data(tiny_octis, store, search, models=[GENSIM], seeds=[0]))
    outcome = run_search(config, SearchPlan.from_config(config), default_storage(store))
    assert (outcome["counts"].trials_told, outcome["counts"].batches) == (3, 2)
    study = optuna.load_study(study_name="tiny-search/tiny/gensim_lda", storage=default_storage(store))
    assert len(study.trials) == 3 and all(2 <= t.params["num_topics"] <= 6 for t in study.trials)
    assert all(t.state.name == "COMPLETE" for t in study.trials)


@pytest.mark.usefixtures("prefect_server")
def test_an_interrupted_search_resumes_its_asked_trials_without_refitting(tiny_octis, tmp_path, monkeypatch):
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = BenchmarkConfig.from_dict(config_data(tiny_octis, store, GRID))
    plan, storage = SearchPlan.from_config(config), default_storage(store)
    told = []
    real_result = search_module.trial_result

    def interrupted_after_one(*args, **kwargs):
        if told:
            raise KeyboardInterrupt
        told.append(1)
        return real_result(*args, **kwargs)

    monkeypatch.setattr(search_module, "trial_result", interrupted_after_one)
    with pytest.raises(KeyboardInterrupt):
        run_search(config, plan, storage)
    assert study_parents(store)[0].info.status == "KILLED"
    monkeypatch.setattr(search_module, "trial_result", real_result)

    resumed = run_search(config, plan, storage)
    # the 3 trials asked and never told are taken up; their 8 fits were all done before the stop
    assert (resumed["counts"].trials_told, resumed["counts"].fits_run, resumed["counts"].fits_found) == (3, 0, 6)
    assert_each_key_finished_once(store, 8)
    parents = study_parents(store)
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"


@pytest.mark.slow
def test_a_search_killed_mid_fit_resumes_and_fits_no_seed_twice(tiny_octis, tmp_path, prefect_server):
    """SIGKILL of a real `topicbench search` while its fits run; the same command then finishes the
    study: one FINISHED run per (model, point, seed), every trial told once."""
    from prefect.settings import PREFECT_API_URL

    database = tmp_path / "mlflow.db"
    store = f"sqlite:///{database}"
    gibbs = {"model": "gibbs_lda", "num_topics": 4, "settings": {"iterations": 3000}}
    search = {"objectives": ["npmi@5"], "spaces": {"gibbs_lda": {"num_topics": [2, 3, 4]}}}
    config = tmp_path / "search.yaml"
    config.write_text(yaml.safe_dump(config_data(tiny_octis, store, search, models=[gibbs], seeds=[0, 1])))
    command = topicbench("search", str(config), "--out", str(tmp_path / "report"))
    first = subprocess.Popen(command, env=topicbench_env(tmp_path / "prefect"), cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for_fit_claims(database, first, 2, status="FINISHED")
    children = [child.pid for child in psutil.Process(first.pid).children(recursive=True)]
    first.kill()
    first.communicate()
    psutil.wait_procs([psutil.Process(pid) for pid in children if psutil.pid_exists(pid)], timeout=10)

    resumed = subprocess.run(command, env=topicbench_env(tmp_path / "prefect", PREFECT_API_URL.value()), cwd=tmp_path,
                             capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert_each_key_finished_once(store, 6)
    study = optuna.load_study(study_name="tiny-search/tiny/gibbs_lda", storage=default_storage(store))
    assert sorted(t.params["num_topics"] for t in study.trials) == [2, 3, 4]
    assert all(t.state.name == "COMPLETE" for t in study.trials)
    chosen = BenchmarkConfig.from_dict(yaml.safe_load((tmp_path / "report" / "chosen.yaml").read_text()))
    assert chosen.models[0].num_topics in (2, 3, 4)
    assert "gibbs_lda on tiny: K=" in resumed.stdout


@pytest.mark.usefixtures("prefect_server")
def test_nsga2_searches_two_objectives_and_its_report_shows_the_front(tiny_octis, tmp_path):
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    search = {"sampler": "nsga2", "trials": 2, "seed": 3, "objectives": ["npmi@5", "topic_diversity@5"],
              "spaces": {"gensim_lda": {"num_topics": [2, 3, 4]}}}
    config = BenchmarkConfig.from_dict(config_data(tiny_octis, store, search, models=[GENSIM], seeds=[0]))
    plan = SearchPlan.from_config(config)
    outcome = run_search(config, plan, default_storage(store))
    study = optuna.load_study(study_name="tiny-search/tiny/gensim_lda", storage=default_storage(store))
    assert [d.name for d in study.directions] == ["MAXIMIZE", "MAXIMIZE"] and len(study.trials) == 2
    text = study_report(outcome, plan.objectives, "topicbench search x", "db")
    front = next(s for s in text.sections if s.title == "Pareto front").blocks[0].cells
    assert 1 <= len(front) <= 2 and set(front.columns) >= {"npmi@5", "topic_diversity@5"}


def test_a_study_reopened_with_other_objectives_is_refused(tmp_path):
    from topicbench.core.search_space import Objective, SearchSpace
    from topicbench.tasks.study import ModelStudy, open_storage

    storage = open_storage(str(tmp_path / "studies.journal"))
    space = SearchSpace.from_dict("m", {"num_topics": [2, 3]})
    first = ModelStudy(storage, "s/c/m", space, [Objective("npmi@5", True)], "grid", None, 0)
    assert [p.point for p in first.pending(None)] == [{"num_topics": 2}, {"num_topics": 3}]
    # the same study again: its two asked trials are resumed, the grid is not enqueued twice
    again = ModelStudy(storage, "s/c/m", space, [Objective("npmi@5", True)], "grid", None, 0)
    assert sorted(p.number for p in again.pending(None)) == [0, 1] and len(again.study.trials) == 2
    with pytest.raises(InputError, match="was run with other objectives"):
        ModelStudy(storage, "s/c/m", space, [Objective("npmi@5", True), Objective("stability", True)], "grid", None, 0)


def test_an_unusable_study_storage_is_one_line(tmp_path):
    from topicbench.tasks.study import open_storage

    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(InputError, match="search storage .* cannot be opened"):
        open_storage(f"sqlite:///{blocker}/studies.db")
