"""The results page's findings: every finding in full (a tree cut them with "…"), its severity as
a badge whose text is readable in light and dark themes, its source beside it."""

from __future__ import annotations

from core.advice.rules import Finding


def _luminance(hex_colour: str) -> float:
    def channel(c: int) -> float:
        v = c / 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def test_badges_reach_wcag_aa_contrast_with_white_text() -> None:
    from gui.wizard.results_page import SEVERITY_COLORS

    for severity, fill in SEVERITY_COLORS.items():
        ratio = (1.05) / (_luminance(fill) + 0.05)
        assert ratio >= 4.5, (severity, fill, round(ratio, 2))  # the old advice blue #5bc0de: 2.1


def test_long_findings_are_shown_whole_with_source_and_today(main_window) -> None:
    w = main_window()
    page = w.sizing_tab.results
    long = "A finding long enough to need several lines on any screen: " + "more words " * 40 + "END."
    findings = (
        Finding("r1", "warning", long, "Jamgharyan 2024, GPU recommendations", "still true", None),
        Finding("r2", "info", "short", "Wünsche 2016", None, None),
    )
    page._show_findings(findings)
    text = page.findings.toPlainText()
    assert long in text and "Today: still true" in text and "Source: Wünsche 2016" in text
    assert "…" not in text and page.tabs.tabText(2) == "Findings (2)"
    page._show_findings(())
    assert page.findings.toPlainText() == "No rule fired." and page.tabs.tabText(2) == "Findings (0)"
