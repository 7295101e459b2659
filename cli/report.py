"""``python main.py report WORKLOAD.json --pdf FILE [--csv FILE]``: the purchasing report."""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

from core.bom import recommend_bom
from core.report import build_report
from core.report_csv import write_csv
from core.rules import evaluate_rules
from core.sizing import size_workload
from core.store import Store
from core.workload import parse_workload, read_workload_document
from telemetry.candidates import calibrated_rates, resolve_candidates
from telemetry.inventory import collect_inventory, inventory_to_text
from telemetry.machine import summary_from_inventory
from telemetry.tracer import resolve_torch_models


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write the purchasing report of a workload as PDF and/or CSV")
    p.add_argument("workload", help="workload JSON file")
    p.add_argument("--candidate", "-c", action="append", default=[], metavar="NAME", help="as for size")
    p.add_argument("--pdf", type=Path, help="write the PDF report here")
    p.add_argument("--csv", type=Path, help="write the bill of materials and candidates here (CSV)")
    p.add_argument("--page-size", choices=("a4", "letter"), help="default: from the locale")
    p.add_argument("--author", default="", help="name on the title page")
    p.set_defaults(func=run, needs_store=True)


def run(args: argparse.Namespace, store: Store | None) -> int:
    if not args.pdf and not args.csv:
        print("trainrig report: give --pdf FILE and/or --csv FILE")
        return 2
    doc = resolve_torch_models(read_workload_document(args.workload), Path(args.workload).resolve().parent)
    workload = parse_workload(doc)
    inventory = collect_inventory()
    devices, machine = resolve_candidates(
        args.candidate, workload, summary_from_inventory(inventory), store.user_devices() if store else ()
    )
    calibration = store.latest_calibration(inventory["fingerprint"]) if store is not None else None
    result = size_workload(
        workload, devices, host_ram_bytes=machine.ram_total_bytes, calibrated=calibrated_rates(devices, calibration)
    )
    findings = evaluate_rules(result, inventory)
    report = build_report(
        result,
        findings,
        recommend_bom(result),
        author=args.author,
        machine=f"{platform.node()} ({machine.cpu_model})",
        inventory_text=inventory_to_text(inventory),
    )
    if args.csv:
        write_csv(report, args.csv)
        print(f"wrote {args.csv}")
    if args.pdf:
        from reports.pdf import render_pdf  # Qt is loaded only when a PDF is asked for

        pages = render_pdf(report, args.pdf, args.page_size)
        print(f"wrote {args.pdf} ({pages} pages)")
    return 0
