"""Invalid workloads: a message that names the field, and exit code 2 from the CLI."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from core.errors import WorkloadError
from core.spec.workload import parse_workload

ISSUE_EXAMPLE = {
    "name": "seed MLP",
    "model": {
        "input_shape": [75],
        "layers": [
            {"type": "linear", "out_features": 512},
            {"type": "leaky_relu"},
            {"type": "conv2d", "out_channels": 32, "kernel_size": 3, "stride": 1, "padding": 1},
            {"type": "maxpool2d", "kernel_size": 2},
            {"type": "avgpool2d", "kernel_size": 2},
            {"type": "flatten"},
            {"type": "dropout", "p": 0.5},
            {"type": "batchnorm2d"},
        ],
    },
    "data": {"samples": 80909, "outputs": 10},
    "training": {"batch_size": 512, "epochs": 400, "optimizer": "adam", "precision": "fp32"},
}


def test_the_issue_example_is_read_and_its_conv_on_a_vector_is_named() -> None:
    # The example feeds a linear output (a vector) into conv2d; TrainRig must say exactly that.
    with pytest.raises(WorkloadError) as err:
        parse_workload(ISSUE_EXAMPLE)
    assert err.value.path == "model.layers[2]"
    assert "conv2d needs a 3-D input per sample, got shape [512]" in str(err.value)


def test_the_issue_example_layers_size_when_the_input_is_an_image() -> None:
    doc = copy.deepcopy(ISSUE_EXAMPLE)
    doc["model"]["input_shape"] = [3, 32, 32]
    head = doc["model"]["layers"][2:6]
    doc["model"]["layers"] = [*head, {"type": "dropout", "p": 0.5}, {"type": "linear", "out_features": 10}]
    w = parse_workload(doc)
    assert w.analysis.output_shape == (10,)
    # conv 3→32 k3 (896) + linear 32·8·8 → 10 (20,490)
    assert w.analysis.parameters == 896 + 2048 * 10 + 10


def mutate(path: list[Any], value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    doc = copy.deepcopy(base or ISSUE_EXAMPLE)
    doc["model"]["input_shape"] = [3, 32, 32]
    doc["model"]["layers"] = [
        {"type": "conv2d", "out_channels": 8, "kernel_size": 3},
        {"type": "relu"},
        {"type": "flatten"},
        {"type": "linear", "out_features": 10},
    ]
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


CASES = [
    # (what is wrong, path to change, new value, expected path, words in the message)
    ("wrong type", ["training", "batch_size"], "512", "training.batch_size", "must be an integer"),
    ("zero", ["training", "epochs"], 0, "training.epochs", "must be a positive integer"),
    ("negative", ["data", "samples"], -5, "data.samples", "must be a positive integer"),
    ("missing", ["data", "samples"], KeyError, "data.samples", "is required"),
    ("unknown layer", ["model", "layers", 1, "type"], "swish2", "model.layers[1].type", "unknown layer type"),
    ("unknown optimizer", ["training", "optimizer"], "lion", "training.optimizer", "must be one of"),
    ("unknown precision", ["training", "precision"], "fp8", "training.precision", "must be one of"),
    ("unknown key", ["training", "batchsize"], 4, "training.batchsize", "unknown key"),
    (
        "kernel larger than input",
        ["model", "layers", 0, "kernel_size"],
        40,
        "model.layers[0].kernel_size",
        "larger than the padded input",
    ),
    (
        "bad kernel",
        ["model", "layers", 0, "kernel_size"],
        -3,
        "model.layers[0].kernel_size",
        "must be a positive integer",
    ),
    ("absurd size", ["model", "layers", 3, "out_features"], 10**12, "model.layers[3].out_features", "out of range"),
    ("absurd samples", ["data", "samples"], 10**15, "data.samples", "out of range"),
    ("dropout p", ["model", "layers", 1], {"type": "dropout", "p": 1.5}, "model.layers[1].p", "must be in"),
    ("not an object", ["training"], [1, 2], "training", "must be an object"),
    ("bad shape", ["model", "input_shape"], [3, 0, 32], "model.input_shape[1]", "positive integer"),
    ("unknown preset", ["model"], {"preset": "alexnet-9000"}, "model.preset", "unknown preset"),
    ("bad utilisation", ["cost"], {"utilisation": 1.5}, "cost.utilisation", "must be in"),
    # a NUL reached the terminal, U+202E showed another name than the stored one, 100,000 characters made
    # a 90-page report
    ("NUL in the name", ["name"], "lab\x00run", "name", "control character"),
    ("direction mark in the name", ["name"], "fig\u202egnp.exe", "name", "direction mark"),
    ("name too long", ["name"], "x" * 100_000, "name", "is 100,000 characters long; give at most 200"),
    # a billion targets for a model of 10 scores: a dataset of 294 TiB in the sizing's header
    ("more outputs than the model's", ["data", "outputs"], 10**9, "data.outputs", "more than the 10 values"),
]


@pytest.mark.parametrize(("what", "path", "value", "where", "words"), CASES, ids=[c[0] for c in CASES])
def test_each_class_of_error_names_the_field(what: str, path: list[Any], value: Any, where: str, words: str) -> None:
    with pytest.raises(WorkloadError) as err:
        parse_workload(mutate(path, value))
    assert err.value.path == where
    assert words in err.value.message
    assert str(err.value).startswith(where + ":")


def test_overflowing_model_is_refused() -> None:
    doc = mutate(
        ["model", "layers"],
        [{"type": "repeat", "times": 5000, "layers": [{"type": "linear", "out_features": 100_000_000}]}],
    )
    doc["model"]["input_shape"] = [100_000_000]
    with pytest.raises(WorkloadError) as err:
        parse_workload(doc)
    # 5,000 layers of 100,000,000 × 100,000,000 weights (+ biases): 5e19 parameters
    assert err.value.path == "model"
    assert str(err.value) == "model: 5e+19 parameters is beyond what TrainRig sizes (at most 1e13)"


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("{not json", "is not valid JSON"),
        ('{"model": {"preset": "seed-mlp"}, "training": {"epochs": 1.5}}', "training.epochs: must be an integer"),
        ("[]", "workload: must be an object"),
        # Python's own limit on an integer's digits raised ValueError through the wizard's Open
        (
            '{"model": {"preset": "seed-mlp"}, "data": {"samples": ' + "9" * 5000 + "}}",
            "holds a number TrainRig cannot",
        ),
    ],
)
def test_cli_rejects_bad_files_with_exit_code_2(cli, write_json, content: str, words: str) -> None:
    code, out, err = cli("size", str(write_json(content)), "--no-save")
    assert code == 2
    assert words in err
    assert out == ""
    assert "Traceback" not in err


def test_cli_missing_file(cli, tmp_path) -> None:
    code, _, err = cli("size", str(tmp_path / "nope.json"))
    assert code == 2 and "does not exist" in err


def test_a_file_with_the_byte_order_mark_windows_editors_write_is_read(cli, tmp_path) -> None:
    p = tmp_path / "notepad.json"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps({"model": {"preset": "seed-mlp"}, "data": {"samples": 1000}}).encode())
    code, out, err = cli("size", str(p), "--no-save", "-c", "4090")
    assert "RTX 4090" in out  # sized, like the same file without the mark
    assert code == 0 and "Traceback" not in err
    assert "BOM" not in err


def test_a_chosen_report_name_keeps_its_own_dots() -> None:
    from core.storage.files import pdf_path

    assert pdf_path(Path("report.v2")) == Path("report.v2.pdf")  # not report.pdf
    assert pdf_path(Path("/x/Report.PDF")) == Path("/x/Report.PDF")
    assert pdf_path(Path("quote")) == Path("quote.pdf")
