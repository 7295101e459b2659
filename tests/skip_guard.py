"""A skipped test fails the run where every test must run (CI).

Set ``TRAINRIG_REQUIRE_ALL=1`` (what .ci/run does) or pass ``--no-skips``: any test skipped, at
collection or when it runs, then turns a passing run into a failing one (exit code 1), and the
summary names each test and the reason it gave. ``TRAINRIG_ALLOWED_SKIPS`` takes words separated
by commas: a skip whose reason contains one of them is allowed and listed as such (CI's step
without PySide6 and PyTorch allows "torch"). An expected failure (xfail) is not a skip.
"""

from __future__ import annotations

import os

import pytest

ENV, ALLOWED_ENV = "TRAINRIG_REQUIRE_ALL", "TRAINRIG_ALLOWED_SKIPS"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--no-skips",
        action="store_true",
        default=False,
        help=f"fail the run if any test is skipped (also when ${ENV}=1, as CI sets it)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--no-skips") or os.environ.get(ENV, "") not in ("", "0"):
        allowed = [w.strip() for w in os.environ.get(ALLOWED_ENV, "").split(",") if w.strip()]
        config.pluginmanager.register(SkipGuard(allowed), "trainrig-skip-guard")


class SkipGuard:
    def __init__(self, allowed: list[str]) -> None:
        self.allowed = allowed
        self.unexpected: list[tuple[str, str]] = []
        self.tolerated: list[tuple[str, str]] = []

    def _record(self, report: pytest.CollectReport | pytest.TestReport) -> None:
        if not report.skipped or hasattr(report, "wasxfail"):
            return
        longrepr = report.longrepr
        reason = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        entry = (report.nodeid or "(collection)", reason)
        (self.tolerated if any(w in reason for w in self.allowed) else self.unexpected).append(entry)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self._record(report)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._record(report)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.tolerated:
            terminalreporter.write_sep("=", f"{len(self.tolerated)} skipped, allowed by ${ALLOWED_ENV}")
            for nodeid, reason in self.tolerated:
                terminalreporter.write_line(f"ALLOWED SKIP {nodeid}: {reason}")
        if self.unexpected:
            terminalreporter.write_sep("=", f"{len(self.unexpected)} skipped where every test must run", red=True)
            for nodeid, reason in self.unexpected:
                terminalreporter.write_line(f"UNEXPECTED SKIP {nodeid}: {reason}", red=True)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.unexpected and exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
