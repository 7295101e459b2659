"""The sizing wizard driven offscreen: every page, validation that blocks Next, figures that match
`size --json`, what-if, files and the store."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from core.hardware.platforms import load_platforms
from core.storage.store import Store
from core.units import fmt_bytes
from gui.models.candidate_table_model import COL_COUNT, COL_DEVICE, COL_FITS, COL_MEMORY
from gui.wizard.candidates_page import THIS_MACHINE


def table(wiz, column: int) -> list[str]:
    m = wiz.results.proxy
    return [m.index(r, column).data() for r in range(m.rowCount())]


def size_json(cli, write_json, doc: dict) -> dict:
    candidates = [c for c in doc["hardware"]["candidates"] if c != THIS_MACHINE]
    args = [a for c in candidates for a in ("-c", c)]
    code, out, err = cli("size", str(write_json(doc)), *args, "--json", "--no-save")
    assert code == 0, err
    return json.loads(out)


def test_first_time_user_walks_to_results_for_the_seed_mlp(qtbot, main_window, cli, write_json) -> None:
    w = main_window()
    wiz = w.sizing_tab
    for step in range(5):
        assert wiz.stack.currentIndex() == step
        assert wiz.next_button.isEnabled(), wiz.problem.text()
        qtbot.mouseClick(wiz.next_button, Qt.MouseButton.LeftButton)
    assert wiz.stack.currentIndex() == 5
    devices = table(wiz, COL_DEVICE)
    assert "NVIDIA GeForce RTX 4090" in devices and any(d.startswith("this machine") for d in devices)
    assert table(wiz, COL_FITS) == ["yes", "yes"]
    doc = size_json(cli, write_json, wiz.doc)
    gui = {c.device.name: c for c in wiz.result.candidates}
    cli_4090 = next(c for c in doc["candidates"] if c["device"] == "NVIDIA GeForce RTX 4090")
    assert gui["NVIDIA GeForce RTX 4090"].memory.total == cli_4090["memory_per_device"]["total"]
    assert gui["NVIDIA GeForce RTX 4090"].train_time_s == cli_4090["training_time_s"]
    assert "K1 = 0.09383" in wiz.results.seed.text() and "K1 &lt; 1" in wiz.results.seed.text()
    # the seed MLP's step on the RTX 4090 is framework overhead: mixed precision (tensor cores) does not shorten it
    rules = {f.rule for f in wiz.findings}
    assert "hp-gpu-load-idle" in rules and "gpu-tensor-cores" not in rules
    # this machine trains it in minutes: nothing to buy (the advice was to rent an RTX 4090)
    here = next(c for c in wiz.result.candidates if c.device.is_this_machine)
    assert wiz.recommendation.decision.verdict == "use" and wiz.recommendation.best is here
    assert wiz.results.bom.topLevelItem(0).text(1) == f"{here.device.name} — already here: nothing to buy"
    assert f"Recommended: <b>{here.device.name} × 1</b>" in wiz.results.verdict.text()
    assert "already here: nothing to buy" in wiz.results.verdict.text()
    assert wiz.results.tabs.tabText(4) == "Buy or rent: use this machine"


def test_transformer_preset_on_h100s_matches_the_cli(qtbot, main_window, cli, write_json) -> None:
    w = main_window()
    wiz = w.sizing_tab
    wiz.go(1)
    wiz.model_page.preset.setCurrentIndex(wiz.model_page.preset.findData("gpt2-small"))
    assert wiz.doc["training"]["precision"] == "bf16_mixed"  # the preset's defaults came along
    wiz.go(4)
    wiz.candidates.check("NVIDIA GeForce RTX 4090", False)
    wiz.candidates.check("NVIDIA H100 SXM", True)
    wiz.candidates.max_gpus.setValue(8)
    wiz.go(5)
    assert wiz.stack.currentIndex() == 5
    doc = size_json(cli, write_json, wiz.doc)
    assert doc["parameters"] == 124_439_808
    by_key = {(c["device"], c["count"]): c for c in doc["candidates"]}
    for c in wiz.result.candidates:
        if c.device.kind == "gpu":
            assert c.memory.total == by_key[(c.device.name, c.count)]["memory_per_device"]["total"]
    assert [c.count for c in wiz.result.candidates if c.device.name == "NVIDIA H100 SXM"] == [1, 2, 4, 8]


def test_invalid_layer_blocks_next_with_the_reason(qtbot, main_window) -> None:
    w = main_window()
    wiz = w.sizing_tab
    wiz.go(1)
    page = wiz.model_page
    page.edit_preset_as_layers()
    assert page.use_layers.isChecked() and page.table.rowCount() == 7
    assert wiz.next_button.isEnabled()
    page.table.item(0, 1).setText("out_features=-5")
    assert not wiz.next_button.isEnabled()
    # the table's row 1, counted as the table counts it, said once (on the page; the wizard's
    # line points there and the Next button's tooltip keeps the reason)
    assert page.error.text() == "Row 1, out_features: must be a positive integer, got -5"
    assert "layers[0]" not in page.error.text() and wiz.problem.text() == "Correct the message above to go on."
    assert wiz.next_button.toolTip() == page.error.text()
    # the pages after the model page cannot be reached from the sidebar: greyed, with the reason
    for j in range(2, 6):
        item = wiz.steps.item(j)
        assert not item.flags() & Qt.ItemFlag.ItemIsEnabled
        assert item.toolTip() == "Fix 2 Model first: Row 1, out_features: must be a positive integer, got -5"
    assert wiz.steps.item(1).flags() & Qt.ItemFlag.ItemIsEnabled
    page.table.item(0, 1).setText("out_features=256")
    # 75·256+256 + 256·512+512 + 512·512+512 + 512·10+10, shown as it is typed
    assert wiz.next_button.isEnabled() and "<b>418,826</b> parameters" in page.counts.text()
    assert wiz.steps.item(5).flags() & Qt.ItemFlag.ItemIsEnabled and not wiz.steps.item(5).toolTip()
    page.input_shape.setText("3, 32, 32")  # a linear on an image: the shapes still chain (last dim 32)
    page.add_layer("conv2d", "out_channels=8, kernel_size=99")
    assert "kernel_size: kernel 99×99 is larger than the padded input" in page.error.text()
    # trying to jump ahead stops at the page that is not valid
    wiz.go(5)
    assert wiz.stack.currentIndex() == 1


def test_no_candidate_blocks_next(qtbot, main_window) -> None:
    w = main_window()
    wiz = w.sizing_tab
    wiz.go(4)
    for name in wiz.candidates.selected():
        wiz.candidates.check(name, False)
    assert not wiz.next_button.isEnabled() and "Tick at least one candidate" in wiz.problem.text()


def test_what_if_recomputes_on_the_results_page(qtbot, main_window) -> None:
    w = main_window()
    wiz = w.sizing_tab
    wiz.go(5)
    before = {c.device.name: c.memory.total for c in wiz.result.candidates}
    wiz.results.batch.setValue(8192)
    after = {c.device.name: c.memory.total for c in wiz.result.candidates}
    assert all(after[k] > before[k] for k in before)
    assert wiz.doc["training"]["batch_size"] == 8192 and wiz.training.batch.value() == 8192
    assert wiz.candidates.max_gpus.value() == 1  # the GPU count was not changed: its page stays as it was
    wiz.results.gpus.setValue(4)
    assert max(c.count for c in wiz.result.candidates) == 4
    # each what-if reaches the page its field belongs to (a page is loaded again only when its field changed)
    assert wiz.candidates.max_gpus.value() == 4 and wiz.training.batch.value() == 8192
    wiz.results.precision.setCurrentIndex(wiz.results.precision.findData("bf16_mixed"))
    assert wiz.training.precision.currentData() == "bf16_mixed"
    assert wiz.result.workload.training.precision == "bf16_mixed"
    # every row of the table shows the recomputed memory of its own candidate
    by_row = {(c.device.name, str(c.count)): fmt_bytes(c.memory.total) for c in wiz.result.candidates}
    shown = dict(
        zip(zip(table(wiz, COL_DEVICE), table(wiz, COL_COUNT), strict=True), table(wiz, COL_MEMORY), strict=True)
    )
    assert shown == by_row and len(shown) == len(wiz.result.candidates)


def test_custom_device_joins_the_candidates(qtbot, main_window) -> None:
    w = main_window()
    wiz = w.sizing_tab
    wiz.go(4)
    page = wiz.candidates
    page.custom_name.setText("Lab GPU")
    page.custom_fp32.setValue(20)
    page.custom_mem.setValue(16)
    page.add_custom()
    assert "Lab GPU" in page.selected()
    wiz.go(5)
    assert "Lab GPU" in table(wiz, COL_DEVICE)
    page.custom_name.setText("NVIDIA T4")
    page.add_custom()
    assert "exists" in page.error.text()


def test_save_open_and_record(qtbot, main_window, tmp_path: Path) -> None:
    store = Store.open(None)
    w = main_window(store)
    wiz = w.sizing_tab
    wiz.goal.name.setText("my study")
    wiz.training.batch.setValue(256)
    path = tmp_path / "w.json"
    assert wiz.save_file(path)
    saved = json.loads(path.read_text())
    assert saved["name"] == "my study" and saved["training"]["batch_size"] == 256
    wiz.training.batch.setValue(64)
    assert wiz.open_file(path) and wiz.training.batch.value() == 256
    bad = tmp_path / "bad.json"
    bad.write_text('{"model": {"preset": "seed-mlp"}, "training": {"batch_size": -4}}')
    assert not wiz.open_file(bad)
    assert "training.batch_size: must be a positive integer" in wiz.message.text()
    assert wiz.training.batch.value() == 256  # nothing lost
    wiz.candidates.max_gpus.setValue(2)  # the RTX 4090 × 1 and × 2
    assert len(wiz.result.candidates) > len({c.device.name for c in wiz.result.candidates})
    wiz.save_sizing()
    (row,) = store.sizings()
    assert row["name"] == "my study"
    # each candidate device once, as `size` records them (a name for each device × count row before)
    names = store.result_detail("sizing", row["id"])["candidates"]
    assert names == list(dict.fromkeys(c.device.name for c in wiz.result.candidates)) and len(set(names)) == len(names)
    wiz.training.batch.setValue(32)
    (saved,) = store.workloads()
    assert wiz.open_saved(saved["id"]) and wiz.training.batch.value() == 256
    assert not wiz.open_saved(999) and "No saved workload #999" in wiz.message.text()


def test_window_geometry_and_tab_are_remembered(qtbot, main_window) -> None:
    from PySide6.QtCore import QSettings

    w = main_window()
    w.resize(1200, 700)
    w.tabs.setCurrentIndex(1)
    qtbot.wait(50)
    geometry_at_close = w.saveGeometry()
    w.close()
    assert QSettings().value("main_window/geometry") == geometry_at_close
    assert int(QSettings().value("main_window/tab")) == 1
    again = main_window()
    assert again.tabs.currentIndex() == 1  # the user comes back to the tab they left
    # at the height they left it (not the first start's 760; the offscreen screen is 800 px wide,
    # so Qt fits the 1200 px width to it and the window's minimum width)
    assert again.height() == 700
    again.resize(1000, 640)
    qtbot.wait(50)
    again.close()
    third = main_window()
    assert third.height() == 640 and third.tabs.currentIndex() == 1


def test_repainting_does_not_leak_references_to_none(qtbot, main_window) -> None:
    # PySide6 6.12.0 on Python 3.11 decrements None on every paint until the app aborts.
    w = main_window()
    w.sizing_tab.go(5)
    w.grab()
    before = sys.getrefcount(None)
    for _ in range(300):
        w.sizing_tab.results.table.viewport().repaint()
        w.sizing_tab.results.memory_bar.plot.viewport().repaint()
    assert sys.getrefcount(None) >= before - 50


def test_a_currency_other_than_usd_asks_for_its_rate_and_converts_prices(qtbot, main_window) -> None:
    w = main_window()
    wiz = w.sizing_tab
    goal = wiz.goal
    goal.currency.setText("EUR")
    assert "needs the rate per USD and its date" in (goal.problem() or "")
    goal.rate.setValue(0.92)
    goal.rate_date.setText("2026-11-01")
    assert goal.problem() is None
    wiz.go(5)
    (gpu,) = [c for c in wiz.result.candidates if "4090" in c.device.name]
    # the RTX 4090's purchase price and its desktop (platforms.json), all USD, at 0.92 EUR per USD
    ws = load_platforms().by_id("desktop")  # one consumer card: a desktop
    assert gpu.cost.platform is not None and gpu.cost.platform.platform == ws
    usd = gpu.device.purchase_price()[0] + ws.base_cost_usd + ws.cpu_cost_usd
    assert gpu.cost.currency == "EUR"
    assert gpu.cost.capex == pytest.approx(usd * 0.92)
    assert wiz.result.workload.cost.rate_date == "2026-11-01"


def test_the_goal_page_sets_the_expected_use_and_the_results_say_buy_or_rent(qtbot, main_window) -> None:
    w = main_window()
    wiz = w.sizing_tab
    wiz.candidates.check("this-machine", False)  # this machine would be used: nothing to buy or rent
    goal = wiz.goal
    goal.use_kind.setCurrentIndex(goal.use_kind.findData("hours_per_year"))
    assert goal.use_hours.isVisibleTo(goal) and not goal.use_runs.isVisibleTo(goal)
    goal.use_hours.setValue(2000)
    wiz.go(5)
    cost = wiz.result.workload.cost
    assert cost.hours_per_year == 2000 and cost.runs == 1 and cost.rent_allowed
    page = wiz.results
    text = page.decision.text()
    assert "2,000 h of training a year for 3 years" in text
    assert page.tabs.tabText(4).startswith("Buy or rent: ")
    # the data must stay on site: the decision is to buy, and says why
    wiz.go(0)
    goal.rent_allowed.setChecked(False)
    wiz.go(5)
    assert wiz.result.workload.cost.rent_allowed is False
    assert page.tabs.tabText(4) == "Buy or rent: buy"
    assert "Renting is ruled out in the workload" in page.decision.text()
    # the bill of materials ends with its total, the capex of the recommended purchase
    bom = page.bom
    total = bom.topLevelItem(bom.topLevelItemCount() - 1)
    assert total.text(0) == "Total" and total.text(2).endswith("USD")


def test_every_shortcut_has_one_owner_and_the_file_menu_lists_them(qtbot, main_window, monkeypatch) -> None:
    # Ctrl+O did nothing on the wizard tab: "Ambiguous shortcut overload", bound by the window and the wizard
    from PySide6.QtGui import QAction, QKeySequence, QShortcut

    w = main_window()
    owners: dict[str, int] = {}
    for action in w.findChildren(QAction):
        for seq in action.shortcuts():
            owners[seq.toString()] = owners.get(seq.toString(), 0) + 1
    for shortcut in w.findChildren(QShortcut):
        owners[shortcut.key().toString()] = owners.get(shortcut.key().toString(), 0) + 1
    assert {k: n for k, n in owners.items() if n > 1} == {}
    menu = next(a for a in w.menuBar().actions() if a.text() == "&File").menu()
    listed = {a.text().replace("&", ""): a.shortcut().toString() for a in menu.actions() if not a.isSeparator()}
    assert listed == {
        "Open workload…": QKeySequence(QKeySequence.StandardKey.Open).toString(),
        "Save workload as…": "Ctrl+Shift+S",
        "Save sizing": QKeySequence(QKeySequence.StandardKey.Save).toString(),
        "Export report…": "Ctrl+E",
        "Export results archive…": "",
        "Import results archive…": "",
        "Quit": QKeySequence(QKeySequence.StandardKey.Quit).toString(),
    }
    # the Open action reaches the wizard's dialog
    seen: list[object] = []
    monkeypatch.setattr("gui.wizard.documents.QFileDialog.getOpenFileName", lambda *a, **k: seen.append(a) or ("", ""))
    w.file_actions["open"].trigger()
    assert len(seen) == 1


def test_the_training_loop_on_the_training_page_changes_the_step(qtbot, main_window) -> None:
    w = main_window()
    wiz = w.sizing_tab
    wiz.candidates.check("this-machine", False)  # the findings are of the GPU recommended
    page = wiz.training
    assert page.loop.currentData() == "auto" and not page.workers.isEnabled()
    wiz.go(5)
    default = next(c for c in wiz.result.candidates if c.device.name == "NVIDIA GeForce RTX 4090")
    # the seed MLP on an RTX 4090: the host sets the step, and the results say so
    assert default.step.host_bound
    (finding,) = [f for f in wiz.findings if f.rule == "host-bound-step"]
    assert "A faster GPU would shorten it only by the kernels the host waits for" in finding.message
    wiz.go(3)
    page.loop.setCurrentIndex(page.loop.findData("device_tensors"))
    assert not page.workers.isEnabled() and not page.pin_memory.isEnabled() and page.sync_every.isEnabled()
    assert page.loop.itemData(page.loop.currentIndex(), Qt.ItemDataRole.ToolTipRole).startswith("The whole dataset")
    wiz.go(5)
    assert wiz.doc["training"]["loop"] == {"style": "device_tensors", "sync_every": 1}
    on_gpu = next(c for c in wiz.result.candidates if c.device.name == "NVIDIA GeForce RTX 4090")
    assert on_gpu.step.step_s < 0.8 * default.step.step_s  # no DataLoader in the main process
    # back to a DataLoader with workers and pinned memory: stored, and read back by a fresh page
    wiz.go(3)
    page.loop.setCurrentIndex(page.loop.findData("dataloader"))
    page.workers.setValue(4)
    page.pin_memory.setChecked(True)
    wiz.go(5)
    loop = {"style": "dataloader", "sync_every": 1, "workers": 4, "pin_memory": True}
    assert wiz.doc["training"]["loop"] == loop
    assert wiz.result.workload.training.loop.workers == 4
    page.load({"training": {"loop": "dataloader_files"}})
    assert page.loop.currentData() == "dataloader_files" and page.workers.value() == 4
