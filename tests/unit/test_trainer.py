"""The trainer worker: CSV validation (row and reason), what the app sends it, and a real short
CPU run of the seed MLP that stores its samples and metrics."""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path

import pytest

from core.errors import TrainRigError
from core.paths import resource_path
from core.spec.workload import parse_workload
from core.storage.store import Store
from telemetry.sources import HostSource, ProcessTreeSource
from telemetry.training import trainer_spec, training_run
from tests.conftest import TINY_CNN

spec = importlib.util.spec_from_file_location("train_worker", resource_path("workers/train.py"))
assert spec is not None and spec.loader is not None
train_worker = importlib.util.module_from_spec(spec)
spec.loader.exec_module(train_worker)


def write(tmp_path: Path, text: str) -> str:
    p = tmp_path / "data.csv"
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_a_good_csv_gives_features_and_named_labels_as_classes(tmp_path: Path) -> None:
    path = write(tmp_path, "a,b,label\n1,2,cat\n3,4.5,dog\n\n5,6,cat\n")
    xs, ys, names = train_worker.read_csv(path, features=2, classes=3)
    assert xs == [[1.0, 2.0], [3.0, 4.5], [5.0, 6.0]]
    assert ys == [0, 1, 0] and names == ["cat", "dog"]


@pytest.mark.parametrize(
    ("text", "features", "reason"),
    [
        ("a,b,label\n1,2,0\n3,x,1\n", 2, "row 3, column 'b': 'x' is not a number"),
        ("a,b,label\n1,2,0\n3,4\n", 2, "row 3: 2 fields, the header has 3"),
        ("a,b,label\n1,2,0\n3,nan,1\n", 2, "row 3, column 'b': 'nan' is not finite"),
        ("a,b,label\n1,2,0\n3,4,\n", 2, "row 3: the label is empty"),
        ("a,b,label\n1,2,0\n3,4,12\n", 2, "label 12 is outside 0…9"),
        ("a,b,c,label\n1,2,3,0\n", 2, "has 3 feature columns besides the label 'label'; the model's input needs 2"),
        ("", 2, "is empty"),
        ("a,b,label\n1,2,0\n", 2, "has 1 data rows; training needs at least 2"),
    ],
)
def test_a_bad_csv_is_refused_with_the_row_and_the_reason(
    tmp_path: Path, text: str, features: int, reason: str
) -> None:
    with pytest.raises(train_worker.WorkerError) as err:
        train_worker.read_csv(write(tmp_path, text), features=features, classes=10)
    assert reason in str(err.value)


def test_macro_f1_weights_every_class_the_same() -> None:
    # class 0 perfect (F1 1), class 1 never found (F1 0): macro F1 0.5 even though accuracy is 0.8
    assert train_worker.macro_f1([0, 0, 0, 0, 0], [0, 0, 0, 0, 1], 2) == pytest.approx((1 / (1 + 1 / 8) + 0) / 2)


def test_the_trainer_is_sent_the_resolved_layers_and_refuses_what_it_cannot_train(seed_doc) -> None:
    s = trainer_spec(parse_workload(seed_doc), epochs=2, samples=1000)
    assert s["model"]["input_shape"] == [75] and len(s["model"]["layers"]) == 7
    assert (s["classes"], s["batch_size"], s["epochs"], s["samples"], s["optimizer"]) == (10, 512, 2, 1000, "adam")
    preset = trainer_spec(parse_workload({"name": "p", "model": {"preset": "seed-mlp"}}))
    assert preset["model"]["layers"][0] == {"type": "linear", "out_features": 512}
    # the run uses cuDNN's TF32 as the sizing assumed it: off (IEEE fp32) unless the workload says on
    assert s["cudnn_tf32"] is False
    seed_doc["training"]["cudnn_tf32"] = True
    assert trainer_spec(parse_workload(seed_doc))["cudnn_tf32"] is True
    # and cuDNN's algorithm search as the sizing priced it: PyTorch's default (off) unless told
    assert s["cudnn_benchmark"] is False
    seed_doc["training"]["cudnn_benchmark"] = True
    assert trainer_spec(parse_workload(seed_doc))["cudnn_benchmark"] is True
    with pytest.raises(TrainRigError, match="does not support the layer type"):
        trainer_spec(parse_workload({"name": "gpt", "model": {"preset": "gpt2-small"}}))


def test_the_worker_sets_cudnn_and_tf32_as_the_workload_was_sized() -> None:
    flags = types.SimpleNamespace(
        backends=types.SimpleNamespace(
            cuda=types.SimpleNamespace(matmul=types.SimpleNamespace()), cudnn=types.SimpleNamespace()
        )
    )
    cudnn, matmul = flags.backends.cudnn, flags.backends.cuda.matmul
    train_worker.set_cudnn(flags, "fp32", {"cudnn_benchmark": True})
    assert (cudnn.benchmark, cudnn.allow_tf32, matmul.allow_tf32) == (True, False, False)
    train_worker.set_cudnn(flags, "fp32", {"cudnn_tf32": True})
    assert (cudnn.benchmark, cudnn.allow_tf32, matmul.allow_tf32) == (False, True, False)
    train_worker.set_cudnn(flags, "tf32", {})
    assert (cudnn.benchmark, cudnn.allow_tf32, matmul.allow_tf32) == (False, True, True)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the trainer needs torch==2.13.0")
def test_a_real_two_epoch_seed_mlp_run_on_the_cpu_stores_samples_metrics_and_beats_chance(
    tmp_path: Path, seed_doc
) -> None:
    seed_doc["training"]["batch_size"] = 64
    workload = parse_workload(seed_doc)
    store = Store.open(tmp_path / "t.db")
    run = training_run(
        sys.executable,
        trainer_spec(workload, epochs=2, samples=1500),
        store=store,
        name="seed MLP",
        prediction={"step_s": 0.002, "peak_memory_bytes": 9_000_000},
        sources=lambda pid: [HostSource(), ProcessTreeSource(pid)],
    )
    run.start()
    assert run.wait(240), "the run did not finish in 4 minutes"
    assert run.status == "finished", run.reason
    m = run.metrics
    assert m is not None and m["iterations"] == 2 * 24 and m["epochs"] == 2
    assert m["accuracy"] > m["chance_accuracy"] + 0.1  # chance = always the largest class, 34 %
    assert 0 < m["macro_f1"] <= 1
    assert 0 < m["median_step_s"] < 2
    assert m["peak_memory_bytes"] > m["rss_before_bytes"] > 50 * 2**20
    stored = store.run(run.run_id)
    assert stored is not None and stored["status"] == "finished" and stored["kind"] == "trained"
    assert stored["metrics"]["accuracy"] == m["accuracy"]
    assert stored["measured"]["median_step_s"] == m["median_step_s"]
    assert stored["measured"]["step_error"] == pytest.approx(0.002 / m["median_step_s"] - 1)
    assert stored["prediction"]["peak_memory_bytes"] == 9_000_000
    losses = [p["loss"] for p in stored["progress"]]
    assert losses[-1] < losses[0]  # it learnt
    columns, samples = store.run_samples(run.run_id)
    assert len(samples) >= 5 and "proc_cpu_percent" in columns
    cpu = [row[columns.index("proc_cpu_percent")] for _, row in samples]
    assert max(c for c in cpu if c is not None) > 20  # the trainer was seen working


def test_peak_memory_is_the_workers_own_not_its_large_parents() -> None:
    import subprocess
    import textwrap

    worker = resource_path("workers/train.py")
    parent = textwrap.dedent(
        f"""
        import subprocess, sys
        ballast = bytearray(400 * 2**20)  # a parent as large as a test run or a busy app
        child = "import runpy; m = runpy.run_path({str(worker)!r}); print(m['peak_rss_bytes']())"
        print(subprocess.run([sys.executable, "-c", child], capture_output=True, text=True).stdout)
        """
    )
    peak = int(subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True).stdout)
    assert 1 * 2**20 < peak < 200 * 2**20  # getrusage's ru_maxrss would say > 400 MiB here


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the trainer needs torch==2.13.0")
def test_the_trainer_uses_the_workloads_optimizer_and_learning_rate_as_the_sizing_counts_them() -> None:
    import torch

    spec = importlib.util.spec_from_file_location("train_worker", resource_path("workers/train.py"))
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    params = [torch.nn.Parameter(torch.zeros(3))]
    plain = worker.make_optimizer(torch, "sgd", params)  # the sizing counts no state for plain SGD
    assert plain.defaults["momentum"] == 0 and plain.defaults["lr"] == 0.01
    momentum = worker.make_optimizer(torch, "sgd_momentum", params, 0.05)
    assert momentum.defaults["momentum"] == 0.9 and momentum.defaults["lr"] == 0.05
    assert worker.make_optimizer(torch, "adam", params, 1e-4).defaults["lr"] == 1e-4  # the seed MLP's rate
    doc = parse_workload({"model": {"preset": "seed-mlp"}})
    assert trainer_spec(doc)["learning_rate"] == 1e-4 and trainer_spec(doc)["optimizer"] == "adam"


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the trainer needs torch==2.13.0")
def test_a_channels_last_workload_trains_in_channels_last() -> None:
    """A workload sized in channels_last is run so (ResNet-50 fp16 on an H100: 94 ms NCHW, 54 ms NHWC)."""
    import subprocess

    doc = {**TINY_CNN, "training": {**TINY_CNN["training"], "memory_format": "channels_last"}}
    spec = trainer_spec(parse_workload(doc), epochs=1, samples=64)
    assert spec["memory_format"] == "channels_last"
    worker = Path(__file__).resolve().parents[2] / "resources/workers/train.py"
    done = subprocess.run(
        [sys.executable, str(worker)], input=json.dumps(spec), capture_output=True, text=True, timeout=120
    )
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    started = next(e for e in events if e["event"] == "started")
    assert started["memory_format"] == "channels_last", done.stderr
    assert events[-1]["event"] == "finished", events[-1]
