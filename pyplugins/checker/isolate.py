"""A supervised child process for ``pyplugins check``: started, watched, and killed with its group.

The parent gives the child a work directory holding ``request.json``; the child writes its
fd 1 and fd 2 into ``output``, crash tracebacks (:mod:`faulthandler`) into ``fault`` and its
answer into ``result.json``. While it runs, the child shows which step it is in on a
:class:`StepBoard`, one shared page (``steps``) it updates around every plugin callback (the
child's :class:`~pyplugins.checker.check_child.StepWatch`), so the parent can name the callback that
crashed, hung or grew the memory, even when the child dies without a word. :func:`run_child`
polls the child, the board and the child's resident memory, and kills the child's whole process
group (forked grandchildren too) on a time or memory limit, on Ctrl-C, and when the child ends.
This module imports nothing heavy: the parent stays a small process.

Example:
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     board = StepBoard.create(os.path.join(tmp, "steps"))
    ...     board.publish(PLUGIN_STEP, "configure_plugin", 12.5, last="configure_plugin")
    ...     board.set_info({"plugin": "CircPad:1:"})
    ...     state = board.read()
    >>> state.step, state.kind == PLUGIN_STEP, state.info["plugin"]
    ('configure_plugin', True, 'CircPad:1:')
"""

from __future__ import annotations

import json
import mmap
import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

__all__ = ["OWN_WORK", "PLUGIN_STEP", "BoardState", "ChildOutcome", "StepBoard", "frames_of",
           "resident_self", "run_child", "without"]

#: Board kinds: the child runs plugin code (a callback, the module import) or its own work.
OWN_WORK, PLUGIN_STEP = 0, 1

_PAGE = 4096
_HEAD = struct.Struct("<QQdB7xQQQ")  # seq, step, started, kind, baseline, thread, memory limit
_SLOTS = {"step": (_HEAD.size, 256), "last": (_HEAD.size + 256, 256),
          "info": (_HEAD.size + 512, _PAGE - _HEAD.size - 512)}
_POLL_S = 0.02
_DUMP_WAIT_S = 0.3
_OUTPUT_CAP = 256 << 10


@dataclass
class BoardState:
    """One consistent reading of a :class:`StepBoard`.

    Attributes:
        kind: :data:`PLUGIN_STEP` or :data:`OWN_WORK`.
        step: the callback's method name, a phrase (``"import of the plugin module"``,
            ``"start-up"``), or ``""`` between callbacks.
        started: when the step began, on the child's ``time.monotonic()`` clock (an identity
            for the step; the parent times steps on its own clock).
        last: the plugin step begun most recently.
        baseline: the child's resident bytes once its own start-up was done (0: not yet).
        thread: ``threading.get_ident()`` of the child's checking thread.
        memory_limit: the bytes the child may grow by past ``baseline`` (0: no limit told).
        info: what the child told about the check (``plugin``, ``interface``).
    """

    kind: int = OWN_WORK
    step: str = ""
    started: float = 0.0
    number: int = 0
    last: str = ""
    baseline: int = 0
    thread: int = 0
    memory_limit: int = 0
    info: Dict[str, Any] = field(default_factory=dict)


class StepBoard:
    """A page of shared memory one writer (the child) updates and the parent reads, lock-free: a
    sequence number is odd while a write is under way (a seqlock), so a reader retries a torn
    read."""

    def __init__(self, path: str) -> None:
        fd = os.open(path, os.O_RDWR)
        try:
            self._map = mmap.mmap(fd, _PAGE)
        finally:
            os.close(fd)  # the mapping stays valid; a plugin closing descriptors cannot break it
        self._head = BoardState()
        self._seq = 0

    @classmethod
    def create(cls, path: str) -> "StepBoard":
        """A new, zeroed board at ``path``."""
        with open(path, "wb") as f:
            f.write(bytes(_PAGE))
        return cls(path)

    # -- the child's side --------------------------------------------------------------------
    def publish(self, kind: int, step: str, started: float, *, last: Optional[str] = None) -> None:
        """Show the step now running (``kind`` :data:`PLUGIN_STEP` or :data:`OWN_WORK`)."""
        head = self._head
        head.kind, head.step, head.started, head.number = kind, step, started, head.number + 1
        if last is not None:
            head.last = last
        self._write(step=step, last=head.last)

    def set_info(self, info: Dict[str, Any]) -> None:
        """Tell the parent about the check (JSON-able; truncated to fit the page)."""
        self._head.info = dict(info)
        self._write(info=json.dumps(info)[:_SLOTS["info"][1] - 2])

    def set_baseline(self, resident: int, thread: int, memory_limit: int) -> None:
        """Record the child's resident bytes after its start-up, its checking thread and the
        bytes it may grow by (the parent enforces it; 0: no limit)."""
        head = self._head
        head.baseline, head.thread, head.memory_limit = resident, thread, memory_limit
        self._write()

    def _write(self, **texts: str) -> None:
        head, m = self._head, self._map
        self._seq += 1
        m[0:8] = struct.pack("<Q", self._seq)  # odd: a write is under way
        m[8:_HEAD.size] = _HEAD.pack(0, head.number, head.started, head.kind, head.baseline,
                                     head.thread, head.memory_limit)[8:]
        for name, text in texts.items():
            offset, size = _SLOTS[name]
            data = text.encode("utf-8", "replace")[:size - 2]
            m[offset:offset + 2 + len(data)] = struct.pack("<H", len(data)) + data
        self._seq += 1
        # Even again, last. Python has no memory fence: where stores may be reordered (not on
        # x86) a read can still tear; the parent then misreads one poll, 20 ms, no more.
        m[0:8] = struct.pack("<Q", self._seq)

    # -- the parent's side -------------------------------------------------------------------
    def read(self) -> BoardState:
        """A consistent copy of the board (the last one, if writes keep tearing it)."""
        for _ in range(100):
            page = bytes(self._map[:_PAGE])
            if page[:8] == bytes(self._map[:8]) and struct.unpack("<Q", page[:8])[0] % 2 == 0:
                break
        _, number, started, kind, baseline, thread, limit = _HEAD.unpack(page[:_HEAD.size])
        texts = {}
        for name, (offset, size) in _SLOTS.items():
            (length,) = struct.unpack("<H", page[offset:offset + 2])
            texts[name] = page[offset + 2:offset + 2 + min(length, size - 2)].decode(
                "utf-8", "replace")
        try:
            info = json.loads(texts["info"]) if texts["info"] else {}
        except ValueError:
            info = {}
        return BoardState(kind, texts["step"], started, number, texts["last"], baseline, thread,
                          limit, info if isinstance(info, dict) else {})


@dataclass
class ChildOutcome:
    """How the child ended, and what it left.

    Attributes:
        result: the JSON object the child wrote as its answer, or None (it never did).
        exit_status: its exit status when it exited without an answer.
        signal: the signal that killed it, when one did (ours after ``stopped`` included).
        stopped: ``"timeout"`` or ``"memory"`` when the parent killed it for a limit, else None.
        seconds: how long the step that ran out of time had run.
        resident: the child's resident bytes above its baseline when the memory limit stopped it.
        board: the board's last state (the step running when it ended, the plugin, ...).
        output: what the child wrote to its fd 1 and fd 2 (capped at the start and the end).
        fault: :mod:`faulthandler`'s dump (a fatal signal, or the parent's request on a time
            limit), or ``""``.
        progress: the JSON object the child last wrote to ``WORKDIR/progress.json`` (what it
            had finished, for a child that checks several things), or None.
    """

    result: Optional[Dict[str, Any]] = None
    exit_status: Optional[int] = None
    signal: Optional[int] = None
    stopped: Optional[str] = None
    seconds: float = 0.0
    resident: int = 0
    board: BoardState = field(default_factory=BoardState)
    output: str = ""
    fault: str = ""
    progress: Optional[Dict[str, Any]] = None


def run_child(module: str, request: Dict[str, Any], *, timeout: float, own_limit: float,
              env: Optional[Dict[str, str]] = None) -> ChildOutcome:
    """Run ``python -m MODULE WORKDIR`` under supervision until it ends or is stopped.

    Args:
        module: the child's module; it reads ``WORKDIR/request.json`` (``request``), shows its
            steps on ``WORKDIR/steps`` (:class:`StepBoard`) and writes ``WORKDIR/result.json``.
        timeout: the most seconds one plugin step (:data:`PLUGIN_STEP`) may run.
        own_limit: the most seconds the child's own work may run without a plugin step between
            (start-up, the driver between callbacks, writing the answer). A child may also
            write ``WORKDIR/progress.json`` (replaced whole, as ``result.json``) as it goes.
        env: variables to set for the child, over this process's environment.

    Returns:
        A :class:`ChildOutcome`. The child's process group is killed before this returns, by any
        path (Ctrl-C in the parent included: ``KeyboardInterrupt`` propagates after the kill).
    """
    with tempfile.TemporaryDirectory(prefix="pyplugins_check_") as tmp:
        work = Path(tmp)
        (work / "request.json").write_text(json.dumps(request))
        board = StepBoard.create(str(work / "steps"))
        with open(work / "output", "wb") as out:
            proc = subprocess.Popen(  # our own interpreter and module
                [sys.executable, "-m", module, str(work)], stdin=subprocess.DEVNULL,
                stdout=out, stderr=out, env=_child_env(env), start_new_session=True)
        try:
            outcome = _supervise(proc, board, timeout, own_limit)
        finally:
            _kill_group(proc)
        outcome.board = board.read()
        outcome.output = _capped(work / "output")
        outcome.fault = _capped(work / "fault")
        outcome.result = _json_file(work / "result.json")
        outcome.progress = _json_file(work / "progress.json")
        return outcome


def _json_file(path: Path) -> Optional[Dict[str, Any]]:
    """The JSON object in ``path``, or None (absent, unreadable, or not an object)."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _child_env(extra: Optional[Dict[str, str]]) -> Dict[str, str]:
    env = dict(os.environ)
    paths = [p if p else os.getcwd() for p in sys.path]  # the same pyplugins, the same modules
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONUNBUFFERED"] = "1"  # a print just before a crash still reaches the output
    env.update(extra or {})
    return env


def _supervise(proc: subprocess.Popen, board: StepBoard, timeout: float,
               own_limit: float) -> ChildOutcome:
    """Poll until the child ends, or stop it at a limit: a step's time, or the memory the
    child told the board it may grow by past its baseline."""
    waiter = _exit_waiter(proc.pid)
    key, since = None, time.monotonic()
    try:
        while True:
            ended = _ended(proc)
            if ended is not None:
                return ended
            state = board.read()
            now = time.monotonic()
            if (state.kind, state.number) != key:
                key, since = (state.kind, state.number), now
            limit = timeout if state.kind == PLUGIN_STEP else own_limit
            if now - since > limit:
                _dump(proc)
                return ChildOutcome(stopped="timeout", seconds=now - since)
            if state.memory_limit and state.baseline:
                grown = _resident(proc.pid) - state.baseline
                if grown > state.memory_limit:
                    return ChildOutcome(stopped="memory", resident=grown)
            _wait(waiter, _POLL_S)
    finally:
        if waiter is not None:
            os.close(waiter)


def _exit_waiter(pid: int) -> Optional[int]:
    """A pidfd that becomes readable when the child ends (Linux 5.3+), else None (poll)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _wait(waiter: Optional[int], seconds: float) -> None:
    if waiter is None:
        time.sleep(seconds)
    else:
        select.select([waiter], [], [], seconds)


def _ended(proc: subprocess.Popen) -> Optional[ChildOutcome]:
    """How the child ended, without reaping it: while it is a zombie its pid, which is also its
    process group's id, cannot be reused, so killing the group afterwards is safe."""
    if not hasattr(os, "waitid"):
        code = proc.poll()
        if code is None:
            return None
        return ChildOutcome(signal=-code) if code < 0 else ChildOutcome(exit_status=code)
    info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    if info is None:
        return None
    if info.si_code == os.CLD_EXITED:
        return ChildOutcome(exit_status=info.si_status)
    return ChildOutcome(signal=info.si_status)


def _dump(proc: subprocess.Popen) -> None:
    """Ask the child's :mod:`faulthandler` for every thread's stack (SIGUSR1), briefly."""
    try:
        os.kill(proc.pid, signal.SIGUSR1)
    except (ProcessLookupError, PermissionError, AttributeError):
        return
    deadline = time.monotonic() + _DUMP_WAIT_S
    while time.monotonic() < deadline and _ended(proc) is None:
        time.sleep(_POLL_S)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the child, and whatever it forked
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _resident(pid: int) -> int:
    """Resident bytes of ``pid`` (Linux ``/proc``; 0 where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def resident_self() -> int:
    """This process's resident bytes (0 where ``/proc`` cannot be read).

    Example:
        >>> resident_self() >= 0
        True
    """
    return _resident(os.getpid())


def _capped(path: Path) -> str:
    """A file's text, its start and end kept when over the cap (a plugin may print without end)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            if size <= _OUTPUT_CAP:
                data = f.read()
            else:
                head = f.read(_OUTPUT_CAP // 2)
                f.seek(size - _OUTPUT_CAP // 2)
                data = (head + f"\n[... {size - _OUTPUT_CAP} bytes not shown ...]\n".encode()
                        + f.read())
    except OSError:
        return ""
    return data.decode("utf-8", "replace")


def frames_of(fault: str, thread: int) -> List[str]:
    """The ``File ..., line N in f`` lines of ``thread``'s stack in a :mod:`faulthandler` dump
    (most recent call first); every thread's when ``thread`` is not in it.

    Example:
        >>> dump = ('Current thread 0x0000000000000007 (most recent call first):\\n'
        ...         '  File "/p.py", line 3 in configure_plugin\\n')
        >>> frames_of(dump, 7)
        ['File "/p.py", line 3 in configure_plugin']
    """
    blocks: Dict[int, List[str]] = {}
    current: Optional[List[str]] = None
    for line in fault.splitlines():
        text = line.strip()
        if text.startswith(("Current thread 0x", "Thread 0x")):
            ident = int(text.split("0x", 1)[1].split()[0], 16)
            current = blocks.setdefault(ident, [])
        elif text.startswith("File ") and current is not None:
            current.append(text)
    if thread in blocks:
        return blocks[thread]
    return [line for lines in blocks.values() for line in lines]


def without(text: str, pieces: Sequence[str]) -> str:
    """``text`` with one occurrence of each of ``pieces`` (and its line end) removed.

    Example:
        >>> without("a\\n[ERROR] x\\nb\\n", ["[ERROR] x"])
        'a\\nb\\n'
    """
    for piece in pieces:
        for candidate in (piece.rstrip("\n") + "\n", piece):  # as fd 2 got it: one line end
            at = text.find(candidate)
            if at >= 0:
                text = text[:at] + text[at + len(candidate):]
                break
    return text
