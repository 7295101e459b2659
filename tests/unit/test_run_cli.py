"""`run` and `monitor` from the command line: real runs, stored, with prediction vs measurement."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

from core.storage.store import Store

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups and signals as on POSIX")


def test_run_trains_stores_and_prints_prediction_beside_measurement(cli, write_json, seed_doc, _isolated_db) -> None:
    seed_doc["training"]["batch_size"] = 64
    code, out, err = cli("run", str(write_json(seed_doc)), "--epochs", "2", "--samples", "640")
    assert code == 0, out + err
    assert "Run 1: finished" in out
    assert "step time        predicted" in out and "measured" in out and "prediction " in out
    assert "held-out accuracy" in out
    assert "epoch 2/2 [##############################] 100% it 20/20" in err  # one line per epoch off a terminal
    store = Store.open(_isolated_db)
    run = store.run(1)
    assert run["kind"] == "trained" and run["status"] == "finished" and run["device"] == "cpu"
    assert run["prediction"]["step_s"] > 0 and run["prediction"]["device"].startswith("this machine")
    assert run["measured"]["median_step_s"] > 0
    assert run["workload"]["trainer"]["epochs"] == 2
    columns, samples = store.run_samples(1)
    assert len(samples) >= 10 and "cpu_percent" in columns


def test_run_on_a_bad_csv_fails_with_the_row_and_the_reason(cli, write_json, seed_doc, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(",".join(f"f{i}" for i in range(75)) + ",label\n" + ",".join(["1"] * 75) + ",3\n" + "oops\n")
    code, out, _err = cli("run", str(write_json(seed_doc)), "--epochs", "1", "--csv", str(bad))
    assert code == 1
    assert "failed — the CSV" in out and "row 3: 1 fields, the header has 76" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rate", "50"], "--rate must be 1–20"),
        (["--device", "tpu"], "--device must be cpu or cuda:N"),
        (["--csv", "/nonexistent.csv"], "does not exist"),
        (["--csv", "/tmp"], "the CSV /tmp is a folder"),  # said "does not exist"
        (["--epochs", "99999999999"], "a run needs 1 to 10,000,000 epochs, not 99,999,999,999"),
        (["--samples", "1"], "a run needs 2 to 10,000,000,000,000 training samples, not 1"),
        # the Python asked for, not another one found: it trained with the first Python on the PATH
        (["--python", "/nonexistent/python3"], "/nonexistent/python3 does not exist or is not executable"),
    ],
)
def test_run_refuses_bad_options_with_exit_code_2(cli, write_json, seed_doc, args, message) -> None:
    code, _out, err = cli("run", str(write_json(seed_doc)), *args)
    assert code == 2 and message in err


def test_run_refuses_a_model_the_trainer_cannot_build(cli, write_json) -> None:
    code, _out, err = cli("run", str(write_json({"name": "gpt", "model": {"preset": "gpt2-small"}})))
    assert code == 2 and "does not support the layer type" in err


def test_monitor_records_any_command_with_its_exit_code(cli, _isolated_db) -> None:
    code, _out, err = cli(
        "monitor", "--rate", "20", "--", sys.executable, "-c", "import sys, time; time.sleep(1); sys.exit(4)"
    )
    assert code == 4
    assert "failed, exit code 4 (run 1)" in err and "the command exited with code 4" in err
    store = Store.open(_isolated_db)
    run = store.run(1)
    assert run["kind"] == "monitored" and run["exit_code"] == 4 and run["command"][0] == sys.executable
    assert run["sampling"]["rate_hz"] == 20
    assert len(store.run_samples(1)[1]) >= 15


def test_monitor_without_a_command_says_how(cli) -> None:
    code, _out, err = cli("monitor")
    assert code == 2 and "give the command to monitor after --" in err


TORCH_MLP = """
import torch.nn as nn

def make():
    return nn.Sequential(nn.Linear(75, 64), nn.ReLU(), nn.Linear(64, 10))
"""


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the trainer needs torch==2.13.0")
def test_run_trains_a_model_given_as_pytorch_code_only_when_trusted(cli, tmp_path: Path, _isolated_db) -> None:
    (tmp_path / "model.py").write_text(TORCH_MLP)
    doc = {
        "name": "torch MLP",
        "model": {"torch": "model.py:make", "input_shape": [75]},
        "data": {"samples": 2000, "outputs": 10},
        "training": {"batch_size": 64, "epochs": 1},
    }
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc))
    code, out, err = cli("run", str(path), "--samples", "600")
    assert code == 2 and "add --trust-code" in err and out == ""
    code, out, err = cli("run", str(path), "--samples", "600", "--trust-code")
    assert code == 0, err
    run = Store.open(_isolated_db).run(1)
    assert run["status"] == "finished" and run["metrics"]["accuracy"] > 0
    assert run["workload"]["trainer"]["model"]["torch"]["file"] == str((tmp_path / "model.py").resolve())


def test_a_hand_written_trace_never_makes_the_trainer_run_its_file(cli, tmp_path: Path) -> None:
    (tmp_path / "evil.py").write_text("from pathlib import Path\nPath(__file__).with_name('RAN').write_text('x')\n")
    doc = {
        "name": "summary",
        "model": {
            "input_shape": [75],
            "summary": {
                "parameters": 100,
                "activation_bytes_per_sample": 10,
                "forward_flops_per_sample": 200,
                "outputs": 10,
            },
            "trace": {"file": "evil.py:make", "device": "cpu", "batch": 8, "peak_bytes": 1000},
        },
        "data": {"samples": 100, "outputs": 10},
        "training": {"batch_size": 8, "epochs": 1},
    }
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc))
    code, _, err = cli("run", str(path), "--trust-code")
    assert code == 2 and "TrainRig trains it only when you agreed to run that code" in err
    assert not (tmp_path / "RAN").exists()


def test_two_processes_with_gloo_ddp_record_both_ranks(cli, write_json, seed_doc, _isolated_db) -> None:
    """torchrun starts two CPU processes with DistributedDataParallel (gloo): the run finishes and
    stores each rank's median step and its all-reduce of the gradients."""
    seed_doc["training"]["batch_size"] = 64
    code, out, err = cli("run", str(write_json(seed_doc)), "--epochs", "1", "--samples", "640", "--nproc-per-node", "2")
    assert code == 0, out + err
    assert "Run 1: finished" in out and "rank 0: median step" in out and "rank 1: median step" in out
    run = Store.open(_isolated_db).run(1)
    assert run["workload"]["launch"]["nproc_per_node"] == 2 and run["workload"]["trainer"]["batch_size"] == 64
    ranks = run["metrics"]["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1] and run["metrics"]["world_size"] == 2
    assert all(r["median_step_s"] > 0 and r["allreduce_s"] > 0 for r in ranks)
    assert run["prediction"] is None  # the sizing counts devices, not processes sharing one


def test_several_machines_need_a_meeting_point(cli, write_json, seed_doc) -> None:
    code, _out, err = cli("run", str(write_json(seed_doc)), "--nnodes", "2")
    assert code == 2 and "--rdzv-endpoint HOST:PORT" in err
    code, _out, err = cli("run", str(write_json(seed_doc)), "--rdzv-endpoint", "lab1:29500")  # was ignored
    assert code == 2 and "give --nnodes 2 or more with it" in err
