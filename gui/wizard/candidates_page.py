"""Candidates page: this machine, catalogue devices (filtered), your own devices, GPU counts."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QInputDialog,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
)

from core.errors import CatalogueError, TrainRigError
from core.hardware.candidates import THIS_MACHINE
from core.hardware.catalogue import GIB, DeviceSpec, device_from_entry, find_device, normalise_device_entry
from gui.wizard.base import WizardPage, combo, dspin, error_label, set_value, spin


class CandidatesPage(WizardPage):
    title = "Candidates"

    def __init__(self, catalogue: tuple[DeviceSpec, ...]) -> None:
        super().__init__()
        self.catalogue = catalogue
        self.custom: list[dict[str, Any]] = []
        self.unmatched: list[str] = []  # the last document's candidate names that tick no single device
        self.kind = combo(("all", "gpu", "tpu", "accelerator", "cpu"), "Show only this kind of device")
        self.min_memory = dspin(0, 1000, 0, "Hide devices with less memory than this", " GB")
        self.min_memory.setSpecialValueText("any")
        self.max_price = dspin(0, 1e6, 0, "Hide devices whose purchase price is above this", " USD")
        self.max_price.setSpecialValueText("no limit")
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
        self.prices: dict[str, float] = {}  # the user's price per device, in the workload's currency
        self.price_button = QPushButton("Your price…")
        self.price_button.setToolTip(
            "Set what one of the highlighted device costs you (a vendor's quote, in the workload's currency): it "
            "replaces the catalogue's street or launch price, which are dated estimates"
        )
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
        under = QHBoxLayout()
        under.addLayout(counts)
        under.addStretch(1)
        under.addWidget(self.price_button)
        layout.addLayout(under)
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
        self.price_button.clicked.connect(self._price_dialog)
        self.list.currentItemChanged.connect(lambda *_: self._price_enabled())
        self._price_enabled()

    def _price_enabled(self) -> None:
        item = self.list.currentItem()
        self.price_button.setEnabled(item is not None and item.data(Qt.ItemDataRole.UserRole) != THIS_MACHINE)

    def _price_dialog(self) -> None:
        item = self.list.currentItem()
        if item is None or item.data(Qt.ItemDataRole.UserRole) == THIS_MACHINE:
            return
        name = item.data(Qt.ItemDataRole.UserRole)
        value, ok = QInputDialog.getDouble(
            self,
            "Your price",
            f"What one {name} costs you, in the workload's currency (0: use the catalogue's estimate):",
            self.prices.get(name, 0.0),
            0,
            1e9,
            0,
        )
        if ok:
            self.set_price(name, value or None)

    def set_price(self, name: str, price: float | None) -> None:
        """Your price for one ``name`` device (None: back to the catalogue's estimate)."""
        if price:
            self.prices[name] = float(price)
        else:
            self.prices.pop(name, None)
        for i in range(self.list.count()):
            item = self.list.item(i)
            if item.data(Qt.ItemDataRole.UserRole) == name:
                self._label(item)
        self.changed.emit()

    def _label(self, item: QListWidgetItem) -> None:
        d: DeviceSpec = item.data(Qt.ItemDataRole.UserRole + 1)
        price = self.prices.get(d.name)
        bought = d.purchase_price()
        if price:
            shown = f"your price {price:,.0f}"
        elif bought is not None:
            shown = f"{bought[1]} {bought[0]:,.0f} USD" + (f", {bought[2]}" if bought[2] else "")
        else:
            shown = "not sold"
        item.setText(d.name + (" (yours)" if d.origin in ("user", "workload") else "") + f" — {shown}")
        estimate = "" if price else " (an estimate; set your own with Your price…)"
        item.setToolTip(f"{d.source}\n\nPrice: {shown}{estimate}")

    def _add_item(self, d: DeviceSpec, checked: bool) -> QListWidgetItem:
        item = QListWidgetItem(d.name)
        item.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled)
        item.setCheckState(Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
        item.setData(Qt.ItemDataRole.UserRole, d.name)
        item.setData(Qt.ItemDataRole.UserRole + 1, d)
        self._label(item)
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
            bought = d.purchase_price()
            if self.max_price.value() and (bought[0] if bought else 0) > self.max_price.value():
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
        set_value(self.min_gpus, int(lo))
        set_value(self.max_gpus, int(hi))
        # the document's own custom devices replace the last document's (they carried over into the next file)
        old = {c["name"] for c in self.custom}
        for i in reversed(range(self.list.count())):
            if self.list.item(i).data(Qt.ItemDataRole.UserRole) in old:
                self.list.takeItem(i)
        self.custom = []
        for i, written in enumerate(hw.get("custom", [])):
            # as the workload's parser reads it (a GPU unless it says otherwise): "kind" missing raised KeyError
            entry = normalise_device_entry(written, f"hardware.custom[{i}]")
            if not any(c["name"] == entry["name"] for c in self.custom):
                self.custom.append(entry)
                self._add_item(device_from_entry({"source": "custom", **entry}, origin="workload"), checked=False)
        self.prices = {str(k): float(v) for k, v in (hw.get("prices") or {}).items()}
        for i in range(1, self.list.count()):
            self._label(self.list.item(i))
        self.unmatched = []
        wanted = hw.get("candidates")
        if wanted:
            items = [self.list.item(i) for i in range(self.list.count())]
            devices = [d for d in (item.data(Qt.ItemDataRole.UserRole + 1) for item in items) if d is not None]
            on = set()
            for w in wanted:  # as `size` finds them: the exact name, else the one name it is part of
                if str(w) == THIS_MACHINE:
                    on.add(THIS_MACHINE)
                    continue
                try:
                    on.add(find_device(str(w), devices).name)
                except CatalogueError as exc:  # "NVIDIA A10" once also ticked both A100s; now said, none ticked
                    self.unmatched.append(f"hardware.candidates: {exc}")
            names = [item.data(Qt.ItemDataRole.UserRole) for item in items]
            for i, name in enumerate(names):
                self.list.item(i).setCheckState(Qt.CheckState.Checked if name in on else Qt.CheckState.Unchecked)

    def store(self, doc: dict[str, Any]) -> None:
        hw = doc.setdefault("hardware", {})
        hw["candidates"] = self.selected()
        hw["gpu_count"] = {"min": self.min_gpus.value(), "max": max(self.min_gpus.value(), self.max_gpus.value())}
        hw["custom"] = list(self.custom)
        if self.prices:
            hw["prices"] = dict(self.prices)
        else:
            hw.pop("prices", None)

    def problem(self) -> str | None:
        if not self.selected():
            return "Tick at least one candidate device."
        if self.max_gpus.value() < self.min_gpus.value():
            return "The largest GPU count is below the smallest."
        return None
