"""Reference figures of spec §5 on the paper's corpora in ../shared/data (raw_umass, kappa = 2)."""

from __future__ import annotations

import math

import pytest

from conftest import F_RELATIVE_TOLERANCE, require_shared_data
from topicbench.core.elda.generators import keyword_candidates
from topicbench.core.elda.greedy import fast_greedy
from topicbench.core.io import load_corpus
from topicbench.core.preprocess import PreprocessConfig

# corpus: (documents, vocabulary, tokens, F) from the spec's table (§5)
REFERENCE = {
    "congress": (3_852, 13_857, 574_121, -2_798_524.681983),
    "20ng_politics": (1_575, 20_254, 359_748, -1_773_191.100469),
}


@pytest.mark.shared_data
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_reference_log_posterior(name):
    root = require_shared_data(name)
    n_docs, n_words, n_tokens, reference_f = REFERENCE[name]
    corpus = load_corpus(root / name, PreprocessConfig(preprocessed=True))
    assert (corpus.n_documents, corpus.n_words, corpus.n_tokens) == (n_docs, n_words, n_tokens)
    assert corpus.dropped_documents == ()
    candidates = keyword_candidates(corpus, "raw_umass")
    solution = fast_greedy(corpus, candidates, 2)
    assert solution.budget == 2 * n_docs
    assert all(len(topics) >= 1 for topics in solution.doc_topics)
    assert math.isclose(solution.log_posterior, reference_f, rel_tol=F_RELATIVE_TOLERANCE), (
        f"{name}: F = {solution.log_posterior:.6f}, reference {reference_f:.6f}"
    )
    assert math.isclose(solution.objective_trace[-1], solution.log_posterior, rel_tol=1e-9)
    # the kappa = 1 prefix is the FastInitialize solution: below the kappa = 2 one
    assert solution.prefix(1).log_posterior < solution.log_posterior


def test_missing_shared_data_skips_with_a_reason(tmp_path):
    with pytest.raises(pytest.skip.Exception, match=r"\.\./shared/data absent: .*does not exist"):
        require_shared_data(root=tmp_path / "no_such_folder")
    (tmp_path / "data").mkdir()
    with pytest.raises(pytest.skip.Exception, match=r"\.\./shared/data absent: .*congress.*corpus\.tsv is missing"):
        require_shared_data("congress", root=tmp_path / "data")


def test_shared_data_fixture_points_next_to_the_repository(SHARED_DATA):
    from pathlib import Path

    repository = Path(__file__).resolve().parents[2]
    assert SHARED_DATA == repository.parent / "shared" / "data"
