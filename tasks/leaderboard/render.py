"""The leaderboard's page as one list of blocks (:func:`page_blocks`): headings, paragraphs,
diagrams and :class:`Table` s whose cells carry their text, the value they sort by, their hover
text and their interval; and that list as ``leaderboard.md`` (:func:`render_markdown`).
:mod:`~topicbench.tasks.leaderboard.page_html` renders the same blocks as HTML, and
:mod:`~topicbench.tasks.leaderboard.write` writes the files.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from topicbench.core.metrics.stats import ALPHA, DETERMINISTIC, MIN_SEEDS_FOR_INTERVAL, RANK_BOUNDS_RULE

from topicbench.tasks.leaderboard.cross import MAIN_GROUP, MIN_DATASETS
from topicbench.tasks.leaderboard.ranking import Leaderboard, plain_number
from topicbench.tasks.report.render import format_number
from topicbench.tasks.report.summary import K_FACTOR
from topicbench.tasks.report.text import markdown_paragraph, markdown_text

CD_IMAGE = "critical_difference.png"
#: The level of every interval on the page (the intervals' level is 1 − α).
LEVEL = 1 - ALPHA


@dataclass(frozen=True)
class Cell:
    """A table cell: its text, the number it sorts by (None: by its text) and its hover text;
    ``rank`` (rank, of) colours it on the report's rank scale; ``detail`` (an interval, or why
    there is none) goes on a line of its own below the text in HTML, after it in Markdown."""

    text: str
    sort: float | None = None
    title: str = ""
    rank: tuple | None = None
    detail: str = ""


@dataclass(frozen=True)
class Table:
    headers: tuple
    rows: tuple
    note: str = ""


def interval_detail(interval, digits: int = 3) -> str:
    """What stands where a score's ± would: its interval, or why it has none."""
    if interval.deterministic:
        return DETERMINISTIC
    if not interval.has_interval:
        return f"n = {interval.n}: no interval"
    return f"[{format_number(interval.low, digits)}, {format_number(interval.high, digits)}]"


def rank_text(rank) -> str:
    """A rank as the page prints it: "3" or "3= (2–5)" (= a tie on the mean; the interval, where
    it is wider than the rank, the ranks the intervals allow)."""
    text = f"{rank.rank}{'=' if rank.tied else ''}"
    return text if rank.best == rank.worst else f"{text} ({rank.best}–{rank.worst})"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _metric_title(key: str, higher: bool) -> str:
    return f"{key} {'↑' if higher else '↓'}"


def dataset_table(board, headline) -> Table:
    """One dataset's models: rank on its first headline metric with the ranks its intervals allow,
    each headline metric's mean with its interval, K, seeds, fit time and memory."""
    keys = [(key, higher) for key, higher in headline
            if any(key in e.scores or key in e.unranked for e in board.entries)]
    first = keys[0][0] if keys else None
    rows = []
    for entry in board.entries:
        rank = entry.ranks.get(first)
        cells = [Cell(rank_text(rank), rank.rank, f"rank {rank.rank} of {rank.of} on {first}; the intervals allow "
                      f"{rank.best} to {rank.worst}", (rank.rank, rank.of)) if rank
                 else Cell("—", None, entry.unranked[first][1] if first in entry.unranked
                           else f"not scored on {first}: not ranked on it"),
                 Cell(entry.model, title=f"{entry.model_class} from bundle {entry.bundle}")]
        for key, _ in keys:
            score, place = entry.scores.get(key), entry.ranks.get(key)
            if key in entry.unranked:  # kept out of the ranking: its value, and why on a line of its own
                shown, reason = entry.unranked[key]
                cells.append(Cell(f"{format_number(shown.mean, 3)} (not ranked)", None, reason, detail=reason))
                continue
            note = entry.in_reference.get(key)  # over the words the reference has: the full note on hover
            cells.append(Cell(format_number(score.mean, 3), score.mean,
                              f"rank {rank_text(place)} of {place.of} on {key}; {score.method}" + (f"; {note}" if note else ""),
                              detail=interval_detail(score) + ("; in-reference words only" if note else ""))
                         if score else Cell("—", None, f"not scored on {key}"))
        cells += [Cell(entry.num_topics, entry.topics, "mean over seeds of the topics the model used"),
                  Cell(str(len(entry.seeds)), len(entry.seeds), "seeds " + ", ".join(map(str, entry.seeds))),
                  Cell(format_number(entry.fit_seconds, 3), entry.fit_seconds, "mean over seeds"),
                  Cell(format_number(entry.peak_memory_mb, 3), entry.peak_memory_mb, "mean over seeds")]
        rows.append(tuple(cells))
    headers = (f"rank ({first})" if first else "rank", "model", *(_metric_title(k, h) for k, h in keys), "K", "seeds",
               "fit time (s)", "peak memory (MB)")
    return Table(headers, tuple(rows), "↑ higher is better, ↓ lower is better; intervals and ranks as stated at the "
                 "top of the page.")


def cross_table(cross) -> Table:
    """One metric's ranking across datasets: position by mean rank (= a tie), the mean rank with
    the means of the per-dataset rank bounds, K and the rank on each dataset."""
    rows = []
    for model in cross.models:
        place, low, high = cross.position(model), cross.rank_low[model], cross.rank_high[model]
        fewest, most = cross.topics[model]
        cells = [Cell(f"{place}{'=' if cross.tied(model) else ''}", place, "position by mean rank",
                      (place, len(cross.models))), Cell(model),
                 Cell(format_number(cross.mean_ranks[model], 3), cross.mean_ranks[model],
                      "mean over the datasets of its rank among this table's models (ties share their mean rank)",
                      detail=f"({format_number(low, 3)}–{format_number(high, 3)})"),
                 Cell(plain_number(fewest) if fewest == most else f"{plain_number(fewest)}–{plain_number(most)}",
                      most, "topics used, over the datasets")]
        cells += [Cell(plain_number(rank), rank, f"rank on {corpus} among this table's models")
                  for corpus, rank in zip(cross.datasets, cross.block_ranks[model])]
        rows.append(tuple(cells))
    headers = ("rank", "model", "mean rank", "K", *cross.datasets)
    return Table(headers, tuple(rows), "Mean rank (below it: the means over the datasets of the ranks each "
                 "dataset's intervals allow); a dataset's column: the model's rank there among this table's models.")


def cross_text(cross) -> list[str]:
    """A ranking's test in words, or why there is none; the pairs told apart; who is left out."""
    ahead = {}
    for better, worse in cross.separated:
        ahead.setdefault(better, []).append(worse)
    pairs = "; ".join(f"{better} ahead of {', '.join(worse)}" for better, worse in ahead.items()) or "none"
    lines = []
    if cross.group != MAIN_GROUP:
        span = (f" ({plain_number(min(low for low, _ in cross.topics.values()))} to "
                f"{plain_number(max(high for _, high in cross.topics.values()))} topics)" if cross.topics else "")
        lines.append(f"Models whose K differs by more than {K_FACTOR:g}× from the median K of a dataset's models{span}: "
                     "ranked among themselves only, never with the models above, as coherence and diversity depend "
                     "on K; their own K differ, so read this ranking as descriptive.")
    if cross.result is None:
        lines.append(f"No test: {cross.reason}. Mean ranks over {_count(len(cross.datasets), 'dataset')} are shown "
                     f"with their intervals. Pairs told apart by {cross.separated_by}: {pairs}.")
    else:
        result = cross.result
        verdict = "some models differ" if result.pvalue < ALPHA else "no difference among the models is shown"
        lines.append(f"{str(result.omnibus).title()}'s test over {_count(len(cross.datasets), 'dataset')} (the "
                     f"blocks; autorank, Demšar 2006, α = {ALPHA:g}): p = {format_number(result.pvalue, 2)} "
                     f"({verdict}). Pairs told apart by {cross.separated_by}: {pairs}.")
    if cross.not_blocks:
        lines.append("Not a block of this ranking, as fewer than half of its models were scored there: "
                     + "; ".join(cross.not_blocks) + ".")
    if cross.left_out:
        lines.append(f"Not in this ranking, which needs {cross.metric} on every one of its datasets (see each "
                     "dataset's table): " + "; ".join(cross.left_out) + ".")
    return lines


def k_caution(board) -> list[str]:
    """A caution where the models on ``board`` differ in K by more than the report's factor."""
    topics = [entry.topics for entry in board.entries if math.isfinite(entry.topics) and entry.topics > 0]
    if not topics or max(topics) <= K_FACTOR * min(topics):
        return []
    return [f"Caution: K differs by more than {K_FACTOR:g}× among these models ({plain_number(min(topics))} to "
            f"{plain_number(max(topics))} topics); coherence and diversity depend on K, so compare them at matched "
            f"K in the benchmark's report. Across datasets, a model more than {K_FACTOR:g}× from the median K is "
            "ranked apart."]


def rules_text(leaderboard: Leaderboard) -> list[str]:
    """What ranks and how, as the page states it first."""
    metrics = "; ".join(f"{key} ({'higher' if higher else 'lower'} is better)" for key, higher in leaderboard.headline)
    return [f"Headline metrics: {metrics}. Each dataset's table is ordered by the first of them the dataset has (a "
            "model without it below, by the next); the default headline is, of NPMI@10, C_V@10, TD@10 and the "
            "LLM's rating and intrusion, those the bundles scored; the directions come from the metric registry.",
            f"Intervals: each score is a mean over seeds with its {LEVEL:.0%} Student-t interval below it (mean ± "
            f"t(n − 1) · sd/√n, n the seeds column); fewer than {MIN_SEEDS_FOR_INTERVAL} seeds give none; a model whose "
            f"seeds all gave the same value says \"{DETERMINISTIC}\" and has no interval, never a zero-width one.",
            f"Ranks: 1 is the best, = marks a tie on the mean, and the brackets hold the ranks the intervals allow: "
            f"{RANK_BOUNDS_RULE}. Only FINISHED fits rank; a score outside its metric's valid range, or worse than "
            "the uniform model over the vocabulary (perplexity above V), is shown with its reason and never ranked.",
            f"Across datasets: each headline metric is ranked on its own with the datasets as blocks (not metrics: "
            f"the metrics of a dataset come from the same fits); Friedman's test with Nemenyi's critical difference "
            f"runs only with at least {MIN_DATASETS} datasets; models whose K differs by more than {K_FACTOR:g}× from "
            "the median K are ranked apart.",
            "Each dataset ranks in one version (fingerprint and preprocessing); fits made with other data or "
            "preprocessing are never ranked with them.",
            *leaderboard.set_aside]


def judge_lines(leaderboard: Leaderboard) -> list[str]:
    """The LLM that judged each bundle and its calibrations against people (word-level: Hoyle et
    al.'s ratings; document-level: ProxAnn's study), or that it has none."""
    lines = []
    for bundle, llm in leaderboard.judges:
        model = llm.get("model", "an LLM")
        words, documents = llm.get("calibration"), llm.get("document_calibration")
        if not words and not documents:
            lines.append(f"Bundle {bundle}: judged by {model}, not calibrated against people: read its scores as one "
                         "model's opinion.")
            continue
        lines.append(f"Bundle {bundle}: judged by {model}; {_word_calibration(words)}; "
                     f"{_document_calibration(documents)}.")
    return lines


def _word_calibration(calibration: dict | None) -> str:
    if not calibration:
        return "word lists not calibrated against people"
    parts = [f"{row['measure']}: ρ = {fit['rho']:.2f} [{fit['low']:.2f}, {fit['high']:.2f}] against people's "
             f"{against}s" for row in calibration.get("rows", []) for against in ("rating", "intrusion")
             if row.get("measure") == f"llm_{against}" and isinstance(fit := row.get(against), dict)]
    verdict = f" ({calibration['verdict']})" if calibration.get("verdict") else ""
    return f"word-level calibration ({calibration.get('topics')} topics): {', '.join(parts) or 'no correlations recorded'}{verdict}"


def _document_calibration(calibration: dict | None) -> str:
    if not calibration:
        return "documents' judging not calibrated against people"
    judge = calibration.get("judge", {})
    parts = [f"llm_{answer}: τ = {tau['tau']:+.2f} (SE {tau['se']:.2f})" for answer in ("fit", "rank")
             if isinstance(tau := judge.get(answer), dict) and "tau" in tau and "se" in tau]
    return (f"document-level calibration on ProxAnn's study ({calibration.get('topics')} topics), topic-ranking "
            f"agreement with people: {', '.join(parts) or 'no τ recorded'}")


def settings_lines(leaderboard: Leaderboard) -> list[str]:
    """Each model's settings, once for the datasets it was fitted on with the same settings."""
    used = {}
    for board in leaderboard.datasets:
        for entry in board.entries:
            settings = json.dumps(entry.settings, sort_keys=True)
            used.setdefault((entry.model, entry.model_class, entry.bundle, settings), []).append(board.corpus)
    return [f"{model} ({model_class}, bundle {bundle}) on {', '.join(corpora)}: {settings}"
            for (model, model_class, bundle, settings), corpora in sorted(used.items())]


def diagram_file(cross) -> str:
    """The file of a ranking's critical-difference diagram."""
    return f"{Path(CD_IMAGE).stem}_{re.sub(r'[^A-Za-z0-9_.-]', '_', cross.metric)}.png"


def _diagram_caption(cross) -> str:
    fewest = min(low for low, _ in cross.topics.values())
    most = max(high for _, high in cross.topics.values())
    return (f"Critical-difference diagram of {cross.metric} (Nemenyi, α = {ALPHA:g}): models at K "
            f"{plain_number(fewest)} to {plain_number(most)}; models at another K are not in it.")


def cross_blocks(leaderboard: Leaderboard, with_diagram: bool) -> list:
    """The rankings across datasets, one a (metric, K group), each with its test and diagram."""
    blocks = [("h2", "Across datasets")]
    for cross in leaderboard.crosses:
        title = _metric_title(cross.metric, cross.higher)
        blocks += [("h3", title if cross.group == MAIN_GROUP else f"{title}: models at another K"),
                   *([cross_table(cross)] if cross.models else []), *(("p", line) for line in cross_text(cross))]
        if with_diagram and cross.result is not None and cross.group == MAIN_GROUP:
            blocks.append(("image", diagram_file(cross), _diagram_caption(cross)))
    return blocks


def page_blocks(leaderboard: Leaderboard, with_diagram: bool) -> list:
    """The page as ("h1" | "h2" | "h3" | "p", text), :class:`Table` and ("image", file, caption) blocks."""
    bundles = ", ".join(f"{b.name} ({b.manifest.get('created', '?')}, topicbench "
                        f"{b.manifest.get('topicbench_version', '?')}, commit {str(b.manifest.get('commit', '?'))[:12]})"
                        for b in leaderboard.bundles)
    blocks = [("h1", "Topic model leaderboard"),
              ("p", f"Built from {_count(len(leaderboard.bundles), 'bundle')}: {bundles}."),
              *(("p", line) for line in rules_text(leaderboard)),
              *cross_blocks(leaderboard, with_diagram)]
    for board in leaderboard.datasets:
        blocks += [("h2", f"Dataset: {board.corpus}"),
                   ("p", f"Fingerprint (SHA-256) {board.fingerprint}; source {board.source}; preprocessing "
                         f"{json.dumps(board.preprocessing, sort_keys=True)}."),
                   *(("p", line) for line in k_caution(board)),
                   dataset_table(board, leaderboard.headline)]
    blocks += [("h2", "Settings"), *(("p", line) for line in settings_lines(leaderboard))]
    judged = judge_lines(leaderboard)
    if judged:
        blocks += [("h2", "The LLM judge"), *(("p", line) for line in judged)]
    return blocks


def _markdown_table(table: Table) -> str:
    def row(cells):
        return "| " + " | ".join(markdown_text(cell) for cell in cells) + " |"  # escapes | too

    lines = [row(table.headers), "|" + "---|" * len(table.headers)]
    lines += [row(cell.text + (f" {cell.detail}" if cell.detail else "") for cell in cells) for cells in table.rows]
    return "\n".join(lines) + (f"\n\n{markdown_text(table.note)}" if table.note else "")


def render_markdown(leaderboard: Leaderboard, with_diagram: bool) -> str:
    parts = []
    for block in page_blocks(leaderboard, with_diagram):
        if isinstance(block, Table):
            parts.append(_markdown_table(block))
        elif block[0] == "image":
            parts.append(f"![{markdown_text(block[2])}]({block[1]})")
        else:
            prefix = {"h1": "# ", "h2": "## ", "h3": "### ", "p": ""}[block[0]]
            parts.append(prefix + markdown_paragraph(markdown_text(block[1])))
    return "\n\n".join(parts) + "\n"
