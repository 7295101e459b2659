"""What every TrainRig worker shares: its one kind of reportable error and its JSON-lines voice
(under torchrun only rank 0 speaks, except for errors). Workers run in the Python with PyTorch and
never import the app."""

from __future__ import annotations

import json
import os
import sys
from typing import Any


class WorkerError(Exception):
    """A problem to report as {"event": "error"} (not a bug)."""


RANK = int(os.environ.get("RANK", "0"))  # under torchrun: this process's rank; rank 0 reports
WORLD = int(os.environ.get("WORLD_SIZE", "1"))


def emit(event: str, **fields: Any) -> None:
    if RANK != 0 and event not in ("error",):  # one voice for the run: rank 0's (errors from any rank)
        return
    sys.stdout.write(json.dumps({"event": event, **fields, **({"rank": RANK} if WORLD > 1 else {})}) + "\n")
    sys.stdout.flush()
