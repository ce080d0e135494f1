"""topicbench leaderboard: result bundles as a static page of models ranked per dataset and across
datasets (:mod:`topicbench.tasks.leaderboard.ranking`, :mod:`topicbench.tasks.leaderboard.cross`), written
by :mod:`topicbench.tasks.leaderboard.write`."""

from __future__ import annotations

from topicbench.flows.checks import check_output_folder


def add_leaderboard_command(commands) -> None:
    leaderboard = commands.add_parser(
        "leaderboard", help="rank the models of result bundles on a static page (HTML and Markdown)",
        description="Read bundles written by `topicbench export` and write leaderboard.html (sortable tables, nothing "
        "fetched), leaderboard.md and leaderboard.json: per dataset, models ranked on the headline metrics with "
        "Student-t intervals over seeds and the rank intervals they allow; across datasets, each metric ranked on "
        "its own with the datasets as blocks, Friedman's test with Nemenyi's critical difference (autorank) from 5 "
        "datasets, models more than 2x from the median K ranked apart; K, settings, seeds, fit time, memory, each "
        "dataset's fingerprint and the LLM judge's calibration. Fits made with other data or preprocessing than a "
        "dataset's first bundle are never ranked with it.",
    )
    leaderboard.add_argument("bundles", nargs="+", metavar="BUNDLE", help="bundle folders (format 2), the first "
                             "setting each dataset's version")
    leaderboard.add_argument("--out", required=True, metavar="DIR", help="the folder to write the page into")
    leaderboard.add_argument("--metric", action="append", metavar="KEY", dest="metrics",
                             help="a score key to rank on (e.g. npmi@10), repeatable; default: of npmi@10, cv@10, "
                             "topic_diversity@10, llm_rating and llm_intrusion, those the bundles scored")
    leaderboard.add_argument("--eee", metavar="DIR", help="also write each (dataset, model) as an Every Eval Ever "
                             "record (schema 0.3.0) into DIR, as DIR/<dataset>/<model>.json")
    leaderboard.set_defaults(handler=run_leaderboard_command)


def run_leaderboard_command(args) -> int:
    from topicbench.tasks.leaderboard.ranking import build_leaderboard, load_bundle
    from topicbench.tasks.leaderboard.write import write_eee_records, write_leaderboard

    check_output_folder(args.out, "--out")
    if args.eee:
        check_output_folder(args.eee, "--eee")
    bundles = [load_bundle(folder) for folder in args.bundles]  # every bundle read before any work
    leaderboard = build_leaderboard(bundles, args.metrics)
    written = write_leaderboard(leaderboard, args.out)
    records = f"; {len(write_eee_records(leaderboard, args.eee))} Every Eval Ever records in {args.eee}" if args.eee else ""
    print(f"leaderboard of {sum(len(board.entries) for board in leaderboard.datasets)} model-dataset entries on "
          f"{len(leaderboard.datasets)} datasets: {', '.join(str(path) for path in written)}{records}")
    return 0
