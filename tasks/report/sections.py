"""The report's sections: a registry of section builders, each a pure function of the report's data.

A builder reads a :class:`~topicbench.tasks.report.parts.ReportData` and returns a
:class:`~topicbench.tasks.report.parts.Section` of paragraphs, tables (numbers) and plot requests,
or None where it has nothing to show.

A config names the sections to show (``BenchmarkConfig.report_sections``; default
:data:`DEFAULT_REPORT_SECTIONS`); a benchmark with sections of its own (the paper's) registers
them in :data:`REPORT_SECTIONS` and lists them in its config. Nothing here writes a file: plots
are drawn by :mod:`topicbench.tasks.report.plots`, text by :mod:`topicbench.tasks.report.render`.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from topicbench.baselines.convergence import tail_rule_in_words
from topicbench.core.io import file_name_for
from topicbench.core.metrics.llm_judging import JudgeSettings
from topicbench.core.metrics.registry import METRICS
from topicbench.core.registry import Registry

from . import interactive as interactive
from . import plots as plots
from .stability import stability_remarks, stability_tables
from topicbench.tasks.results.runs import TABLE_N, TOPIC_SCORES_SHOWN  # noqa: F401 (what every reader keeps)
from .parts import Plot, Report, ReportData, Section
from .statistics import ranking_agreement, set1_table
from topicbench.tasks.store.artifacts import EXCERPT_CHARS
from .tables import (
    ReportTable, changed_settings_table, failed_runs, interrupted_runs, higher_is_better, metric_pivot,
    pair_order, training_table,
)
from .topics import elda_topics, matched_topics, model_topics, topic_examples, topics_by_label
from .summary import (
    direction_words, k_cautions, metric_name, model_metrics, requested_keys,
    requested_metrics, score_table, summary_table, unlisted_models_note, unscored_reason,
)
from .lead import report_lead
from .k_curves import K_SECTION, k_advice, same_k_groups
from .data_and_settings import data_settings_blocks
from .reasons import plot_absences, robustness_reason, topic_count_note, training_absences
from .verdict import LABEL_KEYS, purity_caution, verdicts
from .emphasis import with_best_rule
from .llm_judged import (
    calibration_summary, document_calibration_blocks, document_judging_text, document_topic_counts,
    judged_sample_caution,
)


#: Section builders by name: ``builder(data: ReportData) -> Section | None`` (None: nothing to show).
REPORT_SECTIONS = Registry("report section")

#: The sections of an ordinary benchmark's report, in order.
DEFAULT_REPORT_SECTIONS = (
    "summary", K_SECTION, "changed_settings", "data_and_settings", "notes", "requested_scores", "set1", "coherence", "llm_judged", "diversity", "training", "fit_time", "robustness",
    "stability", "topics", "elda_topics", "failed_runs",
)

COHERENCE_MEASURES = (("umass", "UMass"), ("npmi", "NPMI"), ("cv", "C_V"), ("embedding_pairwise", "embedding (pairwise)"))
#: The metrics of the summary that opens the report (those the config asks for), at N = TABLE_N.
SUMMARY_MEASURES = (*COHERENCE_MEASURES, ("topic_diversity", "TD"))
#: The LLM's judgments the summary shows too, where asked for (score key -> title).
SUMMARY_JUDGED = {"llm_rating": "LLM rating (1-3)", "llm_intrusion": "LLM intrusion", "llm_fit": "LLM fit τ",
                  "llm_rank": "LLM rank τ"}
#: How much of each model's topics the "topics" section shows.
TOPICS_SHOWN, TOPIC_WORDS_SHOWN = 5, TABLE_N


# the K section reads the summary's keys from here: registered by name, imported when a report shows it
REPORT_SECTIONS.register(K_SECTION, lazy="topicbench.tasks.report.k_section:k_section")


def build_report(data: ReportData, sections=DEFAULT_REPORT_SECTIONS) -> Report:
    """The report of ``data`` with the named sections (each builder from :data:`REPORT_SECTIONS`)."""
    built = (REPORT_SECTIONS.get(name)(data) for name in sections)
    return Report(f"topicbench report — {data.experiment}", report_lead(data),
                  tuple(with_best_rule(s) for s in built if s is not None))  # the test behind bold, once a section


#: What an LLM topic model's fit cost (TopicGPT), in the fit table.
FIT_LLM_COLUMNS = tuple((f"fit_llm_{k}", f"LLM {k.replace('_', ' ')} of the fit") for k in ("requests", "prompt_tokens", "completion_tokens", "cost"))


def register_section(name: str):
    """Decorator: add a section builder to :data:`REPORT_SECTIONS` under ``name``."""
    return REPORT_SECTIONS.register(name)


def table_section(title: str, text: str, table: ReportTable, *more) -> Section | None:
    """A section of a paragraph, its table and ``more`` blocks; None (no section) when the
    table is empty."""
    return None if table.empty else Section(title, (text, table, *more))


def unshown_section(title: str, reason: str | None, *, opening: bool = False) -> Section | None:
    """A section that has nothing to show, saying why (``reason``), so that it does not vanish
    unexplained; None where there is no reason to give (nothing was asked of it)."""
    return None if reason is None else Section(title, (reason,), opening=opening)


def summary_keys(data: ReportData) -> list[tuple]:
    """The (score key, title) pairs of the summary: of :data:`SUMMARY_MEASURES` at N = TABLE_N, of
    :data:`SUMMARY_JUDGED` and label alignment (:data:`~topicbench.tasks.report.verdict.LABEL_KEYS`,
    of the ``clustering`` metric), those the config asks for (all of them without a config)."""
    asked = set((data.config or {}).get("metrics") or [*dict(SUMMARY_MEASURES), *SUMMARY_JUDGED, "clustering"])
    return ([(f"{key}@{TABLE_N}", f"{title}@{TABLE_N}") for key, title in SUMMARY_MEASURES if key in asked]
            + [(key, title) for key, title in SUMMARY_JUDGED.items() if key in asked]
            + [pair for pair in LABEL_KEYS if "clustering" in asked])


@register_section("summary")
def summary_section(data: ReportData) -> Section | None:
    """Who wins where, in one table: every model's K and seeds, and its mean under each main
    metric on each corpus (a missing value with its reason); above it, a caution where the models
    side by side differ in K by more than :data:`~topicbench.tasks.report.summary.K_FACTOR` times."""
    table = summary_table(data.runs, summary_keys(data), models=data.models, corpora=data.corpora,
                          expected=len(data.seeds), model_metrics=model_metrics(data))
    if table.empty or not any(table.column_groups.get(column, ("",))[0] not in ("K (topics used)", "seeds")
                              for column in table.cells.columns[1:]):
        return unshown_section("Summary: who wins where", unscored_reason(data, summary_keys(data)), opening=True)
    shown = {group[0] for group in table.column_groups.values()}
    unscored = [(key, title) for key, title in summary_keys(data)
                if title not in shown and metric_name(key) in requested_metrics(data)]
    missing = (unscored_reason(data, unscored),) if unscored else ()  # a column with no value at all: why
    said = verdicts(table, data.runs, data.corpora, summary_keys(data), seeds_asked=len(data.seeds))
    k_shown = K_SECTION in ((data.config or {}).get("report_sections") or DEFAULT_REPORT_SECTIONS)
    advice = partial(k_advice, same_k_groups(data.runs, models=data.models, corpora=data.corpora), shown=k_shown)
    return Section("Summary: who wins where", (*said, *k_cautions(data, advice), *unlisted_models_note(data), table,
                                               *missing), opening=True)


@register_section("requested_scores")
def requested_scores_section(data: ReportData) -> Section | None:
    """Every score the config asks for that the summary does not show (held-out, label-based,
    posterior, ...), a models x corpora table each, titled with its direction; a model without a
    value says why. None where the summary shows them all."""
    in_summary = {key for key, _ in summary_keys(data)}
    # a metric of one score is all in the summary; of several (clustering), the others stay here
    whole = {metric_name(key) for key in in_summary if not METRICS.get(metric_name(key)).outputs}
    keys = [key for metric in requested_metrics(data) if metric not in whole
            for key in requested_keys(data.runs, metric, TABLE_N) if key not in in_summary]
    shown = dict(models=data.models, corpora=data.corpora, expected=len(data.seeds), model_metrics=model_metrics(data))
    tables = [replace(table, title=f"{key}{direction_words(key)}", note=purity_caution(key, data, table.note))
              for key in keys if not (table := score_table(data.runs, key, **shown)).empty]
    if not tables:  # none asked beyond the summary's, or none scored: then why
        return unshown_section("Every other score asked for", unscored_reason(data, [(key, key) for key in keys]))
    described = "; ".join(f"{metric}: {METRICS.get(metric).description} ({METRICS.get(metric).aggregate})"
                          for metric in dict.fromkeys(metric_name(key) for key in keys))
    return Section("Every other score asked for", (
        "The scores the config asks for that the summary does not show, each with its direction: mean ± 95% "
        f"t-interval over seeds (coherence-like scores at N = {TABLE_N}). {described}.",
        *tables,
    ))


@register_section("data_and_settings")
def data_and_settings_section(data: ReportData) -> Section | None:
    """What the numbers rest on (:mod:`~topicbench.tasks.report.data_and_settings`): corpora,
    preprocessing, labels, each model's settings, seeds and versions; why not, where the source
    holds no record (a bundle exported before it was written); None where it was not read."""
    if data.data_settings is None:
        return None
    if data.data_settings.get("absent"):
        return unshown_section("Data and settings", f"Not shown: {data.data_settings['absent']}.")
    return Section("Data and settings", data_settings_blocks(data.data_settings, data.corpora, data.models))


@register_section("changed_settings")
def changed_settings_section(data: ReportData) -> Section | None:
    return table_section(
        "Runs whose settings differ from the model's defaults",
        "Every other setting of every run is its model's default (the authors' defaults for the "
        "baselines). These were set in the config:", changed_settings_table(data.runs),
    )


@register_section("notes")
def notes_section(data: ReportData) -> Section | None:
    paragraphs = tuple(line.strip() for line in data.notes.strip().split("\n\n") if line.strip())
    return Section("Notes", paragraphs) if paragraphs else None


@register_section("set1")
def set1_section(data: ReportData) -> Section | None:
    return table_section(
        "Experiment Set 1: log posterior with the topics held fixed",
        "Σ log φ_z[w] over all tokens (×10^6, higher is better) for the LDA's own token assignment, "
        "E-LDA run on the LDA's topics with the budget matched to its mean distinct topics per "
        "document, and RandK (labels shifted cyclically, mean of 30 draws); mean ± 95% t-interval over seeds.", set1_table(data.runs),
    )


def pivots(data: ReportData, columns, keep_empty: bool = False) -> list:
    """For each (score key or column, title): its models x corpora table, titled (the empty ones
    dropped, unless ``keep_empty``); a metric's table has a row for every model, a value it lacks
    a footnote with the reason (:func:`~topicbench.tasks.report.summary.score_table`)."""
    shown = dict(models=data.models, corpora=data.corpora, expected=len(data.seeds))
    tables = []
    for key, title in columns:
        table = metric_pivot(data.runs, key, **shown)
        if higher_is_better(key) is not None and not table.empty:  # a metric some model has: the others say why not
            table = score_table(data.runs, key, **shown, model_metrics=model_metrics(data))
        tables.append(replace(table, title=title))
    return [table for table in tables if keep_empty or not table.empty]


@register_section("coherence")
def coherence_section(data: ReportData) -> Section | None:
    """Each coherence measure against N, a plot per corpus, and a table of each at N = TABLE_N;
    where no model has any of them, only why (:func:`~topicbench.tasks.report.summary.unscored_reason`)."""
    keys = [(f"{key}@{TABLE_N}", f"{title}@{TABLE_N}") for key, title in COHERENCE_MEASURES]
    tables = pivots(data, keys)
    if not tables:
        return unshown_section("Coherence against N", unscored_reason(data, keys))
    asked = [key for key, _ in keys if metric_name(key) in requested_metrics(data)] or [keys[0][0]]
    figures = tuple(block for corpus in data.corpora for block in (  # a model not drawn: why, under its plot
        Plot(f"coherence_{file_name_for(corpus)}.png", f"coherence against N on {corpus}",
             partial(plots.coherence_figure, corpus=corpus, measures=COHERENCE_MEASURES),
             partial(interactive.coherence_figure, corpus=corpus, measures=COHERENCE_MEASURES)),
        *plot_absences(data, corpus, asked)))
    return Section("Coherence against N", (
        "Mean over seeds (band: its 95% Student-t interval) of each measure over the top-N words of every topic a model uses.",
        *figures,
        f"The tables compare the models at N = {TABLE_N}: mean ± 95% t-interval over seeds. A model whose topics have "
        f"fewer than {TABLE_N} words shows its score at the largest N they allow, as (N=…).",
        *tables,
    ))


LLM_MEASURES = (("llm_rating", "LLM rating (1-3)"), ("llm_intrusion", "LLM intrusion accuracy"),
                ("llm_rating_answered", "share of topics rated"), ("llm_intrusion_answered", "share of topics with an answered intrusion draw"))
#: The document-level judgments (ProxAnn): Kendall's τ-b of the judge's answers against θ, and their bookkeeping.
DOCUMENT_MEASURES = (("llm_fit", "LLM fit τ (documents' fit against θ, -1 to 1)"),
                     ("llm_rank", "LLM rank τ (documents' ranking against θ, -1 to 1)"),
                     ("llm_fit_answered", "share of topics with a fit τ"),
                     ("llm_rank_answered", "share of topics with a rank τ"))
#: What the judging asked of the endpoint, per run (all the LLM metrics of the run together).
JUDGING_USAGE_COLUMNS = (("llm_requests", "LLM requests of the judging"), ("llm_cached_replies", "replies from the cache"),
                         ("llm_prompt_tokens", "prompt tokens"), ("llm_completion_tokens", "completion tokens"),
                         ("llm_cost", "cost"))


@register_section("llm_judged")
def llm_judged_section(data: ReportData) -> Section | None:
    """The LLM's judgments of every model's topics per corpus: from their words (each part headed by
    how far that LLM agrees with people, its latest calibration, said plainly when it is weak), then
    from their documents (the same, on ProxAnn's study), then what the judging cost."""
    words, documents = pivots(data, LLM_MEASURES), pivots(data, DOCUMENT_MEASURES)
    if not words and not documents:  # asked for and never scored (no endpoint, ...): then why
        judged = [(key, title) for key, title in (*LLM_MEASURES[:2], *DOCUMENT_MEASURES[:2])
                  if key in requested_metrics(data)]
        return unshown_section("Judged by an LLM", unscored_reason(data, judged))
    llm = (data.config or {}).get("llm") or {}
    model, base_url = llm.get("model", "the LLM"), llm.get("base_url", "")
    word_blocks = (
        calibration_summary(model, base_url, data.calibration),
        f"Words: {model} rated each model's most prevalent topics (at most {llm.get('max_topics', 50)}) from their top 10 "
        "words, 1 (not very related) to 3 (very related), and picked the odd word out of five top words and an intruder "
        "(Stammbach et al. 2023; Chang et al. 2009). Mean ± 95% t-interval over seeds; every question and reply is a trace of its run. "
        "The shares of topics answered are bookkeeping (how many of the LLM's replies could be read), never marked best.",
        *judged_sample_caution(data, llm.get("max_topics", 50)),
        *words,
    ) if words else ()
    settings = JudgeSettings()
    document_topics = llm.get("document_topics", settings.document_topics)
    counts = document_topic_counts(data.runs, models=data.models, corpora=data.corpora, document_topics=document_topics)
    document_blocks = (
        *document_calibration_blocks(model, base_url, data.document_calibration),
        document_judging_text(model, llm, settings),
        *judged_sample_caution(data, document_topics, " of the documents' judging"),
        *documents,
        *(() if counts.empty else (counts,)),
    ) if documents else ()
    usage = [replace(table, unit="" if key == "llm_cost" else "count") for (key, _), table
             in zip(JUDGING_USAGE_COLUMNS, pivots(data, JUDGING_USAGE_COLUMNS, keep_empty=True)) if not table.empty]
    usage_text = ("What the judging asked of the endpoint, per run (every LLM metric of the run together; mean ± 95% "
                  "t-interval over seeds): requests made, replies read from the cache instead, tokens, and the cost where the endpoint "
                  "states its prices.")
    return Section("Judged by an LLM", (*word_blocks, *document_blocks, *((usage_text, *usage) if usage else ())))


@register_section("diversity")
def diversity_section(data: ReportData) -> Section | None:
    columns = [(f"topic_diversity@{n}", f"TD@{n}") for n in (10, 25)] + [(f"inverted_rbo@{TABLE_N}", "inverted RBO")]
    tables = pivots(data, columns)
    return Section("Topic diversity", tuple(tables)) if tables else unshown_section(
        "Topic diversity", unscored_reason(data, columns))


@register_section("training")
def training_section(data: ReportData) -> Section | None:
    figures = (Plot(f"training_{file_name_for(corpus)}.png", f"training loss curves on {corpus}",
                    partial(plots.training_figure, corpus=corpus), partial(interactive.training_figure, corpus=corpus))
               for corpus in data.corpora)
    table = training_table(data.runs, corpora=data.corpora, models=data.models)
    absent = () if table.empty else training_absences(data, set(table.cells.model))  # E-LDA: not iterative
    return table_section(
        "Training and convergence",
        "Every iterative fit logs its loss per epoch (Gibbs: per 10 sweeps) as the MLflow metric history "
        f"training_loss. {tail_rule_in_words()} A model whose package keeps no loss per iteration (NMF, KeyNMF, "
        "S3, GMM) reports its package's own stopping rule instead: converged, or stopped at its iteration cap. "
        "The rule column names the rule that judged each row.",
        table, *absent, *figures,
    )


@register_section("fit_time")
def fit_time_section(data: ReportData) -> Section:
    columns = [("fit_seconds", "fit time"), ("setup_seconds", "setup time"), ("peak_memory_mb", "peak memory MB"),
               ("num_topics_used", "topics used"), *FIT_LLM_COLUMNS]
    units = {"fit_seconds": "seconds", "setup_seconds": "seconds", "num_topics_used": "count"}
    tables = [replace(table, unit=units.get(key, "")) for (key, _), table in zip(columns, pivots(data, columns, keep_empty=True))]
    return Section("Fit time and memory", (
        "Fit time is the training alone. One-time work before it (numba compiling E-LDA's kernels "
        "once per worker process, or loading them from numba's cache; loading cached document "
        "embeddings and the torch modules) is timed apart as setup time.",
        Plot("fit_time.png", "fit time per model and corpus", partial(plots.fit_time_figure, corpora=data.corpora),
             partial(interactive.fit_time_figure, corpora=data.corpora)),
        *(table for table in tables if not table.empty),
    ))


@register_section("robustness")
def robustness_section(data: ReportData) -> Section:
    return Section("Robustness: does the UMass ranking hold under other metrics?", (
        "E-LDA's keyword topics are built from the same document co-occurrence counts UMass scores, "
        f"and UMass rewards frequent words. For each corpus, models are ranked by mean UMass@{TABLE_N} and "
        "by each other metric; Kendall's tau near 1 means the ranking holds. The largest flips name "
        "two models with their ranks under UMass → under the other metric (1 is the best). The number "
        "of topics each model uses is in the fit table above.",
        *((ranking,) if not (ranking := ranking_agreement(data.runs, TABLE_N, data.corpora)).empty
          else (robustness_reason(data, TABLE_N),)),  # never a bare "(no data)": why, and how to ask for it
    ))


STABILITY_TEXT = (
    "The topics of each pair of seeds are matched one to one (Hungarian algorithm) on 1 − the Jensen-Shannon distance "
    "of their word distributions (1: the same topic): the matched similarity is the mean over the larger run's topics "
    "(a topic left without a partner counts 0), a topic reappears when its match reaches 0.5, and the top-10 RBO is "
    "the same matching on the rank-biased overlap of the top 10 words; mean ± 95% t-interval over every pair of seeds. The chance "
    "level is a permutation distribution: pairs of seeds with the words of one run's topics shuffled, the level of "
    "unrelated topics of the same shapes; a model is near chance where its similarity is not significantly above it "
    "(one-sided permutation test). A model whose seeds all give the same fit has one fit, not several: its "
    "stability is not applicable."
)


@register_section("stability")
def stability_section(data: ReportData) -> Section | None:
    """Each model's stability across seeds, a table per corpus, then the models it could not be
    measured for; None when the flow did not read the runs' outputs."""
    if data.stability is None:
        return None
    tables = stability_tables(data.stability, data.corpora, data.models)
    remarks = stability_remarks(data.stability)
    if not tables and not remarks:
        return None
    return Section("Stability across seeds: do other seeds find the same topics?",
                   (*((STABILITY_TEXT,) if tables else ()), *tables, *remarks))


MATCHED_TOPICS_TEXT = (
    "Similar topics across models: beside each of the first model's topics, the topic of each other model (among "
    "all its topics) whose top words overlap it most, by the rank-biased overlap of the two top-10 word lists "
    "(RBO: 1 for the same words in the same order, 0 for no word in common; Webber et al. 2010). A dash: no topic "
    "of that model shares a top word with it."
)
EXAMPLES_TEXT = (
    f"Example documents: for each model's {TOPICS_SHOWN} most prevalent topics, the documents where the topic weighs "
    f"most (the largest p(topic | document)), as the model read them (their words after preprocessing), at most "
    f"{EXCERPT_CHARS} characters each; #17 is the corpus's document 17, counted from 0 once the documents that "
    "preprocessing left empty are dropped. \"Main topic of\": the documents whose largest topic it is. A model "
    "tracked before example documents were logged has no table here."
)
LABELS_TEXT = (
    "Topics by label: the documents whose main topic each topic is, counted by the corpus's labels; a topic that "
    "gathers one label's documents is one a reader can name."
)


@register_section("topics")
def topics_section(data: ReportData) -> Section | None:
    """Every model's topics side by side, a table per corpus; then the topics matched across models,
    each model's topics with example documents and, for labelled corpora, its topics by label."""
    shown = dict(corpora=data.corpora, models=data.models, topics=TOPICS_SHOWN)
    tables = model_topics(data.runs, **shown, words=TOPIC_WORDS_SHOWN, scored_by=TOPIC_SCORES_SHOWN)
    if not tables:
        finished = len(data.runs) and (data.runs.status == "FINISHED").any()
        return unshown_section("Topics: every model's most prevalent topics", "Not shown: " + (
            "no finished run logged its topics" if finished else "no run of this experiment finished") + ".")
    matched = matched_topics(data.runs, **shown, words=TOPIC_WORDS_SHOWN)
    examples = topic_examples(data.runs, **shown, words=TOPIC_WORDS_SHOWN)
    by_label = topics_by_label(data.runs, **shown)
    return Section("Topics: every model's most prevalent topics", (
        f"Each model's {TOPICS_SHOWN} most prevalent topics on each corpus, from its first seed, with its top "
        f"{TOPIC_WORDS_SHOWN} words. In brackets: the topic's share of the documents (the mean of p(topic | document)), "
        f"its own NPMI@{TABLE_N} (from -1 to 1; 0: its words co-occur as often as chance; the model's NPMI@{TABLE_N} "
        "is the mean over its topics) and, where an LLM judged it, its rating (1-3) and its documents' fit and rank τ "
        "against θ (-1 to 1). A run whose topic-document matrix could not be read shows its first topics in its own "
        "order; one tracked before topics were scored one by one shows no NPMI.",
        *topic_count_note(data),  # one seed's count here, the mean over seeds in the summary
        *tables,
        *((MATCHED_TOPICS_TEXT, *matched) if matched else ()),
        *((EXAMPLES_TEXT, *examples) if examples else ()),
        *((LABELS_TEXT, *by_label) if by_label else ()),
    ))


@register_section("elda_topics")
def elda_topics_section(data: ReportData) -> Section | None:
    """Each E-LDA variant's keyword topics (the first of them), titled with how many it has."""
    topics = elda_topics(data.runs)
    if not topics:
        return None
    order = sorted(topics, key=lambda pair: pair_order(pair, data.corpora, data.models))
    return Section("E-LDA's topics and their keywords", (
        "Each E-LDA variant's topics on each corpus, from its first seed, the topic with most documents first.",
        *(topics[pair] for pair in order),
    ))


@register_section("failed_runs")
def failed_runs_section(data: ReportData) -> Section | None:
    """The runs that ended in an error, with it, apart from those interrupted (stopped, not
    failed: the same command fits them again)."""
    kinds = (("failed", "ended in an error", failed_runs(data.runs)),
             ("interrupted", "stopped before finishing; rerunning the same command fits them", interrupted_runs(data.runs)))
    shown = [(kind, meaning, runs) for kind, meaning, runs in kinds if not runs.empty]
    if not shown:
        return None
    return Section(" and ".join(kind for kind, _, _ in shown).capitalize() + " runs", tuple(
        ReportTable(runs[["corpus", "model", "seed", "error"]].reset_index(drop=True), title=f"{kind}: {meaning}")
        for kind, meaning, runs in shown))
