"""``python main.py catalogue``: list the hardware catalogue; add or remove your own devices."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from core.errors import WorkloadError
from core.hardware.catalogue import (
    DEVICE_KINDS,
    catalogue_entries,
    check_user_device_name,
    load_catalogue,
    normalise_device_entry,
)
from core.storage.store import Store
from core.units import fmt_count
from core.validate import read_json_file


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("catalogue", help="list catalogue devices; add or remove your own")
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.add_argument("--kind", choices=DEVICE_KINDS, help="only devices of this kind")
    change = p.add_mutually_exclusive_group()  # one change a call: --remove beside --add was passed over
    change.add_argument(
        "--add", metavar="FILE", type=Path, help="add or update your devices from a JSON object or list"
    )
    change.add_argument("--remove", metavar="NAME", help="remove one of your devices")
    p.set_defaults(func=run, store_mode=lambda a: "write" if a.add or a.remove is not None else "read")


def all_entries(store: Store | None) -> list[dict[str, Any]]:
    shipped = [{**e, "user": False} for e in catalogue_entries()]
    names = {e["name"].lower() for e in shipped}
    user = [{**e, "user": True} for e in (store.user_devices() if store else []) if e["name"].lower() not in names]
    return shipped + user


def run(args: argparse.Namespace, store: Store | None) -> int:
    if args.add:
        return _add(args.add, store)
    if args.remove is not None:
        if store is None or not store.remove_user_device(args.remove):
            print(f"trainrig catalogue: no user device named {args.remove!r}", file=sys.stderr)
            return 2
        print(f"removed {args.remove}")
        return 0
    entries = [e for e in all_entries(store) if args.kind in (None, e["kind"])]
    if args.json:
        print(json.dumps(entries, indent=2, ensure_ascii=False))
        return 0
    print(f"{'device':34} {'kind':11} {'FP32':>11} {'FP16/BF16':>11} {'memory':>8} {'bandwidth':>11} {'TDP':>6}  price")
    for e in entries:
        mem = f"{e['memory_gb']:g} GB" if e.get("memory_gb") else "host"
        bw = f"{e['memory_bandwidth_gbs']:g} GB/s" if e.get("memory_bandwidth_gbs") else "—"
        tdp = f"{e['tdp_w']:g} W" if e.get("tdp_w") else "—"
        half = fmt_count(e["fp16_tflops"] * 1e12, "FLOP/s") if e.get("fp16_tflops") else "—"
        fp32 = fmt_count(e["fp32_tflops"] * 1e12, "FLOP/s") if e.get("fp32_tflops") else "—"
        if e.get("price_usd"):
            price = f"{e['price_usd']:,.0f} USD ({e.get('price_date', 'undated')})"
        elif e.get("cloud_usd_per_hour"):
            price = f"cloud {e['cloud_usd_per_hour']:.2f} USD/h"
        else:
            price = "—"
        mark = " (yours)" if e["user"] else ""
        print(f"{e['name'] + mark:34} {e['kind']:11} {fp32:>11} {half:>11} {mem:>8} {bw:>11} {tdp:>6}  {price}")
    return 0


def _add(path: Path, store: Store | None) -> int:
    doc = read_json_file(path, "device file")
    items = doc if isinstance(doc, list) else [doc]
    if not items:
        raise WorkloadError("", f"{path.name} lists no devices: nothing was saved")
    shipped = load_catalogue()
    entries = [normalise_device_entry(item, f"devices[{i}]") for i, item in enumerate(items)]
    for e in entries:
        check_user_device_name(e["name"], shipped)
    if store is None:
        raise WorkloadError("", "no database is open to keep your devices")
    for e in entries:
        store.save_user_device(e)
        print(f"saved {e['name']}")
    return 0
