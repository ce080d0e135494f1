"""The leaderboard page read in headless chromium at 1400 px, from a bundle written here: a click
on a header sorts its table (a second click reverses it), every rank is on screen, nothing is
fetched and the page logs no error."""

from __future__ import annotations

import pytest

from topicbench.tasks.leaderboard.ranking import build_leaderboard, load_bundle
from topicbench.tasks.leaderboard.write import write_leaderboard

from report_browser import CHROMIUM, open_page
from test_leaderboard import write_bundle

pytestmark = pytest.mark.skipif(CHROMIUM is None,
                                reason="no chromium: scripts/setup.sh --browser installs it (Debian package)")

#: Each model's NPMI (rank order: a, b, c, d) and its fit time, in another order.
MODELS = {"a": (0.30, 40.0), "b": (0.20, 10.0), "c": (0.10, 30.0), "d": (0.05, 20.0)}

COLUMN = """(args) => {
  const [table, header] = args;
  const found = document.querySelectorAll('table.sortable')[table];
  const column = Array.from(found.tHead.rows[0].cells).findIndex(h => h.innerText.trim().startsWith(header));
  return Array.from(found.tBodies[0].rows).map(row => row.cells[column].innerText.trim());
}"""

RANKS = """() => Array.from(document.querySelectorAll('td.rank')).map(cell => {
  const box = cell.getBoundingClientRect();
  return {text: cell.innerText.trim(), left: box.left, right: box.right, width: box.width};
})"""


@pytest.fixture
def page_path(tmp_path):
    scores = {(corpus, model): {"npmi@10": [npmi - 0.01, npmi, npmi + 0.01]}
              for corpus in ("toy", "other") for model, (npmi, _) in MODELS.items()}
    seconds = {model: fit_seconds for model, (_, fit_seconds) in MODELS.items()}
    folder = write_bundle(tmp_path / "bundle", scores, fit_seconds=seconds)
    write_leaderboard(build_leaderboard([load_bundle(folder)]), tmp_path / "page")
    return tmp_path / "page" / "leaderboard.html"


def test_a_click_on_a_header_sorts_its_table_and_a_second_reverses_it(page_path):
    with open_page(page_path) as (page, errors):
        table = 1  # the first dataset's (0 is the ranking across datasets)
        assert page.evaluate(COLUMN, [table, "model"]) == ["a", "b", "c", "d"]  # by rank
        header = page.locator("table.sortable").nth(table).locator("th button", has_text="fit time")
        header.click()
        assert page.evaluate(COLUMN, [table, "model"]) == ["b", "d", "c", "a"]
        assert page.evaluate(COLUMN, [table, "fit time"]) == ["10.0", "20.0", "30.0", "40.0"]
        header.click()
        assert page.evaluate(COLUMN, [table, "model"]) == ["a", "c", "d", "b"]
        page.locator("table.sortable").nth(table).locator("th button", has_text="rank").click()
        assert page.evaluate(COLUMN, [table, "rank"]) == ["1", "2", "3", "4"]
        assert errors == []


def test_every_rank_is_on_screen_at_1400_px(page_path):
    with open_page(page_path, 1400) as (page, errors):
        ranks = page.evaluate(RANKS)
        # four models in the ranking across datasets and in each of the two datasets' tables
        assert len(ranks) == 12 and errors == []
        assert all(r["text"].isdigit() and r["width"] > 0 and 0 <= r["left"] and r["right"] <= 1400 for r in ranks), ranks


#: Each table's right edge, whether its scrolling box scrolls, and any cell whose text overflows it.
WIDTHS = """() => ({
  tables: Array.from(document.querySelectorAll('div.scroll')).map(box => ({
    right: box.querySelector('table').getBoundingClientRect().right,
    scrolls: box.scrollWidth > box.clientWidth + 1,
    headers: Array.from(box.querySelectorAll('th')).map(h => h.innerText.trim())})),
  overflowing: Array.from(document.querySelectorAll('td, th')).filter(c => c.scrollWidth > c.clientWidth + 1)
    .map(c => c.innerText),
  pageWidth: document.documentElement.scrollWidth,
})"""


@pytest.fixture
def wide_page(tmp_path):
    """The widest page the paper's bundle gives, and more: five datasets, three headline metrics,
    long model names, deterministic models (whose label stands where an interval would), K in
    the thousands, a model at another K and memory in the thousands of MB (issue 47: "peak memory
    (MB" was cut off at 1400 px)."""
    models = {"fastopic_vocab2000_long_name": 0.05, "gibbs_sparse_with_priors": 0.04, "elda_raw_umass_exact": 0.03,
              "elda_cooccurrence_exact": 0.02, "contextualized_topic_model": -0.01, "prodlda_reference": -0.03}
    deterministic = {"elda_raw_umass_exact", "elda_cooccurrence_exact"}
    scores = {}
    for corpus in ("congress_speeches", "reuters_newswire", "20ng_politics", "m10_citations", "bbc_news_2025"):
        for model, value in models.items():
            spread = 0.0 if model in deterministic else 0.0123
            scores[(corpus, model)] = {key: [value + shift - spread, value + shift, value + shift + spread]
                                       for key, shift in (("npmi@10", -0.0001), ("cv@10", 0.5), ("topic_diversity@10", 0.6))}
    folder = write_bundle(tmp_path / "bundle", scores, topics={"elda_raw_umass_exact": 2552.0},
                          fit_seconds={model: 1591.25 for model in models})
    write_leaderboard(build_leaderboard([load_bundle(folder)]), tmp_path / "page")
    return tmp_path / "page" / "leaderboard.html"


def test_every_table_fits_1400_px(wide_page):
    with open_page(wide_page, 1400) as (page, errors):
        found = page.evaluate(WIDTHS)
        assert errors == [] and len(found["tables"]) >= 6  # the rankings across datasets and five datasets
        assert any("peak memory (MB)" in table["headers"] for table in found["tables"])
        too_wide = [table["headers"][:3] for table in found["tables"] if table["scrolls"] or table["right"] > 1400]
        assert too_wide == [], f"tables wider than 1400 px: {too_wide}"
        assert found["overflowing"] == [] and found["pageWidth"] <= 1400
