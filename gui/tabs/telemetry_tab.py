"""The Telemetry tab: train a workload on this machine and watch it live — CPU, RAM, GPU load,
VRAM, temperature and power beside the loss, accuracy and step time, with the sizing's prediction
drawn as reference lines and compared with the measurement when the run ends.

The run (telemetry.runs.Run) lives in its own threads and child process; this tab only reads its
ring buffer and latest message from a timer at 15 Hz."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from core.errors import TrainRigError
from core.spec.workload import parse_workload, read_workload_document
from core.storage.store import Store
from gui.tabs.telemetry_experiment import ExperimentActions, ExperimentRunner
from gui.widgets.flow_layout import flow_row, labelled
from gui.widgets.message import fit_message
from gui.widgets.telemetry_plots import TelemetryPlots
from gui.workers import Job, start_job
from telemetry.pytorch_env import find_torch_environment
from telemetry.runs import Run
from telemetry.training import size_here, this_machine_prediction, trainer_spec, training_run

FRAME_MS = 66  # ~15 frames/s: the GUI thread reads the buffer, it never gets a signal per sample


class TelemetryTab(ExperimentActions, QWidget):
    experiment_saved = Signal(int)  # an experiment was stored: the Results tab lists it
    show_result = Signal(str, int)  # the user asked to see a result (kind, id) in the Results tab

    def __init__(
        self,
        store: Store | None,
        wizard: Any = None,
        python_for_runs: Callable[[], str | None] = lambda: None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.store = store
        self.wizard = wizard
        self.python_for_runs = python_for_runs
        self.run: Run | None = None
        self.experiment: ExperimentRunner | None = None
        self.experiment_progress: tuple[int, int, str] | None = None
        self.last_experiment: int | None = None
        self.last_document: Any = None
        self._job: Job | None = None
        self._drawn_at: tuple[int, int, bool] | None = None
        self.frames = 0
        self.points_drawn = 0

        self.start_wizard = QPushButton("Run the wizard's workload")
        self.start_wizard.setToolTip("Train the workload of the Sizing wizard here, compared with its prediction")
        self.start_wizard.clicked.connect(self.run_wizard_workload)
        self.start_wizard.setEnabled(wizard is not None)
        self.start_file = QPushButton("Run a file…")
        self.start_file.clicked.connect(self.run_file_dialog)
        self.start_last = QPushButton("Run the last again")
        self.start_last.clicked.connect(self.run_last)
        self.start_experiment_button = QPushButton("Experiment…")
        self.start_experiment_button.setToolTip(
            "A one-factor experiment as Finocchiaro's Tables 4.1–4.5: vary one field (batch size, depth, width, "
            "activation, optimizer, learning rate, … or any workload field) over values you give, each trained in "
            "turn with the same seeds"
        )
        self.start_experiment_button.clicked.connect(self.experiment_dialog)
        self.show_experiment = QPushButton("Show in Results")
        self.show_experiment.setToolTip("The last experiment's table, runs and overlaid telemetry in the Results tab")
        self.show_experiment.setEnabled(False)
        self.show_experiment.clicked.connect(
            lambda: self.last_experiment is not None and self.show_result.emit("experiment", self.last_experiment)
        )
        self.cancel_button = QPushButton("Cancel (Esc)")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, activated=self.cancel)
        self.epochs = _spin(1, 100_000, 2, "epochs to train (the workload's epochs are usually far more)")
        self.samples = _spin(0, 10**8, 5000, "training samples of the synthetic set; 0: the workload's")
        self.samples.setSpecialValueText("workload's")
        self.device = QComboBox()
        self.device.setEditable(True)
        self.device.addItems(["cpu", "cuda:0"])
        self.rate = _spin(1, 20, 10, "samples per second (1–20 Hz)")
        self.rate.setSuffix(" Hz")
        top = flow_row(  # wraps in a narrow window (a 1,366-pixel laptop at 125 %) instead of cutting its buttons
            self.start_wizard,
            self.start_file,
            self.start_last,
            self.start_experiment_button,
            *(labelled(label, w) for label, w in (("Epochs", self.epochs), ("Samples", self.samples))),
            labelled("Device", self.device),
            labelled("Sampling", self.rate),
            self.show_experiment,
            self.cancel_button,
        )

        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        self.progress.setFormat("no run yet")
        self.status = QLabel("Start a run: the wizard's workload, a workload file or the last one.")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.pause = QCheckBox("Pause plot")
        self.normalised = QCheckBox("Normalised [0, 1]")
        self.normalised.setToolTip("Each figure as a fraction of its full scale, as Finocchiaro plots them")
        self.smoothing = _spin(1, 5000, 1, "moving-average window in samples (1: none; the paper used 50 and 100)")
        self.smoothing.setSpecialValueText("none")
        self.x_axis = QComboBox()
        self.x_axis.addItems(["seconds", "iterations"])
        view = QHBoxLayout()
        view.addWidget(self.pause)
        view.addWidget(self.normalised)
        view.addWidget(QLabel("Smoothing"))
        view.addWidget(self.smoothing)
        view.addWidget(QLabel("x axis"))
        view.addWidget(self.x_axis)
        view.addStretch(1)
        for w in (self.normalised, self.smoothing, self.x_axis):
            (
                w.toggled
                if isinstance(w, QCheckBox)
                else w.currentIndexChanged
                if isinstance(w, QComboBox)
                else w.valueChanged
            ).connect(self._view_changed)

        self.comparison = QLabel("")
        self.comparison.setTextFormat(Qt.TextFormat.RichText)
        self.notes = QLabel("")
        self.notes.setWordWrap(True)
        self.notes.setForegroundRole(QPalette.ColorRole.PlaceholderText)  # grey in a light theme and a dark one
        self.plots = TelemetryPlots()

        layout = QVBoxLayout(self)
        layout.addWidget(top)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addLayout(view)
        layout.addWidget(self.comparison)
        layout.addWidget(self.plots, 1)
        layout.addWidget(self.notes)
        self.timer = QTimer(self)
        self.timer.setInterval(FRAME_MS)
        self.timer.timeout.connect(self.refresh)

    # --- starting ------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return (self.run is not None and not self.run.done) or self._job is not None or self.experiment is not None

    def run_wizard_workload(self) -> None:
        if self.wizard is None:
            return
        rec = getattr(self.wizard, "recommendation", None)
        model = self.wizard.doc.get("model")
        ref = (model.get("trace") or {}).get("file") if isinstance(model, dict) else None
        code_dir = self.wizard.model_page.trusted_code.get(str(ref)) if ref else None  # imported here, agreed to
        self.start_document(self.wizard.doc, this_machine_prediction(rec), "the wizard's workload", code_dir)

    def run_file_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Run a workload", "", "Workload (*.json);;All files (*)")
        if path:
            self.run_file(Path(path))

    def run_file(self, path: Path) -> None:
        try:
            doc = read_workload_document(path)
        except TrainRigError as exc:
            self._say(str(exc), error=True)
            return
        self.start_document(doc, None, path.name)

    def run_last(self) -> None:
        doc = self.last_document
        if doc is None and self.store is not None:
            trained = [r for r in self.store.runs() if r["kind"] == "trained"]
            stored = self.store.run(trained[0]["id"]) if trained else None
            doc = ((stored or {}).get("workload") or {}).get("document")
        if doc is None:
            self._say("No run yet: run the wizard's workload or a file first.", error=True)
            return
        self.start_document(doc, None, "the last workload")

    def rerun(self, stored: Any, name: str) -> bool:
        """Train a stored run's workload again with the settings it ran with (epochs, samples, batch,
        device, seed), sized again on this machine; False (and the reason shown) when it cannot be."""
        stored = stored if isinstance(stored, dict) else {}
        spec, document = stored.get("trainer"), stored.get("document")
        if not isinstance(spec, dict) or document is None:
            self._say(f"{name} was stored without its trainer settings: it cannot be re-run.", error=True)
            return False
        launch = stored.get("launch") if isinstance(stored.get("launch"), dict) else {}
        processes = int(launch.get("nproc_per_node") or 1) * int(launch.get("nnodes") or 1)
        if processes > 1:
            self._say(
                f"{name} ran as {processes} processes through torchrun; re-run it from the command line: "
                f"python main.py run WORKLOAD.json --nproc-per-node {launch.get('nproc_per_node')}",
                error=True,
            )
            return False
        code = (spec.get("model") or {}).get("torch") if isinstance(spec.get("model"), dict) else None
        if isinstance(code, dict):
            answer = QMessageBox.question(
                self,
                "Run PyTorch code again?",
                f"{name} trained the model that {code.get('factory')}() in {code.get('file')} builds. Re-running it "
                "runs that file's code again, as it is now. Run it?",
            )
            if answer != QMessageBox.StandardButton.Yes:
                return False
        if spec.get("csv") and not Path(str(spec["csv"])).is_file():
            self._say(f"{name} trained on {spec['csv']}, which is no longer there: it cannot be re-run.", error=True)
            return False
        self.start_document(document, None, f"a re-run of {name}", spec=spec, name=f"{name} (re-run)")
        return True

    def start_document(
        self,
        document: Any,
        prediction: dict[str, Any] | None,
        origin: str,
        code_dir: Path | None = None,
        *,
        spec: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> None:
        """Size (if no prediction is given), check the PyTorch environment and start the trainer;
        ``spec``: the trainer's settings to use as they are (a re-run), else the tab's epochs,
        samples and device."""
        if self.run is not None and self.run.done and self.timer.isActive():
            # the last run ended after the latest frame: show its end now, so that its message does
            # not replace what this start says a moment later
            self.refresh()
        if self.running:
            self._say("A run is in progress: cancel it first.", error=True)
            return
        epochs, samples, device = self.epochs.value(), self.samples.value() or None, self.device.currentText().strip()
        python, store = self.python_for_runs(), self.store

        def prepare() -> tuple[Any, dict[str, Any] | None, dict[str, Any], str]:
            if prediction is None:
                workload, pred = size_here(document, store)
            else:
                workload, pred = parse_workload(document), prediction
            settings = spec or trainer_spec(workload, epochs=epochs, samples=samples, device=device, base_dir=code_dir)
            env = find_torch_environment(python)
            if not env.ok:
                raise TrainRigError(env.message)
            return name or workload.name, pred, settings, env.python

        self._set_busy(True)
        self._say(f"Preparing {origin}: sizing it on this machine and finding PyTorch…")
        self._prepare(prepare, lambda r: self._prepared(document, *r))

    def _prepare(self, work: Callable[[], Any], done: Callable[[Any], None]) -> None:
        """``work`` off the window's thread, then ``done`` with its result, or its error said, unless Cancel
        (or closing) dropped it meanwhile: then nothing starts when it ends."""

        def finished(result: Any) -> None:  # called on the window's thread, after ``job`` is set below
            if self._job is job:
                done(result)

        def failed(message: str) -> None:
            if self._job is job:
                self._prepare_failed(message)

        job = self._job = start_job(work, finished, failed)

    def _prepare_failed(self, message: str) -> None:
        self._job = None
        self._set_busy(False)
        self._say(message, error=True)

    def _prepared(self, document: Any, name: str, prediction: dict[str, Any] | None, spec: dict, python: str) -> None:
        self._job = None
        run = training_run(
            python,
            spec,
            store=self.store,
            name=name,
            workload_document=document,
            prediction=prediction,
            rate_hz=float(self.rate.value()),
        )
        try:
            run.start()
        except OSError as exc:
            self._set_busy(False)
            self._say(f"The trainer cannot start in {python}: {exc}", error=True)
            return
        self.last_document = document
        self.watch(run, prediction, spec, name)

    def watch(self, run: Run, prediction: dict[str, Any] | None, spec: dict[str, Any], name: str) -> None:
        """Plot ``run`` (started) live from now on."""
        self.run = run
        assert run.sampler is not None
        self.plots.configure(
            run.sampler.columns, run.sampler.limits, os.cpu_count() or 1, prediction, spec.get("device") != "cpu"
        )
        self.notes.setText("; ".join(f"{k}: {v}" for k, v in run.sampler.reasons.items()))
        self._drawn_at = None
        self.progress.setValue(0)
        self.progress.setFormat("starting PyTorch…")
        self._say(
            f"Running {name} on {spec.get('device')} ({spec.get('epochs')} epochs, batch {spec.get('batch_size')})."
        )
        self.comparison.setText(_comparison(prediction, None, None))
        self.timer.start()

    def _set_busy(self, busy: bool) -> None:
        for b in (self.start_wizard, self.start_file, self.start_last, self.start_experiment_button):
            b.setEnabled(not busy and (b is not self.start_wizard or self.wizard is not None))
        self.cancel_button.setEnabled(busy)

    # --- while it runs -------------------------------------------------------------------------
    def cancel(self) -> None:
        if self._job is not None:  # still sizing or finding PyTorch: the trainer is not started
            self._job = None
            self._set_busy(False)
            self._say("Cancelled before the trainer started: no run was made.")
        if self.experiment is not None:
            self.experiment.cancel()  # the run in progress is cancelled, and no other starts
        if self.run is not None and not self.run.done:
            self.run.cancel()
            self._say("Cancelling: the trainer was asked to stop (forced after 5 s).")

    def _view_changed(self) -> None:
        self._drawn_at = None
        self.refresh()

    def refresh(self) -> None:
        """One frame: progress, then the plots when something new arrived (and the plot is not paused)."""
        r = self.run
        if r is None or r.sampler is None:
            return
        latest = r.latest
        if latest:
            it, total = int(latest.get("iteration", 0)), max(1, int(latest.get("iterations", 1)))
            elapsed = float(latest.get("elapsed_s", 0.0))
            eta = elapsed * (total - it) / it if it else math.nan
            self.progress.setValue(int(1000 * it / total))
            self.progress.setFormat(
                f"epoch {latest.get('epoch')}/{latest.get('epochs')} · iteration {it}/{total} · ETA {_duration(eta)}"
            )
        if r.started and r.started.get("rss_before_bytes"):
            self.plots.set_memory_base(float(r.started["rss_before_bytes"]))
        done = r.done
        key = (r.sampler.buffer.total, len(r.progress), done)
        if not self.pause.isChecked() and key != self._drawn_at:
            self._drawn_at = key
            t, v = r.sampler.buffer.snapshot()
            self.points_drawn = self.plots.update(
                t,
                v,
                list(r.progress),
                normalised=self.normalised.isChecked(),
                window=self.smoothing.value(),
                iterations=self.x_axis.currentIndex() == 1,
            )
            self.frames += 1
            if latest:
                self.comparison.setText(_comparison(r.prediction, latest.get("step_s"), None))
        if done:
            self.timer.stop()
            self._ended(r)

    def _ended(self, r: Run) -> None:
        if self.experiment is None:
            self._set_busy(False)
        if r.status == "finished" and self.wizard is not None:
            self.wizard.runs_changed()
        m = r.metrics or {}
        measured = r.measured()
        if r.status == "finished":
            self.progress.setValue(1000)
            self.progress.setFormat(
                f"finished: {m.get('iterations')} iterations in {m.get('training_time_s', 0):.1f} s"
            )
            text = (
                f"Finished in {r.duration_s:.1f} s: held-out accuracy {m.get('accuracy', math.nan):.3f}, "
                f"macro F1 {m.get('macro_f1', math.nan):.3f}"
            )
        else:
            self.progress.setFormat(r.status)
            text = f"{r.status.capitalize()}: {r.reason}"
        stored = f" (run {r.run_id}, {r.sampler.buffer.total if r.sampler else 0} samples stored)" if r.run_id else ""
        if self.experiment_progress is not None:
            i, n, label = self.experiment_progress
            text = f"Experiment run {i} of {n} ({label}): {text[0].lower()}{text[1:]}" + ("; next…" if i < n else "")
        self._say(text + stored, error=r.status == "failed")
        self.comparison.setText(
            _comparison(r.prediction, measured.get("median_step_s"), measured.get("training_memory_bytes"), final=True)
        )
        if r.sampler is not None:
            events = [f"{t:.1f} s: {msg}" for t, msg in r.sampler.all_events()[:5]]
            reasons = [f"{k}: {v}" for k, v in r.sampler.reasons.items()]
            self.notes.setText("; ".join(reasons + events))

    # --- leaving -------------------------------------------------------------------------------
    def confirm_close(self) -> bool:
        """Asked by the main window before it closes: a run in progress is cancelled only if the
        user agrees; True when the window may close."""
        if not self.running:
            return True
        answer = QMessageBox.question(
            self,
            "A run is in progress",
            "A training run is in progress. Cancel it and close TrainRig?\n\n"
            "Its samples up to now are kept in the database.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        if answer != QMessageBox.StandardButton.Yes:
            return False
        self._job = None  # a run still being prepared is not started
        if self.experiment is not None:
            self.experiment.cancel()
        if self.run is not None:
            self.run.cancel()
            self.run.wait(self.run.grace_s + 3)
        self.timer.stop()
        return True

    def _say(self, text: str, error: bool = False) -> None:
        self.status.setText(fit_message(text))
        self.status.setStyleSheet("color: #d9534f" if error else "")


def _spin(lo: int, hi: int, value: int, tip: str) -> QSpinBox:
    s = QSpinBox()
    s.setRange(lo, hi)
    s.setValue(value)
    s.setToolTip(tip)
    s.setGroupSeparatorShown(True)
    return s


def _duration(s: float) -> str:
    if not math.isfinite(s):
        return "–"
    s = round(s)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def _comparison(
    prediction: dict[str, Any] | None, step_s: float | None, memory: float | None, final: bool = False
) -> str:
    if not prediction:
        return "<i>No sizing prediction for this run (the workload has no this-machine sizing).</i>"
    parts = []
    for label, pred, meas, scale, unit in (
        ("Step time", prediction.get("step_s"), step_s, 1e3, "ms"),
        ("Training memory", prediction.get("peak_memory_bytes"), memory, 2**-20, "MiB"),
    ):
        if pred is None:
            continue
        part = f"<b>{label}</b>: predicted {pred * scale:,.1f} {unit}"
        if meas:
            part += (
                f" · {'measured' if final else 'now'} {meas * scale:,.1f} {unit} (prediction {pred / meas - 1:+.0%})"
            )
        parts.append(part)
    return f"Sized on {prediction.get('device', 'this machine')} — " + " &nbsp;|&nbsp; ".join(parts)
