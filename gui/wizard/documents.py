"""The wizard's workload in files and in the database: open, save, export the report, record the
sizing and open a saved one (a mixin of gui.wizard.wizard.SizingWizard)."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import platform
from pathlib import Path
from typing import Any

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox

from core.errors import TrainRigError
from core.hardware.candidates import THIS_MACHINE
from core.network.presets import load_presets
from core.output.measure_report import report_notes
from core.output.report import build_report
from core.output.report_csv import write_csv
from core.output.sizing_report import sizing_to_dict
from core.spec.effective import effective_sections
from core.spec.workload import parse_workload, read_workload_document
from core.storage.files import check_target, pdf_path
from core.units import fmt_seconds
from reports.pdf import write_pdf
from telemetry.inventory import inventory_to_text


def starter_document() -> dict[str, Any]:
    """What a first-time user sees: the seed MLP on this machine and an RTX 4090."""
    preset = load_presets()["seed-mlp"]
    return {
        "name": "seed MLP",
        "goal": {"purpose": "scratch", "concurrent_runs": 1},
        "model": {"preset": "seed-mlp"},
        "data": copy.deepcopy(preset["data"]),
        "training": {k: v for k, v in preset["training"].items() if k != "learning_rate"},
        "hardware": {"candidates": [THIS_MACHINE, "NVIDIA GeForce RTX 4090"], "gpu_count": {"min": 1, "max": 1}},
        "cost": {"currency": "USD"},
    }


def page_document(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` as the pages show it: every value they show that ``doc`` leaves out is the one the workload's
    parser reads for it (core.spec.effective: a preset's data and training, the data's defaults for its
    model), the candidates the command line sizes (this machine), not the starter workload's or the last
    file's (a file of a ResNet-50 preset without its data was sized with the seed MLP's 80,909 samples and
    400 epochs); the starter document only for what the parser does not need. ``doc`` is a valid workload."""
    data, training = effective_sections(doc)
    hardware = dict(doc.get("hardware") or {})
    hardware["candidates"] = list(hardware.get("candidates") or [THIS_MACHINE])
    return {**starter_document(), **doc, "data": data, "training": training, "hardware": hardware}


def altered_values(written: Any, held: Any, path: str = "", skip: tuple[str, ...] = ()) -> list[str]:
    """Where the pages hold a document's value otherwise than it was written (a spin box's range or decimals,
    a choice a list does not offer, a candidate name matched to others): ``path: written → held`` for each
    number, text or list of them in ``written`` that ``held`` (the document collected back from the pages)
    has at the same place with another value (a list of layers layer by layer). Parts the pages add or
    rebuild, and the paths in ``skip``, are not compared."""
    if path in skip:
        return []
    if isinstance(written, dict) and isinstance(held, dict):
        return [
            line
            for key, value in written.items()
            if key in held
            for line in altered_values(value, held[key], f"{path}.{key}" if path else str(key), skip)
        ]
    if isinstance(written, list) and isinstance(held, list) and any(isinstance(v, dict) for v in written + held):
        if len(written) != len(held):
            return [f"{path}: {len(written)} entries → {len(held)}"]
        return [
            line
            for i, (a, b) in enumerate(zip(written, held, strict=True))
            for line in altered_values(a, b, f"{path}[{i}]", skip)
        ]
    if isinstance(written, bool) or isinstance(held, bool):  # a flag, or a number the page holds as one
        changed = isinstance(written, bool) and written != held
        return [f"{path}: {written} → {held}"] if changed else []
    if isinstance(written, int | float) and isinstance(held, int | float):
        same = math.isclose(written, held, rel_tol=1e-9, abs_tol=1e-12)
        return [] if same else [f"{path}: {written:,.10g} → {held:,.10g}"]
    if isinstance(written, str) and isinstance(held, str):
        return [] if written == held else [f"{path}: {written!r} → {held!r}"]
    scalars = (str, int, float)
    if isinstance(written, list) and isinstance(held, list) and all(isinstance(v, scalars) for v in written + held):
        if sorted(map(str, written)) != sorted(map(str, held)):
            return [f"{path}: {', '.join(map(str, written))} → {', '.join(map(str, held)) or 'none'}"]
    return []


class WizardFiles:
    """Files and the store for the wizard; the wizard provides doc, store, recommendation,
    inventory, machine, measured, result, model_page, load_document, mark_saved, _collect and _say."""

    # --- files and the store ------------------------------------------------------------------
    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open workload", "", "Workload JSON (*.json);;All files (*)")
        if path:
            self.open_file(Path(path))

    def open_file(self, path: Path) -> bool:
        """Load a workload document; a bad file changes nothing and says why."""
        try:
            doc = read_workload_document(path)
            parse_workload(doc)
        except TrainRigError as exc:
            return self._say(f"{path.name}: {exc}")
        return self.open_document(doc, path.name)

    def open_document(self, doc: dict[str, Any], what: str) -> bool:
        """Show ``doc`` on the pages (over the starter document) and say so. A value the pages cannot hold as
        written is named, and the workload then counts as changed: saving it writes the pages' values."""
        try:
            shown = page_document(doc)
        except TrainRigError as exc:  # its callers checked it: a file changed on the disk meanwhile
            return self._say(f"{what} cannot be opened: {exc}")
        altered = self.load_document(shown)
        if not altered:
            return self._say(f"Opened {what}.", error=False)
        self._say(
            f"Opened {what}, but the pages hold {len(altered)} of its values otherwise: {'; '.join(altered[:6])}"
            + (f"; and {len(altered) - 6} more" if len(altered) > 6 else "")
            + ". Saving writes the values shown."
        )
        return True

    def export_dialog(self) -> None:
        if self.result is None:
            self._say("Nothing to export yet: complete the pages first.")
            return
        path, _ = QFileDialog.getSaveFileName(
            self, "Export report", f"{self.doc.get('name', 'report')}.pdf", "PDF (*.pdf)"
        )
        if not path:
            return
        pdf = pdf_path(Path(path))
        if self.export_report(pdf):
            answer = QMessageBox.question(
                self, "Report written", f"Wrote {pdf.name} and {pdf.with_suffix('.csv').name}. Open the folder?"
            )
            if answer == QMessageBox.StandardButton.Yes:
                QDesktopServices.openUrl(QUrl.fromLocalFile(str(pdf.parent)))

    def export_report(self, pdf: Path) -> bool:
        """The purchasing report as PDF and, beside it, the CSV of the bill of materials and candidates."""
        if self.recommendation is None:
            return self._say("Nothing to export yet.")
        inventory_text = inventory_to_text(self.inventory) if self.inventory else ""
        machine = f"{platform.node()} ({self.machine.cpu_model})" if self.machine else ""
        report = build_report(self.recommendation, machine=machine, inventory_text=inventory_text)
        if self.measured is not None:
            report = dataclasses.replace(report, notes=(*report.notes, *report_notes(self.measured)))
        csv_path = pdf.with_suffix(".csv")
        try:
            check_target(csv_path)
            pages = write_pdf(report, pdf)
        except TrainRigError as exc:
            return self._say(f"The report was not written: {exc}")
        try:
            write_csv(report, csv_path)
        except TrainRigError as exc:
            return self._say(f"Wrote {pdf.name}, but not the CSV: {exc}")
        self._say(f"Wrote {pdf.name} ({pages} pages) and {pdf.with_suffix('.csv').name}.", error=False)
        return True

    def from_store_dialog(self) -> None:
        if self.store is None:
            return
        try:
            saved = self.store.results(kind="sizing", limit=500)  # newest first
        except TrainRigError as exc:
            self._say(f"The saved sizings cannot be read: {exc}")
            return
        if not saved:
            self._say("No sizing has been saved in the database yet (Save sizing, Ctrl+S).")
            return
        labels = [sizing_label(r) for r in saved]
        choice, ok = QInputDialog.getItem(self, "Open a saved sizing", "Sizing", labels, 0, False)
        if ok:
            detail = self.store.result_detail("sizing", int(saved[labels.index(choice)]["id"]))
            if detail is None or detail.get("workload_id") is None:
                self._say("That sizing is no longer in the database.")
                return
            self.open_saved(int(detail["workload_id"]))

    def open_saved(self, workload_id: int) -> bool:
        try:
            doc = self.store.workload_document(workload_id) if self.store else None
        except TrainRigError as exc:
            return self._say(f"{exc}: it cannot be opened.")
        if doc is None:
            return self._say(f"No saved workload #{workload_id}.")
        try:
            parse_workload(doc)
        except TrainRigError as exc:  # saved by an older version with other rules
            return self._say(f"Saved workload #{workload_id} is no longer valid: {exc}")
        return self.open_document(doc, f"saved workload #{workload_id}")

    def save_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, "Save workload", f"{self.doc.get('name', 'workload')}.json", "Workload JSON (*.json)"
        )
        if path:
            self.save_file(Path(path))

    def save_file(self, path: Path) -> bool:
        self._collect()
        if self.model_page.unstored:
            return self._say(
                f"{path.name} was not written: the Model page's {self.model_page.unstored}; correct it first."
            )
        try:
            path.write_text(json.dumps(self.doc, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            return self._say(f"{path.name} cannot be written: {exc}")
        self.mark_saved()
        self._say(f"Saved {path.name}.", error=False)
        return True

    def save_sizing(self) -> None:
        if self.store is None or self.recommendation is None:
            self._say("Nothing to save: no database is open or no sizing yet.")
            return
        rec = self.recommendation
        try:
            _, sid = self.store.save_sizing(
                rec.result.workload.name,
                self.doc,
                # each device once, as `size` records them: a name for each row (× 1, × 2, …) listed the
                # same device again and again, and made the same sizing differ from its command-line twin
                list(dict.fromkeys(c.device.name for c in rec.result.candidates)),
                sizing_to_dict(rec),
            )
        except TrainRigError as exc:
            self._say(f"The sizing was not saved: {exc}")
            return
        self.mark_saved()
        self._say(f"Saved sizing #{sid}.", error=False)


def sizing_label(row: dict[str, Any]) -> str:
    """A saved sizing as "From database…" lists it: name, candidates, the recommended device's
    training time and when it was saved."""
    when = str(row.get("created", ""))[:16].replace("T", " ")
    time = f"{fmt_seconds(row['training_time_s'])} training" if row.get("training_time_s") is not None else "no fit"
    return f"#{row['id']} {row['name']} · {row.get('devices') or 'no candidate'} · {time} · {when}"
