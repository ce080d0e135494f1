"""A bundle's vocabularies, each kept once: the ``vocabularies`` table, not every fit's archive.

Every fit saves its vocabulary in ``output/output.json`` (10,000 to 25,000 words), and every fit of
one corpus has the same one: in the paper's bundle they were 8.6 of its 27 MB. From format 3 an
export keeps each distinct vocabulary once, a row of the table ``vocabularies`` (``vocabulary``:
the SHA-256 of its words as JSON; ``words``: the words as a JSON list, which compresses to half what
a row per word does), and each archive's ``output.json`` holds
in its place a reference: ``{"bundle_vocabulary": <that SHA-256>, "sha256": <the file's own>}``.
An import puts the words back before the store is touched (:func:`restore_vocabularies`), and the
file must then be the very bytes it was (its SHA-256): a run imported from a bundle has the
artifacts it had. A file that would not come back byte for byte (written by hand, not by
:meth:`~topicbench.core.output.TopicModelOutput.save`) travels whole.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd

from topicbench.tasks.results.bundle_files import BundleError

#: The file of a fit's artifacts that holds its vocabulary.
OUTPUT_JSON = Path("output") / "output.json"
#: The key of the reference that stands for the words in a bundle's ``output.json``.
REFERENCE_KEY = "bundle_vocabulary"


def _dumped(meta: dict) -> bytes:
    """As :meth:`~topicbench.core.output.TopicModelOutput.save` writes ``output.json``."""
    return json.dumps(meta, indent=1).encode("utf-8")


def split_vocabulary(data: bytes) -> tuple | None:
    """(``output.json``'s bytes with its vocabulary replaced by a reference, the vocabulary's id,
    its words); None where the file holds no list of words or would not come back byte for byte."""
    try:
        meta = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    words = meta.get("vocabulary") if isinstance(meta, dict) else None
    if not isinstance(words, list) or not all(isinstance(word, str) for word in words) or _dumped(meta) != data:
        return None
    vocabulary = hashlib.sha256(json.dumps(words, ensure_ascii=False).encode("utf-8")).hexdigest()
    # the key keeps its place in the object: the restored file is the same bytes
    reference = {REFERENCE_KEY: vocabulary, "sha256": hashlib.sha256(data).hexdigest()}
    return _dumped({**meta, "vocabulary": reference}), vocabulary, words


def vocabularies_table(vocabularies: dict) -> pd.DataFrame:
    """The ``vocabularies`` table of {vocabulary id: words}, sorted (the same bytes every export)."""
    rows = [(vocabulary, json.dumps(vocabularies[vocabulary], ensure_ascii=False)) for vocabulary in sorted(vocabularies)]
    return pd.DataFrame(rows, columns=["vocabulary", "words"]).astype({"vocabulary": "str", "words": "str"})


def restore_vocabularies(folders: dict, table: pd.DataFrame | None) -> int:
    """Put the words back into each unpacked run's ``output/output.json`` that holds a reference
    (``folders``: {run id: its unpacked archive}); how many. A :class:`BundleError` where the
    table lacks the vocabulary or the restored file is not the one exported."""
    words, restored = None, 0
    for run_id, folder in folders.items():
        path = Path(folder) / OUTPUT_JSON
        if not path.is_file():
            continue
        data = path.read_bytes()
        if REFERENCE_KEY.encode() not in data:  # the file travelled whole
            continue
        try:
            meta = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as error:
            raise BundleError(f"run {run_id}: its {OUTPUT_JSON.as_posix()} is not JSON ({str(error)[:200]})") from None
        reference = meta.get("vocabulary") if isinstance(meta, dict) else None
        if not isinstance(reference, dict) or REFERENCE_KEY not in reference:
            continue
        if words is None:
            words = _vocabularies(table)
        found = words.get(reference[REFERENCE_KEY])
        if found is None:
            raise BundleError(f"run {run_id}: its {OUTPUT_JSON.as_posix()} names vocabulary "
                              f"{str(reference[REFERENCE_KEY])[:80]!r}, which the table vocabularies lacks; export the "
                              "bundle again, or copy it whole")
        whole = _dumped({**meta, "vocabulary": found})
        if hashlib.sha256(whole).hexdigest() != reference.get("sha256"):
            raise BundleError(f"run {run_id}: its {OUTPUT_JSON.as_posix()} with its vocabulary put back is not the file "
                              "exported (SHA-256); export the bundle again, or copy it whole")
        path.write_bytes(whole)
        restored += 1
    return restored


def _vocabularies(table: pd.DataFrame | None) -> dict:
    """{vocabulary id: its words} of the table; a row that is no list of words is left out (the
    runs naming it are then refused: the table lacks their vocabulary)."""
    found = {}
    for vocabulary, text in zip(table.vocabulary, table.words) if table is not None else ():
        try:
            words = json.loads(text)
        except (TypeError, ValueError, RecursionError):
            continue
        if isinstance(words, list):
            found[vocabulary] = words
    return found
