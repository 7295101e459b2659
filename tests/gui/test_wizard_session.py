"""The wizard's workload across closing and starting again: unsaved changes are asked about before
the window closes, and the workload is offered back at the next start."""

from __future__ import annotations

import json


def test_closing_with_unsaved_changes_asks_and_cancel_keeps_the_window(main_window, unsaved_changes_answer) -> None:
    w = main_window()
    wiz = w.sizing_tab
    assert not wiz.has_unsaved_changes()  # the starter workload, as opened
    wiz.goal.name.setText("lab budget 2027")
    assert wiz.has_unsaved_changes()
    unsaved_changes_answer.value = "cancel"
    assert not w.close()  # the user chose to stay: nothing closed
    assert w.isVisible() and unsaved_changes_answer.asked == ["lab budget 2027"]
    unsaved_changes_answer.value = "discard"
    assert w.close()
    assert unsaved_changes_answer.asked == ["lab budget 2027", "lab budget 2027"]


def test_saving_clears_the_question(main_window, unsaved_changes_answer, tmp_path) -> None:
    w = main_window()
    wiz = w.sizing_tab
    wiz.goal.name.setText("saved first")
    assert wiz.save_file(tmp_path / "w.json")
    assert not wiz.has_unsaved_changes()
    assert w.close() and unsaved_changes_answer.asked == []
    assert json.loads((tmp_path / "w.json").read_text(encoding="utf-8"))["name"] == "saved first"


def test_the_next_start_offers_the_last_workload_back(main_window, qtbot) -> None:
    w = main_window()
    w.sizing_tab.goal.name.setText("restore me")
    w.sizing_tab.data.samples.setValue(123_456)
    assert w.close()  # discarded at the question, but remembered
    again = main_window()
    banner = again.sizing_tab.restore_banner
    assert not banner.isHidden() and "restore me" in banner.text.text()
    assert again.sizing_tab.doc["name"] != "restore me"  # not restored until asked
    banner.restore_button.click()
    assert banner.isHidden()
    assert again.sizing_tab.doc["name"] == "restore me" and again.sizing_tab.doc["data"]["samples"] == 123_456
    assert "Restored restore me" in again.sizing_tab.message.text()


def test_dismissing_forgets_and_a_damaged_memory_is_ignored(main_window) -> None:
    from PySide6.QtCore import QSettings

    from gui.wizard import session

    w = main_window()
    w.sizing_tab.goal.name.setText("forget me")
    assert w.close()
    again = main_window()
    again.sizing_tab.restore_banner.dismiss_button.click()
    assert session.remembered() is None and again.sizing_tab.restore_banner.isHidden()
    QSettings().setValue(session.LAST_DOCUMENT, "{not json")
    third = main_window()  # no banner, no error at start
    assert third.sizing_tab.restore_banner.isHidden() and session.remembered() is None


def test_from_database_lists_sizings_with_devices_and_training_time(main_window, monkeypatch) -> None:
    from PySide6.QtWidgets import QInputDialog

    from core.storage.store import Store

    store = Store.open(None)
    w = main_window(store)
    wiz = w.sizing_tab
    wiz.go(5)
    wiz.save_sizing()
    wiz.save_sizing()  # the same sizing again: not a second entry
    wiz.goal.name.setText("second")
    wiz.go(5)
    wiz.save_sizing()
    shown: list[list[str]] = []

    def pick(_parent, _title, _label, items, *_args):
        shown.append(list(items))
        return items[1], True  # the older one: the seed MLP

    monkeypatch.setattr(QInputDialog, "getItem", pick)
    wiz.from_store_dialog()
    (labels,) = shown
    assert len(labels) == 2 and labels[0].startswith("#2 second · ") and labels[1].startswith("#1 seed MLP · ")
    assert "NVIDIA GeForce RTX 4090" in labels[1] and " training · 20" in labels[1]
    assert wiz.doc["name"] == "seed MLP" and "Opened saved workload" in wiz.message.text()
