"""The form pages: goal, data, training."""

from __future__ import annotations

import datetime as dt
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from core.errors import WorkloadError
from core.spec.large import CHECKPOINT_POLICIES, CHECKPOINT_TEXT
from core.spec.loop import DEFAULT_FILE_WORKERS, LOOP_STYLES
from core.spec.workload import DATA_FORMATS, MAX_SAMPLES, PURPOSES, STORAGE_TIERS, parse_workload
from core.vocabulary import INPUT_DTYPES, OPTIMIZER_STATES, PRECISION_BYTES, SHARDINGS
from gui.wizard.base import WizardPage, combo, dspin, error_label, set_combo, set_value, spin
from gui.wizard.large_form import LargeModelGroup

USE_KINDS = ("runs", "hours_per_year")
USE_LABELS = {"runs": "Runs of this training", "hours_per_year": "Hours of training a year"}
PURPOSE_LABELS = {
    "scratch": "Train from scratch",
    "finetune": "Fine-tune a trained model",
    "hpo": "Hyperparameter study (many runs)",
    "reverse_engineering": "Reverse-engineer an overfitted model",
}
LOOP_CHOICES = ("auto", *LOOP_STYLES)
LOOP_LABELS = {
    "auto": "As the data suggests",
    "device_tensors": "Tensors already on the GPU",
    "dataloader": "DataLoader over data in memory",
    "dataloader_files": "DataLoader that decodes files",
}
LOOP_TIPS = {
    "auto": "A DataLoader that decodes files for JPEG, PNG and TIFF data, else a DataLoader over in-memory data "
    "with no worker processes and loss.item() every step (as PyTorch's tutorials write it)",
    "device_tensors": "The whole dataset (or random tensors) already on the GPU and sliced there: no DataLoader, "
    "no copy — what benchmarks measure",
    "dataloader": "DataLoader(Dataset in RAM, batch_size, shuffle=True): indexing and collating each sample in the "
    "main process (no workers) or in worker processes, then .to(device)",
    "dataloader_files": "DataLoader whose workers read and decode files (JPEG, PNG…): decoding is the input "
    "pipeline's cost per sample; the main process receives each batch",
}
CHECKPOINT_LABELS = {
    "none": "None",
    "selective": "Selective (cheap ops recomputed)",
    "selective_op": "Selective, torchtitan's per-op policy",
    "full": "Full (per block)",
}
# the smallest network the parser accepts: the Training page checks its own section against it
_PROBE_MODEL = {"input_shape": [1], "layers": [{"type": "linear", "out_features": 1}]}
STORAGE_LABELS = {
    "hdd": "HDD (7,200 rpm)",
    "hdd_10k": "HDD (10,000 rpm)",
    "sata_ssd": "SATA SSD",
    "nvme": "NVMe SSD",
    "ramdisk": "RAM disk (tmpfs)",
    "network": "Network share (1 GbE)",
}


class GoalPage(WizardPage):
    title = "Goal"

    def __init__(self) -> None:
        super().__init__()
        form = QFormLayout(self)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.FieldsStayAtSizeHint)
        self.name = QLineEdit()
        self.name.setToolTip("A name for this workload (reports and the results browser use it)")
        self.purpose = combo(
            PURPOSES,
            "What the training is for: a hyperparameter study and reverse engineering add rules of their own; "
            "fine-tuning is sized as full fine-tuning (every weight trained), the same as from scratch",
            PURPOSE_LABELS,
        )
        self.runs = spin(1, 1000, "Networks training at the same time on one machine (cache and socket rules)")
        self.use_deadline = QCheckBox("Deadline")
        self.deadline = dspin(0.01, 1e7, 2, "Training must finish within this many hours", " h")
        self.use_budget = QCheckBox("Budget")
        self.budget = dspin(1, 1e12, 0, "Hardware budget (capex) in the currency below")
        self.currency = QLineEdit("USD")
        self.currency.setMaxLength(8)
        self.currency.setToolTip("Currency of all money figures; catalogue prices are USD and are converted")
        self.rate = dspin(1e-6, 1e9, 6, "What one US dollar costs in the currency above (catalogue prices are USD)")
        self.rate.setValue(1.0)
        self.rate_date = QLineEdit()
        self.rate_date.setPlaceholderText("YYYY-MM-DD")
        self.rate_date.setToolTip("The day the exchange rate was taken")
        self.use_kind = combo(
            USE_KINDS,
            "What buying is weighed against renting for: a number of runs of this training, or hours of training "
            "a year over the amortisation period",
            USE_LABELS,
        )
        self.use_runs = spin(1, 1_000_000, "Runs of this training you expect (a study of N runs, repeats)")
        self.use_hours = dspin(1, 8760, 0, "Hours of training a year the hardware will be busy", " h/year")
        self.use_hours.setValue(1000)
        self.rent_allowed = QCheckBox("Renting allowed")
        self.rent_allowed.setChecked(True)
        self.rent_allowed.setToolTip(
            "Untick when the data must stay on site: the decision is then to buy, and each candidate's rental "
            "price is shown for comparison only"
        )
        self.use_cloud = QCheckBox("Own cloud price")
        self.cloud = dspin(
            0.0001,
            1e4,
            4,
            "Your price of one device-hour rented, for every candidate (in the currency below); unticked: each "
            "device's dated on-demand price from the catalogue",
        )
        self.cloud.setValue(2.5)
        self.cloud.setEnabled(False)
        self.error = error_label()
        form.addRow("Name", self.name)
        form.addRow("Purpose", self.purpose)
        form.addRow("Concurrent runs", self.runs)
        form.addRow(self.use_deadline, self.deadline)
        form.addRow(self.use_budget, self.budget)
        use_row = QHBoxLayout()
        use_row.addWidget(self.use_kind)
        use_row.addWidget(self.use_runs)
        use_row.addWidget(self.use_hours)
        form.addRow("Expected use", use_row)
        form.addRow(self.use_cloud, self.cloud)
        form.addRow("", self.rent_allowed)
        form.addRow("Currency", self.currency)
        form.addRow("Exchange rate (per USD)", self.rate)
        form.addRow("Rate dated", self.rate_date)
        hint = QLabel(
            "Deadline and budget give each candidate a verdict on the results page; the expected use decides "
            "whether buying or renting costs less."
        )
        hint.setWordWrap(True)  # unwrapped, it held the window at 1,194 pixels or more
        form.addRow(hint)
        form.addRow(self.error)
        for w in (self.name, self.currency, self.rate_date):
            w.textChanged.connect(self.changed)
        self.currency.textChanged.connect(self._rate_enabled)
        for s in (self.runs, self.deadline, self.budget, self.rate, self.use_runs, self.use_hours, self.cloud):
            s.valueChanged.connect(self.changed)
        self.rent_allowed.toggled.connect(self.changed)
        self.use_kind.currentIndexChanged.connect(self._use_enabled)
        self.use_kind.currentIndexChanged.connect(self.changed)
        self.purpose.currentIndexChanged.connect(self.changed)
        boxes = ((self.use_deadline, self.deadline), (self.use_budget, self.budget), (self.use_cloud, self.cloud))
        for c, target in boxes:
            c.toggled.connect(target.setEnabled)
            c.toggled.connect(self.changed)
        self._use_enabled()

    def load(self, doc: dict[str, Any]) -> None:
        goal, cost = doc.get("goal", {}), doc.get("cost", {})
        self.name.setText(doc.get("name", ""))
        set_combo(self.purpose, goal.get("purpose", "scratch"))
        set_value(self.runs, int(goal.get("concurrent_runs", 1)))
        self.use_deadline.setChecked("deadline_hours" in cost)
        self.deadline.setEnabled("deadline_hours" in cost)
        set_value(self.deadline, float(cost.get("deadline_hours", 24)))
        self.use_budget.setChecked("budget" in cost)
        self.budget.setEnabled("budget" in cost)
        set_value(self.budget, float(cost.get("budget", 10000)))
        self.currency.setText(cost.get("currency", "USD"))
        set_combo(self.use_kind, "hours_per_year" if "hours_per_year" in cost else "runs")
        set_value(self.use_runs, int(cost.get("runs", 1)))
        set_value(self.use_hours, float(cost.get("hours_per_year", 1000)))
        self._use_enabled()
        self.rent_allowed.setChecked(bool(cost.get("rent_allowed", True)))
        self.use_cloud.setChecked("cloud_per_gpu_hour" in cost)
        self.cloud.setEnabled("cloud_per_gpu_hour" in cost)
        set_value(self.cloud, float(cost.get("cloud_per_gpu_hour", 2.5)))
        rate = cost.get("exchange_rate", {})
        set_value(self.rate, float(rate.get("per_usd", 1.0)))
        self.rate_date.setText(str(rate.get("date", "")))
        self._rate_enabled()

    def _use_enabled(self) -> None:
        hours = self.use_kind.currentData() == "hours_per_year"
        self.use_runs.setVisible(not hours)
        self.use_hours.setVisible(hours)

    def _non_usd(self) -> bool:
        return self.currency.text().strip().upper() not in ("", "USD")

    def _rate_enabled(self) -> None:
        for w in (self.rate, self.rate_date):
            w.setEnabled(self._non_usd())

    def store(self, doc: dict[str, Any]) -> None:
        doc["name"] = self.name.text().strip() or "unnamed workload"
        doc["goal"] = {"purpose": self.purpose.currentData(), "concurrent_runs": self.runs.value()}
        cost = doc.setdefault("cost", {})
        cost["currency"] = self.currency.text().strip().upper() or "USD"  # as the workload reads it
        if self._non_usd():
            cost["exchange_rate"] = {"per_usd": self.rate.value(), "date": self.rate_date.text().strip()}
        else:
            cost.pop("exchange_rate", None)
        cost.pop("runs", None)
        cost.pop("hours_per_year", None)
        if self.rent_allowed.isChecked():
            cost.pop("rent_allowed", None)
        else:
            cost["rent_allowed"] = False
        if self.use_kind.currentData() == "hours_per_year":
            cost["hours_per_year"] = self.use_hours.value()
        elif self.use_runs.value() != 1:
            cost["runs"] = self.use_runs.value()
        for key, box, spinbox in (
            ("deadline_hours", self.use_deadline, self.deadline),
            ("budget", self.use_budget, self.budget),
            ("cloud_per_gpu_hour", self.use_cloud, self.cloud),
        ):
            if box.isChecked():
                cost[key] = spinbox.value()
            else:
                cost.pop(key, None)

    def problem(self) -> str | None:
        msg = None if self.currency.text().strip() else "Currency: give its three-letter code, e.g. USD or EUR."
        if msg is None and self._non_usd():
            try:
                dt.date.fromisoformat(self.rate_date.text().strip())
            except ValueError:
                msg = (
                    f"Exchange rate: currency {self.currency.text().strip()} needs the rate per USD and its date "
                    "(YYYY-MM-DD); catalogue prices are USD."
                )
        self.error.setText(msg or "")
        self.error.setVisible(bool(msg))
        return msg


class DataPage(WizardPage):
    title = "Data"

    def __init__(self) -> None:
        super().__init__()
        form = QFormLayout(self)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.FieldsStayAtSizeHint)
        # past a QSpinBox's 32 bits: LAION-5B has 5.8 billion samples
        self.samples = dspin(1, MAX_SAMPLES, 0, "Training samples S (Jamgharyan's S)")
        self.samples.setGroupSeparatorShown(True)
        self.features = QLabel()
        self.features.setToolTip("Elements per input sample N, from the model's input shape")
        self.outputs = spin(1, 1_000_000_000, "Outputs per sample N_M (classes, or one target per position)")
        self.dtype = combo(tuple(INPUT_DTYPES), "Element type of the stored data")
        self.format = combo(DATA_FORMATS, "On-disk format: JPEG is ~10× smaller than raw, PNG ~2× (Panaite & Leba)")
        self.storage = combo(STORAGE_TIERS, "Where the dataset lives: sets the read rate", STORAGE_LABELS)
        self.error = error_label()
        form.addRow("Samples", self.samples)
        form.addRow("Features per sample", self.features)
        form.addRow("Outputs per sample", self.outputs)
        form.addRow("Element type", self.dtype)
        form.addRow("Format on disk", self.format)
        form.addRow("Stored on", self.storage)
        form.addRow(self.error)
        self.samples.valueChanged.connect(self.changed)
        self.outputs.valueChanged.connect(self.changed)
        for c in (self.dtype, self.format, self.storage):
            c.currentIndexChanged.connect(self.changed)

    def load(self, doc: dict[str, Any]) -> None:
        data = doc.get("data", {})
        set_value(self.samples, int(data.get("samples", 10000)))
        set_value(self.outputs, int(data.get("outputs", 10)))
        set_combo(self.dtype, data.get("dtype", "float32"))
        set_combo(self.format, data.get("format", "npy"))
        set_combo(self.storage, data.get("storage", "nvme"))

    def show_features(self, features: int | None) -> None:
        self.features.setText("—" if features is None else f"{features:,} (from the model's input shape)")

    def store(self, doc: dict[str, Any]) -> None:
        data = doc.setdefault("data", {})
        data.update(
            samples=round(self.samples.value()),
            outputs=self.outputs.value(),
            dtype=self.dtype.currentData(),
            format=self.format.currentData(),
            storage=self.storage.currentData(),
        )


class TrainingPage(WizardPage):
    title = "Training"

    def __init__(self) -> None:
        super().__init__()
        # the page scrolls: with the large-model group open it is taller than a 768-pixel screen
        inner = QWidget()
        form = QFormLayout(inner)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(inner)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.FieldsStayAtSizeHint)
        self.batch = spin(1, 100_000_000, "Global batch size, split over the GPUs of a candidate")
        self.epochs = spin(1, 10_000_000, "Epochs E")
        self.optimizer = combo(tuple(OPTIMIZER_STATES), "Optimizer: sets the state kept per parameter")
        self.precision = combo(tuple(PRECISION_BYTES), "fp16/bf16 mixed = torch.autocast; tf32 uses tensor cores")
        self.checkpointing = combo(
            CHECKPOINT_POLICIES,
            "Activation checkpointing: what backward recomputes instead of keeping (docs/sizing.md §4e)",
            CHECKPOINT_LABELS,
        )
        for i, policy in enumerate(CHECKPOINT_POLICIES):
            self.checkpointing.setItemData(i, CHECKPOINT_TEXT[policy], Qt.ItemDataRole.ToolTipRole)
        self.sharding = combo(SHARDINGS, "How data-parallel GPUs share weights, gradients and optimizer state")
        self.nodes = spin(1, 10_000, "Machines, each with the candidate's GPU count")
        self.reserve = dspin(0, 100, 1, "Extra memory: Jamgharyan asks 25–30 % for overfit reverse engineering", " %")
        self.loop = combo(
            LOOP_CHOICES,
            "How your training loop feeds the GPU: on small networks the host (Python, the DataLoader, "
            "synchronisations) sets the step, not the GPU (docs/sizing.md §4b)",
            LOOP_LABELS,
        )
        for i, choice in enumerate(LOOP_CHOICES):
            self.loop.setItemData(i, LOOP_TIPS[choice], Qt.ItemDataRole.ToolTipRole)
        self.workers = spin(0, 1024, "DataLoader num_workers: 0 loads every batch in the training process")
        self.sync_every = spin(
            0, 1_000_000, "Steps between synchronisations (loss.item(), metrics, .cpu()): 1 = every step, 0 = never"
        )
        self.pin_memory = QCheckBox("pin_memory and non_blocking copies")
        self.pin_memory.setToolTip("DataLoader(pin_memory=True) with .to(device, non_blocking=True): the copy overlaps")
        form.addRow("Batch size", self.batch)
        form.addRow("Epochs", self.epochs)
        form.addRow("Optimizer", self.optimizer)
        form.addRow("Precision", self.precision)
        form.addRow("Checkpointing", self.checkpointing)
        form.addRow("Sharding", self.sharding)
        form.addRow("Nodes", self.nodes)
        form.addRow("Memory reserve", self.reserve)
        form.addRow("Training loop", self.loop)
        form.addRow("Loader workers", self.workers)
        form.addRow("Synchronise every", self.sync_every)
        form.addRow("", self.pin_memory)
        self.large = LargeModelGroup()
        form.addRow(self.large)
        self.error = error_label()
        form.addRow(self.error)
        self.large.changed.connect(self.changed)
        for c in (self.precision, self.sharding, self.checkpointing):
            c.currentIndexChanged.connect(self._large_context)
        self._large_context()
        for s in (self.batch, self.epochs, self.nodes, self.reserve, self.workers, self.sync_every):
            s.valueChanged.connect(self.changed)
        for c in (self.optimizer, self.precision, self.sharding, self.loop, self.checkpointing):
            c.currentIndexChanged.connect(self.changed)
        self.pin_memory.toggled.connect(self.changed)
        self.loop.currentIndexChanged.connect(self._loop_enabled)
        self._loop_enabled()

    def _large_context(self) -> None:
        self.large.context_changed(
            self.precision.currentData(), self.sharding.currentData(), self.checkpointing.currentData()
        )

    def problem(self) -> str | None:
        """The parser's message on this page's settings (an invalid combination the controls allow)."""
        doc: dict[str, Any] = {"model": _PROBE_MODEL, "data": {"samples": 1}}
        self.store(doc)
        try:
            parse_workload(doc)
        except WorkloadError as e:
            message = str(e)
        else:
            message = None
        self.error.setText(message or "")
        self.error.setVisible(message is not None)
        return message

    def _loop_enabled(self) -> None:
        style = self.loop.currentData()
        for w in (self.workers, self.sync_every, self.pin_memory):
            w.setEnabled(style != "auto")
        self.workers.setEnabled(style in ("dataloader", "dataloader_files"))
        self.pin_memory.setEnabled(style in ("dataloader", "dataloader_files"))

    def load(self, doc: dict[str, Any]) -> None:
        t = doc.get("training", {})
        set_value(self.batch, int(t.get("batch_size", 32)))
        set_value(self.epochs, int(t.get("epochs", 1)))
        set_combo(self.optimizer, t.get("optimizer", "adam"))
        set_combo(self.precision, t.get("precision", "fp32"))
        ckpt = t.get("checkpointing", False)
        set_combo(self.checkpointing, ckpt if isinstance(ckpt, str) else "full" if ckpt else "none")
        set_combo(self.sharding, t.get("sharding", "none"))
        set_value(self.nodes, int(t.get("nodes", 1)))
        set_value(self.reserve, float(t.get("reserve_percent", 0)))
        loop = t.get("loop")
        loop = {"style": loop} if isinstance(loop, str) else loop if isinstance(loop, dict) else {}
        style = loop.get("style", "auto" if not loop else "dataloader")
        set_combo(self.loop, style)
        set_value(self.workers, int(loop.get("workers", DEFAULT_FILE_WORKERS if style == "dataloader_files" else 0)))
        set_value(self.sync_every, int(loop.get("sync_every", 1)))
        self.pin_memory.setChecked(bool(loop.get("pin_memory", False)))
        self._loop_enabled()
        self._large_context()
        self.large.load(t)

    def store(self, doc: dict[str, Any]) -> None:
        t = doc.setdefault("training", {})
        t.update(
            batch_size=self.batch.value(),
            epochs=self.epochs.value(),
            optimizer=self.optimizer.currentData(),
            precision=self.precision.currentData(),
            # true/false as before; the selective policies by name
            checkpointing={"none": False, "full": True}.get(
                self.checkpointing.currentData(), self.checkpointing.currentData()
            ),
            sharding=self.sharding.currentData(),
            nodes=self.nodes.value(),
            reserve_percent=self.reserve.value(),
        )
        self.large.store(t)
        style = self.loop.currentData()
        old = t.get("loop") if isinstance(t.get("loop"), dict) else {}
        kept = {"log_every": old["log_every"]} if "log_every" in old else {}  # not on the page: kept as written
        if style == "auto":  # no loop written: PyTorch's defaults for the data's format
            t.pop("loop", None)
            return
        loop: dict[str, Any] = {"style": style, "sync_every": self.sync_every.value(), **kept}
        if style != "device_tensors":
            loop.update(workers=self.workers.value(), pin_memory=self.pin_memory.isChecked())
        t["loop"] = loop
