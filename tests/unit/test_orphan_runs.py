"""Runs a killed TrainRig left "running" (SIGKILL leaves no time to close them; `runs` listed them as
running for ever): the next TrainRig on the machine closes them as failed, and only them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil

from core.storage.store import Store
from telemetry.orphan_runs import ORPHAN_REASON, close_orphaned_runs, recorder_identity


def test_a_run_whose_recorder_is_gone_is_closed_as_failed_and_no_other(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "t.db")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    gone = {"pid": proc.pid, "started": psutil.Process(proc.pid).create_time()}
    proc.kill()
    proc.wait()
    killed = store.start_run("trained", "killed with its TrainRig", sampling={"columns": ["cpu"], "recorder": gone})
    store.add_samples(killed, [(0.0, [12.5]), (0.1, [50.0])])
    # the same process id reused by another process: not the recorder either
    reused = store.start_run(
        "trained", "pid reused", sampling={"recorder": {"pid": psutil.Process().pid, "started": 1.0}}
    )
    live = store.start_run("trained", "still recorded here", sampling={"recorder": recorder_identity()})
    old = store.start_run("trained", "from a version without a recorder", sampling={"columns": ["cpu"]})
    elsewhere = store.start_run("trained", "on another machine", sampling={"recorder": gone})
    store.db.execute("update runs set machine = 'another-host' where id = ?", [elsewhere])
    store.db.conn.commit()
    assert sorted(close_orphaned_runs(store)) == [killed, reused]
    for rid in (killed, reused):
        run = store.run(rid)
        assert run["status"] == "failed" and run["reason"] == ORPHAN_REASON and run["ended"]
    assert store.run_samples(killed)[1] == [(0.0, [12.5]), (0.1, [50.0])]  # kept
    assert [store.run(r)["status"] for r in (live, old, elsewhere)] == ["running"] * 3
    assert close_orphaned_runs(store) == []  # once
    store.close()


def test_the_next_command_that_writes_closes_them(cli, _isolated_db: Path) -> None:
    store = Store.open(_isolated_db)
    rid = store.start_run("trained", "killed", sampling={"recorder": {"pid": 2**22 + 12345, "started": 0.0}})
    store.close()
    code, out, _ = cli("runs")  # reads only: it cannot close it
    assert code == 0 and "running" in out
    # any command that opens the database to write, even one that then refuses its input
    assert cli("catalogue", "--remove", "no such device")[0] == 2
    code, out, _ = cli("runs")
    assert "failed" in out and Store.open(_isolated_db).run(rid)["reason"] == ORPHAN_REASON
