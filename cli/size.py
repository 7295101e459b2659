"""``python main.py size WORKLOAD.json``: size a workload on candidate devices."""

from __future__ import annotations

import argparse
import json
import sys

from cli.sizing_run import size_file
from core.errors import StoreError
from core.network.presets import load_presets
from core.output.sizing_report import sizing_to_dict, sizing_to_text
from core.storage.store import Store


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("size", help="size a workload: memory, compute, time and cost per candidate")
    p.add_argument("workload", nargs="?", help="workload JSON file (see docs/workload.md)")
    p.add_argument(
        "--candidate",
        "-c",
        action="append",
        default=[],
        metavar="NAME",
        help="catalogue device (a unique part of its name, e.g. 4090) or this-machine; repeatable",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--list-presets", action="store_true", help="list the model presets and exit")
    p.add_argument("--no-save", action="store_true", help="do not record this sizing in the database")
    p.add_argument(
        "--trust-code",
        action="store_true",
        help="run the Python code of a model given as PyTorch code (model.torch) to trace it, without asking",
    )
    p.set_defaults(func=run, store_mode=lambda a: "read" if a.no_save or a.list_presets else "write")


def run(args: argparse.Namespace, store: Store | None) -> int:
    if args.list_presets:
        presets = load_presets()
        if args.json:
            print(
                json.dumps(
                    [
                        {"name": n, "description": p.get("description", ""), "source": p.get("source", "")}
                        for n, p in presets.items()
                    ],
                    indent=2,
                )
            )
        else:
            for name, p in presets.items():
                print(f"{name:26} {p.get('description', '')}")
        return 0
    if not args.workload:
        print("trainrig size: give a workload file, or --list-presets", file=sys.stderr)
        return 2
    run_ = size_file(args.workload, args.candidate, store, trust_code=args.trust_code)
    rec = run_.recommendation
    doc = sizing_to_dict(rec)
    # printed before it is saved: a database that fails loses nothing the user has seen
    print(json.dumps(doc, indent=2) if args.json else sizing_to_text(rec), flush=True)
    if store is not None and not args.no_save:
        try:
            store.save_inventory_if_changed(run_.inventory)  # "this machine" as it was sized
            store.save_sizing(rec.result.workload.name, run_.document, [d.name for d in run_.devices], doc)
        except StoreError as exc:
            print(f"trainrig size: the sizing above was not saved: {exc}", file=sys.stderr)
            return 2
    return 0
