"""Library warnings raised while a model fits and is scored, kept with the fit they belong to.

A library's own warning line (scikit-learn's ``ConvergenceWarning``, gensim's, torch's) names its
source file, never the fit: with several fits on several workers nobody can tell which model on
which corpus and seed did not converge. The fit task records them instead
(:func:`capturing_warnings`) and says each distinct one once, with its count and the fit's label
(:func:`warning_lines`): on the console and in the run's log, the artifact
:data:`~topicbench.tasks.store.artifacts.FIT_WARNINGS`.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass


@dataclass(frozen=True)
class FitWarning:
    """One distinct warning of a fit (same category and message): how often it was issued."""

    category: str
    message: str
    count: int

    def line(self, label: str) -> str:
        """"label: Category: message (N times)"."""
        times = f" ({self.count} times)" if self.count > 1 else ""
        return f"{label}: {self.category}: {self.message}{times}"


@contextlib.contextmanager
def capturing_warnings():
    """The warnings issued in the block, recorded (a list of ``warnings.WarningMessage``) instead
    of printed. Filters already set keep precedence (a warning ignored stays ignored); any other
    is recorded each time it is issued, not once per source line, so it can be counted. Python's
    warning filters belong to the process: a fit runs alone in its worker (one thread), or in the
    flow's one task thread."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.filterwarnings("always", append=True)
        yield caught


def distinct_warnings(caught) -> list[FitWarning]:
    """The recorded warnings ``caught``, one per (category, message), in the order first issued."""
    counts: dict = {}
    for record in caught:
        key = (type(record.message).__name__ if isinstance(record.message, Warning) else record.category.__name__,
               " ".join(str(record.message).split()))
        counts[key] = counts.get(key, 0) + 1
    return [FitWarning(category, message, count) for (category, message), count in counts.items()]


def warning_lines(label: str, caught) -> list[str]:
    """One line per distinct warning of the fit ``label`` (:meth:`FitWarning.line`)."""
    return [warning.line(label) for warning in distinct_warnings(caught)]
