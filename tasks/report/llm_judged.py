"""The LLM section's parts that are not score tables: how far the judge agrees with people (its
word-level calibration on Hoyle et al.'s ratings, its document-level one on ProxAnn's user
study), what the document-level questions were, and what each model's means rest on (the topics
with a τ). Pure functions of the run table, the config's ``llm`` block and the calibration records
of :mod:`topicbench.tasks.results.calibration_runs`; :mod:`.sections` puts them together."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import replace

import pandas as pd

from topicbench.core.metrics.proxann_agreement import PROXANN_PAIRING, PROXANN_SEED, TOPIC_RESAMPLES

from .summary import TOPICS_USED, topics_used
from .tables import ReportTable, finished_runs, pivot_by_model
from .text import Code, Markdown, Text

#: The answers of the document-level judge, and the metric each one gives.
DOCUMENT_ANSWERS = (("fit", "llm_fit"), ("rank", "llm_rank"))
#: How the document-level calibration table names ProxAnn's coherences (the scorers NPMI, C_V).
COHERENCE_NAMES = {"npmi": "NPMI (ProxAnn's file)", "cv": "C_V (ProxAnn's file)"}
PEOPLE_ROW = "people (one left out)"
#: ProxAnn's protocol, replayed beside the point τ: named as what it is wherever it is shown.
PROXANN_PROTOCOL = f"ProxAnn's protocol: mean of {TOPIC_RESAMPLES} resamples at seed {PROXANN_SEED}"


def calibration_summary(model: str, base_url: str, calibration: dict | None) -> Markdown:
    """The paragraph heading the word-level judgments: the judge's agreement with people, or that it has none."""
    if calibration is None:
        command = f"topicbench judge calibrate --llm-base-url {base_url or 'URL'} --llm-model {model}"
        return Markdown("**", Text(model), " has not been calibrated against people.** Run ", Code(command),
                        "; until then read these scores as one model's opinion, not people's.")
    rows = {row["measure"]: row for row in calibration.get("rows", [])}
    parts = []
    for measure, against in (("llm_rating", "rating"), ("llm_intrusion", "intrusion")):
        if measure in rows:
            fit = rows[measure][against]
            if rows[measure].get("constant") or not math.isfinite(fit.get("rho", math.nan)):  # a constant judge
                parts.append(f"{measure}: not measurable against people's {against}s (constant answers)")
            else:
                parts.append(f"{measure}: ρ = {fit['rho']:.2f} [{fit['low']:.2f}, {fit['high']:.2f}] against "
                             f"people's {against}s")
    return Markdown("**Calibration of ", Text(model), " against people** (Hoyle et al. 2021, ",
                    Text(f"{calibration.get('topics')} topics; run {calibration.get('run_id')}, {_day(calibration)}"),
                    "): ", Text(f"{'; '.join(parts)}. {calibration.get('verdict', '')}."))


def document_calibration_blocks(model: str, base_url: str, calibration: dict | None) -> tuple:
    """The blocks heading the document-level judgments: the judge's topic-ranking τ against
    people's (ProxAnn) with a plain reading and, where the run kept them, a table of it beside
    people's own and the released LLMs' and coherences' on the same topics; where the judge has no
    such calibration, that, and the commands that make one."""
    if calibration is None:
        fetch = "topicbench data fetch proxann"
        command = f"topicbench judge calibrate --protocol proxann --llm-base-url {base_url or 'URL'} --llm-model {model}"
        return (Markdown("**", Text(model), " has not been calibrated against people on documents.** Run ", Code(fetch),
                         ", then ", Code(command), "; until then read llm_fit and llm_rank as one model's opinion of "
                         "the documents, not people's."),)
    judge = {answer: current_parts(parts) for answer, parts in (calibration.get("judge") or {}).items()}
    taus = "; ".join(f"{answer} {tau_text(judge[answer])}" for answer, _ in DOCUMENT_ANSWERS
                     if (judge.get(answer) or {}).get("tau") is not None)
    summary = Markdown("**Document-level calibration of ", Text(model), " against people** (ProxAnn's Bills study, "
                       "Hoyle et al. 2025; ", Text(f"{calibration.get('topics') or '?'} topics; run "
                                                   f"{calibration.get('run_id')}, {_day(calibration)}"),
                       "): Kendall's τ, over the study's topics, between how far its answers follow θ and how far "
                       "people's do, ", Text(f"τ [95% interval] ({_method(judge)}): {taus or 'none logged'}. "
                                             f"{document_verdict(judge, calibration.get('people'))}"
                                             f"{advantage_text(calibration.get('advantage') or {})}"))
    table = document_calibration_table(model, calibration)
    return (summary,) if table.empty else (summary, table)


def document_verdict(judge: dict, people: dict | None) -> str:
    """The document-level calibration in words: weak where a τ's 95% interval reaches 0 (or no
    τ was logged), else above chance; and each τ beside people's own, where kept."""
    missing = [answer for answer, _ in DOCUMENT_ANSWERS if (judge.get(answer) or {}).get("tau") is None]
    weak = [answer for answer, _ in DOCUMENT_ANSWERS
            if answer not in missing and (judge[answer].get("low") is None or judge[answer]["low"] <= 0)]
    older = [answer for answer in missing if (judge.get(answer) or {}).get("proxann_tau") is not None]
    words = []
    if older:
        words.append(f"No point τ for {' and '.join(older)}: the run was logged before it was, with {PROXANN_PROTOCOL} "
                     f"(in the table), which is one seed's draw; run `topicbench judge calibrate --protocol proxann` "
                     "again for τ with its interval")
    if missing := [answer for answer in missing if answer not in older]:
        words.append(f"No τ for {' and '.join(missing)} (its answers were constant or missing)")
    if weak:
        words.append(f"Weak: the 95% interval of τ reaches 0 for {' and '.join(weak)}, so its ranking of topics by "
                     "those answers says little of people's")
    elif not missing:
        words.append("Its ranking of topics agrees with people's above chance (both intervals above 0)")
    beside = [f"{answer} {'at or above' if judge[answer]['tau'] >= own['tau'] else 'below'} people's own "
              f"({own['tau']:+.2f})" for answer, _ in DOCUMENT_ANSWERS
              if answer not in missing and (own := (people or {}).get(answer)) and own.get("tau") is not None]
    if beside:
        words.append(f"Against people's agreement with one another: {', '.join(beside)}")
    return ". ".join(words) + "."


def advantage_text(advantage: dict) -> str:
    """The alternative annotator test's advantage probabilities, as a sentence; empty without them."""
    cells = [f"{key.replace('_', ' ')} {value:.2f}" for key, value in advantage.items() if value is not None]
    if not cells:
        return ""
    return (" Advantage probability (how often it agrees with the other people at least as well as a left-out "
            f"person does; ProxAnn's alternative annotator test): {', '.join(cells)}.")


def document_calibration_table(model: str, calibration: dict) -> ReportTable:
    """Every scorer of the calibration run, the judge first, then people, the released LLMs and
    the coherences: τ [95% bootstrap interval] of fit and rank against people's, ProxAnn's
    protocol replayed (mean (SE) of its 50 resamples at seed 42), and the judge's mean
    per-document τ against people's answers; no cell is marked best (a calibration, not a race).
    Empty where the run kept neither people's τ nor another scorer's."""
    people, others = calibration.get("people"), calibration.get("others") or []
    if people is None and not others:
        return ReportTable(pd.DataFrame())
    judge = {answer: current_parts(parts) for answer, parts in (calibration.get("judge") or {}).items()}
    rows = [_calibration_row(f"{model} (this judge)", judge)]
    rows += [_people_row(people)] if people is not None else []
    rows += [_calibration_row(_scorer_name(row["scorer"]), {answer: current_parts(row.get(answer) or {})
                                                            for answer, _ in DOCUMENT_ANSWERS}) for row in others]
    dropped = "; ".join(f"{answer}: {parts['dropped']:.0f} of {parts['draws']:.0f} draws had an undefined τ and were "
                        "dropped" for answer, parts in (people or {}).items()
                        if parts and parts.get("draws") is not None and parts.get("dropped") is not None)
    note = (f"τ: Kendall's τ over topics between the scorer's agreement with θ and people's, on the topics as given "
            f"[95% interval: {_method(judge)}]. {PROXANN_PROTOCOL} (SE: their standard deviation), one seed's draw "
            "replayed to compare with ProxAnn's published figures, not the figure. People: one person per topic "
            "left out against the rest; the mean over draws (spread over which person is left out, not an SE) "
            f"[middle 95% of the draws]{f'; {dropped}' if dropped else ''}. Per-document τ: the mean over topics of τ "
            "between an LLM's answers and people's mean answers. ProxAnn reports, by its protocol, τ fit/rank of "
            "+0.31/+0.29 for GPT-4o, +0.22/+0.21 for Qwen2.5-72B, +0.16/+0.15 for Llama-3.1-8B (τ on the topics: "
            "+0.12/+0.10) and +0.09/+0.18 for people.")
    return ReportTable(pd.DataFrame(rows), title="Topic-ranking agreement with people (ProxAnn's Bills study)", note=note)


def current_parts(parts: dict) -> dict:
    """A logged τ's parts as this version names them: a run logged before the point estimate
    (no ``resamples``) logged ProxAnn's replay as ``tau`` and ``se``, so they move to
    ``proxann_tau`` and ``proxann_se`` and it has no point τ."""
    if parts.get("resamples") is not None or parts.get("tau") is None:
        return parts
    return {"proxann_tau": parts["tau"], "proxann_se": parts.get("se"), "document_tau": parts.get("document_tau")}


def _method(judge: dict) -> str:
    """The judge's bootstrap as words: "percentile bootstrap, 2,000 resamples of 24 topics"."""
    parts = next((judge[answer] for answer, _ in DOCUMENT_ANSWERS
                  if (judge.get(answer) or {}).get("resamples") is not None), None)
    if parts is None:
        return "no point τ logged"
    topics = f" of {parts['n_topics']:.0f} topics" if parts.get("n_topics") is not None else ""
    return f"percentile bootstrap, {parts['resamples']:,.0f} paired resamples{topics}"


def _scorer_name(scorer: str) -> str:
    if scorer.endswith(PROXANN_PAIRING):
        base = scorer.removesuffix(PROXANN_PAIRING)
        return f"{COHERENCE_NAMES.get(base, base)}, as ProxAnn paired it (replay only)"
    return COHERENCE_NAMES.get(scorer, scorer)


def _calibration_row(scorer: str, parts: dict) -> dict:
    row = {"scorer": scorer}
    for answer, _ in DOCUMENT_ANSWERS:
        row[f"τ {answer} [95%]"] = tau_text(parts.get(answer) or {})
    for answer, _ in DOCUMENT_ANSWERS:
        row[f"ProxAnn's protocol {answer} (SE)"] = replay_text(parts.get(answer) or {})
    for answer, _ in DOCUMENT_ANSWERS:
        value = (parts.get(answer) or {}).get("document_tau")
        row[f"per-document τ {answer}"] = None if value is None else f"{value:+.2f}"
    return row


def _people_row(people: dict) -> dict:
    row = _calibration_row(PEOPLE_ROW, {})
    for answer, _ in DOCUMENT_ANSWERS:
        parts = people.get(answer) or {}
        if parts.get("tau") is not None:
            spread = f" (spread {parts['spread']:.2f})" if parts.get("spread") is not None else ""
            row[f"τ {answer} [95%]"] = f"{parts['tau']:+.2f}{spread} [{parts['low']:+.2f}, {parts['high']:+.2f}]"
    return row


def tau_text(parts: dict) -> str | None:
    """A τ as "+0.12 [-0.20, +0.45]" (τ on the topics, 95% interval), the parts it has; None without τ."""
    if parts.get("tau") is None:
        return None
    text = f"{parts['tau']:+.2f}"
    if parts.get("low") is not None and parts.get("high") is not None:
        text += f" [{parts['low']:+.2f}, {parts['high']:+.2f}]"
    return text


def replay_text(parts: dict) -> str | None:
    """ProxAnn's replay as "+0.16 (0.18)" (mean (SE) of its 50 resamples); None without it."""
    if parts.get("proxann_tau") is None:
        return None
    se = parts.get("proxann_se")
    return f"{parts['proxann_tau']:+.2f}" + ("" if se is None else f" ({se:.2f})")


def document_judging_text(model: str, llm: dict, settings) -> str:
    """What the document-level judge was asked (``settings``: the judge's defaults, which the
    config's ``llm`` block overrides)."""
    topics, exemplars, evaluated = (llm.get(name, getattr(settings, name))
                                    for name in ("document_topics", "exemplar_documents", "evaluation_documents"))
    return (f"Documents: {model} named the category of each model's most prevalent topics (at most {topics}) from "
            f"their top 10 words and the {exemplars} documents where each weighs most, then rated how well each of "
            f"{evaluated} documents drawn across the topic's θ fits it (1-5) and ranked them pair by pair (ProxAnn, "
            "Hoyle et al. 2025). A topic's llm_fit and llm_rank are Kendall's τ-b between the documents' θ and those "
            "fits or ranks (-1 to 1; 0: the judge's answers do not follow θ); a model's is the mean over its judged "
            "topics that have a τ (a topic whose answers are all equal has none). Mean ± 95% t-interval over seeds. The shares "
            "and counts of topics with a τ are bookkeeping, never marked best.")


def document_topic_counts(runs: pd.DataFrame, *, models, corpora, document_topics: int) -> ReportTable:
    """Per model and corpus, the topics with a fit τ and with a rank τ of those judged (a run's K,
    at most ``document_topics``: ``llm_fit_answered`` and ``llm_rank_answered`` are shares of
    them), mean over seeds: what each mean of the tables rests on. Empty where no run has a
    document-level score or its K."""
    done = finished_runs(runs)
    answered = [(name, f"{metric}_answered") for name, metric in DOCUMENT_ANSWERS if f"{metric}_answered" in done]
    if not answered or TOPICS_USED not in done:
        return ReportTable(pd.DataFrame())
    judged = done[TOPICS_USED].clip(upper=document_topics)
    cells = {}
    for pair, group in done.groupby(["corpus", "model"]):
        of = judged[group.index]
        counts = [f"{name} {(group[column] * of).mean():.3g}" for name, column in answered
                  if (group[column] * of).notna().any()]
        if counts:
            cells[pair] = f"{', '.join(counts)} of {of.mean():.3g}"
    if not cells:
        return ReportTable(pd.DataFrame())
    shown = [corpus for corpus in corpora if any(corpus == pair[0] for pair in cells)]
    return replace(pivot_by_model(cells, models=models, corpora=shown),
                   title="topics with a τ, of those judged (mean over seeds)")


def _day(calibration: dict) -> str:
    return f"{dt.datetime.fromtimestamp(calibration.get('when', 0) / 1000, dt.timezone.utc):%Y-%m-%d}"


#: Fewer topics judged per model, or fewer seeds, than this and the LLM's scores carry a caution.
JUDGED_TOPICS_ENOUGH, JUDGED_SEEDS_ENOUGH = 10, 2


def judged_sample_caution(data, max_topics: int, of: str = "") -> tuple:
    """What the LLM's means rest on: the fewest topics judged for a model (its K, at most
    ``max_topics``) and the seeds; a caution where they are few (a difference of a few hundredths
    between models is then within chance). ``of`` names the judging, after "Sample"."""
    used = [k for corpus in data.corpora for model in data.models
            if (k := topics_used(data.runs, corpus, model)) is not None]
    judged = min(min(used), max_topics) if used else max_topics
    seeds = len(data.seeds)
    sample = f"the fewest topics judged for a model is {judged:g}, over {seeds} seed{'s' if seeds != 1 else ''}"
    if judged >= JUDGED_TOPICS_ENOUGH and seeds >= JUDGED_SEEDS_ENOUGH:
        return (Markdown(f"Sample{of}: {sample}."),)
    return (Markdown(f"**Small sample{of}:** {sample}; with fewer than {JUDGED_TOPICS_ENOUGH} topics or a single seed, "
                     "differences between the models here are within chance: read them as a hint."),)
