"""The recurrent-algorithm grid (benchmarks/gpu_suite.py --recurrent, benchmarks/recurrent_grid.py): one-layer
LSTMs and GRUs either side of PyTorch's choices of cuDNN's algorithm, so a lease measures each algorithm the
model prices — the small-hidden kernels never yet — and the reader sets each against the model's step."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from benchmarks import gpu_suite, recurrent_grid
from benchmarks.accuracy_suite_recorded import cases
from core.spec.workload import parse_workload
from tests.suite_lines import H100, suite_lines, write_lines


def _lines(tmp_path: Path, device: str = H100, scale: float = 1.0) -> Path:
    """The grid's lines on a lent H100 whose measured steps are the model's own × ``scale``."""
    lines = suite_lines(gpu_suite.recurrent_cases(quick=False), device)
    path = write_lines(tmp_path / "rnn.jsonl", lines)
    if device == H100:
        for m, r in zip(lines, cases(path), strict=True):
            m["step_time_s"] = r["predicted_s"] * scale
        write_lines(path, lines)
    return path


def test_the_grid_measures_every_algorithm_pytorch_picks_on_an_h100(tmp_path: Path) -> None:
    todo = gpu_suite.recurrent_cases(quick=False)
    assert len(todo) == 99 and {c["batch"] for c in todo} == {20, 64, 256}
    for c in todo:  # every case a workload TrainRig sizes
        training = {"batch_size": c["batch"], "epochs": 1, "precision": c["precision"]}
        parse_workload({"model": c["model"], "data": {"samples": 1024}, "training": training})
    rows = recurrent_grid.grid_rows(_lines(tmp_path))
    groups = Counter(r["algorithms"] for r in rows)
    # hidden 64 and 128 both ways small-hidden, 192 forward only; 256 and 512 LSTMs persistent in half
    # precision at batch 64; the rest (GRUs, batch 20 and 256, fp32, the two-layer LSTM) the standard chain
    assert groups == {"small_h/small_h": 36, "small_h/standard": 18, "persist/persist": 4, "standard/standard": 41}
    assert all(r["error"] == pytest.approx(0.0, abs=1e-9) for r in rows)


def test_the_reader_groups_the_errors_by_algorithm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert recurrent_grid.main([str(_lines(tmp_path, scale=1 / 1.25))]) == 0
    out = capsys.readouterr().out
    assert "| persist/persist | 4 | 4 (100%) | 25% | +25% |" in out  # measured 0.8 × the model: read 25 % slow
    assert "| rnn-lstm-256 | fp16_mixed | 64 | persist/persist |" in out


def test_the_reader_refuses_what_is_not_a_gpus_grid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert recurrent_grid.main([str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert recurrent_grid.main([str(_lines(tmp_path, device="cpu"))]) == 2
    assert "measured on cpu" in capsys.readouterr().err
    suite = Path(__file__).resolve().parents[1] / "fixtures/gpu/h100-suite-2026-11-27.jsonl"
    assert recurrent_grid.main([str(suite)]) == 2
    assert "no line of the recurrent grid" in capsys.readouterr().err


def test_the_grid_refuses_the_random_suites_options_and_the_ladder(capsys: pytest.CaptureFixture[str]) -> None:
    assert gpu_suite.main(["--recurrent", "--random", "3", "--list"]) == 2
    assert "--recurrent measures its own networks" in capsys.readouterr().err
    assert gpu_suite.main(["--recurrent", "--ladder", "--list"]) == 2
    assert "one at a time" in capsys.readouterr().err
    assert gpu_suite.main(["--recurrent", "--family", "recurrent gru", "--list"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "45 cases, 5 networks"
