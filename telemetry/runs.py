"""A run: a child process (the trainer, or any command under `monitor`) with the sampler watching
its process tree, a reader thread parsing its JSON lines, and the run and its samples in the store.

The child gets its own process group, so cancel reaches every process it started: SIGINT first
(the trainer stops between steps and says "cancelled"), then after ``grace_s`` SIGKILL to the
group. A crash, an out-of-memory or a kill marks the run failed with the reason; the samples
recorded until then stay in the store (the sampler writes them once a second).
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from core.storage.store import Store
from telemetry.orphan_runs import recorder_identity
from telemetry.sampler import DEFAULT_RATE_HZ, Sampler, Source, default_sources

MAX_LINE_BYTES = 1 << 20  # a longer "line" is garbage (a worker printing a tensor), not a message
MAX_PROGRESS = 20_000  # progress history kept for the curves; thinned by half when full
GRACE_S = 5.0


class Run:
    """Start with ``start()``; poll ``status``/``latest``/``sampler.buffer`` or wait with ``wait()``.

    ``protocol``: the child speaks TrainRig's JSON lines on stdout (the trainer); otherwise
    (``monitor``) its output goes to this process's terminal and only its exit code counts.
    ``on_message(run, message)`` is called from the reader thread for each message."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        store: Store | None = None,
        kind: str = "trained",
        name: str = "",
        workload: dict[str, Any] | None = None,
        device: str = "",
        prediction: dict[str, Any] | None = None,
        stdin_text: str | None = None,
        protocol: bool = True,
        rate_hz: float = DEFAULT_RATE_HZ,
        sources: Callable[[int], Sequence[Source]] | None = None,
        grace_s: float = GRACE_S,
        env: dict[str, str] | None = None,
        on_message: Callable[[Run, dict[str, Any]], None] | None = None,
    ) -> None:
        self.argv = list(argv)
        self.store = store
        self.kind = kind
        self.name = name or " ".join(self.argv)[:200]
        self.workload = workload
        self.device = device
        self.prediction = prediction
        self.stdin_text = stdin_text
        self.protocol = protocol
        self.rate_hz = rate_hz
        self.make_sources = sources or (lambda pid: default_sources(pid))
        self.grace_s = grace_s
        self.env = env
        self.on_message = on_message
        self.status = "starting"  # then running, finished, failed, cancelled
        self.reason = ""
        self.exit_code: int | None = None
        self.run_id: int | None = None
        self.started: dict[str, Any] | None = None
        self.latest: dict[str, Any] | None = None  # the newest progress message
        self.progress: list[dict[str, Any]] = []
        self.metrics: dict[str, Any] | None = None
        self.garbage_lines = 0
        self.other_output: collections.deque[str] = collections.deque(maxlen=20)
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=50)
        self.sampler: Sampler | None = None
        self.started_at: float | None = None
        self.duration_s: float | None = None
        self.forced = False
        self._error: dict[str, Any] | None = None
        self._cancel_requested = False
        self._proc: subprocess.Popen[bytes] | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._kill_timer: threading.Timer | None = None

    # --- life cycle --------------------------------------------------------------------------
    def start(self) -> None:
        """Start the child and the sampler; raises OSError when the program cannot be started."""
        posix = os.name == "posix"
        self.started_at = time.monotonic()
        self._proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE if self.stdin_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE if self.protocol else None,
            stderr=subprocess.PIPE if self.protocol else None,
            env=self.env,
            start_new_session=posix,
            creationflags=0 if posix else subprocess.CREATE_NEW_PROCESS_GROUP,  # type: ignore[attr-defined]
        )
        self.status = "running"
        self.sampler = Sampler(self.make_sources(self._proc.pid), self.rate_hz, sink=self._store_samples)
        if self.store is not None:
            self.run_id = self.store.start_run(
                self.kind,
                self.name,
                workload=self.workload,
                command=self.argv,
                device=self.device,
                prediction=self.prediction,
                sampling=self._sampling(),
            )
        self.sampler.start()
        if self.stdin_text is not None and self._proc.stdin is not None:
            try:
                self._proc.stdin.write(self.stdin_text.encode())
                self._proc.stdin.close()
            except OSError:  # the child died before reading: its exit says why
                pass
        if self.protocol:
            assert self._proc.stdout is not None and self._proc.stderr is not None
            self._spawn(self._read_stderr, "trainrig-run-stderr", self._proc.stderr)
            self._spawn(self._read_stdout, "trainrig-run-reader", self._proc.stdout)
        else:
            self._spawn(self._wait_child, "trainrig-run-waiter")

    def _spawn(self, target: Callable[..., None], name: str, *args: Any) -> None:
        t = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(t)
        t.start()

    def cancel(self) -> None:
        """Ask the child to stop (SIGINT to its group); force it (SIGKILL) after ``grace_s``."""
        with self._lock:
            if self._done.is_set() or self._cancel_requested or self._proc is None:
                return
            self._cancel_requested = True
        self._signal(signal.SIGINT if os.name == "posix" else signal.CTRL_BREAK_EVENT)  # type: ignore[attr-defined]
        self._kill_timer = threading.Timer(self.grace_s, self._force)
        self._kill_timer.daemon = True
        self._kill_timer.start()

    def _force(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self.forced = True
            self._signal(signal.SIGKILL if os.name == "posix" else signal.SIGTERM)

    def _signal(self, sig: int) -> None:
        assert self._proc is not None
        try:
            if os.name == "posix":
                os.killpg(self._proc.pid, sig)
            else:
                self._proc.send_signal(sig)
        except (ProcessLookupError, PermissionError):
            pass

    def wait(self, timeout: float | None = None) -> bool:
        """True once the run has ended and everything is stored."""
        return self._done.wait(timeout)

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def elapsed_s(self) -> float:
        if self.started_at is None:
            return 0.0
        return self.duration_s if self.duration_s is not None else time.monotonic() - self.started_at

    # --- the child's output --------------------------------------------------------------------
    def _read_stdout(self, pipe: Any) -> None:
        try:
            for line in _lines(pipe):
                self._handle_line(line)
        finally:
            self._finish()

    def _read_stderr(self, pipe: Any) -> None:
        for line in _lines(pipe):
            text = line.decode("utf-8", "replace").rstrip()
            if text:
                self.stderr_tail.append(text[:500])

    def _handle_line(self, line: bytes | None) -> None:
        msg: Any = None
        if line is not None:
            try:
                msg = json.loads(line)
            except ValueError:
                msg = None
        if not isinstance(msg, dict) or not isinstance(msg.get("event"), str):
            self.garbage_lines += 1
            if line is not None and line.strip():
                self.other_output.append(line.decode("utf-8", "replace").strip()[:500])
            return
        event = msg["event"]
        msg["t"] = self.sampler.elapsed_s if self.sampler is not None else 0.0  # on the samples' clock
        if event == "started":
            self.started = msg
        elif event == "progress":
            self.latest = msg
            with self._lock:
                self.progress.append(msg)
                if len(self.progress) > MAX_PROGRESS:
                    self.progress = self.progress[::2]
        elif event == "finished":
            self.metrics = msg
        elif event in ("error", "cancelled"):
            self._error = msg
        if self.on_message is not None:
            self.on_message(self, msg)

    def _wait_child(self) -> None:
        try:
            assert self._proc is not None
            self._proc.wait()
        finally:
            self._finish()

    # --- the end -----------------------------------------------------------------------------
    def _finish(self) -> None:
        assert self._proc is not None
        rc = self._proc.wait()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(5)
        if self._kill_timer is not None:
            self._kill_timer.cancel()
        self.exit_code = rc
        self.duration_s = time.monotonic() - (self.started_at or time.monotonic())
        if self.sampler is not None:
            self.sampler.stop()
        self.status, self.reason = self._outcome(rc)
        if self.store is not None and self.run_id is not None:
            try:
                self.store.finish_run(
                    self.run_id,
                    self.status,
                    reason=self.reason,
                    exit_code=rc,
                    duration_s=self.duration_s,
                    measured=self.measured(),
                    metrics=self.metrics or {},
                    progress=list(self.progress),
                    sampling=self._sampling(),
                )
            except Exception as exc:  # the database went away: the run still ends, and says so
                self.reason = (self.reason + "; " if self.reason else "") + f"the run could not be stored: {exc}"
        self._done.set()

    def _outcome(self, rc: int) -> tuple[str, str]:
        if self._cancel_requested:
            how = f"forced after {self.grace_s:g} s" if self.forced else "it stopped on SIGINT"
            return "cancelled", f"cancelled by the user ({how})"
        if rc < 0:
            name = _signal_name(-rc)
            hint = " (the system's out-of-memory killer does this)" if -rc == signal.SIGKILL else ""
            return "failed", f"the {self._what()} was killed by {name}{hint}"
        if not self.protocol:
            return ("finished", "") if rc == 0 else ("failed", f"the command exited with code {rc}")
        if self.metrics is not None and rc == 0:
            return "finished", ""
        if self._error is not None:
            return "failed", str(self._error.get("reason") or "the trainer reported an error")
        if rc != 0:
            last = self.stderr_tail[-1] if self.stderr_tail else "no error output"
            return "failed", f"the trainer exited with code {rc}: {last}"
        return "failed", "the trainer exited without reporting a result"

    def _what(self) -> str:
        return "trainer" if self.protocol else "command"

    def measured(self) -> dict[str, Any]:
        """What the run measured of what a sizing predicts, and the errors of the prediction."""
        out: dict[str, Any] = {}
        m = self.metrics or {}
        for k in ("median_step_s", "peak_memory_bytes", "peak_memory_kind", "training_time_s", "accuracy", "macro_f1"):
            if m.get(k) is not None:
                out[k] = m[k]
        if self.sampler is not None:
            _t, v = self.sampler.buffer.snapshot()
            if "proc_rss_bytes" in self.sampler.columns and len(v):
                col = v[:, self.sampler.buffer.column("proc_rss_bytes")]
                if (col == col).any():  # not all NaN
                    out["sampled_peak_rss_bytes"] = float(max(x for x in col if x == x))
        p = self.prediction or {}
        if p.get("step_s") and out.get("median_step_s"):
            out["step_error"] = p["step_s"] / out["median_step_s"] - 1
        peak, before = m.get("peak_memory_bytes"), m.get("rss_before_bytes")
        if peak and before is not None and "RSS" in str(m.get("peak_memory_kind")):
            # on the CPU the process also holds Python, PyTorch and the whole data set: the
            # training step's memory is what the peak grew by after those were loaded
            out["training_memory_bytes"] = peak - before
        elif peak:
            out["training_memory_bytes"] = peak
        if p.get("peak_memory_bytes") and out.get("training_memory_bytes"):
            out["memory_error"] = p["peak_memory_bytes"] / out["training_memory_bytes"] - 1
        return out

    def _sampling(self) -> dict[str, Any]:
        s = self.sampler
        if s is None:
            return {}
        return {
            "columns": list(s.columns),
            "rate_hz": s.rate_hz,
            "reasons": s.reasons,
            "limits": s.limits,
            "events": s.all_events()[:1000],
            "started_wall": s.started_wall,
            "sampler_cpu_s": s.cpu_time_s,
            "garbage_lines": self.garbage_lines,
            "recorder": recorder_identity(),  # telemetry.orphan_runs: closed as failed if this process is gone
        }

    def _store_samples(self, rows: list[tuple[float, list[float | None]]]) -> None:
        if self.store is not None and self.run_id is not None:
            self.store.add_samples(self.run_id, rows)


def _lines(pipe: Any) -> Any:
    """Lines of a binary pipe until EOF; a line longer than MAX_LINE_BYTES is dropped and yields
    None once (garbage); a last line without a newline is yielded as it is."""
    buf = bytearray()
    skipping = False
    while True:
        chunk = pipe.read1(65536) if hasattr(pipe, "read1") else pipe.read(65536)
        if not chunk:
            break
        buf += chunk
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                break
            line = bytes(buf[:nl])
            del buf[: nl + 1]
            if skipping:
                skipping = False
                continue
            yield line
        if len(buf) > MAX_LINE_BYTES:
            buf.clear()
            if not skipping:
                skipping = True
                yield None
    if buf and not skipping:
        yield bytes(buf)


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"
