"""A child process the harness talks to a line at a time over its stdin and stdout, its stderr kept in a log file.

A Python process (`python -m MODULE` or `python SCRIPT.py`) is forked from the runner's zygote
(harness.execution.zygote), which paid the interpreter's start and torch's import once; any other command, or a
Python one the zygote cannot serve, is started with subprocess.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from typing import IO, Any

ZYGOTE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zygote.py")
STATUS_SUFFIX = ".status"  # a forked child's exit status file, which the zygote writes: "RETURNCODE CPU_SECONDS"
ZYGOTE_START_S = 120.0  # how long the zygote's imports may take before it is given up for this process


class HelperProcess:
    """A process started from `command` that takes requests, a line each on its stdin, and answers each with a
    line on its stdout. It gets a folder of its own under `workdir` (`dir`: the place for the files its requests
    name), and its stderr goes to stderr.log there, whose last line says why it died where it does. `who` names it
    in the `failure` (the caller's exception class) raised when it dies or takes too long. It is stopped by
    close(), else when this object is collected.
    """

    def __init__(self, command: list[str], workdir: str, prefix: str, who: str, failure: type[Exception],
                 env: dict[str, str] | None = None):
        self.who, self.failure = who, failure
        self.dir = tempfile.mkdtemp(prefix=prefix, dir=workdir)
        self.stderr = open(os.path.join(self.dir, "stderr.log"), "w+")
        self.proc: Any = _forked(command, env, self.dir, self.stderr.name) or subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True, env=env, start_new_session=True)
        self._finalizer = weakref.finalize(self, _stop, self.proc, self.stderr)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self, kill: bool = False) -> None:
        """Stop the process now (else when this object is collected); `kill` kills it rather than asking it to end."""
        if self._finalizer.detach() is not None:
            _stop(self.proc, self.stderr, kill)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died: answer() says how

    def answer(self, timeout_s: float | None = None) -> str:
        """Its next line, stripped. `failure` where it dies first, with how and its stderr's last line, or where it
        says nothing for `timeout_s` (when given): then it is killed, since it is stuck or too slow to wait for."""
        assert self.proc.stdout is not None
        if timeout_s is not None:
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
            if not ready:
                self.close(kill=True)
                raise self.failure(f"{self.who} took over {timeout_s:.0f} s")
        line = self.proc.stdout.readline()
        if line:
            return line.strip()
        code = self.proc.wait(timeout=30)
        died = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        self.stderr.seek(0)
        tail = [line.strip() for line in self.stderr.read().splitlines() if line.strip()][-1:]
        raise self.failure(f"{self.who} died ({died})" + (f": {tail[0][:300]}" if tail else ""))


def _stop(proc: Any, stderr: IO[str], kill: bool = False) -> None:
    """End the process: closing its stdin ends its loop; one that does not end in 10 s, or is to be killed, is
    killed. Its stderr file is closed. A function of its own, not a method: the finalizer must not hold the object."""
    if proc.poll() is None:
        try:
            if kill:
                raise OSError("kill")
            proc.stdin.close()  # type: ignore[union-attr]
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
    for stream in (proc.stdin, proc.stdout):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
    stderr.close()


def forked_cpu_seconds() -> float:
    """CPU seconds of the zygote's children this process has seen end: like RUSAGE_CHILDREN, for the processes it
    asked for but is not the parent of."""
    return _Forked.reaped_cpu


class _Forked:
    """A zygote's child, seen as subprocess.Popen shows a child: pid, stdin and stdout (text), poll, wait, kill. Its
    exit status and CPU time come from the file the zygote writes when it reaps it."""

    reaped_cpu = 0.0

    def __init__(self, pid: int, stdin: int, stdout: int, status: str):
        self.pid, self.status = pid, status
        self.stdin: IO[str] = os.fdopen(stdin, "w")
        self.stdout: IO[str] = os.fdopen(stdout, "r")
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                with open(self.status) as f:
                    code, cpu = f.read().split()
            except (OSError, ValueError):
                if _ZYGOTE.alive() or _exists(self.pid):
                    return None
                code, cpu = "-9", "0"  # the zygote died before it could say: the child is gone too
            self.returncode = int(code)
            _Forked.reaped_cpu += float(cpu)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0.0)
            time.sleep(0.02)
        return self.returncode  # type: ignore[return-value]

    def kill(self) -> None:
        if self.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)  # its session's group: whatever it started goes too
            except OSError:
                pass


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


class _Zygote:
    """This process's zygote, started at the first Python helper process it is asked for."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.failed = False
        self.lock = threading.Lock()
        self.made = 0

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _start(self, workdir: str) -> bool:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with open(os.path.join(workdir, "zygote.log"), "ab") as log:
            self.proc = subprocess.Popen([sys.executable, ZYGOTE_SCRIPT, str(theirs.fileno())], pass_fds=[theirs.fileno()],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        theirs.close()
        ours.settimeout(ZYGOTE_START_S)
        try:
            ready = ours.recv(64) == b"ready\n"
        except OSError:
            ready = False
        if not ready:
            self.proc.kill()
            return False
        ours.settimeout(None)
        self.sock = ours
        return True

    def fork(self, request: dict[str, Any], stdin: int, stdout: int) -> int | None:
        with self.lock:
            if self.failed:
                return None
            if not self.alive() and not self._start(os.path.dirname(request["status"])):
                self.failed = True  # it could not start here: this process starts its helpers with subprocess
                return None
            assert self.sock is not None
            try:
                socket.send_fds(self.sock, [json.dumps(request).encode()], [stdin, stdout])
                answer = self.sock.recv(256).decode()
            except OSError:
                return None
        return int(answer) if answer.isdigit() else None


_ZYGOTE = _Zygote()


def _forked(command: list[str], env: dict[str, str] | None, folder: str, stderr: str) -> _Forked | None:
    """The command's process forked from the zygote, or None where it is not a Python module or script run by this
    interpreter, or the zygote cannot serve it (the caller then starts it with subprocess)."""
    if len(command) < 2 or command[0] != sys.executable:
        return None
    safe_path = command[1] == "-P"  # python -P: neither the script's folder nor the working directory goes on sys.path
    arguments = command[2:] if safe_path else command[1:]
    if len(arguments) >= 2 and arguments[0] == "-m":
        target: dict[str, Any] = {"module": arguments[1], "args": arguments[2:], "safe_path": safe_path}
    elif arguments and arguments[0].endswith(".py"):
        target = {"script": arguments[0], "args": arguments[1:], "safe_path": safe_path}
    else:
        return None
    _ZYGOTE.made += 1
    status = os.path.join(folder, f"exit{_ZYGOTE.made}{STATUS_SUFFIX}")
    request = {**target, "env": dict(env if env is not None else os.environ), "cwd": os.getcwd(), "stderr": stderr, "status": status}
    child_in, parent_in = os.pipe()
    parent_out, child_out = os.pipe()
    try:
        pid = _ZYGOTE.fork(request, child_in, child_out)
    finally:
        os.close(child_in)
        os.close(child_out)
    if pid is None:
        os.close(parent_in)
        os.close(parent_out)
        return None
    return _Forked(pid, parent_in, parent_out, status)

