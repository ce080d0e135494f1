"""The manual's examples run (docs/*.md).

Every fenced ``python`` block of a page runs, the page's blocks in order as one session, in a fresh
interpreter in a temporary folder; every fenced ``bash`` block runs line by line (a ``\\`` joins
lines; ``.venv/bin/`` is this checkout's virtualenv). A block whose first line is the comment
``# not run by the tests: REASON`` is shown and not run: a long run, a server, data the tests do
not have. The reason is in the block, so a reader sees it too.

The README is the front door: it links every page of the manual and names every command of
``topicbench`` (read from the parser itself), in under 200 lines.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
RUN_LANGUAGES = ("python", "bash")
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
NOT_RUN = re.compile(r"\A\s*# not run by the tests: (\S.*)")


def blocks(page: Path) -> list[tuple[str, str]]:
    """(language, code) of each fenced block of a page, in order."""
    return [(language, code) for language, code in FENCE.findall(page.read_text(encoding="utf-8"))]


def runnable(page: Path, language: str) -> list[str]:
    return [code for lang, code in blocks(page) if lang == language and not NOT_RUN.match(code)]


def environment() -> dict:
    env = dict(os.environ, PREFECT_SERVER_ANALYTICS_ENABLED="false", PYTHONUNBUFFERED="1")
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def commands(code: str) -> list[list[str]]:
    """The command lines of a bash block, continuations joined, comments dropped."""
    lines, current = [], ""
    for line in code.splitlines():
        current += line.rstrip()
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        arguments = shlex.split(current, comments=True)
        if arguments:
            lines.append(arguments)
        current = ""
    return lines


def test_the_manual_has_examples_that_run_and_says_why_others_do_not():
    run = not_run = 0
    for page in PAGES:
        for language, code in blocks(page):
            if language not in RUN_LANGUAGES:
                continue
            reason = NOT_RUN.match(code)
            if reason:
                assert len(reason.group(1)) > 10, f"{page.name}: say why a block is not run: {code[:80]!r}"
                not_run += 1
            else:
                run += 1
    assert run >= 5 and not_run >= 1, (run, not_run)


PYTHON_PAGES = [page for page in PAGES if runnable(page, "python")]


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=[page.stem for page in PYTHON_PAGES])
def test_the_python_blocks_of_a_page_run(page, tmp_path):
    script = "\n\n".join(runnable(page, "python"))
    (tmp_path / "example.py").write_text(script, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(tmp_path / "example.py")], cwd=tmp_path, env=environment(),
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, f"{page.name}'s Python examples failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"


BASH_BLOCKS = [(page, i, code) for page in PAGES for i, code in enumerate(runnable(page, "bash"))]


@pytest.mark.parametrize("page, index, code", BASH_BLOCKS, ids=[f"{p.stem}-{i}" for p, i, _ in BASH_BLOCKS])
def test_the_shell_blocks_of_a_page_run(page, index, code, tmp_path):
    for arguments in commands(code):
        if arguments[0].startswith(".venv/bin/"):
            arguments[0] = str(ROOT / arguments[0])
        result = subprocess.run(arguments, cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, (
            f"{page.name}, shell block {index}: {shlex.join(arguments)} exited {result.returncode}:\n"
            f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )


# ------------------------------------------------------------------------------------------------
# The front door: README.md reaches every page of the manual and names every command.
# ------------------------------------------------------------------------------------------------

README = ROOT / "README.md"


def cli_commands() -> list[str]:
    """Every command of ``topicbench`` as typed: each top-level command, and each action of a
    command that has actions (``data list``, ``judge calibrate``, ...)."""
    import argparse

    from topicbench.flows.cli.main import build_parser

    def actions(parser) -> dict:
        found = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
        return dict(found[0].choices) if found else {}

    named = []
    for command, parser in actions(build_parser()).items():
        named.append(command)
        named += [f"{command} {action}" for action in actions(parser)]
    return named


def test_the_command_list_reads_the_parser():
    commands = cli_commands()
    assert {"run", "report", "paper", "elda", "leaderboard", "data fetch", "judge calibrate"} <= set(commands)


def test_the_readme_links_every_page_of_the_manual():
    readme = README.read_text(encoding="utf-8")
    pages = [f"docs/{page.name}" for page in PAGES] + ["docs/api/reference.rst"]
    assert [page for page in pages if f"]({page})" not in readme] == []


def test_the_readme_names_every_command():
    readme = README.read_text(encoding="utf-8")
    assert [command for command in cli_commands() if f"topicbench {command}" not in readme] == []


def test_the_readme_stays_a_front_door():
    assert len(README.read_text(encoding="utf-8").splitlines()) < 200
