"""``python main.py monitor -- COMMAND ...``: record telemetry while any command (your own training
script) runs, and store it as a run of kind "monitored" with the command's exit code."""

from __future__ import annotations

import argparse
import sys

from cli.run import check_rate, telemetry_summary, wait_with_cancel
from core.errors import TrainRigError
from core.storage.store import Store
from telemetry.runs import Run
from telemetry.sampler import DEFAULT_RATE_HZ


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "monitor",
        help="record telemetry while a command runs: monitor [--rate HZ] -- COMMAND ...",
        description="Runs COMMAND with its output on this terminal, samples this machine and the "
        "command's process tree until it exits, stores the run and exits with the command's exit code.",
    )
    p.add_argument("--rate", type=float, default=DEFAULT_RATE_HZ, help="samples per second, 1–20 (default 10)")
    p.add_argument("--name", help="a name for the run (default: the command)")
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND ...")
    p.set_defaults(func=run, store_mode=lambda a: "write")


def run(args: argparse.Namespace, store: Store | None) -> int:
    check_rate(args.rate)
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise TrainRigError("give the command to monitor after --, e.g. `monitor -- python train.py`")
    r = Run(argv, store=store, kind="monitored", name=args.name or "", protocol=False, rate_hz=args.rate)
    try:
        r.start()
    except OSError as exc:
        raise TrainRigError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
    wait_with_cancel(r)
    stored = f"run {r.run_id}" if r.run_id is not None else "not stored"
    print(f"Monitored {' '.join(argv)}: {r.status}, exit code {r.exit_code} ({stored})", file=sys.stderr)
    if r.reason:
        print(f"  {r.reason}", file=sys.stderr)
    print("\n".join(telemetry_summary(r)), file=sys.stderr)
    code = r.exit_code if r.exit_code is not None else 1
    return 128 - code if code < 0 else code
