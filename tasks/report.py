"""Reports from tracked runs: collect (MLflow -> tidy table) and render (Markdown + self-contained
HTML with PNG plots). The render helpers are pure functions of the table."""

from __future__ import annotations

import base64
import datetime as dt
import html
import io
import json
import logging
import warnings
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
from prefect import task
from prefect.cache_policies import NONE

from topicbench.core.metrics.stats import paired_test, summarize

from .tracking import FIT_ROLE, TrackingError, check_tracking_uri, score_key

logger = logging.getLogger(__name__)

COHERENCE_PLOTS = (("umass", "UMass"), ("npmi", "NPMI"), ("cv", "C_V"), ("embedding_pairwise", "embedding (pairwise)"))
RANKING_METRICS = (("npmi", "NPMI"), ("cv", "C_V"), ("embedding_pairwise", "embedding"), ("topic_diversity", "diversity"))
RANK_N = 10


@task(name="collect_runs", cache_policy=NONE)
def collect_runs(tracking_uri: str, experiment: str) -> pd.DataFrame:
    """One row per nested (corpus, model, seed) run: tags, status, error, every metric (score keys,
    e.g. ``umass@10``) and the E-LDA topics where present (latest run per run key)."""
    from mlflow.tracking import MlflowClient

    check_tracking_uri(tracking_uri)
    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        raise TrackingError(f"no MLflow experiment named {experiment!r} at {tracking_uri}")
    runs = client.search_runs(
        [found.experiment_id], filter_string=f"tags.`topicbench.role` = '{FIT_ROLE}'",
        max_results=50_000, order_by=["attributes.start_time DESC"],
    )
    rows, seen = [], set()
    for run in runs:
        tags = run.data.tags
        key = (tags.get("topicbench.run_key"), run.info.status)
        if key in seen:
            continue
        seen.add(key)
        row = {
            "run_id": run.info.run_id, "status": run.info.status, "corpus": tags.get("corpus"),
            "model": tags.get("model"), "model_class": tags.get("model_class"), "seed": int(tags.get("seed", 0)),
            "error": tags.get("topicbench.error", ""), "run_key": tags.get("topicbench.run_key"),
        }
        row.update({score_key(name): value for name, value in run.data.metrics.items()})
        row["changed_settings"] = tags.get("topicbench.changed_settings", "")
        row["training_loss_kind"] = tags.get("topicbench.training_loss_kind", "")
        if tags.get("model_class") == "elda" and run.info.status == "FINISHED":
            row["topics_json"] = _topics_artifact(client, run.info.run_id)
        if "training_loss" in run.data.metrics:
            history = sorted(client.get_metric_history(run.info.run_id, "training_loss"), key=lambda m: m.step)
            row["training_curve"] = ([m.step for m in history], [m.value for m in history])
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise TrackingError(f"experiment {experiment!r} has no tracked runs yet")
    # a run key that finished after failing earlier counts as finished
    finished = set(frame.loc[frame.status == "FINISHED", "run_key"])
    frame = frame[(frame.status == "FINISHED") | ~frame.run_key.isin(finished)]
    return frame.sort_values(["corpus", "model", "seed"]).reset_index(drop=True)


def _topics_artifact(client, run_id: str):
    try:
        path = client.download_artifacts(run_id, "topics.json")
        return Path(path).read_text(encoding="utf-8")
    except Exception as error:  # a report without the topic list is still a report
        logger.warning("run %s: no topics.json (%s)", run_id, error)
        return None


# ----------------------------------------------------------------------------------------------
# Tables (pure)
# ----------------------------------------------------------------------------------------------


def mean_sd(values) -> str:
    values = [v for v in values if pd.notna(v)]
    if not values:
        return "–"
    s = summarize(values)
    if s.n == 1:
        return f"{s.mean:.4g}"
    return f"{s.mean:.4g} ± {s.sd:.2g}"


def set1_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Log posterior of the LDA's own assignment, E-LDA on its topics and RandK (x10^6), with the
    paired p-value of E-LDA against the own assignment across seeds."""
    needed = {"log_likelihood_own", "log_likelihood_elda", "log_likelihood_randk"}
    done = frame[frame.status == "FINISHED"]
    if not needed <= set(done.columns):
        return pd.DataFrame()
    rows = []
    for (corpus, model), group in done.dropna(subset=sorted(needed)).groupby(["corpus", "model"]):
        own, elda, randk = (group[c].to_numpy() / 1e6 for c in ("log_likelihood_own", "log_likelihood_elda", "log_likelihood_randk"))
        p = paired_test(elda, own).p_value if len(group) >= 2 else float("nan")
        rows.append({
            "corpus": corpus, "LDA variant": model, "seeds": len(group), "LDA (own) ×1e6": mean_sd(own),
            "E-LDA ×1e6": mean_sd(elda), "RandK ×1e6": mean_sd(randk),
            "E-LDA > LDA in": f"{int((elda > own).sum())}/{len(group)}",
            "paired p (E-LDA vs LDA)": f"{p:.2g}" if np.isfinite(p) else "–",
        })
    return pd.DataFrame(rows)


def metric_table(frame: pd.DataFrame, columns: list[tuple[str, str]]) -> pd.DataFrame:
    """mean ± sd over seeds of the given metric columns, per corpus and model."""
    done = frame[frame.status == "FINISHED"]
    rows = []
    for (corpus, model), group in done.groupby(["corpus", "model"]):
        row = {"corpus": corpus, "model": model, "seeds": len(group)}
        for column, title in columns:
            row[title] = mean_sd(group[column]) if column in group else "–"
        rows.append(row)
    return pd.DataFrame(rows)


def changed_settings_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Each (model, setting) that some finished run set otherwise than the model's default:
    value, default, and how many runs."""
    done = frame[frame.status == "FINISHED"]
    if "changed_settings" not in done:
        return pd.DataFrame()
    counts: dict = {}
    for model, text in zip(done.model, done.changed_settings):
        for setting, (value, default) in (json.loads(text) if text else {}).items():
            key = (model, setting, json.dumps(value), json.dumps(default))
            counts[key] = counts.get(key, 0) + 1
    rows = [{"model": model, "setting": setting, "value": value, "model default": default, "runs": n}
            for (model, setting, value, default), n in sorted(counts.items())]
    return pd.DataFrame(rows)


def training_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per corpus and iterative model: the loss that was minimised, how many runs converged
    (relative change of the loss over the last 10% of epochs below 1%), that change, and the
    epochs (or iterations) trained."""
    done = frame[frame.status == "FINISHED"]
    if "converged" not in done:
        return pd.DataFrame()
    rows = []
    for (corpus, model), group in done.dropna(subset=["converged"]).groupby(["corpus", "model"]):
        last_steps = [curve[0][-1] for curve in group.get("training_curve", pd.Series(dtype=object)).dropna()]
        rows.append({
            "corpus": corpus, "model": model, "loss": group.training_loss_kind.iloc[0] or "–",
            "converged": f"{int(group.converged.sum())}/{len(group)}",
            "relative change, last 10%": mean_sd(group.get("training_loss_relative_change", [])),
            "epochs / iterations": ", ".join(sorted({str(step) for step in last_steps})) or "–",
        })
    return pd.DataFrame(rows)


def ranking_agreement(frame: pd.DataFrame, n: int = RANK_N) -> list[dict]:
    """Per corpus: does the ranking of models under UMass@n agree with NPMI, C_V, embedding
    coherence and topic diversity? Kendall's tau and the pairs of models that flip."""
    from scipy.stats import kendalltau

    done = frame[frame.status == "FINISHED"]
    results = []
    for corpus, group in done.groupby("corpus"):
        means = group.groupby("model").mean(numeric_only=True)
        base = f"umass@{n}"
        if base not in means or len(means) < 2:
            continue
        for metric, title in RANKING_METRICS:
            column = f"{metric}@{n}"
            if column not in means:
                continue
            pair = means[[base, column]].dropna()
            if len(pair) < 2:
                continue
            tau = kendalltau(pair[base], pair[column]).statistic
            flips = [
                f"{a} vs {b}" for a, b in combinations(pair.index, 2)
                if np.sign(pair.loc[a, base] - pair.loc[b, base]) * np.sign(pair.loc[a, column] - pair.loc[b, column]) < 0
            ]
            results.append({
                "corpus": corpus, "against": title, "models": len(pair),
                "Kendall tau": f"{tau:.2f}" if np.isfinite(tau) else "–",
                "best under UMass": pair[base].idxmax(), "best under the other": pair[column].idxmax(),
                "pairs that flip": ", ".join(flips) if flips else "none",
            })
    return results


def elda_topics(frame: pd.DataFrame, limit: int = 15) -> dict:
    """Per corpus and E-LDA variant: its topics (keyword label and top words) from one seed."""
    topics = {}
    if "topics_json" not in frame:
        return topics
    for (corpus, model), group in frame.dropna(subset=["topics_json"]).groupby(["corpus", "model"]):
        records = json.loads(group.iloc[0]["topics_json"])[:limit]
        topics[(corpus, model)] = [(r.get("label") or "", " ".join(r["words"].split()[:10])) for r in records]
    return topics


# ----------------------------------------------------------------------------------------------
# Plots (PNG bytes)
# ----------------------------------------------------------------------------------------------


def coherence_plot(frame: pd.DataFrame, corpus: str) -> bytes | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = frame[(frame.status == "FINISHED") & (frame.corpus == corpus)]
    panels = [(m, t) for m, t in COHERENCE_PLOTS if any(c.startswith(f"{m}@") for c in done.columns)]
    if not panels or done.empty:
        return None
    figure, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.2), squeeze=False)
    for axis, (metric, title) in zip(axes[0], panels):
        columns = sorted((c for c in done.columns if c.startswith(f"{metric}@")), key=lambda c: int(c.split("@")[1]))
        ns = [int(c.split("@")[1]) for c in columns]
        for model, group in done.groupby("model"):
            values = group[columns].to_numpy(dtype=float)
            if np.isnan(values).all():
                continue
            with warnings.catch_warnings():
                # an N a model was not scored at (e.g. BERTopic's short topics) is all NaN: a gap
                warnings.simplefilter("ignore", RuntimeWarning)
                mean = np.nanmean(values, axis=0)
                sd = np.nanstd(values, axis=0, ddof=1) if len(group) > 1 else None
            axis.plot(ns, mean, marker="o", label=model)
            if sd is not None:
                axis.fill_between(ns, mean - sd, mean + sd, alpha=0.15)
        axis.set_title(title)
        axis.set_xlabel("top-N words")
        axis.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    figure.suptitle(f"Coherence against N — {corpus}")
    figure.tight_layout()
    return _png(figure)


def training_curves_plot(frame: pd.DataFrame, corpus: str) -> bytes | None:
    """One panel per iterative model on ``corpus``: its training loss against epochs (or
    iterations), a line per seed, so convergence is seen rather than assumed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if "training_curve" not in frame:
        return None
    done = frame[(frame.status == "FINISHED") & (frame.corpus == corpus)].dropna(subset=["training_curve"])
    models = sorted(done.model.unique())
    if not models:
        return None
    columns = min(4, len(models))
    rows = -(-len(models) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(3.6 * columns, 2.8 * rows), squeeze=False)
    for axis, model in zip(axes.flat, models):
        group = done[done.model == model]
        for seed, (steps, losses) in zip(group.seed, group.training_curve):
            axis.plot(steps, losses, label=f"seed {seed}", linewidth=1)
        axis.set_title(model, fontsize=9)
        kind = group.training_loss_kind.iloc[0] or ""
        axis.set_xlabel("Gibbs sweep" if "Gibbs" in kind else "pass" if "pass" in kind else "epoch", fontsize=8)
        axis.grid(alpha=0.3)
        axis.tick_params(labelsize=7)
    for axis in list(axes.flat)[len(models):]:
        axis.set_visible(False)
    axes[0][0].legend(fontsize=7)
    figure.suptitle(f"Training loss — {corpus}")
    figure.tight_layout()
    return _png(figure)


def bar_plot(table: pd.DataFrame, value: str, title: str) -> bytes | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if table.empty or value not in table:
        return None
    pivot = table.pivot_table(index="model", columns="corpus", values=value, aggfunc="mean")
    figure, axis = plt.subplots(figsize=(6, 3.2))
    pivot.plot.bar(ax=axis)
    axis.set_title(title)
    axis.grid(alpha=0.3, axis="y")
    figure.tight_layout()
    return _png(figure)


def _png(figure) -> bytes:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    plt.close(figure)
    return buffer.getvalue()


# ----------------------------------------------------------------------------------------------
# Rendering
# ----------------------------------------------------------------------------------------------


class _Document:
    """Builds the Markdown and the HTML of a report side by side."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.md: list[str] = []
        self.html: list[str] = []

    def heading(self, text: str, level: int = 2):
        self.md.append(f"{'#' * level} {text}\n")
        self.html.append(f"<h{level}>{html.escape(text)}</h{level}>")

    def paragraph(self, text: str):
        self.md.append(text + "\n")
        self.html.append(f"<p>{html.escape(text)}</p>")

    def table(self, frame: pd.DataFrame):
        if frame.empty:
            self.paragraph("(no data)")
            return
        header = "| " + " | ".join(map(str, frame.columns)) + " |"
        rule = "|" + "|".join("---" for _ in frame.columns) + "|"
        body = ["| " + " | ".join(str(v).replace("|", "/") for v in row) + " |" for row in frame.itertuples(index=False)]
        self.md.append("\n".join([header, rule, *body]) + "\n")
        self.html.append(frame.to_html(index=False, escape=True, classes="results", border=0))

    def image(self, png: bytes | None, name: str, alt: str):
        if png is None:
            return
        (self.folder / name).write_bytes(png)
        self.md.append(f"![{alt}]({name})\n")
        data = base64.b64encode(png).decode()
        self.html.append(f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">')


_STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table.results{border-collapse:collapse;margin:0.6em 0 1.4em;font-size:0.9em}
table.results th,table.results td{border-bottom:1px solid #ddd;padding:0.25em 0.7em;text-align:left}
table.results th{background:#f3f3f3} img{max-width:100%;margin:0.5em 0 1.5em} code{background:#f3f3f3}"""


def render_report(
    frame: pd.DataFrame, folder, *, experiment: str, command: str, notes: str = "", extra_sections=(),
) -> dict:
    """Write ``report.md``, ``report.html`` (self-contained) and the PNG plots into ``folder``.
    ``extra_sections`` are (title, text, table) added after the notes."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    doc = _Document(folder)
    finished = frame[frame.status == "FINISHED"]
    failed = frame[frame.status != "FINISHED"]
    doc.heading(f"topicbench report — {experiment}", 1)
    doc.paragraph(
        f"{len(finished)} finished runs ({finished.corpus.nunique()} corpora, {finished.model.nunique()} models, "
        f"seeds {sorted(finished.seed.unique().tolist())}); {len(failed)} failed. Generated "
        f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC from MLflow by: {command}"
    )
    changed = changed_settings_table(frame)
    if not changed.empty:
        doc.heading("Runs whose settings differ from the model's defaults")
        doc.paragraph(
            "Every other setting of every run is its model's default (the authors' defaults for the "
            "baselines). These were set in the config:"
        )
        doc.table(changed)
    if notes:
        doc.heading("Notes")
        for line in notes.strip().split("\n\n"):
            doc.paragraph(line.strip())

    for title, text, table in extra_sections:
        doc.heading(title)
        if text:
            doc.paragraph(text)
        doc.table(table)

    set1 = set1_table(frame)
    if not set1.empty:
        doc.heading("Experiment Set 1: log posterior with the topics held fixed")
        doc.paragraph(
            "Σ log φ_z[w] over all tokens (×10^6, higher is better) for the LDA's own token assignment, "
            "E-LDA run on the LDA's topics with the budget matched to its mean distinct topics per "
            "document, and RandK (labels shifted cyclically, mean of 30 draws); mean ± sd over seeds."
        )
        doc.table(set1)

    doc.heading("Coherence against N")
    doc.paragraph("Mean over seeds (band: ± sd) of each measure over the top-N words of every topic a model uses.")
    for corpus in sorted(finished.corpus.unique()):
        doc.image(coherence_plot(frame, corpus), f"coherence_{corpus}.png", f"coherence against N on {corpus}")
    columns = [(f"{m}@{RANK_N}", f"{t}@{RANK_N}") for m, t in COHERENCE_PLOTS]
    doc.table(metric_table(frame, columns))

    doc.heading("Topic diversity")
    doc.table(metric_table(frame, [(f"topic_diversity@{n}", f"TD@{n}") for n in (10, 25)] + [(f"inverted_rbo@{RANK_N}", "inverted RBO")]))

    training = training_table(frame)
    if not training.empty:
        doc.heading("Training and convergence")
        doc.paragraph(
            "Every iterative fit logs its loss per epoch (Gibbs: per 10 sweeps) as the MLflow metric "
            "history training_loss. A run has converged when the loss changed by less than 1% "
            "(relative to its final value) over the last 10% of its epochs."
        )
        doc.table(training)
        for corpus in sorted(finished.corpus.unique()):
            doc.image(training_curves_plot(frame, corpus), f"training_{corpus}.png", f"training loss curves on {corpus}")

    doc.heading("Fit time and memory")
    doc.paragraph(
        "Fit seconds are the training alone. One-time work before it (numba compiling E-LDA's kernels "
        "once per worker process, or loading them from numba's cache; loading cached document "
        "embeddings and the torch modules) is timed apart as setup seconds."
    )
    fit = metric_table(frame, [("fit_seconds", "fit seconds"), ("setup_seconds", "setup seconds"),
                               ("peak_memory_mb", "peak memory MB"), ("num_topics_used", "topics used")])
    doc.table(fit)
    numeric = finished.groupby(["corpus", "model"], as_index=False)["fit_seconds"].mean() if "fit_seconds" in finished else pd.DataFrame()
    doc.image(bar_plot(numeric, "fit_seconds", "mean fit time (s)"), "fit_time.png", "fit time per model and corpus")

    doc.heading("Robustness: does the UMass ranking hold under other metrics?")
    doc.paragraph(
        "E-LDA's keyword topics are built from the same document co-occurrence counts UMass scores, "
        f"and UMass rewards frequent words. For each corpus, models are ranked by mean UMass@{RANK_N} and "
        "by each other metric; Kendall's tau near 1 means the ranking holds, and the pairs that flip "
        "are named. The number of topics each model uses is in the fit table above."
    )
    doc.table(pd.DataFrame(ranking_agreement(frame)))

    topics = elda_topics(frame)
    if topics:
        doc.heading("E-LDA's topics and their keywords")
        for (corpus, model), records in topics.items():
            doc.paragraph(f"{model} on {corpus} (first seed; most documents first):")
            doc.table(pd.DataFrame(records, columns=["keyword(s)", "top words"]))

    if not failed.empty:
        doc.heading("Failed runs")
        doc.table(failed[["corpus", "model", "seed", "error"]])

    (folder / "report.md").write_text("\n".join(doc.md), encoding="utf-8")
    page = (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>topicbench — {html.escape(experiment)}</title>"
        f"<style>{_STYLE}</style></head><body>{''.join(doc.html)}</body></html>"
    )
    (folder / "report.html").write_text(page, encoding="utf-8")
    return {"markdown": str(folder / "report.md"), "html": str(folder / "report.html"),
            "finished": int(len(finished)), "failed": int(len(failed))}


@task(name="render_report", cache_policy=NONE)
def render_report_task(frame, folder, experiment, command, notes=""):
    return render_report(frame, folder, experiment=experiment, command=command, notes=notes)
