"""Talking to a real Linux peer: start its agent, ask, carry frames, shut it down.

One :class:`KernelPeer` owns one agent process (:mod:`esplab.peer.backends`). A reader
thread turns the agent's lines into answers (by request id) and frames (queued in
order); everything else runs in the caller's thread. Every failure is a
:class:`~esplab.errors.PeerError` naming what happened; the process is killed, with
its whole process group, on :meth:`close`, on a failure, and at interpreter exit.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import signal
import subprocess
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, NoReturn, TypeAlias

from esplab.errors import PeerError
from esplab.peer.backends import Backend

__all__ = ["KernelPeer", "RunResult"]

_Stopper: TypeAlias = "weakref.finalize[[subprocess.Popen[bytes], threading.Lock], KernelPeer]"
HEARTBEAT = 5.0  # seconds between "alive" lines (the agent gives up after 60 s of none)


def _stop(proc: subprocess.Popen[bytes], write_lock: threading.Lock) -> None:
    """Ask the agent to quit, then end its process group. Runs once per process, from
    :meth:`KernelPeer.close` or when Python exits (``weakref.finalize``, registered as
    the process starts), so no QEMU outlives esplab."""
    try:
        if proc.poll() is None and proc.stdin is not None:
            with write_lock:
                proc.stdin.write(b'{"op":"quit"}\n')
                proc.stdin.flush()
                proc.stdin.close()
            proc.wait(timeout=3)
    except (OSError, subprocess.TimeoutExpired, ValueError):
        pass
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        proc.wait()


class RunResult:
    """A command's exit status and output, as the peer's shell would show them."""

    __slots__ = ("err", "out", "rc", "timed_out")

    def __init__(self, rc: int, out: str, err: str, timed_out: bool = False) -> None:
        self.rc = rc
        self.out = out
        self.err = err
        self.timed_out = timed_out


class KernelPeer:
    """A running agent on a real kernel."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.label = backend.label
        self.release = ""
        self.proc: subprocess.Popen[bytes] | None = None
        self.frames: deque[bytes] = deque()
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._ids = itertools.count(1)
        self._noise: deque[str] = deque(maxlen=20)
        self.counters: dict[str, int] = {}
        # Frames the kernel sent to a group address, kept back by the agent.
        self.held = 0
        self.booted_in = 0.0
        # Answers that came while another request was awaited, by request id.
        self._pending: dict[int, dict[str, Any]] = {}
        # Called with frames waiting while a command runs (RealPeer walks them).
        self.frame_hook: Callable[[], object] | None = None
        self._hooked = False
        self._reader: threading.Thread | None = None
        self._write_lock = threading.Lock()
        # Stops the process once: on close(), on collection or at exit (see _stop).
        self._stopper: _Stopper | None = None

    # -- life ----------------------------------------------------------------
    def start(self) -> KernelPeer:
        """Start the agent and wait until it is ready (falling back as the backend says)."""
        backend: Backend | None = self.backend
        started = time.monotonic()
        last: PeerError | None = None
        while backend is not None:
            try:
                self._spawn(backend)
                self._wait_ready(backend)
            except PeerError as exc:
                self.close()
                last = exc
                backend = backend.fallback
                continue
            except BaseException:  # (Ctrl-C during the boot: no guest is left behind)
                self.close()
                raise
            self.backend = backend
            self.label = backend.label
            self.booted_in = time.monotonic() - started
            return self
        assert last is not None
        raise last

    def _spawn(self, backend: Backend) -> None:
        env = {**os.environ, **backend.env}
        try:
            self.proc = subprocess.Popen(
                backend.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise PeerError(f"cannot start the {backend.label}: {exc}") from exc
        self._stopper = weakref.finalize(self, _stop, self.proc, self._write_lock)
        self._answers = queue.Queue()
        self.frames.clear()
        thread = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        thread.start()
        self._reader = thread
        beat = threading.Thread(target=self._heartbeat, args=(self.proc,), daemon=True)
        beat.start()

    def _heartbeat(self, proc: subprocess.Popen[bytes]) -> None:
        """Tell the agent every few seconds that esplab is still here: if esplab is
        killed, the agent hears nothing, ends, and the guest powers off."""
        while proc.poll() is None and proc is self.proc:
            time.sleep(HEARTBEAT)
            if proc.stdin is None or proc.poll() is not None or proc is not self.proc:
                return
            try:
                with self._write_lock:
                    proc.stdin.write(b'{"op":"alive"}\n')
                    proc.stdin.flush()
            except (OSError, ValueError):
                return

    def _wait_ready(self, backend: Backend) -> None:
        answer = self._next(backend.timeout, f"the {backend.label} to boot")
        while answer.get("ev") != "ready":
            answer = self._next(backend.timeout, f"the {backend.label} to boot")
        self.release = str(answer.get("release", ""))

    def _read(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("{"):
                if line:
                    self._noise.append(line)
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                self._noise.append(line)
                continue
            if msg.get("ev") == "frame":
                self.frames.append(bytes.fromhex(msg["hex"]))
            else:
                self._answers.put(msg)
        self._answers.put(None)

    def _next(self, timeout: float, what: str) -> dict[str, Any]:
        try:
            msg = self._answers.get(timeout=timeout)
        except queue.Empty:
            self._timed_out(timeout, what)
        if msg is None:
            self._ended(what)
        return msg

    def _timed_out(self, wait: float, what: str) -> NoReturn:
        self.close()
        raise PeerError(
            f"timed out after {wait:.0f} s waiting for {what}",
            hint="the peer was shut down; start it again with peer host kernel",
        ) from None

    def _ended(self, what: str) -> NoReturn:
        said = "; ".join(self._noise) or "nothing"
        self.close()
        raise PeerError(
            f"the {self.label} ended while waiting for {what} (it said: {said})"
        ) from None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        """Ask the agent to quit, then end the process group (idempotent)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if self._stopper is not None:
            self._stopper()
        else:
            _stop(proc, self._write_lock)
        # The reader sees the end of the output and stops; then its pipe is closed.
        if self._reader is not None:
            self._reader.join(timeout=5)
            self._reader = None
        if proc.stdout is not None:
            proc.stdout.close()

    # -- requests --------------------------------------------------------------
    def request(self, op: str, wait: float = 60.0, **fields: Any) -> dict[str, Any]:
        proc = self.proc
        if proc is None or proc.poll() is not None or proc.stdin is None:
            raise PeerError(f"the {self.label} is not running", hint="peer host kernel")
        rid = next(self._ids)
        try:
            with self._write_lock:
                proc.stdin.write(json.dumps({"id": rid, "op": op, **fields}).encode() + b"\n")
                proc.stdin.flush()
        except OSError as exc:
            self.close()
            raise PeerError(f"the {self.label} stopped listening: {exc}") from exc
        answer = self._await(rid, wait, op, hook=op == "run")
        if not answer.get("ok"):
            raise PeerError(f"the peer could not {op}: {answer.get('error')}")
        if "counters" in answer:
            self.counters = answer["counters"]
        self.held = int(answer.get("held", self.held))
        return answer

    def _await(self, rid: int, wait: float, op: str, *, hook: bool) -> dict[str, Any]:
        """The answer to request ``rid``; answers to other requests (one made by the
        frame hook while a command runs) wait in :attr:`_pending`. With ``hook``, the
        frames the peer sends meanwhile go to :attr:`frame_hook` as they come, so a
        program such as ping hears its replies in time."""
        deadline = time.monotonic() + wait
        while True:
            found = self._pending.pop(rid, None)
            if found is not None:
                return found
            if hook and self.frames and self.frame_hook is not None and not self._hooked:
                self._hooked = True
                try:
                    self.frame_hook()
                finally:
                    self._hooked = False
                continue
            left = deadline - time.monotonic()
            step = min(left, 0.02) if hook and self.frame_hook is not None else left
            if left <= 0:
                self._timed_out(wait, f"the peer to answer {op}")
            try:
                msg = self._answers.get(timeout=max(step, 0.0))
            except queue.Empty:
                continue
            if msg is None:
                self._answers.put(None)  # (for whoever waits next)
                self._ended(f"the peer to answer {op}")
            if msg.get("id") == rid:
                return msg
            if "id" in msg:
                self._pending[int(msg["id"])] = msg

    def run(self, argv: list[str], timeout: float = 30.0, stdin: str | None = None) -> RunResult:
        """Run ``argv`` on the peer (no shell)."""
        answer = self.request("run", wait=timeout + 30, argv=argv, timeout=timeout, stdin=stdin)
        return RunResult(
            int(answer["rc"]), answer["out"], answer["err"], bool(answer.get("timed_out"))
        )

    def must(self, argv: list[str], stdin: str | None = None) -> str:
        """Run a setup command; a failure is a PeerError with the peer's words."""
        done = self.run(argv, stdin=stdin)
        if done.rc != 0:
            raise PeerError(
                f"the peer refused {' '.join(argv)} (exit {done.rc}): "
                f"{(done.err or done.out).strip()}"
            )
        return done.out

    def inject(self, frame: bytes, settle: float = 0.2) -> dict[str, int]:
        """Write ``frame`` into the peer's wire; its answers land in :attr:`frames`.
        Returns the kernel's counters once it is quiet (at most ``settle`` seconds)."""
        answer = self.request("inject", hex=frame.hex(), settle=settle)
        return dict(answer["counters"])

    def read_counters(self) -> dict[str, int]:
        return dict(self.request("counters")["counters"])

    def take_frames(self) -> list[bytes]:
        out = list(self.frames)
        self.frames.clear()
        return out
