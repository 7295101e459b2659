"""What the Results tab does to the selected results: open a sizing in the wizard, tag, rename,
annotate, delete (asked first, undone with Ctrl+Z), export samples and archives, import an archive.

A mixin of ResultsTab (gui/tabs/results_tab.py), kept apart so that each file has one job: the
tab shows and selects, this changes. Writes that can take long (deleting a run's million samples,
an archive) run in the thread pool with the progress bar shown and the other writes held."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QFileDialog, QInputDialog, QLineEdit, QMenu, QMessageBox

from core.errors import TrainRigError
from core.output.experiment_report import load_report
from core.output.run_report import ResultReport, write_result_csv
from core.spec.workload import parse_workload
from core.storage.files import check_target, pdf_path
from gui.models.results_model import KIND_LABELS
from gui.widgets.result_html import run_of
from reports.run_pdf import write_result_pdf

if TYPE_CHECKING:
    from gui.tabs.results_tab import ResultsTab

ARCHIVE_FILTER = "TrainRig results archive (*.trainrig-results.zip *.zip);;All files (*)"


class ResultsActions:
    """Mixed into ResultsTab; every method reads the tab's selection and store."""

    def action_specs(self: ResultsTab) -> list[tuple[str, str, str, Callable[[], None]]]:
        return [
            (
                "compare",
                "Compare",
                "Overlay the telemetry of the selected runs and of the selected experiments' runs, one plot per metric",
                self.compare_selected,
            ),
            (
                "open_wizard",
                "Open in wizard",
                "Load the selected sizing's workload into the Sizing wizard (or double-click it)",
                self.open_in_wizard,
            ),
            (
                "rerun",
                "Re-run",
                "Train the selected run's workload again in the Telemetry tab, with the settings it ran with (epochs, "
                "samples, batch, device, seed), sized again on this machine",
                self.rerun_selected,
            ),
            ("tag", "Tag…", "Set the tags of the selected results", self.tag_selected),
            ("rename", "Rename…", "Rename the selected result  [F2]", self.rename_selected),
            ("notes", "Notes…", "Write a note on the selected result", self.annotate_selected),
            ("delete", "Delete…", "Delete the selected results, a run with its samples  [Del]", self.delete_selected),
            (
                "export_samples",
                "Export samples…",
                "Write the selected runs' samples, full resolution, as CSV",
                self.export_samples,
            ),
            (
                "export_report",
                "Export report…",
                "Write the selected run's or experiment's report as PDF — what ran, on what hardware, measured against "
                "predicted, the telemetry and the experiment's tables — with the tables as CSV beside it",
                self.export_report,
            ),
            (
                "export_archive",
                "Export archive…",
                "Write the selected results (all, when none is selected) into one archive file to move to another "
                "machine",
                self.export_archive,
            ),
            (
                "import_archive",
                "Import archive…",
                "Add the results of an archive; those already here are skipped",
                self.import_archive,
            ),
        ]

    def _update_buttons(self: ResultsTab) -> None:
        keys = self.selected_keys()
        kinds = [k for k, _ in keys]
        writable = self.store is not None and not self.busy
        enabled = {
            "compare": "run" in kinds or "experiment" in kinds,
            "open_wizard": kinds == ["sizing"] and self.wizard is not None,
            "tag": bool(keys) and writable,
            "rename": len(keys) == 1 and writable,
            "notes": len(keys) == 1 and writable,
            "delete": bool(keys) and writable,
            "export_samples": "run" in kinds and not self.busy,
            "rerun": kinds == ["run"] and self.store is not None,
            "export_report": len(keys) == 1 and kinds[0] in ("run", "experiment") and self.store is not None,
            "export_archive": self.store is not None and not self.busy and self.model.total > 0,  # nothing to export
            "import_archive": writable,
        }
        for key, on in enabled.items():
            self.buttons[key].setEnabled(on)

    def _context_menu(self: ResultsTab, pos: QPoint) -> None:
        menu = QMenu(self)
        for key, label, _tip, slot in self.action_specs():
            action = menu.addAction(label, slot)
            action.setEnabled(self.buttons[key].isEnabled())
        menu.exec(self.table.viewport().mapToGlobal(pos))

    # --- the wizard -----------------------------------------------------------------------------
    def open_in_wizard(self: ResultsTab) -> None:
        keys = self.selected_keys()
        if self.wizard is None or self.store is None or len(keys) != 1 or keys[0][0] != "sizing":
            self.say("Select one sizing to open it in the wizard.")
            return
        id_ = keys[0][1]
        try:
            detail = self.store.result_detail("sizing", id_)
        except TrainRigError as exc:
            self.say(f"Sizing #{id_} cannot be read: {exc}")
            return
        workload_id = (detail or {}).get("workload_id")
        if workload_id is not None:
            opened = self.wizard.open_saved(int(workload_id))
        else:
            doc = (detail or {}).get("workload")
            if not isinstance(doc, dict):
                self.say(f"Sizing #{id_} has no workload stored with it: it cannot be opened in the wizard.")
                return
            try:
                parse_workload(doc)
            except TrainRigError as exc:
                self.say(f"Sizing #{id_}'s workload is no longer valid: {exc}")
                return
            opened = self.wizard.open_document(doc, f"sizing #{id_}")
        if opened:
            self.say(f"Opened sizing #{id_} in the Sizing wizard.", error=False)
            self.show_wizard.emit()
        else:
            self.say(f"Sizing #{id_} cannot be opened: {self.wizard.message.text()}")

    # --- runs again, reports ----------------------------------------------------------------------
    def rerun_selected(self: ResultsTab) -> None:
        keys = self.selected_keys()
        if self.store is None or len(keys) != 1 or keys[0][0] != "run":
            self.say("Select one run to re-run it.")
            return
        id_ = keys[0][1]
        try:
            detail = run_of(self.store.result_detail("run", id_) or {})
        except TrainRigError as exc:
            self.say(f"Run #{id_} cannot be read: {exc}")
            return
        name = f"run #{id_} ({detail.get('name') or 'unnamed'})"
        if not detail:
            self.say(f"Run #{id_} is no longer in the database.")
            return
        if detail.get("kind") != "trained":
            self.say(
                f"{name.capitalize()} recorded a command of yours, not a training TrainRig ran: run it again with "
                "python main.py monitor -- COMMAND"
            )
            return
        self.rerun_requested.emit(detail.get("workload"), name)

    def export_report(self: ResultsTab) -> None:
        keys = self.selected_keys()
        if self.store is None or len(keys) != 1 or keys[0][0] not in ("run", "experiment"):
            self.say(
                "Select one run or experiment to export its report (a sizing's purchasing report is the Sizing "
                "wizard's Export report…, Ctrl+E)."
            )
            return
        kind, id_ = keys[0]
        path, _ = QFileDialog.getSaveFileName(self, "Export report", f"{kind}-{id_}-report.pdf", "PDF (*.pdf)")
        if path:
            self.export_report_to(pdf_path(Path(path)), kind, id_)

    def export_report_to(self: ResultsTab, pdf: Path, kind: str, id_: int) -> None:
        """Read the run or experiment and its samples off the window's thread, then write the PDF and,
        beside it, the CSV of its tables."""
        store = self.store
        assert store is not None
        csv_path = pdf.with_suffix(".csv")
        try:
            check_target(pdf)
            check_target(csv_path)
        except TrainRigError as exc:
            self.say(f"The report was not written: {exc}")
            return
        created = datetime.now().strftime("%Y-%m-%d %H:%M")

        def done(report: ResultReport) -> None:
            try:
                pages = write_result_pdf(report, pdf)
            except TrainRigError as exc:
                self.say(f"{pdf.name} was not written: {exc}")
                return
            try:
                write_result_csv(report, csv_path)
            except TrainRigError as exc:
                self.say(f"Wrote {pdf.name}, but not the CSV: {exc}")
                return
            self.say(f"Wrote {pdf.name} ({pages} pages) and {csv_path.name} in {pdf.parent}.", error=False)

        self.say(f"Reading {kind} #{id_} and its samples…", error=False)
        self.run_job(
            lambda: load_report(store, kind, id_, created), done, lambda m: self.say(f"The report was not written: {m}")
        )

    # --- tags, names, notes ---------------------------------------------------------------------
    def tag_selected(self: ResultsTab) -> None:
        rows = [self.model.row(i) for i in self.selected_rows()]
        if not rows or self.store is None:
            return
        common = set(rows[0].get("tags") or [])
        for r in rows[1:]:
            common &= set(r.get("tags") or [])
        what = _what(rows)
        text, ok = QInputDialog.getText(
            self, "Tags", f"Tags of {what}, separated by commas:", QLineEdit.EchoMode.Normal, ", ".join(sorted(common))
        )
        if not ok:
            return
        new = [t for t in dict.fromkeys(x.strip() for x in text.split(",")) if t]
        self._write(
            lambda: [
                self.store.set_tags(
                    r["kind"], int(r["id"]), [t for t in r.get("tags") or [] if t not in common] + new
                )  # keeps each result's own other tags
                for r in rows
            ],
            f"Tagged {what}: {', '.join(new) or 'no tags'}.",
        )

    def rename_selected(self: ResultsTab) -> None:
        rows = [self.model.row(i) for i in self.selected_rows()]
        if len(rows) != 1 or self.store is None:
            self.say("Select one result to rename it.")
            return
        r = rows[0]
        text, ok = QInputDialog.getText(
            self, "Rename", f"New name of {_what(rows)}:", QLineEdit.EchoMode.Normal, str(r.get("name") or "")
        )
        if not ok:
            return
        name = text.strip()
        if not name:
            self.say("A name cannot be empty; the name was not changed.")
            return
        self._write(lambda: self.store.rename(r["kind"], int(r["id"]), name), f"Renamed {_what(rows)} to {name!r}.")

    def annotate_selected(self: ResultsTab) -> None:
        rows = [self.model.row(i) for i in self.selected_rows()]
        if len(rows) != 1 or self.store is None:
            self.say("Select one result to write a note on it.")
            return
        r = rows[0]
        text, ok = QInputDialog.getMultiLineText(self, "Notes", f"Notes on {_what(rows)}:", str(r.get("notes") or ""))
        if ok:
            self._write(
                lambda: self.store.annotate(r["kind"], int(r["id"]), text.strip()), f"Saved the note on {_what(rows)}."
            )

    def _write(self: ResultsTab, action: Callable[[], Any], success: str) -> None:
        """A small write on the GUI thread (one row); the table re-reads, the selection stays."""
        try:
            action()
        except TrainRigError as exc:
            self.say(f"Nothing was changed: {exc}")
            return
        self.refresh()
        self._load_details()
        self.say(success, error=False)

    # --- delete and undo ------------------------------------------------------------------------
    def delete_selected(self: ResultsTab) -> None:
        if self.busy or self.store is None:
            return
        rows = [self.model.row(i) for i in self.selected_rows()]
        if not rows:
            self.say("Select the results to delete first.")
            return
        runs = sum(1 for r in rows if r["kind"] == "run")
        what = _what(rows)
        answer = QMessageBox.question(
            self,
            "Delete results",
            f"Delete {what}?"
            + {0: "", 1: "\n\nThe run's samples are deleted with it."}.get(
                runs, f"\n\nThe {runs} runs' samples are deleted with them."
            )
            + "\n\nUndo (Ctrl+Z) brings back the last delete.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        if answer != QMessageBox.StandardButton.Yes:
            return
        keys = [(str(r["kind"]), int(r["id"])) for r in rows]
        store = self.store

        def done(count: int) -> None:
            self.refresh()
            self.undo_button.setVisible(count > 0)
            self.say(f"Deleted {count} result{'s' if count != 1 else ''} ({what}).", error=False)

        self.say(f"Deleting {what}…", error=False)
        self.run_job(
            lambda: int(store.delete_results(keys)), done, lambda m: self.say(f"Nothing was deleted: {m}"), busy=True
        )

    def undo(self: ResultsTab) -> None:
        if self.busy or self.store is None:
            return
        if not self.undo_button.isVisible():
            self.say("Nothing to undo: undo brings back the last delete.")
            return
        store = self.store

        def done(count: int) -> None:
            self.undo_button.setVisible(False)
            self.refresh()
            self.say(
                f"Restored {count} result{'s' if count != 1 else ''}."
                if count
                else "Nothing to undo: the delete was undone already.",
                error=False,
            )

        self.run_job(
            lambda: int(store.undo_delete()), done, lambda m: self.say(f"The delete was not undone: {m}"), busy=True
        )

    # --- files ----------------------------------------------------------------------------------
    def export_samples(self: ResultsTab) -> None:
        ids = self.selected_run_ids()
        if not ids or self.store is None or self.busy:
            self.say("Select the runs whose samples to export.")
            return
        name = f"run-{ids[0]}-samples.csv" if len(ids) == 1 else f"{len(ids)}-runs-samples.csv"
        path, _ = QFileDialog.getSaveFileName(self, "Export the runs' samples", name, "CSV (*.csv)")
        if path:
            self.export_samples_to(Path(path), ids)

    def export_samples_to(self: ResultsTab, path: Path, ids: list[int]) -> None:
        store = self.store
        assert store is not None
        runs = f"{len(ids)} run{'s' if len(ids) != 1 else ''}"
        self.say(f"Writing the samples of {runs} to {path.name}…", error=False)
        self.run_job(
            lambda: int(store.export_samples_csv(ids, path)),
            lambda n: self.say(
                f"Wrote {n:,} samples of {runs} to {path}."
                if n
                else f"The {runs} have no samples: nothing was written.",
                error=not n,
            ),
            lambda m: self.say(f"{path.name} was not written: {m}"),
            busy=True,
        )

    def export_archive(self: ResultsTab) -> None:
        if self.store is None or self.busy:
            return
        keys = self.selected_keys()
        title = f"Export {len(keys)} selected results" if keys else "Export all results"
        path, _ = QFileDialog.getSaveFileName(self, title, "results.trainrig-results.zip", ARCHIVE_FILTER)
        if path:
            self.export_archive_to(Path(path), keys or None)

    def export_archive_to(self: ResultsTab, path: Path, keys: list[tuple[str, int]] | None) -> None:
        store = self.store
        assert store is not None
        self.say(f"Writing {path.name}…", error=False)
        self.run_job(
            lambda: int(store.export_archive(path, keys)),
            lambda n: self.say(
                f"Wrote {n:,} result{'s' if n != 1 else ''} to {path}."
                if n
                else f"Nothing to export: {'the selection' if keys else 'the database'} holds no sizing, run, "
                "inventory or calibration; no file was written.",
                error=not n,
            ),
            lambda m: self.say(f"{path.name} was not written: {m}"),
            busy=True,
        )

    def import_archive(self: ResultsTab) -> None:
        if self.store is None or self.busy:
            return
        path, _ = QFileDialog.getOpenFileName(self, "Import a results archive", "", ARCHIVE_FILTER)
        if path:
            self.import_archive_from(Path(path))

    def import_archive_from(self: ResultsTab, path: Path) -> None:
        store = self.store
        assert store is not None

        def done(counts: dict[str, int]) -> None:
            added, skipped = int(counts.get("added", 0)), int(counts.get("skipped", 0))
            self.refresh()
            already = f"; {skipped:,} already here, skipped" if skipped else ""
            self.say(f"Imported {added:,} result{'s' if added != 1 else ''} from {path.name}{already}.", error=False)

        self.say(f"Reading {path.name}…", error=False)
        self.run_job(
            lambda: store.import_archive(path),
            done,
            lambda m: self.say(f"{path.name} was not imported, nothing was changed: {m}"),
            busy=True,
        )


def _what(rows: list[dict[str, Any]]) -> str:
    """ "run #3 'seed MLP'", or "3 results" (2 runs, 1 sizing)."""
    if len(rows) == 1:
        r = rows[0]
        return f"{KIND_LABELS.get(r['kind'], r['kind']).lower()} #{r['id']} {str(r.get('name') or '')!r}"
    kinds: dict[str, int] = {}
    for r in rows:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    parts = ", ".join(f"{n} {KIND_LABELS.get(k, k).lower()}{'s' if n != 1 else ''}" for k, n in kinds.items())
    return f"{len(rows)} results ({parts})"
