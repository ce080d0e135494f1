"""topicbench search: bad search blocks fail before any fit; a grid and a sampler run as tracked
trials under one parent, choose by the one-standard-error rule, write their report and chosen
config; a second run fits nothing; an interrupted or killed search resumes without fitting any
(corpus, model, seed) twice."""

from __future__ import annotations

import math
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import optuna
import psutil
import pytest
import yaml
from mlflow.tracking import MlflowClient

from topicbench.core.search_space import Objective
from topicbench.core.validation import InputError
from topicbench.flows import search as search_module
from topicbench.flows import search_choice
from topicbench.flows.benchmark import run_benchmark
from topicbench.flows.config.model import BenchmarkConfig
from topicbench.flows.search import run_search
from topicbench.flows.search_plan import SearchPlan
from topicbench.tasks.search.study import default_storage
from topicbench.tasks.report.study import study_report, write_study_report

from report_browser import CHROMIUM, clipped_titles, open_page, rank_problems
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


def stored_studies(store: str, label: str) -> list:
    """Every study of ``label`` in the search's storage (its name ends with its definition's digest)."""
    storage = default_storage(store)
    return [optuna.load_study(study_name=summary.study_name, storage=storage)
            for summary in optuna.get_all_study_summaries(storage)
            if summary.study_name.startswith(f"tiny-search/tiny/{label}@")]


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
    # E-LDA's fit does not depend on the seed: its fits are identical, so stability (1 by construction) does not
    # apply to it and rewards nothing; the study failed its trials for that NaN alone, and the choice reads them
    elda_trials = [t for t in choices["elda"].trials if t["state"] == "COMPLETE"]
    assert len(elda_trials) == 2 and all(t["deterministic"] for t in elda_trials)
    assert all(len(t["per_seed"]["stability"]) == 1 and math.isnan(t["per_seed"]["stability"][0]) for t in elda_trials)
    # every trial's fit is a nested run of the one parent of the study
    parents = study_parents(store)
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    runs = fit_runs(store)
    assert len(runs) == 8 and {r.data.tags["mlflow.parentRunId"] for r in runs} == {parents[0].info.run_id}
    assert {r.data.tags["model"] for r in runs} == {"gensim_lda[num_topics=2]", "gensim_lda[num_topics=4]",
                                                     "elda[kappa=1]", "elda[kappa=2]"}
    # the report and a config ready for topicbench run
    written = write_study_report(study_report(outcome, plan.objectives, "topicbench search x", storage),
                                 outcome["chosen_configs"], tmp_path / "report")
    text = Path(written["markdown"]).read_text()
    assert "## Chosen settings" in text and "## Pareto front" in text and "search_tiny.png" in text
    # what to use across the models, and each chosen fit's topics, as its first seed found them
    recommendation = outcome["recommendations"][0]
    assert recommendation.label in choices and f"On tiny: {recommendation.headline()}." in text
    for choice in outcome["choices"]:
        assert choice.topics_seed == 0 and choice.topics and choice.topics[0].split()[0] in text
        assert [t.chosen for t in choice.searched_topics].count(True) == 1 and len(choice.searched_topics) == 2
        assert "±" not in choice.rule  # its standard error is written "se", never a bare ±
    # and the topics found at every searched K (or kappa), not only the chosen one's
    assert "gensim_lda on tiny: the topics at each searched K" in text and "elda on tiny: the topics at each searched kappa" in text
    assert [Path(path).name for path in written["configs"]] == ["chosen.yaml"]
    chosen = BenchmarkConfig.from_dict(yaml.safe_load(Path(written["configs"][0]).read_text()))
    assert chosen.search is None and chosen.experiment == "tiny-search"
    assert chosen.models[0].num_topics == choices["gensim_lda"].point["num_topics"]
    assert chosen.models[1].settings["kappa"] == choices["elda"].point["kappa"]

    again = run_search(config, plan, storage)
    assert (again["counts"].trials_told, again["counts"].fits_run) == (0, 0)
    assert [c.point for c in again["choices"]] == [c.point for c in outcome["choices"]]
    assert len(fit_runs(store)) == 8 and len(study_parents(store)) == 1

    # topicbench run chosen.yaml reuses the search's fits: 2 models x 2 seeds, every one found finished
    summary = run_benchmark(chosen).result()
    assert (summary["runs"], summary["skipped_finished"], summary["logged"]) == (4, 4, [])
    assert len(fit_runs(store)) == 8


@pytest.mark.usefixtures("prefect_server")
def test_a_sampler_search_asks_in_batches_up_to_its_trials(tiny_octis, tmp_path):
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    search = {"sampler": "tpe", "trials": 3, "batch": 2, "seed": 7, "objectives": ["npmi@5"],
              "spaces": {"gensim_lda": {"num_topics": {"low": 2, "high": 6}}}}
    config = BenchmarkConfig.from_dict(config_data(tiny_octis, store, search, models=[GENSIM], seeds=[0]))
    outcome = run_search(config, SearchPlan.from_config(config), default_storage(store))
    assert (outcome["counts"].trials_told, outcome["counts"].batches) == (3, 2)
    (study,) = stored_studies(store, "gensim_lda")
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
    (study,) = stored_studies(store, "gibbs_lda")
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
    (study,) = stored_studies(store, "gensim_lda")
    assert [d.name for d in study.directions] == ["MAXIMIZE", "MAXIMIZE"] and len(study.trials) == 2
    text = study_report(outcome, plan.objectives, "topicbench search x", "db")
    front = next(s for s in text.sections if s.title == "Pareto front").blocks[0].cells
    assert 1 <= len(front) <= 2 and set(front.columns) >= {"npmi@5 (mean ± 95% t)", "topic_diversity@5 (mean ± 95% t)"}


# -- what the search says to use ------------------------------------------------------------------


def hand_choice(label: str, chosen: dict, trials: list) -> search_choice.ModelChoice:
    """A model's choice built by hand: ``trials`` as (point, {objective: per-seed values})."""
    rows = [{"number": number, "state": "COMPLETE", "point": point, "per_seed": per_seed, "seeds": [0, 1, 2],
             "run_ids": [], "fit_seconds": [1.0, 1.0, 1.0]} for number, (point, per_seed) in enumerate(trials)]
    return search_choice.ModelChoice("tiny", label, chosen, chosen, "by hand", (), rows)


def hand_search() -> tuple:
    """Three models over 3 seeds, answers worked out by hand: gensim at K=5 has the best NPMI
    (0.21 ± 0.025, the 95% t-interval's half-width 4.30 · 0.01 / √3); Gibbs at K=5 (0.205) is not told
    apart from it by Welch's t (t = 0.77, p ≈ 0.5); E-LDA (0.055) is (p < 0.001); Gibbs at K=10
    loses on NPMI but beats gensim's K=5 on NMI by 0.20 (p < 0.001)."""
    objectives = (Objective("npmi@10", True), Objective("nmi", True))
    choices = [
        hand_choice("gensim_lda", {"num_topics": 5}, [
            ({"num_topics": 5}, {"npmi@10": [0.20, 0.22, 0.21], "nmi": [0.30, 0.32, 0.31]})]),
        hand_choice("gibbs_lda", {"num_topics": 5}, [
            ({"num_topics": 5}, {"npmi@10": [0.20, 0.21, 0.205], "nmi": [0.30, 0.31, 0.32]}),
            ({"num_topics": 10}, {"npmi@10": [0.10, 0.11, 0.12], "nmi": [0.50, 0.52, 0.51]})]),
        hand_choice("elda", {"kappa": 1.0}, [({"kappa": 1.0}, {"npmi@10": [0.05, 0.06, 0.055], "nmi": [0.3, 0.3, 0.3]})]),
    ]
    plan = SimpleNamespace(objectives=objectives)
    return plan, choices


def test_the_search_recommends_across_models_with_runners_up_and_disagreements(tmp_path):
    plan, choices = hand_search()
    recommendation = search_choice.recommend(plan, choices)
    assert (recommendation.label, recommendation.point) == ("gensim_lda", {"num_topics": 5})
    assert [(label, point) for label, point, _ in recommendation.runners_up] == [("gibbs_lda", {"num_topics": 5})]
    assert recommendation.disagreements == ("gibbs_lda at K=10 beats it beyond noise on nmi (0.51 vs 0.31)",)
    assert recommendation.headline().startswith("use gensim_lda at K=5 (npmi@10 mean 0.21 ± 0.025, 95% Student-t "
                                                "interval, n = 3 seeds); within noise of it: gibbs_lda at K=5")
    # with one seed nothing is told apart: said, not guessed
    single = [hand_choice(c.label, c.point, [(t["point"], {k: v[:1] for k, v in t["per_seed"].items()})
                                            for t in c.trials]) for c in choices]
    alone = search_choice.recommend(plan, single)
    assert alone.runners_up == () and len(alone.undecided) == 2 and alone.disagreements == ()

    outcome = {"experiment": "tiny-search", "choices": choices, "counts": search_module.SearchCounts(),
               "recommendations": [recommendation], "warnings": search_choice.seed_warnings((0, 1))}
    written = write_study_report(study_report(outcome, plan.objectives, "topicbench search x", "db"), {}, tmp_path)
    text = Path(written["markdown"]).read_text()
    assert text.index("## Recommendation") < text.index("## Chosen settings")
    assert "On tiny: use gensim_lda at K=5" in text and "The objectives disagree: gibbs_lda at K=10" in text
    assert "Caution: 2 seeds per point" in text and "one-standard-error rule and 'within noise' are loose" in text
    # every ± is named: the tables' columns and notes say it is a 95% Student-t interval over n seeds
    assert "npmi@10 (mean ± 95% t)" in text and "| se |" not in text
    assert "the half-width of the 95% Student-t interval of the mean over n = 3 seeds" in text
    assert search_choice.seed_warnings((0, 1, 2)) == () and search_choice.seed_warnings((0,)) == ()


def test_the_objective_plots_share_one_scale_per_objective_and_one_colour_per_model():
    from topicbench.tasks.report.study import _curves_figure

    plan, choices = hand_search()
    figure = _curves_figure(choices, plan.objectives)
    axes = figure.axes
    assert len(axes) == 6  # 2 objectives x 3 models
    for row in (axes[:3], axes[3:]):
        assert len({axis.get_ylim() for axis in row}) == 1  # one scale across the models of an objective
    colours = [{line.get_color() for line in axis.get_lines() if line.get_marker() != "None"} for axis in axes]
    assert colours[:3] == colours[3:] and all(len(c) == 1 for c in colours)
    assert len(set.union(*colours)) == 3  # one colour per model, the same in every row


def test_the_topics_at_every_searched_k_are_read_and_shown(tmp_path, monkeypatch):
    plan, choices = hand_search()
    gibbs = choices[1]
    gibbs.trials.append({**gibbs.trials[1], "number": 2, "point": {"num_topics": 10},  # a worse trial at K=10
                         "per_seed": {"npmi@10": [0.0, 0.01, 0.02], "nmi": [0.1, 0.1, 0.1]}})
    picked = search_choice.trials_per_value(gibbs, plan.objectives[0])
    assert [t["number"] for t in picked] == [0, 1]  # K=5 chosen; at K=10 the best on npmi@10
    for number, trial in enumerate(gibbs.trials):
        trial["run_ids"], trial["seeds"] = [f"run{number}-seed1", f"run{number}-seed2"], [1, 2]
    read = []

    def fit_topics(client, run_id):
        read.append(run_id)
        return None if run_id == "run1-seed1" else [f"{run_id} word{k} other" for k in range(12)]

    monkeypatch.setattr(search_choice, "fit_topics", fit_topics)
    gibbs = search_choice.with_chosen_topics(object(), gibbs, plan.objectives[0])
    assert read == ["run0-seed1", "run1-seed1", "run1-seed2"]  # one fit per K; a seed without topics.json skipped
    assert [(t.point, t.chosen, t.seed) for t in gibbs.searched_topics] == [
        ({"num_topics": 5}, True, 1), ({"num_topics": 10}, False, 2)]
    assert gibbs.topics_seed == 1 and gibbs.topics[0] == "run0-seed1 word0 other"

    outcome = {"experiment": "tiny-search", "choices": [gibbs], "counts": search_module.SearchCounts(),
               "recommendations": [], "warnings": ()}
    written = write_study_report(study_report(outcome, plan.objectives, "topicbench search x", "db"), {}, tmp_path)
    text = Path(written["markdown"]).read_text()
    assert "gibbs_lda on tiny: the topics at each searched K" in text
    assert "| 5 | K=5 (chosen) | 1 | 5 of 12 |" in text and "| 10 | K=10 | 2 | 5 of 12 |" in text
    assert "run1-seed2 word4 other" in text and "run1-seed2 word5 other" not in text


def test_a_search_of_several_corpora_writes_each_corpus_its_own_chosen_config(tiny_octis, tmp_path):
    data = config_data(tiny_octis, f"sqlite:///{tmp_path / 'mlflow.db'}", GRID)
    data["corpora"] = [{**data["corpora"][0], "name": name} for name in ("first", "second")]
    config = BenchmarkConfig.from_dict(data)
    choices = [search_choice.ModelChoice(corpus, "gensim_lda", {"num_topics": k}, None, "", (), [])
               for corpus, k in (("first", 2), ("second", 4))]
    configs = search_choice.chosen_configs(config, choices)
    assert list(configs) == ["chosen-first.yaml", "chosen-second.yaml"]
    for (name, chosen), k in zip(configs.items(), (2, 4)):
        checked = BenchmarkConfig.from_dict(chosen)
        assert [c.name for c in checked.corpora] == [name[len("chosen-"):-len(".yaml")]]
        assert (checked.models[0].name, checked.models[0].num_topics) == (f"gensim_lda[num_topics={k}]", k)
        assert checked.models[1].name == "elda" and checked.search is None  # a model without a choice: as configured
    written = write_study_report(study_report({"experiment": "x", "choices": choices, "counts": search_module.SearchCounts(),
                                               "recommendations": []}, (Objective("npmi@5", True),), "c", "db"),
                                 configs, tmp_path / "report")
    assert [Path(path).name for path in written["configs"]] == list(configs)
    assert Path(written["configs"][1]).read_text().startswith("# The search's chosen settings on second: "
                                                             "topicbench run chosen-second.yaml")
    assert "`topicbench run chosen-first.yaml`, `topicbench run chosen-second.yaml`" in Path(written["markdown"]).read_text()
    single = search_choice.chosen_configs(BenchmarkConfig.from_dict(config_data(tiny_octis, data["tracking_uri"], GRID)),
                                          choices[:1])
    assert list(single) == ["chosen.yaml"]


def test_a_report_names_the_runs_its_config_does_not_list():
    from topicbench.tasks.report.text import display_text
    from topicbench.tasks.report.summary import unlisted_models_note

    data = SimpleNamespace(config={"models": [{"model": "gensim_lda", "label": "gensim_lda[num_topics=4]"}]},
                           models=["gensim_lda[num_topics=4]", "gensim_lda[num_topics=2]", "elda[kappa=1]"])
    (note,) = unlisted_models_note(data)
    assert ("Besides the config's 1 model, this experiment holds runs of 2 more, shown after them in every table: "
            "gensim_lda[num_topics=2], elda[kappa=1]. Where the config is a search's chosen config") in display_text(note)
    assert unlisted_models_note(SimpleNamespace(config={"models": [{"model": "elda"}]}, models=["elda"])) == ()


def test_a_study_reopened_resumes_and_another_definition_is_another_study(tmp_path):
    from topicbench.core.search_space import Objective, SearchSpace
    from topicbench.tasks.search.study import ModelStudy, open_storage

    storage = open_storage(str(tmp_path / "studies.journal"))
    space = SearchSpace.from_dict("m", {"num_topics": [2, 3]})
    first = ModelStudy(storage, "s/c/m", space, [Objective("npmi@5", True)], "grid", None, 0, {"seeds": [0, 1]})
    assert [p.point for p in first.pending(None)] == [{"num_topics": 2}, {"num_topics": 3}]
    # the same study again: its two asked trials are resumed, the grid is not enqueued twice
    again = ModelStudy(storage, "s/c/m", space, [Objective("npmi@5", True)], "grid", None, 0, {"seeds": [0, 1]})
    assert sorted(p.number for p in again.pending(None)) == [0, 1] and len(again.study.trials) == 2
    # other objectives, another space or other seeds: a study of its own, never the old trials
    others = [
        ModelStudy(storage, "s/c/m", space, [Objective("npmi@5", True), Objective("stability", True)], "grid", None, 0,
                   {"seeds": [0, 1]}),
        ModelStudy(storage, "s/c/m", SearchSpace.from_dict("m", {"num_topics": [3, 4]}), [Objective("npmi@5", True)],
                   "grid", None, 0, {"seeds": [0, 1]}),
        ModelStudy(storage, "s/c/m", space, [Objective("npmi@5", True)], "grid", None, 0, {"seeds": [0, 1, 2]}),
    ]
    assert len({study.study.study_name for study in [first, *others]}) == 4
    assert [[p.number for p in study.pending(None)] for study in others] == [[0, 1]] * 3
    assert others[1].study.user_attrs["definition"]["space"]["dimensions"][0]["values"] == [3, 4]


def tell_all(study, pending) -> None:
    for trial in pending:
        study.tell(trial, [float(trial.point["num_topics"])], {"seeds": [0]})


@pytest.mark.parametrize("sampler, objectives", [("tpe", ["npmi@5"]), ("nsga2", ["npmi@5", "topic_diversity@5"])])
def test_a_sampler_never_fits_a_point_twice_and_stops_when_its_space_is_used_up(tmp_path, sampler, objectives):
    from topicbench.core.search_space import Objective, SearchSpace
    from topicbench.tasks.search.study import ModelStudy, open_storage

    storage = open_storage(str(tmp_path / "studies.journal"))
    space = SearchSpace.from_dict("m", {"num_topics": [2, 3, 4]})
    stepped = SearchSpace.from_dict("m", {"num_topics": {"low": 2, "high": 9, "step": 3}})
    assert space.size() == stepped.size() == 3
    study = ModelStudy(storage, "s/c/m", space, [Objective(o, True) for o in objectives], sampler, 20, 0)
    asked = []
    while pending := study.pending(2):  # batches of 2, as a search with batch: 2 asks them
        asked += [p.point["num_topics"] for p in pending]
        for trial in pending:
            study.tell(trial, [float(trial.point["num_topics"])] * len(objectives), {"seeds": [0]})
    assert sorted(asked) == [2, 3, 4]  # every point once, then the study stops (was: 20 trials, points repeated)
    assert sorted(t.params["num_topics"] for t in study.finished_trials()) == [2, 3, 4]
    repeats = [t for t in study.study.trials if "duplicate_of" in t.user_attrs]
    assert len(study.study.trials) == 3 + len(repeats) <= 20
    assert all(t.state.name in ("COMPLETE", "PRUNED") for t in repeats)


def test_a_study_holding_a_point_twice_counts_it_once(tmp_path):
    """A study an earlier version filled with repeated points (each told): one trial per point."""
    from optuna.distributions import CategoricalDistribution

    from topicbench.core.search_space import Objective, SearchSpace
    from topicbench.tasks.search.study import ModelStudy, open_storage

    storage = open_storage(str(tmp_path / "studies.journal"))
    study = ModelStudy(storage, "s/c/m", SearchSpace.from_dict("m", {"num_topics": [2, 3]}), [Objective("npmi@5", True)],
                       "tpe", 5, 0)
    for k in (2, 3, 2, 2):
        study.study.enqueue_trial({"num_topics": k})
        trial = study.study.ask({"num_topics": CategoricalDistribution([2, 3])})
        trial.set_user_attr("per_seed", {"npmi@5": [0.1 * k, 0.2 * k]})
        study.study.tell(trial, 0.15 * k)
    assert [t.number for t in study.finished_trials()] == [0, 1]
    assert study.pending(None) == []  # the space is used up
    from topicbench.flows.search_choice import choose
    from topicbench.flows.search_plan import SearchPlan

    plan = SearchPlan("tpe", (Objective("npmi@5", True),), 5, None, 0, "jensen_shannon", None, {})
    assert choose(plan, "c", "m", study).point in ({"num_topics": 2}, {"num_topics": 3})  # was: "listed twice"


def test_an_unusable_study_storage_is_one_line(tmp_path):
    from topicbench.tasks.search.study import open_storage

    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(InputError, match="search storage .* cannot be opened"):
        open_storage(f"sqlite:///{blocker}/studies.db")


# -- a study stays honest (issue 37) ------------------------------------------------------------------


@pytest.mark.usefixtures("prefect_server")
def test_a_sampler_asking_more_trials_than_points_stops_when_the_space_is_used_up(tiny_octis, tmp_path):
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    search = {"sampler": "tpe", "trials": 6, "batch": 3, "seed": 0, "objectives": ["npmi@5"],
              "spaces": {"gensim_lda": {"num_topics": [2, 3]}}}
    config = BenchmarkConfig.from_dict(config_data(tiny_octis, store, search, models=[GENSIM]))
    plan = SearchPlan.from_config(config)
    outcome = run_search(config, plan, default_storage(store))
    # each of the 2 points fitted once per seed; a point asked again is not a new trial
    assert (outcome["counts"].fits_run, outcome["counts"].fits_found) == (4, 0)
    (choice,) = outcome["choices"]
    assert sorted(row["point"]["num_topics"] for row in choice.trials) == [2, 3]
    again = run_search(config, plan, default_storage(store))  # was: "point ... is listed twice", every time
    assert (again["counts"].trials_told, again["counts"].fits_run) == (0, 0)
    assert again["choices"][0].point == choice.point


@pytest.mark.usefixtures("prefect_server")
def test_a_study_run_again_with_another_space_or_objective_searches_the_new_one(tiny_octis, tmp_path):
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    storage = default_storage(store)

    def searched(space: list, objective: str = "npmi@5") -> dict:
        search = {"objectives": [objective], "spaces": {"gensim_lda": {"num_topics": space}}}
        config = BenchmarkConfig.from_dict(config_data(tiny_octis, store, search, models=[GENSIM]))
        return run_search(config, SearchPlan.from_config(config), storage)

    searched([2, 4])
    widened = searched([3, 4])
    # the new point is fitted, the kept one read back from the store; the choice lies in the new grid
    assert (widened["counts"].trials_told, widened["counts"].fits_run, widened["counts"].fits_found) == (2, 2, 2)
    assert widened["choices"][0].point in ({"num_topics": 3}, {"num_topics": 4})
    assert sorted(row["point"]["num_topics"] for row in widened["choices"][0].trials) == [3, 4]
    # another objective: its values are read from the same fits (was: KeyError 'topic_diversity@5')
    other = searched([3, 4], "topic_diversity@5")
    assert (other["counts"].trials_told, other["counts"].fits_run) == (2, 0)
    assert all(len(row["per_seed"]["topic_diversity@5"]) == 2 for row in other["choices"][0].trials)


@pytest.mark.usefixtures("prefect_server")
def test_a_k_beyond_the_corpus_fails_before_any_fit(tiny_octis, tmp_path):
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    search = {"sampler": "tpe", "trials": 2, "objectives": ["npmi@5"],
              "spaces": {"gensim_lda": {"num_topics": {"low": 2, "high": 5000}}}}
    config = BenchmarkConfig.from_dict(config_data(tiny_octis, store, search, models=[GENSIM], seeds=[0]))
    with pytest.raises(InputError, match=r"search.spaces.gensim_lda.num_topics: K = 5000 topics is beyond corpus 'tiny', "
                                         r"which has 40 documents x \d+ words = \d+ document-word cells"):
        run_search(config, SearchPlan.from_config(config), default_storage(store))
    assert fit_runs(store) == []


# -- two searches at once on a new store ------------------------------------------------------------


def test_a_check_of_a_store_being_created_waits_for_its_creation(tmp_path):
    """While one process creates and migrates a new store (under the lock beside it), the check of
    another waits for it, instead of calling the half-migrated schema an older MLflow's."""
    from topicbench.tasks.store.checks import check_tracking_uri
    from topicbench.tasks.store.mlflow_schema import mlflow_schema_revisions
    from topicbench.tasks.store.tracking_error import TrackingError

    database = tmp_path / "mlflow.db"
    store = f"sqlite:///{database}"
    MlflowClient(store).search_experiments()  # the store at this MLflow's schema
    head, known = mlflow_schema_revisions()

    def set_revision(revision: str) -> None:
        with sqlite3.connect(database) as connection:
            connection.execute("UPDATE alembic_version SET version_num = ?", (revision,))

    set_revision(sorted(known - {head})[0])  # as a migration leaves it half way
    script = (
        "import sqlite3, time; from topicbench.tasks.store.locks import creation_lock\n"
        f"with creation_lock({store!r}):\n    print('held', flush=True); time.sleep(2)\n"
        f"    with sqlite3.connect({str(database)!r}) as c: c.execute('UPDATE alembic_version SET version_num = ?', ({head!r},))\n"
    )
    creator = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert creator.stdout.readline().strip() == "held"
    started = time.monotonic()
    check_tracking_uri(store)  # was: "has the schema of an older MLflow ...: upgrade it"
    assert time.monotonic() - started > 1.0
    assert creator.wait(timeout=30) == 0
    set_revision(sorted(known - {head})[0])  # and with nobody creating it, an older schema is still told at once
    with pytest.raises(TrackingError, match="has the schema of an older MLflow"):
        check_tracking_uri(store)


def test_two_searches_creating_one_study_storage_take_turns(tmp_path):
    """Optuna creates a new sqlite storage's tables and version row without a lock: two searches
    starting at once failed with "UNIQUE constraint failed: alembic_version"; the second waits."""
    from topicbench.tasks.search.study import open_storage

    database = tmp_path / "optuna-studies.db"
    script = (
        "import time; from filelock import FileLock\n"
        f"with FileLock({str(database) + '.lock'!r}):\n    print('held', flush=True); time.sleep(2)\n"
    )
    creator = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert creator.stdout.readline().strip() == "held"
    started = time.monotonic()
    storage = open_storage(f"sqlite:///{database}")
    assert time.monotonic() - started > 1.0
    assert creator.wait(timeout=30) == 0
    assert optuna.create_study(storage=storage, study_name="s").study_name == "s"


def test_a_study_storage_that_is_a_tracking_store_is_refused_before_any_work(tmp_path):
    from topicbench.tasks.search.study import check_storage

    database, other = tmp_path / "mlflow.db", tmp_path / "other" / "mlflow.db"
    other.parent.mkdir()
    for path in (database, other):
        MlflowClient(f"sqlite:///{path}").search_experiments()
    (tmp_path / "link.journal").symlink_to(database)
    (tmp_path / "folder.journal").mkdir()
    before = database.read_bytes()
    for url, expected in [
        (f"sqlite:///{database}", "is the tracking database"),  # was: Optuna's tables added to it, then a RuntimeError
        (str(database), "is the tracking database"),
        (str(tmp_path / "link.journal"), "is the tracking database"),
        (f"sqlite:///{other}", "is an MLflow tracking database"),
        (str(tmp_path / "studies.db"), "is neither an Optuna RDB URL"),
        (str(tmp_path / "folder.journal"), "is a folder, not an Optuna journal"),
    ]:
        with pytest.raises(InputError, match=expected):
            check_storage(url, f"sqlite:///{database}")
    assert database.read_bytes() == before
    check_storage(f"sqlite:///{tmp_path / 'optuna-studies.db'}", f"sqlite:///{database}")  # the default is fine
    check_storage(str(tmp_path / "studies.journal"), f"sqlite:///{database}")


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium: scripts/setup.sh --browser installs it (Debian package)")
@pytest.mark.usefixtures("prefect_server")
def test_the_search_report_reads_whole_in_a_browser(tiny_octis, tmp_path):
    """search.html at 1400 px: no page error, every plot and axis title whole, every ranked cell
    showing its rank in a scale a deuteranope reads, no cell overflowing."""
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = BenchmarkConfig.from_dict(config_data(tiny_octis, store, GRID))
    plan = SearchPlan.from_config(config)
    outcome = run_search(config, plan, default_storage(store))
    written = write_study_report(study_report(outcome, plan.objectives, "topicbench search x", "db"),
                                 outcome["chosen_configs"], tmp_path / "report")
    with open_page(Path(written["html"])) as (page, errors):
        titles = clipped_titles(page)
        _, rank_issues = rank_problems(page)
        plots = page.evaluate("() => document.querySelectorAll('.js-plotly-plot').length")
        overflowing = page.evaluate("() => Array.from(document.querySelectorAll('td, th'))"
                                    ".filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent)")
    assert plots >= 1 and errors == []
    assert titles == [] and rank_issues == [] and overflowing == []
