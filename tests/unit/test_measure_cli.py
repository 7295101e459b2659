"""`python main.py measure`: a recorded trace scaled to candidates, and the messages without a GPU."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from telemetry.pytorch_env import TorchEnvironment
from tests.conftest import TINY_CNN

ROOT = Path(__file__).resolve().parents[2]
RESNET_TRACE = ROOT / "tests/fixtures/profiles/h100-sxm-resnet50-fp16.trace.json"
RESNET = {
    "name": "ResNet-50 fp16",
    "model": {"preset": "resnet-50"},
    "data": {"samples": 1281167, "outputs": 1000},
    "training": {"batch_size": 256, "epochs": 1, "optimizer": "sgd_momentum", "precision": "fp16_mixed"},
}


def test_a_trace_is_scaled_to_each_candidate_as_json(cli, write_json) -> None:
    code, out, err = cli(
        "measure", str(write_json(RESNET)), "--trace", str(RESNET_TRACE), "-c", "H100 PCIe", "-c", "A100 80GB",
        "-c", "TPU v4", "--json",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["measured"]["catalogue_device"] == "NVIDIA H100 SXM"
    assert doc["measured"]["step_s"] == pytest.approx(0.0939, rel=0.01)
    assert "not measured" in doc["measured"]["about"].lower()
    preds = {p["device"]: p for p in doc["predictions"]}
    assert set(preds) == {"NVIDIA H100 PCIe", "NVIDIA A100 80GB SXM"}
    # both slower than the SXM: lower tensor peak and bandwidth
    assert doc["this_gpu"]["step_s"] < preds["NVIDIA H100 PCIe"]["step_s"] < preds["NVIDIA A100 80GB SXM"]["step_s"]
    conv = next(c for c in preds["NVIDIA H100 PCIe"]["by_class"] if c["class"] == "conv")
    assert conv["predicted_s"] / conv["measured_s"] == pytest.approx(989.4 / 756, rel=0.02)
    assert doc["cannot_scale"][0]["device"] == "Google TPU v4" and "TPU" in doc["cannot_scale"][0]["reason"]


def test_the_text_names_the_measured_step_each_candidate_and_the_refusals(cli, write_json) -> None:
    code, out, err = cli(
        "measure", str(write_json(RESNET)), "--trace", str(RESNET_TRACE), "-c", "H100 PCIe", "-c", "Xeon w9"
    )
    assert code == 0, err
    assert "Measured on NVIDIA H100 80GB HBM3" in out and "93.9 ms" in out
    assert "NVIDIA H100 SXM (measured here)" in out
    pcie = next(line for line in out.splitlines() if line.strip().startswith("NVIDIA H100 PCIe"))
    assert "ms" in pcie and "device" in pcie
    assert "Intel Xeon w9-3495X" in out and "cannot be scaled to: not a GPU" in out
    assert "host time" in out  # says the host stays as measured


def test_a_damaged_trace_is_refused_without_a_traceback(cli, write_json, tmp_path: Path) -> None:
    bad = tmp_path / "trace.json"
    bad.write_text(RESNET_TRACE.read_text(encoding="utf-8")[:5000], encoding="utf-8")  # cut off mid-file
    code, out, err = cli("measure", str(write_json(RESNET)), "--trace", str(bad))
    assert code == 2 and out == ""
    assert "not valid JSON" in err and "is the file complete?" in err and "Traceback" not in err


def test_without_a_cuda_gpu_it_says_so_and_what_to_do_instead(cli, write_json, monkeypatch) -> None:
    import cli.measure as command

    env = TorchEnvironment("python3", True, "PyTorch 2.13.0+cpu on Python 3.11, CPU-only build", cuda_available=False)
    monkeypatch.setattr(command, "find_torch_environment", lambda python=None, **_: env)
    code, out, err = cli("measure", str(write_json(TINY_CNN)))
    assert code == 2 and out == ""
    assert "no CUDA GPU here" in err and "--trace" in err and "--device cpu" in err


def test_without_pytorch_it_says_how_to_install_it(cli, write_json, monkeypatch) -> None:
    import cli.measure as command

    env = TorchEnvironment("python3", False, "PyTorch is not installed in python3: install PyTorch into that Python")
    monkeypatch.setattr(command, "find_torch_environment", lambda python=None, **_: env)
    code, _, err = cli("measure", str(write_json(TINY_CNN)))
    assert code == 2 and "PyTorch is not installed" in err


def test_a_summary_model_cannot_be_measured(cli, write_json, monkeypatch) -> None:
    import cli.measure as command

    env = TorchEnvironment("python3", True, "PyTorch with CUDA", cuda_available=True)
    monkeypatch.setattr(command, "find_torch_environment", lambda python=None, **_: env)
    doc = {
        **RESNET,
        "model": {
            "summary": {
                "parameters": 1000,
                "activation_bytes_per_sample": 4000,
                "forward_flops_per_sample": 2e6,
                "outputs": 1000,  # the workload's 1,000 classes (data.outputs is held to the model's outputs)
            },
            "input_shape": [10],
        },
    }
    code, _, err = cli("measure", str(write_json(doc)))
    assert code == 2 and "summary without layers cannot be run" in err


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="measuring needs torch==2.13.0")
def test_the_worker_measures_real_steps_on_the_cpu_end_to_end(cli, write_json, tmp_path: Path) -> None:
    saved = tmp_path / "profile.json"
    code, out, err = cli("measure", str(write_json(TINY_CNN)), "--device", "cpu", "--save-profile", str(saved))
    assert code == 0, err
    assert "(cpu)" in out and "CPU ops do not scale to GPUs" in out
    raw = json.loads(saved.read_text(encoding="utf-8"))
    assert raw["format"] == "trainrig-profile" and raw["device_type"] == "cpu" and raw["steps"] == 5
    names = {k["name"] for k in raw["kernels"]}
    assert "aten::mkldnn_convolution" in names or "aten::convolution" in names
    assert all(w > 0 for w in raw["step_wall_s"]) and len(raw["step_host_s"]) == 5
    # the step's own times come from steps run without the profiler, the profiled ones are kept apart
    assert len(raw["profiled_step_wall_s"]) == 5 and all(w > 0 for w in raw["profiled_step_host_s"])


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="measuring needs torch==2.13.0")
def test_a_channels_last_workload_is_measured_in_channels_last() -> None:
    """A workload that trains NHWC is measured NHWC (ResNet-50 fp16 on an H200: 86 ms NCHW, 47 ms NHWC)."""
    import sys

    import torch

    from core.spec.workload import parse_workload
    from telemetry.measure import measure_spec

    doc = {**TINY_CNN, "training": {**TINY_CNN["training"], "memory_format": "channels_last"}}
    spec = measure_spec(parse_workload(doc), "cpu", None)
    assert spec["memory_format"] == "channels_last"
    sys.path.insert(0, str(ROOT / "resources/workers"))
    try:
        worker = importlib.import_module("measure")
        module = worker.build(torch, spec["model"])
        worker.make_step(torch, module, spec, torch.device("cpu"))[0]()
    finally:
        sys.path.remove(str(ROOT / "resources/workers"))
        sys.modules.pop("measure", None)
    conv = next(m for m in module.modules() if isinstance(m, torch.nn.Conv2d))
    assert conv.weight.is_contiguous(memory_format=torch.channels_last)
    assert not conv.weight.is_contiguous()


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="measuring needs torch==2.13.0")
def test_cancel_stops_the_worker_and_keeps_nothing() -> None:
    import sys
    import threading

    from core.spec.workload import parse_workload
    from telemetry.measure import MeasureCancelled, MeasureJob, measure_spec

    spec = {**measure_spec(parse_workload(TINY_CNN), "cpu"), "warmup": 1, "steps": 100_000}
    # measured with cuDNN's TF32 and algorithm search as sized (off unless the workload says on)
    assert spec["cudnn_tf32"] is False and spec["cudnn_benchmark"] is False
    seen: list[int] = []
    job = MeasureJob(sys.executable, spec, timeout_s=120)

    def on_progress(done: int, total: int) -> None:
        seen.append(done)
        if done == 2:
            threading.Thread(target=job.cancel).start()

    job.on_progress = on_progress
    with pytest.raises(MeasureCancelled, match="cancelled"):
        job.run()
    assert 2 <= max(seen) < 100_000
    assert job._proc is not None and job._proc.poll() is not None  # the worker is gone
