"""The manual builds with warnings as errors (broken references included), as CI builds it.

``docs/`` is built with Sphinx (``-W --keep-going -n``) into a temporary folder; a second, tiny
project with the manual's configuration shows that a broken reference or a page missing from the
table of contents does fail such a build. Every page's title is its built page's heading and is in
the site's navigation: a page Sphinx writes over with one of its own (``search``, ``genindex``)
fails the build at once.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

pytest.importorskip("sphinx", reason="the docs group is not installed (scripts/setup.sh installs it)")
pytest.importorskip("myst_parser")


def sphinx_build(source: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-n", "-E", "-q",
         "-d", str(out / "doctrees"), str(source), str(out / "html")],
        capture_output=True, text=True, timeout=900, env={**__import__("os").environ,
                                                          "PREFECT_SERVER_ANALYTICS_ENABLED": "false"},
    )


def page_title(page: Path) -> str:
    """A page's first heading as Sphinx shows it: without Markdown's backticks and emphasis."""
    heading = next(line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("# "))
    return re.sub(r"[`*]", "", heading[2:]).strip()


def plain(markup: str) -> str:
    """HTML as its reader sees the text: tags dropped, entities resolved, typographic quotes plain."""
    text = html.unescape(re.sub(r"<[^>]+>", "", markup))  # inline markup splits no words: `a`: -> a:
    return re.sub(r"\s+", " ", text.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')).strip()


def missing_titles(source: Path, site: Path) -> list[str]:
    """The pages of ``source`` whose title is not their built page's heading or not in the site's
    navigation (a page that Sphinx overwrote with one of its own, as its search page
    overwrote ``search.md``, or that no table of contents reaches)."""
    navigation = plain((site / "index.html").read_text(encoding="utf-8"))
    missing = []
    for page in sorted(source.glob("*.md")):
        built, title = site / f"{page.stem}.html", page_title(page)
        heading = re.search(r"<h1>(.*?)</h1>", built.read_text(encoding="utf-8"), re.S) if built.is_file() else None
        if heading is None or not plain(heading.group(1)).startswith(title) or (page.stem != "index" and title not in navigation):
            missing.append(f"{page.name}: {title!r}")
    return missing


def test_the_manual_builds_with_warnings_as_errors(tmp_path):
    result = sphinx_build(DOCS, tmp_path)
    assert result.returncode == 0, f"the manual does not build:\n{result.stderr[-8000:]}"
    site = tmp_path / "html"
    assert missing_titles(DOCS, site) == []
    reference = (site / "api" / "generated" / "topicbench.core.metrics.registry.html").read_text(encoding="utf-8")
    assert "MetricSpec" in reference
    metrics = (site / "metrics.html").read_text(encoding="utf-8")
    from topicbench.core.metrics.registry import METRICS
    for name in METRICS.names():
        assert f"<span class=\"pre\">{name}</span>" in metrics, f"the metrics table lacks {name}"


def test_every_registered_metric_has_its_formula_and_reference():
    page = (DOCS / "metrics.md").read_text(encoding="utf-8")
    formulas = page.split("## Formulas and references", 1)[1]
    from topicbench.core.metrics.registry import METRICS
    headed = {line.strip("#` ").strip() for line in formulas.splitlines() if line.startswith("#### ")}
    assert headed == set(METRICS.names())


@pytest.mark.parametrize("page, error", [
    ("See {py:func}`topicbench.core.no_such_function`.\n", "reference target not found"),
    ("See {py:class}`NoSuchClassAnywhere`.\n", "reference target not found"),
    ("```{toctree}\nno-such-page\n```\n", "nonexisting document"),
])
def test_a_broken_reference_or_missing_page_fails_the_build(tmp_path, page, error):
    source = tmp_path / "source"
    source.mkdir()
    _write_manual_config(source)
    (source / "index.md").write_text("# Test\n\n" + page, encoding="utf-8")
    result = sphinx_build(source, tmp_path / "out")
    assert result.returncode != 0 and error in result.stderr, result.stderr[-3000:]


def _write_manual_config(source: Path) -> None:
    """The manual's own Sphinx configuration (conf.py, templates) for a project in ``source``."""
    (source / "conf.py").write_text(
        "import runpy\n"
        f"globals().update({{k: v for k, v in runpy.run_path({str(DOCS / 'conf.py')!r}).items() if not k.startswith('__')}})\n"
        f"templates_path = [{str(DOCS / '_templates')!r}]\n",
        encoding="utf-8",
    )


def tiny_manual(source: Path, pages: dict) -> Path:
    """A project with the manual's configuration and these pages (name -> Markdown), all in the
    table of contents of its index."""
    source.mkdir()
    _write_manual_config(source)
    (source / "index.md").write_text("# Test\n\n```{toctree}\n" + "".join(f"{name}\n" for name in pages) + "```\n",
                                      encoding="utf-8")
    for name, text in pages.items():
        (source / f"{name}.md").write_text(text, encoding="utf-8")
    return source


@pytest.mark.parametrize("name", ["search", "genindex", "py-modindex"])
def test_a_page_named_like_one_sphinx_writes_itself_fails_the_build(tmp_path, name):
    source = tiny_manual(tmp_path / "source", {name: "# Choosing K and settings\n\nText.\n"})
    result = sphinx_build(source, tmp_path / "out")
    assert result.returncode != 0, result.stderr[-3000:]
    assert f"{name}.md: Sphinx writes its own {name}.html over this page" in result.stderr, result.stderr[-3000:]


def test_the_title_check_finds_a_page_sphinx_overwrote(tmp_path):
    """What the check of the real build would say had Sphinx written its search page over one of
    the manual's: the page's title is neither the built page's title nor in the navigation."""
    source = tiny_manual(tmp_path / "source", {"choosing": "# Choosing K and settings\n\nText.\n",
                                               "paper": "# The paper's `experiments`\n\nText.\n"})
    assert sphinx_build(source, tmp_path / "out").returncode == 0
    site = tmp_path / "out" / "html"
    assert missing_titles(source, site) == []
    (site / "choosing.html").write_text((site / "search.html").read_text(encoding="utf-8"), encoding="utf-8")
    (site / "index.html").write_text((site / "index.html").read_text(encoding="utf-8").replace("Choosing K", "Search"),
                                     encoding="utf-8")
    assert missing_titles(source, site) == ["choosing.md: 'Choosing K and settings'"]
