"""Table model of everything in the store: sizings, runs, experiments, inventories, calibrations.

Rows come from ``Store.results()`` a page at a time (``canFetchMore``/``fetchMore``), and sorting
and filtering are the store's SQL. No QSortFilterProxyModel: a proxy sorts and filters the rows
its source has loaded, so it would either sort only the first page (wrong) or force every page to
load first (10,000 rows formatted before the table shows). ``sort()`` and ``set_filters()`` re-query
instead: the database answers from its indexes and only one page is formatted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from core.errors import TrainRigError
from core.storage.error_log import unexpected_message
from core.storage.store import Store
from core.units import fmt_bytes, fmt_seconds

PAGE = 200  # rows fetched at once: a screenful many times over, formatted in a few milliseconds

KINDS = ("sizing", "run", "experiment", "inventory", "calibration")
KIND_LABELS = {
    "sizing": "Sizing",
    "run": "Run",
    "experiment": "Experiment",
    "inventory": "Inventory",
    "calibration": "Calibration",
}

# (header, row key the store sorts by, tooltip saying what the figure is and where it comes from)
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("Kind", "kind", "What the entry is: a sizing, a training run, an experiment, an inventory or a calibration"),
    ("Name", "name", "The workload's name (a run: the workload it trained); Rename… (F2) changes it"),
    ("Date", "created", "When it was recorded (a run: when it started), in this computer's time zone"),
    ("Machine", "machine", "The computer it was recorded on (its host name, from its inventory)"),
    (
        "Device(s)",
        "devices",
        "A run: the device it trained on (and, in brackets, the one its prediction was sized for); a sizing: the "
        "candidates it compared; an inventory or calibration: the machine's CPU and GPUs",
    ),
    (
        "Predicted step",
        "predicted_step_s",
        "The time of one training step a sizing predicted. A run: the this-machine prediction it was started "
        "with; a sizing: the candidate its decision advises (used here, bought or rented), else the first that "
        "fits; empty, with the status 'no candidate fits', when none does",
    ),
    (
        "Measured step",
        "measured_step_s",
        "The median training step the run measured (the trainer's own timer, warm-up steps left out)",
    ),
    (
        "Training time",
        "training_time_s",
        "A run: the training time the trainer measured; a sizing: the chosen candidate's predicted time of the "
        "whole training",
    ),
    (
        "Peak memory",
        "peak_memory_bytes",
        "A run: the training step's memory it measured (on a GPU torch.cuda.max_memory_allocated; on the CPU how "
        "far the process's peak RSS grew once PyTorch and the data were loaded); a sizing: the chosen candidate's "
        "predicted memory per device",
    ),
    ("Accuracy", "accuracy", "The held-out accuracy the run measured on its test split (fixed seeds)"),
    ("F1", "f1", "The held-out macro F1 the run measured (the mean of the per-class F1 scores)"),
    ("Tags", "tags", "Your tags (Tag…); the Tag box filters by one. Not sortable: a list"),
    ("Notes", "notes", "Your notes (Notes…)"),
)
(
    COL_KIND,
    COL_NAME,
    COL_DATE,
    COL_MACHINE,
    COL_DEVICES,
    COL_PREDICTED,
    COL_MEASURED,
    COL_TIME,
    COL_MEMORY,
    COL_ACCURACY,
    COL_F1,
    COL_TAGS,
    COL_NOTES,
) = range(len(COLUMNS))
UNSORTABLE = {COL_TAGS}  # a list: the store sorts by the other columns only
NUMERIC = {COL_PREDICTED, COL_MEASURED, COL_TIME, COL_MEMORY, COL_ACCURACY, COL_F1}
SORT_ROLE = Qt.ItemDataRole.UserRole
ROW_ROLE = Qt.ItemDataRole.UserRole + 1
KEY_ROLE = Qt.ItemDataRole.UserRole + 2


def local_date(created: str | None) -> str:
    """An ISO timestamp (UTC) as this computer's local "2026-11-23 19:20"; the text as is if unreadable."""
    if not created:
        return ""
    try:
        return datetime.fromisoformat(created).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return created


def _score(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def row_texts(row: dict[str, Any]) -> list[str]:
    """What each column shows for a store row: figures with their units, blanks where none."""

    def opt(value: Any, fmt: Any) -> str:
        return "" if value is None else fmt(value)

    return [
        KIND_LABELS.get(row.get("kind") or "", str(row.get("kind") or "")),
        str(row.get("name") or ""),
        local_date(row.get("created")),
        str(row.get("machine") or ""),
        str(row.get("devices") or ""),
        # a sizing no candidate fits shows it where the step would be, not a step that cannot be trained
        "no fit" if row.get("status") == "no candidate fits" else opt(row.get("predicted_step_s"), fmt_seconds),
        opt(row.get("measured_step_s"), fmt_seconds),
        opt(row.get("training_time_s"), fmt_seconds),
        opt(row.get("peak_memory_bytes"), fmt_bytes),
        _score(row.get("accuracy")),
        _score(row.get("f1")),
        ", ".join(row.get("tags") or []),
        " ".join(str(row.get("notes") or "").split()),  # one line in the table; the whole text in the tooltip
    ]


def row_sort_values(row: dict[str, Any]) -> list[Any]:
    """The raw value of each column (seconds, bytes, fractions; None where there is none)."""
    return [
        row.get("kind"),
        row.get("name"),
        row.get("created"),
        row.get("machine"),
        row.get("devices"),
        row.get("predicted_step_s"),
        row.get("measured_step_s"),
        row.get("training_time_s"),
        row.get("peak_memory_bytes"),
        row.get("accuracy"),
        row.get("f1"),
        ", ".join(row.get("tags") or []),
        row.get("notes") or "",
    ]


class ResultsModel(QAbstractTableModel):
    """The store's results, a page at a time, in the store's order, under the current filters."""

    def __init__(self, store: Store | None, page: int = PAGE) -> None:
        super().__init__()
        self.store = store
        self.page = page
        self.filters: dict[str, Any] = {}
        self.order_by = "created"
        self.descending = True
        self.total = 0
        self.error = ""  # the store's message when the last query failed (shown by the tab)
        self._rows: list[dict[str, Any]] = []
        self._texts: list[list[str]] = []  # formatted once per row, read on every paint
        self._sorts: list[list[Any]] = []
        self._resetting = False

    # --- queries --------------------------------------------------------------------------------
    def set_filters(self, **filters: Any) -> None:
        """Filter as ``Store.results`` does (kind, text, tag, machine, since, until); None or "" is no filter."""
        self.filters = {k: v for k, v in filters.items() if v not in (None, "")}
        self.refresh()

    def refresh(self) -> None:
        """Re-query the first page (and the count) under the current filters and order."""
        self.beginResetModel()
        self._rows, self._texts, self._sorts = [], [], []
        self.total, self.error = 0, ""
        if self.store is not None:
            try:
                self.total = int(self.store.results_count(**self.filters))
                self._append(self._query(0, self.page))
            except Exception as exc:  # a damaged database: the table stays empty and says why
                self.total, self._rows, self._texts, self._sorts = 0, [], [], []
                self.error = str(exc) if isinstance(exc, TrainRigError) else unexpected_message(exc, "results table")
        # a slot of modelReset that asks for more rows (a view, Qt's model tester) would insert them
        # while the reset is still being announced; it gets them on its next ask
        self._resetting = True
        try:
            self.endResetModel()
        finally:
            self._resetting = False

    def _query(self, offset: int, limit: int) -> list[dict[str, Any]]:
        assert self.store is not None
        return list(
            self.store.results(
                **self.filters, order_by=self.order_by, descending=self.descending, limit=limit, offset=offset
            )
        )

    def _append(self, rows: list[dict[str, Any]]) -> None:
        self._rows += rows
        self._texts += [row_texts(r) for r in rows]
        self._sorts += [row_sort_values(r) for r in rows]

    def canFetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> bool:  # noqa: B008
        return not parent.isValid() and len(self._rows) < self.total

    def fetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> None:  # noqa: B008
        if parent.isValid() or self.store is None or self._resetting:
            return
        try:
            rows = self._query(len(self._rows), self.page)
        except Exception as exc:  # the table keeps what it has and says why
            self.error = str(exc) if isinstance(exc, TrainRigError) else unexpected_message(exc, "results table")
            self.total = len(self._rows)
            return
        if not rows:  # deleted meanwhile by another program: stop asking
            self.total = len(self._rows)
            return
        first = len(self._rows)
        self.beginInsertRows(QModelIndex(), first, first + len(rows) - 1)
        self._append(rows)
        self.endInsertRows()

    def fetch_all(self) -> None:
        """Load every page (a "select all" of a filtered set of runs for export)."""
        while self.canFetchMore():
            before = len(self._rows)
            self.fetchMore()
            if len(self._rows) == before:
                break

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        if not 0 <= column < len(COLUMNS) or column in UNSORTABLE:
            return
        key, descending = COLUMNS[column][1], order == Qt.SortOrder.DescendingOrder
        if (key, descending) == (self.order_by, self.descending) and self._rows:
            return
        self.order_by, self.descending = key, descending
        self.refresh()

    # --- rows -----------------------------------------------------------------------------------
    def row(self, i: int) -> dict[str, Any]:
        return self._rows[i]

    def rows(self) -> list[dict[str, Any]]:
        return list(self._rows)

    def key(self, i: int) -> tuple[str, int]:
        r = self._rows[i]
        return str(r["kind"]), int(r["id"])

    def row_of(self, kind: str, id_: int) -> int | None:
        for i, r in enumerate(self._rows):
            if r["kind"] == kind and int(r["id"]) == id_:
                return i
        return None

    # --- Qt -------------------------------------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(COLUMNS):
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section][0]
        if role == Qt.ItemDataRole.ToolTipRole:
            return COLUMNS[section][2]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        i, col = index.row(), index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._texts[i][col]
        if role == SORT_ROLE:
            return self._sorts[i][col]
        if role == ROW_ROLE:
            return self._rows[i]
        if role == KEY_ROLE:
            return self.key(i)
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(i, col)
        if role == Qt.ItemDataRole.TextAlignmentRole and col in NUMERIC:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def _tooltip(self, i: int, col: int) -> str:
        r = self._rows[i]
        what = f"{KIND_LABELS.get(r['kind'], r['kind'])} #{r['id']}"
        if col == COL_NOTES and r.get("notes"):
            return f"{what}: {r['notes']}"
        if col == COL_DATE and r.get("created"):
            return f"{what}, recorded {local_date(r['created'])} (stored as {r['created']} UTC)"
        text = self._texts[i][col]
        if col in NUMERIC and not text:
            return f"{what}: {COLUMNS[col][0].lower()} — not recorded for this {r['kind']}"
        return f"{what}: {COLUMNS[col][2]}"
