"""The Results tab: every sizing, run, experiment, inventory and calibration in the database, in
one table that filters as you type and sorts by any column (the database does both), with the
details of the selected result below and several runs' telemetry overlaid in Compare.

Reading a result's details and samples, deleting, exporting and importing run in the thread pool
(gui/workers.py); the table itself fetches a page of rows at a time (gui/models/results_model.py).
The actions (tag, rename, delete, export…) are in gui/tabs/results_actions.py."""

from __future__ import annotations

from datetime import UTC, datetime, time
from typing import Any

from PySide6.QtCore import QDate, QItemSelectionModel, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDateEdit,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from core.errors import TrainRigError
from core.storage.store import Store
from gui.models.results_model import (
    COL_DATE,
    COL_NAME,
    COL_NOTES,
    COLUMNS,
    KIND_LABELS,
    KINDS,
    UNSORTABLE,
    ResultsModel,
)
from gui.tabs.results_actions import ResultsActions
from gui.widgets.compare_plots import ComparePlots, RunCurves
from gui.widgets.flow_layout import flow_row
from gui.widgets.message import fit_message
from gui.widgets.result_details import ResultDetails
from gui.widgets.result_html import run_of, sizings_side_by_side_html
from gui.widgets.tab_widget import TabWidget
from gui.workers import Job, start_job

DEBOUNCE_MS = 150  # the filter follows typing, re-querying once the typing pauses
DETAILS_DELAY_MS = 60  # arrow keys held down through the table load only the row they stop on


class ResultsTab(ResultsActions, QWidget):
    show_wizard = Signal()  # a sizing was opened in the wizard: the main window shows it
    rerun_requested = Signal(object, str)  # a run's stored workload and trainer settings, its name

    def __init__(self, store: Store | None, wizard: Any = None, parent: QWidget | None = None) -> None:
        QWidget.__init__(self, parent)
        self.store = store
        self.wizard = wizard
        self.model = ResultsModel(store)
        self._jobs: list[Job] = []
        self._detail_generation = 0
        self._compare_generation = 0
        self.busy = False

        # --- filters ---------------------------------------------------------------------------
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search names, machines, devices, tags and notes")
        self.search.setClearButtonEnabled(True)
        self.search.setToolTip("Filters as you type (case-insensitive, any part of the text)")
        self.kind = QComboBox()
        self.kind.addItem("All kinds", None)
        for k in KINDS:
            self.kind.addItem(KIND_LABELS[k] + "s", k)
        self.since_on, self.until_on = QCheckBox("From"), QCheckBox("to")
        today = QDate.currentDate()
        self.since, self.until = _date_edit(today.addDays(-30)), _date_edit(today)
        for box, edit in ((self.since_on, self.since), (self.until_on, self.until)):
            box.setToolTip("Only results recorded on or after this day" if box is self.since_on else "… or before")
            edit.setEnabled(False)
            box.toggled.connect(edit.setEnabled)
        self.machine, self.tag = _free_combo("any machine"), _free_combo("any tag")
        self.machine.setToolTip("Only results recorded on this computer (its host name)")
        self.tag.setToolTip("Only results with this tag")
        self.count = QLabel()
        filters = QHBoxLayout()
        filters.addWidget(self.search, 3)
        for label, w in (("Kind", self.kind), ("Machine", self.machine), ("Tag", self.tag)):
            filters.addWidget(QLabel(label))
            filters.addWidget(w, 1)
        for w in (self.since_on, self.since, self.until_on, self.until, self.count):
            filters.addWidget(w)
        self._debounce = QTimer(self, singleShot=True, interval=DEBOUNCE_MS, timeout=self.apply_filters)
        self.search.textChanged.connect(self._debounce.start)
        self.machine.editTextChanged.connect(self._debounce.start)
        self.tag.editTextChanged.connect(self._debounce.start)
        self.kind.currentIndexChanged.connect(self.apply_filters)
        for w in (self.since_on, self.until_on):
            w.toggled.connect(self.apply_filters)
        for d in (self.since, self.until):
            d.dateChanged.connect(self._debounce.start)

        # --- the table -------------------------------------------------------------------------
        self.table = QTableView()
        self.table.setTabKeyNavigation(False)  # Tab leaves the table (the arrows move in it)
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 8)
        header = self.table.horizontalHeader()
        header.setSortIndicator(COL_DATE, Qt.SortOrder.DescendingOrder)  # newest first, as the store answers
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        self.table.setSortingEnabled(True)
        self._sort_indicator = (COL_DATE, Qt.SortOrder.DescendingOrder)
        header.sortIndicatorChanged.connect(self._sort_indicator_changed)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._context_menu)
        self.table.doubleClicked.connect(self._activated)
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        self._details_timer = QTimer(self, singleShot=True, interval=DETAILS_DELAY_MS, timeout=self._load_details)

        # --- actions ---------------------------------------------------------------------------
        self.buttons: dict[str, QPushButton] = {}
        for key, label, tip, slot in self.action_specs():
            b = QPushButton(label)
            b.setToolTip(tip)
            b.clicked.connect(slot)
            self.buttons[key] = b
        bar = flow_row(*self.buttons.values())  # wraps in a narrow window instead of widening it
        for key, seq in (("undo", QKeySequence.StandardKey.Undo), ("delete", QKeySequence.StandardKey.Delete)):
            QShortcut(QKeySequence(seq), self, self.undo if key == "undo" else self.delete_selected).setContext(
                Qt.ShortcutContext.WidgetWithChildrenShortcut
            )
        QShortcut(QKeySequence(Qt.Key.Key_F2), self, self.rename_selected).setContext(
            Qt.ShortcutContext.WidgetWithChildrenShortcut
        )

        # --- details and compare ---------------------------------------------------------------
        self.details = ResultDetails()
        self.compare = ComparePlots()
        self.pane = TabWidget()
        self.pane.addTab(self.details, "Details")
        self.pane.addTab(self.compare, "Compare")
        self.split = split = QSplitter(Qt.Orientation.Vertical)
        self.split.setObjectName("results_list")  # its sizes are remembered (gui/main_window.py)
        split.addWidget(self.table)
        split.addWidget(self.pane)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        split.setSizes([280, 420])  # about ten rows above the details and plots
        split.setChildrenCollapsible(False)

        # --- status line -----------------------------------------------------------------------
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.undo_button = QPushButton("Undo")
        self.undo_button.setToolTip("Bring back what the last delete removed  [Ctrl+Z]")
        self.undo_button.clicked.connect(self.undo)
        self.undo_button.setVisible(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)  # busy: the store's exports report no fraction
        self.progress.setMaximumWidth(160)
        self.progress.setVisible(False)
        status = QHBoxLayout()
        status.addWidget(self.message, 1)
        status.addWidget(self.progress)
        status.addWidget(self.undo_button)

        layout = QVBoxLayout(self)
        layout.addLayout(filters)
        layout.addWidget(bar)
        layout.addWidget(split, 1)
        layout.addLayout(status)
        self._refreshed_once = False
        self._seen: object = ()
        self._update_buttons()
        if store is None:
            self.say("No database is open: results are not recorded this time.", error=True)

    # --- querying -------------------------------------------------------------------------------
    def filters(self) -> dict[str, Any]:
        """The filter bar's values as ``Store.results`` takes them."""
        since = _utc_iso(self.since.date(), time.min) if self.since_on.isChecked() else None
        until = _utc_iso(self.until.date(), time.max) if self.until_on.isChecked() else None
        return {
            "kind": self.kind.currentData(),
            "text": self.search.text().strip(),
            "machine": self.machine.currentText().strip() or None,
            "tag": self.tag.currentText().strip() or None,
            "since": since,
            "until": until,
        }

    def apply_filters(self) -> None:
        self._debounce.stop()
        keep = self.selected_keys()
        self.model.set_filters(**self.filters())
        self._after_query(keep)

    def refresh(self) -> None:
        """Re-read the table (after a change here or elsewhere), keeping the selection."""
        keep = self.selected_keys()
        self.model.refresh()
        self._after_query(keep)

    def _after_query(self, keep: list[tuple[str, int]]) -> None:
        self._seen = self._store_state()
        if self.model.error:
            self.say(f"The results cannot be read: {self.model.error}", error=True)
        shown, total = self.model.rowCount(), self.model.total
        self.count.setText(f"{total:,} result{'s' if total != 1 else ''}")
        self.count.setToolTip(f"{shown:,} loaded; more load as you scroll" if shown < total else "")
        self._fill_choices()
        if not self._refreshed_once and shown:
            self._refreshed_once = True
            self._size_columns()
        self.select_keys(keep)
        self._update_buttons()  # Export archive… has nothing to export in an empty database
        if not self.selected_keys():  # the empty state says how to fill the list, or that the filters hide all
            self._load_details()

    def _fill_choices(self) -> None:
        """The machines and tags in use, offered in their filter boxes (typing one works as well)."""
        if self.store is None:
            return
        try:
            choices = ((self.machine, self.store.result_machines()), (self.tag, self.store.result_tags()))
        except TrainRigError:
            return  # the table's own query said what is wrong
        for combo, values in choices:
            have = [combo.itemText(i) for i in range(1, combo.count())]
            if have != list(values):
                combo.blockSignals(True)
                text = combo.currentText()
                while combo.count() > 1:
                    combo.removeItem(1)
                combo.addItems(list(values))
                combo.setEditText(text)
                combo.blockSignals(False)

    def _size_columns(self) -> None:
        self.table.resizeColumnsToContents()
        header = self.table.horizontalHeader()
        for col in range(len(COLUMNS)):
            limit = 240 if col == COL_NAME else 170
            if col != COL_NOTES and header.sectionSize(col) > limit:
                header.resizeSection(col, limit)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        # runs and sizings recorded in the other tabs since it was last shown; unchanged, the table
        # keeps its pages and scroll position
        if self._seen != self._store_state():
            self.refresh()

    def _store_state(self) -> object:
        """What changes when something is recorded elsewhere: the count and the newest row (a run
        that finished meanwhile is the newest, or was when the tab was last shown)."""
        if self.store is None:
            return None
        try:
            return self.store.results_count(), self.store.results(limit=1)
        except TrainRigError as exc:
            return str(exc)

    def _sort_indicator_changed(self, column: int, order: Qt.SortOrder) -> None:
        """Tags are a list the store does not sort by: the header keeps showing the real order."""
        if column in UNSORTABLE:
            header = self.table.horizontalHeader()
            header.blockSignals(True)
            header.setSortIndicator(*self._sort_indicator)
            header.blockSignals(False)
        else:
            self._sort_indicator = (column, order)

    # --- selection ------------------------------------------------------------------------------
    def selected_rows(self) -> list[int]:
        return sorted(i.row() for i in self.table.selectionModel().selectedRows())

    def selected_keys(self) -> list[tuple[str, int]]:
        return [self.model.key(i) for i in self.selected_rows()]

    def selected_run_ids(self) -> list[int]:
        return [id_ for kind, id_ in self.selected_keys() if kind == "run"]

    def select_keys(self, keys: list[tuple[str, int]]) -> None:
        sel = self.table.selectionModel()
        sel.clearSelection()
        flags = QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows
        first = None
        for kind, id_ in keys:
            row = self.model.row_of(kind, id_)
            if row is not None:
                sel.select(self.model.index(row, 0), flags)
                first = row if first is None else first
        if first is not None:
            sel.setCurrentIndex(self.model.index(first, 0), QItemSelectionModel.SelectionFlag.NoUpdate)

    def select_rows(self, rows: list[int]) -> None:
        self.select_keys([self.model.key(r) for r in rows])

    def _selection_changed(self) -> None:
        self._update_buttons()
        self._details_timer.start()

    def _activated(self) -> None:
        keys = self.selected_keys()
        if len(keys) == 1 and keys[0][0] == "sizing":
            self.open_in_wizard()

    # --- details --------------------------------------------------------------------------------
    def _load_details(self) -> None:
        keys = self.selected_keys()
        self._detail_generation += 1
        if len(keys) > 1 and all(k == "sizing" for k, _ in keys) and self.store is not None:
            self._load_sizings([id_ for _k, id_ in keys])
            return
        if len(keys) != 1:
            runs = sum(1 for k, _ in keys if k == "run")
            self.details.show_message(
                f"{len(keys)} results selected ({runs} runs): Compare overlays the runs' telemetry."
                if keys
                else "Select a result to see its details; select several runs and Compare to overlay them."
                if self.model.total
                else "No results match the filters."
                if self.model.filters
                else "No results yet. Save a sizing from the wizard (Save sizing, Ctrl+S), train a workload on the "
                "Telemetry tab, or import a results archive (Import archive…)."
            )
            return
        if self.store is None:
            return
        kind, id_ = keys[0]
        store, generation = self.store, self._detail_generation

        def work() -> tuple[dict[str, Any] | None, Any]:
            detail = store.result_detail(kind, id_)
            series = store.run_series(id_) if kind == "run" and detail is not None else None
            return detail, series

        def done(result: tuple[dict[str, Any] | None, Any]) -> None:
            if generation != self._detail_generation:
                return  # another row was selected meanwhile
            detail, series = result
            if detail is None:
                self.details.show_message(f"{KIND_LABELS.get(kind, kind)} #{id_} is no longer in the database.")
            else:
                self.details.show_result(kind, detail, series)

        self.run_job(work, done, lambda msg: self.details.show_message(f"The details cannot be read: {msg}"))

    def _load_sizings(self, ids: list[int]) -> None:
        """Several sizings selected: their settings and candidates side by side."""
        assert self.store is not None
        store, generation = self.store, self._detail_generation

        def work() -> list[dict[str, Any]]:
            return [d for d in (store.result_detail("sizing", i) for i in ids) if d is not None]

        def done(details: list[dict[str, Any]]) -> None:
            if generation != self._detail_generation:
                return
            if len(details) < 2:
                self.details.show_message("The selected sizings are no longer in the database.")
            else:
                self.details.show_html(sizings_side_by_side_html(details), "sizings")

        self.run_job(work, done, lambda msg: self.details.show_message(f"The sizings cannot be read: {msg}"))

    # --- compare --------------------------------------------------------------------------------
    def compare_selected(self) -> None:
        """Overlay the selected runs and the runs of the selected experiments."""
        ids = self.selected_run_ids()
        experiments = [id_ for kind, id_ in self.selected_keys() if kind == "experiment"]
        if not (ids or experiments) or self.store is None:
            self.say(
                "Select one or more runs or experiments to compare (sizings, inventories and calibrations have no "
                "curves)."
            )
            return
        store = self.store
        self._compare_generation += 1
        generation = self._compare_generation

        def work() -> list[RunCurves]:
            out = []
            for eid in experiments:
                ids.extend(i for i in (store.experiment(eid) or {}).get("run_ids") or [] if i not in ids)
            for id_ in ids:
                detail = run_of(store.result_detail("run", id_) or {})
                columns, t, values = store.run_series(id_)
                sampling = detail.get("sampling") or {}
                out.append(
                    RunCurves(
                        id_,
                        str(detail.get("name") or f"run {id_}"),
                        list(columns),
                        t,
                        values,
                        list(detail.get("progress") or []),
                        dict(sampling.get("limits") or {}),
                        detail,
                    )
                )
            return out

        def done(runs: list[RunCurves]) -> None:
            if generation != self._compare_generation:
                return
            if not runs:
                self.say("The selected experiments have no runs in this database to compare.")
                return
            self.compare.set_runs(runs)
            self.pane.setCurrentWidget(self.compare)
            sizes = self.split.sizes()
            if sum(sizes) > 500 and sizes[0] > 170:  # the plots need the height; five rows stay in view
                self.split.setSizes([170, sum(sizes) - 170])
            counts = self.compare.curve_counts()
            self.say(f"Comparing {len(runs)} run{'s' if len(runs) != 1 else ''} on {len(counts)} metrics.", error=False)

        what = f"{len(ids)} run{'s' if len(ids) != 1 else ''}" if not experiments else "the selected runs"
        self.say(f"Reading the samples of {what}…", error=False)
        self.run_job(work, done, lambda msg: self.say(f"The runs cannot be compared: {msg}", error=True))

    def show_key(self, kind: str, id_: int) -> None:
        """Show one result (an experiment the Telemetry tab just stored): the table re-read, the
        result selected, its details below."""
        self.refresh()
        self.select_keys([(kind, id_)])
        if (kind, id_) not in self.selected_keys():
            self.say(f"{kind.capitalize()} #{id_} is hidden by the filters above: clear them to see it.")

    # --- plumbing -------------------------------------------------------------------------------
    def run_job(self, fn: Any, on_done: Any, on_failed: Any, *, busy: bool = False) -> None:
        """``fn`` in the thread pool; ``busy`` shows the progress bar and holds the writing actions."""
        holder: list[Job] = []

        def finished(result: Any) -> None:
            self._job_over(holder, busy)
            on_done(result)

        def failed(message: str) -> None:
            self._job_over(holder, busy)
            on_failed(message)

        if busy:
            self.busy = True
            self.progress.setVisible(True)
            self._update_buttons()
        job = start_job(fn, finished, failed)
        holder.append(job)
        self._jobs.append(job)

    def _job_over(self, holder: list[Job], busy: bool) -> None:
        for job in holder:
            if job in self._jobs:
                self._jobs.remove(job)
        if busy:
            self.busy = False
            self.progress.setVisible(False)
            self._update_buttons()

    def say(self, text: str, error: bool = True) -> None:
        self.message.setText(fit_message(text))
        self.message.setStyleSheet("color: #d9534f;" if error else "")


def _date_edit(day: QDate) -> QDateEdit:
    d = QDateEdit(day)
    d.setCalendarPopup(True)
    d.setDisplayFormat("yyyy-MM-dd")
    return d


def _free_combo(placeholder: str) -> QComboBox:
    c = QComboBox()
    c.setEditable(True)
    c.addItem("")
    c.lineEdit().setPlaceholderText(placeholder)
    c.lineEdit().setClearButtonEnabled(True)
    c.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
    c.setMinimumContentsLength(10)
    return c


def _utc_iso(day: QDate, at: time) -> str:
    """The local day's first (or last) second as the UTC ISO timestamp the store records."""
    local = datetime(day.year(), day.month(), day.day(), at.hour, at.minute, at.second).astimezone()
    return local.astimezone(UTC).isoformat(timespec="seconds")
