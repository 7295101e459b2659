"""Which recorded fp16 GPU steps were not training steps: GradScaler skipped their optimizer.

The GPU suite (benchmarks/gpu_suite.py) and the measure worker trained one random batch with one
label at learning rate 1e-3 until the ninth session of 2026-11-26. A network learns such a batch in a
step or two; its activations then grow step after step, and in fp16 they leave the format's range
(65,504): the loss is inf, GradScaler skips ``optimizer.step()`` and halves its scale, and so on every
step after, the weights never moving again. A suite line whose median timed step was such a step
timed forward and backward without the optimizer. The recorded lines do not say which; this script
replays each fp16 line's steps on the CPU, with the suite's seed and weights and its lease's warm-up
and timed steps (``SUITES``):

* under the CPU's autocast in bfloat16, which follows the same operators into low precision as
  CUDA's autocast does into fp16 (matrix products and convolutions, and what follows them in that
  dtype) — bfloat16's range hides nothing, so each low-precision tensor is checked against fp16's
  65,504: an activation above it is inf in fp16 (the step is skipped and every later one too: the
  weights no longer move), a scaled gradient above it (GradScaler starts at 65,536) is a skip that
  halves the scale;
* the optimizer (AdamW, as the suite's) steps only where GradScaler would have.

Two checks that this replays what the GPUs did: the measure worker's profile of VGG-11 fp16 b8 on a
lent H100 (tests/fixtures/gpu/h100-profiles-2026-11-26d.jsonl) has GradScaler's unscale kernels but
no AdamW kernels, and this script says every step the worker profiled skipped; and a real fp16 run on
the CPU (autocast float16, torch.amp.GradScaler("cpu")) of mlp-8x2048 b32 skips from step 6 on, as
this script says (tests/unit/test_fp16_skips.py). The input batch is drawn on the CPU, not on the GPU
as the suite drew it: same distribution, other numbers. A case whose forward pass of a batch is over
``--max-gflop`` or whose replay outruns ``--budget-s`` is not replayed (its lines are kept, as if they
trained): 119 of the 278 lines on 2026-11-26.

    python3 benchmarks/fp16_skips.py                        # print each fp16 line's skipped timed steps
    python3 benchmarks/fp16_skips.py --write --cache C.jsonl   # and write tests/fixtures/gpu/fp16-skips.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FIXTURES = ROOT / "tests/fixtures/gpu"
OUT = FIXTURES / "fp16-skips.json"
# each suite's warm-up and timed steps (docs/accuracy.md: the leases' commands; gpu_suite.py's defaults
# are 5 and 20)
SUITES = {
    "h100-suite-2026-11-26.jsonl": (5, 20),
    "h100-suite-2026-11-26b.jsonl": (5, 20),
    "h100-suite-2026-11-26c.jsonl": (5, 20),
    "h100-suite-2026-11-26d.jsonl": (3, 10),
    "h200-suite-2026-11-26.jsonl": (3, 10),
    "h200-suite-2026-11-26e.jsonl": (5, 20),
}
F16_MAX = 65504.0
WARMUP, STEPS = 5, 20  # the longest window: every suite's steps are among the first 25
INITIAL_SCALE = 65536.0  # torch.amp.GradScaler's


def replay(
    model: dict[str, Any],
    batch: int,
    attention: str = "auto",
    lr: float = 1e-3,
    steps: int = WARMUP + STEPS,
    budget_s: float = math.inf,
) -> list[int] | None:
    """The steps (0-based, warm-up included) whose optimizer GradScaler skipped, replayed as the module
    docstring says; None where the replay outran ``budget_s``."""
    import torch

    from torchbridge.models import build_module, example_batch, make_optimizer

    warnings.filterwarnings("ignore", message="Full backward hook is firing")
    torch.manual_seed(0)
    module = build_module(model, attention)
    opt = make_optimizer(module, "adamw", lr=lr)
    x = example_batch(model, batch)
    loss_fn = torch.nn.CrossEntropyLoss()
    peak = {"act": 0.0, "grad": 0.0}

    def low(t: Any) -> bool:
        return isinstance(t, torch.Tensor) and t.dtype == torch.bfloat16

    def largest(t: Any) -> float:
        a = float(t.detach().abs().max()) if t.numel() else 0.0
        return a if math.isfinite(a) else math.inf

    def forward_hook(_m: Any, _inp: Any, out: Any) -> None:
        for t in out if isinstance(out, tuple) else (out,):
            if low(t):
                peak["act"] = max(peak["act"], largest(t))

    def backward_hook(_m: Any, grad_in: Any, grad_out: Any) -> None:
        for t in (*grad_in, *grad_out):
            if low(t):
                peak["grad"] = max(peak["grad"], largest(t))

    cast = (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.LSTM, torch.nn.GRU)
    for m in module.modules():
        m.register_forward_hook(forward_hook)
        if not isinstance(m, torch.nn.RNNBase):  # cuDNN's RNN module returns a tuple with its state
            m.register_full_backward_hook(backward_hook)
    # weights autocast casts to low precision: their gradients are computed there too
    cast_params = [p for m in module.modules() if isinstance(m, cast) for p in m.parameters(recurse=False)]
    scale, skipped, i = INITIAL_SCALE, [], 0
    t0 = time.perf_counter()
    while i < steps:
        if time.perf_counter() - t0 > budget_s:
            return None
        peak.update(act=0.0, grad=0.0)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = module(x)
            target = torch.zeros(out.shape[:-1], dtype=torch.long)
            loss = loss_fn(out.reshape(-1, out.shape[-1]).float(), target.reshape(-1))
        if peak["act"] > F16_MAX or not math.isfinite(float(loss.detach())):
            return skipped + list(range(i, steps))  # inf in forward: every step from here on
        (loss * scale).backward()
        grads = [largest(p.grad) for p in cast_params if p.grad is not None]
        g = max([peak["grad"], *grads])
        if g > F16_MAX:
            # the weights do not move while GradScaler skips: the same gradients until the scale fits
            k = max(1, math.ceil(math.log2(g / F16_MAX))) if math.isfinite(g) else steps
            skipped += list(range(i, min(steps, i + k)))
            i += k
            scale /= 2**k
            opt.zero_grad(set_to_none=True)
            continue
        for p in module.parameters():
            if p.grad is not None:
                p.grad.div_(scale)
        opt.step()
        opt.zero_grad(set_to_none=True)
        i += 1
    return skipped


def timed_skips(skipped: list[int], suite: str) -> int:
    """How many of ``suite``'s timed steps were among the ``skipped``."""
    warmup, steps = SUITES[suite]
    return sum(1 for s in skipped if warmup <= s < warmup + steps)


def fp16_lines() -> dict[str, dict[str, Any]]:
    """Each distinct fp16 case of the suites (model, batch, attention) and the lines that ran it."""
    from core.network.model import analyze_model

    cases: dict[str, dict[str, Any]] = {}
    for name in SUITES:
        for text in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
            m = json.loads(text)
            t = m["workload"]["training"]
            if t["precision"] != "fp16_mixed":
                continue
            attention = t.get("attention", "auto")
            key = json.dumps([m["workload"]["model"], t["batch_size"], attention], sort_keys=True)
            entry = cases.setdefault(
                key,
                {
                    "model": m["workload"]["model"],
                    "batch": t["batch_size"],
                    "attention": attention,
                    "flops": analyze_model(m["workload"]["model"]).forward_flops * t["batch_size"],
                    "lines": [],
                },
            )
            entry["lines"].append([name, m["name"]])
    return cases


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(ROOT)}")
    ap.add_argument("--budget-s", type=float, default=45.0, help="CPU seconds a case may take (default 45)")
    ap.add_argument("--cache", type=Path, help="JSON lines of replays done: read, and appended to")
    ap.add_argument(
        "--max-gflop", type=float, default=500.0, help="skip cases with a larger forward pass of a batch (default 500)"
    )
    args = ap.parse_args(argv)
    cases = sorted(fp16_lines().values(), key=lambda c: c["flops"])
    done: dict[str, Any] = {}
    if args.cache and args.cache.exists():
        for text in args.cache.read_text(encoding="utf-8").splitlines():
            done.update(json.loads(text))
    rows = []
    t_all = time.perf_counter()
    for c in cases:
        t0 = time.perf_counter()
        key = json.dumps([c["model"], c["batch"], c["attention"]], sort_keys=True)
        if key in done:
            at = done[key]
        else:
            too_big = c["flops"] > args.max_gflop * 1e9
            at = None if too_big else replay(c["model"], c["batch"], c["attention"], budget_s=args.budget_s)
            if args.cache and not too_big:  # over the budget too: not tried again
                with args.cache.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps({key: at}) + "\n")
        timed = None if at is None else [timed_skips(at, suite) for suite, _ in c["lines"]]
        rows.append({"lines": c["lines"], "batch": c["batch"], "skipped": at, "skipped_timed": timed})
        said = (
            "not replayed (over the budget)"
            if timed is None
            else ", ".join(f"{n} of {SUITES[suite][1]}" for n, (suite, _) in zip(timed, c["lines"], strict=True))
            + " timed steps skipped"
        )
        print(
            f"{said}  b{c['batch']:<4d} {', '.join(n for _, n in c['lines'][:2])}  "
            f"({c['flops'] / 1e9:.0f} GFLOP a forward pass, {time.perf_counter() - t0:.1f} s)",
            flush=True,
        )
    from benchmarks.accuracy_suite_recorded import not_training

    invalid = sum(
        not_training({"optimizer_skipped": n, "timed_steps": SUITES[suite][1]})
        for r in rows
        if r["skipped_timed"] is not None
        for n, (suite, _) in zip(r["skipped_timed"], r["lines"], strict=True)
    )
    unknown = sum(len(r["lines"]) for r in rows if r["skipped_timed"] is None)
    print(
        f"\n{invalid} of {sum(len(r['lines']) for r in rows)} fp16 lines timed a median step GradScaler skipped; "
        f"{unknown} not replayed"
    )
    print(f"replayed in {time.perf_counter() - t_all:.0f} s")
    if args.write:
        doc = {
            "about": "The recorded fp16 GPU-suite lines whose timed steps GradScaler skipped the optimizer of, "
            "replayed on the CPU by benchmarks/fp16_skips.py (its docstring: the method and its checks). "
            "'skipped': the steps it skipped (0-based, warm-up included; null: not replayed, over the CPU "
            "budget); 'runs': each suite's warm-up and timed steps. A line whose skipped timed steps are half "
            "or more timed a median step without the optimizer: not a training step.",
            "date": datetime.date.today().isoformat(),
            "runs": {suite: {"warmup": w, "steps": n} for suite, (w, n) in SUITES.items()},
            "cases": [{"lines": r["lines"], "batch": r["batch"], "skipped": r["skipped"]} for r in rows],
        }
        OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
