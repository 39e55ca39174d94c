"""An autotuned case's configs compiled before its cells, in slices, side by side.

An autotuner compiles every config it times, for each new specialization of the sizes a cell draws (a size's
divisibility by 16, ...), and the cells of a case draw the same examples. On torchao's int8 matmul (27 configs) one cell
compiling them all took 184 s on one core; cells started side by side each compiled them again before any had written
the run's shared Triton cache (104-153 s a cell), and held back until one cell had, the run waited on that one core.

So where kernels are compiled (a GPU, not Triton's interpreter) and cells run side by side, the controller starts, once
the workers have collected, a few slice processes per autotuned case before its cells: each a runner process
(harness.processes.runner, forked from the run's zygote, in the runners' environment) that runs the case's first eager
cell, and its first train_eager cell (the backward's kernels), with each autotuner trying only its slice of the configs
it would time (every `count`-th from `index`), each config run once rather than timed (Autotuner.prune_configs and
do_bench, patched in that process alone, `keep_slice`).
Together the slices compile each config once, on as many cores, into the run's Triton cache, which the cells share as
they always have; what the slices' cells find is thrown away (they time a slice of the configs, not what a cell checks).
The case's cells that launch its kernels (not the controls) wait in their worker, before their runner is asked, until
the case's slices have ended (`wait`), so a cell is never started beside its slices; the other cells run meanwhile.

What the cells see: compiled kernels in the run's Triton cache, the same entries a cell that came first would have
written (Triton keys them by the kernel's source, its specialization, its options and the compiler, not by who compiled
them). Nothing else of a slice reaches them: its HOME and XDG_CACHE_HOME are its own folder, so a library's own store
of tuned configs (FlagGems keeps its timings under ~/.flaggems) never holds a slice's choice among a few configs. A
compile that fails in a slice is not cached: the cells meet it again and record it. A slice that fails or hangs only
leaves the compiling to the cells (it is killed after TIMEOUT_S, and the cells then start).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Collection, Iterable, Mapping

from harness.model.cell import Cell
from harness.model.columns import Wrapping
from harness.model.outcome import Fault, Outcome
from harness.model.rows import Row
from harness.model.settings import Settings
from harness.processes import profiling
from harness.processes.runner import Runner

SLICE_ENV = "TCM_COMPILE_AHEAD_SLICE"  # "index/count" in a slice's runner process (keep_slice)
REPLAYED = (Row.EAGER, Row.TRAIN_EAGER)  # the rows a slice runs: what launches the case's kernels, and its backward's, as eager code does
# How long a case's slices may take, together, before they are ended and its cells start, compiling for themselves what
# the slices had not (the cells wait that long at most). Slices that paid for themselves took 13-18 s (the built-in
# cases' 3 configs) and 47-100 s (torchao's 27, in 16 or 4 slices) on one H200; Cut Cross-Entropy's, whose autotuning
# waits on the GPU rather than compiling, were still running at 230-300 s while its cells waited.
TIMEOUT_S = 120.0
POLL_S = 0.1


@dataclass(frozen=True)
class Slice:
    """One process's part of an autotuned case's configs: every `count`-th config from `index`, for `cells`."""

    case: str
    index: int
    count: int
    cells: tuple[Cell, ...]

    @property
    def name(self) -> str:
        return f"{self.case} {self.index + 1}/{self.count}"


def plan(cells: Iterable[Cell], autotuners: Mapping[str, Collection[Any]], cores: int, carried: Collection[str] = ()) -> list[Slice]:
    """The slices for the cells to run (in the run's order): for each case of `autotuners` (its autotuners, by case) with
    at least two cells that launch its kernels, its first cell of each REPLAYED row, in as many slices as the cores
    shared among those cases give it, and no more than its autotuners' largest number of configs."""
    replayed: dict[str, dict[Row, Cell]] = {}
    launching: dict[str, int] = {}
    for cell in cells:
        if cell.case not in autotuners or cell.wrapping is Wrapping.CONTROL or cell.id in carried:
            continue
        launching[cell.case] = launching.get(cell.case, 0) + 1
        if cell.row in REPLAYED:
            replayed.setdefault(cell.case, {}).setdefault(cell.row, cell)
    chosen = {case: tuple(rows.values()) for case, rows in replayed.items() if launching[case] > 1}
    share = max(1, cores // max(1, len(chosen)))
    slices: list[Slice] = []
    for case, replay in chosen.items():
        count = max(1, min(share, max((len(a.configs) for a in autotuners[case]), default=1)))
        slices.extend(Slice(case, index, count, replay) for index in range(count))
    return slices


def keep_slice() -> None:
    """In a slice's runner (SLICE_ENV set), before its cells: each autotuner of the process times, and so compiles, only
    its slice of the configs it would time (at least one: with fewer configs than slices, a config is compiled twice),
    and runs each of them once instead of timing it: a slice is there to compile them, and an autotuner whose kernels
    take long on the GPU (Cut Cross-Entropy's, CCE_AUTOTUNE=1: its eager cells waited on the GPU 150 s of 167 s) kept
    its slices timing, and the cells waiting, for minutes."""
    given = os.environ.get(SLICE_ENV)
    if not given:
        return
    index, count = (int(part) for part in given.split("/"))
    from triton.runtime.autotuner import Autotuner

    pruned = Autotuner.prune_configs

    def sliced(self: Any, *args: Any, **kwargs: Any) -> list[Any]:
        configs = list(pruned(self, *args, **kwargs))
        return configs[index::count] or configs[index % len(configs):][:1]

    Autotuner.prune_configs = sliced
    # Where an autotuner's benchmarker is kept (Triton's do_bench, or the one it was given): read at each timing, set by
    # no version's constructor that names it otherwise, but a setter all the same, so that one that did still works.
    Autotuner.do_bench = property(lambda self: _run_once, lambda self, value: None)


def _run_once(kernel_call: Any, quantiles: Any = None, **kwargs: Any) -> Any:
    """A slice's timing of a config: it runs once, which compiles it, and every config times the same."""
    kernel_call()
    return [1.0] * len(quantiles) if quantiles else 1.0


# -- the worker's side -----------------------------------------------------------------------------------------------


def _marker(folder: str, case: str) -> str:
    return os.path.join(folder, f"{case}.compiling")


def wait(folder: str, cell: Cell, limit: float = TIMEOUT_S + 30.0) -> None:
    """Before a cell that launches its case's kernels is run: wait while its case's slices compile (their marker in the
    run's `folder`), at most `limit` seconds."""
    if cell.wrapping is Wrapping.CONTROL:
        return
    began, marker = time.monotonic(), _marker(folder, cell.case)
    while os.path.exists(marker) and time.monotonic() - began < limit:
        time.sleep(POLL_S)


# -- the controller's side ---------------------------------------------------------------------------------------------


class CompilingAhead:
    """The run's slices, each in a thread of its own that drives its runner process. A case's marker is made before its
    slices start and removed once the last of them has ended (or been killed). `results()` says, by case, what they did
    as the run's prebuilds do ({"build", "seconds", "cpu_s", "error"}: the longest slice's seconds, their cells' CPU)."""

    def __init__(self, slices: list[Slice], case_modules: list[str], env: dict[str, str], settings: Settings, folder: str,
                 zygote: str | None):
        self.slices, self.case_modules, self.settings, self.folder, self.zygote = slices, case_modules, settings, folder, zygote
        self.env = {key: value for key, value in env.items() if key != profiling.DIR_ENV}  # a slice's samples are no cell's
        self._lock = threading.Lock()
        self._left = {case: sum(1 for s in slices if s.case == case) for case in {s.case for s in slices}}
        self._said: dict[str, list[dict[str, Any]]] = {case: [] for case in self._left}
        self._runners: list[Runner] = []
        self._stopped = False
        os.makedirs(folder, exist_ok=True)
        for case in self._left:
            open(_marker(folder, case), "w").close()
        self._threads = [threading.Thread(target=self._run, args=(s,), name=f"tcm-compile-ahead-{s.name}", daemon=True) for s in slices]
        for thread in self._threads:
            thread.start()

    def _run(self, piece: Slice) -> None:
        began, cpu, error = time.monotonic(), 0.0, None
        try:
            workdir = tempfile.mkdtemp(prefix=f"slice-{piece.case}-{piece.index}-", dir=self.folder)
            env = {**self.env, SLICE_ENV: f"{piece.index}/{piece.count}", "HOME": workdir, "XDG_CACHE_HOME": os.path.join(workdir, "cache")}
            runner = Runner(self.case_modules, workdir, env=env, cells_per_process=0, standby=False, zygote=self.zygote)
            with self._lock:
                if self._stopped:  # the run ended before this slice began
                    runner.close()
                    return
                self._runners.append(runner)
            with runner:
                deadline = began + TIMEOUT_S
                for cell in piece.cells:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        error = f"took over {TIMEOUT_S:.0f} s: stopped, and the cells compiled for themselves"
                        break
                    result = runner.run(cell, dataclasses.replace(self.settings, workdir=workdir), left)
                    cpu += result.timings.cpu or 0.0
                    if result.fault is Fault.HARNESS or result.outcome in (Outcome.CRASH, Outcome.TIMEOUT):
                        error = f"{cell.id}: {result.outcome.value}: {((result.message or '').splitlines() or [''])[0][:300]}"
                        break
        except Exception as exc:  # noqa: BLE001 - a slice that fails leaves the compiling to the cells
            error = f"{type(exc).__name__}: {exc}"
        finally:
            self._ended(piece, {"seconds": round(time.monotonic() - began, 2), "cpu_s": round(cpu, 2), "error": error})

    def _ended(self, piece: Slice, said: dict[str, Any]) -> None:
        with self._lock:
            self._said[piece.case].append(said)
            self._left[piece.case] -= 1
            if self._left[piece.case] == 0 and os.path.exists(_marker(self.folder, piece.case)):
                os.remove(_marker(self.folder, piece.case))

    def results(self) -> list[dict[str, Any]]:
        """By case (its name as "case"): its slices' longest seconds, their cells' CPU, the first error; one still compiling, as such."""
        with self._lock:
            said = {case: list(items) for case, items in self._said.items()}
            left = dict(self._left)
        out = []
        for case, items in said.items():
            errors = [s["error"] for s in items if s["error"]]
            if left[case]:
                errors.insert(0, "still compiling when the run ended")
            out.append({"build": f"compile_ahead {case} ({len(items) + left[case]} slices)", "case": case,
                        "seconds": max((s["seconds"] for s in items), default=None),
                        "cpu_s": round(sum(s["cpu_s"] for s in items), 2), "error": errors[0] if errors else None})
        return out

    def stop(self) -> None:
        """End the slices still running (a run interrupted, or ended before them), and let every cell go."""
        with self._lock:
            self._stopped = True
            runners = list(self._runners)
        for runner in runners:
            runner.close()
        for case in self._left:
            if os.path.exists(_marker(self.folder, case)):
                os.remove(_marker(self.folder, case))
