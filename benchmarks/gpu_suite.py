"""A GPU training-step benchmark anyone with an NVIDIA GPU can run: ≥ 30 networks (MLPs, CNNs in
NCHW and channels_last, ResNets, VGG, transformer encoders and decoders at several sequence lengths,
LSTM/GRU) in fp32, tf32, bf16 and fp16 mixed precision over batch sizes (transformers also with
the attention written out in Python, ``training.attention: eager``, at their first batch), plus a
seeded generator of random architectures (the networks: benchmarks/suite_networks.py). Each
measured case is one JSON line in the format of the recorded H100 steps
(tests/fixtures/gpu/h100-sxm-fit-set.jsonl), with the TrainRig workload it ran, so the estimates can
be held against it (benchmarks/accuracy_cuda_recorded.py reads such files).

    python3 benchmarks/gpu_suite.py --out h100.jsonl               # every case on cuda:0
    python3 benchmarks/gpu_suite.py --random 50 --seed 7 --out r.jsonl
    python3 benchmarks/gpu_suite.py --device cpu --quick           # a smoke run without a GPU
    python3 benchmarks/gpu_suite.py --random 60 --seed 7 --random-only --family "random cnn" --isolate
    python3 benchmarks/gpu_suite.py --ladder --isolate --probe-every 1 --out ladder.jsonl   # host_ladder.py reads it
    python3 benchmarks/gpu_suite.py --recurrent --probe-every 1 --out rnn.jsonl   # recurrent_grid.py reads it

How a step is measured (as the recorded steps were): inputs are random tensors already on the
device; the loss is cross-entropy on the logits in fp32; mixed precision is ``torch.autocast`` with
the precision's dtype, plus ``torch.amp.GradScaler`` for fp16; fp32 turns TF32 off for matmuls and
cuDNN (image and recurrent networks are also measured with PyTorch's default, cuDNN's TF32 on: the
workload's ``training.cudnn_tf32`` true), tf32 turns it on for both; ``cudnn.benchmark`` is on
(ResNet-50 is also measured without it). One step = forward, loss, backward, ``optimizer.step()``,
``zero_grad(set_to_none=True)``, the optimizer at learning rate 0 (torchbridge.models.cuda_training_step:
at 1e-3 on one batch with one label some fp16 networks left fp16's range within a few steps and
GradScaler skipped their optimizer in every step after; the lines recorded before the ninth session of
2026-11-26 ran so, benchmarks/fp16_skips.py replays which). ``--warmup`` steps, then in fp16 more while
GradScaler still lowers its scale (at most 20), then the peak memory is reset and ``--steps`` steps
(``timed_steps``) are each timed with a synchronisation on both ends: ``step_time_s`` is the median,
``step_time_min_s`` the fastest, ``optimizer_skipped`` how many GradScaler skipped; ``host_issue_s``
the median time until the host had issued a step, before its synchronisation (since 2026-11-27: the
host's side of the step measured apart, so a host-bound step's miss can be told from the device's;
in fp16 it includes GradScaler's wait for the device before the optimizer step);
``max_allocated``/``max_reserved`` are ``torch.cuda.max_memory_allocated``/``max_memory_reserved``
over them (0 on the CPU), and
``allocated_before`` what was allocated before the case was built, after a garbage collection (lines
recorded before 2026-11-26 (a sixth session) lack it: their peaks carried earlier networks' embeddings,
which torchbridge's builder then kept in a reference cycle, hundreds of MiB by the suites' end).

``--isolate`` runs each case in a fresh Python process, as a user's training run is (its host probe timed in
that process; the line says ``isolated``), and ``--family`` keeps one family in its place in the suite's order:
small CNNs read 17–26 % too fast in the first five suites (13 % in the sixth), against networks without
convolutions beside them, which might have been the suite's long process; a fifth H100 lease ran 16 of its
convolutional steps again in fresh processes, and they took what the suite had measured (median ratio 1.00;
docs/accuracy.md, 2026-11-27).

On a GPU each line also carries ``host_probe_s``: calibrate's host probe (resources/host_probe.json, the
seed MLP's step, all host work) timed in this process before the first case and again every
``--probe-every`` cases (default ``PROBE_EVERY``; with 1, also right after each case:
``host_probe_after_s``), so the steps can be sized at the host's measured speed as calibrate would size
them there (benchmarks/accuracy_suite_recorded.py --calibrated; a lent H100's small networks ran
slower inside the suite's long process than in accuracy_cuda.py's, docs/accuracy.md).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.suite_networks import (  # noqa: E402
    all_layers,
    ladder_cases,
    networks,
    random_network,
    recurrent_cases,
    suite_case,
)

PRECISIONS = ("fp32", "tf32", "bf16_mixed", "fp16_mixed")
PROBE_EVERY = 25  # cases between two timings of the host probe
ISOLATED_TIMEOUT_S = 900.0  # the longest an --isolate case's process may run


def step_times_s(
    torch: Any,
    dev: Any,
    step: Any,
    warmup: int = 3,
    steps: int = 10,
    after_warmup: Any = None,
    issued: list[float] | None = None,
) -> list[float]:
    """Seconds of ``steps`` synchronised calls of ``step`` after ``warmup`` (cuDNN's search runs in the
    first), ``after_warmup()`` called in between (a peak-memory reset); benchmarks/fp32_convs.py and
    nchw_convs.py time their single layers so too. ``issued``: filled with each timed step's seconds until
    ``step`` returned, before the synchronisation (the host's time to issue it)."""

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    for _ in range(warmup):
        step()
    sync()
    if after_warmup:
        after_warmup()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        step()
        t_issued = time.perf_counter()
        sync()
        times.append(time.perf_counter() - t)
        if issued is not None:
            issued.append(t_issued - t)
    return times


def host_probe_s(device: str) -> float:
    """calibrate's host probe on ``device``, timed by the calibration worker's own function."""
    import torch

    workers = str(ROOT / "resources" / "workers")
    if workers not in sys.path:
        sys.path.insert(0, workers)
    import calibrate  # resources/workers/calibrate.py

    return float(calibrate.host_probe(torch, torch.device(device)))


def cases(quick: bool, random_count: int, seed: int) -> list[dict[str, Any]]:
    """Every (network, precision, batch, memory format) to measure; ``quick``: a few small ones."""
    nets = networks()
    rng = random.Random(seed)
    for i in range(random_count):
        model, family = random_network(rng)
        nets[f"random-{seed}-{i}"] = (model, f"random {family}")
    out = []
    for name, (model, family) in nets.items():
        image = len(model["input_shape"]) == 3
        big = name in (
            "resnet-50",
            "vgg-11",
            "resnet-34",
            "gpt2-small",
            "gpt2-small-vocab50304",
            "decoder-1024x12-seq1024",
            "mlp-wide-8192",
        )
        batches = (8, 32) if big else (32, 256) if family not in ("rnn",) else (20, 64)
        attends = any(layer.get("type") in ("transformer_block", "multihead_attention") for layer in all_layers(model))
        for precision in PRECISIONS:
            for batch in batches:
                for fmt in ("contiguous", "channels_last") if image else ("contiguous",):
                    out.append(suite_case(name, family, model, batch, precision, fmt))
                # transformers also with the attention written out in Python (Hugging Face's eager)
                if attends and batch == batches[0]:
                    out.append({**out[-1], "attention": "eager"})
                # ResNet-50 also with cuDNN's heuristics instead of cudnn.benchmark (PyTorch's default):
                # the recorded bf16 batch-64 NCHW step ran so and reads −30 % (docs/accuracy.md)
                if name == "resnet-50" and precision in ("bf16_mixed", "tf32"):
                    out.append({**out[-1], "memory_format": "contiguous", "cudnn_benchmark": False})
                # fp32 with PyTorch's default too (torch.backends.cudnn.allow_tf32 = True), where cuDNN runs
                # layers: convolutions and LSTM/GRU on TF32 tensor cores
                if precision == "fp32" and (image or family == "rnn") and batch == batches[0]:
                    out.append({**out[-1], "memory_format": "contiguous", "cudnn_tf32": True})
    if quick:
        keep = {"seed-mlp", "lenet-5", "tiny-gpt", "lstm-lm", f"random-{seed}-0"}
        # batch 4, fp32 and bf16, the NCHW layout: seconds on a CPU
        out = [
            {**c, "batch": 4}
            for c in out
            if c["name"] in keep
            and c["batch"] == max(d["batch"] for d in out if d["name"] == c["name"])
            and c["precision"] in ("fp32", "bf16_mixed")
            and c["memory_format"] == "contiguous"
            and c["attention"] == "auto"
        ]
    return out


def measure(case: dict[str, Any], device: str, warmup: int, steps: int, optimizer: str) -> dict[str, Any]:
    """One case's median step, fastest step and peak memory (see the module docstring)."""
    import torch

    from torchbridge.models import (
        build_module,
        cuda_training_step,
        loss_scale,
        set_tf32,
        settle_scaler,
        skipped_steps,
    )

    torch.manual_seed(0)
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    gc.collect()  # what earlier cases left in reference cycles, before this case's peak is taken
    before = 0
    if cuda:
        torch.cuda.empty_cache()
        before = torch.cuda.memory_allocated(dev)
        set_tf32(torch, case["precision"], case.get("cudnn_tf32", False))
        torch.backends.cudnn.benchmark = case.get("cudnn_benchmark", True)
    fmt = torch.channels_last if case["memory_format"] == "channels_last" else torch.contiguous_format
    module = build_module(case["model"], case.get("attention", "auto")).to(dev, memory_format=fmt)
    step, scaler = cuda_training_step(module, case["model"], case["batch"], optimizer, case["precision"], dev, fmt)
    scale: list[float] = []

    def after_warmup() -> None:
        settle_scaler(step, scaler)
        scale.append(loss_scale(scaler))
        if cuda:
            torch.cuda.reset_peak_memory_stats(dev)

    issued: list[float] = []
    times = step_times_s(torch, dev, step, warmup, steps, after_warmup, issued)
    return {
        "name": case["name"]
        + ("" if case["memory_format"] == "contiguous" else " channels_last")
        + ("" if case.get("attention", "auto") == "auto" else f" {case['attention']} attention")
        + ("" if case.get("cudnn_benchmark", True) else " cudnn heuristics")
        + (" cudnn tf32" if case.get("cudnn_tf32", False) else ""),
        "family": case["family"],
        "parameters": sum(p.numel() for p in module.parameters()),
        "step_time_s": statistics.median(times),
        "step_time_min_s": min(times),
        "host_issue_s": statistics.median(issued),
        "max_allocated": torch.cuda.max_memory_allocated(dev) if cuda else 0,
        "allocated_before": before,  # live before the case was built: not the case's (0 but the probe's)
        "max_reserved": torch.cuda.max_memory_reserved(dev) if cuda else 0,
        "device": torch.cuda.get_device_name(dev) if cuda else "cpu",
        "torch": torch.__version__,
        "optimizer_skipped": skipped_steps(scale[0], loss_scale(scaler)),
        "timed_steps": steps,
        "workload": {
            "model": case["model"],
            "data": {"samples": case["batch"] * 10},
            "training": {
                "batch_size": case["batch"],
                "epochs": 1,
                "optimizer": optimizer,
                "precision": case["precision"],
                "memory_format": case["memory_format"],
                "attention": case.get("attention", "auto"),
                "cudnn_tf32": case.get("cudnn_tf32", False),
                "cudnn_benchmark": case.get("cudnn_benchmark", True),
            },
        },
    }


def isolated(
    case: dict[str, Any], device: str, warmup: int, steps: int, optimizer: str, probe_after: bool = False
) -> dict[str, Any]:
    """``measure`` of one case in a fresh Python process, as a user's training run is, its host probe timed in
    that process first (on a GPU; with ``probe_after`` again after the case): the suite's long process had run
    hundreds of networks before each of its small CNNs, which read 17–26 % slower there than the model, against
    networks without convolutions beside them, while short runs of such CNNs did not (docs/accuracy.md). The
    line says ``isolated``; a process that fails, prints no line or runs past ISOLATED_TIMEOUT_S raises."""
    import subprocess

    request = {
        "case": case,
        "device": device,
        "warmup": warmup,
        "steps": steps,
        "optimizer": optimizer,
        "probe_after": probe_after,
    }
    try:
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--case-json", json.dumps(request)],
            capture_output=True,
            text=True,
            check=False,
            timeout=ISOLATED_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"its process ran past {ISOLATED_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        raise RuntimeError((done.stderr.strip().splitlines() or [f"its process exited {done.returncode}"])[-1])
    lines = done.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError("its process printed no line")
    return dict(json.loads(lines[-1]))


def attach_probes(line: dict[str, Any], device: str, before: float, after: bool) -> None:
    """The host probe timed before the case (``host_probe_s``) and, with ``after``, one timed now
    (``host_probe_after_s``)."""
    line["host_probe_s"] = before
    if after:
        line["host_probe_after_s"] = host_probe_s(device)


def _run_isolated_case(request: dict[str, Any]) -> int:
    device = str(request["device"])
    before = host_probe_s(device) if device.startswith("cuda") else None
    line = measure(request["case"], device, int(request["warmup"]), int(request["steps"]), str(request["optimizer"]))
    line["isolated"] = True
    if before is not None:
        attach_probes(line, device, before, bool(request.get("probe_after")))
    print(json.dumps(line))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="cuda, cuda:1 or cpu (default: cuda)")
    ap.add_argument("--quick", action="store_true", help="a few small cases, 1 warm-up and 2 timed steps")
    ap.add_argument("--random", type=int, default=0, help="random architectures to add (seeded)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--random-only", action="store_true", help="only the random architectures, none of the named networks"
    )
    ap.add_argument(
        "--probe-every",
        type=int,
        default=PROBE_EVERY,
        metavar="N",
        help=f"cases between two timings of the host probe (default {PROBE_EVERY}; 1: before and after each case)",
    )
    ap.add_argument(
        "--recurrent",
        action="store_true",
        help="only the recurrent-algorithm grid: one-layer LSTMs and GRUs of hidden 64 to 512 and a two-layer "
        "LSTM at batch 20, 64 and 256 in fp32, bf16 and fp16 (benchmarks/recurrent_grid.py reads what it measures)",
    )
    ap.add_argument(
        "--ladder",
        action="store_true",
        help="only the host-cost ladder: linear and convolutional blocks stacked 1, 2, 4 and 8 deep, batch 8 "
        "(benchmarks/host_ladder.py reads what it measures)",
    )
    ap.add_argument(
        "--family",
        action="append",
        metavar="NAME",
        help="only the cases of this family (as the lines name it: 'random cnn', 'resnet'); may be repeated",
    )
    ap.add_argument("--optimizer", default="adamw")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--out", type=Path, help="append JSON lines here (default: print them)")
    ap.add_argument("--list", action="store_true", help="list the cases and stop")
    ap.add_argument(
        "--shuffle", type=int, metavar="SEED", help="run the cases in a seeded random order (with --budget-s: a sample)"
    )
    ap.add_argument(
        "--skip",
        type=int,
        default=0,
        metavar="N",
        help="leave out the first N cases of the order (a lease goes on where one stopped)",
    )
    ap.add_argument(
        "--budget-s", type=float, metavar="S", help="start no case after S seconds: what is measured by then is kept"
    )
    ap.add_argument(
        "--isolate",
        action="store_true",
        help="run each case in a fresh Python process, as a user's training run is (its line says isolated; "
        "its host probe is timed in that process, after the case too with --probe-every 1)",
    )
    ap.add_argument("--case-json", help=argparse.SUPPRESS)  # the child of --isolate: one case, one line out
    args = ap.parse_args(argv)
    if args.case_json:
        return _run_isolated_case(json.loads(args.case_json))
    grid = "--ladder" if args.ladder else "--recurrent" if args.recurrent else ""
    if args.ladder and args.recurrent:
        print("gpu_suite: --ladder and --recurrent are two recordings: one at a time", file=sys.stderr)
        return 2
    if grid and (args.random or args.seed or args.random_only):
        print(
            f"gpu_suite: {grid} measures its own networks: --random, --seed and --random-only do not apply",
            file=sys.stderr,
        )
        return 2
    if grid:
        todo = ladder_cases(args.quick) if args.ladder else recurrent_cases(args.quick)
    else:
        todo = cases(args.quick, args.random or (1 if args.quick else 0), args.seed)
    if args.random_only:
        todo = [c for c in todo if c["family"].startswith("random ")]
    if args.shuffle is not None:
        random.Random(args.shuffle).shuffle(todo)
    if args.family:  # after the shuffle: a family keeps its order in the whole suite's
        known = {c["family"] for c in todo}
        unknown = sorted(set(args.family) - known)
        if unknown:
            names = ", ".join(sorted(known))
            print(f"gpu_suite: no such family: {', '.join(unknown)} (known: {names})", file=sys.stderr)
            return 2
        todo = [c for c in todo if c["family"] in args.family]
    todo = todo[args.skip :]
    if not todo:
        print(f"gpu_suite: no case left to measure (--skip {args.skip} of the order)", file=sys.stderr)
        return 2
    if args.list:
        for c in todo:
            flags = (
                ("" if c.get("attention", "auto") == "auto" else f" {c['attention']} attention")
                + ("" if c.get("cudnn_benchmark", True) else " cudnn heuristics")
                + (" cudnn tf32" if c.get("cudnn_tf32", False) else "")
            )
            print(c["name"], c["precision"], c["batch"], c["memory_format"] + flags)
        print(f"{len(todo)} cases, {len({c['name'] for c in todo})} networks")
        return 0
    warmup, steps = (1, 2) if args.quick else (args.warmup, args.steps)
    if args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            print("gpu_suite: no CUDA GPU here; run with --device cpu --quick for a smoke run", file=sys.stderr)
            return 2
    sink = args.out.open("a", encoding="utf-8") if args.out else None
    failed = 0
    started = time.monotonic()
    probe = None
    for i, case in enumerate(todo, 1):
        # an isolated case times the probe in its own process
        if args.device.startswith("cuda") and not args.isolate and (i - 1) % max(1, args.probe_every) == 0:
            probe = host_probe_s(args.device)
            print(f"gpu_suite: host probe {probe * 1e3:.2f} ms", file=sys.stderr)
        if args.budget_s is not None and time.monotonic() - started > args.budget_s:
            print(
                f"gpu_suite: the {args.budget_s:.0f} s budget is spent: {i - 1} of {len(todo)} cases run",
                file=sys.stderr,
            )
            break
        try:
            if args.isolate:
                line = isolated(case, args.device, warmup, steps, args.optimizer, args.probe_every == 1)
            else:
                line = measure(case, args.device, warmup, steps, args.optimizer)
        except Exception as exc:  # an out-of-memory case or a layer the device cannot run: say so, go on
            failed += 1
            print(
                f"[{i}/{len(todo)}] {case['name']} {case['precision']} b{case['batch']}: failed: {exc}".splitlines()[0],
                file=sys.stderr,
            )
            continue
        if probe is not None:  # with --probe-every 1 the host on both sides of the step
            attach_probes(line, args.device, probe, args.probe_every == 1)
        text = json.dumps(line)
        if sink:
            sink.write(text + "\n")
            sink.flush()
            ms = line["step_time_s"] * 1e3
            print(
                f"[{i}/{len(todo)}] {line['name']} {case['precision']} b{case['batch']}: {ms:.2f} ms", file=sys.stderr
            )
        else:
            print(text)
    if sink:
        sink.close()
    return 1 if failed == len(todo) else 0


if __name__ == "__main__":
    sys.exit(main())
