"""``judge calibrate --protocol proxann`` against a fake endpoint: the study's questions asked once
(a second calibration answers from the cache), scored beside people and a released LLM, tracked;
and the command line, on a release in the released layout given by ``--release`` or fetched."""

from __future__ import annotations

import pandas as pd
import pytest
from llm_endpoints import Reply, completion, fake_endpoint
from mlflow.tracking import MlflowClient
from proxann_files import write_release

from topicbench.core.metrics.llm_judging import JudgeSettings
from topicbench.core.proxann_data import ProxAnnRelease, StudyInputs
from topicbench.flows.cli.main import main
from topicbench.flows.judge_proxann import PROXANN_EXPERIMENT, calibrate_proxann, format_proxann_table
from topicbench.tasks.llm.endpoint import LLMEndpoint

THETA = (0.9, 0.6, 0.3, 0.1)
TOPICS = ("bills-labeled/ctm/1", "bills-labeled/ctm/2", "bills-labeled/mallet/3")


def _release() -> ProxAnnRelease:
    topics = pd.DataFrame({"topic": TOPICS, "model": ["ctm", "ctm", "mallet"],
                           "words": [("farm", "crop"), ("tax", "credit"), ("river", "water")]})
    documents, people, released = [], [], []
    for index, topic in enumerate(TOPICS):
        documents.append({"topic": topic, "role": "exemplar", "position": 0, "text": "an exemplar.", "theta": 0.95,
                          "assigned": 1})
        documents += [{"topic": topic, "role": "evaluation", "position": p, "text": f"document {p} of {topic}.",
                       "theta": theta, "assigned": int(theta > 0.5)} for p, theta in enumerate(THETA)]
        for person in range(3):
            people += [{"topic": topic, "response": 10 * index + person, "position": p, "fit": 4 - p + (person == p),
                        "rank": p + 1} for p in range(4)]
        released += [{"llm": "toy-llm", "seed": seed, "topic": topic, "position": p, "fit": 4.0 - p, "rank": 4.0 - p}
                     for seed in (1, 2) for p in range(4)]
    coherences = pd.DataFrame({"topic": TOPICS, "npmi": [0.1, 0.05, 0.2], "cv": [0.5, 0.4, 0.6]})
    return ProxAnnRelease(StudyInputs(topics, pd.DataFrame(documents)), pd.DataFrame(people),
                          {"toy-llm": pd.DataFrame(released)}, coherences)


def _chat(body, headers):
    prompt = body["messages"][-1]["content"]
    if "DOCUMENT_A" in prompt:  # the first-shown document wins: both orders cancel out, no comparison
        return Reply(body=completion("A", top=(("A", -0.2), ("B", -1.8))))
    if "integer score from 1 to 5" in prompt:
        return Reply(body=completion("4", top=(("4", -0.1), ("2", -2.5))))
    return Reply(body=completion("CATEGORY: farm bills", top=None))


def test_proxann_calibration_scores_the_endpoint_beside_people_and_released_llms(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPICBENCH_LLM_CACHE", str(tmp_path / "llm-cache.sqlite"))
    settings = JudgeSettings(exemplar_documents=1, evaluation_documents=4, rating_samples=1)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with fake_endpoint(_chat) as server:
        endpoint = LLMEndpoint(base_url=server.url, model="toy-model", concurrency=2, timeout=10, retries=0)
        calibration = calibrate_proxann(endpoint, settings, _release(), tracking_uri=uri)
        again = calibrate_proxann(endpoint, settings, _release(), tracking_uri=None, topics_per_model=1)
    assert calibration.requests == 3 + 3 * 4 + 3 * 12 and calibration.cached == 0  # labels, fits, pairs x 2
    assert again.requests == 0 and again.topics == 2  # each model's first topic, from the cache
    assert set(calibration.table["scorer"]) == {"toy-model", "toy-llm", "npmi", "cv", "npmi (ProxAnn's pairing)",
                                                "cv (ProxAnn's pairing)"}
    # the headline is τ on the topics with a 2,000-resample interval; ProxAnn's replay beside it, named
    assert calibration.table["resamples"].max() == 2000
    assert calibration.table["method"].iloc[2].startswith("percentile bootstrap, 2,000 resamples of 3 topics")
    released = calibration.table[calibration.table["scorer"] == "toy-llm"].set_index("answer")
    assert released.loc["fit", "document_tau"] > 0.5  # the released answers follow people's
    assert calibration.answers["fit"].round(2).nunique() == 1 and calibration.answers["rank"].isna().all()
    text = format_proxann_table(calibration)
    assert text.splitlines()[0].startswith("scorer") and "people (one left out)" in text and "toy-llm" in text
    assert "ProxAnn's protocol: mean (SE) of 50 resamples at seed 42, a replay of one seed's draw, not the figure" in text
    assert f"fit: {calibration.people['fit'].dropped_text()}" in text and "not an SE" in text
    client = MlflowClient(uri)
    [run] = client.search_runs([client.get_experiment_by_name(PROXANN_EXPERIMENT).experiment_id])
    assert run.data.tags["topicbench.llm_model"] == "toy-model" and run.data.metrics["llm_requests"] == 51
    assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {"answers.csv", "proxann_calibration.txt"}


# ------------------------------------------------------------------------------------------------
# The command line: `topicbench judge calibrate --protocol proxann` on a release in the released
# layout (tests/proxann_files.py), given by --release or fetched into the data cache.
# ------------------------------------------------------------------------------------------------


def _chat_requests(server) -> int:
    """Chat completions the fake endpoint answered (not counting tokenizer probes)."""
    return sum(method == "POST" and path.endswith("/chat/completions") for method, path, _, _ in server.log)


def _calibrate(*options) -> list:
    return ["judge", "calibrate", "--llm-model", "toy-model", *options]


def test_the_cli_calibrates_against_a_release_folder_and_prints_every_scorer(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TOPICBENCH_LLM_CACHE", str(tmp_path / "llm-cache.sqlite"))
    release = write_release(tmp_path / "release")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with fake_endpoint(_chat) as server:
        code = main(_calibrate("--protocol", "proxann", "--release", str(release), "--llm-base-url", server.url,
                               "--tracking-uri", uri, "--topics-per-model", "1", "--seed", "3"))
        assert code == 0, capsys.readouterr().err
        asked = _chat_requests(server)
    out = capsys.readouterr().out
    # each model's first topic (mallet/4, ctm/7): a category, 7 fits and 21 pairs x 2 orders each
    assert asked == 2 * (1 + 7 + 42) + 1  # + the endpoint check's one chat request
    assert f"document-level calibration of toy-model at {server.url} on 2 topics" in out
    assert "(100 requests, 0 answered from the cache" in out
    table = out.split("\n", 1)[1]
    scorers = {line.split()[0] for line in table.splitlines()[1:] if line and not line.startswith(("τ:", "tracked"))}
    assert scorers >= {"toy-model", "gpt-4o-2024-08-06", "Qwen2.5-72B-Instruct-AWQ", "Meta-Llama-3.1-8B-Instruct",
                       "npmi", "cv", "people"}
    assert "tracked as run " in out and "of experiment 'judge-calibration-proxann'" in out


def test_the_cli_reads_the_fetched_release_by_default(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TOPICBENCH_DATA", str(tmp_path / "cache"))
    monkeypatch.setenv("TOPICBENCH_LLM_CACHE", str(tmp_path / "llm-cache.sqlite"))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with fake_endpoint(_chat) as server:
        flags = ("--protocol", "proxann", "--llm-base-url", server.url, "--tracking-uri", uri)
        assert main(_calibrate(*flags)) == 2
        assert "dataset 'proxann' is not in the data cache" in capsys.readouterr().err
        assert _chat_requests(server) == 0  # nothing asked before the release is read
        write_release(tmp_path / "cache" / "proxann")
        (tmp_path / "cache" / "proxann" / "metadata.json").write_text("{}")  # what a fetch writes last
        assert main(_calibrate(*flags)) == 0, capsys.readouterr().err
    assert "on 3 topics of ProxAnn's Bills study (150 requests" in capsys.readouterr().out


@pytest.mark.parametrize("options, message", [
    (("--release", "x"), "--release does not apply to --protocol words"),
    (("--protocol", "proxann", "--judgments", "x.json"), "--judgments does not apply to --protocol proxann"),
    (("--protocol", "proxann", "--bootstrap", "200"), "--bootstrap does not apply to --protocol proxann"),
    (("--protocol", "proxann", "--release", "no-such-folder"), "--release: no-such-folder is not a folder"),
    (("--protocol", "sentences"), "argument --protocol: invalid choice: 'sentences'"),
])
def test_the_cli_refuses_what_does_not_apply_before_asking(tmp_path, monkeypatch, capsys, options, message):
    monkeypatch.chdir(tmp_path)
    with fake_endpoint(_chat) as server:
        assert main(_calibrate("--llm-base-url", server.url, *options)) == 2
        assert _chat_requests(server) == 0
    assert message in capsys.readouterr().err
