"""Single kernels timed on a CUDA GPU, as kept in tests/fixtures/gpu/h200-kernels-2026-11-26.json:
every matrix-product shape of DeepBench's training set (resources/published/deepbench_train.json)
as torch.mm in fp32 (TF32 off), tf32, fp16 and bf16; every sm_90 shape of XLA's GEMM table
(resources/published/xla_gemm_perf_table.json) as torch.bmm; every DeepBench LSTM/GRU layer as
torch.nn.LSTM/GRU (one layer, input = hidden, sequence-first), forward without gradients and forward
+ backward. Each time is the mean of up to 50 calls issued back to back between two CUDA events,
after one warm-up call; calls shorter than the host's dispatch of one op (about 14 µs on the H200's
host) time the dispatch, which benchmarks/h200_kernels.py leaves out.

    python3 benchmarks/gpu_kernel_timings.py OUT.json [--seconds 80]

Writes what it has measured when the time is up (the recurrent layers last). Needs a CUDA GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = ROOT / "resources/published"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seconds", type=float, default=80.0, help="stop starting kernels after this long")
    args = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("gpu_kernel_timings: no CUDA GPU here", file=sys.stderr)
        return 2
    deadline = time.monotonic() + args.seconds
    dev = torch.device("cuda")
    res: dict[str, Any] = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "cudnn": torch.backends.cudnn.version(),
        "gemm_deepbench": [],
        "gemm_xla": [],
        "rnn_deepbench": [],
    }
    dtypes = {"fp32": torch.float32, "tf32": torch.float32, "fp16_mixed": torch.float16, "bf16_mixed": torch.bfloat16}

    def save() -> None:
        args.out.write_text(json.dumps(res), encoding="utf-8")

    def timed(fn: Any, reps: int) -> float:
        fn()
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        one = time.perf_counter() - t
        n = max(1, min(reps, int(0.05 / max(one, 1e-6))))
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(n):
            fn()
        b.record()
        torch.cuda.synchronize()
        return a.elapsed_time(b) / n / 1e3

    def precision(p: str) -> None:
        torch.backends.cuda.matmul.allow_tf32 = p == "tf32"
        torch.backends.cudnn.allow_tf32 = p == "tf32"

    db = json.loads((PUBLISHED / "deepbench_train.json").read_text(encoding="utf-8"))
    shapes = sorted({(r["m"], r["n"], r["k"], r["a_t"], r["b_t"]) for r in db["gemm"]})
    for p in dtypes:
        precision(p)
        for m, n, k, at, bt in shapes:
            if time.monotonic() > deadline - 40:
                break
            a = torch.randn((k, m) if at == "T" else (m, k), device=dev, dtype=dtypes[p])
            b = torch.randn((n, k) if bt == "T" else (k, n), device=dev, dtype=dtypes[p])
            a, b = (a.t() if at == "T" else a), (b.t() if bt == "T" else b)
            s = timed(lambda a=a, b=b: torch.mm(a, b), 50)
            res["gemm_deepbench"].append({"precision": p, "m": m, "n": n, "k": k, "a_t": at, "b_t": bt, "s": s})
    save()
    xla = json.loads((PUBLISHED / "xla_gemm_perf_table.json").read_text(encoding="utf-8"))
    for table, p, _, batch, m, n, k, _ in xla["rows"]:
        if time.monotonic() > deadline - 25:
            break
        if table != "sm_90":
            continue
        precision(p)
        a = torch.randn(batch, m, k, device=dev, dtype=dtypes[p])
        b = torch.randn(batch, k, n, device=dev, dtype=dtypes[p])
        s = timed(lambda a=a, b=b: torch.bmm(a, b), 50)
        res["gemm_xla"].append({"precision": p, "b": batch, "m": m, "n": n, "k": k, "s": s})
    save()
    for kind in ("lstm", "gru"):
        layers = sorted({(r["hidden"], r["batch"], r["steps"]) for r in db[kind]})
        for p in ("fp32", "tf32", "fp16_mixed"):
            precision(p)
            for hidden, batch, steps in layers:
                if time.monotonic() > deadline - 3:
                    break
                row: dict[str, Any] = {"kind": kind, "precision": p, "hidden": hidden, "batch": batch, "steps": steps}
                cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
                mod = cls(hidden, hidden, 1).to(dev, dtypes[p])
                x = torch.randn(steps, batch, hidden, device=dev, dtype=dtypes[p], requires_grad=True)

                def forward(mod: Any = mod, x: Any = x) -> None:
                    with torch.no_grad():
                        mod(x)

                def train(mod: Any = mod, x: Any = x) -> None:
                    y, _ = mod(x)
                    y.backward(torch.ones_like(y))

                try:
                    row.update(fwd_inference_s=timed(forward, 10), fwd_bwd_s=timed(train, 10))
                except RuntimeError as exc:  # a layer cuDNN refuses: say so and go on
                    row["error"] = str(exc)[:200]
                res["rnn_deepbench"].append(row)
            save()
    save()
    print({k: len(v) for k, v in res.items() if isinstance(v, list)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
