"""Searching the tracking store for runs by their tags, with user text as data.

Every search of runs by tag goes through :func:`search_runs`, and every filter string is written by
:func:`runs_filter`, never by hand: an experiment, corpus, label, study or LLM model named with a
quote must not become filter syntax (``tags.`x` = 'it's'`` is an error of MLflow's parser, or worse,
another clause).

MLflow's filter grammar (``mlflow/utils/search_utils.py``, tokenised by sqlparse) has string
literals in single or double quotes and no way to escape a quote inside one: the parser only strips
the two outer quotes, so ``'it''s'`` means the five characters ``it''s``, and a backslash before
the closing quote makes sqlparse read an escaped quote there. A value is therefore written in the
quote it does not contain (:func:`filter_literal`); one that contains both, or ends in a backslash,
cannot be written at all, and :func:`search_runs` matches it here instead, over every run the rest
of the filter finds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

#: The most runs one request to the store returns (MLflow's ``SEARCH_MAX_RESULTS_THRESHOLD``).
PAGE_SIZE = 50_000


class UnwritableFilterValue(ValueError):
    """A value MLflow's filter grammar cannot write as a string literal."""


def filter_literal(value: str) -> str:
    """``value`` as a string literal of MLflow's search filters, meaning exactly ``value``.

    Raises
    ------
    UnwritableFilterValue
        Where no literal means ``value``: it contains both ``'`` and ``"``, or ends in a backslash.
    """
    value = str(value)
    if not value.endswith("\\"):
        for quote in ("'", '"'):
            if quote not in value:
                return f"{quote}{value}{quote}"
    raise UnwritableFilterValue(f"MLflow's search filters cannot write {value!r} as a string literal")


def _tag_clause(key: str, value: str) -> str:
    if "`" in key:  # keys are this project's constants; a backtick would end the quoted key
        raise ValueError(f"tag key {key!r} contains a backtick")
    return f"tags.`{key}` = {filter_literal(value)}"


def runs_filter(tags: Mapping[str, str] | None = None, *, status: str | None = None,
                status_not: str | None = None) -> str:
    """The filter string of runs whose tags equal ``tags`` (key -> value), whose status is
    ``status`` and is not ``status_not`` (where given); every value written by :func:`filter_literal`."""
    clauses = [_tag_clause(key, value) for key, value in (tags or {}).items()]
    if status is not None:
        clauses.append(f"attributes.status = {filter_literal(status)}")
    if status_not is not None:
        clauses.append(f"attributes.status != {filter_literal(status_not)}")
    return " and ".join(clauses)


def _writable(value) -> bool:
    try:
        filter_literal(value)
    except UnwritableFilterValue:
        return False
    return True


def search_runs(client, experiment_ids: Iterable[str], *, tags: Mapping[str, str] | None = None,
                status: str | None = None, status_not: str | None = None, order_by: list | None = None,
                max_results: int = PAGE_SIZE) -> list:
    """The runs of ``experiment_ids`` whose tags equal ``tags`` exactly and whose status is
    ``status`` and is not ``status_not``, in ``order_by``'s order, at most ``max_results``.

    Values the filter grammar can write are filtered by the store. Values it cannot are matched
    here, over every run the rest of the filter finds (read page by page); and every tag is matched
    here again, so that a store comparing text without case (MySQL's default collation) still
    finds only the exact value.
    """
    tags = dict(tags or {})
    written = {key: value for key, value in tags.items() if _writable(value)}
    filter_string = runs_filter(written, status=status, status_not=status_not)
    exact = (lambda run: all(run.data.tags.get(key) == value for key, value in tags.items()))
    if len(written) == len(tags):
        found = client.search_runs(list(experiment_ids), filter_string, order_by=order_by, max_results=max_results)
        if all(exact(run) for run in found):
            return list(found)
    matched, token = [], None
    while len(matched) < max_results:
        page = client.search_runs(list(experiment_ids), filter_string, order_by=order_by, max_results=PAGE_SIZE,
                                  page_token=token)
        matched += [run for run in page if exact(run)]
        token = page.token
        if not token:
            break
    return matched[:max_results]
