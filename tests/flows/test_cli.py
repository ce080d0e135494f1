"""The `topicbench elda` command: summary, JSON output and clear errors."""

import json

import pytest

from topicbench.flows.cli.main import main


@pytest.fixture
def octis_folder(tmp_path):
    docs = [
        "budget tax cut budget",
        "tax cut vote budget",
        "war troops iraq vote",
        "iraq war troops budget",
        "school teacher education",
        "education school budget teacher",
    ]
    (tmp_path / "corpus.tsv").write_text("".join(f"{d}\ttrain\n" for d in docs))
    return tmp_path


def test_elda_prints_a_summary_and_writes_json(octis_folder, tmp_path, capsys):
    out = tmp_path / "out" / "result.json"
    code = main(["elda", "--corpus", str(octis_folder), "--preprocessed", "--kappa", "2", "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "log posterior F =" in printed and "12 links" in printed
    result = json.loads(out.read_text())
    assert result["num_links"] == 12
    assert result["num_documents"] == 6
    assert result["num_topics_used"] == len(result["topics"]) >= 1
    assert sum(t["documents"] for t in result["topics"]) == 12
    assert all(set(t) >= {"label", "top_words", "documents"} for t in result["topics"])
    assert result["log_posterior"] == pytest.approx(result["objective_trace"][-1], rel=1e-12)
    assert result["corpus"]["fingerprint"]


def test_elda_writes_parquet(octis_folder, tmp_path):
    import pandas as pd

    folder = tmp_path / "parquet"
    assert main(["elda", "--corpus", str(octis_folder), "--preprocessed", "--parquet", str(folder)]) == 0
    links = pd.read_parquet(folder / "links.parquet")
    assert len(links) == 12 and list(links["order"]) == list(range(12))
    tokens = pd.read_parquet(folder / "token_topics.parquet")
    assert len(tokens) == 23


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--kappa", "0.5"], "--kappa: must be a number >= 1"),
        (["--kappa", "7"], "larger than documents x topics"),
    ],
)
def test_elda_bad_input_is_a_clear_error(octis_folder, capsys, arguments, message):
    code = main(["elda", "--corpus", str(octis_folder), "--preprocessed", *arguments])
    assert code == 2
    assert message in capsys.readouterr().err


def test_elda_missing_corpus_is_a_clear_error(tmp_path, capsys):
    assert main(["elda", "--corpus", str(tmp_path / "nowhere")]) == 2
    assert "corpus not found" in capsys.readouterr().err


def test_elda_runs_on_the_builtin_corpus(capsys):
    assert main(["elda", "--kappa", "1.5", "--top", "3"]) == 0
    printed = capsys.readouterr().out
    assert "E-LDA on lee: 300 documents" in printed
    assert printed.count("docs:") == 3


@pytest.mark.slow
def test_elda_parallel_on_a_local_dask_cluster(octis_folder, tmp_path, capsys):
    out = tmp_path / "parallel.json"
    code = main(["elda", "--corpus", str(octis_folder), "--preprocessed", "--algorithm", "parallel",
                 "--workers", "1", "--epsilon", "0.2", "--json", str(out)])
    assert code == 0
    result = json.loads(out.read_text())
    assert result["algorithm"] == "parallel"
    assert result["num_links"] == 12
    assert result["adaptive_rounds"] >= 2 and result["gain_evaluations"] > 0
    assert "adaptive rounds" in capsys.readouterr().out


def test_an_error_quoting_megabytes_of_input_ends_in_one_short_line(tmp_path, capsys):
    """Issue 46: a malformed file's content quoted by an error is cut, with the count left out."""
    from topicbench.flows.cli.main import MAX_ERROR_CHARACTERS, capped

    assert capped("short") == "short"
    long = capped("x" * 5_000_000)
    assert len(long) < MAX_ERROR_CHARACTERS + 80 and long.endswith("(4,999,000 more characters not shown)")
