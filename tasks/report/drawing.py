"""The report's PNG plots drawn in worker processes while the report process does the rest.

matplotlib's drawing is most of a report's writing (on 90 runs, seven figures: about twice the
time of every interactive figure and the two pages together), and each figure is a pure function
of its request and the run table. So :class:`PngDrawing` hands the figures that are not in the
plot cache to forked worker processes as soon as the sections are built; the report process
meanwhile makes the interactive figures (Plotly) and collects the PNGs before it renders the
pages, which name only the plots that drew something. A forked worker imports matplotlib in
place of the report process, so one worker costs no CPU over drawing in turn; a second (for
many figures, on a machine with the cores) pays matplotlib's import once more for half the wall.

A plot whose drawing cannot be sent to a worker (a lambda or closure: the cache's
:func:`~.plot_cache.describe_drawing` says None), and any figure whose worker failed, is drawn here,
in the report process, as before: a drawing's own error is raised from the same call as ever.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys

import pandas as pd

from .plot_cache import describe_drawing

logger = logging.getLogger(__name__)

#: Figures per worker process: a worker pays matplotlib's import (about 0.5 s of CPU), so a
#: report of a few figures gets one worker and the report process none of that import.
FIGURES_PER_WORKER = 4


def _forking() -> bool:
    """Whether workers can be forked (Linux): they then start with the report's modules imported.
    Elsewhere (macOS, Windows: spawned workers would import everything again) figures are drawn
    in turn."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def worker_count(figures: int, cores: int | None = None) -> int:
    """Workers for ``figures`` figures to draw: one per :data:`FIGURES_PER_WORKER` (rounded up),
    at most the machine's cores; none for none."""
    cores = cores if cores is not None else (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                                             else os.cpu_count() or 1)
    return min(-(-figures // FIGURES_PER_WORKER), max(cores, 1))


class PngDrawing:
    """PNG bytes of every plot of ``plots`` (a list of :class:`~.parts.Plot`), from the plot
    cache where it holds them, else drawn by ``drawn_png(plot, runs, styles)`` (a module-level
    function: :func:`.plots.drawn_png`, passed in since that module uses this one): in worker
    processes, started here, or in this process by :meth:`content`.

    Use as a context manager (the workers are shut down on leaving it)."""

    def __init__(self, plots, runs: pd.DataFrame, styles: dict, cache=None, *, drawn_png, parallel: bool = True):
        self._draw_here = drawn_png
        self._plots, self._runs, self._styles, self._cache = list(plots), runs, styles, cache
        self._keys = [cache.key(plot, "png") if cache is not None else None for plot in self._plots]
        self._kept = [cache.get(key) if key is not None else None for key in self._keys]
        # only a drawing the cache can describe is a module-level function with plain arguments: picklable
        sendable = [number for number, plot in enumerate(self._plots)
                    if self._kept[number] is None and describe_drawing(plot.draw) is not None]
        self._pool, self._futures = None, {}
        workers = worker_count(len(sendable)) if parallel and sendable and _forking() else 0
        if workers:
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
            # the largest run table is sent once per figure (pickled: 90 runs are about 1 MB)
            self._futures = {number: self._pool.submit(drawn_png, self._plots[number], runs, styles)
                             for number in sendable}

    def __enter__(self) -> "PngDrawing":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def content(self, number: int) -> bytes:
        """The PNG bytes of plot ``number`` (empty: nothing to draw), kept in the cache when drawn."""
        if self._kept[number] is not None:
            return self._kept[number]
        content = None
        future = self._futures.pop(number, None)
        if future is not None:
            try:
                content = future.result()
            except Exception as error:  # noqa: BLE001 - drawn here instead, where its own error (if any) is raised
                logger.debug("plot %s: drawn in the report process (worker: %s)", self._plots[number].file_name, error)
        if content is None:
            content = self._draw_here(self._plots[number], self._runs, self._styles)
        if self._keys[number] is not None:
            self._cache.put(self._keys[number], content)
        self._kept[number] = content
        return content
