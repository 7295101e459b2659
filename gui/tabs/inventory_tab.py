"""Inventory tab: what this machine offers for training, beside the catalogue's datasheet figures."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtGui import QFont, QGuiApplication, QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.errors import TrainRigError
from core.estimate.calibration import what_calibration_applies
from core.hardware.catalogue import DeviceSpec, load_catalogue, match_detected_cpu
from core.storage.store import Store
from core.units import fmt_bytes
from gui.workers import Job, start_job
from telemetry.calibrate import run_calibration, spread_text, stored_calibration
from telemetry.inventory import collect_inventory, inventory_to_text
from telemetry.pytorch_env import TorchEnvironment, find_torch_environment

COLUMNS = ["Item", "Detected", "Datasheet (catalogue)", "Source"]


class InventoryTab(QWidget):
    detected = Signal(dict)
    calibrated = Signal(dict)

    def __init__(self, store: Store | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.inventory: dict[str, Any] | None = None
        self._job: Job | None = None
        self.status = QLabel("Detecting…")
        self.status.setWordWrap(True)  # "Detected in 40 ms · machine fingerprint …" held the window at 1,003 pixels
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("Detect again  [F5]")
        self.copy_text_button = QPushButton("Copy as text")
        self.copy_json_button = QPushButton("Copy as JSON")
        self.save_button = QPushButton("Save snapshot")
        self.save_button.setToolTip("Record this inventory in the database with the machine's fingerprint")
        bar = QHBoxLayout()
        bar.addWidget(self.status, 1)
        for b in (self.refresh_button, self.copy_text_button, self.copy_json_button, self.save_button):
            bar.addWidget(b)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(COLUMNS)
        self.tree.setAlternatingRowColors(True)
        self.tree.header().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.tree.header().setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        self.tree.setColumnWidth(1, 380)
        self.tree.setColumnWidth(2, 260)
        self.torch_status = QLabel("Not checked yet: press Check to find a Python with PyTorch.")
        self.torch_status.setWordWrap(True)
        # room for the calibration summary's three lines: a wrapped label in a row does not grow
        # its box when its text changes
        self.torch_status.setMinimumHeight(self.torch_status.fontMetrics().lineSpacing() * 3 + 4)
        self.torch_status.setToolTip(
            "Local training runs and model tracing run in this Python; TrainRig itself never imports PyTorch"
        )
        self.torch_choose = QPushButton("Choose Python…")
        self.torch_check = QPushButton("Check")
        self.calibrate_button = QPushButton("Calibrate")
        self.calibrate_button.setToolTip(
            "Measure this machine's compute rates, overhead and storage with PyTorch "
            "(about 40 s on two cores); later sizings of this machine's CPU use every measured rate, a GPU only its "
            "measured efficiency (its per-op rates are stored, not applied)"
        )
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)  # busy: the worker reports no fraction
        self.progress.setVisible(False)
        self.calibration: dict | None = None
        self._cal_job: Job | None = None
        torch_box = QGroupBox("PyTorch environment for runs and tracing")
        tb = QHBoxLayout(torch_box)
        tb.addWidget(self.torch_status, 1)
        tb.addWidget(self.torch_choose)
        tb.addWidget(self.torch_check)
        tb.addWidget(self.calibrate_button)
        tb.addWidget(self.progress)
        self.torch_env: TorchEnvironment | None = None
        self._torch_job: Job | None = None
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.tree)
        layout.addWidget(torch_box)
        self.torch_choose.clicked.connect(self._choose_python)
        self.torch_check.clicked.connect(self.check_torch)
        self.calibrate_button.clicked.connect(self.calibrate)
        self.refresh_button.clicked.connect(self.refresh)
        self.copy_text_button.clicked.connect(self.copy_text)
        self.copy_json_button.clicked.connect(self.copy_json)
        self.save_button.clicked.connect(self.save_snapshot)
        QShortcut(QKeySequence(Qt.Key.Key_F5), self, self.refresh)
        self._set_busy(True)
        self.refresh()  # the PyTorch check runs on demand: importing PyTorch takes seconds

    # --- the Python with PyTorch ----------------------------------------------------------------
    def check_torch(self, python: str | None = None) -> None:
        if self._torch_job is not None:
            return
        preferred = python or QSettings().value("pytorch/python") or None
        self.torch_status.setText(f"Checking {'the chosen Python' if preferred else 'for a Python with PyTorch'}…")
        self._torch_job = start_job(
            lambda: find_torch_environment(preferred), self._torch_checked, lambda msg: self._torch_checked(None, msg)
        )

    def _torch_checked(self, env: TorchEnvironment | None, error: str = "") -> None:
        self._torch_job = None
        self.torch_env = env
        if env is None:
            self.torch_status.setText(f"PyTorch check failed: {error}")
        elif env.ok:
            self.torch_status.setText(f"✓ {env.python}: {env.message}")
        else:
            self.torch_status.setText(f"✗ {env.message}")

    def calibrate(self) -> None:
        """Run the calibration off the GUI thread; the result is stored for this machine."""
        if self._cal_job is not None or self.inventory is None:
            return
        python = QSettings().value("pytorch/python") or None
        fingerprint = self.inventory["fingerprint"]
        self.progress.setVisible(True)
        self.calibrate_button.setEnabled(False)
        self.torch_status.setText("Calibrating this machine with PyTorch…")

        def work() -> dict:
            env = find_torch_environment(python)
            if not env.ok:
                raise TrainRigError(env.message)
            return run_calibration(env.python)

        self._cal_job = start_job(work, lambda result: self._calibrated(result, fingerprint), self._calibration_failed)

    def _calibrated(self, result: dict, fingerprint: str) -> None:
        self._cal_job = None
        self.progress.setVisible(False)
        self.calibrate_button.setEnabled(True)
        self.calibration = result
        used = result
        if self.store is not None:
            self.store.save_calibration(fingerprint, result)
            used = stored_calibration(self.store, fingerprint) or result
        text = f"Calibrated in {result['seconds']} s: {calibration_summary(result)}"
        if used.get("rounds", 1) > 1:
            text += f" Sizings use the {spread_text(used)}."
        if result.get("unsteady"):
            text += f" {result['unsteady']}"
        self.torch_status.setText(text)
        self.calibrated.emit(used)

    def show_stored_calibration(self, fingerprint: str) -> None:
        """At start: the calibration this machine's sizings use, stored by an earlier session."""
        if self.store is None or self.calibration is not None or self._cal_job is not None:
            return
        try:
            stored = stored_calibration(self.store, fingerprint)
        except TrainRigError:
            return  # the database's own message is shown where it is opened
        if stored is None:
            return
        when = str(stored.get("measured_at", ""))[:16].replace("T", " ")
        try:
            summary = calibration_summary(stored)
        except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError):
            self.torch_status.setText(
                f"The calibration stored for this machine ({when + ' UTC' if when else 'an earlier session'}) is "
                "from an older version of TrainRig: calibrate again to refresh it."
            )
            return
        if stored.get("rounds", 1) > 1:
            self.torch_status.setText(
                f"Using the {spread_text(stored)} (the latest of {when + ' UTC' if when else 'an earlier session'}, "
                f"stored for this machine): {summary} Calibrate again to add a round."
            )
            return
        self.torch_status.setText(
            f"Using the calibration of {when + ' UTC' if when else 'an earlier session'} (stored for this machine): "
            f"{summary} Calibrate again to measure afresh."
        )

    def _calibration_failed(self, message: str) -> None:
        self._cal_job = None
        self.progress.setVisible(False)
        self.calibrate_button.setEnabled(True)
        self.torch_status.setText(f"✗ Calibration failed: {message}")

    def _choose_python(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose the Python with PyTorch", "", "Python (python*);;All (*)")
        if path:
            QSettings().setValue("pytorch/python", path)
            self.check_torch(path)

    # --- detection off the GUI thread ----------------------------------------------------------
    def refresh(self) -> None:
        if self._job is not None:
            return
        self._set_busy(True)
        self.status.setText("Detecting this machine…")
        self._job = start_job(collect_inventory, self._show, self._failed)

    def _set_busy(self, busy: bool) -> None:
        for b in (self.refresh_button, self.copy_text_button, self.copy_json_button, self.save_button):
            b.setEnabled(not busy)

    def _failed(self, message: str) -> None:
        self._job = None
        self._set_busy(False)
        self.status.setText(f"Detection failed: {message}")

    def _show(self, inv: dict[str, Any]) -> None:
        self._job = None
        self.inventory = inv
        self._set_busy(False)
        self.status.setText(
            f"Detected in {inv['collect_seconds'] * 1000:.0f} ms · machine fingerprint {inv['fingerprint']} · "
            f"{len(inv['unknown'])} figure(s) unknown (hover for why)"
        )
        self.tree.clear()
        catalogue = load_catalogue()
        self._cpu(inv, match_detected_cpu(inv["cpu"].get("model") or "", catalogue))
        self._memory(inv)
        self._storage(inv)
        self._gpus(inv, catalogue)
        self._software(inv)
        self.tree.expandAll()
        self.show_stored_calibration(inv["fingerprint"])
        self.detected.emit(inv)

    # --- sections -----------------------------------------------------------------------------
    def _section(self, title: str) -> QTreeWidgetItem:
        item = QTreeWidgetItem([title])
        f = item.font(0)
        f.setBold(True)
        item.setFont(0, f)
        self.tree.addTopLevelItem(item)
        return item

    def _row(
        self,
        parent: QTreeWidgetItem,
        label: str,
        inv: dict[str, Any],
        path: str | None,
        text: str | None,
        datasheet: str = "",
    ) -> QTreeWidgetItem:
        reason = inv["unknown"].get(path or "", "")
        if text is None:
            item = QTreeWidgetItem([label, "unknown", datasheet, reason])
            font = QFont(item.font(1))
            font.setItalic(True)
            item.setFont(1, font)
            item.setForeground(1, self.palette().color(QPalette.ColorRole.PlaceholderText))
            item.setToolTip(1, reason)
        else:
            item = QTreeWidgetItem([label, text, datasheet, inv["sources"].get(path or "", "")])
        item.setToolTip(3, item.text(3))
        parent.addChild(item)
        return item

    def _cpu(self, inv: dict[str, Any], match: DeviceSpec | None) -> None:
        cpu = inv["cpu"]
        s = self._section("CPU")
        cat = match.extra if match else {}
        self._row(s, "Model", inv, "cpu.model", cpu.get("model"), match.name if match else "no catalogue entry")
        self._row(s, "Sockets", inv, "cpu.sockets", _str(cpu.get("sockets")))
        self._row(
            s,
            "Physical cores",
            inv,
            "cpu.physical_cores",
            _str(cpu.get("physical_cores")),
            _str(cat.get("cores")) if match else "",
        )
        self._row(
            s,
            "Logical cores",
            inv,
            "cpu.logical_cores",
            _str(cpu.get("logical_cores")),
            _str(cat.get("threads")) if match else "",
        )
        self._row(s, "Usable cores", inv, "cpu.usable_cores", _str(cpu.get("usable_cores")))
        for key, label, cat_key in (
            ("base_clock_mhz", "Base clock", "base_clock_mhz"),
            ("max_clock_mhz", "Max clock", "boost_clock_mhz"),
            ("current_clock_mhz", "Current clock", None),
        ):
            v = cpu.get(key)
            ds = f"{cat[cat_key]:,} MHz" if match and cat_key and cat.get(cat_key) else ""
            self._row(s, label, inv, f"cpu.{key}", None if v is None else f"{v:,.0f} MHz", ds)
        self._row(s, "ML instruction sets", inv, "cpu.flags", ", ".join(cpu.get("flags") or []) or "none")
        self._row(s, "TLB", inv, "cpu.tlb", cpu.get("tlb"))
        for c in cpu.get("caches") or []:
            self._row(
                s,
                f"L{c['level']} {c['type'].lower()}",
                inv,
                "cpu.caches",
                f"{fmt_bytes(c['size_bytes'])} × {c['instances']} (each shared by {c['shared_by']} CPUs)",
                f"{cat.get('l3_cache_mb')} MB" if match and c["level"] == 3 else "",
            )
        for n in inv.get("numa_nodes") or []:
            self._row(
                s, f"NUMA node {n['node']}", inv, "numa_nodes", f"{n['cpus']} CPUs, {fmt_bytes(n['memory_bytes'])}"
            )

    def _memory(self, inv: dict[str, Any]) -> None:
        mem = inv["memory"]
        s = self._section("Memory")
        self._row(s, "Total", inv, "memory.total_bytes", _bytes(mem.get("total_bytes")))
        self._row(s, "Available", inv, "memory.available_bytes", _bytes(mem.get("available_bytes")))
        self._row(s, "Type", inv, "memory.type", mem.get("type"))
        self._row(
            s, "Speed", inv, "memory.speed_mts", None if mem.get("speed_mts") is None else f"{mem['speed_mts']} MT/s"
        )
        slots = None if mem.get("slots") is None else f"{mem['populated_slots']} of {mem['slots']} populated"
        self._row(s, "Slots", inv, "memory.slots", slots)
        self._row(s, "Channels", inv, "memory.channels", _str(mem.get("channels")))
        self._row(s, "Swap", inv, "swap", _bytes((inv.get("swap") or {}).get("total_bytes")))

    def _storage(self, inv: dict[str, Any]) -> None:
        s = self._section("Storage")
        for d in inv.get("disks") or []:
            mps = ", ".join(d["mount_points"]) or "not mounted"
            free = f", {fmt_bytes(d['free_bytes'])} free" if d.get("free_bytes") is not None else ""
            item = self._row(
                s,
                d["device"],
                inv,
                "disks",
                f"{d['type']} {d.get('model') or ''} · {fmt_bytes(d['size_bytes'])} · {mps}{free}",
            )
            item.setToolTip(1, d["rotational_caveat"])
        for r in inv.get("raid") or []:
            health = {True: "healthy", False: "DEGRADED", None: "state unknown"}[r["healthy"]]
            self._row(s, r["device"], inv, "raid", f"{r['level']} of {', '.join(r['members'])}, {health}")
        for r in inv.get("ramdisks") or []:
            if not r.get("system"):
                where = r.get("mount_point") or r.get("device")
                self._row(s, f"RAM disk {where}", inv, "ramdisks", f"{r['kind']}, {fmt_bytes(r['size_bytes'])}")

    def _gpus(self, inv: dict[str, Any], catalogue: tuple[DeviceSpec, ...]) -> None:
        s = self._section("GPUs")
        if not inv.get("gpus"):
            item = self._row(s, "NVIDIA GPUs", inv, "gpus", "none")
            item.setText(3, inv.get("gpu_note", ""))
            item.setToolTip(3, item.text(3))
            return
        by_name = {d.name: d for d in catalogue}
        for g in inv["gpus"]:
            match = by_name.get(g.get("catalogue_match") or "")
            cat = match.extra if match else {}
            p = f"gpus[{g['index']}]"
            head = self._row(
                s, f"GPU {g['index']}", inv, f"{p}.name", g.get("name"), match.name if match else "no catalogue entry"
            )
            rows = [
                ("Memory", "memory_bytes", _bytes(g.get("memory_bytes")), _bytes(cat.get("memory_bytes"))),
                ("Architecture", "architecture", g.get("architecture"), cat.get("architecture", "")),
                (
                    "Compute capability",
                    "compute_capability",
                    g.get("compute_capability"),
                    cat.get("compute_capability", ""),
                ),
                ("CUDA cores", "cuda_cores", _str(g.get("cuda_cores")), _str(cat.get("cuda_cores"))),
                (
                    "Max SM clock",
                    "max_sm_clock_mhz",
                    _unit(g.get("max_sm_clock_mhz"), "MHz"),
                    _unit(cat.get("boost_clock_mhz"), "MHz"),
                ),
                (
                    "Memory bandwidth",
                    "memory_bandwidth_gbs",
                    _unit(g.get("memory_bandwidth_gbs"), "GB/s"),
                    _unit(cat.get("memory_bandwidth_gbs"), "GB/s"),
                ),
                (
                    "PCIe",
                    "pcie_generation",
                    None
                    if g.get("pcie_generation") is None
                    else f"gen {g['pcie_generation']} ×{g.get('pcie_width')} (max gen {g.get('pcie_max_generation')} "
                    f"×{g.get('pcie_max_width')})",
                    cat.get("interconnect", ""),
                ),
                ("NVLink links active", "nvlinks_active", _str(g.get("nvlinks_active")), ""),
                ("Power limit", "power_limit_w", _unit(g.get("power_limit_w"), "W"), _unit(cat.get("tdp_w"), "W")),
                (
                    "MIG",
                    "mig_enabled",
                    None if g.get("mig_enabled") is None else ("on" if g["mig_enabled"] else "off"),
                    "",
                ),
            ]
            for label, key, text, ds in rows:
                self._row(head, label, inv, f"{p}.{key}", text, ds if match else "")
        drv = inv.get("gpu_driver") or {}
        self._row(s, "Driver", inv, "gpu_driver.version", drv.get("version"))
        self._row(s, "CUDA (driver)", inv, "gpu_driver.cuda_version", drv.get("cuda_version"))

    def _software(self, inv: dict[str, Any]) -> None:
        sw = inv.get("software") or {}
        s = self._section("Software")
        self._row(s, "Operating system", inv, "software.os", sw.get("os"))
        self._row(s, "Python", inv, "software.python", sw.get("python"))
        self._row(s, "PyTorch", inv, "software.pytorch", sw.get("pytorch"))
        self._row(s, "PyTorch CUDA", inv, "software.pytorch_cuda", sw.get("pytorch_cuda"))
        self._row(s, "cuDNN", inv, "software.cudnn", sw.get("cudnn"))
        blas = sw.get("blas")
        text = None if not blas else "; ".join(f"{b['api']} {b['version']}, {b['threads']} threads" for b in blas)
        self._row(s, "BLAS", inv, "software.blas", text)

    # --- actions ------------------------------------------------------------------------------
    def copy_text(self) -> None:
        if self.inventory:
            QGuiApplication.clipboard().setText(inventory_to_text(self.inventory))
            self.status.setText("Copied the inventory as text.")

    def copy_json(self) -> None:
        if self.inventory:
            QGuiApplication.clipboard().setText(json.dumps(self.inventory, indent=2, default=str))
            self.status.setText("Copied the inventory as JSON.")

    def save_snapshot(self) -> None:
        if self.inventory is None:
            return
        if self.store is None:
            self.status.setText("No database is open: the snapshot cannot be saved.")
            return
        sid = self.store.save_inventory(self.inventory)
        self.status.setText(f"Saved snapshot #{sid} (fingerprint {self.inventory['fingerprint']}).")


def _str(v: Any) -> str | None:
    return None if v is None else f"{v:,}" if isinstance(v, int) else str(v)


def _bytes(v: Any) -> str | None:
    return None if v is None else fmt_bytes(v)


def _unit(v: Any, unit: str) -> str | None:
    return None if v is None else f"{v:,} {unit}"


def calibration_summary(result: dict[str, Any]) -> str:
    """What a calibration measured, in one paragraph: layer rates, elementwise costs, overhead per op
    and what the sizings apply it to."""
    prof = result.get("cpu_profile") or {}
    small = ""
    if prof:
        lin, conv = prof["linear_train"], prof["conv_train"]
        small = (
            f" (small layers: {lin[0][1] / 1e9:,.0f} and {conv[0][1] / 1e9:,.0f}); elementwise layers "
            f"{min(prof['elementwise_s'].values()) * 1e9:.1f}–{max(prof['elementwise_s'].values()) * 1e9:.1f} "
            "ns per element"
        )
    return (
        f"training steps reach {result['cpu_linear_train_flops'] / 1e9:,.0f} GFLOP/s on linear and "
        f"{result['cpu_conv_train_flops'] / 1e9:,.0f} on convolutional layers{small}; "
        f"{result['step_overhead']['per_op_s'] * 1e6:,.1f} µs per op. {what_calibration_applies(result)}"
    )
