"""Where TrainRig's bundled resources and its database live."""

from __future__ import annotations

import importlib.util
import os
import sys
from functools import lru_cache
from pathlib import Path
from types import ModuleType

from core.errors import TrainRigError

APP_NAME = "TrainRig"


def resource_path(*parts: str) -> Path:
    """A file under resources/, from source or inside a PyInstaller bundle."""
    base = Path(getattr(sys, "_MEIPASS", Path(__file__).resolve().parent.parent))
    return base.joinpath("resources", *parts)


@lru_cache(maxsize=8)
def worker_module(name: str) -> ModuleType:
    """resources/workers/<name>.py loaded by its path, once: code the app (or the benchmarks) and a worker
    process must run alike (the trainer's image codec, the measure worker's training step)."""
    path = resource_path("workers", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"trainrig_worker_{name}", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise TrainRigError(f"the worker file {path} is missing from this installation")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def default_db_path() -> Path:
    """``$TRAINRIG_DB`` if set, else trainrig.db in the platform's user data directory."""
    env = os.environ.get("TRAINRIG_DB")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir(APP_NAME, appauthor=False)) / "trainrig.db"


def default_log_path() -> Path:
    """``$TRAINRIG_LOG`` if set, else trainrig.log in the platform's user log directory: where the
    details of unexpected errors go."""
    env = os.environ.get("TRAINRIG_LOG")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_log_dir

    return Path(user_log_dir(APP_NAME, appauthor=False)) / "trainrig.log"
