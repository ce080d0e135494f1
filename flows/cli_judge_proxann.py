"""topicbench judge calibrate --protocol proxann: the document-level judge against people's
answers in ProxAnn's user study (``flows/judge_proxann.py``)."""

from __future__ import annotations

from pathlib import Path

from topicbench.core.validation import InputError
from topicbench.flows.cli_common import check_llm_endpoint, tracking_uri

#: How to read the table printed (the figures it is read against are ProxAnn's, on Bills).
READING = ("τ: Kendall's τ, over topics, of the scorer's agreement with θ against people's (50 resamples of the "
           "topics: mean, SE, 95% interval); doc τ: mean per-topic τ of its answers against people's mean; adv: "
           "how often it agrees with the other people at least as well as a left-out person does. On all 24 topics "
           "ProxAnn reports τ fit/rank of +0.31/+0.29 for GPT-4o, +0.22/+0.21 for Qwen2.5-72B, +0.16/+0.15 for Llama-3.1-8B, "
           "people +0.09/+0.18 and NPMI +0.01/-0.02 (its NPMI pairing; properly paired: the npmi row here).")


def run_proxann_calibrate(args, endpoint, settings) -> int:
    """Read the release (every file checked before the store or the endpoint is asked), ask
    the endpoint, print the table and where the run is tracked."""
    from topicbench.core.datasets import cached_dataset_folder
    from topicbench.core.proxann_data import read_release
    from topicbench.flows.judge_proxann import calibrate_proxann, format_proxann_table
    from topicbench.tasks.store_checks import check_tracking_uri

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
    print(READING)
    print(f"tracked as run {calibration.run_id} of experiment 'judge-calibration-proxann' at {uri}")
    return 0
