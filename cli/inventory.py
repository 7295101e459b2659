"""``python main.py inventory``: this machine's hardware and software for training."""

from __future__ import annotations

import argparse
import json

from core.storage.store import Store
from telemetry.inventory import collect_inventory, inventory_to_text


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("inventory", help="detect this machine's CPU, memory, storage, GPUs and software")
    p.add_argument("--json", action="store_true", help="print one JSON object (values, sources, unknowns)")
    p.add_argument("--save", action="store_true", help="record a snapshot in the database")
    p.set_defaults(func=run, store_mode=lambda a: "write" if a.save else None)


def run(args: argparse.Namespace, store: Store | None) -> int:
    inv = collect_inventory()
    if args.save and store is not None:
        inv["snapshot_id"] = store.save_inventory(inv)
    print(json.dumps(inv, indent=2, default=str) if args.json else inventory_to_text(inv))
    if args.save and store is not None and not args.json:
        print(f"saved: inventory snapshot #{inv['snapshot_id']} in {store.path or 'the database'}")
    return 0
