"""``python main.py runs``: the results browser's list on the command line (sizings, runs,
inventories, calibrations with their figures, tags and notes), and results archives in and out."""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from core.errors import OutputError, TrainRigError
from core.output.experiment_report import load_report
from core.output.run_report import write_result_csv
from core.paths import default_db_path
from core.storage.files import check_target
from core.storage.results_index import COLUMNS, KINDS
from core.storage.store import Store
from core.units import fmt_bytes, fmt_seconds

SORT_KEYS = sorted(set(COLUMNS) - {"tags"})
NAME_WIDTH = 40
DEVICES_WIDTH = 40


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "runs",
        help="list stored sizings, runs, inventories and calibrations; export or import a results archive",
        description="Lists what the results tab lists, newest first. Filters combine (all must hold).",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list (one object per result, raw figures)")
    p.add_argument("--kind", choices=KINDS, action="append", help="only this kind (repeat for several)")
    p.add_argument("--tag", help="only results with this tag")
    p.add_argument("--text", default="", help="only results whose name, devices, machine, tags or notes hold each word")
    p.add_argument("--machine", help="only results made on this machine")
    p.add_argument("--since", help="only results from this date or time on (YYYY-MM-DD)")
    p.add_argument("--until", help="only results up to this date (the whole day) or time")
    p.add_argument("--sort", choices=SORT_KEYS, default="created", help="sort by this column (default: created)")
    p.add_argument("--ascending", action="store_true", help="smallest or oldest first")
    p.add_argument("--limit", type=int, help="at most this many rows")
    move = p.add_mutually_exclusive_group()
    move.add_argument(
        "--export-archive",
        type=Path,
        metavar="FILE",
        help="write the listed results (with runs' samples, tags and notes) to one archive file",
    )
    move.add_argument(
        "--import-archive",
        type=Path,
        metavar="FILE",
        help="add the results of an archive that this database does not have yet",
    )
    move.add_argument(
        "--report",
        metavar="KIND:ID",
        help="the report of one run or experiment (its key in the list, e.g. run:12): write it with --pdf and/or --csv",
    )
    p.add_argument("--pdf", type=Path, metavar="FILE", help="with --report: the report as PDF")
    p.add_argument("--csv", type=Path, metavar="FILE", help="with --report: the report's tables as CSV")
    p.add_argument("--author", help="with --report: the name printed on the report")
    p.add_argument("--page-size", choices=("a4", "letter"), help="with --report: the paper (default: the locale's)")
    p.set_defaults(func=run, store_mode=lambda a: "write" if a.import_archive else "read")


def run(args: argparse.Namespace, store: Store | None) -> int:
    if args.limit is not None and not 1 <= args.limit <= 2**62:  # SQLite's integers are 64-bit
        print(f"trainrig runs: --limit must be 1 or more and at most 2^62, not {args.limit}", file=sys.stderr)
        return 2
    if args.report is not None or args.pdf or args.csv:
        return write_report(args, store)
    if args.import_archive is not None:
        assert store is not None  # "write" opens (or creates) the database
        got = store.import_archive(args.import_archive)
        print(
            f"imported {got['added']} result(s) from {args.import_archive}"
            + (f"; {got['skipped']} already in {store.path or 'the database'} were skipped" if got["skipped"] else "")
        )
        return 0
    filters: dict[str, Any] = {
        "kind": args.kind,
        "text": args.text,
        "tag": args.tag,
        "machine": args.machine,
        "since": args.since,
        "until": args.until,
    }
    rows = (
        store.results(**filters, order_by=args.sort, descending=not args.ascending, limit=args.limit)
        if store is not None
        else []
    )
    if args.export_archive is not None:
        if store is None or not rows:
            print("trainrig runs: no results match; no archive was written", file=sys.stderr)
            return 2
        n = store.export_archive(args.export_archive, [(r["kind"], r["id"]) for r in rows])
        if n == 0:
            print("trainrig runs: the listed results are only experiments; no archive was written", file=sys.stderr)
            return 2
        print(f"wrote {n} result(s) to {args.export_archive}")
        return 0
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        missing = f"no results: {args.db or default_db_path()} does not exist yet"
        print("no results match" if store is not None else missing)
        return 0
    print(results_table(rows))
    total = store.results_count(**filters) if store is not None else 0
    if total > len(rows):
        print(f"{len(rows)} of {total} results shown (--limit)")
    return 0


def write_report(args: argparse.Namespace, store: Store | None) -> int:
    """``runs --report KIND:ID --pdf FILE --csv FILE``: a run's or an experiment's report."""
    kind, _, number = str(args.report or "").partition(":")
    if args.report is None or not number.strip().isdigit() or kind not in ("run", "experiment"):
        what = "--pdf and --csv need --report KIND:ID" if args.report is None else f"--report {args.report!r}"
        raise TrainRigError(f"{what}: name a run or an experiment by its key, e.g. run:12 or experiment:3")
    if not (args.pdf or args.csv):
        raise TrainRigError("--report writes a file: give --pdf FILE and/or --csv FILE")
    if args.pdf and importlib.util.find_spec("PySide6") is None:  # checked before anything is written
        raise TrainRigError(
            "the PDF report needs PySide6: pip install -r requirements.txt (--csv alone works without it)"
        )
    if args.pdf and args.csv and args.pdf.resolve() == args.csv.resolve():
        raise OutputError(f"--pdf and --csv name the same file ({args.csv}); give each its own")
    for target in (args.csv, args.pdf):
        if target:
            check_target(target)
    if store is None:
        raise TrainRigError(f"{args.db or default_db_path()} does not exist yet: there is nothing to report")
    created = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    report = load_report(store, kind, int(number), created, args.author)
    if args.csv:
        write_result_csv(report, args.csv)
        print(f"wrote {args.csv}")
    if args.pdf:
        from reports.run_pdf import write_result_pdf  # Qt is loaded only when a PDF is asked for

        pages = write_result_pdf(report, args.pdf, args.page_size)
        print(f"wrote {args.pdf} ({pages} pages)")
    return 0


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _fig(value: float | None, fmt: Any) -> str:
    return "—" if value is None else str(fmt(value))


def results_table(rows: list[dict[str, Any]]) -> str:
    """Rows as a text table with aligned columns (figures right-aligned, "—" where unknown)."""
    header = (
        "key",
        "name",
        "created",
        "machine",
        "devices",
        "status",
        "pred. step",
        "meas. step",
        "train time",
        "peak mem",
        "acc.",
        "F1",
        "tags",
    )
    right = {6, 7, 8, 9, 10, 11}
    table = [header]
    for r in rows:
        table.append(
            (
                r["key"],
                _cut(r["name"], NAME_WIDTH),
                r["created"][:16].replace("T", " "),
                r["machine"] or "—",
                _cut(r["devices"], DEVICES_WIDTH) or "—",
                r["status"] or "—",
                _fig(r["predicted_step_s"], fmt_seconds),
                _fig(r["measured_step_s"], fmt_seconds),
                _fig(r["training_time_s"], fmt_seconds),
                _fig(r["peak_memory_bytes"], fmt_bytes),
                _fig(r["accuracy"], lambda x: f"{x:.3f}"),
                _fig(r["f1"], lambda x: f"{x:.3f}"),
                ", ".join(r["tags"]),
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = []
    for row in table:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
