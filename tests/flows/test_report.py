"""Reports: built from tracked runs, rendered in a real headless browser."""

from __future__ import annotations

import math
import shutil

import pytest

from topicbench.flows.benchmark import run_benchmark
from topicbench.flows.config.model import BenchmarkConfig
from topicbench.flows.report import report

from report_browser import clipped_titles, rank_problems

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.usefixtures("prefect_server")


@pytest.fixture(scope="module")
def tracked(tmp_path_factory, prefect_server):
    import random

    folder = tmp_path_factory.mktemp("corpus")
    rng = random.Random(1)
    vocab = "tax budget war troops school teacher health doctor vote bill law court".split()
    lines = [" ".join(rng.choices(vocab[(d % 3) * 4 : (d % 3) * 4 + 4] + vocab, k=12)) + "\ttrain\n" for d in range(30)]
    (folder / "corpus.tsv").write_text("".join(lines))
    uri = f"sqlite:///{tmp_path_factory.mktemp('store') / 'mlflow.db'}"
    config = BenchmarkConfig.from_dict({
        "experiment": "report-test",
        "corpora": [{"name": "toy", "source": str(folder), "preprocessing": {"preprocessed": True}}],
        "models": [
            {"model": "elda", "settings": {"top_words": 10}},
            {"model": "gensim_lda", "num_topics": 3, "settings": {"passes": 2, "iterations": 20, "top_words": 10}},
            {"model": "gibbs_lda", "num_topics": 3, "settings": {"iterations": 50, "top_words": 10}},
            {"model": "gibbs_lda", "label": "gibbs_sparse", "num_topics": 3, "settings": {"alpha": 0.1, "iterations": 50, "top_words": 10}},
        ],
        "seeds": [0, 1],
        "metrics": ["umass", "npmi", "cv", "topic_diversity", "inverted_rbo",
                    "log_likelihood_own", "log_likelihood_randk", "log_likelihood_elda"],
        "top_n": [5, 10],
        "tracking_uri": uri,
    })
    assert run_benchmark(config).is_completed()
    return uri


def test_report_has_every_section(tracked, tmp_path):
    written = report("report-test", tracked, str(tmp_path / "out"))
    text = (tmp_path / "out" / "report.md").read_text()
    for section in ("Experiment Set 1", "Coherence against N", "Topic diversity", "Fit time and memory",
                    "Robustness", "E-LDA's topics and their keywords"):
        assert section in text, section
    assert written["finished"] == 8 and written["failed"] == 0
    assert "gibbs_sparse" in text and "paired p" in text
    assert (tmp_path / "out" / "coherence_toy.png").stat().st_size > 1000
    # models as rows, corpora as columns, the best per corpus bold
    coherence = text[text.index("**UMass@10**"):text.index("**NPMI@10**")]
    assert "| model | toy |" in coherence and "Holm-corrected for the comparisons with the others" in text
    # the report is also an artifact of the benchmark's parent run, beside the runs in the tracking UI
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracked)
    logged = {item.path for item in client.list_artifacts(written["parent_run_id"], "report")}
    assert {"report/report.md", "report/report.html", "report/coherence_toy.png"} <= logged
    assert client.get_run(written["parent_run_id"]).data.tags["topicbench.role"] == "benchmark"


def test_report_opens_with_a_summary_then_links_every_section_and_shows_every_models_topics(tracked, tmp_path):
    import re

    report("report-test", tracked, str(tmp_path / "out"))
    text = (tmp_path / "out" / "report.md").read_text()
    # the summary is the first heading and the first table: every model, each metric at N = 10 on each corpus
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings[0] == "## Summary: who wins where" and text.index("| model |") > text.index(headings[0])
    summary = text[text.index(headings[0]):text.index("**Contents**")]
    assert "| model | K · toy | seeds · toy | UMass@10 · toy | NPMI@10 · toy | C_V@10 · toy | TD@10 · toy |" in summary
    raw = summary[summary.index("| model |"):].split("\n\n")[0]
    rows = [line for line in raw.splitlines() if line.startswith("| ") and "model" not in line]
    assert [row.split(" | ")[0][2:] for row in rows] == ["elda", "gensim_lda", "gibbs_lda", "gibbs_sparse"]
    assert [row.split(" | ")[1:3] for row in rows][1:] == [["3", "2"]] * 3  # K and the seeds behind each cell
    # a mean, "(det.)" where every seed gave the same fit (E-LDA), bold or not, then its rank
    assert all(re.search(r"-?\d\.\d+( \((det\.|same)\))?(\*\*)? [①②③④]", cell) for row in rows for cell in row.split(" | ")[3:])
    assert summary.count("①") >= 4 and "the best mean among the models scored at N = 10" in summary
    # the contents: a link to every heading's anchor
    contents = text[text.index("**Contents**"):text.index(headings[1])]
    assert contents.count("- [") == len(headings) and "- [Summary: who wins where](#summary-who-wins-where)" in contents
    assert "(#robustness-does-the-umass-ranking-hold-under-other-metrics)" in contents
    # numbers for reading: no e-notation in the fit-time tables, durations in units, counts whole
    timing = text[text.index("## Fit time and memory"):text.index("## Robustness")]
    assert not re.search(r"\de[-+]\d", timing) and re.search(r"\d (µs|ms|s|min)\b", timing)
    used = timing[timing.index("**topics used**"):]
    assert "| elda |" in used and not re.search(r"\| \d+\.\d+ (±|\|)", used.split("\n\n")[1])
    assert "± 0 " not in text and "± 0|" not in text.replace(" ", "")
    # every model's topics, side by side per corpus
    topics = text[text.index("## Topics: every model's most prevalent topics"):text.index("## E-LDA's topics")]
    assert "| model | topic 1 | topic 2 | topic 3 |" in topics
    assert all(f"| {model} |" in topics for model in ("elda", "gensim_lda", "gibbs_lda", "gibbs_sparse"))
    # each with its share of the documents and its own NPMI@10 (read from the run's topic_scores.csv)
    side_by_side = topics[topics.index("| model | topic 1"):].split("\n\n")[0]
    cells = [cell for line in side_by_side.splitlines() if line.startswith("| ") and "topic 1" not in line
             for cell in line.strip("| ").split(" | ")[1:]]
    assert cells and all(re.search(r"\(\d+(\.\d+)?% · NPMI -?\d", cell) for cell in cells if cell != "–"), cells
    # how many of each model's topics are shown; the others' closest topics; example documents
    assert re.search(r"Topics shown: elda (\d+ of \d+|all \d+), gensim_lda all 3, gibbs_lda all 3", topics)
    assert "**toy: elda's topics (" in topics and " · RBO " in topics
    for model in ("elda", "gensim_lda", "gibbs_lda", "gibbs_sparse"):
        title, examples = topics[topics.index(f"**{model} on toy: "):].split("\n\n")[:2]
        assert title.endswith("with example documents**"), title
        assert re.search(r"\| \\#\d+: (tax|budget|war|troops|school|teacher|health|doctor|vote|bill|law|court) ", examples)


def test_report_reads_the_benchmarks_config_and_shows_the_sections_asked_for(tracked, tmp_path):
    from topicbench.tasks.results.store import collect_config

    config = collect_config(tracked, "report-test")
    assert [m.get("label") or m["model"] for m in config["models"]] == ["elda", "gensim_lda", "gibbs_lda", "gibbs_sparse"]
    report("report-test", tracked, str(tmp_path / "out"), sections=["robustness", "fit_time"])
    text = (tmp_path / "out" / "report.md").read_text()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == ["## Robustness: does the UMass ranking hold under other metrics?", "## Fit time and memory"]
    assert "Status:" not in text  # every run the config asks for has finished
    assert sorted(p.name for p in (tmp_path / "out").glob("*.png")) == ["fit_time.png"]


def test_report_shows_convergence_and_flags_settings_that_differ_from_the_defaults(tracked, tmp_path):
    from mlflow.tracking import MlflowClient

    report("report-test", tracked, str(tmp_path / "out"))
    text = (tmp_path / "out" / "report.md").read_text()
    # changed settings, above everything else: each (model, setting) with its value and default
    flagged = text.index("## Runs whose settings differ from the model's defaults")
    assert flagged < text.index("## Coherence against N")
    assert "| gibbs_sparse | alpha | 0.1 | 1.0 | 2 |" in text
    assert "| gensim_lda | passes | 2 | 10 | 2 |" in text
    # the iterative fits' curves: a converged column and a plot per corpus
    training = text[text.index("## Training and convergence"):text.index("## Fit time and memory")]
    assert "| toy | gibbs_lda | negative log-likelihood per word (every 10 Gibbs sweeps) |" in training
    assert "| toy | gensim_lda | negative variational bound per word (every pass) |" in training
    assert "| toy | elda |" not in training  # exact greedy has no loss curve: said, not a row
    assert "elda (E-LDA is not iterative: it selects its keyword topics greedily" in training
    assert (tmp_path / "out" / "training_toy.png").stat().st_size > 1000
    # in MLflow: the loss per recorded step as a metric history, and the verdict as a metric
    client = MlflowClient(tracked)
    experiment = client.get_experiment_by_name("report-test")
    run = client.search_runs([experiment.experiment_id], "tags.model = 'gibbs_lda'")[0]
    history = client.get_metric_history(run.info.run_id, "training_loss")
    assert [m.step for m in sorted(history, key=lambda m: m.step)] == [0, 10, 20, 30, 40, 50]
    assert run.data.metrics["converged"] in (0.0, 1.0)
    assert run.data.tags["topicbench.training_loss_kind"].startswith("negative log-likelihood")
    assert "setup_seconds" in run.data.metrics


#: What the page is checked for in the browser, at the width the issue names.
BROWSER_CHECKS = """() => ({
  tables: document.querySelectorAll('table.results').length,
  rows: Array.from(document.querySelectorAll('table.results')).map(t => t.rows.length),
  first: document.querySelector('table.results').className,
  firstHeading: document.querySelector('h2').textContent,
  summaryBeforeContents: !!(document.querySelector('table.summary').compareDocumentPosition(document.querySelector('nav.contents')) & 4),
  images: Array.from(document.images).map(i => ({ok: i.complete && i.naturalWidth > 100, w: i.getBoundingClientRect().width})),
  headings: Array.from(document.querySelectorAll('h2')).map(h => ({text: h.textContent, id: h.id})),
  links: Array.from(document.querySelectorAll('nav.contents a')).map(a => a.getAttribute('href')),
  overflowing: Array.from(document.querySelectorAll('td, th')).filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent),
  pageWidth: document.documentElement.scrollWidth,
  ranked: document.querySelectorAll('table.summary td[title^="rank"]').length,
  plots: Array.from(document.querySelectorAll('figure.plot .js-plotly-plot')).map(p => ({
    title: (p.querySelector('.gtitle') || {}).textContent || '',
    x: Array.from(p.querySelectorAll('text[class^="x"][class$="title"]')).map(t => t.textContent),
    y: Array.from(p.querySelectorAll('text[class^="y"][class$="title"]')).map(t => t.textContent),
    axes: p.querySelectorAll('.xaxislayer-above').length,
    traces: p.querySelectorAll('.scatterlayer .trace').length,
    w: p.getBoundingClientRect().width})),
  plotlyScripts: Array.from(document.scripts).filter(s => s.text.includes('plotly.js v')).length,
  external: Array.from(document.querySelectorAll('script[src], link[href], img[src^="http"]')).length,
})"""


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium: scripts/setup.sh --browser installs it (Debian package)")
def test_html_report_renders_tables_and_interactive_plots_in_a_browser(tracked, tmp_path):
    from playwright.sync_api import sync_playwright

    report("report-test", tracked, str(tmp_path / "out"))
    page_url = (tmp_path / "out" / "report.html").as_uri()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors = []
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(page_url)
        page.wait_for_load_state("load")
        found = page.evaluate(BROWSER_CHECKS)
        titles = clipped_titles(page)
        ranked, rank_issues = rank_problems(page)
        page.screenshot(path=str(tmp_path / "report-1400.png"), full_page=True)
        browser.close()
    assert found["tables"] >= 5 and all(r >= 2 for r in found["rows"])
    assert all(i["ok"] and i["w"] > 100 for i in found["images"])
    # the plots are interactive, drawn from plotly.js embedded once (the page needs no network);
    # each has a title, and every panel a labelled x and y axis
    assert found["plotlyScripts"] == 1 and found["external"] == 0
    assert len(found["plots"]) == 3, found["plots"]  # coherence and training of the one corpus, fit time
    for plot in found["plots"]:
        assert plot["title"] and plot["traces"] >= 2 and 100 < plot["w"] <= 1400, plot
        assert len(plot["x"]) >= plot["axes"] and len(plot["y"]) >= 1 and all(plot["x"] + plot["y"]), plot
    assert any(p["title"].startswith("Fit time") and "fit time (log scale)" in p["x"] for p in found["plots"])
    assert any("Robustness" in h["text"] for h in found["headings"])
    # the summary opens the page, coloured by rank, and the contents link every heading
    assert "summary" in found["first"] and found["firstHeading"] == "Summary: who wins where"
    assert found["summaryBeforeContents"] and found["ranked"] >= 16
    # each ranked cell shows its rank (not only on hover), and a deuteranope tells rank 1 from the last
    assert ranked == found["ranked"] and rank_issues == []
    # every plot and axis title reads whole: inside its figure, beside its axis, over nothing else
    assert titles == []
    assert found["links"] == [f"#{h['id']}" for h in found["headings"]] and all(h["id"] for h in found["headings"])
    # at 1400 px nothing overflows its cell or the page, and the page logs no error
    assert found["overflowing"] == [] and found["pageWidth"] <= 1400
    assert errors == []


def test_report_shows_each_models_stability_across_its_seeds_above_chance(tracked, tmp_path):
    from topicbench.tasks.results.store import collect_runs
    from topicbench.tasks.results.stability import collect_stability

    findings = collect_stability(tracked, collect_runs(tracked, "report-test"))
    rows = findings.table.set_index("model")
    assert sorted(rows.index) == ["elda", "gensim_lda", "gibbs_lda", "gibbs_sparse"]
    for model, row in rows.iterrows():  # two seeds of one corpus: one pair, and its chance level
        assert (row.seeds, row.pairs) == (2, 1), model
        if model == "elda":  # exact greedy: one fit at both seeds, so stability is not applicable
            assert row.deterministic == 1.0 and math.isnan(row.jensen_shannon_mean)
            continue
        assert row.jensen_shannon_chance < row.jensen_shannon_mean <= 1.0 + 1e-12, model
        assert 0 < row.jensen_shannon_chance_p <= 1 and row.permutations == 19, model
    assert not (findings.one_seed or findings.unreadable or findings.not_compared)

    report("report-test", tracked, str(tmp_path / "out"))
    text = (tmp_path / "out" / "report.md").read_text()
    assert text.index("## Robustness") < text.index("## Stability across seeds") < text.index("## E-LDA's topics")
    section = text[text.index("## Stability across seeds"):text.index("## E-LDA's topics")]
    assert "**toy**" in section and all(f"| {model} | 2 |" in section for model in rows.index)
    assert "not applicable: deterministic, one fit" in section.split("| elda | 2 |")[1].splitlines()[0]


class OutOfReferenceModel:
    """Registers ``test_only_words`` for one test: K topics whose first topic leads with words that
    occur only in the corpus's test documents (as ProdLDA's did on a new user's corpus), so that
    coherence against the training documents does not apply to it."""

    @staticmethod
    def model_class():
        import numpy as np

        from topicbench.baselines.base import TopicModel, normalize_rows, top_words_of
        from topicbench.core.output import TopicModelOutput

        class TestOnlyWordsModel(TopicModel):
            name = "test_only_words"
            defaults = {"top_words": 10}

            def _fit(self, corpus):
                k = self._require_num_topics(self.num_topics)
                counts = np.asarray(corpus.doc_term.sum(axis=0), dtype=np.float64).ravel()
                weights = np.stack([counts + 1.0 + np.roll(np.arange(corpus.n_words), t) / corpus.n_words for t in range(k)])
                weights[0] += np.where(counts == 0, 1e6, 0.0)  # words the fitted (training) documents never use
                topic_word = normalize_rows(weights)
                output = TopicModelOutput(
                    model=self.name, vocabulary=tuple(corpus.vocabulary),
                    topics=top_words_of(topic_word, corpus.vocabulary, self.settings["top_words"]),
                    topic_word_matrix=topic_word, topic_document_matrix=np.full((k, corpus.n_documents), 1.0 / k))
                return output, {"num_topics_": k}

        return TestOnlyWordsModel


@pytest.fixture
def out_of_reference_model():
    from topicbench.baselines.registry import MODELS

    MODELS.register("test_only_words", OutOfReferenceModel.model_class())
    yield
    MODELS._entries.pop("test_only_words", None)


def test_a_new_users_labelled_study_reports_k_every_requested_score_and_a_reason_for_every_gap(
        tmp_path, out_of_reference_model):
    """The study of issue 38: a labelled corpus with test documents, models at different K, held-out
    and label metrics asked for, and a model whose top words are not in the training documents."""
    import json
    import random
    import re

    from mlflow.tracking import MlflowClient

    rng = random.Random(3)
    themes = {"economy": "tax budget deficit jobs", "war": "troops army defense soldiers", "school": "teacher student class exam"}
    lines = []
    for d in range(60):
        label, words = list(themes.items())[d % 3]
        partition = "test" if d >= 48 else "train"
        text = rng.choices(words.split() * 3 + " ".join(themes.values()).split(), k=12)
        text += ["zebra", "quokka"] if partition == "test" else []  # words only the test documents use
        lines.append(f"{' '.join(text)}\t{partition}\t{label}\n")
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "corpus.tsv").write_text("".join(lines))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    metrics = ["umass", "npmi", "topic_diversity", "perplexity", "heldout_log_likelihood", "clustering",
               "log_likelihood_own"]
    config = BenchmarkConfig.from_dict({
        "experiment": "new-user", "tracking_uri": uri, "seeds": [0, 1], "metrics": metrics, "top_n": [5, 10],
        "corpora": [{"name": "study", "source": str(tmp_path / "corpus"), "preprocessing": {"preprocessed": True, "vocabulary_from": "all"}}],
        "models": [
            {"model": "gensim_lda", "num_topics": 3, "settings": {"passes": 2, "iterations": 20, "top_words": 10}},
            {"model": "gibbs_lda", "num_topics": 9, "settings": {"iterations": 50, "top_words": 10}},
            {"model": "test_only_words", "num_topics": 3},
        ],
    })
    assert run_benchmark(config).is_completed()
    report("new-user", uri, str(tmp_path / "out"), sections=["summary", "k_comparison", "requested_scores"])
    text = (tmp_path / "out" / "report.md").read_text()
    summary = text[text.index("## Summary"):text.index("**Contents**")]
    # K and the seeds behind the cells, and the caution where K differ by more than 2x
    assert "| model | K · study | seeds · study |" in summary
    assert "| gibbs_lda | 9 | 2 |" in summary and "| gensim_lda | 3 | 2 |" in summary
    assert "**Caution: the models differ in K on study** (topics used: gibbs_lda 9, gensim_lda 3, test_only_words 3)" in summary
    # which points to what exists: the K section, the fits at the same K (no truncation to matched K)
    assert "fits at the same K here: gensim_lda, test_only_words at K = 3" in summary and "At matched K" not in text
    k_part = text[text.index("## K: every score against the number of topics"):]
    assert "**Verdicts at the same K**" in k_part and "| study | 3 | gensim_lda, test_only_words |" in k_part
    # at unequal K, one number per model: the prevalence-weighted mean over all topics, and its sensitivity to k
    weighted = k_part[k_part.index("**One number per model at unequal K"):]
    assert "| gibbs_lda |" in weighted.split("\n\n")[1] and (tmp_path / "out" / "top_k_study.png").exists()
    # every requested metric is in the report, each score with its direction
    for key in ("UMass@10 · study", "NPMI@10 · study", "TD@10 · study", "**perplexity (lower is better)**",
                "**heldout_log_likelihood (higher is better)**", "NMI (labels) · study", "ARI (labels) · study",
                "**purity (higher is better)**", "**log_likelihood_own (higher is better)**"):
        assert key in text, key
    # every dash has a footnote mark, and every mark its reason under the table
    cells = [cell for line in text.splitlines() if line.startswith("| ") for cell in line.strip("| ").split(" | ")]
    assert "–" not in cells and any(cell.startswith("–") for cell in cells)
    marks = {mark for cell in cells for mark in re.findall(r"^–([¹²³⁴⁵⁶⁷⁸⁹]+)$", cell)}
    assert marks and all(f"–{mark} " in text for mark in marks)
    # a model whose top words the reference lacks keeps its rank: its coherence over the words the
    # reference has is ranked in its cell, with the words left out stated under the table
    row = next(line for line in summary.splitlines() if line.startswith("| test_only_words |"))
    assert re.search(r"\| -?[0-9.]+ \(det\.\)¹ [①②③] \|", row), row
    assert "umass@10 over the words the reference corpus has: 2 of its topics' top-10 words are not in the " \
           "reference corpus and left out" in summary
    assert "perplexity does not apply to test_only_words" in text
    # and in the run's tags
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("new-user")
    (run, *_) = client.search_runs([experiment.experiment_id], "tags.model = 'test_only_words'")
    skipped = json.loads(run.data.tags["topicbench.skipped_metrics"])
    assert "does not occur in" in skipped["npmi"] and "perplexity" in skipped
    assert run.data.tags["topicbench.skipped.npmi"] == skipped["npmi"]  # and a tag of its own
    # beside that gap, the coherence over the top words the reference has: a tracked score of its own
    assert run.data.metrics["npmi_in_reference_topics_top10"] == 3 and "npmi_in_reference_top10" in run.data.metrics
    (fitted, *_) = client.search_runs([experiment.experiment_id], "tags.model = 'gensim_lda'")
    assert not any("in_reference" in name for name in fitted.data.metrics)  # no word out of the reference: neither
    assert "npmi" not in json.loads(fitted.data.tags.get("topicbench.skipped_metrics") or "{}")
