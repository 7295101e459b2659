"""Asks for a one-factor experiment (Finocchiaro, Tables 4.1–4.5): the base workload, the field to
vary and its values, the repeats. Every value is checked with the workload's rules before the
dialog closes, so a bad one is refused here, with its reason, and nothing runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from core.errors import TrainRigError
from core.spec.experiment import MAX_RUNS, Factor, Variant, expand, parse_vary
from core.spec.workload import read_workload_document

# the paper's factors, with values to start from (Finocchiaro varied these on the seed MLP)
FACTORS = {
    "batch_size": "64,128,256,512",
    "depth": "1,2,3,4",
    "width": "32,64,128,256",
    "activation": "relu,leaky_relu,tanh,sigmoid",
    "optimizer": "sgd,adam",
    "learning_rate": "0.0001,0.001,0.01",
    "epochs": "1,2,4",
    "precision": "fp32,bf16",
}


@dataclass(frozen=True)
class ExperimentRequest:
    name: str
    document: dict[str, Any]
    factor: Factor
    variants: tuple[Variant, ...]
    repeats: int


class ExperimentDialog(QDialog):
    def __init__(self, wizard_document: dict[str, Any] | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("One-factor experiment")
        self.wizard_document = wizard_document
        self.request: ExperimentRequest | None = None
        self.file: Path | None = None
        self.source = QComboBox()
        if wizard_document is not None:
            self.source.addItem(f"The Sizing wizard's workload ({wizard_document.get('name') or 'unnamed'})", "wizard")
        self.source.addItem("A workload file…", "file")
        self.source.currentIndexChanged.connect(self._source_changed)
        self.browse = QPushButton("Choose…")
        self.browse.clicked.connect(self._choose_file)
        source_row = QHBoxLayout()
        source_row.addWidget(self.source, 1)
        source_row.addWidget(self.browse)
        self.field = QComboBox()
        self.field.setEditable(True)
        self.field.addItems(list(FACTORS))
        self.field.setToolTip(
            "One of Finocchiaro's factors (depth and width: the MLP's hidden blocks; activation: theirs), or any "
            "workload field by its path, e.g. data.samples or training.weight_decay"
        )
        self.values = QLineEdit(FACTORS["batch_size"])
        self.values.setToolTip("Two values or more, separated by commas; numbers, true/false or names")
        self.field.currentTextChanged.connect(lambda f: f in FACTORS and self.values.setText(FACTORS[f]))
        self.repeats = QSpinBox()
        self.repeats.setRange(1, 20)
        self.repeats.setToolTip("Runs per value, with seeds 0, 1, …: the summary gives mean ± spread")
        self.message = QLabel(
            "Each value is sized on this machine and trained in turn with the Telemetry tab's epochs, samples and "
            "device, repeat r of every value with seed r. Each run is stored with its telemetry; the experiment "
            "groups them."
        )
        self.message.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Workload", source_row)
        form.addRow("Vary", self.field)
        form.addRow("Values", self.values)
        form.addRow("Repeats", self.repeats)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Start")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.message)
        layout.addWidget(buttons)
        self._source_changed()
        self.resize(560, self.sizeHint().height())

    def _source_changed(self) -> None:
        self.browse.setEnabled(self.source.currentData() == "file")

    def _choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Base workload", "", "Workload (*.json);;All files (*)")
        if path:
            self.file = Path(path)
            self.source.setItemText(self.source.count() - 1, f"{self.file.name}")

    def document(self) -> dict[str, Any]:
        if self.source.currentData() == "wizard" and self.wizard_document is not None:
            return dict(self.wizard_document)
        if self.file is None:
            raise TrainRigError("choose the workload file to vary (Choose…)")
        doc = read_workload_document(self.file)
        if not isinstance(doc, dict):
            raise TrainRigError(f"{self.file.name}: a workload is a JSON object")
        return doc

    def check(self) -> ExperimentRequest:
        """The experiment asked for, every value checked; TrainRigError naming the first problem."""
        document = self.document()
        factor = parse_vary(f"{self.field.currentText().strip()}={self.values.text()}")
        variants = tuple(expand(document, factor))
        repeats = self.repeats.value()
        if len(variants) * repeats > MAX_RUNS:
            raise TrainRigError(f"{len(variants)} values × {repeats} repeats is over {MAX_RUNS} runs")
        return ExperimentRequest(str(document.get("name") or "workload"), document, factor, variants, repeats)

    def accept(self) -> None:
        try:
            self.request = self.check()
        except TrainRigError as exc:
            self.message.setText(f"Not started: {exc}")
            self.message.setStyleSheet("color: #d9534f")
            return
        super().accept()
