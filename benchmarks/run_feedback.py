"""How much closer a local run brings the next sizing of the same network on this machine.

For each network: a first run (the sizing's prediction against the measured step), then a second
run at half the batch, predicted with the first run's correction. Prints both errors of the second
prediction: without the correction (what the sizing said before any run) and with it.

    python3 benchmarks/run_feedback.py [--samples 8000]

Needs PyTorch; measure on an idle machine (docs/accuracy.md).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.storage.store import Store  # noqa: E402

SEED = json.loads((ROOT / "examples/seed-mlp.json").read_text())
NETWORKS = {
    "seed MLP": SEED,
    "LeNet-5": {
        "name": "LeNet-5",
        "model": {"preset": "lenet-5"},
        "data": {"samples": 60000, "outputs": 10},
        "training": {"batch_size": 128, "epochs": 1, "optimizer": "adam"},
    },
    "small MLP": {
        "name": "small MLP",
        "model": {
            "input_shape": [256],
            "layers": [
                {"type": "linear", "out_features": 1024},
                {"type": "relu"},
                {"type": "linear", "out_features": 1024},
                {"type": "relu"},
                {"type": "linear", "out_features": 10},
            ],
        },
        "data": {"samples": 20000, "outputs": 10},
        "training": {"batch_size": 256, "epochs": 1, "optimizer": "sgd_momentum"},
    },
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=8000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "runs.db"
        for doc in NETWORKS.values():
            batch = doc["training"]["batch_size"]
            for b in (batch, batch // 2):
                d = json.loads(json.dumps(doc))
                d["training"]["batch_size"] = b
                path = Path(tmp) / "w.json"
                path.write_text(json.dumps(d))
                cmd = [sys.executable, str(ROOT / "main.py"), "--db", str(db), "run", str(path), "--epochs", "1"]
                subprocess.run([*cmd, "--samples", str(args.samples)], check=True, capture_output=True, cwd=ROOT)
        store = Store.open(db, read_only=True)
        runs = list(reversed(store.recent_runs()))
        store.close()
    print(f"{'network':10} {'batch':>5} {'scale':>6} {'measured':>9} {'before':>8} {'after':>8}")
    errors: list[tuple[float, float]] = []
    for first, second in zip(runs[::2], runs[1::2], strict=True):
        p, m = second["prediction"], second["measured"]
        scale, step, measured = p.get("run_scale", 1.0), p["step_s"], m["median_step_s"]
        before, after = step / scale / measured - 1, step / measured - 1
        errors.append((abs(before), abs(after)))
        print(
            f"{second['name']:10} {p['batch_size']:5} {scale:6.2f} {measured * 1e3:7.2f}ms "
            f"{before:+8.1%} {after:+8.1%}   (first run at batch {first['prediction']['batch_size']})"
        )
    n = len(errors)
    print(
        f"mean |error| of the second prediction: {sum(b for b, _ in errors) / n:.1%} before, "
        f"{sum(a for _, a in errors) / n:.1%} after the first run's correction"
    )


if __name__ == "__main__":
    main()
