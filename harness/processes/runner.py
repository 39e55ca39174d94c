"""Cells run in a separate process, so a segfault, abort, hang or broken CUDA context costs one cell.

A runner process serves `cells_per_process` cells (1: each cell its own, as a cell confirmed alone has it: a library's
process-level state, such as FlagGems's LibEntry kernel cache filled by an earlier cell's launches, changed what Dynamo
traced in the next cell), or, without it, every cell until a crash, a timeout, or a cell that leaves the GPU unusable.
A standby process is started beside each runner that will be replaced, and takes over at once, so a replacement costs
no start-up time; without `cells_per_process`, only once one has had to be replaced (on a machine
with few cores a standby beside every pytest worker slows the cells that run). Given the run's
runner template (harness.processes.runner_template), runner processes are forked from it, the harness and the cases
already imported; else from the run's zygote (harness.processes.zygote), torch and triton already imported, as their
helper processes are; else (or where neither can serve) each is started with subprocess.

Protocol (harness.model.messages): the parent writes a CellRequest a line to the child's stdin; the child answers on
its original stdout with Events (`ready`, `stage`, `result`, then `healthy` or `unhealthy`); the parent handles each
event with a method of its own (`_on_<kind>`), and a closed pipe (`eof`) or a deadline passed (`timeout`) are events
too. The child's own stdout and stderr (kernels' prints, warnings, faulthandler
dumps) go to a log file the parent reads on a crash.

This module is the parent's side (`Runner`, run in a pytest worker, without torch); the child's own side is
harness.processes.runner_child, and what it runs, its cells, harness.execution.runner_main (RUNNER_MODULE).
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

from harness.authoring import registry
from harness.model.cell import Cell
from harness.model.errors import RunnerDied
from harness.model.messages import CellRequest, Event, EventKind, PlainEager
from harness.model.outcome import CellResult, Fault, Outcome, Stage
from harness.model.rows import PLAIN_EAGER, plain_eager_timeout
from harness.model.settings import Settings
from harness.processes import autotune_timing, profiling
from harness.processes.helper_process import (
    ASKED_BY_ENV,
    ZYGOTE_ENV,
    Zygote,
    forked,
    kill_session,
    without_pytest,
)
from harness.processes.zygote import DECIDE_ENV, interpreter_env

LOG_TAIL_LINES = 40
LOG_LINE_CHARS = 500  # of each line of a log tail a result keeps: a case printing megabyte lines must not swell results.json
LOG_READ_BYTES = 256 * 1024  # of a log's end read for its tail
LOG_CAP_BYTES = 64 * 1024 * 1024  # a runner's log past this is emptied between two cells (its tail is what a result keeps)
# What a runner process runs (`python -m`): named, not imported, as it runs the cells, a floor above this room.
RUNNER_MODULE = "harness.execution.runner_main"
INDUCTOR_CACHE = "inductor-cache"  # inside a run's cache directory


def runner_threads(workers: int) -> int | None:
    """CPU threads per runner when `workers` runners share the machine: each torch otherwise starts one
    OpenMP thread per core, and CPU-bound cells running together then crawl. None: torch's default."""
    if "OMP_NUM_THREADS" in os.environ:
        return int(os.environ["OMP_NUM_THREADS"])
    return max(1, (os.cpu_count() or 1) // workers) if workers > 1 else None


def runner_env(workdir: str, worker: str = "gw0", cache_dir: str | None = None, workers: int = 1, perf: bool = False,
               profile_dir: str | None = None, device: bool = True) -> dict[str, str]:
    """Environment for a runner process: compile caches in `cache_dir` (the run's own fresh directory, or
    one reused on purpose), else fresh ones inside `workdir` (an old cache must never hide a compile
    failure); Triton's interpreter when there is no GPU; one GPU per pytest worker on a machine with several;
    the CPU's cores split between the `workers` runners; the autotuners' timing (full with `perf`); where the
    cells' stack samples go (`profile_dir`, harness.processes.profiling). Without `device`, what depends on the GPU
    torch sees is left to the zygote the environment is for (zygote.DECIDE_ENV), and torch is not imported."""
    caches = cache_dir or workdir
    env = {
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(caches, INDUCTOR_CACHE),
        "TRITON_CACHE_DIR": os.path.join(caches, "triton-cache"),
        "TORCHINDUCTOR_COMPILE_THREADS": "1",
        autotune_timing.ENV: autotune_timing.chosen(perf),
    }
    if profile_dir:
        env[profiling.DIR_ENV] = os.path.abspath(profile_dir)
    threads = runner_threads(workers)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    if not device:
        env[DECIDE_ENV] = "1"
        return env
    import torch  # here, not at the top: the runner's parent side runs in the plugin, which needs no torch

    env.update(interpreter_env(torch.cuda.is_available()))
    if torch.cuda.is_available() and torch.cuda.device_count() > 1 and "CUDA_VISIBLE_DEVICES" not in os.environ:
        index = int("".join(ch for ch in worker if ch.isdigit()) or 0)
        env["CUDA_VISIBLE_DEVICES"] = str(index % torch.cuda.device_count())
    return env


TEMPLATE_BIND_S = 2.0  # how long the run's runner template's socket may take to be there
HEALTH_CHECK_S = 60.0  # how long the answer to the health check after a cell may take


@dataclass
class _Watch:
    """One cell as the parent follows it through the runner's events."""

    cell: Cell
    timeout: float
    log_offset: int
    deadline: float
    stage: Stage = Stage.SETUP
    result: CellResult | None = None
    done: bool = False
    # Where the cell is in the harness's check of the case's code in plain eager (its launcher, its backward), what that
    # calls and how long it may take: the deadline is then the check's, and past it the hang is the case's.
    plain_eager: PlainEager | None = None
    plain_eager_s: float = 0.0
    plain_eager_cut: bool = False  # the cell's own deadline came first
    cell_deadline: float = 0.0  # the cell's own deadline, which the check's never extends


class Runner:
    def __init__(
        self,
        case_modules: list[str],
        workdir: str,
        env: dict[str, str] | None = None,
        cells_per_process: int | None = None,
        start_timeout: float = 300.0,
        standby: bool = True,
        zygote: str | None = None,
        template: str | None = None,
        own_caches: bool = False,
        timeouts: dict[str, float] | None = None,
    ):
        self.case_modules = list(case_modules)
        # Each runner process with empty compile caches of its own, in a folder of `workdir` removed once it ends (a cell
        # confirmed alone), instead of the caches `env` names.
        self.own_caches = own_caches
        self._caches: dict[int, str] = {}  # a runner process's own caches, by its pid
        self.workdir = workdir
        self.env = env or {}
        self.cells_per_process = cells_per_process
        self.start_timeout = start_timeout
        self.standby = standby
        self.timeouts = timeouts or {}  # --cell-timeout's, for the check of a case's code in plain eager (PLAIN_EAGER)
        self._zygote = Zygote(zygote) if zygote else None  # the run's, at the socket `zygote`
        # The run's runner template (harness.processes.runner_template), at the socket `template`, which its zygote bound
        # at its start: not there, or gone, in a moment, and the runners are forked from the zygote.
        self._template = Zygote(template, bind_s=TEMPLATE_BIND_S) if template else None
        self._preparing: threading.Thread | None = None
        self._closing = threading.Lock()  # between close() and a runner process prepare() is still starting
        self._closed = False
        self.log_path = os.path.join(workdir, "runner-0.log")
        self._proc: subprocess.Popen[bytes] | None = None
        self._spare: tuple[subprocess.Popen[bytes], str] | None = None
        self._spawned = 0
        self._starts = 0  # runner processes that have served (or tried to); past the first, keep a standby
        self._buffer = b""
        self._served = 0
        os.makedirs(workdir, exist_ok=True)

    # -- process management -------------------------------------------------------------------

    def _spawn(self) -> tuple[subprocess.Popen[bytes], str]:
        """A new runner process, with its own log; it announces `ready` once it has imported everything."""
        env = {**without_pytest(os.environ), **self.env, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1", "TCM_SPAWNED": repr(time.time()),
               # The runner imports the case modules as this process does: the folders the run made importable
               # (the rootdir, a case file's folder) come first on its path too.
               "PYTHONPATH": registry.search_path(), ASKED_BY_ENV: str(os.getpid())}
        if self._zygote is not None:  # its helpers are forked from the run's zygote too
            env[ZYGOTE_ENV] = self._zygote.path
        caches = tempfile.mkdtemp(prefix="caches-", dir=self.workdir) if self.own_caches else None
        if caches is not None:
            env.update(TORCHINDUCTOR_CACHE_DIR=os.path.join(caches, INDUCTOR_CACHE), TRITON_CACHE_DIR=os.path.join(caches, "triton-cache"))
        command = [sys.executable, "-m", RUNNER_MODULE, *self.case_modules]
        log_path = os.path.join(self.workdir, f"runner-{self._spawned}.log")
        self._spawned += 1
        proc: Any = None
        for forker in (self._template, self._zygote):
            proc = proc or (forker and forked(command, env, self.workdir, log_path, forker, binary=True))
        if not proc:
            with open(log_path, "ab") as log:
                proc = subprocess.Popen(
                    command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    env=env,
                    cwd=os.getcwd(),
                    start_new_session=True,  # its own process group: a timeout kills compile workers too
                )
        if caches is not None:
            self._caches[proc.pid] = caches
        return proc, log_path

    def prepare(self) -> None:
        """Start the first runner process now, so its imports overlap the caller's own start-up (in a thread: the
        run's zygote answers once its own imports are done)."""
        if self._proc is None and self._spare is None and self._preparing is None:
            self._preparing = threading.Thread(target=self._prepare, name="tcm-prepare-runner", daemon=True)
            self._preparing.start()

    def _prepare(self) -> None:
        spawned = self._spawn()
        with self._closing:
            if not self._closed:
                self._spare = spawned
                return
        _kill(spawned[0])  # closed while it started: nobody will ask it for a cell

    def _prepared(self) -> None:
        """Wait for the runner process prepare() is starting, if any."""
        preparing, self._preparing = self._preparing, None
        if preparing is not None:
            preparing.join()

    def _start(self) -> float:
        began = time.perf_counter()
        self._prepared()
        spare, self._spare = self._spare, None
        if spare is not None and spare[0].poll() is not None:  # the standby died while waiting
            _kill(spare[0])
            spare = None
        self._proc, self.log_path = spare or self._spawn()
        self._buffer = b""
        self._served = 0
        self._starts += 1
        event = self._next_event(time.monotonic() + self.start_timeout)
        if event is None or event.kind is not EventKind.READY:
            tail = self._log_tail(0)
            self.stop()
            raise RunnerDied(f"the runner process did not start: {event or 'no answer'}; log: {' | '.join(tail[-5:])}")
        if self.standby and (self._starts > 1 or self.cells_per_process):
            self._spare = self._spawn()
        return time.perf_counter() - began

    def stop(self, wait: bool = True) -> None:
        """End the current runner process (the standby stays, to take over); with `wait`, once it is gone."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _kill(proc, wait)
            self._forget_caches(proc)

    def _forget_caches(self, proc: subprocess.Popen[bytes]) -> None:
        caches = self._caches.pop(proc.pid, None)
        if caches is not None:
            shutil.rmtree(caches, ignore_errors=True)

    def interrupt(self) -> None:
        """End the cell in flight (Ctrl-C): its runner process is killed, and run() returns once it sees it gone."""
        if self._proc is not None:
            kill_session(self._proc, wait=False)

    def close(self) -> None:
        """End this process's runner processes. One prepare() is still starting is not waited for (a run that ends
        before its first cell, selecting none, would wait out the zygote's imports): it is ended once it starts, and
        a process forked for it exits with this one (exit_with_asker)."""
        with self._closing:
            self._closed, self._preparing = True, None
        self.stop()
        spare, self._spare = self._spare, None
        if spare is not None:
            _kill(spare[0])
            self._forget_caches(spare[0])
        for forker in (self._template, self._zygote):
            if forker is not None:
                forker.close()  # this process's connection; it serves the run's other processes

    def logs(self) -> list[str]:
        """Every runner process's log, in the order they started."""
        return [p for n in range(self._spawned) if os.path.exists(p := os.path.join(self.workdir, f"runner-{n}.log"))]

    def _alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _next_event(self, deadline: float) -> Event | None:
        """The child's next event; an `eof` when the child closed its end (it died); None past the deadline."""
        assert self._proc and self._proc.stdout
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return Event(EventKind.EOF)
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return Event.parse(line)

    def _log_tail(self, offset: int) -> list[str]:
        """The last lines the runner logged since `offset`, each cut to LOG_LINE_CHARS."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(offset, os.fstat(f.fileno()).st_size - LOG_READ_BYTES))
                text = f.read().decode(errors="replace")
        except OSError:
            return []
        lines = [line for line in text.splitlines() if line.strip()][-LOG_TAIL_LINES:]
        return [line if len(line) <= LOG_LINE_CHARS else f"{line[:LOG_LINE_CHARS]} [... {len(line) - LOG_LINE_CHARS} more characters]"
                for line in lines]

    def _capped_log(self) -> int:
        """The log's size before the next cell, after emptying it if a cell's output took it past LOG_CAP_BYTES (the
        runner writes it in append mode, so its next line lands at the new end)."""
        try:
            size = os.path.getsize(self.log_path)
            if size > LOG_CAP_BYTES:
                with open(self.log_path, "r+b") as f:
                    f.truncate(0)
                    f.write(f"[{size} bytes of earlier cells' output removed: the log is emptied past {LOG_CAP_BYTES} bytes]\n".encode())
                size = os.path.getsize(self.log_path)
            return size
        except OSError:
            return 0

    # -- running a cell -----------------------------------------------------------------------

    def run(self, cell: Cell, settings: Settings, timeout: float) -> CellResult:
        began = time.perf_counter()
        started = 0.0
        if not self._alive():
            self.stop()
            started = self._start()
        assert self._proc and self._proc.stdin
        deadline = time.monotonic() + timeout
        watch = _Watch(cell, timeout, log_offset=self._capped_log(), deadline=deadline, cell_deadline=deadline)
        last = bool(self.cells_per_process) and self._served + 1 >= self.cells_per_process
        self._proc.stdin.write(CellRequest(cell, settings, last=last).line())
        self._proc.stdin.flush()
        while not watch.done:
            event = self._next_event(watch.deadline) or Event(EventKind.TIMEOUT)
            getattr(self, f"_on_{event.kind.value}")(watch, event)
        result = watch.result
        assert result is not None
        if self.cells_per_process and self._served >= self.cells_per_process:
            self.stop(wait=False)  # its end (CUDA's teardown, the zygote reaping it) need not hold up the next cell
        result.timings.process_start = started
        result.timings.wall = time.perf_counter() - began
        result.timings.overhead = max(result.timings.wall - result.timings.work, 0.0)
        result.timings.finished = time.time()
        return result

    # -- the runner's events, one method each ----------------------------------------------------

    def _on_ready(self, watch: _Watch, event: Event) -> None:
        raise RuntimeError(f"the runner said it was ready again, running {watch.cell.id}")

    def _on_stage(self, watch: _Watch, event: Event) -> None:
        assert event.stage is not None
        watch.stage, watch.plain_eager = event.stage, event.plain_eager
        if event.plain_eager is not None:
            now, allowed = time.monotonic(), plain_eager_timeout(self.timeouts, event.plain_eager.configs)
            watch.deadline = min(watch.cell_deadline, now + allowed)
            watch.plain_eager_s, watch.plain_eager_cut = watch.deadline - now, watch.cell_deadline < now + allowed
        else:
            watch.deadline = watch.cell_deadline

    def _on_result(self, watch: _Watch, event: Event) -> None:
        watch.result = event.result
        if event.ran_case_code:  # a cell its row does not apply to leaves the process as it found it
            self._served += 1
        watch.deadline = time.monotonic() + HEALTH_CHECK_S  # the health check follows

    def _on_healthy(self, watch: _Watch, event: Event) -> None:
        watch.done = True

    def _on_unhealthy(self, watch: _Watch, event: Event) -> None:
        """The cell left the process unusable (a poisoned CUDA context): the next cell gets a new one."""
        assert watch.result is not None
        watch.result.log_tail = self._log_tail(watch.log_offset)
        self.stop()
        watch.done = True

    def _on_eof(self, watch: _Watch, event: Event) -> None:
        """The runner closed its end: it died."""
        self._gone(watch, timed_out=False)

    def _on_timeout(self, watch: _Watch, event: Event) -> None:
        """The deadline passed with no event."""
        self._gone(watch, timed_out=True)

    def _gone(self, watch: _Watch, timed_out: bool) -> None:
        """No answer: during the cell, a crash or a timeout; in the health check after it, a process to replace."""
        if watch.result is not None:
            self._on_unhealthy(watch, {})
            return
        watch.result = self._lost(watch, timed_out)
        watch.done = True

    def _lost(self, watch: _Watch, timed_out: bool) -> CellResult:
        proc = self._proc
        assert proc
        if not timed_out:
            try:  # its pipe closed as it died; the exit status follows a moment later
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self.stop()
        returncode = proc.returncode
        stage = watch.stage
        tail = self._log_tail(watch.log_offset)
        result = CellResult(watch.cell, Outcome.CRASH, stage=stage)
        result.log_tail = tail
        if timed_out and watch.plain_eager is not None:
            result.outcome, result.fault = Outcome.ERROR, Fault.CASE
            result.message = hung_in_plain_eager(watch.plain_eager, watch.plain_eager_s, watch.cell.row.value if watch.plain_eager_cut else PLAIN_EAGER)
        elif timed_out:
            result.outcome = Outcome.TIMEOUT
            result.message = f"no result after {watch.timeout:.0f} s, during {stage.value}"
        else:
            result.signal = signal.Signals(-returncode).name if returncode is not None and returncode < 0 else None
            result.message = crash_message(returncode, result.signal, stage, tail)
        self.stop()
        return result

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def hung_in_plain_eager(checking: PlainEager, seconds: float, limit: str) -> str:
    """The case's error where its own code, called once in plain eager before the cell's path, did not return within
    `seconds`, the limit `--cell-timeout limit=S` sets (the check's, or the cell's where it came first)."""
    what = "the launcher" if checking.what == "launcher" else f"the case's {checking.what}"
    before = "before any compile or wrapping" if checking.what != "reference" else "before the cell's path"
    return (f"{what} did not return within {seconds:.0f} s, called once in plain eager on the case's example input, {before}: every style and row meets this hang, so it is the case's. Fix: make {what} return "
            "(a loop that never ends, a wait on something that never comes, a kernel that spins); if it is only slow, "
            f"give it longer with --cell-timeout {limit}=SECONDS")


# What glibc prints as it aborts on a corrupted heap ("malloc(): corrupted top size", "free(): invalid pointer",
# "double free or corruption (out)").
HEAP_CORRUPTED = re.compile(r"\b(?:malloc|free|realloc|calloc)\(\): |double free or corruption|corrupted (?:size|top|double-linked)")


def crash_message(returncode: int | None, killed_by: str | None, stage: Stage, tail: list[str]) -> str:
    """A dead runner's cell, in one line: how it died, in which stage, and the log's own word for it. A corrupted heap is
    found where the allocator next looks, often a stage after the write that corrupted it: the message says so."""
    how = f"killed by {killed_by}" if killed_by else f"runner exited with status {returncode}"
    heap = next((line.strip() for line in tail if HEAP_CORRUPTED.search(line)), None)
    if heap:
        return (f"{how}: the heap was corrupted ({heap[:200]}), found during {stage.value} but written earlier in the cell: "
                "most likely a kernel's store out of its tensor's bounds (on Triton's interpreter it writes host memory; on a "
                "GPU it is an illegal memory access): check the kernel's masks")
    fatal = next((line for line in tail if "Fatal Python error" in line or "Error" in line), None)
    return f"{how} during {stage.value}" + (f": {fatal.strip()[:300]}" if fatal else "")


def _kill(proc: subprocess.Popen[bytes], wait: bool = True) -> None:
    kill_session(proc, wait)
    for stream in (proc.stdin, proc.stdout):
        if stream:
            stream.close()
