"""Checks of command-line inputs that run before any work: output paths, Dask scheduler addresses
and numeric ranges. Each failure is an :class:`InputError` whose message names the input, what is
wrong and the fix, so that no fit is thrown away because its result could not be written.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import socket
from pathlib import Path
from urllib.parse import urlparse

from topicbench.core.io import check_output_path
from topicbench.core.validation import InputError

#: Seconds to wait for a Dask scheduler to accept a connection before calling it unreachable.
DEFAULT_CONNECT_TIMEOUT = 5.0

_SCHEDULER_ADDRESS = re.compile(r"^(?:(?P<scheme>tcp|tls|inproc|ucx|ws|wss)://)?(?P<host>\[[^\]]+\]|[^:/\s]+):(?P<port>\d+)/?$")


def check_output_file(path, what: str) -> Path:
    """A file path the command will write after its work, checked now by the writers' own rule
    (:func:`~topicbench.core.io.check_output_path`): not a folder, device, pipe, socket or
    anything under /dev, /proc or /sys; its folder exists or can be created, and takes files."""
    return check_output_path(path, what)


def check_output_folder(path, what: str) -> Path:
    """A folder the command will write into after its work, checked now by the writers' own rule
    (:func:`~topicbench.core.io.check_output_path`): a folder if it exists, else creatable;
    writable either way."""
    return check_output_path(path, what, folder=True)


def parse_scheduler_address(address) -> tuple[str, int]:
    """(host, port) of a Dask scheduler address such as ``tcp://127.0.0.1:8786`` or
    ``10.0.0.5:8786``; an :class:`InputError` for anything else."""
    match = _SCHEDULER_ADDRESS.match(str(address).strip()) if isinstance(address, str) else None
    if match is None or not 0 < int(match["port"]) < 65536:
        raise InputError(
            f"scheduler address {address!r} is not a Dask address: expected tcp://HOST:PORT "
            "(the address `dask scheduler` prints)"
        )
    return match["host"].strip("[]"), int(match["port"])


def check_scheduler_reachable(address: str, timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
    """Open (and close) a TCP connection to the scheduler within ``timeout`` seconds, so that an
    unreachable one fails in seconds rather than after Dask's own retries."""
    host, port = parse_scheduler_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as error:
        reason = "no answer" if isinstance(error, TimeoutError) else (error.strerror or str(error))
        raise InputError(
            f"cannot reach the Dask scheduler at {address} within {timeout:g} s ({reason}); start "
            "one with `dask scheduler`, or leave out --scheduler to use a local cluster"
        ) from None


def check_prefect_environment(timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
    """The Prefect settings of the environment, checked before a command that runs a flow starts:
    every ``PREFECT_*`` variable parses (Prefect would fail later with a validation traceback),
    and a ``PREFECT_API_URL`` is an http(s) URL whose server answers ``/health`` within
    ``timeout`` seconds (Prefect would fail at the flow's start with "Failed to reach API")."""
    _check_prefect_settings_parse()
    url = os.environ.get("PREFECT_API_URL", "").strip()
    if not url:
        return
    parts = urlparse(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InputError(
            f"PREFECT_API_URL={url!r} is not the http(s) URL of a Prefect server's API (such as "
            "http://127.0.0.1:4200/api); unset it and topicbench starts a temporary server"
        )
    import requests

    try:
        requests.get(url.rstrip("/") + "/health", timeout=timeout).raise_for_status()
    except requests.RequestException as error:
        reason = "no answer" if isinstance(error, requests.Timeout) else type(error).__name__
        raise InputError(
            f"the Prefect server at PREFECT_API_URL={url} does not answer ({reason} within {timeout:g} s); start it "
            "(`prefect server start`) or unset PREFECT_API_URL and topicbench starts a temporary server"
        ) from None


def _check_prefect_settings_parse() -> None:
    """Build Prefect's settings from the environment; a value that does not parse names its variable."""
    import pydantic
    from prefect.settings import Settings

    try:
        Settings()
    except pydantic.ValidationError as error:
        problem = error.errors()[0]
        field_name = str(problem["loc"][-1]).upper() if problem.get("loc") else ""
        value = problem.get("input")
        names = sorted(name for name, text in os.environ.items()
                       if name.startswith("PREFECT_") and name.endswith(field_name) and text == str(value))
        variable = names[0] if names else f"a PREFECT_ setting ({field_name.lower()})"
        raise InputError(f"{variable}={value!r} is not valid: {problem['msg'].lower()}; fix or unset it") from None


# -- argparse types: a range error is a usage error before anything runs ---------------------------


def integer_at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {value}")
        return value

    parse.__name__ = f"integer >= {low}"
    return parse


def integer_in(low: int, high: int):
    """An integer in [low, high]."""

    def parse(text: str) -> int:
        value = integer_at_least(low)(text)
        if value > high:
            raise argparse.ArgumentTypeError(f"must be an integer in [{low}, {high}], got {value}")
        return value

    parse.__name__ = f"integer in [{low}, {high}]"
    return parse


def experiment_name(text: str) -> str:
    """An experiment's name: visible text without control characters, at most 200 characters
    (the config's rule, :data:`~topicbench.core.schema.NAME_SCHEMA`)."""
    from topicbench.core.schema import NAME_SCHEMA

    if not re.match(NAME_SCHEMA["pattern"], text) or len(text) > NAME_SCHEMA["maxLength"]:
        raise argparse.ArgumentTypeError(
            f"an experiment name is visible text without control characters, at most {NAME_SCHEMA['maxLength']} "
            f"characters; got {text!r}"
        )
    return text


def number_in(low: float, high: float = math.inf, *, low_open: bool = False, high_open: bool = True):
    """A finite float in [low, high) by default; ``low_open``/``high_open`` exclude the ends."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        too_low = value <= low if low_open else value < low
        too_high = value >= high if high_open else value > high
        if not math.isfinite(value) or too_low or too_high:
            if math.isinf(high):
                raise argparse.ArgumentTypeError(f"must be a number {'>' if low_open else '>='} {low:g}, got {text}")
            interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
            raise argparse.ArgumentTypeError(f"must lie in {interval}, got {text}")
        return value

    parse.__name__ = "number"
    return parse


def port_number(text: str) -> int:
    value = integer_at_least(1)(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be a port number in 1..65535, got {value}")
    return value


def check_port_free(port: int, host: str = "127.0.0.1") -> None:
    """Fail now if ``host:port`` is taken, rather than after a server half-started."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        if os.name != "nt":
            # as the servers bind (uvicorn sets it): a server stopped a moment ago leaves its
            # connections in TIME_WAIT, which fail a plain bind though the port is free to listen on
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            raise InputError(f"port {port} on {host} is in use ({error.strerror}); choose another with --port") from None
