"""The sizing wizard: six pages over one workload document, results recomputed on every change."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QStackedWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from core.advice.recommendation import Recommendation, recommend
from core.errors import TrainRigError
from core.estimate.profile_scale import ScaleResult
from core.estimate.sizing import SizingResult
from core.hardware.catalogue import load_catalogue, merge_user_devices
from core.network.presets import load_presets
from core.spec.effective import effective_sections
from core.spec.workload import parse_workload
from core.storage.store import Store
from gui.widgets.message import fit_message
from gui.wizard import session
from gui.wizard.base import WizardPage
from gui.wizard.candidates_page import THIS_MACHINE, CandidatesPage
from gui.wizard.documents import WizardFiles, altered_values, starter_document
from gui.wizard.forms import DataPage, GoalPage, TrainingPage
from gui.wizard.guides import GUIDES
from gui.wizard.model_page import ModelPage
from gui.wizard.results_page import ResultsPage
from telemetry.calibrate import stored_calibration
from telemetry.candidates import calibrated_rates, resolve_candidates
from telemetry.machine import MachineSummary, summary_from_inventory, this_machine_device


class SizingWizard(WizardFiles, QWidget):
    sized = Signal(object)  # SizingResult after every successful recompute

    def __init__(self, store: Store | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.machine: MachineSummary | None = None
        self.inventory: dict[str, Any] | None = None
        self.calibration: dict[str, Any] | None = None
        # this machine's finished local runs (what corrects its sizings), read when a run ends, not per what-if
        self.runs: list[dict[str, Any]] = store.recent_runs() if store is not None else []
        self.recommendation: Recommendation | None = None
        self.sizing_problem: str | None = None  # why the pages' workload has no figures (recompute)
        self.python_for_runs: Callable[[], str | None] = lambda: None  # the main window's PyTorch Python
        # "Measure on this GPU": the scaled result and the workload settings it was measured with
        self.measured: ScaleResult | None = None
        self._measuring_key: tuple[Any, ...] | None = None
        self._measured_key: tuple[Any, ...] | None = None
        self.doc = starter_document()
        user = store.user_devices() if store else []
        self.user_devices = user
        self.catalogue = tuple(merge_user_devices(load_catalogue(), user))
        self.goal, self.model_page, self.data = GoalPage(), ModelPage(), DataPage()
        self.training, self.candidates = TrainingPage(), CandidatesPage(self.catalogue)
        self.results = ResultsPage()
        self.pages: list[QWidget] = [
            self.goal,
            self.model_page,
            self.data,
            self.training,
            self.candidates,
            self.results,
        ]
        titles = ["1 Goal", "2 Model", "3 Data", "4 Training", "5 Candidates", "6 Results"]
        self.steps = QListWidget()
        self.steps.addItems(titles)
        self.steps.setMaximumWidth(150)
        self.stack = QStackedWidget()
        for p in self.pages:
            self.stack.addWidget(p)
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #d9534f;")
        self.back_button, self.next_button = QPushButton("< &Back"), QPushButton("&Next >")  # Alt+B, Alt+N
        self.open_button, self.save_button = QPushButton("Open…"), QPushButton("Save as…")
        self.record_button = QPushButton("Save sizing")
        self.export_button = QPushButton("Export report…")
        self.export_button.setToolTip("Write the purchasing report as PDF, with the CSV beside it  [Ctrl+E]")
        self.from_store_button = QPushButton("From database…")
        self.from_store_button.setToolTip("Open a workload saved with an earlier sizing")
        self.open_button.setToolTip("Open a workload JSON file  [Ctrl+O]")
        self.save_button.setToolTip("Save the workload as a JSON file  [Ctrl+Shift+S]")
        self.record_button.setToolTip("Record the workload and its sizing in the database  [Ctrl+S]")
        self.message = QLabel()
        nav = QHBoxLayout()
        for b in (self.open_button, self.from_store_button, self.save_button, self.record_button, self.export_button):
            nav.addWidget(b)
        nav.addWidget(self.message)
        nav.addWidget(self.problem, 1)
        nav.addWidget(self.back_button)
        nav.addWidget(self.next_button)
        # the form pages' guide: what each field decides and its source, beside the fields
        self.guide = QTextBrowser()
        self.guide.setOpenLinks(False)
        self.guide.setMinimumWidth(260)
        self.guide.setMaximumWidth(520)
        body = QHBoxLayout()
        body.addWidget(self.steps)
        body.addWidget(self.stack, 1)
        body.addWidget(self.guide)
        layout = QVBoxLayout(self)
        self.restore_banner = session.RestoreBanner()
        self.restore_banner.restore.connect(self.restore_remembered)
        layout.addWidget(self.restore_banner)
        layout.addLayout(body, 1)
        layout.addLayout(nav)

        self._loading = False
        for p in self.pages[:-1]:
            assert isinstance(p, WizardPage)
            p.changed.connect(self._changed)
        self.model_page.preset.currentIndexChanged.connect(self._preset_chosen)
        self.model_page.preset_imported.connect(self._preset_chosen)
        self.results.what_if.connect(self._what_if)
        self.results.measure_panel.button.clicked.connect(self.measure_here)
        self.results.measure_panel.measured.connect(self._measured)
        self.back_button.clicked.connect(lambda: self.go(self.stack.currentIndex() - 1))
        self.next_button.clicked.connect(lambda: self.go(self.stack.currentIndex() + 1))
        self.steps.currentRowChanged.connect(self._step_clicked)
        self.open_button.clicked.connect(self.open_dialog)
        self.save_button.clicked.connect(self.save_dialog)
        self.record_button.clicked.connect(self.save_sizing)
        self.from_store_button.clicked.connect(self.from_store_dialog)
        self.export_button.clicked.connect(self.export_dialog)
        self.from_store_button.setEnabled(store is not None)
        # the shortcuts (Ctrl+O, Ctrl+Shift+S, Ctrl+S, Ctrl+E) belong to the main window's File menu:
        # one owner each, so that none is ambiguous (gui/main_window.py FILE_ACTIONS)
        self.load_document(self.doc)
        self.go(0)
        last = session.remembered()
        if last is not None and session.document_key(last) != session.document_key(self.doc):
            self.restore_banner.offer(str(last.get("name") or "unnamed workload"))

    # --- document -----------------------------------------------------------------------------
    def load_document(self, doc: dict[str, Any]) -> list[str]:
        """Show ``doc`` on the pages; the values they hold otherwise than written (``altered_values``), in which
        case the workload counts as changed, not saved."""
        self._loading = True
        self.doc = copy.deepcopy(doc)
        for p in self.pages[:-1]:
            assert isinstance(p, WizardPage)
            p.load(self.doc)
        self.results.set_controls(self.doc)
        self._loading = False
        self._changed()
        # candidate names are matched as the catalogue matches them ("H100 SXM" ticks NVIDIA H100 SXM): the page
        # names those that tick no single device
        altered = altered_values(doc, self.doc, skip=("hardware.candidates",)) + self.candidates.unmatched
        if not altered:
            self.mark_saved()
        return altered

    # --- unsaved changes and the workload remembered across sessions --------------------------
    def mark_saved(self) -> None:
        """The workload as it is now counts as saved (opened, written to a file, recorded)."""
        self._collect()
        self._saved_key = session.document_key(self.doc)

    def has_unsaved_changes(self) -> bool:
        """Whether closing would lose an edit: the document changed since it was saved, or the Model page holds
        typing that is not in the document yet (a half-typed layer)."""
        self._collect()
        return self.model_page.unstored is not None or session.document_key(self.doc) != self._saved_key

    def confirm_close(self) -> bool:
        """Asked by the main window before it closes: with unsaved changes the user saves them to a
        file, discards them or stays; True when the window may close. The workload is remembered
        either way and offered back at the next start."""
        if self.has_unsaved_changes():
            answer = session.ask_save_changes(self, str(self.doc.get("name") or "unnamed"))
            if answer == "cancel":
                return False
            if answer == "save":
                self.save_dialog()
                if self.has_unsaved_changes():  # the file dialog was cancelled or the write failed
                    return False
        session.remember(self.doc)
        return True

    def restore_remembered(self) -> None:
        doc = session.remembered()
        self.restore_banner.setVisible(False)
        if doc is None:
            self._say("The remembered workload can no longer be read.")
            return
        self.load_document({**starter_document(), **doc})
        self._say(f"Restored {doc.get('name') or 'the workload'} from the last session.", error=False)

    def _collect(self) -> None:
        for p in self.pages[:-1]:
            assert isinstance(p, WizardPage)
            p.store(self.doc)

    def _preset_chosen(self) -> None:
        """A newly chosen preset brings its own data and training, as the workload's parser reads them: nothing
        of the last model's stays (ResNet-50's JPEG features sized the seed MLP chosen after it at 12 GB of
        data, Llama's FSDP and checkpointing carried into ResNet-50)."""
        if self._loading or not self.model_page.use_preset.isChecked():
            return
        name = self.model_page.preset.currentData()
        preset = load_presets()[name]
        self._collect()
        chosen = {  # the preset alone: a half-edited cost or hardware page does not stop its defaults
            "model": {"preset": name},
            "data": dict(preset.get("data", {})),
            "training": {k: v for k, v in preset.get("training", {}).items() if k != "learning_rate"},
        }
        self.doc["data"], self.doc["training"] = effective_sections(chosen)  # every shipped preset parses alone
        self._loading = True
        self.data.load(self.doc)
        self.training.load(self.doc)
        self.results.set_controls(self.doc)
        self._loading = False
        self._changed()

    def _changed(self) -> None:
        if self._loading:
            return
        self._collect()
        a = self.model_page.analysis
        self.data.show_features(a.input_elems if a else None)
        self._update_navigation()
        self.recompute()

    def page_problem(self, index: int) -> str | None:
        page = self.pages[index]
        return page.problem() if isinstance(page, WizardPage) else None

    def _update_navigation(self) -> None:
        i = self.stack.currentIndex()
        problem = self.page_problem(i) if i < len(self.pages) - 1 else None
        own = getattr(self.pages[i], "error", None)  # the page's own message: not said twice
        shown = isinstance(own, QLabel) and not own.isHidden() and own.text() == problem
        # a problem of the workload as a whole (a value no page checks) stays said on every page
        text = "Correct the message above to go on." if problem and shown else problem or self.sizing_problem or ""
        self.problem.setText(text)
        self.next_button.setEnabled(problem is None and i < len(self.pages) - 1)
        self.next_button.setToolTip(problem or "")
        self.back_button.setEnabled(i > 0)
        self._update_steps()

    def _update_steps(self) -> None:
        """The sidebar's pages after the first page that is not valid cannot be reached: greyed out,
        with the reason in their tooltip."""
        blocked: str | None = None
        for j in range(len(self.pages)):
            item = self.steps.item(j)
            flags = item.flags()
            flags = flags | Qt.ItemFlag.ItemIsEnabled if blocked is None else flags & ~Qt.ItemFlag.ItemIsEnabled
            # set only what changed: a set item repaints the sidebar, on every what-if change
            if item.flags() != flags:
                item.setFlags(flags)
            if item.toolTip() != (blocked or ""):
                item.setToolTip(blocked or "")
            problem = self.page_problem(j) if j < len(self.pages) - 1 else None
            if problem and blocked is None:
                blocked = f"Fix {self.steps.item(j).text()} first: {problem}"

    def go(self, index: int) -> None:
        index = max(0, min(index, len(self.pages) - 1))
        current = self.stack.currentIndex()
        for j in range(current, index):  # moving forward: every page passed must be valid
            if self.page_problem(j):
                index = j  # stop at the first page that is not valid yet
                break
        self.stack.setCurrentIndex(index)
        guide = GUIDES.get(getattr(self.pages[index], "title", ""))
        self.guide.setVisible(guide is not None)
        self.guide.setHtml(guide or "")
        self.steps.blockSignals(True)
        self.steps.setCurrentRow(index)
        self.steps.blockSignals(False)
        if index == len(self.pages) - 1:
            self.results.set_controls(self.doc)
        self._update_navigation()

    def _step_clicked(self, row: int) -> None:
        if row >= 0:
            self.go(row)

    # --- this machine -------------------------------------------------------------------------
    def set_calibration(self, calibration: dict[str, Any] | None) -> None:
        self.calibration = calibration
        self.recompute()

    def runs_changed(self) -> None:
        """A local run ended: its measurement corrects the next sizing of its network here."""
        if self.store is not None:
            self.runs = self.store.recent_runs()
            self.recompute()

    def set_inventory(self, inventory: dict[str, Any]) -> None:
        self.inventory = inventory
        self.machine = summary_from_inventory(inventory)
        if self.store is not None and self.calibration is None:
            self.calibration = stored_calibration(self.store, inventory["fingerprint"])
        self.candidates.set_this_machine(this_machine_device(self.machine, self.catalogue))
        self.results.measure_panel.set_machine(self.machine)
        self.recompute()

    # --- results ------------------------------------------------------------------------------
    @property
    def result(self) -> SizingResult | None:
        return self.recommendation.result if self.recommendation is not None else None

    @property
    def findings(self) -> tuple[Any, ...]:
        return self.recommendation.findings if self.recommendation is not None else ()

    def recompute(self) -> None:
        problems = [self.page_problem(i) for i in range(len(self.pages) - 1)]
        problem = next((p for p in problems if p), None)
        if problem:
            self.message.setText("")
            self._unsized(problem, said_here=False)  # the page that has it says it
            return
        names = [n for n in self.doc["hardware"]["candidates"] if n != THIS_MACHINE or self.machine is not None]
        if not names:
            self._unsized("this machine is the only candidate and it is still being detected", said_here=False)
            return
        try:
            workload = parse_workload(self.doc)
            devices, _ = resolve_candidates(names, workload, self.machine or _placeholder(), self.user_devices)
            rec = recommend(
                workload,
                devices,
                host_ram_bytes=self.machine.ram_total_bytes if self.machine else None,
                calibrated=calibrated_rates(
                    devices,
                    self.calibration,
                    self.machine,
                    runs=self.runs,
                    model_key=workload.model_key,
                ),
                inventory=self.inventory,
            )
        except TrainRigError as exc:  # a value no page checks (more outputs than the model gives): said, unsized
            self._unsized(str(exc))
            return
        self.recommendation = rec
        self._say_sizing_problem(None)
        if self.measured is not None and _measure_key(workload) != self._measured_key:
            self.measured = None  # measured at another batch, precision or model: no longer this workload's step
            self.results.measure_panel.status.setText(
                "The measurement was for other training settings: measure again for these"
            )
        self.results.model.set_measured(self.measured)
        self.results.show_result(rec)
        self.sized.emit(rec.result)

    def _unsized(self, why: str, said_here: bool = True) -> None:
        """No figures for the workload as the pages hold it: the last ones are neither shown nor exported nor
        recorded (they stood beside a workload they were not for, and "Save sizing" recorded them with it).
        ``said_here``: ``why`` is said on every page (no page says it itself)."""
        self.recommendation = None
        self.results.show_unsized(why)
        self._say_sizing_problem(why if said_here else None)

    def _say_sizing_problem(self, why: str | None) -> None:
        """``why`` the pages' workload has no figures, said on every page; None: it has them, or the page
        with the problem says it."""
        if why != self.sizing_problem:
            self.sizing_problem = why
            self._update_navigation()

    # --- measure on this GPU ------------------------------------------------------------------
    def measure_here(self) -> None:
        """Measure the workload on this machine's GPU and scale it to the sized candidates."""
        if self.recommendation is None:
            self._say("Nothing to measure yet: complete the pages first.")
            return
        workload = self.recommendation.result.workload
        devices = list({c.device.name: c.device for c in self.recommendation.result.candidates}.values())
        self._measuring_key = _measure_key(workload)
        ref = (self.doc.get("model", {}).get("trace") or {}).get("file")
        code_dir = self.model_page.trusted_code.get(str(ref)) if ref else None  # imported here, agreed to
        self.results.measure_panel.start(workload, devices, self.catalogue, self.python_for_runs(), code_dir)

    def _measured(self, result: ScaleResult) -> None:
        now = _measure_key(self.recommendation.result.workload) if self.recommendation is not None else None
        if now != self._measuring_key:  # the settings changed while it measured
            self.results.measure_panel.status.setText(
                "The training settings changed while measuring: measure again for these"
            )
            return
        self.measured, self._measured_key = result, self._measuring_key
        self.results.model.set_measured(result)

    def _what_if(self, values: dict[str, Any]) -> None:
        self._collect()
        self.doc["training"]["batch_size"] = values["batch_size"]
        self.doc["training"]["precision"] = values["precision"]
        gc = self.doc["hardware"].get("gpu_count", {"min": 1, "max": 1})
        lo = gc.get("min", 1) if isinstance(gc, dict) else gc
        self.doc["hardware"]["gpu_count"] = {"min": min(lo, values["gpus"]), "max": values["gpus"]}
        self._loading = True
        self.training.load(self.doc)
        self.candidates.load(self.doc)
        self._loading = False
        self._changed()

    def _say(self, text: str, error: bool = True) -> bool:
        self.message.setText(fit_message(text))
        self.message.setStyleSheet("color: #d9534f;" if error else "")
        return not error


def _placeholder() -> MachineSummary:
    return MachineSummary("unknown CPU", "unknown", 1, 1, 1, None, "not detected yet", frozenset(), None, None, 0, 0)


def _measure_key(workload: Any) -> tuple[Any, ...]:
    """What a measured step depends on: the model and every training setting the measurement runs with
    (telemetry/measure.py measure_spec), and checkpointing, which it does not run (changing cuDNN's algorithm
    search, TF32, the memory format, the attention or checkpointing kept the old step's scaled figures)."""
    t = workload.training
    return (
        workload.model_key,
        t.batch_size,
        t.optimizer,
        t.precision,
        t.cudnn_tf32,
        t.cudnn_benchmark,
        t.memory_format,
        t.large.attention,
        t.checkpointing,
    )
