"""A result bundle's ``scores.jsonl``: every fit's tracked numbers as one small, sorted text file,
so that ``git diff`` of a committed bundle reads as a change of results (as MTEB keeps one small
text result per model and task), where the Parquet tables and archives are binary.

One JSON object a line for each row of the ``scores`` table (a fit and one of its tracked metrics):
``corpus``, ``model`` (its label), ``seed``, ``run_key``, ``score`` (the score key: ``npmi@10``,
``fit_seconds``) and ``value``, rounded as the report shows it (:func:`shown_number`: 0.272,
2585, -1.32e8; a NaN or infinity ``null``). Lines are sorted by (corpus, model, seed, run key,
score), keys sorted, ASCII only (``ensure_ascii``: a U+2028 in a label cannot break a line),
each ending in ``"\\n"``; the same tables give the same bytes.

:func:`write_scores_file` writes it at export (the manifest lists it as ``scores_file``: its lines
and SHA-256); :func:`add_scores_file` derives it from a bundle's own tables, with no store and no
refit, for a bundle exported before the file existed. Nothing reads it back: an import and a report
read the tables, so a bundle without it (format 1, or format 2 exported before it) works as ever.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pandas as pd

from topicbench.core.io import replaced_atomically, write_text_atomically

from topicbench.tasks.results.bundle_tables import MANIFEST, manifest_text, read_tables

SCORES_FILE = "scores.jsonl"
#: The manifest's entry for the file: {"file", "lines", "sha256"}.
SCORES_MANIFEST_KEY = "scores_file"
#: Significant digits kept: the report's (``topicbench.tasks.report.render.DIGITS``, a room above
#: this one; a test holds the two equal), by the same rule (its ``format_number``).
SHOWN_DIGITS = 3
#: The fields a line is sorted by, in order (its value last breaks any tie).
LINE_ORDER = ("corpus", "model", "seed", "run_key", "score")


def shown_number(value, digits: int = SHOWN_DIGITS) -> str:
    """``value`` as JSON number text to ``digits`` significant digits, its integer part whole, as
    the report rounds it (2585.3 -> ``2585``, 0.27216 -> ``0.272``, -132196234.5 -> ``-1.32e8``),
    less trailing zeros (0.5 -> ``0.5``, not ``0.500``); ``null`` for a NaN or an infinity."""
    value = float(value)
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"
    if 1e-4 <= abs(value) < 1e6:
        decimals = max(digits - 1 - math.floor(math.log10(abs(value))), 0)
        return _without_trailing_zeros(f"{value:.{decimals}f}")
    mantissa, _, exponent = f"{value:.{digits - 1}e}".partition("e")
    return f"{_without_trailing_zeros(mantissa)}e{int(exponent)}"


def _without_trailing_zeros(text: str) -> str:
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def score_records(tables: dict) -> list[dict]:
    """One record per row of the bundle's ``scores`` table, with its fit's corpus, model label,
    seed and run key (from ``runs``; None where a score's run is not there), in :data:`LINE_ORDER`."""
    fits = {run["run_id"]: {"corpus": _text(run["corpus"]), "model": _text(run["model"]),
                            "seed": int(run["seed"]), "run_key": _text(run["run_key"])}
            for run in tables["runs"].to_dict("records")}
    unknown = dict.fromkeys(("corpus", "model", "seed", "run_key"))
    scores = tables["scores"]
    records = [{**fits.get(run_id, unknown), "score": _text(score), "value": float(value)}
               for run_id, score, value in zip(scores.run_id, scores.score, scores.value)]
    return sorted(records, key=_line_order)


def _line_order(record: dict) -> tuple:
    """Sorts by :data:`LINE_ORDER` (a missing field first), then by the shown value."""
    fields = tuple((record[key] is not None, "" if record[key] is None else record[key]) for key in LINE_ORDER)
    return (*fields, shown_number(record["value"]))


def _text(value):
    return None if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA else str(value)


def score_line(record: dict) -> str:
    """One line of ``scores.jsonl``: the record's fields as JSON (keys sorted, ASCII only), its value
    as :func:`shown_number` writes it, and ``"\\n"``."""
    fields = {key: json.dumps(value, ensure_ascii=True) for key, value in record.items() if key != "value"}
    fields["value"] = shown_number(record["value"])
    return "{" + ", ".join(f"{json.dumps(key)}: {fields[key]}" for key in sorted(fields)) + "}\n"


def scores_file_bytes(tables: dict) -> bytes:
    """The bytes of ``scores.jsonl`` for the bundle ``tables`` (only ``runs`` and ``scores`` are read)."""
    return "".join(score_line(record) for record in score_records(tables)).encode("ascii")


def write_scores_file(folder, tables: dict) -> dict:
    """``<folder>/scores.jsonl`` from ``tables``, written atomically; its manifest entry
    ({"file", "lines", "sha256"})."""
    data = scores_file_bytes(tables)
    with replaced_atomically(Path(folder) / SCORES_FILE, "bundle scores") as temporary:
        temporary.write_bytes(data)  # bytes: "\n" on every system
    return {"file": SCORES_FILE, "lines": data.count(b"\n"), "sha256": hashlib.sha256(data).hexdigest()}


def add_scores_file(folder) -> dict:
    """Give the bundle in ``folder`` (format 2: with tables) the ``scores.jsonl`` its tables give, and
    its manifest the entry for it (the rest of the manifest unchanged); the entry. No store is read
    and nothing is fitted; a bundle that has the file already gets the same bytes again."""
    path = Path(folder) / MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8"))
    entry = write_scores_file(folder, read_tables(folder, names=("runs", "scores")))
    if manifest.get(SCORES_MANIFEST_KEY) != entry:
        write_text_atomically(path, manifest_text({**manifest, SCORES_MANIFEST_KEY: entry}), "bundle manifest")
    return entry
