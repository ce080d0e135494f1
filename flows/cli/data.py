"""topicbench data list / fetch: the registry's public corpora, listed, and fetched by name into
the data cache (checksums verified)."""

from __future__ import annotations

import time

from topicbench.flows.checks import number_in
from topicbench.flows.data import DOWNLOAD_DEADLINE_SECONDS, DOWNLOAD_TIMEOUT_SECONDS


def add_data_command(commands) -> None:
    """topicbench data list / fetch: the registry's public corpora, by name."""
    data = commands.add_parser(
        "data", help="list or fetch public benchmark corpora by name",
        description="The paper's corpora and the OCTIS benchmark datasets, fetched only by "
        "`topicbench data fetch` into the data cache ($TOPICBENCH_DATA, default under the user's cache).",
    )
    actions = data.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    actions.add_parser(
        "list", help="each dataset: what it is, size, documents, whether it is cached",
        description="List the datasets `topicbench data fetch` can download: each one's name, what it is, its download "
        "size and documents, and whether it is in the data cache already. Nothing is downloaded.",
    ).set_defaults(handler=run_data_list_command)
    fetch = actions.add_parser(
        "fetch", help="download a dataset (checksums verified) into the data cache",
        description="Download a dataset by name, check every file's checksum, convert a corpus to an OCTIS folder "
        "(corpus.tsv + vocabulary.txt) and keep it in the data cache, where configs and `topicbench paper` find it. "
        "A dataset already there is not downloaded again.",
    )
    fetch.add_argument("name", help="a dataset name from `topicbench data list`")
    fetch.add_argument("--dest", metavar="DIR", help="write DIR/NAME instead of the data cache (default: the data cache)")
    fetch.add_argument("--url", metavar="URL", help="a base URL (a mirror) in place of the published one, or file:///DIR for a "
                       "local copy of the publisher's repository, checksums verified all the same (default: the published one)")
    fetch.add_argument("--timeout", type=number_in(0, low_open=True), default=DOWNLOAD_TIMEOUT_SECONDS, metavar="SECONDS",
                       help=f"how long to wait for the server to answer, and then for each next piece of a file "
                       f"(default: {DOWNLOAD_TIMEOUT_SECONDS:g})")
    fetch.add_argument("--deadline", type=number_in(0, low_open=True), default=DOWNLOAD_DEADLINE_SECONDS, metavar="SECONDS",
                       help=f"how long one file's whole download may take (default: {DOWNLOAD_DEADLINE_SECONDS:g})")
    fetch.set_defaults(handler=run_data_fetch_command)


def run_data_list_command(args) -> int:
    from topicbench.flows.data import dataset_table

    print(dataset_table())
    return 0


def run_data_fetch_command(args) -> int:
    from topicbench.flows.data import DownloadLimits, fetch_dataset

    started = time.perf_counter()
    limits = DownloadLimits(timeout=args.timeout, deadline=args.deadline)
    folder, fetched = fetch_dataset(args.name, dest=args.dest, base_url=args.url, limits=limits)
    if fetched:
        print(f"{args.name}: fetched and checked in {time.perf_counter() - started:.1f} s: {folder}")
    else:
        print(f"{args.name}: already in {folder} (nothing downloaded)")
    return 0
