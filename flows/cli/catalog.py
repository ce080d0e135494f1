"""topicbench models list / metrics list / schema: what a config can name, read from the
registries, and the JSON Schema a config is checked against.

Each model: its registry name, the first paragraph of its class docstring, its family, what a
fit needs (K, document embeddings), whether it infers held-out documents and assigns token
topics, and its settings' defaults; each metric: its name, which direction is better, what it
needs of a run (``spec.needs``), its description and the scoring settings it reads. Plain aligned text for a terminal, ``--json``
for scripts. Listing imports each model's module, not the libraries it fits with (they are
imported when a model fits), so the list takes about a second and never loads torch.
"""

from __future__ import annotations

import inspect
import json
import shutil
import sys
import textwrap
from pathlib import Path

from topicbench.flows.checks import check_output_file

#: Columns used when the output is not a terminal (a pipe, a file).
PLAIN_WIDTH = 100
#: Where the description column starts at the least.
NAME_COLUMN = 20


def add_catalog_commands(commands) -> None:
    """The ``models`` and ``metrics`` sub-commands, each with its ``list`` action."""
    for noun, handler, help_text, description in (
        ("models", run_models_list_command, "list the registered topic models and their settings' defaults",
         "The topic models a benchmark config can name (built in, and those of installed plugins): each with "
         "what it is and its settings' defaults (a config's `settings:` changes them)."),
        ("metrics", run_metrics_list_command, "list the registered metrics: direction, needs, settings",
         "The metrics a benchmark config can name: each with which direction is better (the report marks the "
         "best value by it), what it needs of a run (a metric whose need is unmet is recorded as not applicable, "
         "not failed), its aggregation and the scoring settings it reads."),
    ):
        group = commands.add_parser(noun, help=help_text, description=description)
        actions = group.add_subparsers(dest=f"{noun}_command", metavar="ACTION", required=True)
        listing = actions.add_parser("list", help=help_text, description=description)
        listing.add_argument("--json", action="store_true", help="print a JSON array (one object each) for scripts")
        listing.set_defaults(handler=handler)


def run_models_list_command(args) -> int:
    entries = model_catalog()
    _print_catalog(entries, args.json, _model_lines)
    return 0


def run_metrics_list_command(args) -> int:
    entries = metric_catalog()
    _print_catalog(entries, args.json, _metric_lines)
    return 0


def model_catalog() -> list[dict]:
    """Each registered model, by name: ``name``, ``description``, ``family`` (the kind of model),
    ``needs`` (what a fit needs: K or the settings that choose the number of topics, document
    embeddings), ``infers_held_out`` (whether it has ``transform``), ``token_topics`` (whether
    it assigns each token a topic), ``offline`` (what a fit reaches beyond this machine: "nothing
    downloaded", or the LLM endpoint it asks), ``defaults``, ``plugin`` (the plugin's source for a plugin's
    model, else None) and ``error`` (why a plugin could not be loaded, else None; the other
    plugins and the built-in models are listed all the same)."""
    from topicbench.baselines.registry import MODELS

    entries = []
    for name in MODELS.names():
        entry = {"name": name, "description": "", "family": "", "needs": [], "infers_held_out": None,
                 "token_topics": None, "offline": None, "defaults": {}, "plugin": MODELS.plugin_source(name), "error": None}
        try:
            model = MODELS.get(name)
        except Exception as error:  # noqa: BLE001 - a broken plugin is listed with its reason
            entry["error"] = str(error)
        else:
            entry.update(description=first_paragraph(model), family=model.family, needs=model_needs(model),
                         infers_held_out=bool(model.supports_transform),
                         token_topics=bool(model.assigns_token_topics), offline=model_reach(model),
                         defaults=dict(model.defaults))
        entries.append(entry)
    return entries


def model_reach(model) -> str:
    """What a fit of ``model`` reaches beyond this machine, in words. Nothing is downloaded: the
    sentence encoder (all-MiniLM-L6-v2) is installed with topicbench and read offline; a model
    that asks an LLM needs its endpoint."""
    if getattr(model, "asks_llm", False):
        return "asks an LLM endpoint (the config's llm: block); nothing downloaded"
    if model.uses_document_embeddings:
        return "nothing downloaded (its sentence encoder, all-MiniLM-L6-v2, is installed with topicbench)"
    return "nothing downloaded"


def model_needs(model) -> list[str]:
    """What fitting ``model`` needs, in words: K (num_topics), or the settings that choose its
    number of topics, or K optional (the model is built without one to see whether it refuses);
    and document embeddings where it reads them."""
    from topicbench.core.validation import InputError

    if model.topics_decided_by:
        needs = [f"no K, chosen by {model.topics_decided_by}"]
    else:
        try:
            model(None)
            needs = ["K optional (num_topics; without it the model chooses)"]
        except InputError:
            needs = ["K (num_topics)"]
    if model.uses_document_embeddings:
        needs.append("document embeddings")
    if getattr(model, "asks_llm", False):
        needs.append("an LLM endpoint (the config's llm: block)")
    return needs


def metric_catalog() -> list[dict]:
    """Each registered metric, by name: ``name``, ``description``, ``higher_is_better``,
    ``direction`` ("higher" or "lower"), ``needs``, ``aggregate``, ``outputs`` (the keys it
    reports), ``settings`` (the scoring settings it reads, with their defaults) and ``valid_range``
    (the values it can take and the baseline it must beat, :func:`~topicbench.core.metrics.ranges.describe`)."""
    from topicbench.core.metrics.ranges import describe
    from topicbench.core.metrics.registry import METRICS

    entries = []
    for name in METRICS.names():
        spec = METRICS.get(name)
        entries.append({
            "name": spec.name, "description": spec.description or first_paragraph(spec.compute),
            "higher_is_better": bool(spec.higher_is_better), "direction": "higher" if spec.higher_is_better else "lower",
            "needs": list(spec.needs), "aggregate": spec.aggregate, "outputs": list(spec.outputs) or [spec.name],
            "settings": metric_settings(spec), "valid_range": describe(spec.valid_range),
        })
    return entries


def metric_settings(spec) -> dict:
    """The scoring settings ``spec`` reads, with their defaults. The metrics' specs do not list
    them, so they are read off what each kind of metric is: metrics of the top-N words score each
    N of the config's ``top_n``; a coherence measure counts in its window; inverted RBO and RandK
    have settings of their own (``MetricSettings``)."""
    from topicbench.core.metrics.coherence_measures import MEASURES
    from topicbench.core.metrics.context import MetricSettings

    defaults = MetricSettings()
    settings = {}
    if "top_words" in spec.needs:
        settings["top_n"] = list(defaults.top_n)
    if spec.name in MEASURES:
        window = MEASURES[spec.name].window
        settings["window"] = window if window is not None else "document"
    own = {"inverted_rbo": ("rbo_top_n", "rbo_persistence"), "log_likelihood_randk": ("randk_draws",)}
    for field in own.get(spec.name, ()):
        settings[field] = getattr(defaults, field)
    return settings


def first_paragraph(obj) -> str:
    """The first paragraph of ``obj``'s docstring on one line, without reST's double backquotes."""
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.split("\n\n", 1)[0].split()).replace("``", "")


def _print_catalog(entries: list[dict], as_json: bool, lines_of) -> None:
    if as_json:
        sys.stdout.write(json.dumps(entries, indent=2, default=str) + "\n")
        return
    sys.stdout.write("\n".join(lines_of(entries, _width())) + "\n")


def _width() -> int:
    if not sys.stdout.isatty():
        return PLAIN_WIDTH
    return max(60, shutil.get_terminal_size((PLAIN_WIDTH, 24)).columns - 1)


def _model_lines(entries: list[dict], width: int) -> list[str]:
    """MODEL and WHAT IT IS in columns, each model's defaults below its description."""
    column = max(NAME_COLUMN, *(len(entry["name"]) + 2 for entry in entries))
    lines = [f"{'MODEL':<{column}}WHAT IT IS"]
    for entry in entries:
        text = entry["description"] if entry["error"] is None else f"could not be loaded: {entry['error']}"
        if entry["plugin"]:
            text += f" [plugin: {entry['plugin']['distribution']} {entry['plugin']['version']}]"
        lines += _wrapped(entry["name"], text, column, width)
        if entry["error"] is None:
            facts = [f"family: {entry['family'] or 'not stated'}", "needs: " + ", ".join(entry["needs"]),
                     "held-out documents: " + ("inferred (transform)" if entry["infers_held_out"] else "no"),
                     "token topics: " + ("yes" if entry["token_topics"] else "no"), f"offline: {entry['offline']}"]
            lines += _wrapped("", "; ".join(facts), column, width)
        if entry["defaults"]:
            settings = ", ".join(f"{key}={_setting(value)}" for key, value in entry["defaults"].items())
            lines += _wrapped("", f"defaults: {settings}", column, width)
    lines.append(f"\n{len(entries)} models. A config's models: entry changes a setting: "
                 "{model: NAME, num_topics: K, settings: {SETTING: VALUE}}.")
    return lines


def _metric_lines(entries: list[dict], width: int) -> list[str]:
    """METRIC, BETTER and NEEDS in columns; below each, what it is, its aggregation, the keys it
    reports and its settings."""
    column = max(NAME_COLUMN, *(len(entry["name"]) + 2 for entry in entries))
    lines = [f"{'METRIC':<{column}}{'BETTER':<8}NEEDS"]
    for entry in entries:
        lines.append(f"{entry['name']:<{column}}{entry['direction']:<8}{', '.join(entry['needs'])}".rstrip())
        lines += _wrapped("", entry["description"], column, width)
        details = [f"aggregate: {entry['aggregate']}", f"valid range: {entry['valid_range']}"]
        if entry["outputs"] != [entry["name"]]:
            details.append(f"reports: {', '.join(entry['outputs'])}")
        if entry["settings"]:
            details.append("settings: " + ", ".join(f"{key}={_setting(value)}" for key, value in entry["settings"].items()))
        lines += _wrapped("", "; ".join(details), column, width)
    lines.append(f"\n{len(entries)} metrics. Topic-level metrics report one value per N of the config's top_n "
                 "(npmi@10); a metric whose need a run does not meet is recorded as not applicable.")
    return lines


def _setting(value) -> str:
    """A setting's value as a config spells it: ``[100, 100]``, ``1.0`` (a float stays one)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_setting(item) for item in value) + "]"
    return str(value)


def _wrapped(head: str, text: str, column: int, width: int) -> list[str]:
    """``head`` padded to ``column``, then ``text`` wrapped to ``width`` with its next lines indented to ``column``."""
    indent = " " * column
    return textwrap.wrap(text, width=max(width, column + 20), initial_indent=f"{head:<{column}}",
                         subsequent_indent=indent, break_on_hyphens=False) or [head.rstrip()]


def add_schema_command(commands) -> None:
    """topicbench schema: the benchmark config's JSON Schema, for editors."""
    schema = commands.add_parser(
        "schema", help="print the benchmark config's JSON Schema (for editors' YAML support)",
        description="Print the JSON Schema (draft 2020-12) every benchmark config is checked against: its "
        "fields, each registered model's settings (plugins included), the metric and report-section names. "
        "A YAML language server reads it from a first line '# yaml-language-server: $schema=PATH'.",
    )
    schema.add_argument("--out", metavar="FILE", help="write it to FILE instead of printing it")
    schema.set_defaults(handler=run_schema_command)


def run_schema_command(args) -> int:
    from topicbench.core.io import write_text_atomically
    from topicbench.flows.config.schema import config_schema

    if args.out:
        check_output_file(args.out, "--out")
    text = json.dumps(config_schema(), indent=2, ensure_ascii=False) + "\n"
    if args.out:
        write_text_atomically(Path(args.out), text, "--out")
        print(f"wrote {args.out}")
    else:
        sys.stdout.write(text)
    return 0
