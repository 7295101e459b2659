"""``python main.py report WORKLOAD.json --pdf FILE [--csv FILE]``: the purchasing report."""

from __future__ import annotations

import argparse
import importlib.util
import platform
import sys
from pathlib import Path

from cli.sizing_run import size_file
from core.errors import OutputError
from core.output.report import build_report
from core.output.report_csv import write_csv
from core.storage.files import check_target
from core.storage.store import Store
from telemetry.inventory import inventory_to_text


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write the purchasing report of a workload as PDF and/or CSV")
    p.add_argument("workload", help="workload JSON file")
    p.add_argument("--candidate", "-c", action="append", default=[], metavar="NAME", help="as for size")
    p.add_argument("--pdf", type=Path, help="write the PDF report here")
    p.add_argument("--csv", type=Path, help="write the bill of materials and candidates here (CSV)")
    p.add_argument("--page-size", choices=("a4", "letter"), help="default: from the locale")
    p.add_argument("--author", default="", help="name on the title page")
    p.add_argument(
        "--trust-code",
        action="store_true",
        help="run the Python code of a model given as PyTorch code (model.torch) to trace it, without asking",
    )
    p.set_defaults(func=run, store_mode=lambda a: "read")


def run(args: argparse.Namespace, store: Store | None) -> int:
    if not args.pdf and not args.csv:
        print("trainrig report: give --pdf FILE and/or --csv FILE", file=sys.stderr)
        return 2
    if args.pdf and importlib.util.find_spec("PySide6") is None:  # checked before anything is written
        print(
            "trainrig report: the PDF report needs PySide6: pip install -r requirements.txt "
            "(--csv alone works without it)",
            file=sys.stderr,
        )
        return 2
    if args.pdf and args.csv and args.pdf.resolve() == args.csv.resolve():
        raise OutputError(f"--pdf and --csv name the same file ({args.csv}); give each its own")
    for target in (args.csv, args.pdf):
        if target:
            check_target(target)  # before the sizing: a bad path is said at once
    run_ = size_file(args.workload, args.candidate, store, trust_code=args.trust_code)
    report = build_report(
        run_.recommendation,
        author=args.author,
        machine=f"{platform.node()} ({run_.machine.cpu_model})",
        inventory_text=inventory_to_text(run_.inventory),
    )
    if args.csv:
        write_csv(report, args.csv)
        print(f"wrote {args.csv}")
    if args.pdf:
        from reports.pdf import write_pdf  # Qt is loaded only when a PDF is asked for

        pages = write_pdf(report, args.pdf, args.page_size)
        print(f"wrote {args.pdf} ({pages} pages)")
    return 0
