"""Model page: a preset, or a layer list edited row by row with live parameter and FLOP counts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QRadioButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.errors import TrainRigError
from core.network.layers import HANDLERS
from core.network.model import ModelAnalysis, analyze_model
from core.network.presets import load_presets
from core.spec.workload import read_workload_document
from core.units import fmt_count
from core.vocabulary import INPUT_DTYPES
from gui.widgets.flow_layout import flow_row, together
from gui.wizard.base import WizardPage, combo, error_label, set_combo
from gui.workers import Job, start_job
from telemetry.pytorch_env import find_torch_environment
from telemetry.tracer import trace_torch_model


def parse_arguments(text: str) -> dict[str, Any]:
    """'out_features=512, bias=false, kernel_size=[3, 3]' → a dict; values are JSON."""
    args: dict[str, Any] = {}
    depth, start, parts = 0, 0, []
    for i, ch in enumerate(text):
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    for part in parts:
        if not part.strip():
            continue
        if "=" not in part:
            raise ValueError(f"'{part.strip()}' is not name=value")
        key, value = part.split("=", 1)
        try:
            args[key.strip()] = json.loads(value.strip())
        except json.JSONDecodeError:
            raise ValueError(
                f"{key.strip()}: '{value.strip()}' is not a number, true/false, list or \"text\""
            ) from None
    return args


def rows_as_shown(message: str) -> str:
    """A message about ``model.layers[i]`` (the workload's path, counted from 0) as the table shows
    the layer: its row, counted from 1 ("row 1, out_features: …")."""
    text = re.sub(
        r"model\.layers\[(\d+)\](?:\.([\w.\[\]]+))?",
        lambda m: f"row {int(m[1]) + 1}" + (f", {m[2]}" if m[2] else ""),
        message,
    )
    return text[:1].upper() + text[1:]


def format_arguments(layer: dict[str, Any]) -> str:
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in layer.items() if k != "type")


class ModelPage(WizardPage):
    title = "Model"
    preset_imported = Signal()  # Import JSON… brought a preset's model: the wizard applies its data and training

    def __init__(self) -> None:
        super().__init__()
        self.analysis: ModelAnalysis | None = None
        self._problem: str | None = None
        self.unstored: str | None = None  # why what is typed is not in the document (store)
        self.use_preset = QRadioButton("Preset")
        self.use_layers = QRadioButton("Layer list")
        self.use_preset.setChecked(True)
        self.preset = QComboBox()
        for name in load_presets():
            self.preset.addItem(name, name)
        self.preset_info = QLabel()
        self.preset_info.setWordWrap(True)
        self.edit_button = QPushButton("Edit as layers")
        self.edit_button.setToolTip("Copy the preset's layers into the editor to change them")
        self.use_code = QRadioButton("PyTorch code")
        self.use_code.setEnabled(False)
        self.use_code.setToolTip("A model traced from a Python file (Import PyTorch model…)")
        self.torch_button = QPushButton("Import PyTorch model…")
        self.torch_button.setToolTip("Trace a file.py:factory in a separate Python with PyTorch, without real memory")
        self.traced: dict[str, Any] | None = None
        # PyTorch files whose code the user agreed to run this session (ref "file.py:factory" → folder):
        # the Telemetry tab trains only these; a trace in an opened workload file is not among them
        self.trusted_code: dict[str, Path] = {}
        self._trace_job: Job | None = None
        self.import_button = QPushButton("Import JSON…")
        self.import_button.setToolTip(
            "The model of a workload file, or a model object with input_shape and layers (File › Open takes a "
            "workload's data and training too); a preset's model brings its data and training, as choosing it does"
        )
        self.input_shape = QLineEdit("75")
        self.input_shape.setToolTip("Per-sample input shape without the batch: 75, or 3, 224, 224, or 128 tokens")
        self.input_dtype = combo(tuple(INPUT_DTYPES), "float32 for features and images, int64 for token ids")
        self.table = QTableWidget(0, 2)
        self.table.setHorizontalHeaderLabels(["Layer type", "Arguments (PyTorch names)"])
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setToolTip(f"Types: {', '.join(sorted(HANDLERS))}")
        self.add_button, self.remove_button = QPushButton("Add layer"), QPushButton("Remove")
        self.up_button, self.down_button = QPushButton("Up"), QPushButton("Down")
        self.counts = QLabel()
        self.counts.setWordWrap(True)
        self.counts.setToolTip("Parameters as PyTorch counts them; forward FLOPs per sample, 2 per multiply-add")
        self.error = error_label()

        self._modes = QButtonGroup(self)  # one choice, though each sits in its own group of the wrapping row
        for b in (self.use_preset, self.use_layers, self.use_code):
            self._modes.addButton(b)
        top = flow_row(  # wraps in a narrow window: one row held the wizard at 1,181 pixels or more
            together(self.use_preset, self.preset, self.edit_button),
            together(self.use_layers, self.import_button),
            together(self.use_code, self.torch_button),
        )
        shape_row = QFormLayout()
        shape_row.addRow("Input shape", self.input_shape)
        shape_row.addRow("Input type", self.input_dtype)
        buttons = QHBoxLayout()
        for b in (self.add_button, self.remove_button, self.up_button, self.down_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        self.editor = QWidget()
        ed = QVBoxLayout(self.editor)
        ed.setContentsMargins(0, 0, 0, 0)
        ed.addLayout(shape_row)
        ed.addWidget(self.table)
        ed.addLayout(buttons)
        layout = QVBoxLayout(self)
        layout.addWidget(top)
        layout.addWidget(self.preset_info)
        layout.addWidget(self.editor, 1)
        layout.addWidget(self.counts)
        layout.addWidget(self.error)

        self.use_preset.toggled.connect(self._mode_changed)
        self.preset.currentIndexChanged.connect(self._edited)
        self.input_shape.textChanged.connect(self._edited)
        self.input_dtype.currentIndexChanged.connect(self._edited)
        self.table.itemChanged.connect(self._edited)
        self.add_button.clicked.connect(self.add_layer)
        self.remove_button.clicked.connect(self._remove)
        self.up_button.clicked.connect(lambda: self._move(-1))
        self.down_button.clicked.connect(lambda: self._move(1))
        self.edit_button.clicked.connect(self.edit_preset_as_layers)
        self.import_button.clicked.connect(self._import_dialog)
        self.torch_button.clicked.connect(self._torch_dialog)
        self.use_code.toggled.connect(self._mode_changed)
        self._mode_changed()

    # --- document -----------------------------------------------------------------------------
    def load(self, doc: dict[str, Any]) -> None:
        model = doc.get("model", {})
        if "summary" in model and str(model.get("source", "")).startswith("traced"):
            self.traced = dict(model)
            self.use_code.setEnabled(True)
            self.use_code.setChecked(True)
        elif "preset" in model:
            set_combo(self.preset, model["preset"])
            self.use_preset.setChecked(True)
        else:
            self.set_layers(model)
            self.use_layers.setChecked(True)
        self._edited()

    def store(self, doc: dict[str, Any]) -> None:
        """The model into ``doc``; while what is typed cannot be read as a model (a layer's arguments half
        typed), the document keeps the last model that could and ``unstored`` says why (the page shows it;
        saving refuses, closing asks)."""
        try:
            doc["model"] = self.model_document()
        except TrainRigError as exc:
            self.unstored = str(exc)
        else:
            self.unstored = None

    def model_document(self) -> dict[str, Any]:
        if self.use_code.isChecked() and self.traced is not None:
            return dict(self.traced)
        if self.use_preset.isChecked():
            return {"preset": self.preset.currentData()}
        return {"input_shape": self._shape(), "input_dtype": self.input_dtype.currentData(), "layers": self._layers()}

    def problem(self) -> str | None:
        return self._problem

    # --- editing ------------------------------------------------------------------------------
    def set_layers(self, model: dict[str, Any]) -> None:
        """Fill the editor with ``model``'s layers and input, without an edit signal: the caller says when the
        page has changed (``_edited``). An input shape that signalled while a preset was still chosen had the
        preset's architecture drawn over the file's (the seed MLP opened after the Llama example sized Llama)."""
        widgets = (self.table, self.input_shape, self.input_dtype)
        for w in widgets:
            w.blockSignals(True)
        self.table.setRowCount(0)
        for layer in model.get("layers", []):
            self._append_row(str(layer.get("type", "")), format_arguments(layer))
        self.input_shape.setText(", ".join(str(d) for d in model.get("input_shape", [])))
        set_combo(self.input_dtype, model.get("input_dtype", "float32"))
        for w in widgets:
            w.blockSignals(False)

    def edit_preset_as_layers(self) -> None:
        model = load_presets()[self.preset.currentData()]["model"]
        if "layers" not in model:
            self._show_problem("This preset gives only published sizes (no layers) and cannot be edited as layers.")
            return
        self.set_layers(model)
        self.use_layers.setChecked(True)
        self._edited()

    def add_layer(self, layer_type: str = "linear", arguments: str = "out_features=10") -> None:
        self._append_row(layer_type, arguments)
        self._edited()

    def import_file(self, path: Path) -> bool:
        try:
            doc = read_workload_document(path)
        except TrainRigError as exc:
            self._show_problem(f"{path.name}: {exc}")
            return False
        model = doc.get("model", doc) if isinstance(doc, dict) else None
        if not isinstance(model, dict) or not ("layers" in model or "preset" in model):
            self._show_problem(f"{path.name} holds no model (input_shape and layers, or a preset)")
            return False
        try:  # a model the page can show: its layers and input read, or a preset it lists
            if "preset" not in model:
                analyze_model(model)
            elif not isinstance(model["preset"], str) or model["preset"] not in load_presets():
                raise TrainRigError(f"model.preset: unknown preset {model['preset']!r}")
        except TrainRigError as exc:
            self._show_problem(f"{path.name} holds no model the page can show: {exc}")
            return False
        self.load({"model": model})
        if "preset" in model:  # as choosing the preset: its data and training, whichever mode the page was in
            self.preset_imported.emit()
        return True

    def _append_row(self, layer_type: str, arguments: str) -> None:
        r = self.table.rowCount()
        self.table.insertRow(r)
        self.table.setItem(r, 0, QTableWidgetItem(layer_type))
        self.table.setItem(r, 1, QTableWidgetItem(arguments))

    def _remove(self) -> None:
        rows = sorted({i.row() for i in self.table.selectedIndexes()}, reverse=True)
        for r in rows:
            self.table.removeRow(r)
        self._edited()

    def _move(self, delta: int) -> None:
        r = self.table.currentRow()
        target = r + delta
        if r < 0 or not 0 <= target < self.table.rowCount():
            return
        self.table.blockSignals(True)
        for c in range(2):
            a, b = self.table.takeItem(r, c), self.table.takeItem(target, c)
            self.table.setItem(r, c, b)
            self.table.setItem(target, c, a)
        self.table.blockSignals(False)
        self.table.selectRow(target)
        self._edited()

    def _torch_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import PyTorch model", "", "Python (*.py)")
        if not path:
            return
        answer = QMessageBox.warning(
            self,
            "Run this file's code?",
            f"TrainRig will run the code in {Path(path).name} in a separate Python with PyTorch to trace its model "
            "(no real memory is allocated) and, when you run the workload on the Telemetry tab, to train it. "
            "Only import files you trust.",
            QMessageBox.StandardButton.Ok | QMessageBox.StandardButton.Cancel,
        )
        if answer != QMessageBox.StandardButton.Ok:
            return
        factory, ok = QInputDialog.getText(self, "Factory", "Function that returns the nn.Module:", text="make")
        if ok and factory.strip():
            self.trace_file(Path(path), factory.strip())

    def trace_file(self, path: Path, factory: str, training: dict[str, Any] | None = None) -> None:
        """Trace ``path:factory`` off the GUI thread for the current input shape."""
        try:
            shape = self._shape()
        except TrainRigError as exc:
            self._show_problem(str(exc))
            return
        model = {"torch": f"{path.name}:{factory}", "input_shape": shape, "input_dtype": self.input_dtype.currentData()}
        train = training or {"batch_size": 32, "optimizer": "adam"}
        self.trusted_code[f"{path.name}:{factory}"] = path.parent.resolve()
        self._show_problem(None)
        self.counts.setText(f"Tracing {path.name}:{factory} in a separate Python…")
        python = QSettings().value("pytorch/python") or None

        def work() -> dict[str, Any]:
            env = find_torch_environment(python)
            if not env.ok:
                raise TrainRigError(env.message)
            return trace_torch_model(model, train, path.parent, env.python)

        self._trace_job = start_job(work, self._traced, self._trace_failed)

    def _trace_failed(self, message: str) -> None:
        self._trace_job = None
        self._show_problem(message)
        self.changed.emit()

    def _traced(self, summary: dict[str, Any]) -> None:
        self._trace_job = None
        self.traced = summary
        self.use_code.setEnabled(True)
        self.use_code.setChecked(True)
        self._edited()

    def _import_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import model", "", "JSON (*.json)")
        if path:
            self.import_file(Path(path))

    def _mode_changed(self) -> None:
        preset = self.use_preset.isChecked()
        self.preset.setEnabled(preset)
        self.edit_button.setEnabled(preset)
        self.editor.setEnabled(self.use_layers.isChecked())
        self._edited()

    def _shape(self) -> list[Any]:
        """The input shape typed, sizes as numbers (ASCII digits: "²" and "①" count as digits to Python but are
        no size) and names as text, which the model's check then refuses or resolves."""
        out: list[Any] = []
        for part in self.input_shape.text().replace("x", ",").split(","):
            part = part.strip()
            if part.isascii() and part.isdigit():
                if len(part) > 15:
                    raise TrainRigError(f"model.input_shape: {part[:15]}… is larger than any input")
                out.append(int(part))
            elif part:
                out.append(part)
        return out

    def _layers(self) -> list[dict[str, Any]]:
        layers = []
        for r in range(self.table.rowCount()):
            kind = (self.table.item(r, 0).text() if self.table.item(r, 0) else "").strip()
            text = self.table.item(r, 1).text() if self.table.item(r, 1) else ""
            try:
                args = parse_arguments(text)
            except ValueError as exc:
                raise TrainRigError(f"model.layers[{r}]: {exc}") from None
            layers.append({"type": kind, **args})
        return layers

    def _edited(self) -> None:
        preset_doc = load_presets().get(self.preset.currentData() or "", {})
        if self.use_preset.isChecked() and "layers" in preset_doc.get("model", {}):
            self.set_layers(preset_doc["model"])  # the preset's architecture, greyed until edited
        self.preset_info.setText(f"{preset_doc.get('description', '')}  Source: {preset_doc.get('source', '')}")
        self.preset_info.setVisible(self.use_preset.isChecked() or self.use_code.isChecked())
        if self.use_code.isChecked() and self.traced is not None:
            self.preset_info.setText(str(self.traced.get("source", "")))
        try:
            model = self.model_document()
            resolved = preset_doc["model"] if self.use_preset.isChecked() else model
            self.analysis = analyze_model(resolved)
        except TrainRigError as exc:
            self.analysis = None
            self._show_problem(str(exc))
        else:
            a = self.analysis
            self._show_problem(None)
            self.counts.setText(
                f"<b>{a.parameters:,}</b> parameters · forward <b>{fmt_count(a.forward_flops, 'FLOP')}</b> per sample"
                f" · output {list(a.output_shape)}" + (f" · {a.notes[0]}" if a.notes else "")
            )
        self.changed.emit()

    def _show_problem(self, message: str | None) -> None:
        message = rows_as_shown(message) if message else message
        self._problem = message
        self.error.setText(message or "")
        self.error.setVisible(bool(message))
        if message:
            self.counts.setText("")
