"""The guide beside the wizard's form pages: shown on Goal, Data and Training, where the fields leave
room, and naming every field the page has (a new field without its explanation fails here)."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QFormLayout


def _field_labels(page) -> list[str]:
    form = page.findChild(QFormLayout)
    labels = []
    for row in range(form.rowCount()):
        label = form.itemAt(row, QFormLayout.ItemRole.LabelRole)
        field = form.itemAt(row, QFormLayout.ItemRole.FieldRole)
        text = label.widget().text() if label is not None and label.widget() is not None else ""
        if not text and field is not None and isinstance(field.widget(), QCheckBox):
            text = field.widget().text().split(" (")[0]
        if text:
            labels.append(text.replace("&", ""))
    return labels


def test_the_guide_is_beside_the_form_pages_only(main_window) -> None:
    w = main_window()
    w.resize(1366, 768)
    wiz = w.sizing_tab
    for index, shown in enumerate([True, False, True, True, False, False]):
        wiz.go(index)
        assert wiz.guide.isVisibleTo(wiz) == shown, wiz.steps.item(index).text()


def test_every_field_of_a_form_page_is_explained_in_its_guide(main_window) -> None:
    from gui.wizard.guides import GUIDES

    wiz = main_window().sizing_tab
    for page in (wiz.goal, wiz.data, wiz.training):
        guide = GUIDES[page.title].lower()
        labels = _field_labels(page)
        assert len(labels) >= 6, labels
        missing = [t for t in labels if t.lower().split(" (")[0] not in guide]
        assert not missing, (page.title, missing)
