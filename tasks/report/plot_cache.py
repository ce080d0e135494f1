"""Plots already drawn, kept in the report's folder: an unchanged report redraws nothing.

A plot is a pure function of its request (the :class:`~.parts.Plot`'s file name and drawing
function with its arguments), the run table, the models' order (their colours and markers) and
the code that draws it. :class:`PlotCache` keys each drawing by all four, and keeps what was
drawn (a PNG's bytes, an interactive figure's HTML) under ``.plot-cache/`` in the report folder.
Writing the same report again (``topicbench report`` after ``topicbench run``, a rerun that
finished no new run) copies those bytes instead of importing matplotlib and Plotly and drawing
again, so the files are the same bytes a drawing would give. Entries no plot of the latest report
used are removed, so the folder holds one report's plots.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
from pathlib import Path

import pandas as pd

from topicbench.core.io import replaced_atomically

logger = logging.getLogger(__name__)

#: The cache's folder inside the report folder.
CACHE_FOLDER = ".plot-cache"
#: The report's drawing modules (beside this one), whose code every drawing may run.
DRAWING_MODULES = ("plots.py", "interactive.py")


def run_table_digest(runs: pd.DataFrame) -> str:
    """A digest of the run table's content: its columns, index and every value (floats at full
    precision; list cells, such as training curves, by their text)."""
    text = runs.to_csv(index=True, float_format=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def describe_drawing(draw) -> str | None:
    """The drawing function and the arguments bound to it (a :func:`functools.partial`), as text,
    with a digest of the source file that defines it (an edited plot draws again); None for a
    drawing that reads data of its own (a lambda, a closure, an argument shown without its
    content), which is drawn every time."""
    arguments = ""
    while isinstance(draw, functools.partial):
        arguments += repr(draw.args) + repr(sorted(draw.keywords.items()))
        draw = draw.func
    qualname = getattr(draw, "__qualname__", "<unknown>")
    if "<" in qualname or getattr(draw, "__closure__", None) or " at 0x" in arguments:
        return None
    return f"{draw.__module__}.{qualname}{arguments}@{_source_digest(draw)}"


@functools.lru_cache(maxsize=None)
def _file_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _source_digest(function) -> str:
    try:
        source = inspect.getsourcefile(function)
    except TypeError:  # a built-in: no source of ours
        return ""
    return _file_digest(source) if source else ""


class PlotCache:
    """Drawings of one report folder, keyed by what they are drawn from.

    Parameters
    ----------
    folder : path
        The report folder (the cache is its ``.plot-cache/``).
    runs : pandas.DataFrame
        The run table every plot of the report is drawn from.
    models : sequence of str
        The models in the report's order (each model's style).
    """

    def __init__(self, folder, runs: pd.DataFrame, models):
        self.folder = Path(folder) / CACHE_FOLDER
        # the drawing modules' own code too: a drawing function calls their helpers (styles, axes)
        shared_code = ",".join(_file_digest(str(Path(__file__).with_name(name))) for name in DRAWING_MODULES)
        self._common = f"{run_table_digest(runs)}|{tuple(models)!r}|{_library_versions()}|{shared_code}"
        self._used: set[str] = set()

    def key(self, plot, kind: str, extra: str = "") -> str | None:
        """The file name of ``plot``'s drawing of ``kind`` ("png" or "html"; ``extra``: anything
        else the drawing reads, such as the figure's element id); None for a drawing not kept
        (:func:`describe_drawing`)."""
        drawing = describe_drawing(plot.draw if kind == "png" else plot.interactive)
        if drawing is None:
            return None
        text = f"{kind}|{plot.file_name}|{drawing}|{extra}|{self._common}"
        return f"{hashlib.sha256(text.encode('utf-8')).hexdigest()}.{kind}"

    def get(self, key: str) -> bytes | None:
        """The kept drawing, or None when there is none (or it cannot be read)."""
        self._used.add(key)
        try:
            return (self.folder / key).read_bytes()
        except OSError:
            return None

    def put(self, key: str, content: bytes) -> None:
        """Keep a drawing; a cache that cannot be written is only slower, never an error."""
        self._used.add(key)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with replaced_atomically(self.folder / key, "plot cache entry") as temporary:
                Path(temporary).write_bytes(content)
        except OSError as error:
            logger.info("plot cache %s not written: %s", self.folder, error)

    def prune(self) -> None:
        """Remove the drawings this report did not use (plots of earlier run tables)."""
        if not self.folder.is_dir():
            return
        for entry in self.folder.iterdir():
            if entry.name not in self._used and entry.suffix in (".png", ".html"):
                entry.unlink(missing_ok=True)


def _library_versions() -> str:
    """The drawing libraries' versions (their output may change with them), read without importing them."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("matplotlib", "plotly"):
        try:
            found.append(f"{name}={version(name)}")
        except PackageNotFoundError:
            found.append(f"{name}=absent")
    return ",".join(found)
