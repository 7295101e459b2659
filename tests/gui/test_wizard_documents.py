"""What the wizard holds of a workload it opens, and of what is typed into it: every value as written
(or named where the pages cannot hold it), nothing of the last workload carried into the next, and a
half-typed layer that neither raises nor loses the work nor leaves old figures to export."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt

ROOT = Path(__file__).resolve().parents[2]


def _write(tmp_path: Path, name: str, doc: dict) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


def test_the_seed_mlp_opened_after_the_llama_example_is_the_seed_mlp(qtbot, main_window) -> None:
    """The Llama preset's layers were drawn over the file's while the page still had the preset chosen:
    the wizard said "Opened seed-mlp.json" and sized Llama-8B's 8 billion parameters."""
    wiz = main_window().sizing_tab
    assert wiz.open_file(ROOT / "examples" / "llama-8b-finetune.json")
    assert wiz.model_page.analysis.parameters > 8e9
    assert wiz.open_file(ROOT / "examples" / "seed-mlp.json")
    assert wiz.message.text() == "Opened seed-mlp.json."
    assert wiz.doc["model"]["input_shape"] == [75] and wiz.model_page.input_shape.text() == "75"
    assert wiz.model_page.analysis.parameters == 569_354  # 75·512+512 + 2 · (512·512+512) + 512·10+10
    assert wiz.result is not None and wiz.result.workload.analysis.parameters == 569_354


def test_five_billion_samples_open_and_are_sized(qtbot, main_window, tmp_path: Path) -> None:
    """Past a QSpinBox's 32 bits: Qt raised OverflowError and left the wizard half-loaded."""
    wiz = main_window().sizing_tab
    doc = {"name": "web-scale", "model": {"preset": "seed-mlp"}, "data": {"samples": 5_000_000_000}}
    assert wiz.open_file(_write(tmp_path, "big.json", doc))
    assert wiz.message.text() == "Opened big.json."
    assert wiz.doc["data"]["samples"] == 5_000_000_000 and isinstance(wiz.doc["data"]["samples"], int)
    assert wiz.result.workload.data.samples == 5_000_000_000
    assert "5,000,000,000" in wiz.data.samples.text()


def test_values_the_pages_cannot_hold_are_named_and_the_workload_counts_as_changed(
    qtbot, main_window, tmp_path: Path
) -> None:
    wiz = main_window().sizing_tab
    doc = {
        "name": "odd values",
        "model": {"preset": "seed-mlp"},
        "training": {"reserve_percent": 12.5, "loop": {"style": "dataloader", "workers": 2, "log_every": 50}},
        "cost": {"budget": 0.5, "deadline_hours": 0.05, "cloud_per_gpu_hour": 0.0004},
    }
    assert wiz.open_file(_write(tmp_path, "odd.json", doc))
    # held as written: a reserve of 12.5 %, a three-minute deadline, a price per GPU-hour of 0.04 cents, the
    # loop's log interval the page does not show
    t, c = wiz.doc["training"], wiz.doc["cost"]
    assert t["reserve_percent"] == 12.5 and c["deadline_hours"] == 0.05 and c["cloud_per_gpu_hour"] == 0.0004
    assert t["loop"]["log_every"] == 50
    # a budget under the page's smallest (1) is not: named, and the workload is not "saved" as it shows
    text = wiz.message.text()
    assert "Opened odd.json, but the pages hold 1 of its values otherwise: cost.budget: 0.5 → 1" in text
    assert wiz.has_unsaved_changes()


def test_candidate_names_tick_the_device_they_name_and_the_rest_are_said(qtbot, main_window, tmp_path: Path) -> None:
    """ "NVIDIA A10" also ticked both A100s, "NVIDIA L4" the L40S; an unknown name was dropped unsaid."""
    wiz = main_window().sizing_tab
    doc = {
        "model": {"preset": "seed-mlp"},
        "hardware": {"candidates": ["NVIDIA A10", "NVIDIA L4", "H100 SXM", "A100", "NVIDIA H101"]},
    }
    assert wiz.open_file(_write(tmp_path, "cands.json", doc))
    assert sorted(wiz.candidates.selected()) == ["NVIDIA A10", "NVIDIA H100 SXM", "NVIDIA L4"]
    text = wiz.message.text()
    # said as `size` says it (the same catalogue rule)
    assert "device 'A100' is ambiguous; it matches: NVIDIA A100 40GB SXM, NVIDIA A100 80GB SXM" in text
    assert "no device matches 'NVIDIA H101'" in text
    assert wiz.has_unsaved_changes()
    assert {c.device.name for c in wiz.result.candidates} == {"NVIDIA A10", "NVIDIA H100 SXM", "NVIDIA L4"}


def test_a_files_custom_devices_do_not_follow_into_the_next_file(qtbot, main_window, tmp_path: Path) -> None:
    wiz = main_window().sizing_tab
    custom = {"name": "X1 accelerator", "fp32_tflops": 50, "memory_gb": 32}
    doc = {"model": {"preset": "seed-mlp"}, "hardware": {"candidates": ["X1 accelerator"], "custom": [custom]}}
    assert wiz.open_file(_write(tmp_path, "x1.json", doc))
    assert (
        wiz.candidates.selected() == ["X1 accelerator"] and wiz.doc["hardware"]["custom"][0]["name"] == "X1 accelerator"
    )
    assert wiz.open_file(ROOT / "examples" / "seed-mlp.json")
    names = [wiz.candidates.list.item(i).text() for i in range(wiz.candidates.list.count())]
    assert not any("X1" in n for n in names) and wiz.doc["hardware"]["custom"] == []


def test_a_half_typed_layer_neither_raises_nor_loses_the_edit(
    qtbot, main_window, unsaved_changes_answer, tmp_path: Path
) -> None:
    """ "out_features" before its "=10": TrainRigError escaped from every edit, Next stayed enabled with the
    last figures, and closing raised in closeEvent and lost the work without asking."""
    w = main_window()
    wiz = w.sizing_tab
    wiz.go(1)
    page = wiz.model_page
    page.edit_preset_as_layers()
    assert wiz.recommendation is not None
    page.table.item(0, 1).setText("out_features")  # a slot's exception would fail the test (pytest-qt)
    assert "'out_features' is not name=value" in page.error.text()
    assert not wiz.next_button.isEnabled()
    assert wiz.recommendation is None and wiz.result is None  # no old figures to export or record
    assert wiz.has_unsaved_changes()
    assert not wiz.save_file(tmp_path / "half.json") and not (tmp_path / "half.json").exists()
    assert "half.json was not written: the Model page's model.layers[0]" in wiz.message.text()
    unsaved_changes_answer.value = "cancel"
    assert not w.close() and unsaved_changes_answer.asked  # asked, and the window stays with the typing
    assert page.table.item(0, 1).text() == "out_features"
    page.table.item(0, 1).setText("out_features=10")
    assert wiz.next_button.isEnabled() and wiz.recommendation is not None
    assert wiz.save_file(tmp_path / "done.json")
    assert json.loads((tmp_path / "done.json").read_text())["model"]["layers"][0] == {
        "type": "linear",
        "out_features": 10,
    }


def test_an_input_size_in_other_digits_is_a_message(qtbot, main_window) -> None:
    """ "28²": Python counts "²" as a digit, int() then raised ValueError from the slot."""
    wiz = main_window().sizing_tab
    wiz.go(1)
    page = wiz.model_page
    page.edit_preset_as_layers()
    for typed in ("28²", "①", "9" * 40):
        page.input_shape.setText(typed)
        assert not page.error.isHidden() and "input_shape" in page.error.text(), typed
        assert not wiz.next_button.isEnabled()
    page.input_shape.setText("75")
    assert wiz.next_button.isEnabled()


def test_importing_a_malformed_model_says_what_is_wrong(qtbot, main_window, tmp_path: Path) -> None:
    wiz = main_window().sizing_tab
    page = wiz.model_page
    for i, model in enumerate(
        ({"layers": 5, "input_shape": [3]}, {"layers": [1, 2], "input_shape": [3]}, {"preset": "nope"}, {"preset": 5})
    ):
        assert not page.import_file(_write(tmp_path, f"m{i}.json", {"model": model}))
        assert page.error.text().lower().startswith(f"m{i}.json holds no model the page can show"), model
    assert wiz.doc["model"] == {"preset": "seed-mlp"}  # the model shown before is kept


def test_a_long_word_in_a_message_keeps_the_window_its_size(qtbot, main_window, tmp_path: Path) -> None:
    """A 100,000-character name in a message made the label, and the window, 709,408 pixels wide at least."""
    w = main_window()
    wiz = w.sizing_tab
    name = "x" * 100_000
    assert not wiz.save_file(tmp_path / "missing-folder" / f"{name}.json")
    shown = wiz.message.text()
    assert shown.startswith(f"{'x' * 39}…") and len(shown) < 600
    assert w.minimumSizeHint().width() < 2000
    assert not wiz.message.toolTip() or len(wiz.message.toolTip()) < 1000
    assert Qt.TextFormat.PlainText == wiz.message.textFormat() or "x" * 100 not in shown


def _pick(wiz, name: str) -> None:
    wiz.go(1)
    wiz.model_page.use_preset.setChecked(True)
    wiz.model_page.preset.setCurrentIndex(wiz.model_page.preset.findData(name))


def test_a_chosen_preset_brings_its_data_and_training_and_nothing_of_the_last(qtbot, main_window) -> None:
    """ResNet-50's JPEG features (150,528 a sample) stayed when the seed MLP was chosen after it: 12 GB of data
    and six times the training time; Llama's FSDP, checkpointing and bf16 carried into ResNet-50."""
    from core.network.presets import load_presets
    from gui.wizard.documents import page_document

    wiz = main_window().sizing_tab
    for first, then in (("resnet-50", "seed-mlp"), ("llama-8b", "resnet-50"), ("llama-8b", "lenet-5")):
        _pick(wiz, first)
        _pick(wiz, then)
        preset = load_presets()[then]
        training = {k: v for k, v in preset["training"].items() if k != "learning_rate"}
        fresh = page_document({"model": {"preset": then}, "data": preset["data"], "training": training})
        assert wiz.doc["data"] == fresh["data"] and wiz.doc["training"] == fresh["training"], (first, then)
    assert "features" not in wiz.doc["data"] and wiz.doc["data"]["dtype"] == "float32"  # lenet-5's own
    assert wiz.doc["training"]["sharding"] == "none" and wiz.doc["training"]["precision"] == "fp32"


def test_a_file_without_data_or_training_gets_its_presets_not_the_starters(qtbot, main_window, tmp_path: Path) -> None:
    """A ResNet-50 file without its data was sized with the seed MLP's 80,909 samples, batch 512 and 400 epochs
    (the command line: the preset's 1,281,167 samples, batch 256, 90 epochs); one without candidates kept the
    last file's (the command line sizes this machine)."""
    wiz = main_window().sizing_tab
    assert wiz.open_file(ROOT / "examples" / "llama-8b-finetune.json")
    assert wiz.doc["data"]["outputs"] == 2048 and wiz.doc["data"]["dtype"] == "int64"  # the preset's, not 10/float32
    doc = {"model": {"preset": "resnet-50"}, "hardware": {"gpu_count": {"min": 1, "max": 2}}}
    assert wiz.open_file(_write(tmp_path, "r50.json", doc))
    assert wiz.message.text() == "Opened r50.json."
    d, t = wiz.doc["data"], wiz.doc["training"]
    assert (d["samples"], d["outputs"], d["format"], t["batch_size"], t["epochs"]) == (1_281_167, 1000, "jpeg", 256, 90)
    assert wiz.candidates.selected() == ["this-machine"]  # not the Llama file's A100 and H100
    assert wiz.result.workload.data.samples == 1_281_167


def test_an_edit_the_workload_refuses_takes_the_old_figures_away(qtbot, main_window) -> None:
    """A million outputs for a model of ten: the results page kept the last sizing's table and verdict, the
    error line was blank there, and "Save sizing" recorded the old sizing with the new workload."""
    wiz = main_window().sizing_tab
    wiz.go(5)
    assert wiz.recommendation is not None and wiz.results.model.rowCount() > 0
    wiz.go(2)
    wiz.data.outputs.setValue(1_000_000)
    assert wiz.recommendation is None and wiz.results.model.rowCount() == 0
    assert "more than the 10 values the model gives a sample" in wiz.problem.text()
    wiz.go(5)  # reachable (no page checks it), and the reason still said there
    assert "data.outputs: is 1,000,000" in wiz.problem.text()
    assert "Not sized" in wiz.results.verdict.text() and not wiz.results.run_here_button.isEnabled()
    wiz.save_sizing()
    assert wiz.message.text().startswith("Nothing to save")
    wiz.go(2)
    wiz.data.outputs.setValue(10)
    assert wiz.recommendation is not None and wiz.results.model.rowCount() > 0 and not wiz.problem.text()


def test_importing_a_presets_model_brings_its_data_and_training_in_either_mode(qtbot, main_window) -> None:
    """In the layer-list mode the import of the Llama example kept the seed MLP's batch 512 and 400 epochs; in the
    preset mode it brought Llama's: one import, two workloads."""
    wiz = main_window().sizing_tab
    wiz.go(1)
    wiz.model_page.edit_preset_as_layers()
    assert wiz.model_page.use_layers.isChecked()
    assert wiz.model_page.import_file(ROOT / "examples" / "llama-8b-finetune.json")
    t = wiz.doc["training"]
    assert wiz.doc["model"] == {"preset": "llama-8b"}
    assert (t["batch_size"], t["epochs"], t["precision"], t["sharding"]) == (64, 1, "bf16_mixed", "fsdp")


def test_a_measurement_is_dropped_when_a_setting_it_ran_with_changes(qtbot, main_window) -> None:
    from gui.wizard.wizard import _measure_key

    wiz = main_window().sizing_tab
    wiz.go(5)
    base = _measure_key(wiz.recommendation.result.workload)
    wiz.go(3)
    wiz.training.checkpointing.setCurrentIndex(wiz.training.checkpointing.findData("full"))
    assert _measure_key(wiz.recommendation.result.workload) != base
