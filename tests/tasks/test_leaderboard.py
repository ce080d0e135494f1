"""The leaderboard on bundles written here (format 2: manifest.json and tables/*.parquet) with
answers known by construction: intervals and ranks over seeds, a lower-is-better metric, fits of
another fingerprint or preprocessing never ranked together, and autorank's Friedman/Nemenyi as a
direct call gives it."""

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
from topicbench.tasks.leaderboard.ranking import (
    LeaderboardError,
    bootstrap_intervals,
    build_leaderboard,
    load_bundle,
)
from topicbench.tasks.leaderboard.render import render_markdown


def write_bundle(folder, scores: dict, *, experiment="bench", fingerprint="f" * 64, preprocessing=None,
                 statuses=None, judge=None, fit_seconds=None, topics=None):
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
                         "num_topics_used": (topics or {}).get(model, 20.0), "num_topics": "20", "settings": json.dumps({"passes": 5}),
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


def test_a_mean_s_interval_and_a_rank_s_interval_over_seeds():
    """Resampling three seeds gives means from their smallest to their largest, each with a chance
    of 1/27 > 2.5 %: the interval is exactly [min, max]. Apart models keep their ranks; overlapping
    ones share an interval."""
    samples = {"apart": [10.0, 11.0, 12.0], "a": [1.0, 2.0, 3.0], "b": [1.5, 2.0, 2.5], "one_seed": [0.5]}
    scores, ranks = bootstrap_intervals(samples, higher=True)
    assert (scores["a"].mean, scores["a"].low, scores["a"].high, scores["a"].n) == (2.0, 1.0, 3.0, 3)
    assert (scores["apart"].low, scores["apart"].high) == (10.0, 12.0)
    assert scores["one_seed"].mean == 0.5 and math.isnan(scores["one_seed"].low)
    assert (ranks["apart"].mean, ranks["apart"].low, ranks["apart"].high) == (1, 1, 1)
    assert (ranks["a"].low, ranks["a"].high) == (2, 3) and (ranks["b"].low, ranks["b"].high) == (2, 3)
    assert (ranks["one_seed"].mean, ranks["one_seed"].low, ranks["one_seed"].high) == (4, 4, 4)
    _, lower_better = bootstrap_intervals(samples, higher=False)
    assert lower_better["one_seed"].mean == 1 and lower_better["apart"].mean == 4


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
    """Three models on five datasets, whose mean scores rank them in a known order on each."""
    means = {"d1": (0.3, 0.2, 0.1), "d2": (0.3, 0.1, 0.2), "d3": (0.3, 0.2, 0.1), "d4": (0.2, 0.3, 0.1),
             "d5": (0.3, 0.2, 0.1)}
    scores = {(corpus, model): {"npmi@10": [mean - 0.01, mean + 0.01]}
              for corpus, row in means.items() for model, mean in zip(("a", "b", "c"), row)}
    return load_bundle(write_bundle(tmp_path / "b", scores)), means


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # autorank's unused effect sizes, in the direct call
def test_the_cross_dataset_ranking_is_autorank_s_friedman_nemenyi(tmp_path):
    from autorank import autorank

    bundle, means = _five_datasets(tmp_path)
    cross = build_leaderboard([bundle]).cross
    assert cross.reason is None and cross.blocks == tuple((corpus, "npmi@10") for corpus in means)
    data = pd.DataFrame(np.array(list(means.values())), columns=["a", "b", "c"])
    with contextlib.redirect_stdout(io.StringIO()):
        direct = autorank(data, alpha=0.05, order="descending", force_mode="nonparametric")
    assert (cross.result.omnibus, cross.result.posthoc) == ("friedman", "nemenyi")
    assert cross.result.cd == pytest.approx(direct.cd) and cross.result.pvalue == pytest.approx(direct.pvalue)
    pd.testing.assert_series_equal(cross.result.rankdf.meanrank, direct.rankdf.meanrank, check_exact=False)
    # by hand: a ranks 1, 1, 1, 2, 1 on the five datasets; b 2, 3, 2, 1, 2; c 3, 2, 3, 3, 3
    assert cross.mean_ranks == pytest.approx({"a": 1.2, "b": 2.0, "c": 2.8})
    assert cross.block_ranks["a"] == (1, 1, 1, 2, 1) and list(cross.mean_ranks) == ["a", "b", "c"]
    assert dict(direct.rankdf.meanrank) == pytest.approx(cross.mean_ranks)


def test_too_few_blocks_for_a_test_says_so_and_still_ranks(tmp_path):
    scores = {("toy", model): {"npmi@10": [v, v + 0.01]} for model, v in (("a", 0.3), ("b", 0.1))}
    cross = build_leaderboard([load_bundle(write_bundle(tmp_path / "b", scores))]).cross
    assert cross.result is None and "at least 5" in cross.reason and cross.mean_ranks == {"a": 1.0, "b": 2.0}


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
    assert "d (no scores on d2, no scores on d3, no scores on d4, no scores on d5)" in markdown  # left out: why
    html = (out / "leaderboard.html").read_text()
    assert "<svg" in html and "src=\"http" not in html and (out / "critical_difference.png").stat().st_size > 0
    assert main(["leaderboard", bundle.folder, str(judged), "--out", str(tmp_path / "again")]) == 0
    assert all((out / name).read_bytes() == (tmp_path / "again" / name).read_bytes()  # the same page, byte for byte
               for name in ("leaderboard.md", "leaderboard.html", "critical_difference.png"))
    assert main(["leaderboard", bundle.folder, "--out", str(out), "--metric", "fit_seconds"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("topicbench: error: 'fit_seconds' is not")


def test_every_attribute_and_header_of_the_page_shows_controls_as_code_points(tmp_path):
    """Issue 46: a model or corpus named with bidirectional or other control characters reaches
    no ``title=""`` and no ``<th>`` of leaderboard.html raw (U+202E would reverse what follows)."""
    import re
    import unicodedata

    from topicbench.tasks.leaderboard.render import write_leaderboard

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
