"""Shared fixtures and tolerances of the topicbench test suite.

``tests/`` has no ``__init__.py``: pytest puts this folder on ``sys.path``, so test modules import
the dense reference twins with ``import naive``.
"""

from __future__ import annotations

import os
import shutil
import string
import tempfile
from pathlib import Path

# A PREFECT_HOME of this test session's (of each pytest-xdist worker's), set before anything imports
# Prefect: a flow run without a server starts a temporary one on PREFECT_HOME's database, and two
# sessions (or workers) sharing ~/.prefect would migrate and lock one sqlite file together.
_SESSION_PREFECT_HOME = tempfile.mkdtemp(prefix="topicbench-tests-prefect-")
os.environ["PREFECT_HOME"] = _SESSION_PREFECT_HOME
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from topicbench.core.preprocess import corpus_from_token_lists  # noqa: E402

# ------------------------------------------------------------------------------------------------
# Exactness tolerances
# ------------------------------------------------------------------------------------------------

#: Reference log posteriors (spec §5) must be reproduced within this relative error.
F_RELATIVE_TOLERANCE = 1e-6

#: Objective values recomputed two ways (trace vs links, fast vs dense reference).
OBJECTIVE_RELATIVE_TOLERANCE = 1e-9

#: Link gains, fast vs dense reference: relative, with an absolute floor scaled by |beta| x tokens
#: of the document (a gain is a difference of sums of that size, so rounding is relative to it).
GAIN_RELATIVE_TOLERANCE = 1e-9

#: Candidate matrices, generator vs dense reference.
CANDIDATE_TOLERANCE = 1e-12

#: Two gains closer than this (relative to the document's |beta| x tokens) are a tie whose
#: outcome rounding may decide: the fast and the dense computation may then break it differently.
TIE_RELATIVE_TOLERANCE = 1e-13

#: beta = log(1e-100), the null topic's score (spec §1), restated independently of core.config.
BETA = float(np.log(1e-100))


# ------------------------------------------------------------------------------------------------
# ../shared/data
# ------------------------------------------------------------------------------------------------

#: ../shared/data relative to the repository root (the project never copies the corpora).
SHARED_DATA_PATH = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def require_shared_data(*names: str, root: Path | None = None) -> Path:
    """The shared data folder, or skip the test with the reason when it (or a corpus) is absent."""
    root = SHARED_DATA_PATH if root is None else Path(root)
    if not root.is_dir():
        pytest.skip(
            f"../shared/data absent: {root} does not exist (the benchmark corpora live outside "
            "the repository; check out ../shared next to it to run these tests)"
        )
    for name in names:
        if not (root / name / "corpus.tsv").is_file():
            pytest.skip(f"../shared/data absent: {root / name / 'corpus.tsv'} is missing")
    return root


@pytest.fixture(name="SHARED_DATA")
def shared_data_path() -> Path:
    """Path of ../shared/data relative to the repository root (may not exist: see
    :func:`require_shared_data`)."""
    return SHARED_DATA_PATH


@pytest.fixture
def shared_data() -> Path:
    """Path of ../shared/data; skips the test with a clear reason when the folder is missing."""
    return require_shared_data()


# ------------------------------------------------------------------------------------------------
# Small random corpora
# ------------------------------------------------------------------------------------------------


def word_list(n_words: int) -> list[str]:
    """n distinct lower-case words: 'aa', 'ab', ... (sortable, no stop words, no digits)."""
    letters = string.ascii_lowercase
    return [letters[i // 26] + letters[i % 26] for i in range(n_words)]


def random_token_lists(
    rng: np.random.Generator,
    *,
    n_documents=(5, 30),
    n_words=(5, 40),
    doc_length=(1, 30),
    skew: bool = True,
) -> list[list[str]]:
    """Random documents as word lists. Ranges are inclusive. With ``skew``, words are drawn from a
    Zipf-like distribution so that co-occurrence counts vary (and some words are rare)."""
    n_docs = int(rng.integers(n_documents[0], n_documents[1] + 1))
    vocab_size = int(rng.integers(n_words[0], n_words[1] + 1))
    words = word_list(vocab_size)
    if skew:
        weights = 1.0 / np.arange(1, vocab_size + 1) ** rng.uniform(0.3, 1.2)
        weights /= weights.sum()
    else:
        weights = None
    docs = []
    for _ in range(n_docs):
        length = int(rng.integers(doc_length[0], doc_length[1] + 1))
        docs.append([words[w] for w in rng.choice(vocab_size, size=length, p=weights)])
    return docs


def random_corpus(rng: np.random.Generator, **ranges):
    """A random :class:`Corpus` (vocabulary by frequency, as ``corpus_from_token_lists`` orders it)."""
    return corpus_from_token_lists(random_token_lists(rng, **ranges), name="random")


@pytest.fixture
def make_random_corpus():
    """Factory: ``make_random_corpus(seed, **ranges)`` -> a small random Corpus."""

    def make(seed: int, **ranges):
        return random_corpus(np.random.default_rng(seed), **ranges)

    return make


@pytest.fixture
def tiny_corpus():
    """Three documents over a, b, c (the hand-checked corpus of the E-LDA and generator tests).

    d0 = a a b, d1 = b c c, d2 = c; vocabulary fixed to (a, b, c).
    """
    return corpus_from_token_lists(
        [["a", "a", "b"], ["b", "c", "c"], ["c"]], vocabulary=["a", "b", "c"], name="tiny"
    )



@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):
    """A temporary Prefect server (and PREFECT_HOME) for the flow tests."""
    os.environ["PREFECT_HOME"] = str(tmp_path_factory.mktemp("prefect_home"))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


@pytest.fixture
def tiny_octis(tmp_path):
    """An OCTIS folder of 40 short documents over four themes (already preprocessed)."""
    import random

    themes = [
        "budget tax spending deficit revenue cut economy jobs",
        "war troops iraq military soldiers defense security army",
        "school teacher education student college learning class",
        "health care hospital doctor patient insurance medicine",
    ]
    rng = random.Random(0)
    lines = []
    for d in range(40):
        words = themes[d % 4].split() * 2 + themes[(d + 1) % 4].split()[:2]
        rng.shuffle(words)
        lines.append(" ".join(words) + "\ttrain\n")
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "corpus.tsv").write_text("".join(lines))
    return folder


def pytest_unconfigure(config):
    shutil.rmtree(_SESSION_PREFECT_HOME, ignore_errors=True)


# ------------------------------------------------------------------------------------------------
# Servers started once per session (tests/servers.py hands them on to the modules that ask)
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def session_llm_server(tmp_path_factory):
    """llama.cpp's server with SmolLM2: loading the model and its first completion take seconds to
    minutes at load, once for the four modules that ask it."""
    from servers import running_llm_server

    with running_llm_server(tmp_path_factory.mktemp("llm")) as server:
        yield server


@pytest.fixture(scope="session")
def session_postgres_server():
    from servers import running_postgres

    with running_postgres() as server:
        yield server


@pytest.fixture(scope="session")
def session_prefect_api(tmp_path_factory):
    from servers import running_prefect_server

    with running_prefect_server(tmp_path_factory.mktemp("prefect-server")) as server:
        yield server


# ------------------------------------------------------------------------------------------------
# Order under pytest-xdist
# ------------------------------------------------------------------------------------------------

#: The modules that take minutes (the slowest first, from `--durations` of whole-suite runs).
#: Under pytest-xdist (scripts/test.sh: --dist loadfile) they are handed out first, so that none
#: starts last and leaves one worker running alone at the end; a serial run keeps pytest's order.
LONG_MODULES = (
    "tests/flows/test_llm_judge_server.py", "tests/test_docs_build.py", "tests/core/test_precompile.py",
    "tests/flows/test_exit_paths.py", "tests/flows/test_store_outages.py", "tests/flows/test_search.py",
    "tests/core/test_greedy_chains.py", "tests/flows/test_judge_proxann.py", "tests/test_docs_examples.py",
    "tests/baselines/test_topic_recovery.py", "tests/baselines/test_baselines_contract.py",
    "tests/baselines/test_topicgpt_server.py", "tests/flows/test_model_plugin_run.py", "tests/flows/test_data.py",
    "tests/tasks/test_llm_documents_server.py", "tests/flows/test_console_run.py", "tests/flows/test_run_claims.py",
    "tests/flows/test_hostile_judges.py", "tests/flows/test_benchmark.py", "tests/flows/test_team_servers.py",
)


def pytest_collection_modifyitems(config, items):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rank = {module: index for index, module in enumerate(LONG_MODULES)}
    # stable: within a module (and among the rest) pytest's order is kept; every worker sorts alike
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
