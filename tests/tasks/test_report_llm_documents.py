"""The report's LLM section on document-level judging (``llm_fit``, ``llm_rank``): their means
with the topics they rest on, shares never bold, and the judge's document-level calibration
(ProxAnn) beside people's and a released LLM's, read from a temporary sqlite store where
``calibrate_proxann`` tracked it against a fake endpoint; without one, the commands that make it."""

from __future__ import annotations

import json
import math
import re

import pandas as pd
import pytest
from llm_endpoints import Reply, completion, fake_endpoint
from mlflow.tracking import MlflowClient

from topicbench.core.metrics.llm_judging import JudgeSettings
from topicbench.core.proxann_data import ProxAnnRelease, StudyInputs
from topicbench.tasks.results.calibration_runs import latest_proxann_calibration, people_tau
from topicbench.tasks.store.claims import FIT_ROLE, PARENT_ROLE, ROLE_TAG

EXPERIMENT, JUDGE = "documents-test", "toy-model"
THETA = (0.9, 0.6, 0.3, 0.1)
#: Per study topic, the fit (1-5) of its four evaluation documents, θ falling: from following θ
#: (τ = 1) to reversing it (τ = -1), so that topics differ in how far answers follow θ.
PATTERNS = {"bills/ctm/1": (5, 4, 3, 2), "bills/ctm/2": (5, 3, 4, 2), "bills/ctm/3": (4, 5, 2, 3),
            "bills/mallet/4": (3, 4, 5, 2), "bills/mallet/5": (2, 4, 3, 5), "bills/mallet/6": (2, 3, 4, 5)}
DOCUMENT = re.compile(r"document (\d) of (\S+)\.")


def _release() -> ProxAnnRelease:
    """Six study topics; three people and a released LLM answer each topic's pattern (each
    person once off by one), so that every τ is defined."""
    topics = pd.DataFrame({"topic": list(PATTERNS), "model": [t.split("/")[1] for t in PATTERNS],
                           "words": [("farm", "crop")] * len(PATTERNS)})
    documents, people, released = [], [], []
    for index, (topic, pattern) in enumerate(PATTERNS.items()):
        documents.append({"topic": topic, "role": "exemplar", "position": 0, "text": "an exemplar.", "theta": 0.95,
                          "assigned": 1})
        documents += [{"topic": topic, "role": "evaluation", "position": p, "text": f"document {p} of {topic}.",
                       "theta": theta, "assigned": int(theta > 0.5)} for p, theta in enumerate(THETA)]
        ranks = [1 + sum(other > fit for other in pattern) for fit in pattern]
        people += [{"topic": topic, "response": 10 * index + person, "position": p,
                    "fit": min(5, pattern[p] + (person == p)), "rank": ranks[p]} for person in range(3) for p in range(4)]
        released += [{"llm": "toy-llm", "seed": seed, "topic": topic, "position": p, "fit": float(pattern[p]),
                      "rank": float(pattern[p])} for seed in (1, 2) for p in range(4)]
    coherences = pd.DataFrame({"topic": list(PATTERNS), "npmi": [0.1, 0.05, 0.2, 0.0, -0.1, 0.3],
                               "cv": [0.5, 0.4, 0.6, 0.3, 0.2, 0.7]})
    return ProxAnnRelease(StudyInputs(topics, pd.DataFrame(documents)), pd.DataFrame(people),
                          {"toy-llm": pd.DataFrame(released)}, coherences)


def _chat(body, headers):
    """The judge answers each topic's pattern: a document's fit, the better-fitting of two (and
    counts no tokens: the judge then estimates them)."""
    if "messages" not in body:
        return Reply(status=404, body={"error": "no such route"})
    prompt = body["messages"][-1]["content"]
    shown = [PATTERNS[topic][int(position)] for position, topic in DOCUMENT.findall(prompt)]
    if "DOCUMENT_A" in prompt:
        choice = "A" if shown[0] > shown[1] else "B"
        return Reply(body=completion(choice, top=((choice, -0.01),)))
    if "integer score from 1 to 5" in prompt:
        return Reply(body=completion(str(shown[0]), top=((str(shown[0]), -0.01),)))
    return Reply(body=completion("CATEGORY: farm bills", top=None))


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """A store of judged runs whose judge has a document-level calibration, tracked by the
    command's own flow (once for the module: its traces, which no test here reads, are not written)."""
    from topicbench.flows.judge_proxann import calibrate_proxann
    from topicbench.tasks.llm.endpoint import LLMEndpoint

    folder = tmp_path_factory.mktemp("calibrated")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    settings = JudgeSettings(exemplar_documents=1, evaluation_documents=4, rating_samples=1)
    with pytest.MonkeyPatch.context() as patch, fake_endpoint(_chat) as server:
        patch.setenv("TOPICBENCH_LLM_CACHE", str(folder / "llm-cache.sqlite"))
        patch.setattr("topicbench.tasks.store.traces.log_traces", lambda *args, **kwargs: None)
        endpoint = LLMEndpoint(base_url=server.url, model=JUDGE, concurrency=2, timeout=10, retries=0)
        calibration = calibrate_proxann(endpoint, settings, _release(), tracking_uri=uri)
    _judged_runs(uri, folder)
    return uri, calibration, folder


def _judged_runs(uri: str, folder) -> None:
    """The benchmark's parent (its config names the judge) and two models x two seeds judged on
    documents; model b's judge never named a category, so it has no fit τ and a share of 0."""
    client = MlflowClient(uri)
    experiment_id = client.create_experiment(EXPERIMENT, artifact_location=(folder / "artifacts").as_uri())
    parent = client.create_run(experiment_id, tags={ROLE_TAG: PARENT_ROLE})
    config = {"corpora": [{"name": "toy"}], "seeds": [0, 1], "models": [{"model": "a"}, {"model": "b"}],
              "metrics": ["llm_fit", "llm_rank"], "llm": {"model": JUDGE, "base_url": "http://judge.example/v1"}}
    (folder / "config.json").write_text(json.dumps(config))
    client.log_artifact(parent.info.run_id, str(folder / "config.json"))
    for model, fit, fit_answered in (("a", 0.6, 1.0), ("b", math.nan, 0.0)):
        for seed in (0, 1):
            run = client.create_run(experiment_id, tags={
                ROLE_TAG: FIT_ROLE, "corpus": "toy", "model": model, "seed": str(seed),
                "topicbench.run_key": f"toy/{model}/{seed}", "mlflow.parentRunId": parent.info.run_id})
            client.log_param(run.info.run_id, "llm.model", JUDGE)
            metrics = {"num_topics_used": 10.0, "llm_fit": fit + 0.01 * seed, "llm_fit_answered": fit_answered,
                       "llm_rank": 0.3 + 0.01 * seed, "llm_rank_answered": 0.875, "llm_requests": 120.0}
            for name, value in metrics.items():
                if not math.isnan(value):
                    client.log_metric(run.info.run_id, name, value)
            client.set_terminated(run.info.run_id, "FINISHED")
    client.set_terminated(parent.info.run_id, "FINISHED")


def _report_text(uri: str, folder) -> str:
    from topicbench.flows.report import report

    written = report(EXPERIMENT, uri, str(folder / "report"), sections=["summary", "llm_judged"])
    return open(written["markdown"], encoding="utf-8").read()


def _table(text: str, title: str) -> str:
    """The Markdown table under the bold ``title``."""
    return text[text.index(f"**{title}**"):].split("\n\n")[1]


def test_a_report_shows_the_document_level_scores_and_the_judges_proxann_calibration(calibrated):
    uri, calibration, folder = calibrated
    text = _report_text(uri, folder)
    # the scores: in the summary and in the LLM section, the mean over seeds (2 seeds: no interval, which needs 3);
    # b's missing fit τ says why
    assert "| model | K · toy | seeds · toy | LLM fit τ · toy | LLM rank τ · toy |" in text
    fit = _table(text, "LLM fit τ (documents' fit against θ, -1 to 1)")
    assert "| a | 0.605 |" in fit and re.search(r"\| b \| –\S* \|", fit)
    assert "| a | 0.305 |" in _table(text, "LLM rank τ (documents' ranking against θ, -1 to 1)")
    # bookkeeping: a share of 0 beside 1 is shown, never bold; the counts of topics with a τ (of min(K, 8) judged)
    shares = _table(text, "share of topics with a fit τ")
    assert "| b | 0 |" in shares and "**" not in shares
    counts = _table(text, "topics with a τ, of those judged (mean over seeds)")
    assert "| a | fit 8, rank 7 of 8 |" in counts and "| b | fit 0, rank 7 of 8 |" in counts and "**" not in counts
    assert "**Small sample of the documents' judging:** the fewest topics judged for a model is 8, over 2 seeds" in text
    # the calibration: the judge's τ as logged, beside people's own and the released LLM's and NPMI's from the same run
    logged = MlflowClient(uri).get_run(calibration.run_id).data.metrics
    # the headline is τ on the topics with its bootstrap interval; ProxAnn's replay is shown as such
    own = {answer: f"{logged[f'proxann.{answer}.tau']:+.2f} \\[{logged[f'proxann.{answer}.low']:+.2f}, "
                   f"{logged[f'proxann.{answer}.high']:+.2f}\\]" for answer in ("fit", "rank")}
    assert f"**Document-level calibration of {JUDGE} against people** (ProxAnn's Bills study" in text
    assert f"6 topics; run {calibration.run_id}" in text and f"fit {own['fit']}" in text
    assert "τ \\[95% interval\\] (percentile bootstrap, 2,000 paired resamples of 6 topics)" in text
    assert logged["proxann.rank.resamples"] == 2000 and "(SE)" not in text.split("Topic-ranking agreement")[0]
    table = _table(text, "Topic-ranking agreement with people (ProxAnn's Bills study)")
    rows = {line.split(" | ")[0].lstrip("| "): line for line in table.splitlines()[2:]}
    assert list(rows) == [f"{JUDGE} (this judge)", "people (one left out)", "toy-llm", "NPMI (ProxAnn's file)",
                          "C_V (ProxAnn's file)", "NPMI (ProxAnn's file), as ProxAnn paired it (replay only)",
                          "C_V (ProxAnn's file), as ProxAnn paired it (replay only)"]
    assert own["fit"] in rows[f"{JUDGE} (this judge)"] and own["rank"] in rows[f"{JUDGE} (this judge)"]
    people = calibration.people["fit"]
    shown = f"| {people.mean:+.2f} (spread {people.spread:.2f}) \\[{people.low:+.2f}, {people.high:+.2f}\\] |"
    assert shown in rows["people (one left out)"]
    assert f"fit: {people.dropped} of {people.draws} draws had an undefined τ and were dropped" in text
    assert "spread over which person is left out, not an SE" in text
    released = calibration.table.set_index(["scorer", "answer"]).loc[("toy-llm", "rank")]
    assert f"| {released.tau:+.2f} \\[{released.low:+.2f}, {released.high:+.2f}\\] |" in rows["toy-llm"]
    assert f"| {released.proxann_tau:+.2f} ({released.proxann_se:.2f}) |" in rows["toy-llm"]
    assert "ProxAnn's protocol: mean of 50 resamples at seed 42 (SE: their standard deviation)" in text
    assert "Advantage probability" in text and "has not been calibrated" not in text


def test_without_a_document_level_calibration_the_report_says_how_to_make_one(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _judged_runs(uri, tmp_path)
    text = _report_text(uri, tmp_path)
    assert f"**{JUDGE} has not been calibrated against people on documents.** Run `topicbench data fetch proxann`, " \
           f"then `topicbench judge calibrate --protocol proxann --llm-base-url http://judge.example/v1 --llm-model " \
           f"{JUDGE}`" in text
    assert "Topic-ranking agreement with people" not in text
    assert "has not been calibrated against people.**" not in text  # no word-level scores: no word-level line


def test_the_newest_calibration_of_the_judge_is_read_and_another_models_is_not(calibrated):
    uri, calibration, _ = calibrated
    found = latest_proxann_calibration(uri, JUDGE)
    assert found["run_id"] == calibration.run_id and found["topics"] == 6
    assert set(found["judge"]) == {"fit", "rank"} and set(found["judge"]["fit"]) >= {"tau", "se", "low", "high"}
    assert [other["scorer"] for other in found["others"]] == ["toy-llm", "npmi", "cv", "npmi (ProxAnn's pairing)",
                                                              "cv (ProxAnn's pairing)"]
    assert found["others"][1]["fit"]["document_tau"] is None  # a coherence has no per-document τ
    assert json.loads(json.dumps(found)) == found  # plain numbers: a bundle's manifest keeps it as it is
    assert latest_proxann_calibration(uri, "another-model") is None


def test_peoples_tau_is_read_from_the_runs_metrics_and_an_answer_without_them_is_none():
    metrics = {"proxann.people.fit.tau": 0.09, "proxann.people.fit.spread": 0.05, "proxann.people.fit.low": -0.01,
               "proxann.people.fit.high": 0.19, "proxann.people.fit.draws": 100, "proxann.people.fit.dropped": 37,
               "proxann.people.rank.tau": 0.18}
    assert people_tau(metrics) == {"fit": {"tau": 0.09, "spread": 0.05, "low": -0.01, "high": 0.19, "draws": 100,
                                           "dropped": 37}, "rank": None}
    assert people_tau({"proxann.fit.tau": 0.3}) is None
    # an older run called the same spread "se" and did not count the dropped draws
    older = {"proxann.people.fit.tau": 0.09, "proxann.people.fit.se": 0.05, "proxann.people.fit.low": -0.01,
             "proxann.people.fit.high": 0.19}
    assert people_tau(older)["fit"] == {"tau": 0.09, "spread": 0.05, "low": -0.01, "high": 0.19, "draws": None,
                                        "dropped": None}


def test_an_older_runs_tau_is_shown_as_proxanns_replay_not_as_the_point():
    from topicbench.tasks.report.llm_judged import document_calibration_blocks

    judge = {answer: {"tau": 0.16, "se": 0.18, "low": -0.1, "high": 0.5, "document_tau": 0.25}
             for answer in ("fit", "rank")}  # logged before the point estimate: no resamples
    summary, table = document_calibration_blocks(JUDGE, "", {"run_id": "r", "when": 0, "topics": 24, "judge": judge,
                                                             "others": [], "people": {"fit": None, "rank": None}})
    rows = table.cells.set_index("scorer")
    assert rows.loc[f"{JUDGE} (this judge)", "τ fit [95%]"] is None
    assert rows.loc[f"{JUDGE} (this judge)", "ProxAnn's protocol fit (SE)"] == "+0.16 (0.18)"
    assert "No point τ for fit and rank: the run was logged before it was" in str(summary.parts)


def test_a_bundle_keeps_the_document_level_calibration_for_its_report(calibrated):
    from topicbench.flows.report import report_from
    from topicbench.tasks.results.bundle import export_bundle
    from topicbench.tasks.results.bundle_source import BundleSource

    uri, calibration, folder = calibrated
    manifest = export_bundle(uri, EXPERIMENT, folder / "bundle")
    assert manifest["judge"]["document_calibration"]["run_id"] == calibration.run_id
    written = report_from(BundleSource(folder / "bundle"), str(folder / "bundle-report"), command="cmd",
                          sections=["llm_judged"])
    text = open(written["markdown"], encoding="utf-8").read()
    assert f"**Document-level calibration of {JUDGE} against people**" in text and "| toy-llm |" in text
