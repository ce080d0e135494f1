"""topicbench judge calibrate: an LLM judge's scores against people's judgments of 300 topics
(Hoyle et al. 2021), with bootstrap intervals, tracked in MLflow; with ``--protocol proxann``, its
document-level answers against people's in ProxAnn's user study (:func:`run_proxann_calibrate`)."""

from __future__ import annotations

from pathlib import Path

from topicbench.core.constants import MAX_SEED
from topicbench.core.metrics.bootstrap import BOOTSTRAP_RESAMPLES
from topicbench.core.validation import InputError
from topicbench.flows.checks import integer_at_least, integer_in
from topicbench.flows.cli.common import check_llm_endpoint, llm_arguments, llm_block, tracking_uri
from topicbench.flows.config.model import DEFAULT_TRACKING_URI

PROTOCOLS = ("words", "proxann")
WORD_BOOTSTRAP = BOOTSTRAP_RESAMPLES


def add_judge_command(commands) -> None:
    """topicbench judge calibrate: an LLM judge against people's judgments of 300 topics."""
    judge = commands.add_parser(
        "judge", help="calibrate an LLM judge against human judgments of topics",
        description="The LLM metrics (llm_rating, llm_intrusion, llm_fit, llm_rank) ask an OpenAI-compatible endpoint. "
        "`judge calibrate` asks it about the 300 topics people judged in Hoyle et al. 2021 (`topicbench data fetch "
        "hoyle2021`) and reports Spearman's rho against people, with bootstrap intervals, beside the automated "
        "coherences; `judge calibrate --protocol proxann` asks it the document-level questions people answered in "
        "ProxAnn's user study (`topicbench data fetch proxann`) and reports Kendall's tau against people.",
    )
    actions = judge.add_subparsers(dest="judge_command", metavar="ACTION", required=True)
    calibrate = actions.add_parser(
        "calibrate", help="rho of the judge's scores against people's, tracked in MLflow",
        description="Ask the LLM endpoint to rate, and to find the intruder in, each of the 300 topics people judged in "
        "Hoyle et al. 2021; print Spearman's rho of its scores against people's (with bootstrap intervals) beside "
        "the automated coherences', and track it as a run of the experiment 'judge-calibration'. With --protocol "
        "proxann, ask it what people were asked in ProxAnn's user study (24 Bills topics: each topic's category, each "
        "evaluation document's fit, every pair's order) and print Kendall's tau of its topic ranking against people's "
        "beside the released answers of GPT-4o, Qwen2.5-72B, Llama-3.1-8B and others, people's own and NPMI's, with "
        "the alternative annotator test; tracked in the experiment 'judge-calibration-proxann'. Answers are cached.",
    )
    calibrate.add_argument("--protocol", choices=PROTOCOLS, default="words",
                           help="words: rate and find the intruder in topics' word lists (Hoyle et al. 2021); "
                           "proxann: judge documents against topics as ProxAnn's participants did (default: words)")
    llm_arguments(calibrate)
    calibrate.add_argument("--config", help="read the llm: block (endpoint and judge settings) from this benchmark config "
                           "(default: the --llm-* options alone)")
    calibrate.add_argument("--judgments", metavar="FILE", help="--protocol words: Hoyle et al.'s all_data.json "
                           "(default: the fetched hoyle2021)")
    calibrate.add_argument("--release", metavar="DIR", help="--protocol proxann: a folder holding ProxAnn's data/ "
                           "(a checkout of ahoho/proxann, or the fetched proxann dataset, the default)")
    calibrate.add_argument("--topics-per-model", type=integer_at_least(1), metavar="N",
                           help="judge only each model's first N topics (of each corpus; a quick look; default: all, "
                           "50 a model for words, 8 for proxann)")
    calibrate.add_argument("--bootstrap", type=integer_at_least(100), help="--protocol words: bootstrap resamples of "
                           f"the (dataset, model) clusters (default: {WORD_BOOTSTRAP}; proxann resamples topics "
                           f"{BOOTSTRAP_RESAMPLES} times, and replays ProxAnn's 50 at seed 42 beside)")
    calibrate.add_argument("--seed", type=integer_in(0, MAX_SEED), default=0,
                           help="seed of the word orders, intruders and bootstrap (words), of the bootstrap and the "
                           "left-out people (proxann)")
    calibrate.add_argument("--tracking-uri", help=f"MLflow tracking URI (default: {DEFAULT_TRACKING_URI})")
    calibrate.set_defaults(handler=run_judge_calibrate_command)


def run_judge_calibrate_command(args) -> int:
    from topicbench.core.datasets import JUDGMENTS_FILE, cached_dataset_folder
    from topicbench.core.metrics.calibration import read_human_judgments
    from topicbench.core.schema import check_schema
    from topicbench.flows.config.model import BenchmarkConfig
    from topicbench.flows.judge import calibrate, format_table, verdict
    from topicbench.tasks.llm.judge import LLM_SCHEMA, llm_settings
    from topicbench.tasks.store.checks import check_tracking_uri

    configured = BenchmarkConfig.from_yaml(args.config).llm if args.config else None
    block = llm_block(args, configured)
    if block is None:
        block = {}
    check_schema(block, LLM_SCHEMA, "llm")
    if "base_url" not in block or "model" not in block:
        raise InputError("give the endpoint: --llm-base-url URL --llm-model NAME (or --config with an llm: block)")
    endpoint, settings = llm_settings(block)
    _check_protocol_options(args)
    if args.protocol == "proxann":
        return run_proxann_calibrate(args, endpoint, settings)
    judgments = Path(args.judgments) if args.judgments else cached_dataset_folder("hoyle2021") / JUDGMENTS_FILE
    if not judgments.is_file():
        raise InputError(f"--judgments: {judgments} is not a file")
    topics = read_human_judgments(judgments)  # every level checked before the store or the endpoint is asked
    uri = tracking_uri(args.tracking_uri)
    check_tracking_uri(uri)
    check_llm_endpoint(endpoint, uri)
    calibration = calibrate(endpoint, settings, topics, tracking_uri=uri, topics_per_model=args.topics_per_model,
                            draws=args.bootstrap or WORD_BOOTSTRAP, seed=args.seed)
    print(f"calibration of {endpoint.model} at {endpoint.base_url} on {calibration.topics} human-judged topics "
          f"({calibration.requests} requests, {calibration.cached} answered from the cache, {calibration.seconds:.0f} s):")
    print(format_table(calibration))
    print(verdict(calibration))
    print(f"tracked as run {calibration.run_id} of experiment 'judge-calibration' at {uri}")
    return 0


def _check_protocol_options(args) -> None:
    """An option of the other protocol is a mistake to name, not to ignore."""
    other = {"words": (("release", "--release"),),
             "proxann": (("judgments", "--judgments"), ("bootstrap", "--bootstrap"))}[args.protocol]
    for attribute, flag in other:
        if getattr(args, attribute) is not None:
            raise InputError(f"{flag} does not apply to --protocol {args.protocol}: see `topicbench judge calibrate "
                             f"--help`")


#: How to read the table printed (the figures it is read against are ProxAnn's, on Bills).
PROXANN_READING = ("τ: Kendall's τ, over topics, of the scorer's agreement with θ against people's, on the topics as "
           f"given, with its 95% percentile bootstrap interval ({BOOTSTRAP_RESAMPLES:,} paired resamples of the topics); "
           "ProxAnn's protocol: the mean (SE) of 50 resamples at seed 42, one seed's draw, replayed to compare with "
           "their figures; doc τ: mean per-topic τ of its answers against people's mean; adv: "
           "how often it agrees with the other people at least as well as a left-out person does (0.5: as good as a "
           "person); the constant answer row is what one fit for every document, all ranks tied, gets from the same "
           "test, the floor to read an advantage against; a judge whose answers are constant (one value for 90% of "
           "documents) gets no τ and no advantage: not measurable. On all 24 topics, by ProxAnn's protocol, "
           "ProxAnn reports τ fit/rank of +0.31/+0.29 for GPT-4o, +0.22/+0.21 for Qwen2.5-72B, +0.16/+0.15 for "
           "Llama-3.1-8B (τ on the topics: +0.12/+0.10), people +0.09/+0.18 and NPMI +0.01/-0.02 (its NPMI pairing, "
           "the 'npmi (ProxAnn's pairing)' row; paired topic by topic: the npmi row).")


def run_proxann_calibrate(args, endpoint, settings) -> int:
    """Read the release (every file checked before the store or the endpoint is asked), ask
    the endpoint, print the table and where the run is tracked."""
    from topicbench.core.datasets import cached_dataset_folder
    from topicbench.core.proxann_data import read_release
    from topicbench.flows.judge_proxann import calibrate_proxann, format_proxann_table
    from topicbench.tasks.store.checks import check_tracking_uri

    folder = Path(args.release) if args.release else cached_dataset_folder("proxann")
    if not folder.is_dir():
        raise InputError(f"--release: {folder} is not a folder (give ProxAnn's repository or the fetched proxann "
                         "dataset: `topicbench data fetch proxann`)")
    release = read_release(folder)
    uri = tracking_uri(args.tracking_uri)
    check_tracking_uri(uri)
    check_llm_endpoint(endpoint, uri)
    calibration = calibrate_proxann(endpoint, settings, release, tracking_uri=uri,
                                    topics_per_model=args.topics_per_model, seed=args.seed)
    print(f"document-level calibration of {endpoint.model} at {endpoint.base_url} on {calibration.topics} topics of "
          f"ProxAnn's Bills study ({calibration.requests} requests, {calibration.cached} answered from the cache, "
          f"{calibration.seconds:.0f} s):")
    print(format_proxann_table(calibration))
    print(PROXANN_READING)
    print(f"tracked as run {calibration.run_id} of experiment 'judge-calibration-proxann' at {uri}")
    return 0
