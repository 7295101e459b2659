"""``python main.py experiment WORKLOAD.json --vary FIELD=V1,V2,…``: a one-factor experiment on
this machine (Finocchiaro, Tables 4.1–4.5): every value trained in turn, each a stored run with its
telemetry, then the summary table with the sizing's predictions beside the measurements."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli.run import EXIT_CANCELLED, EXIT_FAILED, ProgressBar, check_rate, wait_with_cancel
from core.errors import TrainRigError
from core.output import scaling
from core.output.experiment_summary import summary_text
from core.output.thread_scaling import SOURCE, ThreadPoint, verdict
from core.spec.experiment import MAX_RUNS, Variant, expand, parse_vary
from core.spec.workload import parse_workload, read_workload_document
from core.storage.store import Store, this_host
from core.units import fmt_seconds
from telemetry.experiments import ExperimentPlan, run_experiment, save_one_factor
from telemetry.inventory import collect_inventory
from telemetry.page_cache import evict
from telemetry.process_scaling import parse_process_counts, process_factor, process_setup, scaling_predictions
from telemetry.pytorch_env import find_torch_environment
from telemetry.runs import Run
from telemetry.sampler import DEFAULT_RATE_HZ
from telemetry.storage_ab import FORMATS as STORAGE_FORMATS
from telemetry.storage_ab import check_format, summary_row, tier_of, write_dataset
from telemetry.thread_scaling import physical_and_logical, run_thread_scaling
from telemetry.training import size_here, trainer_spec, training_run


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "experiment",
        help="train a workload at several values of one field (a one-factor experiment) and tabulate the runs",
    )
    p.add_argument("workload", help="the base workload JSON file (a layer list or a preset)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--vary",
        metavar="FIELD=V1,V2,…",
        help="the field and its values: a workload path (training.batch_size=64,128) or depth, width, activation, "
        "batch_size, optimizer, learning_rate, epochs, precision",
    )
    what.add_argument(
        "--threads",
        nargs="?",
        const="auto",
        metavar="N1,N2,…",
        help="thread scaling (Wünsche 2016, Fig. 1): one mini-batch-64 step at 1, 2, 4, … threads up to twice the "
        "physical cores (or the counts given), with the rule 'no more threads than physical cores' checked",
    )
    what.add_argument(
        "--storage",
        type=Path,
        metavar="DIR",
        help="storage A/B (Panaite & Leba 2024): the same data set, one file per sample, trained from DIR and "
        "from a RAM disk (--ramdisk), the page cache evicted before each run",
    )
    what.add_argument(
        "--processes",
        metavar="1,N2,…",
        help="process scaling: the same workload trained by 1, 2, 4, … processes (more than one through torchrun "
        "with DistributedDataParallel: gloo on the CPU, NCCL on GPUs), the speed-ups beside the sizing's prediction "
        "for that many devices and Wünsche 2016's published cut per doubling of GPUs",
    )
    p.add_argument("--ramdisk", type=Path, default=Path("/dev/shm"), help="the RAM disk to compare with (/dev/shm)")
    p.add_argument(
        "--data-format",
        choices=STORAGE_FORMATS,
        default="npy",
        help="files the storage test writes: float32 arrays (raw, npy) or 8-bit images (png, tiff; jpeg needs Pillow)",
    )
    p.add_argument("--loader-workers", type=int, default=2, help="DataLoader worker processes reading the files (2)")
    p.add_argument("--repeats", type=int, default=1, help="runs per value, with seeds 0, 1, …: mean ± spread (1)")
    p.add_argument("--epochs", type=int, help="epochs per run (default: the workload's)")
    p.add_argument("--samples", type=int, help="training samples of the synthetic set (default: the workload's)")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda:N")
    p.add_argument("--rate", type=float, default=DEFAULT_RATE_HZ, help="telemetry samples per second (10)")
    p.add_argument("--python", help="the Python with PyTorch (default: the one TrainRig finds)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run, store_mode=lambda a: "write")


def run(args: argparse.Namespace, store: Store | None) -> int:
    if args.threads is not None:
        return run_threads(args, store)
    if args.storage is not None:
        return run_storage(args, store)
    if args.processes is not None:
        return run_processes(args, store)
    check_rate(args.rate)
    if not 1 <= args.repeats <= 20:
        raise TrainRigError(f"--repeats must be 1–20, not {args.repeats}")
    if args.device != "cpu" and not args.device.startswith("cuda"):
        raise TrainRigError(f"--device must be cpu or cuda:N, not {args.device!r}")
    document = read_workload_document(args.workload)
    if not isinstance(document, dict):
        raise TrainRigError(f"{args.workload}: a workload is a JSON object")
    factor = parse_vary(args.vary)
    for option, path in (("--epochs", "training.epochs"), ("--samples", "data.samples")):
        if factor.path == path and getattr(args, option[2:]) is not None:
            raise TrainRigError(f"{option} sets what --vary {factor.name} varies: give one of them")
    variants = tuple(expand(document, factor))  # every value checked before anything runs
    if len(variants) * args.repeats > MAX_RUNS:
        raise TrainRigError(f"{len(variants)} values × {args.repeats} repeats is over {MAX_RUNS} runs")
    env = find_torch_environment(args.python, strict=True)
    if not env.ok:
        raise TrainRigError(env.message)
    name = str(document.get("name") or "workload")
    plan = ExperimentPlan(name, factor, variants, args.repeats, args.epochs, args.samples, args.device)
    bar = ProgressBar(sys.stderr)
    print(f"Experiment on {name}: {factor.name} = {', '.join(map(str, factor.values))}, {args.repeats} run(s) each")
    outcome = run_experiment(
        env.python, plan, store, rate_hz=args.rate, wait=wait_with_cancel, on_run=progress_lines(bar, args.repeats)
    )
    bar.close()
    rows = outcome.rows
    eid, status, summary = save_one_factor(store, plan, outcome, document)
    complete = status == "finished"
    if args.json:
        print(json.dumps({**summary, "experiment_id": eid}, indent=2))
    else:
        print(summary_text(factor.name, rows))
        ids = [str(i) for i in outcome.run_ids if i is not None]
        if ids:
            print(f"Runs stored: {', '.join(ids)}" + (f"; experiment #{eid}" if eid is not None else ""))
    if outcome.cancelled:
        return EXIT_CANCELLED
    return 0 if complete else EXIT_FAILED


def progress_lines(bar: ProgressBar, repeats: int) -> Callable[[int, int, Variant, int, Run], None]:
    """As each run starts: a line naming it (run 2/3 (training.batch_size=64)), then its progress bar."""

    def started(i: int, n: int, variant: Variant, repeat: int, r: Run) -> None:
        bar.close()
        print(
            f"run {i}/{n} ({variant.label}" + (f", repeat {repeat + 1}" if repeats > 1 else "") + ")",
            file=sys.stderr,
            flush=True,
        )
        r.on_message = lambda _run, msg: bar.show(msg)

    return started


def run_processes(args: argparse.Namespace, store: Store | None) -> int:
    """The process-scaling experiment: the one-factor loop over process counts, each count > 1
    launched through torchrun; the summary from core.output.scaling."""
    check_rate(args.rate)
    if args.device != "cpu" and not args.device.startswith("cuda"):
        raise TrainRigError(f"--device must be cpu or cuda:N, not {args.device!r}")
    counts = parse_process_counts(args.processes, args.device)  # refused before anything runs
    document = read_workload_document(args.workload)
    workload = parse_workload(document)
    trainer_spec(workload, epochs=args.epochs, samples=args.samples, device=args.device)  # trainable here?
    env = find_torch_environment(args.python, strict=True)
    if not env.ok:
        raise TrainRigError(env.message)
    predictions, notes = scaling_predictions(workload, counts, args.device, store)
    factor, variants = process_factor(document, counts)
    plan = ExperimentPlan(workload.name, factor, variants, 1, args.epochs, args.samples, args.device)
    bar = ProgressBar(sys.stderr)
    print(
        f"Process scaling of {workload.name} on {args.device}: {', '.join(map(str, counts))} process(es), global batch "
        f"{workload.training.batch_size} split over them, seed 0"
    )
    outcome = run_experiment(
        env.python,
        plan,
        store,
        rate_hz=args.rate,
        wait=wait_with_cancel,
        on_run=progress_lines(bar, 1),
        setup=process_setup(predictions, args.device),
    )
    bar.close()
    runs = [(int(value), record) for value, record, _cols in outcome.results]
    step = {n: (p or {}).get("step_s") for n, p in predictions.items()}
    rows = scaling.scaling_rows(runs, step, notes)
    summary = scaling.summary_json(rows, outcome.run_ids)
    complete = len(rows) == len(counts) and all(r.status == "finished" for r in rows)
    status = "cancelled" if outcome.cancelled else "finished" if complete else "failed"
    plan_doc = {
        "values": counts,
        "device": args.device,
        "epochs": args.epochs,
        "samples": args.samples,
        "workload": document,
    }
    eid = save(store, f"{workload.name}: processes", "scaling", "processes", plan_doc, outcome.run_ids, summary, status)
    if args.json:
        print(json.dumps({**summary, "experiment_id": eid}, indent=2))
    else:
        print(scaling.scaling_text(rows))
        print(f"{summary['verdict']} — {scaling.SOURCE}")
    if outcome.cancelled:
        return EXIT_CANCELLED
    return 0 if complete else EXIT_FAILED


def save(
    store: Store | None,
    name: str,
    kind: str,
    factor: str,
    plan: dict[str, Any],
    run_ids: list[int | None],
    summary: dict[str, Any],
    status: str,
) -> int | None:
    """Record the experiment with its runs (the results browser lists it); None without a database."""
    if store is None:
        return None
    return store.save_experiment(name, kind, factor, plan, run_ids, summary, status, this_host())


def run_threads(args: argparse.Namespace, store: Store | None) -> int:
    counts = None
    if args.threads != "auto":
        try:
            counts = sorted({int(v) for v in str(args.threads).split(",") if v.strip()})
        except ValueError:
            raise TrainRigError(f"--threads takes thread counts such as 1,2,4; got {args.threads!r}") from None
        if not counts or counts[0] < 1 or counts[-1] > 1024:
            raise TrainRigError(f"--threads takes counts of 1–1024; got {args.threads!r}")
    workload = parse_workload(read_workload_document(args.workload))
    env = find_torch_environment(args.python, strict=True)
    if not env.ok:
        raise TrainRigError(env.message)
    physical, logical = physical_and_logical()
    print(
        f"Thread scaling of {workload.name}: one training step of 64 samples; "
        f"{physical} physical, {logical} logical cores"
    )

    def show(p: ThreadPoint) -> None:
        rate = 64 / p.step_s
        print(f"  {p.threads:>4} threads  {p.step_s * 1e3:9.3f} ms a step  {rate:10,.0f} samples/s", flush=True)

    points = run_thread_scaling(env.python, workload, threads=counts, on_point=show)
    summary = {
        "physical": physical,
        "logical": logical,
        "points": [p.__dict__ for p in points],
        "verdict": verdict(points, physical),
        "source": SOURCE,
    }
    plan = {"values": [p.threads for p in points], "batch_size": 64, "device": "cpu", "workload": workload.name}
    eid = save(store, f"{workload.name}: thread scaling", "threads", "threads", plan, [], summary, "finished")
    if args.json:
        print(json.dumps({**summary, "experiment_id": eid}))
    print(f"{summary['verdict']} — {SOURCE}")
    return 0


def run_storage(args: argparse.Namespace, store: Store | None) -> int:
    for folder in (args.storage, args.ramdisk):
        if not folder.is_dir():
            raise TrainRigError(f"{folder} is not a folder")
    if not 0 <= args.loader_workers <= 64:
        raise TrainRigError(f"--loader-workers must be 0–64, not {args.loader_workers}")
    document = read_workload_document(args.workload)
    workload, prediction = size_here(document, store)
    check_format(args.data_format, [int(v) for v in workload.analysis.input_shape])  # before a file is written
    samples = args.samples or min(workload.data.samples, 20_000)
    env = find_torch_environment(args.python, strict=True)
    if not env.ok:
        raise TrainRigError(env.message)
    inventory = collect_inventory()
    rows, code, run_ids = [], 0, []
    for name, folder in (("your folder", args.storage), ("RAM disk", args.ramdisk)):
        written = write_dataset(folder, workload, samples, args.data_format)
        try:
            eviction = evict([*written.files, written.folder / "index.json"])
            print(
                f"{name}: {len(written.files):,} files, {written.bytes / 2**20:,.1f} MiB in {written.folder}; "
                f"{eviction.describe()}",
                flush=True,
            )
            spec = trainer_spec(workload, epochs=args.epochs or 2, samples=samples, device=args.device)
            spec["files"] = {"dir": str(written.folder), "workers": args.loader_workers}
            r = training_run(
                env.python,
                spec,
                store=store,
                name=f"{workload.name}: storage, {name}",
                workload_document=document,
                prediction=prediction,
                rate_hz=args.rate,
            )
            r.start()
            wait_with_cancel(r)
            run_ids.append(r.run_id)
            if r.status != "finished":
                print(f"  the run {r.status}: {r.reason}", file=sys.stderr)
                code = EXIT_CANCELLED if r.status == "cancelled" else EXIT_FAILED
                break
            rows.append(summary_row(name, written, tier_of(folder, inventory), eviction.describe(), r.metrics or {}))
        finally:
            shutil.rmtree(written.folder, ignore_errors=True)
    status = "finished" if code == 0 else "cancelled" if code == EXIT_CANCELLED else "failed"
    plan = {
        "values": [str(args.storage), str(args.ramdisk)],
        "format": args.data_format,
        "loader_workers": args.loader_workers,
        "samples": samples,
        "device": args.device,
        "workload": document,
    }
    eid = save(store, f"{workload.name}: storage", "storage", "storage", plan, run_ids, {"rows": rows}, status)
    if args.json:
        print(json.dumps({"rows": rows, "experiment_id": eid}, indent=2))
    else:
        print(storage_table(rows))
    return code


def storage_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        f"{'location':<12} {'tier':<9} {'files':>12} {'epoch':>9} {'files read at':>14} {'waiting for data':>17} "
        f"{'sizing: read an epoch':>22}"
    ]
    for r in rows:
        rate = f"{r['consumed_bps'] / 2**20:,.1f} MiB/s" if r["consumed_bps"] else "—"
        wait = f"{r['data_wait_share']:.0%} of the time" if r["data_wait_share"] is not None else "—"
        pred = fmt_seconds(r["predicted_read_s"]) if r["predicted_read_s"] is not None else "tier unknown"
        files = f"{r.get('format', '?')} {r.get('bytes_per_file', 0):,.0f} B"
        lines.append(
            f"{r['location']:<12} {r['tier']:<9} {files:>12} {r['epoch_s']:>8.2f}s {rate:>14} {wait:>17} {pred:>22}"
        )
    return "\n".join(lines)
