"""Reports: built from tracked runs, rendered in a real headless browser."""

from __future__ import annotations

import shutil

import pytest

from topicbench.flows.benchmark import run_benchmark
from topicbench.flows.config import BenchmarkConfig
from topicbench.flows.report import report

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


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium: scripts/setup.sh --browser installs it (Debian package)")
def test_html_report_renders_tables_and_images_in_a_browser(tracked, tmp_path):
    from playwright.sync_api import sync_playwright

    report("report-test", tracked, str(tmp_path / "out"))
    page_url = (tmp_path / "out" / "report.html").as_uri()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        page = browser.new_page()
        page.goto(page_url)
        page.wait_for_load_state("load")
        tables = page.evaluate("document.querySelectorAll('table.results').length")
        rows = page.evaluate("Array.from(document.querySelectorAll('table.results')).map(t => t.rows.length)")
        images = page.evaluate(
            "Array.from(document.images).map(i => ({ok: i.complete && i.naturalWidth > 100, w: i.getBoundingClientRect().width}))"
        )
        headings = page.evaluate("Array.from(document.querySelectorAll('h2')).map(h => h.textContent)")
        browser.close()
    assert tables >= 5 and all(r >= 2 for r in rows)
    assert len(images) >= 2 and all(i["ok"] and i["w"] > 100 for i in images)
    assert any("Robustness" in h for h in headings)
