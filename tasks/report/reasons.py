"""Why a section, a plot or a table leaves something out, and why two sections count differently:
the sentences that keep a gap from passing unexplained.

Pure functions of the report's data (:class:`~topicbench.tasks.report.parts.ReportData`), each
returning the paragraphs (possibly none) a section shows beside what it leaves out: a section
without data because its metric was not asked for (and how to ask), a model absent from a plot or
a table (its reason), and the topic counts of one seed beside the summary's mean over seeds.
"""

from __future__ import annotations

from .statistics import RANKING_METRICS
from .summary import gap_reason, model_metrics, model_runs, requested_metrics, topics_used, unscored_reason
from .tables import finished_runs
from .text import Code, Markdown, Text
from .topics import first_seed_topics

#: Models fitted without iterations, and what they do instead (the training section says why they
#: have no loss curve): by the model's registry name.
NOT_ITERATIVE = {
    "elda": "E-LDA is not iterative: it selects its keyword topics greedily, so it has no loss per iteration",
    "lsi": "LSI is one truncated SVD, not iterative: it has no loss per iteration",
    "bertopic": "BERTopic clusters document embeddings (UMAP, then HDBSCAN): it has no loss per iteration",
}


def model_name(data, label: str) -> str:
    """The registry name of the model a config labels ``label`` (the label itself without a config)."""
    return next((entry["model"] for entry in (data.config or {}).get("models", [])
                 if (entry.get("label") or entry["model"]) == label), label)


def robustness_reason(data, n: int) -> str | Markdown:
    """Why the robustness section has no table: UMass@n was not asked for (and how to ask for it),
    or no model has it, or fewer than two models share it with another ranked metric."""
    if "umass" not in requested_metrics(data):
        return Markdown("Not shown: this section ranks the models by UMass@", str(n), " against ",
                        ", ".join(title for _, title in RANKING_METRICS), ", and the config does not ask for umass. "
                        "To see it, add umass to the config's metrics (", Code("metrics: [umass, npmi, ...]"),
                        ") and run the benchmark again (its runs are fitted anew: the metrics asked are part of what a run is).")
    missing = unscored_reason(data, [(f"umass@{n}", f"UMass@{n}")])
    if missing is not None and not any(f"umass@{n}" in data.runs and finished_runs(model_runs(
            data.runs, corpus, model))[f"umass@{n}"].notna().any() for corpus in data.corpora for model in data.models):
        return missing
    return (f"Not shown: on no corpus do two models have both UMass@{n} and another of "
            f"{', '.join(title for _, title in RANKING_METRICS)} (a ranking needs two models).")


def training_absences(data, shown_models) -> tuple:
    """A paragraph naming each model with finished runs that the training table leaves out
    (``shown_models``: those it has), and why: not iterative, or its runs logged no loss."""
    absent = [model for model in data.models if model not in shown_models and not finished_runs(
        data.runs[data.runs.model == model]).empty]
    if not absent:
        return ()
    reasons = [NOT_ITERATIVE.get(model_name(data, model), f"{model}'s runs logged no training loss (the model is not "
                                 "fitted by iterations, or its package keeps no loss per iteration)") for model in absent]
    parts = ["Not in the table or the loss plots: "]
    for index, (model, why) in enumerate(zip(absent, reasons)):
        parts += [*(("; ",) if index else ()), Text(model), f" ({why})"]
    return (Markdown(*parts, "."),)


def plot_absences(data, corpus: str, keys) -> tuple:
    """A paragraph naming each model with finished runs on ``corpus`` that has none of the scores
    ``keys`` (score key at every N: a coherence plot's measures), so is not in its plot, with the
    reason of its first missing key (:func:`~topicbench.tasks.report.summary.gap_reason`)."""
    runs, asked = data.runs, model_metrics(data)
    absent = []
    for model in data.models:
        done = finished_runs(model_runs(runs, corpus, model))
        if done.empty:
            continue
        columns = [c for c in done.columns if str(c).partition("@")[0] in {k.partition("@")[0] for k in keys}]
        if not any(done[c].notna().any() for c in columns):
            absent.append((model, gap_reason(runs, corpus, model, keys[0], asked.get(model))))
    if not absent:
        return ()
    parts = ["Not in the plot of ", Text(corpus), ": "]
    for index, (model, why) in enumerate(absent):
        parts += [*(("; ",) if index else ()), Text(model), " (", Text(why), ")"]
    return (Markdown(*parts, "."),)


def topic_count_note(data) -> tuple:
    """Where a model's topics here (its first seed's) number otherwise than the summary's K (the
    mean over its seeds), a paragraph saying so, pair by pair."""
    first = first_seed_topics(data.runs)
    differ = []
    for (corpus, model), records in first.items():
        k = topics_used(data.runs, corpus, model)
        if k is not None and k != len(records):
            seeds = len(finished_runs(model_runs(data.runs, corpus, model)))
            differ.append(f"{model} on {corpus}: {len(records)} topics here, K = {k:g} in the summary "
                          f"(mean of {seeds} seeds)")
    if not differ:
        return ()
    return (Markdown("Counts here are of one seed (the first), the summary's K the mean over seeds; they differ "
                     "where a model's K varies with its seed (HDP, BERTopic and E-LDA choose theirs): ",
                     Text("; ".join(differ)), "."),)
