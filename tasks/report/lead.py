"""The report's opening lines: what it rests on (runs, corpora, models, seeds, failures), when and
by which command it was made, and what is not finished yet, named, so a partial report says so."""

from __future__ import annotations

from .tables import run_status

#: What a RUNNING run is: a benchmark claims every run before its workers reach them.
CLAIMED = "claimed by a benchmark still running (fitting or queued)"


def _counted(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def config_fits_finished(done, config: dict) -> int:
    """How many of the config's (corpus, model, seed) fits the finished runs hold (a store or bundle
    may hold other runs too, e.g. a piece's bundle holds every earlier piece's)."""
    corpora = {c["name"] for c in config.get("corpora", [])}
    models = {m.get("label") or m["model"] for m in config.get("models", [])}
    seeds = set(config.get("seeds") or ())
    mine = done[done.corpus.isin(corpora) & done.model.isin(models) & done.seed.isin(seeds)]
    return len(mine[["corpus", "model", "seed"]].drop_duplicates())


def report_lead(data) -> tuple:
    """The lines at the top of the report of ``data`` (its
    :class:`~topicbench.tasks.report.parts.ReportData`): what the report rests on, when and how it
    was made, and what is not finished yet (named, so that a partial report says so)."""
    done = data.finished
    config = data.config or {}
    status = run_status(data.runs, [c["name"] for c in config.get("corpora", [])],
                        [m.get("label") or m["model"] for m in config.get("models", [])], config.get("seeds"))
    lines = [
        f"{status.finished} finished runs ({_counted(done.corpus.nunique(), 'corpus', 'corpora')}, "
        f"{_counted(done.model.nunique(), 'model', 'models')}, "
        f"seeds {sorted(done.seed.unique().tolist())}); {status.failed} failed"
        + (f", {status.interrupted} interrupted (a rerun of the same command fits them again)"
           if status.interrupted else "")
        + f". Generated "
        f"{data.generated:%Y-%m-%d %H:%M} UTC by: {data.command}"
    ]
    if status.pending:
        running = [pair for pair in status.pending if pair in status.running]
        lines.append(
            f"Status: {config_fits_finished(done, config)} of the config's {status.expected} fits are finished. "
            "Not finished yet "
            f"(fewer than {len(config['seeds'])} seeds): {', '.join(status.pending)}"
            + (f"; {CLAIMED}: {'all of them' if len(running) == len(status.pending) else ', '.join(running)}"
               if running else "")
            + ". Rows for these are missing or rest on fewer seeds; rerunning the same command resumes the "
            "benchmark and re-renders this report."
        )
    elif status.running:
        lines.append(f"{CLAIMED.capitalize()}: {', '.join(status.running)}.")
    return tuple(lines)
