"""Where TrainRig's bundled resources and its database live."""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP_NAME = "TrainRig"


def resource_path(*parts: str) -> Path:
    """A file under resources/, from source or inside a PyInstaller bundle."""
    base = Path(getattr(sys, "_MEIPASS", Path(__file__).resolve().parent.parent))
    return base.joinpath("resources", *parts)


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
