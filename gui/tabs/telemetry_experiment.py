"""One-factor experiments from the Telemetry tab (Finocchiaro, Tables 4.1–4.5): the dialog's values
trained one after another by telemetry.experiments, each run plotted live as it trains, Cancel
stopping the run in progress and the experiment; at the end the experiment is stored with its
summary, and the Results tab shows its table and overlays its runs.

A mixin of TelemetryTab (gui/tabs/telemetry_tab.py). The experiment runs in a thread of its own
(it lasts minutes: the shared pool stays free for the window's short jobs); it talks to the window
only through queued signals."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QDialog

from core.errors import TrainRigError
from core.storage.error_log import unexpected_message
from core.storage.store import Store
from gui.widgets.experiment_dialog import ExperimentDialog, ExperimentRequest
from telemetry.experiments import ExperimentOutcome, ExperimentPlan, run_experiment, save_one_factor
from telemetry.pytorch_env import find_torch_environment
from telemetry.runs import Run

if TYPE_CHECKING:
    from gui.tabs.telemetry_tab import TelemetryTab

POLL_S = 0.2  # how often the experiment's thread looks for a cancel while a run trains


class ExperimentRunner(QObject):
    """Trains a plan in its own thread; ``run_started(i, n, label, run)`` as each run starts,
    ``ended(outcome or message)`` once."""

    run_started = Signal(int, int, str, object)
    ended = Signal(object)

    def __init__(self, python: str, plan: ExperimentPlan, store: Store | None, rate_hz: float) -> None:
        super().__init__()
        self.python, self.plan, self.store, self.rate_hz = python, plan, store, rate_hz
        self.cancel_requested = False
        self.thread = threading.Thread(target=self._work, name="experiment", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def cancel(self) -> None:
        self.cancel_requested = True

    def _work(self) -> None:
        labels: dict[int, tuple[int, int, str]] = {}

        def on_run(i: int, n: int, variant: Any, repeat: int, r: Run) -> None:
            labels[id(r)] = (i, n, variant.label + (f" #{repeat + 1}" if self.plan.repeats > 1 else ""))

        def wait(r: Run) -> None:
            self.run_started.emit(*labels[id(r)], r)
            asked = False
            while not r.wait(POLL_S):
                if self.cancel_requested and not asked:
                    r.cancel()
                    asked = True

        try:
            outcome: Any = run_experiment(
                self.python, self.plan, self.store, rate_hz=self.rate_hz, wait=wait, on_run=on_run
            )
        except TrainRigError as exc:
            outcome = str(exc)
        except Exception as exc:  # a bug: one line here, the traceback in the error log
            outcome = unexpected_message(exc, "experiment")
        self.ended.emit(outcome)


class ExperimentActions:
    """Mixed into TelemetryTab."""

    def experiment_dialog(self: TelemetryTab) -> None:
        if self.running:
            self._say("A run is in progress: cancel it first.", error=True)
            return
        doc = self.wizard.doc if self.wizard is not None else None
        dialog = ExperimentDialog(dict(doc) if isinstance(doc, dict) else None, self)
        if dialog.exec() == QDialog.DialogCode.Accepted and dialog.request is not None:
            self.start_experiment(dialog.request)

    def start_experiment(self: TelemetryTab, request: ExperimentRequest) -> None:
        """Train the request's values one after another with the tab's epochs, samples, device and
        sampling rate."""
        if self.running:
            self._say("A run is in progress: cancel it first.", error=True)
            return
        python = self.python_for_runs()

        def find() -> str:  # off the window's thread: it starts a Python to look for PyTorch
            env = find_torch_environment(python)
            if not env.ok:
                raise TrainRigError(env.message)
            return env.python

        self._set_busy(True)
        self._say("Finding PyTorch for the experiment…")
        self._prepare(find, lambda found: self._experiment_found(request, found))

    def _experiment_found(self: TelemetryTab, request: ExperimentRequest, python: str) -> None:
        self._job = None
        plan = ExperimentPlan(
            request.name,
            request.factor,
            request.variants,
            request.repeats,
            self.epochs.value(),
            self.samples.value() or None,
            self.device.currentText().strip(),
        )
        runner = ExperimentRunner(python, plan, self.store, float(self.rate.value()))
        runner.run_started.connect(self._experiment_run_started)
        runner.ended.connect(lambda outcome: self._experiment_ended(runner, request, outcome))
        self.experiment = runner
        total = len(plan.variants) * plan.repeats
        self._say(f"Experiment on {request.name}: {request.factor.name}, {total} runs; sizing the first value…")
        runner.start()

    def _experiment_run_started(self: TelemetryTab, i: int, n: int, label: str, run: Run) -> None:
        if self.run is not None and self.run.done and self.timer.isActive():
            self.refresh()  # the last run's end first
        spec = (run.workload or {}).get("trainer") or {}
        self.watch(run, run.prediction, spec, f"run {i} of {n}: {label}")
        self.experiment_progress = (i, n, label)

    def _experiment_ended(
        self: TelemetryTab, runner: ExperimentRunner, request: ExperimentRequest, outcome: Any
    ) -> None:
        if self.run is not None and self.timer.isActive():
            self.refresh()
        self.experiment = None
        self.experiment_progress = None
        self._set_busy(False)
        if isinstance(outcome, str):
            self._say(f"The experiment stopped: {outcome}", error=True)
            return
        assert isinstance(outcome, ExperimentOutcome)
        try:
            eid, status, _summary = save_one_factor(self.store, runner.plan, outcome, request.document)
        except TrainRigError as exc:
            self._say(f"The experiment's runs are stored, but not the experiment: {exc}", error=True)
            return
        runs = sum(1 for i in outcome.run_ids if i is not None)
        where = f"experiment #{eid}: its table and runs are in the Results tab" if eid is not None else "not stored"
        self._say(
            f"Experiment {status}: {runs} run{'s' if runs != 1 else ''} of {request.factor.name} "
            f"({', '.join(map(str, request.factor.values))}); {where}.",
            error=status == "failed",
        )
        if eid is not None:
            self.last_experiment = eid
            self.show_experiment.setEnabled(True)
            self.experiment_saved.emit(eid)
