"""The ``topicbench`` command line: the parser of every sub-command, and the way a command ends.

Each command group lives in its own module of :mod:`topicbench.flows.cli`, which adds its
sub-commands to the parser and holds their bodies: ``elda`` and ``compile`` in ``elda``; ``run``,
``serve``, ``report`` and ``paper`` in ``benchmark``; ``data`` in ``data``; ``models``, ``metrics``
and ``schema`` in ``catalog``; ``ui`` in ``ui``; ``judge`` in ``judge``; ``search`` in ``search``;
``export`` and ``import`` in ``bundle``; ``leaderboard`` in ``leaderboard``; ``server`` in
``server``. What several share is in ``common``.

Exit status: 0 done; 1 the work failed (a failed run, a bug: its traceback); 2 a usage or input
error (one line, ``topicbench: error: ...``); 130 interrupted (Ctrl-C or SIGTERM).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from topicbench.core.validation import InputError
from topicbench.flows.checks import check_prefect_environment
from topicbench.flows.cli.benchmark import (
    add_paper_command,
    add_report_command,
    add_run_command,
    add_serve_command,
)
from topicbench.flows.cli.bundle import add_bundle_commands
from topicbench.flows.cli.catalog import add_catalog_commands, add_schema_command
from topicbench.flows.cli.common import CommandParser
from topicbench.flows.cli.data import add_data_command
from topicbench.flows.cli.elda import add_compile_command, add_elda_command
from topicbench.flows.cli.judge import add_judge_command
from topicbench.flows.cli.leaderboard import add_leaderboard_command
from topicbench.flows.cli.search import add_search_command
from topicbench.flows.cli.server import add_server_command
from topicbench.flows.cli.ui import add_ui_command
from topicbench.flows.console import configure_console, quiet_library_progress_bars, quiet_worker_consoles
from topicbench.flows.runtime import prefect_defaults
from topicbench.flows.cli.startup import defer_imports
from topicbench.tasks.store.tracking_settings import use_tracking_defaults

#: The exit status of an interrupted command (128 + SIGINT, as a shell reports it).
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``topicbench`` and every sub-command; each shows its options' defaults."""
    parser = CommandParser(
        prog="topicbench", description="Evaluate E-LDA and established topic models: benchmarks tracked in MLflow, "
        "their reports, the paper's experiments, and the corpora, models and metrics they use. "
        "`topicbench COMMAND --help` describes a command.",
    )
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="show debug logging, libraries' INFO messages and full tracebacks")
    parser.add_argument("--profile", metavar="FILE",
                        help="write the command's cProfile statistics (its main thread) to FILE, for "
                        "`python -m pstats FILE` or snakeviz")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add_command in (add_elda_command, add_run_command, add_serve_command, add_report_command,
                        add_paper_command, add_data_command, add_catalog_commands, add_ui_command,
                        add_compile_command, add_schema_command, add_judge_command, add_search_command,
                        add_bundle_commands, add_leaderboard_command, add_server_command):
        add_command(commands)
    return parser


def main(argv=None) -> int:
    """Run ``topicbench`` on ``argv`` (default: the process's arguments) and return its exit status.

    Run as the command itself (``argv`` None, the ``topicbench`` entry point), it ends the process
    with that status through :func:`_end_process`; called with arguments (tests, scripts), it
    returns it.
    """
    defer_imports()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # a usage error (argparse printed it) or --help: its code, returned
        return exit_.code if isinstance(exit_.code, int) else 2
    _set_up_process(args.verbose)
    code = _profiled(args.profile, _run_command, args) if args.profile else _run_command(args)
    if argv is None:
        _end_process(code)
    return code


def _profiled(path: str, command, args) -> int:
    """``command(args)`` under cProfile, its statistics written to ``path`` before the command's
    fast exit (:func:`_end_process`), which would otherwise leave ``python -m cProfile`` nothing."""
    import cProfile
    import time

    # the imports before this point (the command line's own modules) are not in the profile: say how much
    before = time.process_time()
    profiler = cProfile.Profile()
    try:
        return profiler.runcall(command, args)
    finally:
        try:
            profiler.dump_stats(path)
            print(f"topicbench: profile written to {path} ({time.process_time():.2f} s CPU in this process, "
                  f"{before:.2f} s of it before the profile began)", file=sys.stderr)
        except OSError as error:  # the command's own status stands; the profile is a by-product
            print(f"topicbench: profile not written to {path}: {error}", file=sys.stderr)


def _set_up_process(verbose: bool) -> None:
    """The console and the libraries' settings every command runs with."""
    # libraries' INFO only with -v, on the console alone: Prefect's run logs still get every record
    configure_console(verbose, sys.stderr)
    quiet_worker_consoles(verbose)
    quiet_library_progress_bars()  # one progress display: topicbench's own
    # every command that runs a flow (report and paper too, not only run): no analytics sent from
    # a temporary Prefect server, and a patient start of one; MLflow's client bounded and quiet
    prefect_defaults()
    use_tracking_defaults()


def _run_command(args) -> int:
    """The command's handler, its errors turned into their exit status and last line."""
    import signal
    import traceback

    previous_sigterm = signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
    try:
        if getattr(args, "runs_flows", False):
            check_prefect_environment()  # before any work: Prefect would fail later, with a traceback
        return args.handler(args)
    except KeyboardInterrupt:
        if getattr(args, "runs_flows", False):
            print(f"topicbench: interrupted: finished runs are kept in the tracking store{_spooled_clause()}; the same "
                  f"command resumes", file=sys.stderr)
        else:  # a command that fits nothing (import, report, leaderboard, ...) keeps no runs
            print("topicbench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except _user_errors() as error:
        if args.verbose:
            traceback.print_exc()
        print(f"topicbench: error: {capped(str(error))}", file=sys.stderr)
        return 2
    except Exception as error:  # a bug or a library failure: its traceback, and its cause last
        traceback.print_exc()
        print(f"topicbench: error: {type(error).__name__}: {capped(str(error))}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)


#: Most characters of an error's message the last line shows: an error that quotes its input (a
#: malformed file's line, say) names the problem in its first words, not in megabytes of input.
MAX_ERROR_CHARACTERS = 1000


def capped(message: str) -> str:
    """``message`` cut to :data:`MAX_ERROR_CHARACTERS`, saying how much was left out."""
    if len(message) <= MAX_ERROR_CHARACTERS:
        return message
    return f"{message[:MAX_ERROR_CHARACTERS]}… ({len(message) - MAX_ERROR_CHARACTERS:,} more characters not shown)"


def _interrupt_on_sigterm(signum, frame):
    # SIGTERM (a job scheduler's stop, `kill`) takes the same exit path as Ctrl-C: runs are closed
    raise KeyboardInterrupt(f"signal {signum}")


def _user_errors() -> tuple:
    """Errors that a user's input or environment causes: one line, no traceback (unless -v)."""
    from topicbench.baselines.base import ModelError
    from topicbench.flows.prefect_server import ServerStartError
    from topicbench.flows.runtime import PrefectServerStartError
    from topicbench.tasks.store.tracking_error import TrackingError

    return (InputError, TrackingError, ModelError, PrefectServerStartError, ServerStartError, ConnectionError)


def _spooled_clause() -> str:
    """For each spool this process put fits in (a benchmark whose store stopped answering), the
    clause ", and N fitted runs it could not take in FOLDER"; else an empty string."""
    spool = sys.modules.get("topicbench.tasks.store.spool")  # not imported: nothing spooled
    kept = spool.kept_by_this_process() if spool is not None else {}
    return "".join(f", and {count} fitted runs it could not take in {folder}" for folder, count in kept.items())


def _end_process(code: int) -> None:
    """End the ``topicbench`` process with ``code`` now, without the interpreter's teardown.

    This is the one fast exit of the command line, kept for two reasons; every other caller of
    :func:`main` gets its status back, and the entry point's plain ``sys.exit`` ends the process.

    - Interrupted: a fit may still run in a worker thread of the in-process task runner (a thread
      cannot be stopped; :func:`~topicbench.flows.runtime.task_runner`), and the interpreter's
      exit waits for every such thread, for as long as the fit takes. Every run and server is
      closed by now; the logs and the streams are flushed.
    - Done, with no other thread left: the teardown would only free memory that the OS takes back,
      and freeing numba's compiled kernels costs about 0.3 s of every command. The atexit handlers
      (which close servers and remove temporary folders) run first, as at a plain exit. While
      another thread still runs, the plain exit is taken instead: the interpreter waits for it.
    """
    import atexit
    import threading

    if code == EXIT_INTERRUPTED:
        logging.shutdown()
    elif threading.active_count() > 1:
        return
    else:
        atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
