"""core.paths.worker_module: a worker file the app (or a benchmark) runs in its own process too, loaded once by
its path, so both run the same code; a file missing from an installation is named, not a traceback."""

from __future__ import annotations

import pytest

from core.errors import TrainRigError
from core.paths import worker_module


def test_the_measure_workers_training_step_is_the_one_module_everywhere() -> None:
    measure = worker_module("measure")
    assert worker_module("measure") is measure  # loaded once
    assert callable(measure.training_step) and measure.SETTLE_STEPS > 0
    # GradScaler's skipped optimizer steps from two readings of its scale: each skip halves it
    assert measure.skipped_steps(65536.0, 8192.0) == 3 and measure.skipped_steps(1.0, 0.0) == 0


def test_a_missing_worker_file_is_named() -> None:
    with pytest.raises(TrainRigError, match=r"no_such_worker\.py is missing from this installation"):
        worker_module("no_such_worker")
