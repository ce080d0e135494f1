"""The tracking UI's runs table as a reader wants it first: the scores the benchmark asked for,
the key metrics, and the run's corpus, model and seed as columns.

MLflow 3's UI restores a runs-table view shared by URL (``?viewStateShareKey=KEY``) from the
experiment tag ``mlflow.sharedViewState.KEY``: a JSON object of the table's state, its columns as
``metrics.`NAME``` and ``tags.`NAME```. Writing that tag is the one way to choose the columns the
table opens with (there is no default-columns setting). A shared view does not carry which parent
runs are expanded (a ``runsExpanded`` in it left the parent closed, in chromium against MLflow
3.17). What nests the fits under their parent is the table's order: MLflow's runs table nests child
runs only when it is ordered by start time, or neither ordered nor filtered (``nestChildren`` in
its bundle, ``mlflow/server/js/build``). So the view filters the table to the fits (the benchmark's
fit filter) and orders them by run name (``corpus/model/seedN``): the fits show at once, flat,
grouped by corpus and model, with no collapsed parent row of empty cells.
"""

from __future__ import annotations

import json

from topicbench.core.metrics.registry import METRICS

from topicbench.tasks.store.fit_record import score_key

#: The experiment-tag prefix the UI reads a shared view from, and this project's view's key.
SHARED_VIEW_TAG_PREFIX = "mlflow.sharedViewState."
VIEW_KEY = "topicbench-runs"
#: The columns shown first, where the experiment's runs have them: the headline scores at N = 10,
#: the LLM judges', held-out perplexity and cost.
KEY_METRICS = ("npmi_top10", "cv_top10", "umass_top10", "topic_diversity_top10", "embedding_pairwise_top10",
               "llm_rating", "llm_intrusion", "perplexity", "fit_seconds")
KEY_TAGS = ("corpus", "model", "seed")
#: The top-N of the scores shown for metrics scored at several N.
SHOWN_TOP_N = 10


def runs_view_state(metric_names, requested=(), fit_filter: str = "") -> dict:
    """The runs table's state: the scores of the ``requested`` metrics (registry names, in their
    order), then the key metrics, each where present in ``metric_names``, and the run's corpus,
    model and seed as columns; the runs matching ``fit_filter`` (a search filter), by run name, so
    that the fits show flat rather than under a collapsed parent (the module docstring), or with
    no filter all runs, newest first (the table's other settings at the UI's defaults)."""
    present = set(metric_names)
    shown = [*requested_score_names(requested, present), *(name for name in KEY_METRICS if name in present)]
    columns = [f"metrics.`{name}`" for name in dict.fromkeys(shown)] + [f"tags.`{tag}`" for tag in KEY_TAGS]
    return {
        "selectedColumns": columns, "columnOrder": [], "columnWidths": {}, "runsHiddenMode": "FIRST_10_RUNS",
        "viewMaximized": False, "runListHidden": False, "isAccordionReordered": False,
        "useGroupedValuesInCharts": True, "hideEmptyCharts": True, "groupBy": None,
        "orderByKey": "attributes.run_name" if fit_filter else "attributes.start_time", "orderByAsc": bool(fit_filter),
        "searchFilter": fit_filter,
    }


def requested_score_names(requested, metric_names) -> list[str]:
    """The tracked names of the scores of the ``requested`` metrics among ``metric_names``: each
    metric's own outputs (``clustering``: ``nmi``, ``purity``), at top-N 10 where it has several
    N, without the bookkeeping counts (``*_answered``); unknown names are skipped."""
    names = []
    for metric in requested:
        if metric not in METRICS:
            continue
        spec = METRICS.get(metric)
        for name in sorted(metric_names):
            key = score_key(name)
            top_n = key.partition("@")[2]
            if spec.owns(key) and top_n in ("", str(SHOWN_TOP_N)) and not key.endswith("_answered"):
                names.append(name)
    return names


def share_runs_view(client, experiment_id: str, *, fit_filter: str, requested=()) -> str:
    """Write this project's runs view of the experiment (the ``requested`` metrics' scores and
    the key metrics its fits, those matching ``fit_filter``, have) as the experiment's shared
    view; returns the key for ``viewStateShareKey``."""
    fits = client.search_runs([experiment_id], fit_filter, max_results=500)
    names = {name for run in fits for name in run.data.metrics}
    state = runs_view_state(names, requested, fit_filter)
    client.set_experiment_tag(experiment_id, SHARED_VIEW_TAG_PREFIX + VIEW_KEY, json.dumps(state))
    return VIEW_KEY
