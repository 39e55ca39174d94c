"""A child process the harness talks to a line at a time over its stdin and stdout, its stderr kept in a log file.

A Python process (`python -m MODULE` or `python SCRIPT.py`) is forked from a zygote (harness.processes.zygote): the
run's, where the runner was given one (ZYGOTE_ENV), else one of this process's own; any other command, or a Python
one the zygote cannot serve, is started with subprocess. Runners are forked from the run's zygote the same way
(harness.processes.runner).
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from typing import IO, Any, Mapping, NamedTuple

from harness.processes.zygote import ForkRequest

ZYGOTE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zygote.py")
STATUS_SUFFIX = ".status"  # a forked child's exit status file, which the zygote writes: "RETURNCODE CPU_SECONDS"
ZYGOTE_START_S = 120.0  # how long the zygote's imports may take before it is given up for this process
ZYGOTE_BIND_S = 30.0  # how long a run's zygote, just started, may take to open its socket
ZYGOTE_ENV = "TCM_ZYGOTE"  # the run's zygote's socket, where a process's helpers are forked
ASKED_BY_ENV = "TCM_ASKED_BY"  # the pid of the process a runner (or a prebuild) serves, which it ends with (not always its parent)
# What pytest, xdist and execnet add to the environment of their own processes: pytest's version, the test running, a
# worker's id and run, the terminal size execnet gives a worker. A program the user runs has none of them, so the
# processes that stand for one (the zygote, the runner template, the runners) get none.
PYTEST_ADDED = ("PYTEST_VERSION", "PYTEST_CURRENT_TEST", "COLUMNS", "LINES")
PYTEST_ADDED_PREFIX = "PYTEST_XDIST_"


def without_pytest(env: Mapping[str, str]) -> dict[str, str]:
    """`env` less what pytest, xdist and execnet added (PYTEST_ADDED)."""
    return {k: v for k, v in env.items() if k not in PYTEST_ADDED and not k.startswith(PYTEST_ADDED_PREFIX)}


class HelperProcess:
    """A process started from `command` that takes requests, a line each on its stdin, and answers each with a
    line on its stdout. It gets a folder of its own under `workdir` (`dir`: the place for the files its requests
    name), and its stderr goes to stderr.log there, whose last line says why it died where it does. `who` names it
    in the `failure` (the caller's exception class) raised when it dies or takes too long. It is stopped by
    close(), else when this object is collected.
    """

    def __init__(self, command: list[str], workdir: str, prefix: str, who: str, failure: type[Exception],
                 env: dict[str, str] | None = None, binary: bool = False):
        self.who, self.failure = who, failure
        self.dir = tempfile.mkdtemp(prefix=prefix, dir=workdir)
        self.stderr = open(os.path.join(self.dir, "stderr.log"), "w+")
        self.proc: Any = forked(command, env, self.dir, self.stderr.name, binary=binary) or subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=not binary, env=env, start_new_session=True)
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
        self.wait_for_answer(timeout_s)
        line = self.proc.stdout.readline()
        if line:
            return line.strip()
        raise self.died()

    def wait_for_answer(self, timeout_s: float | None) -> None:
        """Until its stdout has something to read (an answer, or its end); `failure` where that takes over `timeout_s`
        (when given): then it is killed, since it is stuck or too slow to wait for."""
        if timeout_s is not None:
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
            if not ready:
                self.close(kill=True)
                raise self.failure(f"{self.who} took over {timeout_s:.0f} s")

    def died(self) -> Exception:
        """`failure`, for a process whose stdout ended: how it died, with its stderr's last line."""
        code = self.proc.wait(timeout=30)
        died = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        self.stderr.seek(0)
        tail = [line.strip() for line in self.stderr.read().splitlines() if line.strip()][-1:]
        return self.failure(f"{self.who} died ({died})" + (f": {tail[0][:300]}" if tail else ""))


class CellProcesses:
    """The helper processes a cell's builds start and share (a package server, the warm-cache row's new process),
    each started at its first use and again only if it died; the cell ends them (Execution)."""

    def __init__(self) -> None:
        self.package_server: HelperProcess | None = None  # a fresh Python process serving the cell's packages (aoti_fresh)
        self.warm_cache: HelperProcess | None = None  # the process compiling on the first compile's caches (warm_cache)
        self.saved: HelperProcess | None = None  # the process loading what the cell saved (harness.execution.saved)

    def held(self) -> list[HelperProcess]:
        return [p for p in (self.package_server, self.warm_cache, self.saved) if p is not None]


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
    """A zygote's child, seen as subprocess.Popen shows a child: pid, stdin and stdout (text, or bytes), poll, wait,
    kill. Its exit status and CPU time come from the file the zygote writes when it reaps it."""

    reaped_cpu = 0.0

    def __init__(self, pid: int, stdin: int | None, stdout: int | None, status: str, zygote: Zygote, binary: bool = False):
        self.pid, self.status, self.zygote = pid, status, zygote
        # None for a child whose stdin and stdout are not pipes of ours (a zygote's lifeline and log)
        self.stdin: IO[Any] = os.fdopen(stdin, "wb" if binary else "w") if stdin is not None else None  # type: ignore[assignment]
        self.stdout: IO[Any] = os.fdopen(stdout, "rb" if binary else "r") if stdout is not None else None  # type: ignore[assignment]
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                with open(self.status) as f:
                    code, cpu = f.read().split()
            except (OSError, ValueError):
                if self.zygote.alive() or still_there(self.pid):
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


def kill_session(proc: Any, wait: bool = True) -> None:
    """Kill a process that leads a session of its own, with what it started (its compilers, its compile workers); with
    `wait`, return once it is gone (else a zygote's child is reaped by its zygote, a subprocess by the next one started)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
    if wait:
        proc.wait()


def exit_with_asker(poll_s: float = 1.0) -> None:
    """End this process when the process that asked for it is gone (a runner's pytest worker, a prebuild's controller;
    killed, or its controller was): it sits in its own session, so no signal reaches it, and a kernel spinning on the
    GPU would otherwise outlive the run and hold the device."""
    parent = os.getppid()
    asked_by = int(os.environ.get(ASKED_BY_ENV) or parent)

    def watch() -> None:
        # Forked by the run's zygote, it serves on if the zygote dies: its asker still waits for its answer.
        while os.getppid() == parent if asked_by == parent else still_there(asked_by):
            time.sleep(poll_s)
        os._exit(4)

    threading.Thread(target=watch, name="tcm-asker-watch", daemon=True).start()


def still_there(pid: int) -> bool:
    """Whether the process is there and has not ended (an ended one its parent has not reaped yet is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return True


class Zygote:
    """A zygote this process asks for new processes: the run's, at the socket `path`, or (without one) its own, started
    at the first request."""

    def __init__(self, path: str | None = None, bind_s: float = ZYGOTE_BIND_S) -> None:
        self.path = path
        self.bind_s = bind_s  # how long its socket may take to be opened
        self.proc: subprocess.Popen[bytes] | None = None  # its own
        self.pid: int | None = None
        self.sock: socket.socket | None = None
        self.failed = False
        self.lock = threading.Lock()
        self.made = 0

    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        return self.pid is not None and still_there(self.pid)

    def _connect(self, workdir: str) -> bool:
        """Reach the zygote and take its greeting (`ready PID`), sent once its imports are done."""
        if self.path is None:
            # In the environment this process started in: what its own torch set since, it asks with (forked()).
            self.proc, self.sock = start_zygote(os.path.join(workdir, "zygote.log"), env=_THIS.env_at_start)
        else:
            self.sock = _connected(self.path, self.bind_s)
            if self.sock is None:
                return False
        self.sock.settimeout(ZYGOTE_START_S)
        try:
            greeting = self.sock.recv(64).decode().split()
        except OSError:
            greeting = []
        if greeting[:1] != ["ready"]:
            self.close(kill=True)
            return False
        self.pid = int(greeting[1])
        self.sock.settimeout(None)
        return True

    def fork(self, request: ForkRequest, stdin: int, stdout: int) -> int | None:
        with self.lock:
            if self.failed:
                return None
            if self.sock is None and not self._connect(os.path.dirname(request.status)):
                self.failed = True  # it cannot serve here: this process starts its processes with subprocess
                return None
            assert self.sock is not None
            try:
                socket.send_fds(self.sock, [request.message()], [stdin, stdout])
                answer = self.sock.recv(4096).decode()
            except OSError:
                return None
        return int(answer) if answer.isdigit() else None

    def close(self, kill: bool = False) -> None:
        """Close this process's connection; its own zygote ends with it (at once with `kill`)."""
        sock, self.sock = self.sock, None
        if self.proc is not None and sock is not None:
            stop_zygote(self.proc, sock, kill)
        elif sock is not None:
            sock.close()


def _connected(path: str, bind_s: float) -> socket.socket | None:
    """A connection to the socket at `path`, waiting up to `bind_s` for it to be opened; None if it is not."""
    deadline = time.monotonic() + bind_s
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            sock.connect(path)
            return sock
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)
        except OSError:
            sock.close()
            return None


class RunnerTemplate(NamedTuple):
    """The runner template a run's zygote forks (harness.processes.runner_template): the socket it serves at, the
    module the forked child runs the main() of, and the runners' PYTHONPATH and case specs."""

    socket: str
    module: str
    pythonpath: str
    specs: list[str]


def start_zygote(log: str, path: str | None = None, env: dict[str, str] | None = None,
                 runners: RunnerTemplate | None = None) -> tuple[subprocess.Popen[bytes], socket.socket]:
    """A zygote process (harness.processes.zygote) and this process's end of its lifeline: the zygote ends when it closes.
    With `path`, it also serves whoever connects to that socket (a run's workers and runners), in `env`; with `runners`,
    it forks the run's runner template, which serves the runners at its own socket."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    where = [path, *([runners.socket, runners.module, runners.pythonpath, *runners.specs] if runners else [])] if path else []
    env = without_pytest(os.environ if env is None else env)
    with open(log, "ab") as out:
        proc: Any = _zygote_forked(where, env, theirs, out, log) or subprocess.Popen(
            [sys.executable, ZYGOTE_SCRIPT, str(theirs.fileno()), *where], pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
            stdout=out, stderr=out, env=env, start_new_session=True)
    theirs.close()
    return proc, ours


def _zygote_forked(where: list[str], env: dict[str, str], lifeline: socket.socket, out: IO[bytes], log: str) -> _Forked | None:
    """A new zygote forked from the one this process was given (ZYGOTE_ENV: a test session's, say), which imported
    what it would import in the same interpreter and import-time environment (else it refuses, and the caller starts
    it with subprocess): the lifeline its stdin, its output into its log. None where this process was given none."""
    given = _THIS.zygote
    if given.path is None:
        return None
    request = ForkRequest(script=ZYGOTE_SCRIPT, args=("0", *where), env=env, cwd=os.getcwd(), stderr=log,
                          status=os.path.join(os.path.dirname(log), f"zygote-{os.getpid()}-{given.made + 1}{STATUS_SUFFIX}"))
    given.made += 1
    pid = given.fork(request, lifeline.fileno(), out.fileno())
    return None if pid is None else _Forked(pid, None, None, request.status, given)


def stop_zygote(proc: subprocess.Popen[bytes], lifeline: socket.socket, kill: bool = False) -> None:
    """End a zygote start_zygote started: closing its lifeline ends it; one still there after 10 s (or at once, with
    `kill`) is killed."""
    lifeline.close()
    if not kill:
        try:
            proc.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            pass
    proc.kill()
    proc.wait()


class _ThisProcess:
    """This process as its helpers see it: its environment at its start (what its own torch sets later, it reads where
    used: zygote.READ_WHEN_USED), the zygote its helpers are forked from (the run's, where ZYGOTE_ENV names one), and
    what forked it where that was a process that had imported this module (the run's runner template)."""

    def __init__(self) -> None:
        self.begin(None)

    def begin(self, forked_by: str | None) -> None:
        self.env_at_start = dict(os.environ)
        self.zygote = Zygote(os.environ.get(ZYGOTE_ENV) or None)
        self.forked_by = forked_by


_THIS = _ThisProcess()


def begin_anew(forked_by: str) -> None:
    """In a process forked by `forked_by` (a runner template), which imported this module: its start is now, in the
    environment it was given."""
    _THIS.begin(forked_by)


def forked_by() -> str | None:
    """What forked this process, where begin_anew said so."""
    return _THIS.forked_by


def forked(command: list[str], env: dict[str, str] | None, folder: str, stderr: str, zygote: Zygote | None = None,
           binary: bool = False, cwd: str | None = None) -> _Forked | None:
    """The command's process forked from `zygote` (this process's helpers' by default), in `cwd` (this process's by
    default), or None where it is not a Python module, script or `-c` code run by this interpreter, or the zygote
    cannot serve it (the caller then starts it with subprocess). Its pipes are text, or bytes with `binary`."""
    zygote = zygote or _THIS.zygote
    env = dict(env if env is not None else os.environ)
    set_while_running = tuple(sorted(k for k, v in os.environ.items() if _THIS.env_at_start.get(k) != v and env.get(k) == v))
    status = os.path.join(folder, f"exit{zygote.made + 1}{STATUS_SUFFIX}")
    request = ForkRequest.of_command(command, env=env, set_while_running=set_while_running, cwd=cwd or os.getcwd(),
                                     stderr=stderr, status=status)
    if request is None:
        return None
    zygote.made += 1
    child_in, parent_in = os.pipe()
    parent_out, child_out = os.pipe()
    try:
        pid = zygote.fork(request, child_in, child_out)
    finally:
        os.close(child_in)
        os.close(child_out)
    if pid is None:
        os.close(parent_in)
        os.close(parent_out)
        return None
    return _Forked(pid, parent_in, parent_out, status, zygote, binary)


def python_output(command: list[str], env: dict[str, str] | None = None, cwd: str | None = None,
                  timeout: float | None = None, zygote_at: str | None = None, stderr: str = os.devnull) -> tuple[int, bytes] | None:
    """Run a Python command (`python -c CODE`, `-m MODULE`, `SCRIPT.py`) in a process forked from this process's zygote,
    or the one at the socket `zygote_at` (reached on a connection of this call's own, so any thread may ask), and wait
    for it: its exit status and what it printed (its stderr into the file `stderr`); None where the zygote cannot serve
    it. Past `timeout` it is killed and subprocess.TimeoutExpired raised, as subprocess.run does."""
    folder = tempfile.mkdtemp(prefix="tcm-python-")
    zygote = Zygote(zygote_at) if zygote_at else None
    try:
        proc = forked(command, env, folder, stderr, zygote=zygote, cwd=cwd, binary=True)
        if proc is None:
            return None
        proc.stdin.close()
        deadline = None if timeout is None else time.monotonic() + timeout
        printed: list[bytes] = []
        while True:  # read what it prints until it ends, so that it never waits on a full pipe
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                proc.kill()
                raise subprocess.TimeoutExpired(command, timeout or 0.0)
            ready, _, _ = select.select([proc.stdout], [], [], 1.0 if left is None else min(left, 1.0))
            if ready:
                printed.append(os.read(proc.stdout.fileno(), 1 << 16))
                if not printed[-1]:
                    break
        proc.stdout.close()
        return proc.wait(None if deadline is None else max(deadline - time.monotonic(), 1.0)), b"".join(printed)
    finally:
        if zygote is not None:
            zygote.close()
        shutil.rmtree(folder, ignore_errors=True)


def python_status(command: list[str], env: dict[str, str] | None = None, cwd: str | None = None,
                  timeout: float | None = None) -> int | None:
    """python_output's exit status alone, what the command prints dropped (vec_isa's probe asks so)."""
    done = python_output(command, env, cwd, timeout)
    return None if done is None else done[0]
