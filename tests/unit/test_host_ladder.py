"""The host-cost ladder (benchmarks/gpu_suite.py --ladder, benchmarks/host_ladder.py): blocks stacked 1, 2, 4 and
8 deep so a lease measures what its host pays per linear, convolutional, batch-norm and pooling layer, and the
reader sets each block's measured seconds against the model's."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from benchmarks import gpu_suite, host_ladder
from benchmarks.accuracy_suite_recorded import cases
from benchmarks.suite_networks import LADDER_DEPTHS, ladder_networks
from core.spec.workload import parse_workload
from tests.suite_lines import suite_lines, write_lines


def test_the_ladder_stacks_each_block_one_to_eight_deep() -> None:
    todo = gpu_suite.ladder_cases(quick=False)
    assert len(todo) == 32 and {c["precision"] for c in todo} == {"fp32", "bf16_mixed"}
    assert {c["family"] for c in todo} == {"ladder linear", "ladder conv", "ladder conv+bn", "ladder conv+bn+pool"}
    for name, (model, family) in ladder_networks().items():
        depth = int(host_ladder.DEPTH.match(name)["depth"])
        assert depth in LADDER_DEPTHS
        kinds = [layer["type"] for layer in model["layers"]]
        main = "linear" if family == "ladder linear" else "conv2d"
        assert kinds.count(main) == depth + (1 if main == "linear" else 0)  # and the classifier
        assert kinds.count("batchnorm2d") == (depth if "bn" in family else 0)
        assert kinds.count("maxpool2d") == (depth if "pool" in family else 0)
    for c in todo:  # every case a workload TrainRig sizes, the pooling keeping the image's size
        training = {"batch_size": c["batch"], "epochs": 1, "precision": c["precision"]}
        parse_workload({"model": c["model"], "data": {"samples": 80}, "training": training})


def _lines(tmp_path: Path, extra_per_conv_block_s: float = 0.0, probe_s: float | None = None) -> Path:
    """Ladder lines on the recorded H100 whose measured host seconds are the model's own (at the reference
    host, or with ``probe_s`` on every line at that probe's speed), plus ``extra_per_conv_block_s`` a block for
    the convolution-only ladder."""
    probe = {"host_probe_s": probe_s} if probe_s else {}
    lines = suite_lines(gpu_suite.ladder_cases(quick=False), samples=80, **probe)
    path = write_lines(tmp_path / "ladder.jsonl", lines)
    for m, r in zip(lines, cases(path, calibrated=probe_s is not None), strict=True):
        depth = int(host_ladder.DEPTH.match(m["name"])["depth"])
        extra = extra_per_conv_block_s * depth if m["family"] == "ladder conv" else 0.0
        m["host_issue_s"] = m["step_time_s"] = r["predicted_host_s"] + extra
    return write_lines(path, lines)


def test_a_host_that_pays_what_the_model_prices_reads_one_for_every_block(tmp_path: Path) -> None:
    rows = host_ladder.ladder_rows(_lines(tmp_path))
    assert len(rows) == 8  # four blocks in two precisions
    assert all(r["ratio"] == pytest.approx(1.0, abs=1e-6) and r["depths"] == [1, 2, 4, 8] for r in rows)
    assert not rows[0]["calibrated"]  # no probe on the lines: the reference host's speed
    # a convolution costs the host more than a linear layer: cuDNN's calls (forward, two gradients)
    per = {(r["block"], r["precision"]): r["model_per_block_s"] for r in rows}
    assert per[("conv", "fp32")] > per[("linear", "fp32")] > 0


def test_a_host_that_pays_more_for_a_convolution_shows_it_on_that_block_alone(tmp_path: Path) -> None:
    rows = {(r["block"], r["precision"]): r for r in host_ladder.ladder_rows(_lines(tmp_path, 100e-6))}
    conv = rows[("conv", "fp32")]
    assert conv["measured_per_block_s"] == pytest.approx(conv["model_per_block_s"] + 100e-6)
    assert conv["ratio"] > 1.2
    assert rows[("linear", "fp32")]["ratio"] == pytest.approx(1.0, abs=1e-6)
    assert rows[("conv+bn", "bf16_mixed")]["ratio"] == pytest.approx(1.0, abs=1e-6)


def test_a_probed_lease_is_read_at_its_hosts_speed(tmp_path: Path) -> None:
    # gpu_suite --probe-every 1 puts the host probe on every line: the model's seconds at that host's speed
    at_reference = {(r["block"], r["precision"]): r for r in host_ladder.ladder_rows(_lines(tmp_path))}
    slower = tmp_path / "slower"
    slower.mkdir()
    rows = host_ladder.ladder_rows(_lines(slower, probe_s=2 * 1.69e-3))  # a host half the reference's speed
    assert all(r["calibrated"] and r["ratio"] == pytest.approx(1.0, abs=1e-6) for r in rows)
    for r in rows:  # every block costs that host about twice the reference's
        assert r["model_per_block_s"] / at_reference[(r["block"], r["precision"])]["model_per_block_s"] > 1.6


def test_the_reader_says_what_is_wrong_with_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert host_ladder.main([str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl" in capsys.readouterr().err
    suite = Path(__file__).resolve().parents[1] / "fixtures" / "gpu" / "h100-isolated-2026-11-27.jsonl"
    assert host_ladder.main([str(suite)]) == 2
    assert "no ladder lines" in capsys.readouterr().err
    cpu = tmp_path / "cpu.jsonl"
    cpu.write_text(_lines(tmp_path).read_text().replace("NVIDIA H100 80GB HBM3", "cpu"))
    assert host_ladder.main([str(cpu)]) == 2
    assert "measured on cpu; the ladder prices a GPU's host" in capsys.readouterr().err
    mixed = tmp_path / "mixed.jsonl"
    text = _lines(tmp_path).read_text().splitlines()
    mixed.write_text("\n".join([text[0].replace('"host_issue_s"', '"issued_elsewhere"'), *text[1:]]) + "\n")
    assert host_ladder.main([str(mixed)]) == 2
    assert "some lines carry the host's issue time and some do not" in capsys.readouterr().err
    assert host_ladder.main([str(_lines(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "| conv+bn+pool | fp32 | 1, 2, 4, 8 |" in out and "at the reference host's speed" in out


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the suite trains with torch==2.13.0")
def test_the_ladder_runs_on_the_cpu(tmp_path: Path) -> None:
    out = tmp_path / "ladder.jsonl"
    assert gpu_suite.main(["--ladder", "--device", "cpu", "--quick", "--out", str(out)]) == 0
    lines = [json.loads(t) for t in out.read_text().splitlines()]
    assert [m["name"] for m in lines][:2] == ["ladder-linear-x1", "ladder-linear-x2"] and len(lines) == 8
    # each line the network it names: a second block, a second block's weights
    params = {m["name"]: m["parameters"] for m in lines}
    assert params["ladder-conv+bn-x2"] - params["ladder-conv+bn-x1"] == 16 * 16 * 9 + 16 + 2 * 16
    assert all(0 < m["host_issue_s"] <= m["step_time_s"] for m in lines)
