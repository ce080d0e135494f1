"""Names are data (issue 37): an experiment, corpus, label, study or LLM model named with quotes
reaches MLflow's search filters as a value, never as syntax; and user text in report.md (names,
a corpus's words, labels) is shown as given, never read as HTML or Markdown.

The end-to-end test runs one benchmark, its report and a search against a sqlite store with every
name hostile at once; the others test the two points that make it so (a search of runs by tag,
and the text of reports) on their own.
"""

from __future__ import annotations

import html
import itertools
import json
import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from markdown_it import MarkdownIt
from mlflow.tracking import MlflowClient

from topicbench.tasks.report.text import (
    LONGEST_WORD, Code, Markdown, Text, markdown_code, markdown_paragraph, markdown_text, to_markdown,
)
from topicbench.tasks.store.filters import UnwritableFilterValue, filter_literal, search_runs

#: What the filter grammar makes hard: both quotes, a backslash, LIKE's wildcards.
QUOTES = "it's \"q\" \\ 50% a_b"
SCRIPT = "<script>alert(1)</script>"
SVG = "<svg onload=alert(1)>"
LINK = "[x](javascript:alert(1))"
LONG_WORD = "w" * 500
RIGHT_TO_LEFT = "\u202e"
EXPERIMENT = f"exp {QUOTES} {SCRIPT} {RIGHT_TO_LEFT}gnp.exe"
CORPUS = f"corpus {QUOTES} {SVG} | pipe"
LABEL = f"label {QUOTES} {LINK} *bold* `code`"
#: Shown in the topics: corpus words that would be markup.
HOSTILE_WORDS = (SCRIPT, "[y](javascript:alert(2))", "a|b", LONG_WORD)

#: report.md as GitHub shows it: CommonMark with GitHub's tables and strikethrough.
MARKDOWN = MarkdownIt("commonmark").enable(["table", "strikethrough"])
MARKDOWN_ELEMENTS = {"h1", "h2", "p", "strong", "code", "pre", "table", "thead", "tbody", "tr", "th", "td", "ul", "li",
                     "a", "img"}


def rendered(markdown: str) -> str:
    return MARKDOWN.render(markdown)


def assert_inert(page: str) -> None:
    """The HTML of rendered Markdown has only the elements Markdown makes of this project's own
    marks, and links only to the page's own anchors: nothing a user named became an element."""
    assert set(re.findall(r"</?([A-Za-z][A-Za-z0-9]*)", page)) <= MARKDOWN_ELEMENTS, page
    assert all(link.startswith("#") for link in re.findall(r'href="([^"]*)"', page)), page
    assert all(":" not in source for source in re.findall(r'src="([^"]*)"', page)), page


# -- filters: a value is data -------------------------------------------------------------------


def test_every_value_the_grammar_can_write_means_itself_to_mlflows_parser():
    """Exhaustively over short strings of the characters that matter: a literal parses back to
    exactly its value, first, middle or last in a filter; the rest are refused, not mangled."""
    from mlflow.utils.search_utils import SearchUtils

    alphabet = ["a", "'", '"', "\\", "%", "_", "-", "*", "/", "`", ";", "(", " ", "\n", "é"]
    refused = 0
    for size in range(1, 4):
        for characters in itertools.product(alphabet, repeat=size):
            value = "".join(characters)
            try:
                literal = filter_literal(value)
            except UnwritableFilterValue:
                refused += 1
                assert ("'" in value and '"' in value) or value.endswith("\\")
                continue
            parsed = SearchUtils.parse_search_filter(
                f"attributes.status = 'RUNNING' and tags.`k` = {literal} and tags.`j` = {literal}")
            assert [clause["value"] for clause in parsed] == ["RUNNING", value, value], value
    assert refused > 0


@pytest.fixture
def tagged_store(tmp_path):
    """A sqlite store with one run per hostile value of the tag ``name`` (two of the first), a
    FINISHED and a FAILED one each; returns (client, experiment id, values)."""
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment_id = client.create_experiment(EXPERIMENT)
    values = [QUOTES, "it's", 'say "hi"', "ends in \\", "a''b", "%", "_", "x' or '1'='1", "x\" or \"1\"=\"1", "IT'S"]
    for value in values + [values[0]]:
        for status in ("FINISHED", "FAILED"):
            run = client.create_run(experiment_id, tags={"name": value, "topicbench.role": "fit"})
            client.set_terminated(run.info.run_id, status)
    return client, experiment_id, values


def test_a_search_by_tag_finds_exactly_the_runs_of_each_hostile_value(tagged_store):
    client, experiment_id, values = tagged_store
    for value in values:
        found = search_runs(client, [experiment_id], tags={"name": value, "topicbench.role": "fit"}, status="FINISHED")
        assert {run.data.tags["name"] for run in found} == {value}, value
        assert len(found) == (2 if value == QUOTES else 1) and {run.info.status for run in found} == {"FINISHED"}
        # one of them, whether the store or this process matched the value
        newest = search_runs(client, [experiment_id], tags={"name": value}, status_not="FAILED", max_results=1,
                             order_by=["attributes.start_time DESC"])
        assert [(run.data.tags["name"], run.info.status) for run in newest] == [(value, "FINISHED")]


def test_the_study_parent_and_the_judges_calibration_are_found_under_hostile_names(tmp_path):
    """The two look-ups by a user's name: a search's parent run by the study (the experiment's
    name) and the LLM judge's latest calibration by the model's name."""
    from topicbench.flows.judge import CALIBRATION_EXPERIMENT, MODEL_TAG, latest_calibration
    from topicbench.tasks.store.tracking import Tracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = Tracker(uri, EXPERIMENT)
    config = type("Config", (), {"experiment": EXPERIMENT, "to_dict": lambda self: {}})()
    first = tracker.open_study_parent(config, EXPERIMENT)
    tracker.client.set_terminated(first, "FINISHED")
    assert tracker.open_study_parent(config, EXPERIMENT) == first  # reopened, not a second parent
    tracker.client.set_terminated(first, "FINISHED")

    client = MlflowClient(uri)
    experiment_id = client.create_experiment(CALIBRATION_EXPERIMENT)
    for model in (QUOTES, "it's"):
        run = client.create_run(experiment_id, tags={MODEL_TAG: model})
        client.log_text(run.info.run_id, json.dumps({"model": model, "rows": []}), "calibration.json")
        client.set_terminated(run.info.run_id, "FINISHED")
    assert latest_calibration(uri, QUOTES)["model"] == QUOTES
    assert latest_calibration(uri, "it's")["model"] == "it's"
    assert latest_calibration(uri, "it''s") is None


# -- report text: shown as given ----------------------------------------------------------------


@pytest.mark.parametrize("text", [QUOTES, SCRIPT, SVG, LINK, "a | b", "_a_ *b* __c__ `d` ~~e~~ $f$ #g <!-- x -->",
                                  "&lt;b&gt; &amp;", "- item", "1. one", "> quote", "https://x.example/a_b_", "ends\\",
                                  "![i](x.png)", "<https://x.example>", "[a]: https://x.example", "line\n---\nnext"])
def test_user_text_in_markdown_shows_exactly_that_text(text):
    shown = html.escape(text.replace("\n", " ")).replace("&#x27;", "'")  # as markdown-it writes text
    assert rendered(markdown_paragraph(to_markdown(text))) == f"<p>{shown}</p>\n"
    assert f"<td>{shown}</td>" in rendered(f"| h |\n|---|\n| {markdown_text(text)} |\n")


def test_long_words_are_shortened_and_direction_controls_shown_as_code_points():
    assert markdown_text(LONG_WORD) == "w" * (LONGEST_WORD - 1) + "…"
    assert markdown_text(f"ab{RIGHT_TO_LEFT}cd\u2066e") == "ab⟨U+202E⟩cd⟨U+2066⟩e"
    # a command to copy stays whole, in a code span no backtick of it can end
    assert rendered(markdown_code("a ``b`` " + LONG_WORD)) == f"<p><code>a ``b`` {LONG_WORD}</code></p>\n"
    paragraph = Markdown("**", Text(SCRIPT), "** run ", Code(f"x --name '{SCRIPT}'"), ".")
    assert rendered(paragraph.to_markdown()) == (
        "<p><strong>&lt;script&gt;alert(1)&lt;/script&gt;</strong> run "
        "<code>x --name '&lt;script&gt;alert(1)&lt;/script&gt;'</code>.</p>\n")
    # the HTML shows the bold as bold, like the Markdown (no raw ``**``), the user's text still as text
    assert paragraph.to_html() == ("<strong>&lt;script&gt;alert(1)&lt;/script&gt;</strong> run "
                                   "<code>x --name &#x27;&lt;script&gt;alert(1)&lt;/script&gt;&#x27;</code>.")


def test_the_llm_sections_paragraphs_and_calibration_md_show_the_models_name_as_given():
    from topicbench.flows.judge import Calibration, calibration_markdown
    from topicbench.tasks.report.sections import calibration_summary

    model = f"{QUOTES} {SCRIPT} {LINK}"
    shown = html.escape(model).replace("&#x27;", "'")
    uncalibrated = rendered(calibration_summary(model, "http://judge.example/v1", None).to_markdown())
    assert_inert(uncalibrated)
    assert f"<strong>{shown} has not been calibrated" in uncalibrated and f"--llm-model {shown}</code>" in uncalibrated
    calibrated = rendered(calibration_summary(model, "", {"rows": [], "topics": 300, "run_id": "r", "when": 0,
                                                          "verdict": f"weak: {model} {SVG}"}).to_markdown())
    assert_inert(calibrated)
    assert f"<strong>Calibration of {shown} against people</strong>" in calibrated
    correlation = SimpleNamespace(as_text=lambda: "0.10 [0.00, 0.20]", weak=True)
    rows = [{"measure": "llm_rating", "rating": correlation, "intrusion": correlation, "scored": 300,
             "ranking": {SCRIPT: {"tau": 0.5}}}]
    page = rendered(calibration_markdown(Calibration(rows, model, 300, 0, 0, 0.0)))
    assert_inert(page)
    assert f"weak: llm_rating of {shown} agree little" in page and f"τ models {html.escape(SCRIPT)}" in page


# -- end to end ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile_benchmark(tmp_path_factory, prefect_server):
    """One benchmark, its report and a search of one point, every name hostile, in one store.
    Returns (tmp folder, store URI, config path, exit codes of run, report and search)."""
    from topicbench.flows.cli.main import main

    tmp = tmp_path_factory.mktemp("names")
    corpus = tmp / "corpus"
    corpus.mkdir()
    themes = ["budget tax spending deficit revenue", "war troops iraq military soldiers", "school teacher education student"]
    lines = [" ".join((themes[d % 3] + " " + " ".join(HOSTILE_WORDS)).split() * 2) + "\ttrain\n" for d in range(24)]
    (corpus / "corpus.tsv").write_text("".join(lines))
    config = tmp / "config.yaml"
    data = {
        "experiment": EXPERIMENT,
        "corpora": [{"name": CORPUS, "source": str(corpus), "preprocessing": {"preprocessed": True}}],
        "models": [{"model": "elda", "label": LABEL, "settings": {"top_words": 10, "generator": "cooccurrence"}}],
        "metrics": ["umass", "topic_diversity"], "top_n": [5, 10], "seeds": [0],
    }
    config.write_text(json.dumps(data))
    store = f"sqlite:///{tmp / 'store' / 'mlflow.db'}"
    previous = Path.cwd()
    os.chdir(tmp)
    try:
        codes = [main(["run", str(config), "--tracking-uri", store]),
                 main(["report", "--experiment", EXPERIMENT, "--tracking-uri", store, "--out", str(tmp / "report")])]
        searched = tmp / "search.yaml"
        searched.write_text(json.dumps({**data, "search": {"objectives": ["umass@5"], "spaces": {LABEL: {"kappa": [1.0]}}}}))
        codes.append(main(["search", str(searched), "--tracking-uri", store, "--out", str(tmp / "search")]))
    finally:
        os.chdir(previous)
    return tmp, store, codes


def test_run_report_and_search_take_names_with_quotes(hostile_benchmark):
    tmp, store, codes = hostile_benchmark
    assert codes == [0, 0, 0]
    client = MlflowClient(store)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    runs = search_runs(client, [experiment.experiment_id], tags={"corpus": CORPUS, "model": LABEL})
    assert runs and {run.info.status for run in runs} == {"FINISHED"}
    studies = search_runs(client, [experiment.experiment_id], tags={"topicbench.role": "search",
                                                                    "topicbench.study": EXPERIMENT})
    assert len(studies) == 1


def test_report_md_shows_hostile_names_and_words_inert_and_as_given(hostile_benchmark):
    tmp, _, _ = hostile_benchmark
    markdown = (tmp / "report" / "report.md").read_text(encoding="utf-8")
    page = rendered(markdown)
    assert_inert(page)
    shown = html.unescape(page)
    assert EXPERIMENT.replace(RIGHT_TO_LEFT, "⟨U+202E⟩") in shown and RIGHT_TO_LEFT not in markdown
    assert CORPUS in shown and LABEL in shown
    assert all(word in shown for word in HOSTILE_WORDS[:3]), "a corpus's words are shown as given"
    assert LONG_WORD not in markdown and "w" * (LONGEST_WORD - 1) + "…" in shown
    # a table keeps a | in a cell as a |, its columns where they were
    assert "a\\|b" in markdown
    for search_page in (tmp / "search").glob("search.md"):
        assert_inert(rendered(search_page.read_text(encoding="utf-8")))
    # report.html: the same text, escaped once
    page = (tmp / "report" / "report.html").read_text(encoding="utf-8")
    assert "alert(1)</script>" not in page and "<svg onload" not in page and "&amp;lt;" not in page
    assert html.escape(CORPUS) in page and RIGHT_TO_LEFT not in page
