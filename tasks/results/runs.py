"""Runs as every reader sees them: their states, which of them count, and the per-topic scores
every reader keeps (a report shows them; a bundle stores only them)."""

from __future__ import annotations

import pandas as pd

FINISHED = "FINISHED"
RUNNING = "RUNNING"
#: MLflow's state of a run stopped by Ctrl-C or SIGTERM (or left RUNNING by a process that died):
#: interrupted, not failed; the same command fits it again.
INTERRUPTED = "KILLED"

#: The N at which tables compare models (the coherence plots show every N).
TABLE_N = 10
#: Each shown topic's own scores (score key, label): NPMI over its shown words (bounded, 0 where
#: the words are independent: a reader's scale), and the LLM's rating where one judged it.
TOPIC_SCORES_SHOWN = ((f"npmi@{TABLE_N}", "NPMI"), ("llm_rating", "LLM rating"), ("llm_fit", "LLM fit τ"),
                      ("llm_rank", "LLM rank τ"))


def finished_runs(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs.status == FINISHED]


def failed_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs that ended in an error (not finished, not running, not interrupted) and that no
    finished run of the same corpus, model and seed replaced (a fit that failed and then
    succeeded, under another run key after a change of its settings, is not a failure)."""
    return _not_replaced(runs, runs[~runs.status.isin([FINISHED, RUNNING, INTERRUPTED])])


def interrupted_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs stopped before finishing that no finished run of the same corpus, model and seed
    replaced."""
    return _not_replaced(runs, runs[runs.status == INTERRUPTED])


def _not_replaced(runs: pd.DataFrame, ended: pd.DataFrame) -> pd.DataFrame:
    if ended.empty:
        return ended
    done = set(zip(*(finished_runs(runs)[column] for column in ("corpus", "model", "seed"))))
    return ended[[trio not in done for trio in zip(ended.corpus, ended.model, ended.seed)]]
