"""Runs: the JSON-lines protocol with fake workers (partial lines, garbage, floods, deaths),
cancel and crash paths, and `monitor`-style runs of any command."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from core.storage.store import Store
from telemetry.runs import MAX_PROGRESS, Run
from telemetry.sources import HostSource, ProcessTreeSource

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups and signals as on POSIX")


def host_sources(pid: int):
    return [HostSource(), ProcessTreeSource(pid)]


def worker(tmp_path: Path, body: str) -> list[str]:
    p = tmp_path / "worker.py"
    p.write_text("import json, os, sys, time\n" + "def say(**m):\n    print(json.dumps(m), flush=True)\n" + body)
    return [sys.executable, str(p)]


def run_worker(tmp_path: Path, body: str, store: Store | None = None, **kw) -> Run:
    run = Run(worker(tmp_path, textwrap.dedent(body)), store=store, sources=host_sources, name="test", **kw)
    run.start()
    assert run.wait(60), "the run did not end"
    return run


def test_partial_lines_and_garbage_are_survived_and_the_run_finishes(tmp_path: Path) -> None:
    run = run_worker(
        tmp_path,
        """
        say(event="started", iterations=2)
        sys.stdout.write('{"event": "progress", "iter'); sys.stdout.flush(); time.sleep(0.3)
        sys.stdout.write('ation": 1, "loss": 2.5}\\n'); sys.stdout.flush()
        print("Warning: some library chatter", flush=True)
        print("[1, 2, 3]", flush=True)
        say(event="progress", iteration=2, loss=1.25)
        say(event="finished", accuracy=0.9, median_step_s=0.01)
        """,
    )
    assert run.status == "finished", run.reason
    assert [p["iteration"] for p in run.progress] == [1, 2]
    assert run.latest is not None and (run.latest["iteration"], run.latest["loss"]) == (2, 1.25)
    assert 0.3 <= run.latest["t"] < 30  # when it arrived, on the samples' clock
    assert run.garbage_lines == 2 and run.other_output[0] == "Warning: some library chatter"
    assert run.metrics is not None and run.metrics["accuracy"] == 0.9


def test_a_flooding_worker_is_read_to_the_end_with_the_history_thinned(tmp_path: Path) -> None:
    run = run_worker(
        tmp_path,
        """
        out = sys.stdout
        for i in range(1, 60001):
            out.write(json.dumps({"event": "progress", "iteration": i, "loss": 1 / i}) + "\\n")
        out.write("x" * (3 << 20))  # a 3 MiB line: garbage, not a message
        out.write("\\n")
        say(event="finished", accuracy=0.5)
        """,
    )
    assert run.status == "finished", run.reason
    assert run.latest is not None and run.latest["iteration"] == 60000
    assert MAX_PROGRESS // 2 <= len(run.progress) <= MAX_PROGRESS
    assert run.progress[0]["iteration"] == 1  # thinned evenly: the curve keeps its start
    assert run.garbage_lines == 1


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            'say(event="started")\nsys.stdout.write(\'{"event": "prog\'); sys.stdout.flush()\n'
            'print("Traceback: boom", file=sys.stderr, flush=True); os._exit(7)',
            "the trainer exited with code 7: Traceback: boom",
        ),
        ('say(event="started")\nos.kill(os.getpid(), 9)', "killed by SIGKILL (the system's out-of-memory killer"),
        (
            'say(event="error", reason="out of memory on cuda:0: tried to allocate 2 GiB", oom=True)\nsys.exit(3)',
            "out of memory on cuda:0",
        ),
        ('say(event="started")\nsys.exit(0)', "exited without reporting a result"),
    ],
    ids=["dies-mid-line", "killed", "oom", "silent-exit"],
)
def test_a_worker_that_crashes_is_failed_with_its_reason(tmp_path: Path, body: str, reason: str) -> None:
    store = Store.open(tmp_path / "t.db")
    run = run_worker(tmp_path, body, store=store)
    assert run.status == "failed"
    assert reason in run.reason
    stored = store.run(run.run_id)
    assert stored is not None and stored["status"] == "failed" and reason in stored["reason"]


def test_cancel_stops_the_worker_on_sigint_and_keeps_its_samples(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "t.db")
    body = """
    say(event="started")
    try:
        i = 0
        while True:
            i += 1
            say(event="progress", iteration=i)
            time.sleep(0.05)
    except KeyboardInterrupt:
        say(event="cancelled", reason="stopped on request")
        sys.exit(130)
    """
    run = Run(worker(tmp_path, textwrap.dedent(body)), store=store, sources=host_sources, name="cancel me")
    run.start()
    deadline = time.monotonic() + 30
    while (run.latest is None or run.latest["iteration"] < 30) and time.monotonic() < deadline:
        time.sleep(0.05)
    run.cancel()
    assert run.wait(10)
    assert run.status == "cancelled" and run.reason == "cancelled by the user (it stopped on SIGINT)"
    columns, samples = store.run_samples(run.run_id)
    assert len(samples) >= 10  # at 10 Hz for the 1.5 s it ran
    rss = [row[columns.index("proc_rss_bytes")] for _, row in samples]
    assert max(r for r in rss if r is not None) > 5 * 2**20  # the worker's own memory, sampled
    assert store.run(run.run_id)["status"] == "cancelled"


def test_a_worker_ignoring_sigint_is_killed_with_its_whole_process_group(tmp_path: Path) -> None:
    body = """
    import signal, subprocess
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    code = "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", code])
    say(event="started", child=child.pid)
    time.sleep(60)
    """
    run = Run(worker(tmp_path, textwrap.dedent(body)), sources=host_sources, grace_s=1.0)
    run.start()
    deadline = time.monotonic() + 30
    while run.started is None and time.monotonic() < deadline:
        time.sleep(0.05)
    child = run.started["child"]
    t = time.monotonic()
    run.cancel()
    assert run.wait(10)
    assert 0.9 < time.monotonic() - t < 8
    assert run.status == "cancelled" and "forced after 1 s" in run.reason
    time.sleep(0.2)
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE


def test_a_monitored_command_is_recorded_with_its_exit_code(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "t.db")
    cmd = [sys.executable, "-c", "import time, sys; x = bytearray(50 * 2**20); time.sleep(1.2); sys.exit(3)"]
    run = Run(cmd, store=store, kind="monitored", protocol=False, sources=host_sources)
    run.start()
    assert run.wait(30)
    assert (run.status, run.exit_code, run.reason) == ("failed", 3, "the command exited with code 3")
    stored = store.run(run.run_id)
    assert stored["kind"] == "monitored" and stored["exit_code"] == 3
    columns, samples = store.run_samples(run.run_id)
    assert len(samples) >= 8
    peak = max(row[columns.index("proc_rss_bytes")] or 0 for _, row in samples)
    assert peak > 50 * 2**20  # the 50 MiB the command held was seen


def test_a_program_that_does_not_exist_raises_before_anything_is_stored(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "t.db")
    run = Run([str(tmp_path / "missing")], store=store, sources=host_sources)
    with pytest.raises(OSError):
        run.start()
    assert store.runs() == []
