"""Runs left "running" by a TrainRig that stopped without closing them (killed with SIGKILL, a crash,
the machine restarted): each run records which process records it (its id and start time), and the
next TrainRig that opens the database on the same machine closes the runs whose recorder is gone,
as failed, saying so. Their samples up to then are kept. A run another TrainRig still records, or
one recorded on another machine, is left as it is; so is one from a version that did not record
its recorder (nothing tells whether it still runs)."""

from __future__ import annotations

import os
from typing import Any

import psutil

from core.storage.store import Store

ORPHAN_REASON = (
    "TrainRig stopped while it recorded this run (killed, or the machine restarted); the samples up to then are kept"
)


def recorder_identity() -> dict[str, Any]:
    """This process as a run's recorder: its id and its start time (an id alone is reused)."""
    return {"pid": os.getpid(), "started": psutil.Process().create_time()}


def _alive(recorder: dict[str, Any]) -> bool:
    try:
        return abs(psutil.Process(int(recorder["pid"])).create_time() - float(recorder["started"])) < 1.0
    except (psutil.Error, KeyError, TypeError, ValueError):
        return False


def close_orphaned_runs(store: Store) -> list[int]:
    """Close this machine's runs whose recorder is gone; their ids."""
    closed = []
    for run_id, sampling in store.unfinished_runs_here():
        recorder = sampling.get("recorder")
        if isinstance(recorder, dict) and not _alive(recorder):
            store.finish_run(run_id, "failed", reason=ORPHAN_REASON)
            closed.append(run_id)
    return closed
