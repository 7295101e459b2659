"""The results page's "Measure on this GPU": a few real training steps of the workload under
torch.profiler in a child process (telemetry/measure.py), off the GUI thread, with progress and
cancel; the scaled predictions go to the candidate table (docs/sizing.md, "Measure on this GPU")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

from core.errors import TrainRigError
from core.estimate.profile_read import parse_trainrig_profile
from core.estimate.profile_scale import ScaleResult, scale_profile
from core.hardware.catalogue import DeviceSpec
from core.spec.workload import Workload
from gui.workers import Job, start_job
from telemetry.machine import MachineSummary
from telemetry.measure import MeasureJob, measure_spec, measured_source
from telemetry.pytorch_env import find_torch_environment

MEASURE_TIP = (
    "Run a few training steps of this workload on this machine's GPU under torch.profiler, then predict each "
    "candidate GPU by scaling every kernel: compute-bound kernels by the ratio of the datasheet peaks, "
    "memory-bound ones by the ratio of the bandwidths, per-channel batch norm, layout transposes and max pooling "
    "by the SMs × their clock (docs/sizing.md, 'Measure on this GPU')"
)


def why_no_measuring(machine: MachineSummary | None) -> str | None:
    """Why this machine cannot measure (the button's tooltip), or None when it has a CUDA GPU."""
    if machine is None:
        return "This machine's inventory is not read yet"
    if not machine.gpus:
        note = machine.gpu_note or "no NVIDIA GPU was found"
        return (
            f"Measuring needs an NVIDIA GPU with CUDA, and this machine has none ({note}). Use `trainrig measure "
            "WORKLOAD.json --trace TRACE.json` with a torch.profiler trace recorded on a GPU elsewhere"
        )
    return None


class _Progress(QObject):
    step = Signal(int, int)  # emitted from the pool thread; delivered on the GUI thread


class MeasurePanel(QWidget):
    """Button, progress bar, cancel and a status line; emits ``measured`` with the ScaleResult."""

    measured = Signal(object)

    def __init__(self) -> None:
        super().__init__()
        self.button = QPushButton("Measure on this GPU")
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(140)
        self.progress.setFormat("step %v of %m")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop the measurement (the worker is interrupted, nothing is kept)")
        self.status = QLabel()
        self.status.setWordWrap(True)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for w in (self.button, self.progress, self.cancel_button):
            layout.addWidget(w)
        layout.addWidget(self.status, 1)
        self._signals = _Progress()
        self._signals.step.connect(self._on_step)
        self._job: Job | None = None
        self._measure: MeasureJob | None = None
        self.cancel_button.clicked.connect(self.cancel)
        self._show_running(False)
        self.set_machine(None)

    def set_machine(self, machine: MachineSummary | None) -> None:
        why = why_no_measuring(machine)
        self.button.setEnabled(why is None and self._job is None)
        self.button.setToolTip(why or MEASURE_TIP)
        if self._job is None:
            self.status.setText(
                "No NVIDIA GPU here: the step is predicted from the model (hover the button for why)"
                if machine is not None and why
                else ""
            )

    @property
    def running(self) -> bool:
        return self._job is not None

    def start(
        self,
        workload: Workload,
        candidates: Sequence[DeviceSpec],
        catalogue: Sequence[DeviceSpec],
        python: str | None = None,
        code_dir: Path | None = None,
    ) -> None:
        """Measure ``workload`` in a pool thread with ``python`` (else the PyTorch environment found)
        and scale it to ``candidates``; ``code_dir``: where PyTorch code the user agreed to run lives."""
        if self._job is not None:
            return
        try:
            spec = measure_spec(workload, base_dir=code_dir)
        except TrainRigError as exc:
            self.status.setText(str(exc))
            return
        measure = MeasureJob("", spec, on_progress=self._signals.step.emit)
        self._measure = measure

        def work() -> ScaleResult:
            env = find_torch_environment(python)
            if not env.ok:
                raise TrainRigError(env.message)
            if not env.cuda_available:
                raise TrainRigError(f"PyTorch here cannot use the GPU: {env.message}")
            measure.python = env.python
            profile = parse_trainrig_profile(measure.run(), "the measurement")
            return scale_profile(profile, measured_source(profile, catalogue), candidates)

        self._run(work, workload)

    def _run(self, work: Callable[[], Any], workload: Workload) -> None:
        self.progress.setRange(0, 0)  # busy until the worker reports its first step
        self.status.setText(f"Measuring {workload.name} (batch {workload.training.batch_size})…")
        self._show_running(True)
        self._job = start_job(work, self._finished, self._failed)

    def cancel(self) -> None:
        if self._measure is not None:
            self._measure.cancel()
        self.status.setText("Cancelling…")

    def _on_step(self, done: int, total: int) -> None:
        self.progress.setRange(0, total)
        self.progress.setValue(done)

    def _finished(self, result: ScaleResult) -> None:
        self._done()
        scaled = len(result.predictions)
        self.status.setText(
            f"Measured {result.profile.wall_s * 1e3 if result.profile.wall_s else 0:.1f} ms per step on "
            f"{result.profile.device_name}; {scaled} candidate(s) use the measured-and-scaled step (marked ●)"
            + (f"; {len(result.refused)} cannot be scaled to" if result.refused else "")
        )
        self.measured.emit(result)

    def _failed(self, message: str) -> None:
        self._done()
        self.status.setText("Cancelled: nothing was measured." if "was cancelled" in message else message)

    def _done(self) -> None:
        self._job = None
        self._measure = None
        self._show_running(False)
        self.button.setEnabled(self.button.toolTip() == MEASURE_TIP)

    def _show_running(self, running: bool) -> None:
        self.progress.setVisible(running)
        self.cancel_button.setVisible(running)
        if running:
            self.button.setEnabled(False)
