"""topicbench elda / compile: exact E-LDA on one corpus, from the core directly (no orchestration,
no tracking), printed or written as JSON/Parquet; and numba's kernels compiled into their on-disk
cache once per install."""

from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path

from topicbench.core.constants import (
    DEFAULT_EPSILON,
    DEFAULT_GENERATOR,
    DEFAULT_TOP_WORDS,
    GENERATORS,
    MAX_SEED,
)
from topicbench.core.dask_cluster import WORKER_WAIT_SECONDS
from topicbench.core.validation import InputError
from topicbench.flows.checks import (
    check_output_file, check_output_folder, check_scheduler_reachable, integer_at_least, integer_in, number_in,
)
from topicbench.flows.cli.common import connect_timeout_argument

logger = logging.getLogger("topicbench")


def add_elda_command(commands) -> None:
    """topicbench elda: E-LDA on one corpus, printed or written as JSON/Parquet."""
    elda = commands.add_parser(
        "elda",
        help="run exact E-LDA (keyword topics, 1 - 1/e greedy) on a corpus",
        description="Run exact E-LDA: keyword-anchored candidate topics, FastInitialize + FastGreedy.",
    )
    elda.add_argument(
        "--corpus", default="lee",
        help="an OCTIS folder (corpus.tsv [+ vocabulary.txt]), a text file with one document a "
        "line, or 'lee' (gensim's bundled Lee news corpus)",
    )
    elda.add_argument("--generator", choices=GENERATORS, default=DEFAULT_GENERATOR, help="keyword topic generator (the E-LDA paper's keyword generators)")
    elda.add_argument("--kappa", type=number_in(1), default=2.0, help="mean number of topics per document (>= 1)")
    elda.add_argument(
        "--preprocessed", action="store_true",
        help="take the corpus as already preprocessed: tokens split on single spaces, nothing else changed",
    )
    elda.add_argument("--stem", action="store_true", help="Snowball-stem words (raw text only)")
    elda.add_argument("--min-df", type=integer_at_least(1), default=1, help="keep words in at least this many documents (raw text only)")
    elda.add_argument("--drop-unknown", action="store_true", help="drop tokens missing from vocabulary.txt instead of failing")
    elda.add_argument("--algorithm", choices=("greedy", "parallel"), default="greedy",
                      help="exact FastGreedy, or the low-adaptivity parallel algorithm on Dask")
    elda.add_argument("--epsilon", type=number_in(0, 1, low_open=True), default=DEFAULT_EPSILON, help="accuracy parameter of the parallel algorithm")
    elda.add_argument("--seed", type=integer_in(0, MAX_SEED), default=0, help="seed of the parallel algorithm")
    elda.add_argument("--workers", type=integer_at_least(1), help="workers of the local Dask cluster (default: cores)")
    elda.add_argument("--scheduler", metavar="ADDRESS", help="run on an existing Dask scheduler instead")
    connect_timeout_argument(elda)
    elda.add_argument(
        "--worker-timeout", type=number_in(0, low_open=True), default=WORKER_WAIT_SECONDS, metavar="SECONDS",
        help=f"when every Dask worker is gone, how long to wait for one to join before giving up (default: {WORKER_WAIT_SECONDS:g})",
    )
    elda.add_argument("--top", type=integer_at_least(0), default=10, help="number of topics to print")
    elda.add_argument("--top-words", type=integer_at_least(1), default=DEFAULT_TOP_WORDS, help="words shown per topic")
    elda.add_argument("--json", metavar="OUT", help="write the result as JSON to OUT")
    elda.add_argument("--parquet", metavar="DIR", help="write links, token topics and topics as Parquet to DIR")
    elda.set_defaults(handler=run_elda)


def add_compile_command(commands) -> None:
    """topicbench compile: numba's kernels compiled into its on-disk cache once per install."""
    compile_command = commands.add_parser(
        "compile", help="compile and cache E-LDA's numba kernels once (scripts/setup.sh runs it)",
        description="Compile every numba kernel of E-LDA and the metrics into numba's on-disk cache, "
        "by running each entry point on the built-in corpus, so that no later run compiles "
        "(a first run otherwise takes about 30 s longer). Kernels already cached are only loaded.",
    )
    compile_command.set_defaults(handler=run_compile_command)


def run_elda(args) -> int:
    from topicbench.core.elda.dask_shards import dask_executor
    from topicbench.core.elda.model import ELDA
    from topicbench.core.io import load_corpus
    from topicbench.core.preprocess import PreprocessConfig

    # outputs and the scheduler are checked before the fit, so that the fit is never thrown away
    if args.json:
        check_output_file(args.json, "--json")
    if args.parquet:
        check_output_folder(args.parquet, "--parquet")
    if args.algorithm != "parallel" and (args.scheduler or args.workers):
        raise InputError("--scheduler and --workers apply to --algorithm parallel only (exact greedy runs in this process)")
    if args.scheduler:
        check_scheduler_reachable(args.scheduler, args.connect_timeout)
    config = PreprocessConfig(
        preprocessed=args.preprocessed,
        stem=args.stem,
        min_df=args.min_df,
        unknown_words="drop" if args.drop_unknown else "error",
    )
    started = time.perf_counter()
    corpus = load_corpus(args.corpus, config)
    load_seconds = time.perf_counter() - started
    logger.info(
        "corpus %s: %d documents, %d words, %d tokens (read in %.1f s)",
        corpus.name, corpus.n_documents, corpus.n_words, corpus.n_tokens, load_seconds,
    )

    def progress(made, budget, log_posterior):
        logger.info("links %d/%d  F = %.6f", made, budget, log_posterior)

    executor = dask_executor(
        args.scheduler, workers=args.workers, connect_timeout=args.connect_timeout, worker_timeout=args.worker_timeout,
    ) if args.algorithm == "parallel" else None
    with executor or contextlib.nullcontext():  # a local cluster stops when the fit is done
        model = ELDA(
            args.kappa, generator=args.generator, top_words=args.top_words, executor=executor,
            epsilon=args.epsilon, seed=args.seed,
        )
        model.fit(corpus, on_progress=progress)
    solution = model.solution_
    solution.stats["load_seconds"] = load_seconds
    print(format_summary(solution, args.top, args.top_words))
    if args.json:
        path = _write_or_keep(lambda target: solution.to_json(target, top_n=args.top_words), args.json, "--json", ".json")
        print(f"\nwrote {path}")
    if args.parquet:
        folder = _write_or_keep(solution.to_parquet, args.parquet, "--parquet", "")
        print(f"wrote {folder}/links.parquet, token_topics.parquet, topics.parquet")
    return 0


def run_compile_command(args) -> int:
    from topicbench.core.precompile import compile_kernels

    report = compile_kernels(on_step=lambda step: logger.info("compile: %s", step))
    print(f"topicbench compile: {report.summary()}")
    return 0


def _write_or_keep(write, target, what: str, suffix: str):
    """``write(target)``; if that fails after all (the disk filled up, the folder vanished), the
    result goes to a temporary path instead and the error names both, so the fit is not lost."""
    import tempfile

    from topicbench.core.io import OutputPathError

    try:
        return write(target)
    except (OSError, OutputPathError) as error:  # OutputPathError: the path became a pipe, a link, ... during the fit
        fallback = Path(tempfile.mkdtemp(prefix="topicbench-elda-")) / f"result{suffix}"
        kept = write(fallback)
        reason = getattr(error, "strerror", None) or error
        raise InputError(f"{what}: could not write {target} ({reason}); the result is kept at {kept}") from None


def format_summary(solution, top: int, top_words: int) -> str:
    """A readable summary: F, links, topics used, and the top topics with keywords and words."""
    stats = solution.stats
    table = solution.topic_table(top_words)
    lines = [
        f"E-LDA on {solution.corpus.name}: {solution.corpus.n_documents} documents, "
        f"{solution.corpus.n_words} words, {solution.corpus.n_tokens} tokens",
        f"generator {solution.candidates.generator}: {solution.candidates.n_topics} candidate topics",
        f"kappa {solution.kappa:g}: {solution.n_links} links, {len(table)} topics used",
        f"log posterior F = {solution.log_posterior:.6f}  (empty solution {solution.null_log_posterior:.3f})",
        f"time: candidates {stats.get('generate_seconds', 0.0):.2f} s, optimise {stats['optimise_seconds']:.2f} s"
        + (f" ({stats['algorithm']}: {stats['adaptive_rounds']} adaptive rounds, "
           f"{stats['gain_evaluations']} gain evaluations)" if "adaptive_rounds" in stats else ""),
        "",
        f"top {min(top, len(table))} topics by documents:",
    ]
    for record in table[:top]:
        lines.append(f"  [{record['label']}] {record['documents']} docs: {' '.join(record['top_words'])}")
    return "\n".join(lines)
