"""The main window: one tab per part of the app, remembered geometry, keyboard shortcuts."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QByteArray, QSettings, Qt
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QShowEvent
from PySide6.QtWidgets import QMainWindow, QMessageBox, QSplitter

from core import __version__
from core.storage.store import Store
from gui.tabs.inventory_tab import InventoryTab
from gui.tabs.results_tab import ResultsTab
from gui.tabs.telemetry_tab import TelemetryTab
from gui.widgets.tab_widget import TabWidget
from gui.wizard.wizard import SizingWizard


class MainWindow(QMainWindow):
    def __init__(self, store: Store | None) -> None:
        super().__init__()
        self.setWindowTitle("TrainRig")
        self.store = store
        self.tabs = TabWidget()
        self.inventory_tab = InventoryTab(store)
        self.sizing_tab = SizingWizard(store)
        self.tabs.addTab(self.inventory_tab, "&Inventory")
        self.telemetry_tab = TelemetryTab(store, self.sizing_tab, self._python_for_runs)
        self.tabs.addTab(self.sizing_tab, "&Sizing wizard")
        self.tabs.addTab(self.telemetry_tab, "&Telemetry")
        self.results_tab = ResultsTab(store, self.sizing_tab)
        self.tabs.addTab(self.results_tab, "&Results")
        self.results_tab.show_wizard.connect(lambda: self.tabs.setCurrentWidget(self.sizing_tab))
        self.results_tab.rerun_requested.connect(self._rerun)
        self.telemetry_tab.experiment_saved.connect(lambda _eid: self.results_tab.refresh())
        self.telemetry_tab.show_result.connect(self._show_result)
        self.sizing_tab.results.run_here.connect(self._run_here)
        self.sizing_tab.python_for_runs = self._python_for_runs
        self.inventory_tab.detected.connect(self.sizing_tab.set_inventory)
        self.inventory_tab.calibrated.connect(self.sizing_tab.set_calibration)
        self.setCentralWidget(self.tabs)
        self._menus()
        settings = QSettings()
        geometry = settings.value("main_window/geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        else:
            self.resize(1280, 760)
        self.tabs.setCurrentIndex(int(settings.value("main_window/tab", 0) or 0))
        self._panes_restored = False  # the panes as the user left them, once the window has its size (showEvent)
        if store is not None and store.path is not None:
            self.statusBar().showMessage(f"Database: {store.path}")

    def _menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        wiz, res = self.sizing_tab, self.results_tab
        self.file_actions: dict[str, QAction] = {}
        for key, label, shortcut, slot in (
            ("open", "&Open workload…", QKeySequence(QKeySequence.StandardKey.Open), wiz.open_dialog),
            ("save_as", "Save workload &as…", QKeySequence("Ctrl+Shift+S"), wiz.save_dialog),
            ("save_sizing", "&Save sizing", QKeySequence(QKeySequence.StandardKey.Save), wiz.save_sizing),
            ("export", "&Export report…", QKeySequence("Ctrl+E"), wiz.export_dialog),
            ("export_archive", "Export results a&rchive…", QKeySequence(), self._results(res.export_archive)),
            ("import_archive", "&Import results archive…", QKeySequence(), self._results(res.import_archive)),
            ("quit", "&Quit", QKeySequence(QKeySequence.StandardKey.Quit), self.close),
        ):
            if key in ("export_archive", "quit"):
                file_menu.addSeparator()
            action = QAction(label, self, shortcut=shortcut)
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            action.triggered.connect(slot)
            file_menu.addAction(action)
            self.file_actions[key] = action
        help_menu = self.menuBar().addMenu("&Help")
        about = QAction("&About TrainRig", self)
        about.triggered.connect(self._about)
        help_menu.addAction(about)

    def _results(self, slot: Callable[[], None]) -> Callable[[], None]:
        """A Results tab action from the File menu: the tab is shown, then the action runs."""

        def shown_then_run() -> None:
            self.tabs.setCurrentWidget(self.results_tab)
            slot()

        return shown_then_run

    def _about(self) -> None:
        QMessageBox.about(
            self,
            "About TrainRig",
            f"TrainRig {__version__}\n\nTrainRig sizes the hardware a neural network needs to train.\n\n"
            "Formulas: Jamgharyan 2024 (after Subbotin 2003), Hooda 2023; scaling observations: Wünsche 2016; "
            "hyperparameter effects: Finocchiaro; storage: Panaite & Leba 2024.",
        )

    def _run_here(self) -> None:
        self.tabs.setCurrentWidget(self.telemetry_tab)
        self.telemetry_tab.run_wizard_workload()

    def _show_result(self, kind: str, id_: int) -> None:
        self.tabs.setCurrentWidget(self.results_tab)
        self.results_tab.show_key(kind, id_)

    def _rerun(self, stored: object, name: str) -> None:
        self.tabs.setCurrentWidget(self.telemetry_tab)  # where the run, or why it cannot start, shows
        self.telemetry_tab.rerun(stored, name)

    def _python_for_runs(self) -> str | None:
        """The Python with PyTorch the Inventory tab found or the user chose."""
        env = self.inventory_tab.torch_env
        return env.python if env is not None and env.ok else (QSettings().value("pytorch/python") or None)

    def closeEvent(self, event: QCloseEvent) -> None:
        if not self.sizing_tab.confirm_close() or not self.telemetry_tab.confirm_close():
            event.ignore()
            return
        settings = QSettings()
        settings.setValue("main_window/geometry", self.saveGeometry())
        settings.setValue("main_window/tab", self.tabs.currentIndex())
        for split in self._splitters():
            settings.setValue(f"splitters/{split.objectName()}", split.saveState())
        super().closeEvent(event)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._panes_restored:
            self._panes_restored = True
            settings = QSettings()
            for split in self._splitters():  # only the window's geometry and tab were kept
                state = settings.value(f"splitters/{split.objectName()}")
                if isinstance(state, QByteArray) and not state.isEmpty():
                    split.restoreState(state)

    def _splitters(self) -> list[QSplitter]:
        return [s for s in self.findChildren(QSplitter) if s.objectName()]
