"""Run short jobs off the GUI thread (QThreadPool) and report back through a signals object."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from core.errors import TrainRigError
from core.storage.error_log import unexpected_message


class JobSignals(QObject):
    finished = Signal(object)
    failed = Signal(str)


class Job(QRunnable):
    """Calls ``fn()`` in a pool thread; never touches widgets."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        super().__init__()
        self.fn = fn
        self.signals = JobSignals()

    def run(self) -> None:
        try:
            result = self.fn()
        except TrainRigError as exc:  # an expected problem: its message is for the user
            self.signals.failed.emit(str(exc))
        except Exception as exc:  # a bug: one line for the user, the traceback in the error log
            self.signals.failed.emit(unexpected_message(exc, "background job"))
        else:
            self.signals.finished.emit(result)


def start_job(fn: Callable[[], Any], on_finished: Callable[[Any], None], on_failed: Callable[[str], None]) -> Job:
    """Run ``fn`` in the global thread pool; the caller keeps the returned job while it runs."""
    job = Job(fn)
    job.signals.finished.connect(on_finished)
    job.signals.failed.connect(on_failed)
    QThreadPool.globalInstance().start(job)
    return job
