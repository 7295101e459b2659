"""The engine's step time against published large-model training throughputs
(resources/published/large_model_throughputs.json: torchtitan's Llama runs on H100 and A100,
Megatron-Bridge's Llama 3 8B on DGX-H100), as
tokens/s per GPU predicted against published. No GPU and no PyTorch needed; nothing here was fitted.

    python3 benchmarks/accuracy_large_models.py
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.estimate.sizing import CandidateResult, size_candidate  # noqa: E402
from core.hardware.catalogue import device_from_entry, find_device, load_catalogue  # noqa: E402
from core.network.presets import get_preset  # noqa: E402
from core.spec.workload import parse_workload  # noqa: E402

DATA = ROOT / "resources/published/large_model_throughputs.json"


def _model(spec: dict[str, Any], sequence: int) -> dict[str, Any]:
    """The network of a published row: the Llama preset at the row's sequence, resized when the
    model names other sizes (70B), with the source's rotary embeddings and RMSNorm implementation
    (the file's "implementation")."""
    model = copy.deepcopy(get_preset(spec["preset"], "preset")["model"])
    model["input_shape"] = [sequence]
    block = model["layers"][1]
    if "layers" in spec:
        model["layers"][0]["embedding_dim"] = spec["hidden"]
        block["times"] = spec["layers"]
        block["layers"][0].update(nhead=spec["heads"], kv_heads=spec["kv_heads"], dim_feedforward=spec["ffn"])
    if "vocab" in spec:  # Llama 2's 32,000 tokens: the embedding and the output layer
        model["layers"][0]["num_embeddings"] = spec["vocab"]
        model["layers"][-1]["out_features"] = spec["vocab"]
    if "rotary" in spec:
        block["layers"][0]["rotary"] = spec["rotary"]
    if "norm_implementation" in spec:
        block["layers"][0]["norm_implementation"] = spec["norm_implementation"]
        model["layers"][2]["implementation"] = spec["norm_implementation"]  # the final norm
    return model


def _device_entry(doc: dict[str, Any], name: str) -> dict[str, Any] | None:
    """A device the source ran that the catalogue does not list: the catalogue base with the
    source's memory, bandwidth and power limit, as a custom workload device."""
    if name not in doc["devices"]:
        return None
    d = doc["devices"][name]
    base = find_device(d["base"], load_catalogue()).extra
    keys = ("fp32_tflops", "tf32_tflops", "fp16_tflops", "fp8_tflops", "tdp_w", "interconnect_gbs", "sm_count")
    entry = {k: base[k] for k in keys if k in base}
    entry.update(
        name=name,
        memory_gb=d["memory_gb"],
        memory_bandwidth_gbs=d["memory_bandwidth_gbs"],
        power_limit_w=d["power_limit_w"],
        host_link=base.get("host_link"),
        architecture=base.get("architecture"),
    )
    return {k: v for k, v in entry.items() if v is not None}


def predict(row: dict[str, Any], doc: dict[str, Any] | None = None) -> tuple[float, CandidateResult]:
    """(tokens/s per GPU, the candidate) the engine predicts for one published row."""
    doc = doc or json.loads(DATA.read_text(encoding="utf-8"))
    gpus = row["gpus_per_node"] * row["nodes"]
    custom = _device_entry(doc, row["device"])
    workload = parse_workload(
        {
            "name": row["label"],
            "model": _model(doc["models"][row["model"]], row["sequence"]),
            "data": {"samples": 10**6, "outputs": row["sequence"], "dtype": "int64", "format": "raw"},
            "training": {
                # the global batch (micro-batches of local_batch accumulated when the source says so)
                "batch_size": row.get("global_batch", row["local_batch"] * gpus),
                "micro_batch_size": row["local_batch"],
                "epochs": 1,
                "optimizer": "adamw",
                "precision": "bf16_mixed",
                "checkpointing": row["checkpointing"],
                **({"checkpoint_every": row["checkpoint_every"]} if "checkpoint_every" in row else {}),
                "sharding": "fsdp",
                "precision_layout": "fsdp_mixed",
                "nodes": row["nodes"],
                "compile": row["compile"],
                "fp8": row["fp8"],
                # the SDPA kernel the source's runs took where it differs from PyTorch 2.11's pick
                **({"attention": row["attention"]} if "attention" in row else {}),
            },
            "hardware": {"gpu_count": row["gpus_per_node"], **({"custom": [custom]} if custom else {})},
        }
    )
    if custom:
        device = device_from_entry(workload.hardware.custom[0], "workload")
    else:
        device = find_device(row["device"], load_catalogue())
    c = size_candidate(workload, device, row["gpus_per_node"])
    return row.get("global_batch", row["local_batch"] * gpus) / gpus * row["sequence"] / c.step.step_s, c


def _batch(row: dict[str, Any]) -> str:
    """The local batch, and the global batch when micro-batches are accumulated to it."""
    if "global_batch" in row:
        return f"{row['local_batch']} (global {row['global_batch']})"
    return str(row["local_batch"])


def _ac(row: dict[str, Any]) -> str:
    """The row's checkpointing as the table names it."""
    every = row.get("checkpoint_every", 1)
    return f"{row['checkpointing']} AC" + (
        f" of every {every}nd block" if every == 2 else f" of every {every}th block" if every > 1 else ""
    )


def errors() -> list[tuple[dict[str, Any], float, float]]:
    """(row, predicted tokens/s per GPU, error) for every published row."""
    doc = json.loads(DATA.read_text(encoding="utf-8"))
    out = []
    for row in doc["rows"]:
        tps, _ = predict(row, doc)
        out.append((row, tps, tps / row["tokens_per_s_per_gpu"] - 1))
    return out


def main() -> None:
    print("| source | model | GPUs | setting | published tokens/s/GPU | predicted | error |")
    print("|---|---|---|---|---|---|---|")
    rows = errors()
    for row, tps, err in rows:
        gpus = f"{row['nodes'] * row['gpus_per_node']} × {row['device']}"
        print(
            f"| {row['source']} | {row['model']} | {gpus} | {row['label']} ({_ac(row)}), "
            f"batch {_batch(row)} × {row['sequence']} | {row['tokens_per_s_per_gpu']:,} | {tps:,.0f} "
            f"| {err:+.0%} |"
        )
    within = sum(1 for _r, _t, e in rows if abs(e) <= 0.15)
    print(f"\n{within} of {len(rows)} within 15 %; mean |error| {sum(abs(e) for *_x, e in rows) / len(rows):.0%}")


if __name__ == "__main__":
    main()
