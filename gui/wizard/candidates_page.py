"""Candidates page: this machine, catalogue devices (filtered), your own devices, GPU counts."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
)

from core.errors import TrainRigError
from core.hardware.candidates import THIS_MACHINE
from core.hardware.catalogue import GIB, DeviceSpec, device_from_entry, normalise_device_entry
from gui.wizard.base import WizardPage, combo, dspin, error_label, spin


class CandidatesPage(WizardPage):
    title = "Candidates"

    def __init__(self, catalogue: tuple[DeviceSpec, ...]) -> None:
        super().__init__()
        self.catalogue = catalogue
        self.custom: list[dict[str, Any]] = []
        self.kind = combo(("all", "gpu", "tpu", "accelerator", "cpu"), "Show only this kind of device")
        self.min_memory = dspin(0, 1000, 0, "Hide devices with less memory than this", " GB")
        self.max_price = dspin(0, 1e6, 0, "Hide devices priced above this (0: no limit)", " USD")
        vendors = sorted({str(d.extra.get("vendor", "")) for d in catalogue if d.extra.get("vendor")})
        self.vendor = combo(("all", *vendors), "Show only this vendor")
        self.list = QListWidget()
        self.list.setToolTip("Tick the devices to compare; hover one for its datasheet source")
        self.min_gpus = spin(1, 4096, "Smallest GPU count per candidate")
        self.max_gpus = spin(1, 4096, "Largest GPU count (powers of two in between are sized too)")
        self.custom_name = QLineEdit()
        self.custom_name.setPlaceholderText("name")
        self.custom_fp32 = dspin(0.01, 1e6, 2, "FP32 peak of your device", " TFLOP/s")
        self.custom_mem = dspin(0.1, 1e6, 1, "Memory of your device: the vendor's GB, read as GiB", " GiB")
        self.custom_price = dspin(0, 1e7, 0, "Price (0: unknown)", " USD")
        self.custom_add = QPushButton("Add device")
        self.error = error_label()

        filters = QHBoxLayout()
        for label, w in (
            ("Kind", self.kind),
            ("Memory ≥", self.min_memory),
            ("Price ≤", self.max_price),
            ("Vendor", self.vendor),
        ):
            box = QFormLayout()
            box.addRow(label, w)
            filters.addLayout(box)
        counts = QFormLayout()
        counts.addRow("GPUs per candidate, from", self.min_gpus)
        counts.addRow("to", self.max_gpus)
        custom = QGroupBox("Custom device")
        cl = QHBoxLayout(custom)
        for w in (self.custom_name, self.custom_fp32, self.custom_mem, self.custom_price, self.custom_add):
            cl.addWidget(w)
        layout = QVBoxLayout(self)
        layout.addLayout(filters)
        layout.addWidget(self.list, 1)
        layout.addLayout(counts)
        layout.addWidget(custom)
        layout.addWidget(self.error)

        self._this = QListWidgetItem("This machine (detecting…)")
        self._this.setData(Qt.ItemDataRole.UserRole, THIS_MACHINE)
        self._this.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled)
        self._this.setCheckState(Qt.CheckState.Checked)
        self.list.addItem(self._this)
        for d in catalogue:
            self._add_item(d, checked="4090" in d.name)
        for w in (self.kind, self.vendor):
            w.currentIndexChanged.connect(self._filter)
        for s in (self.min_memory, self.max_price):
            s.valueChanged.connect(self._filter)
        self.list.itemChanged.connect(self.changed)
        self.min_gpus.valueChanged.connect(self.changed)
        self.max_gpus.valueChanged.connect(self.changed)
        self.custom_add.clicked.connect(self.add_custom)

    def _add_item(self, d: DeviceSpec, checked: bool) -> QListWidgetItem:
        mine = d.origin in ("user", "workload")
        item = QListWidgetItem(d.name + (" (yours)" if mine else ""))
        item.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled)
        item.setCheckState(Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
        item.setData(Qt.ItemDataRole.UserRole, d.name)
        item.setData(Qt.ItemDataRole.UserRole + 1, d)
        item.setToolTip(d.source)
        self.list.addItem(item)
        return item

    def set_this_machine(self, device: DeviceSpec) -> None:
        self._this.setText(device.name)
        self._this.setToolTip(device.source)

    def _filter(self) -> None:
        kind, vendor = self.kind.currentData(), self.vendor.currentData()
        for i in range(1, self.list.count()):
            item = self.list.item(i)
            d: DeviceSpec = item.data(Qt.ItemDataRole.UserRole + 1)
            hide = (kind != "all" and d.kind != kind) or (vendor != "all" and d.extra.get("vendor") != vendor)
            marketed_gb = d.extra.get("memory_gb") or (d.memory_bytes or 0) / GIB  # "24 GB" is 24 GiB
            if self.min_memory.value() and marketed_gb < self.min_memory.value():
                hide = True
            if self.max_price.value() and (d.price_usd or 0) > self.max_price.value():
                hide = True
            item.setHidden(hide and item.checkState() != Qt.CheckState.Checked)

    def add_custom(self) -> None:
        entry = {
            "name": self.custom_name.text().strip(),
            "kind": "gpu",
            "fp32_tflops": self.custom_fp32.value(),
            "memory_gb": self.custom_mem.value(),
            "source": "custom device entered in the wizard",
        }
        if self.custom_price.value():
            entry["price_usd"] = self.custom_price.value()
        try:
            entry = normalise_device_entry(entry, "custom device")
            if any(d.name.lower() == entry["name"].lower() for d in self.catalogue) or any(
                c["name"].lower() == entry["name"].lower() for c in self.custom
            ):
                raise TrainRigError(f"custom device: a device named {entry['name']!r} exists; choose another name")
        except TrainRigError as exc:
            self.error.setText(str(exc))
            self.error.setVisible(True)
            return
        self.error.setVisible(False)
        self.custom.append(entry)
        self._add_item(device_from_entry(entry, origin="workload"), checked=True)
        self.custom_name.clear()
        self.changed.emit()

    def selected(self) -> list[str]:
        return [
            self.list.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(self.list.count())
            if self.list.item(i).checkState() == Qt.CheckState.Checked
        ]

    def check(self, name: str, on: bool = True) -> None:
        for i in range(self.list.count()):
            item = self.list.item(i)
            if item.data(Qt.ItemDataRole.UserRole) == name:
                item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)

    def load(self, doc: dict[str, Any]) -> None:
        hw = doc.get("hardware", {})
        gc = hw.get("gpu_count", 1)
        lo, hi = (gc.get("min", 1), gc.get("max", gc.get("min", 1))) if isinstance(gc, dict) else (gc, gc)
        self.min_gpus.setValue(int(lo))
        self.max_gpus.setValue(int(hi))
        for entry in hw.get("custom", []):
            if not any(c["name"] == entry["name"] for c in self.custom):
                self.custom.append(entry)
                self._add_item(device_from_entry({"source": "custom", **entry}, origin="workload"), checked=False)
        wanted = hw.get("candidates")
        if wanted:
            for i in range(self.list.count()):
                item = self.list.item(i)
                name = item.data(Qt.ItemDataRole.UserRole)
                on = any(w.lower() in name.lower() or (w == THIS_MACHINE and name == THIS_MACHINE) for w in wanted)
                item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)

    def store(self, doc: dict[str, Any]) -> None:
        hw = doc.setdefault("hardware", {})
        hw["candidates"] = self.selected()
        hw["gpu_count"] = {"min": self.min_gpus.value(), "max": max(self.min_gpus.value(), self.max_gpus.value())}
        hw["custom"] = list(self.custom)

    def problem(self) -> str | None:
        if not self.selected():
            return "Tick at least one candidate device."
        if self.max_gpus.value() < self.min_gpus.value():
            return "The largest GPU count is below the smallest."
        return None
