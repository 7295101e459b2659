"""Bad or hostile input is refused by its key path, quickly, and nothing crashes (docs/limits.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.output.report_csv import neutralise

ROOT = Path(__file__).resolve().parents[2]
MLP = [{"type": "linear", "out_features": 8}, {"type": "relu"}]


def nested_repeat(depth: int) -> dict:
    block: dict = {"type": "repeat", "times": 1, "layers": MLP}
    for _ in range(depth - 1):
        block = {"type": "repeat", "times": 1, "layers": [block]}
    return block


def doc_with_layers(layers: list) -> str:
    return json.dumps({"model": {"input_shape": [8], "layers": layers}})


CASES = [
    # (what, file text, words in the one-line message)
    ("repeat blocks 250 deep", doc_with_layers([nested_repeat(250)]), "nested deeper than"),
    ("repeat blocks 17 deep", doc_with_layers([nested_repeat(17)]), "nested deeper than 16 levels"),
    ("JSON 100,000 deep", '{"model": ' + "[" * 100_000 + "]" * 100_000 + "}", "is nested deeper than 64 levels"),
    (
        "10,000 × 10,000 repeats",
        doc_with_layers(
            [{"type": "repeat", "times": 10_000, "layers": [{"type": "repeat", "times": 10_000, "layers": MLP}]}]
        ),
        "applies more than 100,000 layers (repeats counted)",
    ),
    (
        "a key given twice",
        '{"model": {"preset": "seed-mlp"}, "training": {"batch_size": 64, "batch_size": 128}}',
        "training.batch_size: is given twice; keep one",
    ),
    (
        "a lone surrogate in the name",
        '{"name": "bad \\ud800 name", "model": {"preset": "seed-mlp"}}',
        "name: contains an invalid character (a lone UTF-16 surrogate",
    ),
]


@pytest.mark.parametrize(("what", "text", "says"), CASES, ids=[c[0] for c in CASES])
def test_hostile_workloads_are_refused_in_one_line_and_fast(cli, tmp_path: Path, what: str, text: str, says: str):
    path = tmp_path / "w.json"
    path.write_text(text, encoding="utf-8")
    start = time.perf_counter()
    code, out, err = cli("size", str(path), "-c", "4090", "--no-save")
    assert time.perf_counter() - start < 10  # was: RecursionError, or 50 s and 4 GB of memory
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert says in err, err


def test_a_file_over_16_mib_is_refused_before_it_is_read(cli, tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    with path.open("w") as f:
        f.write('{"model": {"input_shape": [8], "layers": [')
        f.write(",".join(['{"type": "relu"}'] * 1_100_000))
        f.write("]}}")
    assert path.stat().st_size == 18_700_044  # 17.8 MiB
    code, _, err = cli("size", str(path), "--no-save")
    assert code == 2 and err.strip() == "trainrig size: big.json is 18 MiB; TrainRig reads files up to 16 MiB"


def test_a_terminal_that_cannot_show_unicode_gets_question_marks_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"name": "Résumé ✓ 模型", "model": {"preset": "seed-mlp"}}), encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "LANG": "C", "LC_ALL": "C", "TRAINRIG_DB": str(tmp_path / "db")}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "size", str(path), "-c", "4090", "--no-save"],
        capture_output=True,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert b"Workload: R?sum? ? ??" in proc.stdout


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"name": "Mine", "fp32_tflops": 10, "memory_gb": 8, "colour": "red"}, "devices[0].colour: unknown key"),
        ({"name": "this-machine", "fp32_tflops": 10, "memory_gb": 8}, "names the machine TrainRig detects"),
        ({"name": "two\nlines", "fp32_tflops": 10, "memory_gb": 8}, "contains a line break or control character"),
    ],
)
def test_catalogue_add_refuses_what_could_never_be_selected(cli, tmp_path: Path, entry: dict, says: str) -> None:
    path = tmp_path / "devices.json"
    path.write_text(json.dumps([entry]))
    code, out, err = cli("catalogue", "--add", str(path))
    assert code == 2 and "saved" not in out and says in err, err
    code, out, _ = cli("catalogue", "--json")
    assert entry["name"] not in [e["name"] for e in json.loads(out) if e["user"]]


@pytest.mark.parametrize("text", ["＝HYPERLINK(1)", "＋1+cmd", "－2", "＠SUM(A1)", " =1+1"])
def test_look_alike_formula_prefixes_are_neutralised_too(text: str) -> None:
    assert neutralise(text) == "'" + text


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="a POSIX device file")
def test_a_device_or_a_pipe_is_refused_before_it_is_read(cli, tmp_path) -> None:
    """/dev/zero reports a size of 0 and never ends: reading it filled the memory at 2 GB/s; a FIFO waited
    for a writer forever. A /proc file (size 0, a few bytes) is read as far as the limit, no further."""
    fifo = tmp_path / "w.json"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo)):
        code, out, err = cli("size", path, "--no-save")
        assert code == 2 and out == ""
        assert (
            err.strip() == f"trainrig size: workload file {path!r} is not a regular file (a device, a pipe or a socket)"
        )
    code, _out, err = cli("size", "/proc/self/status", "--no-save")
    assert code == 2 and "status is not valid JSON" in err
    code, _out, err = cli("measure", "examples/seed-mlp.json", "--trace", "/dev/zero", "--measured-on", "H100 SXM")
    assert code == 2 and "the profile /dev/zero is not a regular file" in err
