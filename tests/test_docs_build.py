"""The manual builds with warnings as errors (broken references included), as CI builds it.

``docs/`` is built with Sphinx (``-W --keep-going -n``) into a temporary folder; a second, tiny
project with the manual's configuration shows that a broken reference or a page missing from the
table of contents does fail such a build.
"""

from __future__ import annotations

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


def test_the_manual_builds_with_warnings_as_errors(tmp_path):
    result = sphinx_build(DOCS, tmp_path)
    assert result.returncode == 0, f"the manual does not build:\n{result.stderr[-8000:]}"
    html = tmp_path / "html"
    for page in DOCS.glob("*.md"):
        assert (html / f"{page.stem}.html").is_file(), f"{page.name} is not in the built manual"
    reference = (html / "api" / "generated" / "topicbench.core.metrics.registry.html").read_text(encoding="utf-8")
    assert "MetricSpec" in reference
    metrics = (html / "metrics.html").read_text(encoding="utf-8")
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
    (source / "conf.py").write_text(
        "import runpy\n"
        f"globals().update({{k: v for k, v in runpy.run_path({str(DOCS / 'conf.py')!r}).items() if not k.startswith('__')}})\n"
        f"templates_path = [{str(DOCS / '_templates')!r}]\n",
        encoding="utf-8",
    )
    (source / "index.md").write_text("# Test\n\n" + page, encoding="utf-8")
    result = sphinx_build(source, tmp_path / "out")
    assert result.returncode != 0 and error in result.stderr, result.stderr[-3000:]
