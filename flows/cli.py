"""The ``topicbench`` command line.

``topicbench elda`` runs exact E-LDA on a corpus (the core directly, no orchestration).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

from topicbench.core.config import DEFAULT_TOP_WORDS, GENERATORS
from topicbench.core.validation import InputError

logger = logging.getLogger("topicbench")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="topicbench", description="Evaluate E-LDA and established topic models."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show debug logging")
    commands = parser.add_subparsers(dest="command", required=True)

    elda = commands.add_parser(
        "elda",
        help="run exact E-LDA (keyword topics, 1 - 1/e greedy) on a corpus",
        description="Run exact E-LDA: keyword-anchored candidate topics, FastInitialize + FastGreedy.",
    )
    elda.add_argument(
        "--corpus", default="lee",
        help="an OCTIS folder (corpus.tsv [+ vocabulary.txt]), a text file with one document a "
        "line, or 'lee' (gensim's bundled Lee news corpus; the default)",
    )
    elda.add_argument("--generator", choices=GENERATORS, default="raw_umass", help="keyword topic generator (spec §2)")
    elda.add_argument("--kappa", type=float, default=2.0, help="mean number of topics per document (>= 1)")
    elda.add_argument(
        "--preprocessed", action="store_true",
        help="take the corpus as already preprocessed: tokens split on single spaces, nothing else changed",
    )
    elda.add_argument("--stem", action="store_true", help="Snowball-stem words (raw text only)")
    elda.add_argument("--min-df", type=int, default=1, help="keep words in at least this many documents (raw text only)")
    elda.add_argument("--drop-unknown", action="store_true", help="drop tokens missing from vocabulary.txt instead of failing")
    elda.add_argument("--algorithm", choices=("greedy", "parallel"), default="greedy",
                      help="exact FastGreedy, or the low-adaptivity parallel algorithm on Dask")
    elda.add_argument("--epsilon", type=float, default=0.1, help="accuracy parameter of the parallel algorithm")
    elda.add_argument("--seed", type=int, default=0, help="seed of the parallel algorithm")
    elda.add_argument("--workers", type=int, help="workers of the local Dask cluster (default: cores)")
    elda.add_argument("--scheduler", metavar="ADDRESS", help="run on an existing Dask scheduler instead")
    elda.add_argument("--top", type=int, default=10, help="number of topics to print")
    elda.add_argument("--top-words", type=int, default=DEFAULT_TOP_WORDS, help="words shown per topic")
    elda.add_argument("--json", metavar="OUT", help="write the result as JSON to OUT")
    elda.add_argument("--parquet", metavar="DIR", help="write links, token topics and topics as Parquet to DIR")
    elda.set_defaults(handler=run_elda)
    return parser


def run_elda(args) -> int:
    from topicbench.core.elda import ELDA
    from topicbench.core.io import load_corpus
    from topicbench.core.preprocess import PreprocessConfig

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

    model = ELDA(
        args.kappa, generator=args.generator, top_words=args.top_words, algorithm=args.algorithm,
        epsilon=args.epsilon, seed=args.seed, workers=args.workers, scheduler=args.scheduler,
    )
    model.fit(corpus, on_progress=progress)
    solution = model.solution_
    solution.stats["load_seconds"] = load_seconds
    print(format_summary(solution, args.top, args.top_words))
    if args.json:
        path = solution.to_json(args.json, top_n=args.top_words)
        print(f"\nwrote {path}")
    if args.parquet:
        folder = solution.to_parquet(args.parquet)
        print(f"wrote {folder}/links.parquet, token_topics.parquet, topics.parquet")
    return 0


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


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
        stream=sys.stderr,
    )
    try:
        return args.handler(args)
    except (InputError, ConnectionError) as error:
        print(f"topicbench: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
