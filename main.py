"""TrainRig: start the window (no arguments) or run a command (``python main.py --help``).

Bootstrap only: parse the command line, resolve the database path, open and migrate the store,
then hand over to the GUI or to the CLI command.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.storage.store import Store

EXIT_BAD_INPUT = 2
QT_MISSING = "needs PySide6: pip install -r requirements.txt"


def qt_installed() -> bool:
    """The window and the PDF report paint with Qt; every other command runs without it."""
    import importlib.util

    return importlib.util.find_spec("PySide6") is not None


def build_parser() -> argparse.ArgumentParser:
    from cli import calibrate, catalogue, experiment, inventory, measure, monitor, report, runs, size
    from cli import run as run_command

    parser = argparse.ArgumentParser(
        prog="trainrig",
        description="TrainRig: what hardware a neural network needs to train, with sources.",
    )
    from core import __version__

    parser.add_argument("--db", type=Path, help="database file (default: $TRAINRIG_DB, else the user data dir)")
    parser.add_argument("--version", action="version", version=f"TrainRig {__version__}")
    parser.add_argument("--debug", action="store_true", help="print the full traceback of an unexpected error")
    parser.add_argument("--self-test", action="store_true", help="open every tab and wizard page, then exit")
    parser.add_argument("--screenshots", type=Path, metavar="DIR", help="with --self-test: save a PNG of each")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    size.add_parser(sub)
    catalogue.add_parser(sub)
    inventory.add_parser(sub)
    report.add_parser(sub)
    calibrate.add_parser(sub)
    measure.add_parser(sub)
    run_command.add_parser(sub)
    experiment.add_parser(sub)
    monitor.add_parser(sub)
    runs.add_parser(sub)
    return parser


def open_store(args: argparse.Namespace, db_path: Path) -> Store | None:
    """The database as the command needs it: "write" opens (creating it), "read" opens an existing
    one without writing (a command that only reads never creates one), None leaves it closed."""
    from core.storage.store import Store

    mode = args.store_mode(args) if hasattr(args, "store_mode") else None

    def say(text: str) -> None:
        print(f"trainrig: {text}…", file=sys.stderr, flush=True)

    if mode == "write":
        from telemetry.orphan_runs import close_orphaned_runs

        store = Store.open(db_path, on_wait=say)
        close_orphaned_runs(store)  # runs a killed TrainRig left "running"
        return store
    if mode == "read" and db_path.exists():
        return Store.open(db_path, read_only=True, on_wait=say)
    return None


def stop_children_on_sigterm() -> object:
    """A command stopped with SIGTERM (``kill``, ``timeout``, a service manager) stops as Ctrl-C stops it:
    a KeyboardInterrupt, on which a worker it waits for is killed (subprocess.run) or its run cancelled
    (``run``), rather than dying at once and leaving the worker measuring on (calibrate's did, for
    minutes, on a lent GPU's host)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():  # only the main thread takes signals
        return None
    return signal.signal(signal.SIGTERM, signal.default_int_handler)


def main(argv: list[str] | None = None) -> int:
    from core.errors import StoreError, TrainRigError
    from core.paths import default_db_path

    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show a character gets a "?", not a crash
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    args = build_parser().parse_args(argv)
    if args.db is not None and not args.db.parent.is_dir():  # a typo in --db made a new, empty history elsewhere
        print(f"trainrig: --db {args.db}: the folder {args.db.parent} does not exist", file=sys.stderr)
        return EXIT_BAD_INPUT
    db_path = args.db or default_db_path()
    if (args.self_test or args.command is None) and not qt_installed():
        print(f"trainrig: the window {QT_MISSING}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.self_test:
        from gui.self_test import run_self_test

        return run_self_test(args.screenshots)
    if args.command is None:
        from gui.app import run_app

        return run_app(db_path)
    previous = stop_children_on_sigterm()
    store = None
    try:
        store = open_store(args, db_path)
        return int(args.func(args, store))
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the workers are stopped, the database closed below
        print(f"trainrig {args.command}: interrupted", file=sys.stderr)
        return 130
    except StoreError as exc:
        print(f"trainrig: database: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except TrainRigError as exc:
        print(f"trainrig {args.command}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return 0
    except OSError as exc:
        print(f"trainrig {args.command}: {exc.filename or ''} {exc.strerror or exc}".strip(), file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # a bug: one line and the log file's path; --debug shows the traceback
        from core.storage.error_log import unexpected_message

        if args.debug:
            import traceback

            traceback.print_exc()
        print(f"trainrig {args.command}: {unexpected_message(exc, f'trainrig {args.command}')}", file=sys.stderr)
        return 1
    finally:
        if store is not None:
            store.close()
        if previous is not None:  # main() called in-process (tests, scripts) leaves the caller's handler
            import signal

            signal.signal(signal.SIGTERM, previous)  # type: ignore[arg-type]


if __name__ == "__main__":
    sys.exit(main())
