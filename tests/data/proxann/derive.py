"""The ProxAnn oracle's fixture: the columns of ProxAnn's released Bills data that the agreement
and alternative-annotator computations read, derived from the release and read back.

ProxAnn (Hoyle, Calvo-Bartolomé, Boyd-Graber and Resnik, ACL 2025; ``ahoho/proxann`` at 3583fa4,
MIT licence: see LICENSE beside this file) released 6 MB of study inputs, survey answers and LLM
answers; the tests need 40 kB of them, with no mirror and no network:

- ``documents.csv.gz``: per topic and evaluation document (``position``, order shown) the
  model's θ (``theta``) and ``assigned`` (1 when the topic is the document's main topic);
- ``people.csv.gz``: every survey response that reached the ranking page, per document its
  ``fit`` (1-5) and ``rank`` (1 = fits best, 1-8 with the distractor), and ``removed`` (ProxAnn's
  loose attention-check rule);
- ``llm_answers.csv.gz``: the released LLM proxies' answers, per LLM, seed, topic and document;
- ``coherences.csv.gz``: per-topic NPMI and C_V, as ProxAnn computed them;
- ``SOURCES.json``: the commit and the SHA-256 and size of every file read.

Rebuild (run from the repository root, after ``topicbench data fetch proxann`` or with a
checkout)::

    .venv/bin/python tests/data/proxann/derive.py RELEASE_FOLDER

The tests load this file by path (``tests/proxann_release.py``) and check that the
fixture equals what it derives from the real files when those are present.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
TABLES = ("documents", "people", "llm_answers", "coherences")
SOURCES = "SOURCES.json"
#: Columns kept of each table, in this order (and the rows sorted by all key columns).
COLUMNS = {
    "documents": ("topic", "position", "theta", "assigned"),
    "people": ("topic", "response", "position", "fit", "rank", "removed"),
    "llm_answers": ("llm", "seed", "topic", "position", "fit", "rank"),
    "coherences": ("topic", "npmi", "cv"),
}
KEYS = {"documents": ("topic", "position"), "people": ("topic", "response", "position"),
        "llm_answers": ("llm", "seed", "topic", "position"), "coherences": ("topic",)}


def derive_tables(release) -> dict:
    """{table name: DataFrame} of the fixture, from the release folder ``release``."""
    from topicbench.core.proxann_data import (read_coherences, read_human_responses, read_llm_answers,
                                              read_study_inputs)
    from topicbench.core.proxann_release import COHERENCES, HUMAN_RESPONSES, LLM_ANSWER_FILES, LLM_ANSWERS, STUDY_INPUTS

    release = Path(release)
    study = read_study_inputs([release / path for path in STUDY_INPUTS])
    llms = sorted({llm for llm, *_ in LLM_ANSWER_FILES})
    tables = {
        "documents": study.evaluation_documents(),
        "people": read_human_responses(release / HUMAN_RESPONSES, study),
        "llm_answers": pd.concat([read_llm_answers(release / LLM_ANSWERS / llm) for llm in llms]),
        "coherences": read_coherences(release / COHERENCES),
    }
    tables["coherences"] = tables["coherences"][tables["coherences"]["topic"].isin(study.topics["topic"])]
    return {name: _ordered(name, table) for name, table in tables.items()}


def _ordered(name: str, table: pd.DataFrame) -> pd.DataFrame:
    kept = table[list(COLUMNS[name])].sort_values(list(KEYS[name]), kind="stable").reset_index(drop=True)
    if "removed" in kept:
        kept["removed"] = kept["removed"].astype(int)  # 0/1 reads back as it was written
    return kept


def csv_text(table: pd.DataFrame) -> str:
    """The table as CSV text: floats in their shortest round-trip form, Unix line ends."""
    return table.to_csv(index=False, lineterminator="\n")


def source_checksums(release) -> dict:
    """What the fixture was derived from: the commit and every pinned file's SHA-256 and size,
    as found in ``release`` (a file that differs from its pin is refused)."""
    from topicbench.core.proxann_release import PROXANN_COMMIT, release_files

    found = {}
    for path, pinned, _ in release_files():
        data = (Path(release) / path).read_bytes()
        found[path] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        if found[path]["sha256"] != pinned:  # the fixture stands for the pinned release only
            raise ValueError(f"{Path(release) / path} has SHA-256 {found[path]['sha256']}, not the pinned {pinned}")
    return {"repository": "ahoho/proxann", "commit": PROXANN_COMMIT, "files": found}


def write_fixture(release, out=HERE) -> list:
    """Derive the fixture from ``release`` into ``out``; returns the paths written.

    The gzip streams carry no name and no time, so that a rebuild from the same files writes the
    same bytes (with the same zlib)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, table in derive_tables(release).items():
        path = out / f"{name}.csv.gz"
        with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                                    compresslevel=9) as stream:
            stream.write(csv_text(table).encode("utf-8"))
        written.append(path)
    sources = out / SOURCES
    sources.write_text(json.dumps(source_checksums(release), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return written + [sources]


def fixture_text(name: str, folder=HERE) -> str:
    """The CSV text of the fixture's table ``name``, decompressed."""
    return gzip.decompress((Path(folder) / f"{name}.csv.gz").read_bytes()).decode("utf-8")


def read_fixture(folder=HERE) -> dict:
    """The fixture's tables, as the agreement computations take them: ``documents``,
    ``people`` (every response, ``removed`` a bool), ``llm_answers`` (one table of all LLMs),
    ``coherences``."""
    tables = {name: pd.read_csv(io.StringIO(fixture_text(name, folder)))
              for name in TABLES}
    tables["people"]["removed"] = tables["people"]["removed"].astype(bool)
    return tables


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Derive the ProxAnn oracle's fixture from the release.")
    parser.add_argument("release", help="a folder holding ProxAnn's data/ (a checkout, or the fetched proxann dataset)")
    parser.add_argument("--out", default=str(HERE), help="where to write the fixture (default: beside this script)")
    args = parser.parse_args(argv)
    for path in write_fixture(args.release, args.out):
        print(f"{path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
