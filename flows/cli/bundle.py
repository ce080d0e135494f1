"""topicbench export / import: an experiment's finished runs as a result bundle, and back into a store."""

from __future__ import annotations

from topicbench.flows.checks import check_output_folder


def add_bundle_commands(commands) -> None:
    export = commands.add_parser(
        "export", help="write an experiment's finished runs as a portable result bundle",
        description="Write the FINISHED runs of an experiment (params, tags with their run keys, metrics and "
        "artifacts; one run per run key, the latest) as a folder of files that a colleague or a later session "
        "imports into any store. --out is a new or empty folder, or a bundle of the same experiment (updated).",
    )
    export.add_argument("--experiment", required=True, help="the experiment to export")
    export.add_argument("--tracking-uri", default="sqlite:///results/mlflow.db", help="the store to read")
    export.add_argument("--out", required=True, metavar="DIR", help="the bundle's folder")
    export.add_argument("--with-matrices", action="store_true",
                        help="include each fit's output/matrices.npz (about 15 MB a run; only stability reads it)")
    export.add_argument("--replace", action="store_true",
                        help="when --out holds a bundle of this experiment, remove what the new export does not hold "
                        "(archives of runs gone from the store); a folder holding anything else is never written")
    export.set_defaults(handler=run_export_command)
    load = commands.add_parser(
        "import", help="recreate a result bundle's runs in a store (runs already there are skipped)",
        description="Recreate the runs of a bundle written by `topicbench export`, with their run keys, so that "
        "`run` or `paper` on that store fits only what the bundle lacks. Importing twice adds nothing. The whole "
        "bundle is checked and unpacked before the store is written; a malformed bundle changes nothing.",
    )
    load.add_argument("bundle", metavar="DIR", help="the bundle's folder")
    load.add_argument("--tracking-uri", default="sqlite:///results/mlflow.db", help="the store to import into")
    load.set_defaults(handler=run_import_command)


def run_export_command(args) -> int:
    from topicbench.tasks.results.bundle import export_bundle
    from topicbench.tasks.store.checks import check_tracking_uri

    check_tracking_uri(args.tracking_uri)
    check_output_folder(args.out, "--out")
    manifest = export_bundle(args.tracking_uri, args.experiment, args.out, with_matrices=args.with_matrices,
                             replace=args.replace)
    print(f"exported {manifest['runs']} finished runs ({manifest['fits']} fits) of {args.experiment!r} to {args.out}")
    return 0


def run_import_command(args) -> int:
    from topicbench.tasks.results.bundle import import_bundle

    counts = import_bundle(args.bundle, args.tracking_uri)
    print(f"imported {counts['imported']} runs into {args.tracking_uri}; {counts['already_there']} were there already")
    return 0
