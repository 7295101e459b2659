"""A workload given as PyTorch code runs that code only when the user asked (SPEC 9: no user code
runs unasked), and only after the rest of the workload is valid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import WorkloadError
from telemetry.tracer import resolve_torch_models

# import-time side effect: the file exists only if the code ran
EVIL = (
    "from pathlib import Path\nPath(__file__).with_name('RAN').write_text('yes')\ndef make():\n    raise SystemExit\n"
)


def workload(tmp_path: Path, ref: str = "model.py:make", batch: object = 32) -> Path:
    (tmp_path / "model.py").write_text(EVIL)
    doc = {
        "model": {"torch": ref, "input_shape": [75]},
        "data": {"samples": 1000},
        "training": {"batch_size": batch, "epochs": 3},
    }
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("command", [["size", "--no-save"], ["report", "--csv", "out.csv"]])
def test_the_cli_refuses_to_run_model_code_it_was_not_asked_to_run(cli, tmp_path: Path, command: list[str]) -> None:
    path = workload(tmp_path)
    code, out, err = cli(command[0], str(path), *[a if a != "out.csv" else str(tmp_path / a) for a in command[1:]])
    assert code == 2 and out == ""
    assert "tracing runs the Python code in" in err and "add --trust-code" in err
    assert not (tmp_path / "RAN").exists() and not (tmp_path / "out.csv").exists()


def test_code_outside_the_workload_folder_needs_the_flag_even_when_the_user_says_yes(tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    (tmp_path / "model.py").write_text(EVIL)
    doc = {
        "model": {"torch": "../model.py:make", "input_shape": [75]},
        "data": {"samples": 1000},
        "training": {"batch_size": 32, "epochs": 3},
    }
    with pytest.raises(WorkloadError, match="outside the workload's folder; TrainRig runs such code only with"):
        resolve_torch_models(doc, inner, ask=lambda q: True)
    assert not (tmp_path / "RAN").exists()


def test_a_bad_batch_is_refused_by_its_key_before_any_code_runs(cli, tmp_path: Path) -> None:
    for batch in ("abc", -4, 10**21):
        path = workload(tmp_path, batch=batch)
        code, _, err = cli("size", str(path), "--no-save", "--trust-code")
        assert code == 2 and "training.batch_size" in err, err
        assert not (tmp_path / "RAN").exists()


def test_a_no_answer_refuses(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(EVIL)
    asked = []
    doc = {
        "model": {"torch": "model.py:make", "input_shape": [75]},
        "data": {"samples": 1000},
        "training": {"batch_size": 32, "epochs": 3},
    }
    with pytest.raises(WorkloadError, match="runs it only when asked"):
        resolve_torch_models(doc, tmp_path, ask=lambda q: asked.append(q) or False)
    assert asked == [f"Tracing the model runs the Python code in {tmp_path.resolve() / 'model.py'}. Run it?"]
    assert not (tmp_path / "RAN").exists()


def test_a_file_that_is_not_there_is_named_before_anything_is_asked(tmp_path: Path) -> None:
    """The user was asked to let TrainRig run a file that did not exist, then told to add --trust-code."""
    asked = []
    doc = {
        "model": {"torch": "modle.py:make", "input_shape": [75]},
        "data": {"samples": 1000},
        "training": {"batch_size": 32, "epochs": 3},
    }
    with pytest.raises(WorkloadError, match=f"model.torch: {tmp_path.resolve() / 'modle.py'} does not exist"):
        resolve_torch_models(doc, tmp_path, ask=lambda q: asked.append(q) or True)
    with pytest.raises(WorkloadError, match="does not exist"):
        resolve_torch_models(doc, tmp_path, trust_code=True)
    assert asked == []
