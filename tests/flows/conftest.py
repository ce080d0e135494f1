"""Flows run under a temporary Prefect server and write to temporary MLflow stores."""

from __future__ import annotations

import os

import pytest

from topicbench.baselines.base import TopicModel
from topicbench.baselines.registry import MODELS


class AlwaysFails(TopicModel):
    """A model whose fit raises: used to check failure isolation."""

    name = "always_fails"
    defaults = {}

    def _fit(self, corpus, num_topics, seed):
        raise RuntimeError("injected failure for the test")


if "always_fails" not in MODELS:
    MODELS.register("always_fails", AlwaysFails)


@pytest.fixture(scope="session", autouse=True)
def prefect_server(tmp_path_factory):
    os.environ["PREFECT_HOME"] = str(tmp_path_factory.mktemp("prefect_home"))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


@pytest.fixture
def tiny_octis(tmp_path):
    topics = [
        "budget tax spending deficit revenue cut economy jobs",
        "war troops iraq military soldiers defense security army",
        "school teacher education student college learning class",
        "health care hospital doctor patient insurance medicine",
    ]
    import random

    rng = random.Random(0)
    lines = []
    for d in range(40):
        words = topics[d % 4].split() * 2 + topics[(d + 1) % 4].split()[:2]
        rng.shuffle(words)
        lines.append(" ".join(words) + "\ttrain\n")
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "corpus.tsv").write_text("".join(lines))
    return folder
