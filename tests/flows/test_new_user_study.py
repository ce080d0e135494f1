"""Issue 47's new user's study, in small: a labelled corpus with a test split (and a word only the
test documents have), fast models, three seeds; the report's summary opens with a verdict in words
and shows the label scores, says what it rests on ("Data and settings", the same from the store
and from a bundle), and reads at 1400 px without horizontal overflow, each footnote under its table."""

from __future__ import annotations

import random

import pytest

from topicbench.flows.benchmark import run_benchmark
from topicbench.flows.cli.main import main
from topicbench.flows.config.model import BenchmarkConfig
from topicbench.flows.report import report
from topicbench.tasks.results.bundle import export_bundle
from topicbench.tasks.results.data_settings import DATA_SETTINGS_FILE, collect_data_and_settings

from report_browser import CHROMIUM, open_page

pytestmark = pytest.mark.usefixtures("prefect_server")

EXPERIMENT = "new-user-study"
#: Three sections of a manual, each with its own words, as the study's man pages.
THEMES = {"one": "file open read write close path mode descriptor".split(),
          "two": "signal process kill wait child parent exit status".split(),
          "three": "socket bind listen accept connect port address packet".split()}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """(store URI, corpus folder) of the study: 60 labelled documents (48 train, 12 test)."""
    folder = tmp_path_factory.mktemp("manpages")
    rng, lines = random.Random(47), []
    shared = [word for words in THEMES.values() for word in words]
    for d in range(60):
        label = list(THEMES)[d % 3]
        words = rng.choices(THEMES[label], k=14) + rng.choices(shared, k=4)
        partition = "test" if d >= 48 else "train"
        if d == 50:
            words.append("specifics")  # in no training document: dropped from held-out scoring
        lines.append(f"{' '.join(words)}\t{partition}\t{label}\n")
    (folder / "corpus.tsv").write_text("".join(lines))
    uri = f"sqlite:///{tmp_path_factory.mktemp('store') / 'mlflow.db'}"
    config = BenchmarkConfig.from_dict({
        "experiment": EXPERIMENT,
        "corpora": [{"name": "manpages", "source": str(folder), "preprocessing": {"preprocessed": True}}],
        "models": [{"model": "gibbs_lda", "num_topics": 3, "settings": {"iterations": 40, "top_words": 10}},
                   {"model": "nmf", "num_topics": 3}],
        "seeds": [0, 1, 2],
        "metrics": ["npmi", "topic_diversity", "clustering"],
        "top_n": [5, 10],
        "tracking_uri": uri,
    })
    assert run_benchmark(config).is_completed()
    return uri, folder


def _section(markdown: str, title: str) -> str:
    start = markdown.index(f"## {title}")
    end = markdown.find("\n## ", start + 1)
    return markdown[start:end if end >= 0 else None]


def test_the_summary_says_who_leads_and_shows_the_label_scores(study, tmp_path):
    uri, _ = study
    report(EXPERIMENT, uri, str(tmp_path / "report"))
    markdown = (tmp_path / "report" / "report.md").read_text()
    summary = _section(markdown, "Summary: who wins where")
    assert "**On manpages:**" in summary and " leads on " in summary
    assert "clearly (" in summary or "but not significantly (p = " in summary or ", untested against" in summary
    assert "NMI (labels)" in summary and "ARI (labels)" in summary
    assert "run 5 or more seeds (now 3" in summary
    purity = markdown[markdown.index("**purity (higher is better)**"):]
    assert "Caution: purity rewards many topics" in purity[:2000]


def test_data_and_settings_are_in_the_report_and_in_its_bundle(study, tmp_path):
    uri, _ = study
    record = collect_data_and_settings(uri, EXPERIMENT)
    corpus = record["corpora"]["manpages"]
    assert corpus["partitions"] == {"train": 48, "test": 12} and corpus["labels"] == {"one": 16, "two": 16, "three": 16}
    assert corpus["preprocessing"]["preprocessed"] is True  # a boolean, not the text "True"
    assert corpus["vocabulary_from"] == "train" and corpus["test_only_words"] >= 1  # "specifics", held out
    assert {entry["model"] for entry in record["models"]} == {"gibbs_lda", "nmf"}
    assert all(entry["seeds"] == [0, 1, 2] and entry["versions"] for entry in record["models"])

    report(EXPERIMENT, uri, str(tmp_path / "store"))
    from_store = _section((tmp_path / "store" / "report.md").read_text(), "Data and settings")
    assert "train 48, test 12" in from_store and "3: one 16, two 16, three 16" in from_store
    assert "| preprocessed | true |" in from_store and '"True"' not in from_store
    assert "iterations = 40" in from_store and "counted from the training documents only" in from_store

    manifest = export_bundle(uri, EXPERIMENT, tmp_path / "bundle")
    assert (tmp_path / "bundle" / DATA_SETTINGS_FILE).is_file() and manifest["data_and_settings_sha256"]
    assert main(["report", "--bundle", str(tmp_path / "bundle"), "--out", str(tmp_path / "from-bundle")]) == 0
    assert _section((tmp_path / "from-bundle" / "report.md").read_text(), "Data and settings") == from_store


#: Whether anything of the page runs past its width, and each table's footnotes where they sit.
LAYOUT_CHECKS = """() => ({
  pageWidth: document.documentElement.scrollWidth,
  overflowing: Array.from(document.querySelectorAll('div.table')).filter(d => d.scrollWidth > d.clientWidth + 1)
    .map(d => (d.querySelector('caption') || {textContent: d.textContent.slice(0, 60)}).textContent),
  notes: Array.from(document.querySelectorAll('div.table-row > div.table')).flatMap(box => {
    const table = box.querySelector('table').getBoundingClientRect();
    return Array.from(box.querySelectorAll(':scope > p.table-note')).map(p => {
      const note = p.getBoundingClientRect();
      return {left: note.left - table.left, right: note.right - table.right, below: note.top - table.bottom};
    });
  }),
})"""


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium: scripts/setup.sh --browser installs it (Debian package)")
def test_the_report_fits_1400_px_with_each_footnote_under_its_table(study, tmp_path):
    uri, _ = study
    report(EXPERIMENT, uri, str(tmp_path / "report"))
    with open_page(tmp_path / "report" / "report.html") as (page, errors):
        found = page.evaluate(LAYOUT_CHECKS)
    assert errors == [] and found["pageWidth"] <= 1400, found["pageWidth"]
    assert found["overflowing"] == []
    assert found["notes"], "no table of a row has a footnote: the study should have gaps"
    for note in found["notes"]:  # directly under its own table, no wider than it
        assert abs(note["left"]) <= 1 and note["right"] <= 1 and 0 <= note["below"] <= 40, note
