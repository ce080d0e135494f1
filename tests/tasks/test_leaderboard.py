"""The leaderboard on bundles written here (format 2: manifest.json and tables/*.parquet) with
answers known by construction: Student-t intervals over seeds and the rank intervals they allow,
deterministic models, ties, a lower-is-better metric, fits of another fingerprint or preprocessing
never ranked together, and one ranking per metric across datasets (the datasets its blocks) that
scipy's and autorank's Friedman/Nemenyi give, tested only from 5 datasets."""

from __future__ import annotations

import contextlib
import io
import json
import math

import numpy as np
import pandas as pd
import pytest

from topicbench.core.validation import InputError
from topicbench.flows.cli.main import main
from topicbench.tasks.results.bundle_tables import write_tables
from topicbench.core.metrics.stats import DETERMINISTIC
from topicbench.tasks.leaderboard.ranking import (
    LeaderboardError,
    build_leaderboard,
    load_bundle,
    seed_intervals,
)
from topicbench.tasks.leaderboard.render import render_markdown


def write_bundle(folder, scores: dict, *, experiment="bench", fingerprint="f" * 64, preprocessing=None,
                 statuses=None, judge=None, fit_seconds=None, topics=None, settings=None):
    """A format-2 bundle in ``folder``: ``scores`` maps (corpus, model) to {score key: [value a seed]};
    each fit takes 10 s times its seed + 1, or ``fit_seconds[model]``, and uses 20 topics, or
    ``topics[model]`` of the 20 asked for."""
    preprocessing = json.dumps(preprocessing or {"lowercase": True, "stem": False})
    runs, rows = [], []
    for (corpus, model), by_key in scores.items():
        seeds = len(next(iter(by_key.values())))
        for seed in range(seeds):
            run_id = f"{experiment}-{corpus}-{model}-{seed}"
            runs.append({"run_id": run_id, "run_key": run_id, "parent_id": "parent", "corpus": corpus, "model": model,
                         "model_class": model.title(), "seed": seed,
                         "status": (statuses or {}).get((corpus, model, seed), "FINISHED"),
                         "num_topics_used": (topics or {}).get(model, 20.0), "num_topics": "20", "settings": json.dumps(settings or {"passes": 5}),
                         "preprocessing": preprocessing, "corpus_fingerprint": fingerprint,
                         "corpus_source": f"/data/{corpus}", "peak_memory_mb": 200.0,
                         "fit_seconds": (fit_seconds or {}).get(model, 10.0 * (seed + 1)),
                         "error": None, "changed_settings": None, "skipped_metrics": None, "training_loss_kind": None})
            rows += [{"run_id": run_id, "metric": key.replace("@", "_top"), "score": key, "value": float(values[seed])}
                     for key, values in by_key.items()]
    folder.mkdir(parents=True)
    (folder / "runs.jsonl").write_text("", encoding="utf-8")  # the store's records: import reads them, not this
    tables = write_tables(folder, {"runs": pd.DataFrame(runs), "scores": pd.DataFrame(rows)})
    corpora = sorted({corpus for corpus, _ in scores})
    manifest = {"bundle_format": 2, "experiment": experiment, "created": "2026-12-06T09:00:00+0000",
                "topicbench_version": "0.1.0", "commit": "0123456789ab",
                "datasets": {c: {"fingerprint": fingerprint, "source": f"/data/{c}"} for c in corpora},
                "preprocessing": {c: json.loads(preprocessing) for c in corpora}, "config": {}, "tables": tables}
    if judge:
        manifest["judge"] = judge
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def test_a_mean_s_interval_is_student_t_and_a_rank_s_interval_comes_from_the_intervals():
    """Three seeds give mean ± t(0.975, 2) · sd/√3 (4.303, where a bootstrap over 3 seeds gives
    their range); two seeds give no interval. A rank runs from 1 + the models wholly better to the
    models not wholly worse: "apart" is ahead of "a" and "b", whose intervals overlap (each 2 to 4);
    "two_seeds" has no interval, so it is told apart from nobody (1 to 4), and nobody from it: "apart"
    may be second, behind it."""
    samples = {"apart": [10.0, 11.0, 12.0], "a": [1.0, 2.0, 3.0], "b": [1.5, 2.0, 2.5], "two_seeds": [0.5, 0.7]}
    scores, ranks = seed_intervals(samples, higher=True)
    half = 4.302652729911275 * 1.0 / math.sqrt(3)  # t(0.975, df 2) · sd / √n, sd of 1, 2, 3 = 1
    assert (scores["a"].mean, scores["a"].n) == (2.0, 3)
    assert scores["a"].low == pytest.approx(2.0 - half) and scores["a"].high == pytest.approx(2.0 + half)
    assert scores["a"].method == "95% Student-t interval, n = 3 seeds (df 2)"
    assert scores["two_seeds"].mean == pytest.approx(0.6) and not scores["two_seeds"].has_interval
    assert "too few seeds" in scores["two_seeds"].method
    got = {model: (rank.rank, rank.best, rank.worst, rank.tied) for model, rank in ranks.items()}
    assert got == {"apart": (1, 1, 2, False), "a": (2, 2, 4, True), "b": (2, 2, 4, True), "two_seeds": (4, 1, 4, False)}
    _, lower_better = seed_intervals(samples, higher=False)
    assert lower_better["two_seeds"].rank == 1 and lower_better["apart"].rank == 4


def test_rank_bounds_by_hand_on_well_separated_models():
    samples = {"top": [10.0, 10.1, 10.2], "mid_a": [5.0, 5.5, 6.0], "mid_b": [5.2, 5.4, 5.6], "low": [0.0, 0.1, 0.2]}
    _, ranks = seed_intervals(samples, higher=True)
    got = {model: (rank.rank, rank.best, rank.worst) for model, rank in ranks.items()}
    assert got == {"top": (1, 1, 1), "mid_a": (2, 2, 3), "mid_b": (3, 2, 3), "low": (4, 4, 4)}


def test_a_deterministic_model_is_said_so_and_never_has_a_zero_width_interval(tmp_path):
    """Two deterministic models are never told apart (no seed variance to compare on); a
    deterministic value outside a random model's interval is (the one-sample t-test)."""
    samples = {"exact_a": [0.5, 0.5, 0.5], "exact_b": [0.4, 0.4, 0.4], "noisy": [0.1, 0.12, 0.14]}
    scores, ranks = seed_intervals(samples, higher=True)
    assert scores["exact_a"].deterministic and not scores["exact_a"].has_interval
    assert scores["exact_a"].method == DETERMINISTIC
    got = {model: (rank.rank, rank.best, rank.worst) for model, rank in ranks.items()}
    assert got == {"exact_a": (1, 1, 2), "exact_b": (2, 1, 2), "noisy": (3, 3, 3)}
    folder = write_bundle(tmp_path / "b", {("toy", m): {"npmi@10": v} for m, v in samples.items()})
    markdown = render_markdown(build_leaderboard([load_bundle(folder)]), with_diagram=False)
    assert f"| 1 (1–2) | exact_a | 0.500 {DETERMINISTIC} |" in markdown
    assert "[0.500, 0.500]" not in markdown and "[0.400, 0.400]" not in markdown


def test_ties_share_a_rank_marked_and_a_model_without_the_first_metric_is_not_given_its_rank(tmp_path):
    """Issue 48: "3 (2–3)" printed below rank 4 when a model was ranked on TD only. The rank column
    is the dataset's first headline metric; a model without it shows "—" and sits below."""
    scores = {("toy", "a"): {"npmi@10": [0.30, 0.31, 0.32], "topic_diversity@10": [0.5, 0.6, 0.7]},
              ("toy", "b"): {"npmi@10": [0.20, 0.21, 0.22], "topic_diversity@10": [0.5, 0.6, 0.7]},
              ("toy", "c"): {"npmi@10": [0.20, 0.21, 0.22], "topic_diversity@10": [0.8, 0.9, 1.0]}}
    bundle = write_bundle(tmp_path / "b", scores)
    td_only = write_bundle(tmp_path / "td", {("toy", "d"): {"topic_diversity@10": [0.9, 0.95, 1.0]}}, experiment="td")
    leaderboard = build_leaderboard([load_bundle(bundle), load_bundle(td_only)])
    board = leaderboard.datasets[0]
    assert [entry.model for entry in board.entries] == ["a", "c", "b", "d"]  # a tie: by the next metric
    section = render_markdown(leaderboard, with_diagram=False).split("## Dataset: toy")[1]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    first_cells = [row.split(" | ")[0].removeprefix("| ") for row in rows[1:5]]
    assert first_cells == ["1", "2= (2–3)", "2= (2–3)", "—"]
    assert board.entries[3].ranks["topic_diversity@10"].rank == 1  # its TD rank is in its TD cell's hover


def test_each_dataset_ranks_in_each_metric_s_direction(tmp_path):
    scores = {("toy", "good"): {"npmi@10": [0.30, 0.31, 0.32], "perplexity": [900, 910, 920]},
              ("toy", "bad"): {"npmi@10": [0.01, 0.02, 0.03], "perplexity": [500, 510, 520]}}
    bundle = load_bundle(write_bundle(tmp_path / "b", scores))
    board = build_leaderboard([bundle]).datasets[0]
    assert [entry.model for entry in board.entries] == ["good", "bad"]
    assert board.entries[0].scores["npmi@10"].mean == pytest.approx(0.31)
    assert board.entries[0].seeds == (0, 1, 2) and board.entries[0].fit_seconds == 20.0
    by_perplexity = build_leaderboard([bundle], ["perplexity"])
    assert by_perplexity.headline == (("perplexity", False),)
    assert [entry.model for entry in by_perplexity.datasets[0].entries] == ["bad", "good"]


def test_only_finished_fits_rank(tmp_path):
    scores = {("toy", "m"): {"npmi@10": [0.1, 0.2, 0.9]}, ("toy", "n"): {"npmi@10": [0.3, 0.3, 0.3]}}
    folder = write_bundle(tmp_path / "b", scores, statuses={("toy", "m", 2): "FAILED"})
    entry = next(e for e in build_leaderboard([load_bundle(folder)]).datasets[0].entries if e.model == "m")
    assert entry.seeds == (0, 1) and entry.scores["npmi@10"].mean == pytest.approx(0.15)


@pytest.mark.parametrize("differs", ["fingerprint", "preprocessing"])
def test_fits_of_other_data_or_preprocessing_are_never_ranked_together(tmp_path, differs):
    first = write_bundle(tmp_path / "first", {("toy", "m"): {"npmi@10": [0.1, 0.2]}}, experiment="first")
    other = {"fingerprint": "e" * 64} if differs == "fingerprint" else {"preprocessing": {"lowercase": False}}
    second = write_bundle(tmp_path / "second", {("toy", "n"): {"npmi@10": [0.5, 0.6]}}, experiment="second", **other)
    leaderboard = build_leaderboard([load_bundle(first), load_bundle(second)])
    assert [entry.model for entry in leaderboard.datasets[0].entries] == ["m"]
    assert leaderboard.datasets[0].fingerprint == "f" * 64
    (line,) = leaderboard.set_aside
    assert "2 fits of toy in bundle second are not ranked" in line and "never ranked together" in line
    assert ("eeeeeeeeeeee" in line) == (differs == "fingerprint")


def test_a_bundle_named_twice_or_a_metric_no_fit_has_is_refused(tmp_path):
    bundle = load_bundle(write_bundle(tmp_path / "b", {("toy", "m"): {"npmi@10": [0.1, 0.2]}}))
    with pytest.raises(LeaderboardError, match="in more than one of the bundles given .*bench.*: name each bundle once"):
        build_leaderboard([bundle, bundle])
    with pytest.raises(LeaderboardError, match="--metric cv@10: no ranked fit of these bundles has it; .* npmi@10"):
        build_leaderboard([bundle], ["cv@10"])


def test_one_model_name_in_two_bundles_is_told_apart(tmp_path):
    first = write_bundle(tmp_path / "first", {("toy", "lda"): {"npmi@10": [0.1, 0.2]}}, experiment="first")
    second = write_bundle(tmp_path / "second", {("toy", "lda"): {"npmi@10": [0.3, 0.4]}}, experiment="second")
    board = build_leaderboard([load_bundle(first), load_bundle(second)]).datasets[0]
    assert [entry.model for entry in board.entries] == ["lda (second)", "lda (first)"]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # autorank's unused effect sizes
def test_a_leaderboard_built_in_pieces_ranks_each_model_across_its_datasets(tmp_path):
    """A bundle per dataset (how results/leaderboard is built): a model of one name and settings in
    every piece is one entry, ranked with the datasets as blocks as if one bundle held them all;
    fitted with other settings in one piece, it is told apart there."""
    whole, means = _five_datasets(tmp_path)
    pieces = []
    for corpus, row in means.items():
        scores = {(corpus, model): {"npmi@10": [mean - 0.01, mean, mean + 0.01], "cv@10": [1 - mean] * 3}
                  for model, mean in zip(("a", "b", "c"), row)}
        pieces.append(load_bundle(write_bundle(tmp_path / corpus, scores, experiment=f"{corpus}-models")))
    together, apart = _ranking(build_leaderboard(pieces), "npmi@10"), _ranking(build_leaderboard([whole]), "npmi@10")
    assert together.models == apart.models == ("a", "b", "c") and together.datasets == apart.datasets
    assert together.reason is None and together.result.pvalue == pytest.approx(apart.result.pvalue)
    assert together.mean_ranks == pytest.approx(apart.mean_ranks)
    other = write_bundle(tmp_path / "d6", {("d6", "a"): {"npmi@10": [0.1, 0.2, 0.3]}}, experiment="d6-models",
                         settings={"passes": 50})
    names = {entry.model for board in build_leaderboard([*pieces, load_bundle(other)]).datasets for entry in board.entries}
    assert {"a (d1-models)", "a (d6-models)", "b", "c"} <= names and "a" not in names


def test_the_page_cautions_on_k_and_on_an_uncalibrated_judge(tmp_path):
    scores = {("toy", model): {"npmi@10": [0.1, 0.2], "llm_rating": [2.0, 2.5]} for model in ("few", "many")}
    folder = write_bundle(tmp_path / "b", scores, topics={"few": 8.0}, judge={"model": "smollm2", "calibration": None})
    leaderboard = build_leaderboard([load_bundle(folder)])
    assert leaderboard.headline == (("npmi@10", True), ("llm_rating", True))
    entries = {entry.model: entry for entry in leaderboard.datasets[0].entries}
    assert (entries["few"].num_topics, entries["few"].topics, entries["many"].num_topics) == ("8 used (of 20)", 8.0, "20")
    markdown = render_markdown(leaderboard, with_diagram=False)
    assert "Caution: K differs by more than 2× among these models (8 to 20 topics)" in markdown
    assert "judged by smollm2, not calibrated against people" in markdown


def test_the_page_states_a_document_level_calibration_beside_a_missing_word_level_one(tmp_path):
    scores = {("toy", "lda"): {"npmi@10": [0.1, 0.2], "llm_fit": [0.2, 0.3]}}
    documents = {"topics": 24, "judge": {"fit": {"tau": 0.31, "se": 0.13}, "rank": {"tau": -0.05}}}
    folder = write_bundle(tmp_path / "b", scores, judge={"model": "qwen", "calibration": None,
                                                         "document_calibration": documents})
    markdown = render_markdown(build_leaderboard([load_bundle(folder)]), with_diagram=False)
    assert ("judged by qwen; word lists not calibrated against people; document-level calibration on ProxAnn's "
            "study (24 topics), topic-ranking agreement with people: llm_fit: τ = +0.31 (SE 0.13).") in markdown
    assert "not calibrated against people: read its scores" not in markdown


def _five_datasets(tmp_path):
    """Three models on five datasets, whose mean scores rank them in a known order on each: NPMI
    and C_V in opposite orders, so a ranking that mixed them would not be either's."""
    means = {"d1": (0.3, 0.2, 0.1), "d2": (0.3, 0.1, 0.2), "d3": (0.3, 0.2, 0.1), "d4": (0.2, 0.3, 0.1),
             "d5": (0.3, 0.2, 0.1)}
    scores = {(corpus, model): {"npmi@10": [mean - 0.01, mean, mean + 0.01], "cv@10": [1 - mean, 1 - mean, 1 - mean]}
              for corpus, row in means.items() for model, mean in zip(("a", "b", "c"), row)}
    return load_bundle(write_bundle(tmp_path / "b", scores)), means


def _ranking(leaderboard, metric, group="main"):
    (found,) = [cross for cross in leaderboard.crosses if cross.metric == metric and cross.group == group]
    return found


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # autorank's unused effect sizes, in the direct call
def test_the_datasets_are_the_blocks_and_the_test_is_scipy_s_and_autorank_s_friedman(tmp_path):
    from autorank import autorank
    from scipy import stats

    bundle, means = _five_datasets(tmp_path)
    leaderboard = build_leaderboard([bundle])
    assert [(c.metric, c.group) for c in leaderboard.crosses] == [("npmi@10", "main"), ("cv@10", "main")]
    cross = _ranking(leaderboard, "npmi@10")
    assert cross.reason is None and cross.datasets == tuple(means)  # 5 blocks, not 5 × 2 (dataset, metric) pairs
    data = pd.DataFrame(np.array(list(means.values())), columns=["a", "b", "c"])
    assert cross.result.pvalue == pytest.approx(stats.friedmanchisquare(data.a, data.b, data.c).pvalue)
    with contextlib.redirect_stdout(io.StringIO()):
        direct = autorank(data, alpha=0.05, order="descending", force_mode="nonparametric")
    assert (cross.result.omnibus, cross.result.posthoc) == ("friedman", "nemenyi")
    assert cross.result.cd == pytest.approx(direct.cd) and cross.result.pvalue == pytest.approx(direct.pvalue)
    # by hand: a ranks 1, 1, 1, 2, 1 on the five datasets; b 2, 3, 2, 1, 2; c 3, 2, 3, 3, 3
    assert cross.mean_ranks == pytest.approx({"a": 1.2, "b": 2.0, "c": 2.8})
    assert cross.block_ranks["a"] == (1, 1, 1, 2, 1) and cross.models == ("a", "b", "c")
    assert dict(direct.rankdf.meanrank) == pytest.approx(cross.mean_ranks)
    # C_V is ranked on its own: its order is NPMI's reversed, never averaged with it
    assert _ranking(leaderboard, "cv@10").models == ("c", "b", "a")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nemenyi_separates_the_pairs_further_apart_than_its_critical_difference(tmp_path):
    """Four models in one order on six datasets: mean ranks 1, 2, 3, 4; CD = q(0.05, 4) ·
    √(4·5 / (6·6)) = 2.569 · 0.745 = 1.915, so a–c, a–d and b–d are told apart, and no neighbours."""
    order = {"a": 0.4, "b": 0.3, "c": 0.2, "d": 0.1}
    scores = {(f"d{i}", model): {"npmi@10": [v + i / 100 - 0.001, v + i / 100, v + i / 100 + 0.001]}
              for i in range(6) for model, v in order.items()}
    cross = _ranking(build_leaderboard([load_bundle(write_bundle(tmp_path / "b", scores))]), "npmi@10")
    assert cross.result.cd == pytest.approx(2.569 * math.sqrt(20 / 36), abs=1e-3)
    assert set(cross.separated) == {("a", "c"), ("a", "d"), ("b", "d")}
    assert cross.separated_by.startswith("Nemenyi's critical difference 1.91")


def test_under_five_datasets_there_is_no_test_and_the_page_says_so(tmp_path):
    """Four datasets: no Friedman test; the mean ranks with their intervals; the pairs the
    per-dataset intervals separate on every dataset ("far" from the others), none where none."""
    values = {"top": 0.5, "near_a": 0.2, "near_b": 0.21}
    scores = {(f"d{i}", model): {"npmi@10": [v - 0.02, v, v + 0.02]} for i in range(4) for model, v in values.items()}
    leaderboard = build_leaderboard([load_bundle(write_bundle(tmp_path / "b", scores))])
    cross = _ranking(leaderboard, "npmi@10")
    assert cross.result is None and cross.reason == "too few datasets to test (4 of 5)"
    assert set(cross.separated) == {("top", "near_b"), ("top", "near_a")}
    assert (cross.rank_low["near_b"], cross.rank_high["near_b"]) == (2.0, 3.0)
    markdown = render_markdown(leaderboard, with_diagram=True)
    assert "No test: too few datasets to test (4 of 5)." in markdown and "![" not in markdown
    assert "Pairs told apart by the per-dataset intervals, on every dataset: top ahead of near_b, near_a." in markdown
    assert "| 1 | top | 1.00 (1.00–1.00) | 20 | 1 | 1 | 1 | 1 |" in markdown
    alike = {(f"d{i}", model): {"npmi@10": [0.2, 0.3, 0.4]} for i in range(2) for model in ("x", "y")}
    lone = _ranking(build_leaderboard([load_bundle(write_bundle(tmp_path / "c", alike))]), "npmi@10")
    assert lone.separated == () and "on every dataset: none." in render_markdown(
        build_leaderboard([load_bundle(write_bundle(tmp_path / "d", alike))]), with_diagram=False)


def test_a_model_at_another_k_is_ranked_apart_and_a_partial_one_is_named(tmp_path):
    """E-LDA-like "many" (1000 topics against 20) is never in the main ranking or its diagram;
    "partial" lacks d4 and is named with what it lacks; a dataset few models have is no block."""
    scores = {(f"d{i}", model): {"npmi@10": [v - 0.01, v, v + 0.01]}
              for i in range(5) for model, v in (("a", 0.3), ("b", 0.2), ("c", 0.1), ("many", 0.5), ("partial", 0.4))
              if not (model == "partial" and i == 4)}
    scores[("lonely", "a")] = {"npmi@10": [0.1, 0.2, 0.3]}
    folder = write_bundle(tmp_path / "b", scores, topics={"many": 1000.0})
    leaderboard = build_leaderboard([load_bundle(folder)])
    main_ranking, other = _ranking(leaderboard, "npmi@10"), _ranking(leaderboard, "npmi@10", "other K")
    assert main_ranking.models == ("a", "b", "c") and other.models == ("many",)
    assert main_ranking.datasets == ("d0", "d1", "d2", "d3", "d4") and main_ranking.result is not None
    assert main_ranking.left_out == ("partial (no npmi@10 on d4)",)
    assert main_ranking.not_blocks == ("lonely (only 1 of 4 models have npmi@10 there)",)
    markdown = render_markdown(leaderboard, with_diagram=True)
    assert "### npmi@10 ↑: models at another K" in markdown and "(1000 to 1000 topics)" in markdown
    assert markdown.count("![") == 1 and "models at K 20 to 20; models at another K are not in it" in markdown


def test_a_bundle_without_tables_is_refused_with_the_fix(tmp_path):
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "manifest.json").write_text(json.dumps({"bundle_format": 1, "experiment": "old"}))
    (tmp_path / "old" / "runs.jsonl").write_text("")
    with pytest.raises(LeaderboardError, match="bundle format 1 has no tables; export it again"):
        load_bundle(tmp_path / "old")
    with pytest.raises(InputError, match="not a readable result bundle"):
        load_bundle(tmp_path / "absent")


def test_the_command_writes_the_page_and_refuses_a_metric_without_a_direction(tmp_path, capsys):
    bundle, _ = _five_datasets(tmp_path)
    judged = write_bundle(tmp_path / "judged", {("d1", "d"): {"npmi@10": [0.0, 0.1]}}, experiment="judged",
                          judge={"model": "smollm2", "calibration": {"topics": 40, "verdict": "weak", "rows": [
                              {"measure": "llm_rating", "rating": {"rho": 0.31, "low": 0.1, "high": 0.5}}]}})
    out = tmp_path / "page"
    assert main(["leaderboard", bundle.folder, str(judged), "--out", str(out)]) == 0
    markdown = (out / "leaderboard.md").read_text()
    assert "npmi@10 (higher is better)" in markdown and "Nemenyi's critical difference" in markdown
    assert "Fingerprint (SHA-256) " + "f" * 64 in markdown and "ρ = 0.31" in markdown
    assert "d (no npmi@10 on d2, d3, d4, d5)" in markdown  # left out: why
    html = (out / "leaderboard.html").read_text()
    diagram = out / "critical_difference_npmi_10.png"
    assert "<svg" in html and "src=\"http" not in html and diagram.stat().st_size > 0
    assert main(["leaderboard", bundle.folder, str(judged), "--out", str(tmp_path / "again")]) == 0
    assert all((out / name).read_bytes() == (tmp_path / "again" / name).read_bytes()  # the same page, byte for byte
               for name in ("leaderboard.md", "leaderboard.html", "leaderboard.json", diagram.name))
    assert main(["leaderboard", bundle.folder, "--out", str(out), "--metric", "fit_seconds"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("topicbench: error: 'fit_seconds' is not")


def test_every_attribute_and_header_of_the_page_shows_controls_as_code_points(tmp_path):
    """Issue 46: a model or corpus named with bidirectional or other control characters reaches
    no ``title=""`` and no ``<th>`` of leaderboard.html raw (U+202E would reverse what follows)."""
    import re
    import unicodedata

    from topicbench.tasks.leaderboard.write import write_leaderboard

    model, corpus = "evil\u202egnp.exe\x07\u200b", "news\u2066\x1b[31m"
    folder = write_bundle(tmp_path / "b", {(corpus, model): {"npmi@10": [0.1, 0.2, 0.15]},
                                           (corpus, "lda"): {"npmi@10": [0.05, 0.07, 0.06]}})
    write_leaderboard(build_leaderboard([load_bundle(folder)]), tmp_path / "page")
    page = (tmp_path / "page" / "leaderboard.html").read_text(encoding="utf-8")
    pieces = re.findall(r'title="([^"]*)"', page) + re.findall(r"<th[^>]*>(.*?)</th>", page, flags=re.S)
    assert pieces and any("U+202E" in piece for piece in pieces), "the hostile name is on the page"
    for piece in pieces:
        raw = [f"U+{ord(c):04X}" for c in piece if unicodedata.category(c) in ("Cc", "Cf") and c not in "\n"]
        assert not raw, f"{raw} raw in {piece!r}"
    assert "\u202e" not in page


def test_visible_controls_names_every_control_and_format_character():
    from topicbench.tasks.report.text import html_attribute, visible_controls

    assert visible_controls("a\u202eb\x07c\u200bd") == "a⟨U+202E⟩b⟨U+0007⟩c⟨U+200B⟩d"
    assert html_attribute('say "hi" <b>\u2066') == "say &quot;hi&quot; &lt;b&gt;⟨U+2066⟩"
    assert visible_controls("topic ünïcode 日本") == "topic ünïcode 日本"
