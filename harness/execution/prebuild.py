"""What a run's cells build once and share, built as the run starts. They build beside the workers' start rather
than in the first cells.

Some builds are the run's, not a cell's: Inductor's precompiled headers (one for AOTInductor's C++, one for the C++
wrapper's, under torch's own lock in the run's Inductor cache), with its CPU vector-ISA probe before them
(harness.environment.vec_isa), and the C++ runtime's runner (harness.execution.cpp_runtime). The first cell that
needs one builds it while every other cell that needs it waits on its lock. On the GPU runner the first AOTInductor
cell built the runner, ran the probe and built the header one after another, about a minute, while the cells started
beside it waited and cores stood idle; in a `--shard` part, with fewer cells to fill that minute, a fifth of the part.

Once the workers have collected the cells, the run's controller starts one process per build its cells need
(forked from the run's zygote, in the runners' environment), which builds it the way a cell does: the headers and the
probe through Inductor's own code, compiling a program of one addition with AOTInductor, or with torch.compile and
the C++ wrapper, on the cells' device into the run's caches; the runner with harness.execution.cpp_runtime. A cell
then finds it built, or waits on the same lock while it is built. Nothing here is an outcome: a build that fails
here is tried again by each cell that needs it, which records its own failure, as it would without this; one that
takes longer than TIMEOUT_S is killed, its lock released, and the cells build it themselves.

Run as `python -m harness.execution.prebuild BUILD CACHES PACKAGES WORKDIR`: it prints one JSON line, what it built,
its seconds, its CPU seconds (its compilers' included) and its error or null.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from harness.environment import machine
from harness.model.cell import Cell
from harness.model.rows import Kind
from harness.processes.helper_process import ASKED_BY_ENV, ZYGOTE_ENV, Zygote, exit_with_asker, forked, kill_session, python_status

TIMEOUT_S = 600.0  # shorter than any C++-building row's cell timeout: cells waiting on its lock still get to build


@dataclass(frozen=True)
class Prebuild:
    key: str
    what: str
    build: Callable[[str, str, str], None]  # (the run's caches, its packages' folder, a folder of this process's own)


def _as_a_runner(caches: str) -> None:
    """Inductor's vector-ISA probe answered from, or recorded in, the run's record, as in a runner."""
    from harness.environment import vec_isa

    if machine.records_dir():
        vec_isa.share(machine.records_dir(), python=python_status)


def _add_one(x: Any) -> Any:
    return x + 1


def _aoti_header(caches: str, packages: str, workdir: str) -> None:
    import torch

    _as_a_runner(caches)

    class AddOne(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return _add_one(x)

    program = torch.export.export(AddOne(), (torch.ones(8, device=machine.cells_device()),))
    torch._inductor.aoti_compile_and_package(program, package_path=os.path.join(workdir, "add-one.pt2"))


def _cpp_wrapper_header(caches: str, packages: str, workdir: str) -> None:
    import torch

    _as_a_runner(caches)
    torch.compile(_add_one, fullgraph=True, options={"cpp_wrapper": True})(torch.ones(8, device=machine.cells_device()))


def _cpp_runner(caches: str, packages: str, workdir: str) -> None:
    from harness.execution import cpp_runtime

    cpp_runtime.executable(cpp_runtime.built_runners(caches), packages)  # where and how the cells' builds ask for it (harness.execution.builders)


AOTI_HEADER = Prebuild("aoti_header", "Inductor's precompiled header for AOTInductor's C++ (and its vector-ISA probe)", _aoti_header)
CPP_WRAPPER_HEADER = Prebuild("cpp_wrapper_header", "Inductor's precompiled header for the C++ wrapper", _cpp_wrapper_header)
CPP_RUNNER = Prebuild("cpp_runner", "the C++ runtime's runner", _cpp_runner)
PREBUILDS = {p.key: p for p in (AOTI_HEADER, CPP_WRAPPER_HEADER, CPP_RUNNER)}


def needed_by(cell: Cell) -> tuple[Prebuild, ...]:
    """What of the run's builds the cell waits for, where it is not built yet."""
    kind = cell.row.spec.kind
    if kind is Kind.AOTI_CPP:
        return AOTI_HEADER, CPP_RUNNER
    if kind in (Kind.AOTI, Kind.AOTI_FRESH):
        return (AOTI_HEADER,)
    if (cell.row.spec.compile_options or {}).get("options", {}).get("cpp_wrapper"):
        return (CPP_WRAPPER_HEADER,)
    return ()


def needed(cells: Iterable[Cell]) -> list[Prebuild]:
    """What the cells' builds share, in the order PREBUILDS names them."""
    keys = {p.key for cell in cells for p in needed_by(cell)}
    return [p for key, p in PREBUILDS.items() if key in keys]


# -- the controller's side -----------------------------------------------------------------------------------------


class Prebuilding:
    """The run's prebuild processes: started in a thread (the run's zygote answers once its imports are done), each
    given TIMEOUT_S. `results()` is what they said, each {"build", "seconds", "cpu_s", "error"}."""

    def __init__(self, prebuilds: list[Prebuild], env: dict[str, str], caches: str, packages: str, folder: str,
                 zygote: str | None):
        self.prebuilds, self.env, self.caches, self.packages, self.folder = prebuilds, env, caches, packages, folder
        self.zygote = zygote
        self.log = os.path.join(folder, "prebuild.log")
        self._procs: dict[str, Any] = {}
        self._results: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="tcm-prebuild", daemon=True)
        self._thread.start()

    def _start(self, prebuild: Prebuild, zygote: Zygote | None) -> Any:
        workdir = tempfile.mkdtemp(prefix=f"prebuild-{prebuild.key}-", dir=self.folder)
        command = [sys.executable, "-m", __name__, prebuild.key, self.caches, self.packages, workdir]
        # Its helpers (the probe's Python processes) are forked from the run's zygote too.
        env = {**self.env, ASKED_BY_ENV: str(os.getpid()), **({ZYGOTE_ENV: self.zygote} if self.zygote else {})}
        proc = zygote and forked(command, env, workdir, self.log, zygote)
        if not proc:
            with open(self.log, "a") as log:
                proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, env=env, text=True,
                                        start_new_session=True)
        if proc.stdin is not None:
            proc.stdin.close()
        return proc

    def _run(self) -> None:
        zygote = Zygote(self.zygote) if self.zygote else None
        began = time.monotonic()
        try:
            for prebuild in self.prebuilds:
                with self._lock:
                    if self._stopped:
                        return
                    try:
                        self._procs[prebuild.key] = self._start(prebuild, zygote)
                    except OSError as exc:
                        self._results[prebuild.key] = {"build": prebuild.key, "seconds": None, "cpu_s": None,
                                                       "error": f"could not start: {exc}"}
        finally:
            if zygote is not None:
                zygote.close()  # this connection; the zygote serves the run's runners on theirs
        while (running := [key for key in self._procs if key not in self._results]):
            for key in running:
                proc = self._procs[key]
                if proc.poll() is not None:
                    said = proc.stdout.readline()
                    try:
                        self._said(key, json.loads(said))
                    except ValueError:
                        self._said(key, {"build": key, "seconds": round(time.monotonic() - began, 2), "cpu_s": None,
                                         "error": f"its process ended with status {proc.returncode} and said nothing (log: {self.log})"})
                elif time.monotonic() > began + TIMEOUT_S:
                    kill_session(proc)
                    self._said(key, {"build": key, "seconds": TIMEOUT_S, "cpu_s": None,
                                     "error": f"took over {TIMEOUT_S:.0f} s: killed, and the cells built it themselves"})
            time.sleep(0.2)

    def _said(self, key: str, result: dict[str, Any]) -> None:
        with self._lock:
            self._results[key] = result

    def results(self) -> list[dict[str, Any]]:
        """What each prebuild said, in order; one still building, as such."""
        with self._lock:
            return [self._results.get(p.key) or {"build": p.key, "seconds": None, "cpu_s": None, "error": "still building when the run ended"}
                    for p in self.prebuilds]

    def stop(self) -> None:
        """Kill what is still building (a run interrupted, or ended before them)."""
        with self._lock:
            self._stopped = True
            procs = list(self._procs.values())
        for proc in procs:
            kill_session(proc)


# -- the prebuild process -----------------------------------------------------------------------------------------


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main(argv: list[str]) -> int:
    key, caches, packages, workdir = argv
    exit_with_asker()
    said = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what torch or a compiler prints goes to the log; stdout carries the one line
    sys.stdout = os.fdopen(1, "w", buffering=1)
    began, error = time.perf_counter(), None
    try:
        PREBUILDS[key].build(caches, packages, workdir)
    except Exception as exc:  # noqa: BLE001 - any failure: the cells meet it again and record it
        lines = [line for line in str(exc).splitlines() if line.strip()]
        error = f"{type(exc).__name__}: {lines[0][:300] if lines else ''}"
    print(json.dumps({"build": key, "seconds": round(time.perf_counter() - began, 2), "cpu_s": round(_cpu_seconds(), 2),
                      "error": error}), file=said, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
