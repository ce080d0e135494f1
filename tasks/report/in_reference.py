"""A coherence over the top words the reference corpus has, ranked where a model's full value is
missing because some of its top words are not in the reference: one word outside the reference
never removes a model from a comparison.

With ``coherence.oov: error`` (the default) a topic whose top N words include one the reference
corpus lacks has no full coherence (it is undefined); each run then also logs the same measure over
each topic's top N words that the reference has (``npmi_in_reference@10``, the topics it averages,
``npmi_in_reference_topics@10``, and the top words left out, ``npmi_in_reference_dropped@10``:
:mod:`~topicbench.core.metrics.coherence_in_reference`). A table ranks that value in the model's
cell, and its footnote (:func:`in_reference_note`) states how many words and topics were dropped.
Pure functions of the run table (one column per score key).
"""

from __future__ import annotations

import pandas as pd

from topicbench.core.metrics.coherence_in_reference import IN_REFERENCE, IN_REFERENCE_DROPPED, IN_REFERENCE_TOPICS
from topicbench.tasks.results.runs import finished_runs

#: The run column of the topics a fit used (K).
_TOPICS_USED = "num_topics_used"


def in_reference_keys(key: str) -> tuple[str, str, str] | None:
    """The keys of ``key``'s in-reference value, of the topics it averages and of the top words it
    left out (``npmi@10`` -> ``npmi_in_reference@10``, ...); None for a key without an N."""
    name, _, size = key.partition("@")
    if not size.isdigit():
        return None
    return tuple(f"{name}{suffix}@{size}" for suffix in (IN_REFERENCE, IN_REFERENCE_TOPICS, IN_REFERENCE_DROPPED))


def in_reference_values(runs: pd.DataFrame, key: str, missing) -> dict:
    """(corpus, model) -> (its finished seeds' in-reference values of ``key``, the footnote that
    says what was dropped), for each pair of ``missing`` (those without a full value of ``key``)
    whose runs logged one."""
    keys = in_reference_keys(key)
    done = finished_runs(runs)
    if keys is None or keys[0] not in done or keys[1] not in done:
        return {}
    found = {}
    for corpus, model in missing:
        mine = done[(done.corpus == corpus) & (done.model == model)]
        values = tuple(float(v) for v in mine[keys[0]] if pd.notna(v))
        if values:
            found[(corpus, model)] = (values, in_reference_note(key, mine, keys))
    return found


def in_reference_note(key: str, runs: pd.DataFrame, keys) -> str:
    """The footnote of a ranked in-reference value: the top words left out and the topics averaged
    (means over the seeds of ``runs`` that have the value)."""
    size = key.partition("@")[2]
    scored = runs[runs[keys[0]].notna()]
    topics = float(scored[keys[1]].mean())
    of = float(scored[_TOPICS_USED].mean()) if _TOPICS_USED in scored and scored[_TOPICS_USED].notna().any() else None
    dropped = float(scored[keys[2]].mean()) if keys[2] in scored and scored[keys[2]].notna().any() else None
    words = (f"{_count(dropped)} of its topics' top-{size} words {'is' if dropped == 1 else 'are'} not in the reference "
             "corpus and left out" if dropped is not None else "top words not in the reference corpus are left out")
    averaged = f"{_count(topics)}{f' of {_count(of)}' if of is not None else ''} topics keep 2 or more and are averaged"
    return (f"{key} over the words the reference corpus has: {words} (none taken in their place); {averaged} "
            f"(means over seeds); ranked with the full values, so that a word outside the reference does not remove "
            "a model from the comparison")


def _count(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"
