"""Sizing tab: pick a model and training settings, see memory, time and cost per candidate.

Every change recomputes at once (the engine takes milliseconds). The full step-by-step wizard
builds on this page.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from core.catalogue import DeviceSpec, load_catalogue, merge_user_devices
from core.errors import TrainRigError
from core.memory import OPTIMIZER_STATES, PRECISION_BYTES, SHARDINGS
from core.presets import load_presets
from core.sizing import SizingResult, size_workload
from core.sizing_report import sizing_to_dict
from core.store import Store
from core.units import fmt_bytes, fmt_count, fmt_seconds
from core.workload import parse_workload
from gui.models.candidate_table_model import ROW_ROLE, SORT_ROLE, CandidateTableModel
from gui.widgets.memory_bar import MemoryBar
from telemetry.machine import MachineSummary, summary_from_inventory, this_machine_device

SEED_TIPS = {
    "n_na": "Jamgharyan 2024 eq. 1 (after Subbotin 2003): N_na = η_b·S·(N + N_M) + η_w·N_w + η_v·N_v — "
    "memory with the whole training set resident",
    "k1": "Jamgharyan 2024 eq. 4: K1 = N_w / (S·N), the redundancy of the network memory",
    "t": "Jamgharyan 2024 eq. 2 and 3: T1 = Σ_μ Σ_i T^(μ,i) (sequential), T2 = Σ_μ max_i T^(μ,i) "
    "(hardware-parallel), operations per sample",
    "r": "Hooda 2023 eq. 1: R = 2·N·C (CUDA cores × boost clock × 2)",
    "c": "Hooda 2023 eq. 3 and 4: C_train = O_f·O_b·P·S·E with O_f = 2, O_b = 3; T_train = C_train / R "
    "(real throughput typically 15–25 % lower)",
}


class SizingTab(QWidget):
    sized = Signal(object)  # SizingResult, after every successful recompute

    def __init__(self, store: Store | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.machine: MachineSummary | None = None
        self.result: SizingResult | None = None
        self._base_doc: dict[str, Any] | None = None
        self._catalogue = tuple(merge_user_devices(load_catalogue(), store.user_devices() if store else ()))
        self._build()
        self._load_preset_defaults()
        self.recompute()

    # --- layout -------------------------------------------------------------------------------
    def _build(self) -> None:
        form_box = QGroupBox("Workload")
        form = QFormLayout(form_box)
        self.preset = QComboBox()
        for name, p in load_presets().items():
            self.preset.addItem(name, name)
            self.preset.setItemData(self.preset.count() - 1, p.get("description", ""), Qt.ItemDataRole.ToolTipRole)
        self.preset.setCurrentIndex(max(0, self.preset.findData("seed-mlp")))
        self.preset.setToolTip("Model preset (resources/presets); hover an entry for its description and source")
        self.open_button = QPushButton("Open workload…")
        self.open_button.setToolTip("Load a workload JSON file (docs/workload.md)  [Ctrl+O]")
        row = QHBoxLayout()
        row.addWidget(self.preset, 1)
        row.addWidget(self.open_button)
        form.addRow("Model", row)
        self.samples = _spin(1, 2_000_000_000, "Training samples S")
        self.batch = _spin(1, 100_000_000, "Global batch size, split over the GPUs of a candidate")
        self.epochs = _spin(1, 10_000_000, "Epochs E")
        self.optimizer = _combo(OPTIMIZER_STATES, "Optimizer: sets the state kept per parameter")
        self.precision = _combo(PRECISION_BYTES, "Training precision (mixed = torch.autocast)")
        self.sharding = _combo(SHARDINGS, "Data-parallel sharding of state across GPUs")
        self.gpus = _spin(1, 1024, "GPUs per candidate (data parallel)")
        self.checkpointing = QCheckBox("Activation checkpointing")
        self.checkpointing.setToolTip("Keep only block inputs and recompute activations in backward (+1 forward)")
        form.addRow("Samples", self.samples)
        form.addRow("Batch size", self.batch)
        form.addRow("Epochs", self.epochs)
        form.addRow("Optimizer", self.optimizer)
        form.addRow("Precision", self.precision)
        form.addRow("GPUs", self.gpus)
        form.addRow("Sharding", self.sharding)
        form.addRow("", self.checkpointing)
        self.candidates = QListWidget()
        self.candidates.setToolTip("Tick the devices to compare")
        self._this_item = QListWidgetItem("This machine (detecting…)")
        self._this_item.setFlags(Qt.ItemFlag.ItemIsUserCheckable)
        self._this_item.setCheckState(Qt.CheckState.Checked)
        self.candidates.addItem(self._this_item)
        for d in self._catalogue:
            item = QListWidgetItem(d.name + (" (yours)" if d.extra.get("user") else ""))
            item.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled)
            item.setCheckState(Qt.CheckState.Checked if "4090" in d.name else Qt.CheckState.Unchecked)
            item.setData(Qt.ItemDataRole.UserRole, d)
            item.setToolTip(d.source)
            self.candidates.addItem(item)
        form.addRow("Candidates", self.candidates)
        self.save_button = QPushButton("Save sizing")
        self.save_button.setToolTip("Record this sizing in the database  [Ctrl+S]")
        form.addRow("", self.save_button)

        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setObjectName("message")
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.seed = QLabel()
        self.seed.setWordWrap(True)
        self.seed.setTextFormat(Qt.TextFormat.RichText)
        seed_box = QGroupBox("Seed formulas (as published)")
        QVBoxLayout(seed_box).addWidget(self.seed)
        self.model = CandidateTableModel()
        self.proxy = QSortFilterProxyModel()
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().hide()
        self.memory_bar = MemoryBar()

        right = QWidget()
        rl = QVBoxLayout(right)
        rl.addWidget(self.message)
        rl.addWidget(self.summary)
        rl.addWidget(self.table, 2)
        rl.addWidget(self.memory_bar, 2)
        rl.addWidget(seed_box)
        splitter = QSplitter()
        splitter.addWidget(form_box)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([300, 1060])
        layout = QVBoxLayout(self)
        layout.addWidget(splitter)

        for w in (self.samples, self.batch, self.epochs, self.gpus):
            w.valueChanged.connect(self.recompute)
        for c in (self.optimizer, self.precision, self.sharding):
            c.currentIndexChanged.connect(self.recompute)
        self.checkpointing.toggled.connect(self.recompute)
        self.candidates.itemChanged.connect(self.recompute)
        self.preset.currentIndexChanged.connect(self._preset_changed)
        self.open_button.clicked.connect(self.open_workload)
        self.save_button.clicked.connect(self.save_sizing)
        self.table.selectionModel().selectionChanged.connect(self._show_selected)
        QShortcut(QKeySequence.StandardKey.Open, self, self.open_workload)
        QShortcut(QKeySequence.StandardKey.Save, self, self.save_sizing)

    # --- inputs -------------------------------------------------------------------------------
    def _preset_changed(self) -> None:
        self._base_doc = None
        self._load_preset_defaults()
        self.recompute()

    def _load_preset_defaults(self) -> None:
        preset = load_presets()[self.preset.currentData()]
        self._apply_defaults(preset.get("data", {}), preset.get("training", {}))

    def _apply_defaults(self, data: dict[str, Any], training: dict[str, Any]) -> None:
        widgets = [
            self.samples,
            self.batch,
            self.epochs,
            self.optimizer,
            self.precision,
            self.sharding,
            self.checkpointing,
        ]
        for w in widgets:
            w.blockSignals(True)
        self.samples.setValue(int(data.get("samples", 10000)))
        self.batch.setValue(int(training.get("batch_size", 32)))
        self.epochs.setValue(int(training.get("epochs", 1)))
        self.optimizer.setCurrentText(training.get("optimizer", "adam"))
        self.precision.setCurrentText(training.get("precision", "fp32"))
        self.sharding.setCurrentText(training.get("sharding", "none"))
        self.checkpointing.setChecked(bool(training.get("checkpointing", False)))
        for w in widgets:
            w.blockSignals(False)

    def open_workload(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open workload", "", "Workload JSON (*.json);;All files (*)")
        if path:
            self.load_workload_file(Path(path))

    def load_workload_file(self, path: Path) -> bool:
        """Load a workload document; a bad file leaves the current inputs as they were."""
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            parse_workload(doc)
        except (OSError, UnicodeDecodeError) as exc:
            self._show_message(f"{path.name} cannot be read: {exc}")
            return False
        except json.JSONDecodeError as exc:
            self._show_message(f"{path.name} is not valid JSON: {exc.msg} at line {exc.lineno}")
            return False
        except TrainRigError as exc:
            self._show_message(f"{path.name}: {exc}")
            return False
        self._base_doc = doc
        self._apply_defaults(doc.get("data", {}), doc.get("training", {}))
        self.recompute()
        return True

    def workload_document(self) -> dict[str, Any]:
        base = self._base_doc or {"name": self.preset.currentData(), "model": {"preset": self.preset.currentData()}}
        doc = json.loads(json.dumps(base))
        doc.setdefault("data", {})["samples"] = self.samples.value()
        training = doc.setdefault("training", {})
        training.update(
            batch_size=self.batch.value(),
            epochs=self.epochs.value(),
            optimizer=self.optimizer.currentText(),
            precision=self.precision.currentText(),
            sharding=self.sharding.currentText(),
            checkpointing=self.checkpointing.isChecked(),
        )
        doc.setdefault("hardware", {})["gpu_count"] = self.gpus.value()
        doc["hardware"].pop("candidates", None)
        return doc

    def selected_devices(self) -> list[DeviceSpec]:
        devices = []
        for i in range(self.candidates.count()):
            item = self.candidates.item(i)
            if item.checkState() != Qt.CheckState.Checked:
                continue
            if item is self._this_item:
                if self.machine is not None:
                    devices.append(this_machine_device(self.machine, self._catalogue))
            else:
                devices.append(item.data(Qt.ItemDataRole.UserRole))
        return devices

    # --- this machine, from the Inventory tab's detection --------------------------------------
    def set_inventory(self, inventory: dict[str, Any]) -> None:
        machine = summary_from_inventory(inventory)
        self.machine = machine
        device = this_machine_device(machine, self._catalogue)
        self._this_item.setText(device.name)
        self._this_item.setToolTip(device.source)
        self._this_item.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled)
        self.recompute()

    # --- results ------------------------------------------------------------------------------
    def recompute(self) -> None:
        devices = self.selected_devices()
        if not devices:
            self._show_message("Tick at least one candidate device.")
            return
        try:
            workload = parse_workload(self.workload_document())
            host_ram = self.machine.ram_total_bytes if self.machine else None
            result = size_workload(workload, devices, host_ram_bytes=host_ram)
        except TrainRigError as exc:
            self._show_message(str(exc))
            return
        self.result = result
        self._show_message("")
        m = workload.analysis
        self.summary.setText(
            f"<b>{workload.name}</b>: {m.parameters:,} parameters · forward {fmt_count(m.forward_flops, 'FLOP')} "
            f"per sample · training {fmt_count(result.train_flops, 'FLOP')} · dataset {fmt_bytes(result.dataset_bytes)}"
        )
        self._show_seed(result)
        self.model.set_rows(list(result.candidates))
        self.table.selectRow(0)
        self._show_selected()
        self.sized.emit(result)

    def _show_seed(self, r: SizingResult) -> None:
        s = r.seed
        k1 = "n/a" if s["k1"] is None else f"{s['k1']:.4g}"
        self.seed.setText(
            f"<span title='{SEED_TIPS['n_na']}'>N<sub>na</sub> = {fmt_bytes(float(s['n_na_bytes']))}</span> · "
            f"<span title='{SEED_TIPS['k1']}'>K1 = {k1} — {html.escape(str(s['k1_meaning']))}</span><br>"
            f"<span title='{SEED_TIPS['t']}'>T1 = {fmt_count(float(s['t1_ops']), 'op')}, "
            f"T2 = {fmt_count(float(s['t2_ops']), 'op')} per sample</span> · "
            f"<span title='{SEED_TIPS['r']}'>R = {fmt_count(float(s['peak_flops']), 'FLOP/s')} "
            f"({s['device']})</span><br>"
            f"<span title='{SEED_TIPS['c']}'>C<sub>train</sub> = {fmt_count(float(s['c_train_flop']), 'FLOP')}, "
            f"T<sub>train</sub> = {fmt_seconds(float(s['t_train_s']))} at peak</span>"
        )
        self.seed.setToolTip("\n".join(SEED_TIPS.values()))

    def _show_selected(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return
        c = self.proxy.data(rows[0], ROW_ROLE)
        self.memory_bar.show_breakdown(c.memory, c.capacity_bytes, f"{c.device.name} × {c.count}")

    def _show_message(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))
        self.message.setStyleSheet("color: #d9534f; font-weight: bold;" if text else "")

    def save_sizing(self) -> None:
        if self.store is None or self.result is None:
            return
        wid = self.store.save_workload(self.result.workload.name, self.workload_document())
        self.store.save_sizing(wid, [c.device.name for c in self.result.candidates], sizing_to_dict(self.result))
        self._show_message("")
        self.summary.setText(self.summary.text() + " · <i>saved</i>")


def _spin(lo: int, hi: int, tip: str) -> QSpinBox:
    s = QSpinBox()
    s.setRange(lo, hi)
    s.setGroupSeparatorShown(True)
    s.setToolTip(tip)
    s.setKeyboardTracking(False)
    return s


def _combo(options: Any, tip: str) -> QComboBox:
    c = QComboBox()
    c.addItems(list(options))
    c.setToolTip(tip)
    return c
