"""The values a score can take, and the baseline it must beat to mean anything.

Every metric of the registry declares a :class:`ValidRange` for each key it returns
(:attr:`~topicbench.core.metrics.registry.MetricSpec.valid_range`). A value outside it is not a
result but a sign of a bug or of a metric that does not apply (NMF's topic-word rows read as
word probabilities give a held-out perplexity of 10^10); a value worse than the stated baseline
(perplexity above the vocabulary size: worse than a uniform model over the words) is no
evidence for the model either. Neither is ranked: a report shows it with the reason
:meth:`ValidRange.problem` gives (a phrase: "outside the valid range [0, 1]");
:func:`topicbench.core.metrics.validity.value_problem` finds a key's range and asks it.

>>> PERPLEXITY.problem(2023.0, vocabulary_size=8070) is None
True
>>> PERPLEXITY.problem(2.01e10, vocabulary_size=8070)
'worse than a uniform model over the 8,070-word vocabulary (perplexity 8,070)'
>>> PROPORTION.problem(1.2)
'outside the valid range [0, 1]'
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from ..validation import InputError

#: Slack on a bound, for values a rounding step puts just past it (a cosine of 1 + 1e-16).
BOUND_TOLERANCE = 1e-9

#: The baselines a range may name: the uniform model over the vocabulary, per metric.
UNIFORM_PERPLEXITY = "uniform_perplexity"
UNIFORM_LOG_LIKELIHOOD = "uniform_log_likelihood"
BASELINES = (UNIFORM_PERPLEXITY, UNIFORM_LOG_LIKELIHOOD)


@dataclass(frozen=True)
class ValidRange:
    """The closed interval [low, high] a score lies in, and the baseline it must beat.

    Attributes
    ----------
    low, high : float
        The bounds (``-inf``/``inf`` where there is none).
    baseline : str
        ``""`` (none), :data:`UNIFORM_PERPLEXITY` (no more than V, the vocabulary size: a uniform
        model over the words scores exactly V) or :data:`UNIFORM_LOG_LIKELIHOOD` (no less than
        −log V, the uniform model's per-word log-likelihood).
    why : str
        Where the bounds come from, for the docs and the reason.
    """

    low: float = -math.inf
    high: float = math.inf
    baseline: str = ""
    why: str = ""

    def __post_init__(self):
        if not self.low <= self.high:
            raise ValueError(f"a valid range needs low <= high, got [{self.low}, {self.high}]")
        if self.baseline and self.baseline not in BASELINES:
            raise ValueError(f"unknown baseline {self.baseline!r}; known: {BASELINES}")

    def problem(self, value, *, vocabulary_size: int | None = None) -> str | None:
        """Why ``value`` cannot be ranked, as a phrase that follows the value ("outside the valid
        range [0, 1]", "worse than a uniform model ...", "not a finite number"), or None. The baseline
        is checked only where ``vocabulary_size`` is given."""
        value = float(value)
        if not math.isfinite(value):
            return "not a finite number"
        slack = BOUND_TOLERANCE * max(1.0, abs(value))
        if value < self.low - slack or value > self.high + slack:
            return f"outside the valid range {self.text()}"
        if vocabulary_size is not None and self.baseline:
            return _baseline_problem(self.baseline, value, _vocabulary_size(vocabulary_size))
        return None

    def text(self) -> str:
        """The range as a reader writes it: ``[0, 1]``, ``>= 1``, ``<= 0``, ``any value``."""
        low, high = _bound_text(self.low), _bound_text(self.high)
        if math.isinf(self.low) and math.isinf(self.high):
            return "any value"
        if math.isinf(self.high):
            return f">= {low}"
        if math.isinf(self.low):
            return f"<= {high}"
        return f"[{low}, {high}]"


#: How each baseline reads after a range (:func:`describe`).
BASELINE_WORDS = {UNIFORM_PERPLEXITY: "at most V (the uniform model)",
                  UNIFORM_LOG_LIKELIHOOD: "at least -log V (the uniform model)"}


def describe(valid_range) -> str:
    """A metric's ranges as ``metrics list`` and the manual print them: ``>= 1; at most V (the
    uniform model)``, or one per key (``nmi: [0, 1]; ari: [-1, 1]``) for a dict of ranges."""
    if isinstance(valid_range, dict):
        return "; ".join(f"{key}: {describe(valid)}" for key, valid in valid_range.items())
    return "; ".join(filter(None, (valid_range.text(), BASELINE_WORDS.get(valid_range.baseline, ""))))


def _baseline_problem(baseline: str, value: float, vocabulary_size: int) -> str | None:
    words = f"the {vocabulary_size:,}-word vocabulary"
    if baseline == UNIFORM_PERPLEXITY and value > vocabulary_size * (1 + BOUND_TOLERANCE):
        return f"worse than a uniform model over {words} (perplexity {vocabulary_size:,})"
    uniform = -math.log(vocabulary_size)
    if baseline == UNIFORM_LOG_LIKELIHOOD and value < uniform - BOUND_TOLERANCE * max(1.0, abs(uniform)):
        return f"worse than a uniform model over {words} (log-likelihood per word {uniform:.4g})"
    return None


def _vocabulary_size(size) -> int:
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
        raise InputError(f"vocabulary_size must be a positive integer, got {size!r}")
    return int(size)


def _bound_text(bound: float) -> str:
    return f"{bound:g}"


#: Any real number (a PMI, a sum of log-ratios with no bound of use).
UNBOUNDED = ValidRange(why="no bound")
#: A share, a rate or a score normalised to [0, 1].
PROPORTION = ValidRange(0.0, 1.0, why="a share of [0, 1]")
#: A cosine, a correlation, a normalised PMI.
SIGNED_UNIT = ValidRange(-1.0, 1.0, why="a cosine, correlation or normalised PMI lies in [-1, 1]")
#: A count (of topics scored).
COUNT = ValidRange(0.0, why="a count")
#: A sum or mean of log-probabilities.
LOG_PROBABILITY = ValidRange(high=0.0, why="a log of probabilities is at most 0")
#: Held-out per-word log-likelihood: a log-probability, and no worse than the uniform model.
HELDOUT_LOG_LIKELIHOOD = ValidRange(
    high=0.0, baseline=UNIFORM_LOG_LIKELIHOOD,
    why="a log-probability (<= 0); the uniform model over V words scores -log V",
)
#: Held-out perplexity: exp(-per-word log-likelihood) >= 1, and no more than V (the uniform model).
PERPLEXITY = ValidRange(
    low=1.0, baseline=UNIFORM_PERPLEXITY,
    why="exp of minus a per-word log-probability (>= 1); the uniform model over V words scores V",
)
#: Each coherence measure's values: NPMI and C_V (a cosine of NPMI vectors, whose entries can be
#: negative) lie in [-1, 1]; UCI's PMI has no bound, nor UMass's log((D(w_i, w_j) + ε) / D(w_j)),
#: at most log(1 + ε) for the ε set.
COHERENCE = {"umass": UNBOUNDED, "uci": UNBOUNDED, "npmi": SIGNED_UNIT, "cv": SIGNED_UNIT}
