"""The report's K section (``k_comparison``): every score against K, verdicts only from fits at
the same K, and, where the models' K differ, one number per model as the prevalence-weighted mean
with its sensitivity to k. Registered lazily by :mod:`~topicbench.tasks.report.sections` (this
module reads the summary's keys from there)."""

from __future__ import annotations

from functools import partial

from topicbench.core.io import file_name_for

from . import k_plots
from .k_curves import k_points, same_k_verdicts, top_k_curves, weighted_mean_table
from .parts import Plot, ReportData, Section
from .sections import COHERENCE_MEASURES, SUMMARY_MEASURES, summary_keys
from .summary import K_FACTOR, k_differences, metric_name

K_TITLE = "K: every score against the number of topics"

K_TEXT = (
    "Coherence and diversity move with K: with more topics each is more specific, and diversity falls. So this report "
    "never ranks models of different K by their means. Each point below is one run: the K it used and its score; a grey "
    "line joins the variants of one model (E-LDA's kappa or generator values, a grid of K) in order of K."
)
NO_SAME_K_TEXT = (
    "No two models here were fitted at the same K on the same corpus and seed, so this report gives no verdict at "
    "matched K. To get one, fit a model at another's K by design: num_topics: {match: elda} fits it, on each corpus and "
    "seed, at the K that E-LDA's fit used there; or give the models the same K, or a grid (num_topics: [20, 50, 100])."
)
WEIGHTED_TEXT = (
    f"Where the models' K differ by more than {K_FACTOR:g}×, one number per model is the prevalence-weighted mean over "
    "all its topics: each topic's own score weighted by its share of the corpus (the mean of p(topic | document)), "
    "so that a model is scored by the topics its documents are made of, and no topic is cut. (Scoring each model on its "
    "k most prevalent topics, k the fewest of any model, kept a many-topic model's coherent head and moved the ranks "
    "with k.) The plot shows that sensitivity: each model's plain mean over its k most prevalent topics for every k, "
    "for the models whose runs hold per-topic scores; the end of each line is its plain mean."
)


def k_keys(data: ReportData) -> tuple[list, list]:
    """(the summary's coherence and diversity keys, those of them scored per topic: coherence)."""
    keys = [(key, title) for key, title in summary_keys(data) if metric_name(key) in dict(SUMMARY_MEASURES)]
    return keys, [(key, title) for key, title in keys if metric_name(key) in dict(COHERENCE_MEASURES)]


def k_section(data: ReportData) -> Section | None:
    """The K section; None where no run has both a K and one of the summary's scores."""
    keys, per_topic = k_keys(data)
    corpora = [corpus for corpus in data.corpora
               if any(not k_points(data.runs[data.runs.corpus == corpus], key).empty for key, _ in keys)]
    if not corpora:
        return None
    figures = tuple(Plot(f"k_{file_name_for(corpus)}.png", f"each score against K on {corpus}",
                         partial(k_plots.metric_against_k_figure, corpus=corpus, keys=tuple(keys)))
                    for corpus in corpora)
    verdicts = same_k_verdicts(data.runs, keys, models=data.models, corpora=corpora)
    blocks = [K_TEXT, *figures, NO_SAME_K_TEXT if verdicts.empty else verdicts]
    unequal = list(k_differences(data.runs, models=data.models, corpora=corpora))
    weighted = weighted_mean_table(data.topic_scores or {}, per_topic, models=data.models, corpora=unequal)
    if unequal and not weighted.empty:
        blocks += [WEIGHTED_TEXT, weighted]
        for corpus in unequal:
            panels = tuple((pair, top_k_curves(data.topic_scores, pair[0], corpus=corpus, models=data.models))
                           for pair in per_topic)
            blocks.append(Plot(f"top_k_{file_name_for(corpus)}.png", f"mean over the k most prevalent topics on {corpus}",
                               partial(k_plots.top_k_figure, corpus=corpus, panels=panels)))
    elif unequal:
        blocks.append(f"The models' K differ by more than {K_FACTOR:g}× on {', '.join(unequal)}, and no run there holds "
                      "per-topic scores with its topics' shares (tracked before topics were scored one by one), so no "
                      "prevalence-weighted mean is shown.")
    return Section(K_TITLE, tuple(blocks))
